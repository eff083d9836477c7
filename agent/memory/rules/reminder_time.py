"""When a reminder is due: the time phrases a person says, read in their time zone.

:data:`WHEN` is the grammar of the phrases a reminder may carry (bounded, so a hostile message is
read quickly): a delay ("in 10 minutes", "in a fortnight", "in 1.5 hours"; "in an hour and a
half" and "in 10" once :func:`spoken_clock` has put them in full; "in 3 months": the same day
and time, or a shorter month's last day), a day ("tomorrow", "on Friday", "next Monday", "on 3
May", "the 12th of December", "on the 3rd": the next 3rd, next month's once today's has passed,
"next weekend": the Saturday after the coming one, "next month" or "in April": its first day,
"tonight", "in the morning": this morning if still ahead, else tomorrow's), a clock time ("at
18:30", "at 8am", "at noon"), or a day with a clock time ("tomorrow at 8am", "next Monday at
9:15", "Friday evening"). :func:`due_time` turns the phrase into a moment:

- a delay is added to now (an hour is an hour, whatever a clock change does);
- a day or a clock time is read by ``dateparser`` (the calendar, weekdays, "next", month
  names) on the user's wall clock, then placed in their zone (``zoneinfo``: the real offset of
  that day, summer time included). A day without a clock time is at 09:00, a part of the day
  at its usual hour (morning 09:00, afternoon 15:00, evening 19:00, tonight 21:00); a bare hour
  ("at 6") is morning or evening and is refused, unless the day says which ("tonight at 9",
  "at 9 tomorrow morning", "at 3 in the afternoon");
- the result must be ahead of now and at most :data:`MAX_REMINDER_DELAY` ahead: "today at 8am"
  at noon is refused, not moved to tomorrow; "at 8am" alone is the next 8am.

:func:`spoken_clock` puts a clock time said in words in figures first ("half past five pm":
"at 17:30", "quarter to eight in the morning": "at 07:45"); one that does not say morning or
evening stays a bare hour with its minutes ("half past six": "at 6+30"), refused like "at 6";
:func:`with_meridiem` says it as morning or evening ("at 6:30pm").

A pure function of its arguments (``now`` is passed in). Tested by ``tests/test_reminder_time.py``
and, as part of a reminder request, ``tests/test_extraction.py``.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

__all__ = [
    "HOLIDAYS",
    "MAX_REMINDER_DELAY",
    "MONTH",
    "WHEN",
    "day_in_month",
    "due_instead",
    "due_time",
    "local_moment",
    "named_days",
    "next_day_of_month",
    "read_delay",
    "says_clock",
    "spoken_clock",
    "with_meridiem",
]

#: The furthest ahead a reminder may be set.
MAX_REMINDER_DELAY = timedelta(days=366)

#: Holidays on the same day every year: (day, month).
HOLIDAYS = {
    "christmas": (25, 12), "christmas day": (25, 12), "christmas eve": (24, 12),
    "boxing day": (26, 12), "new year": (1, 1), "new year's day": (1, 1),
    "new year's eve": (31, 12), "halloween": (31, 10), "valentine's day": (14, 2),
    "valentines day": (14, 2), "valentine's": (14, 2),
}  # fmt: skip

_F = re.IGNORECASE

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60, "ninety": 90,
    "half a": 0.5, "half an": 0.5, "a couple of": 2, "a few": 3,
}  # fmt: skip
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "f": 1209600}
# A digit amount may touch its unit ("10min"); a word amount is followed by a space.
_NUM = (
    r"\d{1,9}(?:[.,]\d{1,3})?\s*"
    r"|(?:half an?|a couple of|a few|[a-z]+(?:-[a-z]+)?)\s+"
)
_UNIT = r"s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?|fortnights?"
_MERIDIEM = r"[ap]\.?m\.?"
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
#: A month's name, whole or short ("September", "Sept", "Sep"), as a pattern.
MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"
_PART = r"morning|afternoon|evening|night"
_DATE = (
    rf"(?:(?:the\s+)?{_ORDINAL}(?:\s+of)?\s+{MONTH}|{MONTH}\s+{_ORDINAL})(?:\s*,?\s*20\d\d)?"
    rf"|the\s+{_ORDINAL}|\d{{1,2}}(?:st|nd|rd|th)"
)
_DAY = (
    rf"this\s+time\s+(?:tomorrow|next\s+week)"
    rf"|today|tonight|tomorrow(?:\s+(?:{_PART}))?|the day after tomorrow|next weekend|next week"
    rf"|next month|in\s+{MONTH}\b"
    rf"|in\s+the\s+(?:{_PART})"
    rf"|this\s+(?:{_PART})|(?:(?:on|next|this|coming)\s+)?{_WEEKDAY}(?:\s+(?:{_PART}))?"
    rf"|(?:on\s+)?(?:{_DATE})"
)
_CLOCK = (
    rf"(?:at\s+)?\d{{1,2}}(?:[:.h]\d{{2}})?\s*{_MERIDIEM}"
    rf"|at\s+\d{{1,2}}(?:[:.h+]\d{{2}})?(?:\s+in\s+the\s+(?:{_PART}))?"
    r"|(?:at\s+)?(?:noon|midday|midnight)"
)
_DELAY_PHRASE = rf"in\s+(?:{_NUM})(?:{_UNIT}|months?)\b"
#: A time phrase of a reminder (a regular-expression source, no groups of its own).
WHEN = (
    rf"(?:{_DELAY_PHRASE}"
    rf"|(?:{_DAY})(?:\s*,?\s*(?:{_CLOCK}))?(?:\s*utc)?"
    rf"|(?:{_CLOCK})(?:\s*utc)?(?:\s*,?\s*(?:{_DAY}))?)"
)

_DELAY = re.compile(rf"in\s+(?P<n>{_NUM})(?P<u>{_UNIT})", _F)
# "in a month", "in 3 months": the same day and time that many months on.
_MONTHS_LATER = re.compile(rf"in\s+(?P<n>{_NUM})months?\b", _F)
# "next weekend": the Saturday of the weekend after the coming one (as kept facts say it).
_NEXT_WEEKEND = re.compile(r"\bnext\s+weekend\b", _F)
# "in April": its first day.
_IN_MONTH = re.compile(rf"\bin\s+(?P<m>{MONTH})\b", _F)
# A bare hour: "at 6", or "at 6+30" (spoken_clock's "half past six", minutes kept, morning or
# evening still to say).
_BARE_HOUR = re.compile(r"\bat\s+(?P<h>\d{1,2})(?:\+(?P<min>\d{2}))?\b(?![:.h]?\d|\s*[ap]\.?m)", _F)
_HAS_CLOCK = re.compile(rf"\d\s*{_MERIDIEM}|\d[:.h]\d{{2}}|\b(?:noon|midday|midnight)\b", _F)
_EVENING = re.compile(r"\b(?:tonight|evening|night|afternoon)\b", _F)
_MORNING = re.compile(r"\bmorning\b", _F)
# "in the morning": this morning if still ahead, else tomorrow's; "at 3 in the afternoon".
_IN_THE_PART = re.compile(rf"\s*\bin\s+the\s+(?P<part>{_PART})\b", _F)
_PART_HOURS = {"morning": "09:00", "afternoon": "15:00", "evening": "19:00", "night": "21:00"}
_PART_WORD = re.compile(rf"\b(?:this\s+)?(?P<part>{_PART})\b", _F)
_DOTTED = re.compile(r"(?P<h>\d{1,2})[.h](?P<m>\d{2})\b")
_NAMES_DAY = re.compile(
    rf"\b(?:today|tonight|tomorrow|week|{_WEEKDAY}|{MONTH}|the|this\s+(?:{_PART}))\b", _F
)
# "this time tomorrow", "this time next week": the same moment a day or a week on.
_THIS_TIME = re.compile(r"^this\s+time\s+(?P<next>tomorrow|next\s+week)$", _F)
_UTC = re.compile(r"\s*\butc\b", _F)
#: When a day is said without a clock time.
_DEFAULT_CLOCK = "09:00"

_SETTINGS: dict[str, Any] = {
    "PREFER_DATES_FROM": "future",
    "RETURN_AS_TIMEZONE_AWARE": False,
    # The phrase is read on the user's wall clock (RELATIVE_BASE), zone-free: the zone is
    # applied after, by zoneinfo, with the offset of the day found.
    "TIMEZONE": "UTC",
    "PREFER_DAY_OF_MONTH": "first",
}


def _amount(said: str) -> float | None:
    """The number a delay says ("10", "1.5", "a couple of"), or ``None``."""
    raw = " ".join(said.lower().replace(",", ".").split())
    amount = _NUMBER_WORDS.get(raw)
    if amount is None and raw[:1].isdigit():
        amount = float(raw)
    return amount


def read_delay(when: str) -> timedelta | None:
    """Return the delay an "in 10 minutes" phrase says, or ``None`` (none, or out of range)."""
    match = _DELAY.match(when)
    if match is None:
        return None
    amount = _amount(match.group("n"))
    if amount is None:
        return None
    unit = match.group("u").lower()
    seconds = amount * _UNIT_SECONDS["m" if unit.startswith("mi") else unit[0]]
    if not 0 < seconds <= MAX_REMINDER_DELAY.total_seconds():
        return None
    return timedelta(seconds=seconds)


def _wall_clock_phrase(when: str) -> str | None:
    """The phrase as dateparser reads it, or ``None`` for a bare hour nothing disambiguates."""
    said = " ".join(when.split())
    bare = _BARE_HOUR.search(said)
    if bare is not None:
        if _EVENING.search(said) is None and _MORNING.search(said) is None:
            return None  # "at 6": morning or evening?
        said = _said_as(said, bare, evening=_EVENING.search(said) is not None)
        said = _IN_THE_PART.sub("", said)  # "at 3 in the afternoon": said, at 3pm
    said = _DOTTED.sub(r"\g<h>:\g<m>", said)
    said = re.sub(rf"(\d)\s*({_MERIDIEM})", lambda m: m.group(1) + m.group(2).replace(".", ""),
                  said, flags=_F)  # fmt: skip
    said = re.sub(r"\btonight\b", "today night", said, flags=_F)
    said = re.sub(r"\b(?:noon|midday)\b", "12:00", said, flags=_F)
    said = re.sub(r"\bmidnight\b", "00:00", said, flags=_F)
    if _HAS_CLOCK.search(said) is None and _PART_WORD.search(said) is None:
        return f"{said} {_DEFAULT_CLOCK}"
    part = _PART_WORD.search(said)
    if part is not None:
        hour = _PART_HOURS[part.group("part").lower()]
        rest = (said[: part.start()] + said[part.end() :]).strip()
        # "Friday evening at 8pm": the clock time wins over the part of the day.
        said = rest if _HAS_CLOCK.search(rest) else f"{rest or 'today'} {hour}"
    return said


def says_clock(when: str) -> bool:
    """Whether a time phrase says a clock time ("at 8am", "18:30", "noon"), not a day only."""
    return _HAS_CLOCK.search(when) is not None or _BARE_HOUR.search(when) is not None


_MONTH_ABBREVIATIONS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
# "the 3rd", "on the 14th of May", "on 24th December": a day of the month, which dateparser
# reads as a month ("3rd": March) or in the past ("the 14th" on the 27th); said as the date it
# names before it reads it (a year said with it is read as said).
_DAY_OF_MONTH = re.compile(
    r"\b(?:on\s+(?:the\s+)?|the\s+)(?P<d>\d{1,2})(?:st|nd|rd|th)\b"
    rf"(?:\s+(?:of\s+)?(?P<m>{MONTH})\b)?(?!\s*,?\s*\d{{4}}|\s+of\b)",
    _F,
)


def next_day_of_month(day: int, month: int | None, today: date) -> date | None:
    """The next day numbered ``day`` (of ``month``, 1-12, if given) from ``today``, today
    included: the 14th on the 27th is next month's; ``None`` when no month within a year has
    it."""
    first = today.year * 12 + today.month - 1
    for index in range(first, first + 13):
        if month is not None and index % 12 + 1 != month:
            continue
        try:
            found = date(index // 12, index % 12 + 1, day)
        except ValueError:
            continue
        if found >= today:
            return found
    return None


def _days_of_month_named(phrase: str, today: date) -> str:
    def name(match: re.Match[str]) -> str:
        said = (match.group("m") or "").casefold()[:3]
        month = _MONTH_ABBREVIATIONS.index(said) + 1 if said else None
        found = next_day_of_month(int(match.group("d")), month, today)
        return match.group() if found is None else f"{found:%d %B %Y}"

    return _DAY_OF_MONTH.sub(name, phrase)


@lru_cache(maxsize=256)  # the concierge and the promotion gate read one message's phrase
def local_moment(when: str, now: datetime, zone: ZoneInfo) -> datetime | None:
    """Return the wall-clock moment (naive, in ``zone``) a day or clock phrase names, read by
    ``dateparser`` from ``now`` (future dates preferred: "Friday" is the coming one); ``None``
    when it reads none. A day without a clock time is at 09:00 (see the module docstring).

    Args:
        when: a day and/or clock phrase, e.g. ``next Tuesday at 3pm`` (no delay).
        now: the time the phrase was said (a naive time is taken as UTC).
        zone: the user's time zone.
    """
    phrase = _wall_clock_phrase(when)
    if phrase is None:
        return None
    # Imported here: dateparser loads its language data on first use (~0.2 s), which a bot
    # that is never asked for a reminder should not pay at start-up.
    import dateparser

    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now
    base = now.astimezone(zone).replace(tzinfo=None)
    today = base.date()
    coming = today + timedelta(days=(5 - today.weekday()) % 7 if today.weekday() != 6 else -1)
    phrase = _NEXT_WEEKEND.sub(f"{coming + timedelta(weeks=1):%d %B %Y}", phrase)
    phrase = _IN_MONTH.sub(lambda m: f"1 {m['m']}", phrase)
    local: datetime | None = dateparser.parse(
        _days_of_month_named(phrase, today),
        languages=["en"],
        settings={**_SETTINGS, "RELATIVE_BASE": base},
    )
    return local


_HOURS = "one two three four five six seven eight nine ten eleven twelve".split()
_HOUR = rf"\d{{1,2}}|{'|'.join(_HOURS)}"
# "half past five pm", "a quarter to 8 in the morning", "7 o'clock tonight".
# "at half 6": half past, as said in Britain.
_SPOKEN = re.compile(
    rf"\b(?:at\s+)?(?:(?:(?:a\s+)?(?P<q>quarter|half)\s+(?P<dir>past|after|to)\s+|(?<=at\s)"
    rf"(?P<uk>half)\s+)(?P<h>{_HOUR})"
    rf"|(?P<oc>{_HOUR})\s*o'?clock)(?:(?<=\d)(?!\d)|\b)(?P<m>\s*(?:{_MERIDIEM})(?!\w)|\s+in\s+the\s+(?:{_PART})"
    r"|\s+tonight)?",
    _F,
)


def _in_figures(match: re.Match[str]) -> str:
    said = (match.group("h") or match.group("oc")).casefold()
    hour = int(said) if said.isdigit() else _HOURS.index(said) + 1
    said_part = (match.group("q") or match.group("uk") or "").casefold()
    minute = {"half": 30, "quarter": 15}.get(said_part, 0)
    if (match.group("dir") or "").casefold() == "to":
        hour, minute = (hour - 2) % 12 + 1, 60 - minute
    part = (match.group("m") or "").strip().casefold()
    if not part:  # morning or evening? Said later, the minutes kept ("at 6+30").
        if hour > 12:
            return f"at {hour:02d}:{minute:02d}"
        return f"at {hour}+{minute:02d}" if minute else f"at {hour}"
    evening = part[0] == "p" or part.endswith(("afternoon", "evening", "night"))
    hour = hour % 12 + (12 if evening else 0)
    return f"at {hour:02d}:{minute:02d}"


# "in an hour and a half", "in 2 and a half hours": a delay with its half hour.
_HALF_DELAY = re.compile(
    rf"\bin\s+(?P<n>an?|{_HOUR})\s+(?:hours?\s+and\s+a\s+half|and\s+a\s+half\s+hours?)\b", _F
)
# "in 10 to check the rice": minutes, as a chat says them.
_BARE_DELAY = re.compile(r"\bin\s+(?P<n>\d{1,2})(?=\s+(?:to|about|that)\b|\s*[.!]*$)", _F)
# Times of the day said by what happens then: "at lunchtime", "after work", "end of day" (one
# pass: the alternatives are tried in this order at each word).
_SAID_TIMES = re.compile(
    r"\b(?:(?P<after_lunch>after\s+lunch)|(?P<lunch>(?:at\s+)?lunch\s*time|at\s+lunch)"
    r"|(?P<after_work>after\s+work)|(?P<after_dinner>after\s+dinner)"
    r"|(?P<end_of_day>(?:at\s+)?(?:the\s+)?end\s+of\s+(?:the\s+)?(?:work\s*)?day|eod)"
    r"|(?P<first_thing>first\s+thing(?:\s+in\s+the\s+morning)?))\b",
    _F,
)
_SAID_CLOCK = {
    "after_lunch": "at 13:30", "lunch": "at 12:30", "after_work": "at 18:00",
    "after_dinner": "at 20:00", "end_of_day": "at 17:00", "first_thing": "at 09:00",
}  # fmt: skip


def _half(match: re.Match[str]) -> str:
    said = match.group("n").casefold()
    hours = int(said) if said.isdigit() else 1 if said in {"a", "an"} else _HOURS.index(said) + 1
    return f"in {hours * 60 + 30} minutes"


def spoken_clock(text: str) -> str:
    """Return ``text`` with each clock time said in words put in figures (see the module), and
    the times said by what happens then ("after lunch": 13:30, "at lunchtime": 12:30, "after
    work": 18:00, "after dinner": 20:00, "end of day": 17:00, "first thing": 09:00) and the
    delays said short ("in an hour and a half": 90 minutes, "in 10": 10 minutes) in full."""
    text = _BARE_DELAY.sub(r"in \g<n> minutes", _HALF_DELAY.sub(_half, text))
    text = _SAID_TIMES.sub(lambda match: _SAID_CLOCK[str(match.lastgroup)], text)
    return _SPOKEN.sub(_in_figures, text)


# A holiday by its name, "(the) weekend" by its Saturday: days a reminder may be set for.
_NAMED_DAY = re.compile(
    r"\b(?:on\s+)?(?:(?P<holiday>"
    + "|".join(re.escape(name) for name in sorted(HOLIDAYS, key=len, reverse=True))
    + r")|(?P<weekend>(?:this|the|at\s+the|over\s+the)\s+weekend))\b",
    _F,
)


def named_days(text: str) -> str:
    """``text`` with the days it names by a name said as dates ("on Christmas Eve" -> "on 24
    December") and "this weekend" as its Saturday ("on Saturday")."""

    def dated(match: re.Match[str]) -> str:
        if match["weekend"]:
            return "on Saturday"
        day, month = HOLIDAYS[match["holiday"].casefold()]
        return f"on {day} {date(2000, month, 1):%B}"

    return _NAMED_DAY.sub(dated, text)


def with_meridiem(text: str, *, evening: bool) -> tuple[str, int] | None:
    """``text`` with its first bare hour said as morning or evening ("remind me tomorrow at
    10 to call" -> "... at 10am to call"), and the hour; ``None`` when it has none (or one past
    12, which says which already)."""
    text = spoken_clock(text)
    bare = _BARE_HOUR.search(text)
    if bare is None or not 1 <= int(bare.group("h")) <= 12:
        return None
    return _said_as(text, bare, evening=evening), int(bare.group("h"))


def _said_as(text: str, bare: re.Match[str], *, evening: bool) -> str:
    """``text`` with its bare hour said as morning or evening: "at 6+30" -> "at 6:30pm"."""
    minutes = f":{bare.group('min')}" if bare.group("min") else ""
    said = f"at {bare.group('h')}{minutes}{'pm' if evening else 'am'}"
    return text[: bare.start()] + said + text[bare.end() :]


def due_time(when: str, now: datetime, zone: ZoneInfo) -> datetime | None:
    """Return when a reminder said with ``when`` is due, in UTC, or ``None``.

    Args:
        when: a phrase :data:`WHEN` matched, e.g. ``tomorrow at 8am``.
        now: the time the message was received (a naive time is taken as UTC).
        zone: the user's time zone (a phrase ending in "UTC" is read in UTC).
    """
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    part = _IN_THE_PART.fullmatch(when.strip())
    if part is not None:  # "in the morning": this one if still ahead, else tomorrow's
        said = part.group("part")
        return due_time(f"this {said}", now, zone) or due_time(f"tomorrow {said}", now, zone)
    months = _MONTHS_LATER.match(when)
    if months is not None:
        return _months_later(months.group("n"), now, zone)
    same = _THIS_TIME.match(when.strip())
    if same is not None:
        return now + timedelta(days=1 if same["next"].casefold() == "tomorrow" else 7)
    if _DELAY.match(when):
        delay = read_delay(when)
        return None if delay is None else now + delay
    if _UTC.search(when):
        zone, when = ZoneInfo("UTC"), _UTC.sub("", when)
    local = local_moment(when, now, zone)
    if local is None:
        return None
    due = local.replace(tzinfo=zone).astimezone(UTC)
    if due <= now and _NAMES_DAY.search(when) is None:
        # "at 10:32" said at 10:32: the next occurrence, tomorrow.
        due = (local + timedelta(days=1)).replace(tzinfo=zone).astimezone(UTC)
    day_of_month = _DAY_OF_MONTH.search(when)
    if due <= now and day_of_month is not None and day_of_month["m"] is None:
        # "on the 1st" said on the 1st after its hour: next month's.
        later = local_moment(when, now + timedelta(days=1), zone)
        due = due if later is None else later.replace(tzinfo=zone).astimezone(UTC)
    if not now < due <= now + MAX_REMINDER_DELAY:
        return None
    return due


def day_in_month(index: int, day: int) -> date:
    """Day ``day`` of the month ``index`` (``year * 12 + month - 1``), or its last day when it
    has no such day (the 31st of April is the 30th)."""
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day, calendar.monthrange(year, month + 1)[1]))


def _months_later(said: str, now: datetime, zone: ZoneInfo) -> datetime | None:
    """``now`` that many months on ("in a month", "in 3 months"): the same time of day, on the
    same day of the month or the month's last; ``None`` past :data:`MAX_REMINDER_DELAY`."""
    amount = _amount(said)
    if amount is None or amount != int(amount) or not 0 < amount <= 12:
        return None
    local = now.astimezone(zone)
    day = day_in_month(local.year * 12 + local.month - 1 + int(amount), local.day)
    due = datetime.combine(day, local.time().replace(tzinfo=None), tzinfo=zone).astimezone(UTC)
    return due if now < due <= now + MAX_REMINDER_DELAY else None


# "the evening", "this morning": a part of the day, not a day.
_PART_OF_DAY = re.compile(rf"\b(?:the|this)\s+(?:{_PART})\b", _F)


def due_instead(when: str, before: datetime, now: datetime, zone: ZoneInfo) -> datetime | None:
    """Return when a reminder due at ``before`` is due once moved to ``when``, in UTC, or
    ``None`` (unreadable, or not ahead).

    A move is a small change: a clock time said without a day is the one nearest the
    reminder's old time, on its own day or the next one ahead ("change it to 11am" of Monday's
    9:30 is Monday at 11:00; "make it 11:30pm" of a reminder at 00:31 tonight is 23:30 tonight);
    a day said without a clock time keeps its time of day ("move it to Tuesday" of a 9:30
    reminder is Tuesday at 9:30); a delay, or a day and a time, are read as :func:`due_time`
    reads them.
    """
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    ahead = due_time(when, now, zone)
    if _DELAY.match(when) or _UTC.search(when):
        return ahead
    names_day = _NAMES_DAY.search(_PART_OF_DAY.sub(" ", when)) is not None
    clock = says_clock(when) or _PART_WORD.search(when) is not None
    if names_day == clock:
        return ahead
    was = before.astimezone(zone)
    if clock:  # on the reminder's own day
        phrase = _PART_OF_DAY.sub(lambda m: m.group(0).split()[-1], when)
        local = local_moment(phrase, was.replace(hour=0, minute=0, second=0, microsecond=0), zone)
    else:  # at the reminder's own time of day
        local = local_moment(when, now, zone)
        local = None if local is None else local.replace(hour=was.hour, minute=was.minute)
    moved = None if local is None else local.replace(tzinfo=zone).astimezone(UTC)
    if moved is None or not now < moved <= now + MAX_REMINDER_DELAY:
        return ahead
    if clock and ahead is not None and abs(ahead - before) < abs(moved - before):
        return ahead
    return moved
