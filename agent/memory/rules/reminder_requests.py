"""Reading a request for a timed reminder: "remind me in 10 minutes to call mom", "remind me
tomorrow at 8am to take my vitamins", "at 6pm remind me to ...", "set a timer for 10 minutes";
or a repeating one, "remind me every Monday at 9am to put the bins out"
(:mod:`agent.memory.rules.recurrence`).

The time phrase's grammar and its reading are :mod:`agent.memory.rules.reminder_time`'s; this
module finds the request, its time phrase and its label, clause by clause (the clauses of
:func:`agent.memory.rules.extraction.split_clauses`). Pure functions of their arguments.

Tested by ``tests/test_reminder_time.py`` and ``tests/test_extraction.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from zoneinfo import ZoneInfo

from agent.memory.rules.extraction import (
    NOT_REMIND,
    clean_value,
    each_time,
    match_reminder,
    normalize_text,
    split_clauses,
)
from agent.memory.rules.recurrence import next_occurrence, repeat_said
from agent.memory.rules.reminder_time import due_time
from agent.memory.rules.todo_openers import is_deed
from agent.memory.schemas import Repeat
from agent.utils.time_zones import DEFAULT_ZONE

__all__ = ["ReminderRequest", "is_reminder_request", "parse_reminder", "parse_reminders"]


@dataclass(frozen=True, slots=True)
class ReminderRequest:
    """A request for a reminder at a time: "remind me in 10 minutes to call mom".

    Attributes:
        label: what to remind of (``call mom``); empty when the user gave nothing.
        due_at: when, in UTC.
        link: the word before the label: ``to``, ``about`` (also for "for") or ``that``.
        repeat: how it repeats, if it does (``due_at`` is then its first occurrence).
    """

    label: str
    due_at: datetime
    link: str = "to"
    repeat: Repeat | None = None


def parse_reminders(
    text: str, now: datetime, zone: ZoneInfo = DEFAULT_ZONE
) -> tuple[ReminderRequest, ...]:
    """Return the timed reminders ``text`` asks for (:func:`parse_reminder`): one, or one for
    each clock time of "remind me every day at 7am and 6pm to feed the dog"."""
    # "at 8 and 6pm": the time read (the reply says which); "at 8" asks am or pm alone.
    return tuple(r for one in each_time(text) if (r := parse_reminder(one, now, zone)))


def is_reminder_request(text: str) -> bool:
    """Tell whether ``text`` asks for a reminder at a time, valid or not ("in 0 minutes")."""
    if NOT_REMIND.search(normalize_text(text)):  # "no need to remind me ... on Monday"
        return False
    return any(match_reminder(clause.text) for clause in split_clauses(text))


def parse_reminder(
    text: str, now: datetime, zone: ZoneInfo = DEFAULT_ZONE
) -> ReminderRequest | None:
    """Return the first timed reminder ``text`` asks for, or ``None``.

    Forms: "remind me in 10 minutes to call mom", "remind me to call mom in 2 hours", "in 30
    seconds remind me to stretch", "remind me tomorrow at 8am to ...", "remind me on Friday to
    ...", "remind me next Monday at 9:15 to ...", "at 6pm remind me to ...". The time is read by
    :func:`~agent.memory.rules.reminder_time.due_time` in ``zone``: a clock time is its next
    occurrence, a day without one is at 09:00; delays run from one second to 366 days; "at 6"
    (no minutes, no am/pm) is ambiguous and refused.

    Args:
        text: one user message.
        now: the time the message was received (a naive time is taken as UTC).
        zone: the user's time zone (UTC unless they set one).
    """
    if NOT_REMIND.search(normalize_text(text)):  # "don't remind me about the bins on Monday"
        return None
    repeating = repeat_said(text)
    if repeating is not None:  # read as the one-time request it starts as, then repeated
        first = parse_reminder(repeating.text, now, zone)
        if first is None:
            return None
        repeat = repeating.rule(first.due_at, zone)
        return replace(first, due_at=next_occurrence(repeat, now), repeat=repeat)
    for clause in split_clauses(text):
        match = match_reminder(clause.text)
        if match is None:
            continue
        due = due_time(match.group("when"), now, zone)
        if due is None:
            return None
        label = clean_value(match.group("label") or "")
        link = match.group("link")
        if link == "":  # "tomorrow 9am gym": about it; "...: call grandma": to call her
            link = "to" if is_deed(label) else "about"
        link = (link or "to").lower()
        return ReminderRequest(
            label=label, due_at=due, link="about" if link in {"for", "of"} else link
        )
    return None
