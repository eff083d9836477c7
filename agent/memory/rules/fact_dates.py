"""Dates said relatively, kept absolutely: "I have a test tomorrow" is kept as "test is on Fri 27
Nov", and said back relative to the day it is asked ("tomorrow, Fri 27 Nov", "today", "was on
Fri 27 Nov").

Kept (:func:`dated_facts`, :func:`absolute_dates`): each relative time phrase of a fact's value
is read against the time the message was said, on the user's wall clock (their zone), by
``dateparser`` (:func:`~agent.memory.rules.reminder_time.local_moment`) and replaced by the
date it names:

- a day, with a clock time or a part of the day if one was said: "tomorrow", "on Tuesday",
  "next Tuesday at 3pm", "this Saturday", "tonight", "yesterday" -> "on Tue 1 Dec at 15:00";
- a delay: "in two weeks", "in 3 days", "in a fortnight" -> "on Thu 10 Dec" (hours and
  minutes keep the clock time: "on Thu 26 Nov at 16:30"); months and years name the month or
  the year: "in 3 months" -> "in February 2027", "next month" -> "in December";
- a week or a weekend: "this weekend" -> "the weekend of Sat 28 Nov", "next week" -> "the week
  of Mon 30 Dec";
- a day of the calendar said without its year, the next one (today's included): "on the 14th"
  -> "on Mon 14 Dec", "14 March" -> "on Sun 14 Mar 2027", "from the 4th" -> "from Fri 4 Dec"
  (not a birthday's or an anniversary's, which is every year's: "3 May" stays);
- an hour said without morning or evening stays as said after its day: "next Tuesday at 10"
  -> "on Tue 1 Dec at 10".

A date out of the year it was said in carries its year ("on Mon 11 Jan 2027"). A month ("in
August"), a date with its year and a range said with a bare number ("from 3 to 7 September")
stay as they are. A plan's key holds its value, so it is keyed anew: "a trip to Rome next
Friday" said on two weeks is two trips. A time asked about (:func:`same_time`) matches the
kept dates whose days it shares, a month ("in March") included.

Said (:func:`said_from_now`): each "on Fri 27 Nov" of a reply is said from the day it is now in
the user's zone: "today", "tomorrow, Fri 27 Nov", "on Tue 1 Dec" further ahead, and for a day
gone by "was on Fri 27 Nov" (or "on Fri 27 Nov, now past" where no verb says it). The year of
a date kept without one is the one, next to now, whose calendar has that weekday.

Pure functions of their arguments. Tested by ``tests/test_fact_dates.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from agent.memory.longterm.memory_slots import fact_key, parse_key
from agent.memory.rules.reminder_time import (
    MONTH,
    local_moment,
    next_day_of_month,
    read_delay,
    says_clock,
)
from agent.memory.schemas import Fact
from agent.utils.time_zones import zone_of

__all__ = [
    "absolute_dates",
    "dated_facts",
    "day_said",
    "days_asked",
    "falls_in",
    "kept_day",
    "kept_when",
    "said_from_now",
    "same_time",
    "zone_in",
]

_F = re.IGNORECASE
_DAYS = "Mon Tue Wed Thu Fri Sat Sun".split()
_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
_MONTH_NAMES = (
    "January February March April May June July August September October November December"
).split()

_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_PART = r"morning|afternoon|evening|night"
_CLOCK = (
    r"(?:at\s+)?\d{1,2}(?:[:.h]\d{2})?\s*[ap]\.?m\.?(?![\w.])|at\s+\d{1,2}(?:[:.h]\d{2})?\b"
    r"|(?:at\s+)?(?:noon|midday|midnight)\b"
)
_DAY = (
    rf"today|tonight|tomorrow|the day after tomorrow|the day before yesterday|yesterday"
    rf"|(?:(?:on|this|next|coming|last)\s+)?{_WEEKDAY}"
)
_COUNT = r"\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few"
_UNIT = r"minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?"
_MONTH_WORD = rf"{MONTH}\b"
_NTH = r"(?:st|nd|rd|th)"
# A day of the calendar said without its year: "the 14th" (of this month, or the next once it
# has gone by), "14 December", "Dec 20th", "the 3rd of May" (the next one).
_CALENDAR = (
    rf"(?:on\s+)?(?:the\s+(?P<n>\d{{1,2}}){_NTH}(?:\s+of\s+(?P<nm>{_MONTH_WORD}))?"
    rf"|(?P<ad>\d{{1,2}}){_NTH}?\s+(?:of\s+)?(?P<am>{_MONTH_WORD})"
    rf"|(?P<bm>{_MONTH_WORD})\.?\s+(?:the\s+)?(?P<bd>\d{{1,2}}){_NTH}?)(?!\s*,?\s*\d{{4}})"
)
#: A relative time phrase, as a fact's value says it.
_RELATIVE = re.compile(
    rf"(?<!every )\b(?:(?P<delay>in\s+(?:(?:{_COUNT})\s+(?:{_UNIT})|a\s+fortnight)(?:'s? time)?)"
    rf"|(?P<span>(?P<which>this|next|last|at the|over the|on the)\s+(?P<unit>weekend|week|month"
    rf"|year))"
    rf"|(?P<day>(?:(?:{_CLOCK})\s+)?(?:{_DAY})(?:\s+(?P<part>{_PART}))?"
    rf"(?:\s*,?\s*(?:{_CLOCK}))?)"
    rf"|(?P<cal>{_CALENDAR}(?:\s*,?\s*(?P<clock>{_CLOCK}))?))\b",
    _F,
)
# An hour said without morning or evening ("at 10"): kept as said, after the day.
_AT_HOUR = re.compile(r"\s*,?\s*\bat\s+\d{1,2}\b(?![:.h]?\d|\s*[ap]\.?m)", _F)
_ON = re.compile(r"^(?:on|coming)\s+", _F)
_MONTH_DELAY = re.compile(rf"in\s+(?P<n>{_COUNT})\s+(?P<u>months?|years?)", _F)
_PART_SAID = {"morning": "in the morning", "afternoon": "in the afternoon",
              "evening": "in the evening", "night": "at night"}  # fmt: skip
#: The attributes whose values are dated when kept.
_DATED = frozenset({"event", "plan", "goal", "decision", "birthday", "away"})
_SPAN_AHEAD = {"this": 0, "at the": 0, "over the": 0, "on the": 0, "next": 1, "last": -1}

#: A date as :func:`absolute_dates` writes it, and what is said with it.
_KEPT = re.compile(
    rf"(?:\b(?P<verb>is|are)\s+)?\bon\s+(?P<wd>{'|'.join(_DAYS)})\s+(?P<d>\d{{1,2}})\s+"
    rf"(?P<m>{'|'.join(_MONTHS)})(?:\s+(?P<y>\d{{4}}))?\b"
    rf"(?P<rest>\s+at\s+\d{{2}}:\d{{2}}|\s+in\s+the\s+(?:morning|afternoon|evening)"
    rf"|\s+at\s+night)?"
)


def day_said(moment: date, said: date) -> str:
    """ "Mon 14 Dec" (with its year when not ``said``'s: "Mon 11 Jan 2027")."""
    year = "" if moment.year == said.year else f" {moment.year}"
    return f"{_DAYS[moment.weekday()]} {moment.day} {_MONTHS[moment.month - 1]}{year}"


def _month(year: int, month: int, said: date) -> str:
    return f"{_MONTH_NAMES[month - 1]}{'' if year == said.year else f' {year}'}"


def _span(which: str, unit: str, said: date) -> str:
    ahead = _SPAN_AHEAD[which.casefold()]
    if unit == "year":
        return f"in {said.year + ahead}"
    if unit == "month":
        months = said.year * 12 + said.month - 1 + ahead
        return f"in {_month(months // 12, months % 12 + 1, said)}"
    if unit == "week":
        monday = said - timedelta(days=said.weekday()) + timedelta(weeks=ahead)
        return f"the week of {day_said(monday, said)}"
    # The weekend of a Sunday is the one under way; of any other day, the coming one.
    saturday = said + timedelta(days=(5 - said.weekday()) % 7 if said.weekday() != 6 else -1)
    return f"the weekend of {day_said(saturday + timedelta(weeks=ahead), said)}"


def _delay(phrase: str, said_at: datetime, zone: ZoneInfo) -> str | None:
    local = said_at.astimezone(zone)
    months = _MONTH_DELAY.match(phrase)
    if months is not None:
        moment = local_moment(phrase, said_at, zone)
        if moment is None:
            return None
        if months.group("u").casefold().startswith("year"):
            return f"in {moment.year}"
        return f"in {_month(moment.year, moment.month, local.date())}"
    delay = read_delay(re.sub(r"a\s+fortnight", "2 weeks", phrase, flags=_F))
    if delay is None:
        return None
    moment = local + delay
    clock = f" at {moment:%H:%M}" if delay < timedelta(days=1) else ""
    return f"on {day_said(moment.date(), local.date())}{clock}"


def _date_of(
    match: re.Match[str],
    said_at: datetime,
    zone: ZoneInfo,
    *,
    calendar: bool,
    after: datetime | None = None,
) -> str | None:
    """The date ``match`` names, said from ``said_at``; a day of the week ``after`` a moment
    when one is given (the end of "from Friday to Monday")."""
    said = said_at.astimezone(zone).date()
    if match.group("delay"):
        return _delay(match.group("delay"), said_at, zone)
    if match.group("span"):
        return _span(match.group("which"), match.group("unit").casefold(), said)
    if match.group("cal"):
        return _calendar_day(match, said_at, zone) if calendar else None
    phrase = _ON.sub("", match.group("day"))
    moment = local_moment(phrase, after or said_at, zone)
    hour = ""
    if moment is None:  # "on Tuesday at 6": the day, and the hour as said
        hour = " ".join(m.group().strip(" ,") for m in _AT_HOUR.finditer(phrase))
        moment = local_moment(_AT_HOUR.sub("", phrase), after or said_at, zone) if hour else None
        if moment is None:
            return None
        return f"on {day_said(moment.date(), said)} {hour}"
    clock = says_clock(phrase)
    part = (match.group("part") or ("night" if "tonight" in phrase.casefold() else "")).casefold()
    said_part = f" at {moment:%H:%M}" if clock else (f" {_PART_SAID[part]}" if part else "")
    return f"on {day_said(moment.date(), said)}{said_part}"


def _calendar_day(match: re.Match[str], said_at: datetime, zone: ZoneInfo) -> str | None:
    """The day "the 14th" or "14 December" names from ``said_at``: the next one (today's
    included), with its clock time if one was said ("at 15:00"; "at 6" as said)."""
    said = said_at.astimezone(zone).date()
    named = match.group("nm") or match.group("am") or match.group("bm")
    month = _MONTHS.index(named[:3].title()) + 1 if named else None
    day = int(match.group("n") or match.group("ad") or match.group("bd"))
    moment = next_day_of_month(day, month, said)
    if moment is None:
        return None
    clock = match.group("clock") or ""
    when = local_moment(f"{moment:%d %B %Y} {clock}", said_at, zone) if clock else None
    if clock and when is None:  # "at 6": morning or evening is not said
        return f"on {day_said(moment, said)} {clock.strip()}"
    at = f" at {when:%H:%M}" if when and says_clock(clock) else ""
    return f"on {day_said(moment, said)}{at}"


def zone_in(facts: Iterable[Fact]) -> ZoneInfo:
    """Return the user's zone among ``facts`` (their ``timezone``), UTC if none says one."""
    return zone_of(next((f.value for f in facts if f.key == "timezone"), None))


def absolute_dates(
    text: str, said_at: datetime, zone: ZoneInfo, *, calendar: bool = True
) -> str:
    """Return ``text`` with each relative time phrase replaced by the date it names.

    Args:
        text: a fact's value, e.g. ``test is tomorrow``.
        said_at: when it was said (the message's time; a naive time is taken as UTC).
        zone: the user's time zone.
        calendar: a day of the calendar said without its year ("the 14th", "14 December") is
            the next one too (not of a birthday: "3 May" is every year's).

    Returns:
        e.g. ``test is on Fri 27 Nov``; ``text`` itself when it says no relative time.
    """
    said_at = said_at.replace(tzinfo=UTC) if said_at.tzinfo is None else said_at
    last_day: list[re.Match[str]] = []  # the day of the week named last, if any

    def replace(match: re.Match[str]) -> str:
        before = match.string[: match.start()]
        if match.group("cal") and _RANGE_START.search(before):
            return match.group()  # "from 3 to 7 September": a range, kept as said
        after = None
        if last_day and _RANGE_END.search(before):  # "from Friday to Monday": the Monday after
            after = local_moment(_ON.sub("", last_day[-1].group("day")), said_at, zone)
        if match.group("day"):
            last_day[:] = [match]
        dated = _date_of(match, said_at, zone, calendar=calendar, after=after)
        if dated is None:
            return match.group()
        # "from the 4th": "from Tue 4 Mar", not "from on Tue 4 Mar"
        return dated.removeprefix("on ") if _PREPOSITION_BEFORE.search(before) else dated

    return _RELATIVE.sub(replace, text)


# What a day may follow besides "on": "from the 4th", "until Friday".
_PREPOSITION_BEFORE = re.compile(
    r"\b(?:from|until|till|til|by|to|before|after|since|through|between)\s+$", _F
)
# The last day of a range, after its first: "from Friday to Monday".
_RANGE_END = re.compile(r"(?:\bto|\buntil|\btill|\bthrough|-|\u2013)\s*$", _F)
# The first day of a range, said as a bare number before its second: "from 3 to 7 September".
_RANGE_START = re.compile(r"\b\d{1,2}\s*(?:-|\u2013|to|until|till|and)\s*$", _F)


def dated_facts(facts: Iterable[Fact], said_at: datetime, zone: ZoneInfo) -> tuple[Fact, ...]:
    """Return ``facts`` with the relative dates of the dated kinds (events, plans, goals,
    decisions, birthdays, times away) made absolute (:func:`absolute_dates`); a fact whose key
    holds its value (a plan) is keyed by the new value. A routine ("every Monday") or a like
    keeps its words."""
    dated: list[Fact] = []
    for fact in facts:
        parts = parse_key(fact.key)
        value = fact.value
        if parts.attribute in _DATED:
            yearly = parts.attribute == "birthday" or "anniversar" in parts.item
            value = absolute_dates(fact.value, said_at, zone, calendar=not yearly)
        if value == fact.value:
            dated.append(fact)
            continue
        key = fact.key
        if parts.item == " ".join(fact.value.casefold().split()):
            key = fact_key(parts.subject, parts.attribute, value)
        dated.append(fact.model_copy(update={"key": key, "value": value}))
    return tuple(dated)


_SPAN_KEPT = re.compile(
    rf"\b(?:(?:on|the (?P<span>week|weekend) of)\s+)?(?P<wd>{'|'.join(_DAYS)})\s+(?P<d>\d{{1,2}})"
    rf"\s+(?P<m>{'|'.join(_MONTHS)})(?:\s+(?P<y>\d{{4}}))?\b"
)
# A month, kept ("in December", "in February 2027") or asked about ("in March").
_MONTH_SPAN = re.compile(rf"\bin\s+(?P<month>{_MONTH_WORD})(?:\s+(?P<y>\d{{4}}))?", _F)


def kept_day(said: str) -> re.Pattern[str] | None:
    """Return a pattern of the kept dates a weekday said by name stands for ("Monday": "Mon 3
    Mar"), so that "Tuesday, not Monday" corrects a date kept from "on Monday"; ``None`` when
    ``said`` is no weekday."""
    name = said.strip().casefold()[:3].title()
    if name not in _DAYS or not re.fullmatch(rf"{_WEEKDAY}|{name}", said.strip(), _F):
        return None
    return re.compile(rf"\b{name}\s+\d{{1,2}}\s+(?:{'|'.join(_MONTHS)})(?:\s+\d{{4}})?\b")


def _kept_date(match: re.Match[str], today: date) -> date | None:
    weekday = _DAYS.index(match.group("wd"))
    day, month = int(match.group("d")), _MONTHS.index(match.group("m")) + 1
    year = int(match.group("y")) if match.group("y") else _year(day, month, weekday, today)
    if year is None:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _spans(text: str, today: date) -> list[tuple[date, date]]:
    # The days each kept date of ``text`` covers: one, a week or a weekend.
    found: list[tuple[date, date]] = []
    for match in _SPAN_KEPT.finditer(text):
        first = _kept_date(match, today)
        if first is not None:
            length = {"week": 6, "weekend": 1}.get(match.group("span") or "", 0)
            found.append((first, first + timedelta(days=length)))
    for match in _MONTH_SPAN.finditer(text):  # the month named: this year's, or next once gone
        month = _MONTHS.index(match.group("month")[:3].title()) + 1
        year = int(match.group("y") or today.year + (month < today.month))
        following = date(year + month // 12, month % 12 + 1, 1)
        found.append((date(year, month, 1), following - timedelta(days=1)))
    return found


def days_asked(asked: str, now: datetime, zone: ZoneInfo) -> list[tuple[date, date]]:
    """The days a time asked about names ("next week": Monday to Sunday, "on Friday": that
    Friday), from ``now`` (aware), as (first, last) spans; none when it names no day."""
    return _spans(absolute_dates(asked, now, zone), now.astimezone(zone).date())


def same_time(asked: str, value: str, now: datetime, zone: ZoneInfo) -> bool | None:
    """Whether the fact ``value`` is kept for the time ``asked`` says relatively ("for Friday",
    "this weekend", "next Tuesday"): one of its dates falls in the days asked about. ``None``
    when ``asked`` names no day relatively (the words are compared instead).

    Args:
        asked: the time of a question, e.g. ``for next Tuesday``.
        value: a kept fact's value, e.g. ``flight to Rome is on Tue 1 Dec``.
        now: the question's time.
        zone: the user's time zone.
    """
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now
    wanted = days_asked(asked, now, zone)
    if not wanted:
        return None
    kept = _spans(value, now.astimezone(zone).date())
    return any(a <= y and x <= b for a, b in wanted for x, y in kept)


def falls_in(asked: str, moment: datetime, now: datetime, zone: ZoneInfo) -> bool | None:
    """Whether ``moment`` (a reminder's due time) falls in the days the time ``asked`` says
    relatively ("on Tuesday", "this week"); ``None`` when ``asked`` names no day relatively."""
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now
    wanted = days_asked(asked, now, zone)
    if not wanted:
        return None
    day = (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment).astimezone(zone)
    return any(a <= day.date() <= b for a, b in wanted)


# A day of the year as a birthday keeps it: "12 April", "April 12th".
_YEARLY = re.compile(
    rf"\b(?:(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m>{_MONTH_WORD})"
    rf"|(?P<m2>{_MONTH_WORD})\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b)",
    _F,
)


def kept_when(value: str, now: datetime, zone: ZoneInfo) -> tuple[date, str | None] | None:
    """The day a kept fact's value names and its clock time if one was kept ("flight is on Sat
    12 Dec at 18:00": that day, "18:00"); a day of the year ("birthday is 12 April") is its
    next one from ``now``. ``None`` when it names no day."""
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now
    today = now.astimezone(zone).date()
    kept = _KEPT.search(value)
    if kept is not None:
        day = _kept_date(kept, today)
        clock = re.search(r"\d{2}:\d{2}", kept.group("rest") or "")
        return None if day is None else (day, clock.group() if clock else None)
    yearly = _YEARLY.search(value)
    if yearly is None:
        return None
    said = yearly.group("m") or yearly.group("m2")
    number = int(yearly.group("d") or yearly.group("d2"))
    day = next_day_of_month(number, _MONTHS.index(said[:3].title()) + 1, today)
    return None if day is None else (day, None)


def _year(day: int, month: int, weekday: int, today: date) -> int | None:
    # The year next to today whose calendar puts the weekday on that day.
    for year in (today.year, today.year + 1, today.year - 1):
        try:
            if date(year, month, day).weekday() == weekday:
                return year
        except ValueError:
            continue
    return None


def said_from_now(text: str, now: datetime, zone: ZoneInfo) -> str:
    """Return ``text`` with each kept date ("on Fri 27 Nov") said from today in ``zone``.

    Args:
        text: a reply, e.g. ``Your test is on Fri 27 Nov.``
        now: the time it is (the message's time).
        zone: the user's time zone.

    Returns:
        e.g. ``Your test is tomorrow, Fri 27 Nov.``, ``Your test is today.``, ``Your test was
        on Fri 27 Nov.``
    """
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now
    today = now.astimezone(zone).date()

    def replace(match: re.Match[str]) -> str:
        moment = _kept_date(match, today)
        if moment is None:
            return match.group()
        verb, rest = match.group("verb"), match.group("rest") or ""
        said = f"{_DAYS[moment.weekday()]} {moment.day} {_MONTHS[moment.month - 1]}"
        ahead = (moment - today).days
        if ahead == 0:
            today_said = "tonight" if rest.strip() == "at night" else f"today{rest}"
            return f"{verb + ' ' if verb else ''}{today_said}"
        if ahead == 1:
            return f"{verb + ' ' if verb else ''}tomorrow, {said}{rest}"
        if ahead > 1:
            return match.group()
        if verb:
            return f"{'was' if verb.casefold() == 'is' else 'were'} on {said}{rest}"
        return f"on {said}{rest}, now past"

    return _KEPT.sub(replace, text)
