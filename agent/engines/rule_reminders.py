"""What the rule-based concierge does with reminders once set, and with the clock.

- "cancel the oven reminder", "delete my reminder about the dentist", "cancel reminder 2",
  "cancel the reminder" (when there is one), "cancel all reminders": the reminders named are
  put on the reply as ``cancelled`` (the lane drops them from the session's active jobs in the
  turn's commit, and a cancelled reminder never fires);
- "snooze it 10 minutes", "snooze for an hour", "remind me again in 5 minutes": the reminder
  that just fired comes back after the delay (10 minutes if none is said); one not fired yet
  is moved by the delay;
- "what time is it?", "what's the date?", "what's my time zone?": answered in the user's time
  zone (UTC until they set one with ``/timezone``).

Each phrasing family is a tuple of patterns (data), tried in order. Covered by
``tests/test_rule_reminders.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.engines.rule_reading import Reading, say_when, utc
from agent.memory.longterm.memory_slots import in_second_person
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.reminder_time import read_delay
from agent.memory.schemas import ConversationContextPacket, JobRef
from agent.utils.time_zones import DEFAULT_ZONE, zone_label

__all__ = ["ReminderChange", "answer_time", "change_reminders"]

_F = re.IGNORECASE
_SNOOZE_DEFAULT = timedelta(minutes=10)

_CANCEL: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, _F)
    for pattern in (
        r"^(?:please\s+|(?:can|could|would) you\s+(?:please\s+)?)?(?:cancel|delete|remove|drop"
        r"|clear|scrap|forget|call off|turn off|stop|kill|undo)\s+(?P<what>.{0,200}?\breminders?"
        r"\b.{0,200}?)[\s.!?]*$",
        r"^(?P<what>(?:the|my)\s+.{0,200}?\breminders?\b.{0,100}?)\s+(?:is|isn't|is not)\s+"
        r"(?:cancelled|canceled|off|needed|necessary|no longer needed)[\s.!?]*$",
    )
)
_SNOOZE: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, _F)
    for pattern in (
        r"^(?:please\s+)?snooze\b(?P<rest>.{0,120})$",
        r"^(?:please\s+)?remind me (?:again|later)\b(?P<rest>.{0,120})$",
    )
)
_AMOUNT = re.compile(
    r"(?:in|for|by|another)?\s*(?P<n>\d{1,4}(?:[.,]\d{1,2})?\s*|half an?\s+|an?\s+|[a-z]+\s+)"
    r"(?P<u>s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)\b",
    _F,
)
_NUMBERED = re.compile(r"\breminders?\s*(?:#|no\.?|number)?\s*(?P<n>\d{1,3})\b", _F)
_ALL = re.compile(r"\b(?:all|every|each)\b", _F)
# Words of a cancel request that do not name a reminder.
_CANCEL_WORDS = content_stems(
    "cancel delete remove drop clear scrap forget call off turn stop kill undo the my a that "
    "this reminder reminders about to for please you can could would no longer needed is"
)

_ASK_TIME = re.compile(
    r"\bwhat(?:'s|\s+is)?\s+the\s+time\b|\bwhat\s+time\s+is\s+it\b"
    r"|\b(?:tell me|do you know)\s+the\s+time\b|\b(?:the\s+)?(?:current|local)\s+time\b"
    r"|\bwhat(?:'s|\s+is)\s+(?:the\s+|today's\s+)?date\b|\bwhat\s+day\s+is\s+(?:it|today)\b",
    _F,
)
_ASK_ZONE = re.compile(r"\bwhat(?:'s|\s+is)\s+my\s+time\s*zone\b|\bwhich\s+time\s*zone\b", _F)

_WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_MONTHS = (
    "January February March April May June July August September October November December"
).split()


@dataclass(frozen=True, slots=True)
class ReminderChange:
    """What a cancel or snooze request does: the reply, and the reminders changed.

    Attributes:
        text: the reply.
        intent: ``cancel_reminder`` or ``set_reminder`` (a snooze sets a reminder again).
        cancelled: the active reminders to cancel (their refs, as they stand).
        label: the snoozed reminder's label (with ``due_at``: the reminder to set).
        due_at: when the snoozed reminder fires again; ``None`` sets none.
    """

    text: str
    intent: str
    cancelled: tuple[JobRef, ...] = ()
    label: str = ""
    due_at: datetime | None = None


def change_reminders(packet: ConversationContextPacket, reading: Reading) -> ReminderChange | None:
    """Cancel or snooze the reminders ``reading`` names, or return ``None`` if it asks neither."""
    for pattern in _CANCEL:
        match = pattern.match(reading.text)
        if match is not None:
            return _cancel(packet, match.group("what"))
    for pattern in _SNOOZE:
        match = pattern.match(reading.text)
        if match is not None:
            return _snooze(packet, reading, match.group("rest"))
    return None


def answer_time(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what time is it?" and "what's my time zone?" in the user's zone."""
    lowered = reading.text.casefold()
    if "time" not in lowered and "date" not in lowered and "day" not in lowered:
        return None  # most messages: no pattern to try
    zone, label = reading.zone, zone_label(reading.zone)
    unset = (
        " Set yours with /timezone, e.g. /timezone Europe/Lisbon." if zone == DEFAULT_ZONE else ""
    )
    if _ASK_ZONE.search(reading.text):
        if zone == DEFAULT_ZONE:
            return "I use UTC for you: you haven't set a time zone." + unset
        return f"Your time zone is {label}."
    if not _ASK_TIME.search(reading.text):
        return None
    local = reading.now.astimezone(zone)
    day = f"{_WEEKDAYS[local.weekday()]} {local.day} {_MONTHS[local.month - 1]} {local.year}"
    return f"It's {local:%H:%M} on {day} ({label}).{unset}"


def _reminders(packet: ConversationContextPacket) -> list[JobRef]:
    return [ref for ref in packet.active_job_refs if ref.kind == "reminder"]


def _named(what: str) -> frozenset[str]:
    return content_stems(what) - _CANCEL_WORDS


def _cancel(packet: ConversationContextPacket, what: str) -> ReminderChange:
    active = _reminders(packet)
    if not active:
        return ReminderChange("You have no reminders set, so there is nothing to cancel.",
                              "cancel_reminder")  # fmt: skip
    numbered = _NUMBERED.search(what)
    words = _named(what)
    if numbered is not None:
        index = int(numbered.group("n")) - 1
        chosen = [active[index]] if 0 <= index < len(active) else []
    elif _ALL.search(what) is not None:
        chosen = active
    elif words:
        scored = [(len(words & content_stems(ref.label)), ref) for ref in active]
        best = max(score for score, _ in scored)
        chosen = [ref for score, ref in scored if score == best and score > 0]
    else:
        chosen = active if len(active) == 1 else []
    if len(chosen) > 1 and not _ALL.search(what):
        chosen = []  # two reminders match as well: ask which
    if not chosen:
        listing = "\n".join(
            f"{n}. {in_second_person(ref.label or 'reminder')}" for n, ref in enumerate(active, 1)
        )
        return ReminderChange(
            "Which reminder? Say e.g. “cancel reminder 1”:\n" + listing, "cancel_reminder"
        )
    names = "; ".join(in_second_person(ref.label or "reminder") for ref in chosen)
    plural = "reminders" if len(chosen) > 1 else "reminder"
    return ReminderChange(f"Cancelled the {plural}: {names}.", "cancel_reminder", tuple(chosen))


def _delay(rest: str) -> timedelta | None:
    amount = _AMOUNT.search(rest)
    if amount is None:
        return _SNOOZE_DEFAULT
    return read_delay(f"in {amount.group('n').strip()} {amount.group('u')}")


def _last_fired(packet: ConversationContextPacket) -> JobRef | None:
    for turn in reversed(packet.recent_turns):
        fired = [r for r in turn.job_refs if r.kind == "reminder" and r.status == "done"]
        if fired:
            return fired[-1]
    return None


def _snooze(packet: ConversationContextPacket, reading: Reading, rest: str) -> ReminderChange:
    delay = _delay(rest)
    if delay is None:
        return ReminderChange(
            "I couldn't read how long to snooze. Try “snooze 10 minutes”.", "reminder_unreadable"
        )
    fired = _last_fired(packet)
    active = sorted(_reminders(packet), key=lambda r: utc(r.due_at or reading.now))
    cancelled: tuple[JobRef, ...] = ()
    if fired is not None:
        label, due = fired.label, reading.now + delay
    elif active:
        first = active[0]
        label, due, cancelled = first.label, utc(first.due_at or reading.now) + delay, (first,)
    else:
        return ReminderChange("There is no reminder to snooze.", "cancel_reminder")
    when = say_when(due, reading.now, reading.zone)
    said = f"Snoozed: I'll remind you {when}" + (
        f" to {in_second_person(label)}." if label else "."
    )
    return ReminderChange(said, "set_reminder", cancelled, label, due)
