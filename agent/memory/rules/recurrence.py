"""Reminders that repeat: "remind me every day at 8am to take my vitamins", "every Monday at
9am remind me to put the bins out", "remind me on weekdays at 7:30 to leave for the train".

A repeating reminder is one job at a time, its next occurrence, that carries its rule
(:class:`~agent.memory.schemas.Repeat`). The turn that fires it also schedules the one after
(:meth:`~agent.memory.ConversationLane.complete_job`), in one commit: a crash between the two
neither loses the series nor fires an occurrence twice. The rule keeps the time of day and the
zone it was said in, so an occurrence is on the user's wall clock (08:00 stays 08:00 across a
change of summer time) and never counts from when the one before fired (a late or snoozed one
does not shift the series).

Read (:func:`repeat_said`):

- every day: "every day", "daily", "each day", "a daily reminder"; "every morning" (09:00
  unless a time is said, and a bare hour is the morning's), "every afternoon" (15:00),
  "every evening" (19:00), "every night" (21:00);
- Monday to Friday: "every weekday", "on weekdays", "every workday", "every working day";
- every week: "every Monday", "on Mondays", "each Monday", "every Sunday evening" (19:00);
  "every week" (on the day it is first due), "a weekly reminder";
- every month: "on the 1st of every month", "every month on the 15th", "monthly" (on the day
  it is first due); the 31st is a shorter month's last day;
- skipping: "every other day", "every 3 days", "every other Monday", "every two weeks",
  "fortnightly" (counted from the first occurrence).

Not read: every year or hour, weekends; the concierge says which it can do. Pure functions of
their arguments. Tested by ``tests/test_recurrence.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from agent.memory.rules.reminder_time import day_in_month, says_clock, spoken_clock, with_meridiem
from agent.memory.schemas import JobRef, Repeat, RepeatEvery
from agent.utils import ids

__all__ = ["RepeatSaid", "fired", "moved_to", "next_occurrence", "repeat_said", "say_repeat"]

_F = re.IGNORECASE
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_DAY_NAME = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_EVERY = re.compile(
    r"\b(?:(?:every|each)\s+(?:single\s+)?(?:(?P<other>other|second|alternate)\s+)?(?P<unit>day"
    r"|morning|afternoon|evening|night|weekday"
    rf"|work(?:ing)?\s?day|week|(?P<day>{_DAY_NAME}))"
    # "every 3 days", "every two weeks", "fortnightly", "every fortnight".
    r"|(?:every|each)\s+(?P<n>[2-9]|two|three|four|five|six)\s+(?P<units>days|weeks)"
    r"|(?P<fortnight>fortnightly|every\s+fortnight)"
    # "daily" of the reminder ("remind me daily at 9", "a daily reminder"), not of a thing
    # ("to write my daily report")
    r"|(?P<daily>daily|weekly)(?:(?P<noun>\s+(?:reminders?|alarms?))"
    r"|(?=\s+(?:at|to|about|on|in|from)\b|\s*[,.!?]*$))"
    rf"|on\s+(?P<days>{_DAY_NAME}s"
    r"|weekdays|workdays))\b(?:\s+(?:(?:at|in)\s+the\s+)?(?P<part>morning|afternoon|evening"
    r"|night)\b)?",
    _F,
)
# "every three weeks": how many.
_COUNTS = {"2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9, "two": 2, "three": 3,
           "four": 4, "five": 5, "six": 6}  # fmt: skip
# The time of day a part of the day is, when no time is said.
_PART_CLOCK = {"morning": "at 9am", "afternoon": "at 3pm", "evening": "at 7pm", "night": "at 9pm"}
_WORKDAYS = frozenset({"weekday", "workday", "work day", "workingday", "working day"})
_DAY_STEP = timedelta(days=1)
# A time said with its minutes but without morning or evening: "at 10:30".
_CLOCK_OF_PART = re.compile(r"\bat\s+(?P<h>\d{1,2})[:.](?P<m>\d{2})\b(?!\s*[ap]\.?m)", _F)


# "of every month", "each month", "monthly" (of the reminder: "my monthly report" is a thing).
_MONTHLY = re.compile(
    r"\s*\b(?:(?:of\s+)?(?:every|each)\s+(?:single\s+)?month|monthly(?=\s+(?:at|to|about|on|in)\b"
    r"|\s*[,.!?]*$))\b",
    _F,
)
# "a monthly reminder": a reminder, every month.
_MONTHLY_NOUN = re.compile(r"\bmonthly\s+(?P<noun>reminders?|alarms?)\b", _F)
# The day of the month a monthly reminder is said on: "on the 1st", "the 15th".
_DAY_OF_MONTH = re.compile(r"\b(?:on\s+)?the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?\b", _F)


@dataclass(frozen=True, slots=True)
class RepeatSaid:
    """A request for a repeating reminder, read: ``text`` is the request as a one-time one
    ("remind me on Monday at 9am to ..."), whose first time gives the rule its time of day."""

    text: str
    every: RepeatEvery
    weekday: int | None
    interval: int = 1

    def rule(self, first: datetime, zone: ZoneInfo) -> Repeat:
        """The rule of a series whose one-time reading falls at ``first`` (UTC), in ``zone``."""
        local = first.astimezone(zone)
        weekday = self.weekday
        if self.every == "week" and weekday is None:  # "every week": the day it first falls on
            weekday = local.weekday()
        day = None
        if self.every == "month":  # the day said ("the 31st"), as its first time falls on
            said = _DAY_OF_MONTH.search(self.text)
            day = int(said["d"]) if said and 1 <= int(said["d"]) <= 31 else local.day
        since = local.date() if self.interval > 1 else None  # counted from the first
        return Repeat(
            every=self.every, at=f"{local:%H:%M}", weekday=weekday, day=day, zone=zone.key,
            interval=self.interval, since=since,
        )  # fmt: skip


def repeat_said(text: str) -> RepeatSaid | None:
    """Read a request for a repeating reminder (see the module), or ``None``."""
    text = _MONTHLY_NOUN.sub(r"\g<noun> every month", text)  # "a monthly reminder to ..."
    monthly = _MONTHLY.search(text)
    if monthly is not None:  # "on the 1st of every month": "on the 1st", every month
        said = f"{text[: monthly.start()]} {text[monthly.end() :]}".strip()
        said = " ".join(spoken_clock(said).split())
        if not says_clock(said) and _DAY_OF_MONTH.search(said) is None:
            said = re.sub(r"^(.*?\b(?:remind\s+me|reminders?|alarms?))\b", r"\1 at 9am", said,
                          count=1, flags=_F)  # fmt: skip
        elif not says_clock(said):
            said = _DAY_OF_MONTH.sub(lambda m: f"{m.group()} at 9am", said, count=1)
        return RepeatSaid(text=said, every="month", weekday=None)
    match = _EVERY.search(text)
    if match is None:
        return None
    daily = {"daily": "day", "weekly": "week"}.get((match["daily"] or "").casefold(), "day")
    interval = 2 if match["other"] or match["fortnight"] else _COUNTS.get(match["n"] or "", 1)
    if match["fortnight"]:
        daily = "week"
    unit = match["unit"] or (match["units"] or "").removesuffix("s")
    said = " ".join((match["day"] or match["days"] or unit or daily).casefold().split())
    said = said.removesuffix("s") if match["days"] else said
    before, after = text[: match.start()].strip(), text[match.end() :].strip()
    if match["noun"]:  # "set a daily reminder to stretch": a reminder, at its time
        before = f"{before}{match['noun']}"
    before, after = spoken_clock(before), spoken_clock(after)  # "half past ten": "at 10+30"
    clock = says_clock(f"{before} {after}")
    weekday = _WEEKDAYS.index(said) if said in _WEEKDAYS else None
    when = f"on {said}" if weekday is not None else ""
    part = (match["part"] or (said if said in _PART_CLOCK else "")).casefold()
    if part and not clock:  # "every Sunday evening": at 19:00
        when = f"{when} {_PART_CLOCK[part]}".strip()
    elif part:  # "every evening at 7", "every night at 10:30": the evening's
        before, after = _of_part(before, part), _of_part(after, part)
    elif not clock:  # a day without a time, as a one-time reminder's: 09:00
        when = f"{when} at 9am".strip()
    every: RepeatEvery = "week" if weekday is not None or said == "week" else "day"
    if said in _WORKDAYS:
        every, interval = "weekday", 1  # "every other weekday": not read as one
    words = " ".join(part for part in (before, when, after) if part)
    return RepeatSaid(text=words, every=every, weekday=weekday, interval=interval)


def _of_part(text: str, part: str) -> str:
    """``text`` with its first hour said without morning or evening ("at 7", "at 10:30") said
    as the ``part`` of the day it is of ("at 7pm", "at 22:30" in the evening)."""
    evening = part != "morning"
    said = with_meridiem(text, evening=evening)
    if said is not None:
        return said[0]
    clock = _CLOCK_OF_PART.search(text)
    if clock is None or not evening or not 1 <= int(clock["h"]) <= 11:
        return text
    return f"{text[: clock.start()]}at {int(clock['h']) + 12}:{clock['m']}{text[clock.end() :]}"


def next_occurrence(repeat: Repeat, after: datetime) -> datetime:
    """The first time after ``after`` that ``repeat`` falls at, in UTC (on the wall clock of
    its zone: a time a change of summer time skips is read as the clocks read it)."""
    zone = ZoneInfo(repeat.zone)
    hour, minute = (int(part) for part in repeat.at.split(":"))
    after = after.replace(tzinfo=UTC) if after.tzinfo is None else after  # naive: UTC
    local = after.astimezone(zone)
    day = local.date()
    if repeat.every == "month":
        return _next_in_a_month(repeat, day, time(hour, minute), zone, after)
    while True:
        moment = datetime.combine(day, time(hour, minute), tzinfo=zone).astimezone(UTC)
        weekday = day.weekday()
        if moment > after and _on_beat(repeat, day) and day not in repeat.skips and (
            repeat.every == "day"
            or (repeat.every == "weekday" and weekday < 5)
            or (repeat.every == "week" and weekday == repeat.weekday)
        ):
            return moment
        day += _DAY_STEP


def _on_beat(repeat: Repeat, day: date) -> bool:
    """Whether ``day`` is one of a skipping series' ("every other day": every 2nd from
    ``since``; "every other Monday": every 2nd week)."""
    if repeat.interval == 1 or repeat.since is None:
        return True
    step = (day - repeat.since).days
    return (step // 7 if repeat.every == "week" else step) % repeat.interval == 0


def _next_in_a_month(
    repeat: Repeat, start: date, at: time, zone: ZoneInfo, after: datetime
) -> datetime:
    """The first monthly occurrence after ``after``: ``repeat.day`` of ``start``'s month or a
    later one (a month without that day: its last), at ``at`` in ``zone``."""
    wanted = repeat.day or start.day
    index = start.year * 12 + start.month - 1
    while True:
        day = day_in_month(index, wanted)
        moment = datetime.combine(day, at, tzinfo=zone).astimezone(UTC)
        if moment > after and day not in repeat.skips:
            return moment
        index += 1


def say_repeat(repeat: Repeat) -> str:
    """Say the rule: "every day at 08:00", "every weekday at 07:30", "every Monday at 09:00",
    "every month on the 1st at 09:00"."""
    every = {1: "every", 2: "every other"}.get(repeat.interval, "every")
    if repeat.every == "week" and repeat.weekday is not None:
        day = _WEEKDAYS[repeat.weekday].capitalize()
        if repeat.interval > 2:
            return f"every {repeat.interval} weeks on {day} at {repeat.at}"
        return f"{every} {day} at {repeat.at}"
    if repeat.every == "day" and repeat.interval > 2:
        return f"every {repeat.interval} days at {repeat.at}"
    if repeat.every == "day":
        return f"{every} day at {repeat.at}"
    if repeat.every == "month" and repeat.day is not None:
        return f"every month on the {_ordinal(repeat.day)} at {repeat.at}"
    return f"every {repeat.every} at {repeat.at}"


def _ordinal(n: int) -> str:
    """ "1st", "2nd", "3rd", "11th", "22nd"."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def fired(
    job: JobRef, now: datetime, new_id: Callable[[], str] = ids.job_id
) -> tuple[JobRef, ...]:
    """The job refs of ``job`` firing at ``now``: it is done, and if it repeats, its next
    occurrence (a new id from ``new_id``) is scheduled: the first after ``now`` and after the
    time it was due (one fired days late does not fire the days it missed)."""
    done = job.model_copy(update={"status": "done"})
    if job.repeat is None:
        return (done,)
    after = max(now, job.due_at or now)
    due = next_occurrence(job.repeat, after)
    day = due.astimezone(ZoneInfo(job.repeat.zone)).date()
    left = tuple(d for d in job.repeat.skips if d > day)  # the skips passed are dropped
    repeat = job.repeat.model_copy(update={"skips": left})
    return done, job.model_copy(update={"job_id": new_id(), "due_at": due, "repeat": repeat})


def moved_to(repeat: Repeat, due: datetime, zone: str | None = None) -> Repeat:
    """The rule of a series moved so that its next occurrence is ``due`` ("move the stretch
    reminder to 7pm": every day at 19:00; of a weekly one, to Tuesday: every Tuesday; of a
    monthly one, to the 3rd: every month on the 3rd), on the clock of ``zone`` (the user's
    now, when they set another since; the rule's own by default)."""
    zone = zone or repeat.zone
    local = due.astimezone(ZoneInfo(zone))
    weekday = local.weekday() if repeat.every == "week" else repeat.weekday
    day = local.day if repeat.every == "month" else repeat.day
    since = local.date() if repeat.since is not None else None  # the beat counts from it
    update = {"at": f"{local:%H:%M}", "weekday": weekday, "day": day, "since": since, "skips": (),
              "zone": zone}  # fmt: skip
    return repeat.model_copy(update=update)
