"""Skipping one occurrence of a repeating reminder, and asking which reminder comes next.

- "skip the next bins reminder", "skip it this week", "skip the bins next time", "don't remind
  me about the bins this week": the next occurrence is passed over, and the series goes on from
  the one after;
- "skip the bins on the 14th", "skip next Monday's bins reminder", "skip it on Christmas Day"
  (any day the time rules read): that day's occurrence, kept in the rule's ``skips`` until it has
  passed (:mod:`agent.memory.rules.recurrence`);
- a day the series does not fall on is said to be one; a reminder that does not repeat is
  cancelled (skipping its only time);
- "what's my next reminder?", "when's the next reminder?": the one due soonest.

Covered by ``tests/test_rule_reminder_skip.py``.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from zoneinfo import ZoneInfo

from agent.engines.rule_reading import Reading, say_when, utc
from agent.engines.rule_reminder_choice import (
    PLEASE,
    ReminderChange,
    active_reminders,
    chosen_reminders,
    last_set,
    named_words,
    to_label,
    which_reminder,
)
from agent.memory.job_schemas import MAX_SKIPS
from agent.memory.longterm.memory_slots import in_second_person
from agent.memory.rules.recurrence import next_occurrence, say_repeat
from agent.memory.rules.reminder_time import due_time
from agent.memory.schemas import ConversationContextPacket, JobRef
from agent.utils.time_zones import zone_label

__all__ = ["answer_next_reminder", "skip_reminder"]

_F = re.IGNORECASE

_SKIP: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, _F)
    for pattern in (
        rf"{PLEASE}skip\s+(?P<what>.{{1,200}}?)[\s.!?]*$",
        # "don't remind me about the bins this week" (a day said: not "... ever again")
        rf"{PLEASE}(?:don't|do not|no need to)\s+remind\s+me\s+(?P<what>.{{0,160}}?(?:this\s+"
        r"(?:week|time|month)|next\s+time|tomorrow|today|tonight|\bon\s+.{1,40}|next\s+\w+day))"
        r"[\s.!?]*$",
    )
)
# The next occurrence, said without a day: "the next one", "this week", "next time".
_NEXT = re.compile(
    r"\b(?:this\s+(?:week|time|month)|next\s+time|(?:the\s+)?next\s+(?:one\b)?|once)", _F
)
# A day said: "on Monday", "tomorrow", "next Monday's", "on the 14th", "on 7 December".
_DAY = re.compile(
    r"\b(?P<day>(?:on\s+)?(?:tomorrow|today|tonight)|(?:next\s+|on\s+)?(?:monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday)(?:'s)?|on\s+(?:the\s+)?\d{1,2}(?:st|nd|rd|th)?(?:\s+of)?"
    r"(?:\s+[a-z]+)?|on\s+[a-z]+\s+\d{1,2}(?:st|nd|rd|th)?|on\s+christmas(?:\s+day)?)",
    _F,
)
_IT = re.compile(r"^(?:it|that|this)\b", _F)
# How far ahead a day's occurrence is looked for (a daily series: a year and a month).
_LOOK_AHEAD = 400


def skip_reminder(packet: ConversationContextPacket, reading: Reading) -> ReminderChange | None:
    """Skip the occurrence of a repeating reminder ``reading`` asks to skip, or return ``None``
    if it asks none."""
    if "skip" not in reading.text.casefold() and "remind" not in reading.text.casefold():
        return None  # most messages: no pattern to try
    match = next((m for p in _SKIP if (m := p.match(reading.text)) is not None), None)
    if match is None:
        return None
    what = match.group("what")
    day_said = _DAY.search(what)
    words = _DAY.sub(" ", _NEXT.sub(" ", what))
    active = active_reminders(packet)
    if not active:
        return ReminderChange("You have no reminders set, so there is nothing to skip.",
                              "cancel_reminder")  # fmt: skip
    chosen = _chosen(packet, active, words)
    if chosen is None:
        return ReminderChange(which_reminder(active, "skip reminder 1"), "cancel_reminder")
    day = None
    if day_said is not None:
        said = day_said.group("day").removesuffix("'s").removesuffix("'S")
        due = due_time(said, reading.now, reading.zone)
        if due is None:
            return None
        day = utc(due).astimezone(reading.zone).date()
    return _skip(chosen, day, reading)


def _chosen(
    packet: ConversationContextPacket, active: list[JobRef], words: str
) -> JobRef | None:
    """The reminder a skip names: by its words or number, "it" (the one just set), or the
    only repeating one."""
    if _IT.match(words.strip()):
        just = last_set(packet)
        return just[0] if len(just) == 1 else None
    chosen = chosen_reminders(active, words)
    if chosen:
        return chosen[0]
    repeating = [ref for ref in active if ref.repeat is not None]
    return repeating[0] if not named_words(words) and len(repeating) == 1 else None


def _skip(ref: JobRef, day: date | None, reading: Reading) -> ReminderChange:
    label = in_second_person(ref.label or "reminder")
    due = utc(ref.due_at or reading.now)
    local = due.astimezone(reading.zone)
    if ref.repeat is None:
        if day is not None and day != local.date():
            return ReminderChange(
                f"Your reminder to {label} is {say_when(due, reading.now, reading.zone)}, not on "
                f"{_say_day(day)}: nothing to skip.", "cancel_reminder"
            )  # fmt: skip
        return ReminderChange(f"Cancelled the reminder: {label} (it was set only once).",
                              "cancel_reminder", (ref,))  # fmt: skip
    clock = ZoneInfo(ref.repeat.zone)  # the series' own clock (its skips are its days)
    rule = f"{say_repeat(ref.repeat)} {zone_label(clock)}"
    occurrence = _occurrence_on(ref, due, day, reading)
    if occurrence is None:
        return ReminderChange(
            f"Your reminder to {label} is {rule}: none falls on {_say_day(day)}.",
            "cancel_reminder",
        )
    if occurrence == due:  # the next one: the series goes on from the one after it
        after = next_occurrence(ref.repeat, due)
        when, then = (_on_day(t, reading) for t in (due, after))
        said = f"Skipped the one {when}: I'll remind you next {then} to {label} ({rule})."
        return ReminderChange(said, "set_reminder", (ref,), ref.label, after, ref.repeat)
    skipped = occurrence.astimezone(clock).date()
    skips = tuple(sorted({*ref.repeat.skips, skipped}))
    if len(skips) > MAX_SKIPS:
        return ReminderChange(
            f"That's too many skipped days for one reminder: move it instead, or cancel it and "
            f"set it again. It stays {rule}.", "reminder_unreadable"
        )  # fmt: skip
    repeat = ref.repeat.model_copy(update={"skips": skips})
    said = (f"Skipped the one on {_say_day(skipped)}: I'll still remind you "
            f"{_on_day(due, reading)} to {label} ({rule}).")  # fmt: skip
    return ReminderChange(said, "set_reminder", (ref,), ref.label, due, repeat)


def _occurrence_on(
    ref: JobRef, due: datetime, day: date | None, reading: Reading
) -> datetime | None:
    """The occurrence of ``ref``'s series on ``day`` (its next one when no day is said)."""
    if day is None or ref.repeat is None:
        return due
    occurrence = due
    for _ in range(_LOOK_AHEAD):
        local = occurrence.astimezone(reading.zone).date()
        if local == day:
            return occurrence
        if local > day:
            return None
        occurrence = next_occurrence(ref.repeat, occurrence)
    return None


def _on_day(due: datetime, reading: Reading) -> str:
    """When ``due`` is, with its day even when it is today ("today at 21:00 UTC")."""
    said = say_when(due, reading.now, reading.zone)
    return f"today {said}" if said.startswith("at ") else said


def _say_day(day: date | None) -> str:
    return "that day" if day is None else f"{day:%A} {day.day} {day:%B}"


# "what's my next reminder?", "when's the next reminder?", "what reminder is next?"
_ASK_NEXT = re.compile(
    r"\b(?:what|when)(?:'s|\s+is)\s+(?:my|the)\s+next\s+(?:reminder|alarm)\b"
    r"|\bwhat\s+(?:reminder|alarm)\s+is\s+next\b|\bwhen\s+will\s+you\s+next\s+remind\s+me\b",
    _F,
)


def answer_next_reminder(packet: ConversationContextPacket, reading: Reading) -> str | None:
    """Answer "what's my next reminder?" with the one due soonest."""
    if "next" not in reading.text.casefold() or _ASK_NEXT.search(reading.text) is None:
        return None
    active = sorted(active_reminders(packet), key=lambda r: utc(r.due_at or reading.now))
    if not active:
        return "You have no reminders set."
    first = active[0]
    when = say_when(utc(first.due_at or reading.now), reading.now, reading.zone)
    label = to_label(first)
    return f"Your next reminder is {when}{label}."
