"""A reminder set by what it comes before: "remind me a day before Sara's birthday", "remind me
2 hours before my flight", "remind me the day before the dentist to book a taxi", "remind me on
the morning of the party".

The thing is found among the dated facts the user told (events, plans and birthdays, theirs and
those of the people in their life) by its words. The reminder is due that long before the
thing's day, at 09:00 on the user's clock (the evening or the night before: 19:00), or, for
hours and minutes, before the time kept with it. A thing not known, one without a day (or
without a time, for hours), or one whose reminder would be due already is said plainly, with
how to set the reminder by its time instead. Tested by ``tests/test_rule_reminders.py``.
"""

from __future__ import annotations

import re
from calendar import monthrange
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from agent.engines.rule_reminder_referent import DATED, SPOKEN_OF, thing_of
from agent.memory.longterm.memory_slots import describe_fact, in_second_person, parse_key
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.fact_dates import kept_when
from agent.memory.rules.reminder_requests import ReminderRequest
from agent.memory.rules.todo_openers import is_deed
from agent.memory.schemas import Fact, JobRef

__all__ = ["dated_fact", "moved_with", "reminder_before"]

_F = re.IGNORECASE
_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "ten": 10, "a couple of": 2, "a few": 3,
}  # fmt: skip
_BEFORE = re.compile(
    r"^(?:please\s+|(?:can|could) you\s+)?remind me\s+"
    r"(?:(?P<n>an?|one|two|three|four|five|six|seven|ten|a couple of|a few|\d{1,3})\s+"
    r"(?P<unit>minutes?|mins?|hours?|hrs?|days?|weeks?|months?)\s+before"
    r"|the\s+(?P<the>day|night|evening|week)\s+before"
    r"|(?:on\s+)?the\s+(?P<of>morning)\s+of)"
    r"(?:\s+(?P<rest>[^\W\d_].{0,200}?))?[\s.!?]*$",
    _F,
)
# Where what to remind of may begin: "the day before my trip to Rome to book a taxi".
_LINK = re.compile(r"\s*,?\s+(?P<link>to|about|that)\s+", _F)
_MORNING = time(9, 0)
_EVENING = time(19, 0)


def reminder_before(
    text: str, facts: Sequence[Fact], now: datetime, zone: ZoneInfo
) -> ReminderRequest | str | None:
    """The reminder ``text`` asks for before a dated thing ``facts`` know, or what to say
    instead (not known, no day, already due); ``None`` when ``text`` asks no such thing."""
    match = _BEFORE.match(text.strip())
    if match is None:
        return None
    rest = match.group("rest")
    if rest is None or rest.casefold() in SPOKEN_OF:
        return _before_latest(match, facts, now, zone)
    # The longest thing a fact is known by, and what follows it (if anything) to remind of:
    # "my trip to Rome to book a taxi" is the trip to Rome, to book a taxi.
    cuts = [(rest, None, "about")] + [
        (rest[: cut.start()], rest[cut.end() :], cut.group("link").casefold())
        for cut in reversed(list(_LINK.finditer(rest)))
    ]
    thing, label, link = cuts[-1]
    fact = None
    for said, after, word in cuts:
        fact = dated_fact(said, facts)
        if fact is not None:
            thing, label, link = said, after, word
            break
    if fact is None:
        return (
            f"I don't know when {in_second_person(thing)} is. Tell me (e.g. “my flight is on "
            "Friday at 6pm”), or say when to remind you (“remind me on Thursday at 9am to ...”)."
        )
    return _due_before(match, fact, now, zone, thing, label, link)


def _before_latest(
    match: re.Match[str], facts: Sequence[Fact], now: datetime, zone: ZoneInfo
) -> ReminderRequest | str:
    """The reminder before the dated thing said most recently that is not past ("my dentist
    appointment is on Thursday at 2pm", then "remind me an hour before"), or what to say."""
    today = now.astimezone(zone).date()
    for fact in reversed(facts):
        if parse_key(fact.key).name not in DATED:
            continue
        when = kept_when(fact.value, now, zone)
        # One without a day ("school pickup is at 3:15") is said so; one gone, passed over.
        if when is None or when[0] >= today:
            return _due_before(match, fact, now, zone, thing_of(fact), None, "about")
    return (
        "Before what? Tell me the thing and its day (e.g. “my flight is on Friday at 6pm”), "
        "then “remind me an hour before my flight”."
    )


def _due_before(
    match: re.Match[str],
    fact: Fact,
    now: datetime,
    zone: ZoneInfo,
    thing: str,
    label: str | None,
    link: str,
) -> ReminderRequest | str:
    """The reminder ``match`` asks for before ``fact``'s day (or time), about ``thing`` or,
    with ``label``, what that says; or what to say instead."""
    when = kept_when(fact.value, now, zone)
    said = describe_fact(fact)
    if when is None:
        return f"I don't know the day of that: {said}. Say when to remind you instead."
    day, clock = when
    unit = (match.group("unit") or "").casefold()
    count = match.group("n")
    amount = (int(count) if count.isdigit() else _COUNTS[count.casefold()]) if count else 1
    if unit.startswith("mo"):  # "a month before my passport expires": that day, months back
        months = day.year * 12 + day.month - 1 - amount
        year, month = divmod(months, 12)
        back = date(year, month + 1, min(day.day, monthrange(year, month + 1)[1]))
        local = datetime.combine(back, _MORNING)
    elif unit.startswith(("h", "m")):  # hours and minutes before the time kept with it
        if clock is None:
            return f"I don't know what time that is: {said}. Say when to remind you instead."
        hours, minutes = map(int, clock.split(":"))
        step = timedelta(hours=amount) if unit.startswith("h") else timedelta(minutes=amount)
        local = datetime.combine(day, time(hours, minutes)) - step
    else:
        days = amount * 7 if unit.startswith("w") or match.group("the") == "week" else amount
        days = 0 if match.group("of") else days
        evening = match.group("the") in {"night", "evening"}
        local = datetime.combine(day - timedelta(days=days), _EVENING if evening else _MORNING)
    due = local.replace(tzinfo=zone).astimezone(UTC)
    if due <= now:
        return f"That would be due already: {said}. Say when to remind you instead."
    ends = _HAPPENS.search(thing)  # "my passport expires": that it does; "renew it": the passport
    if label is None:
        return ReminderRequest(label=thing, due_at=due, link="that" if ends else "about")
    if ends is not None:
        label = _IT.sub(thing[: ends.start()], label, count=1)
    if link == "about" and is_deed(label):
        link = "to"
    return ReminderRequest(label=label, due_at=due, link=link)


# A thing said with what it does ("my passport expires", "the lease runs out"), and "it".
_HAPPENS = re.compile(
    r"\s+(?:expires|runs\s+out|is\s+due|starts|begins|lands|leaves|arrives|ends)$", re.IGNORECASE
)
_IT = re.compile(r"\b(?:it|them)\b", re.IGNORECASE)
# Whose a thing is, said by a pronoun: the most recent of it is meant.
_WHOSE = frozenset({"her", "his", "their", "our"})
# What a trip told of may be asked by: "remind me a day before the flight".
_JOURNEY = content_stems("flight trip journey holiday vacation")


def dated_fact(thing: str, facts: Sequence[Fact]) -> Fact | None:
    """The dated fact ``thing`` names by its words ("Sara's birthday": the birthday of "wife
    Sara"; "my flight": "flight to Oslo is on ..."), the most recent first."""
    wanted = content_stems(thing) - _WHOSE  # "her birthday": the birthday said last
    if not wanted:
        return None
    for fact in reversed(facts):
        parts = parse_key(fact.key)
        if parts.name not in DATED:
            continue
        words = content_stems(f"{parts.subject} {parts.attribute} {describe_fact(fact)}")
        if wanted <= words:
            return fact
    if wanted <= _JOURNEY:  # "the flight" of "we're flying to Tokyo on the 14th": the trip
        trips = (f for f in reversed(facts) if parse_key(f.key).name == "plan")
        return next((f for f in trips if "trip" in content_stems(f.value)), None)
    return None


def moved_with(
    known: Sequence[Fact],
    new: Sequence[Fact],
    scheduled: Sequence[JobRef],
    now: datetime,
    zone: ZoneInfo,
) -> list[tuple[JobRef, datetime]]:
    """The reminders about an event whose day ``new`` moves ("my flight got moved to Saturday"
    after "remind me 3 hours before my flight"), each with its new due time: as long before
    the event's new time as before the old one (hours before), or as many days before its new
    day at the reminder's own time (days before); none that would be due already, nor one that
    repeats (its rule is its own)."""
    moved: list[tuple[JobRef, datetime]] = []
    for fact in new:
        if parse_key(fact.key).name != "event":
            continue
        before = next((f for f in known if f.key == fact.key and f.value != fact.value), None)
        old, then = (kept_when(f.value, now, zone) if f else None for f in (before, fact))
        if old is None or then is None or old == then:
            continue
        words = content_stems(fact.value)
        for ref in scheduled:
            said = content_stems(ref.label)
            if ref.kind != "reminder" or ref.due_at is None or not said or not said <= words:
                continue
            if ref.repeat is not None:  # "every Monday about the team meeting": its own rule
                continue
            ahead = _moment(old, zone) - ref.due_at
            if ahead < timedelta(days=1) and old[1] and then[1]:  # hours before its time
                due = _moment(then, zone) - ahead
            else:  # days before: as many days before the new day, at its own time
                due = ref.due_at + (then[0] - old[0])
            if due > now:
                moved.append((ref, due))
    return moved


def _moment(when: tuple[date, str | None], zone: ZoneInfo) -> datetime:
    day, clock = when
    hours, minutes = map(int, (clock or "00:00").split(":"))
    return datetime.combine(day, time(hours, minutes)).replace(tzinfo=zone).astimezone(UTC)
