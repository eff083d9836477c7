"""What the rule-based concierge answers of the user's plans, trips and dated events.

- "when is my flight?", "when's my dentist appointment?": the event or plan that names it
  (a flight asked about is also a trip told in other words: "I'm flying to Rome in May");
- "where am I going (in August)?", "where am I flying to?": the trips and journeys told of,
  those said with the time asked about;
- "what are my plans for Friday?", "what am I doing this weekend?", "am I free on Tuesday?",
  "what's due next week?": the plans and events said with that time (a day said relatively is
  the date it names, as plans are kept: :mod:`agent.memory.rules.fact_dates`);
- "is my dentist appointment on Wednesday?": yes or no, with when it is; "when am I seeing
  grandma?", "when are we moving?": the plan or event that names them;
- "where am I staying in York?", "which hotel did I book?": the stays told of.

Each ``answer_*`` function is an :data:`~agent.engines.rule_reading.Answer`; an honest "you
haven't told me" when nothing was told for the time asked about. Covered by
``tests/test_everyday_phrasings.py`` ("plans with dates") and ``tests/test_rule_based.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta

from agent.engines.rule_facts import NOT_TOLD, answer_line, own_facts
from agent.engines.rule_reading import Reading
from agent.engines.rule_todos import job_line, scheduled_jobs
from agent.memory.longterm.memory_slots import in_second_person, parse_key
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.fact_dates import days_asked, falls_in, kept_when, same_time
from agent.memory.rules.fact_patterns import TIME_BEGINS, WEEKDAY_STEMS
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef

__all__ = ["answer_event", "answer_plans_when", "answer_stay", "answer_trip", "answer_upcoming"]

_F = re.IGNORECASE
# "where am I going in August?", "where am I flying to?", with the time asked about.
_ASK_TRIP = re.compile(
    r"\bwhere (?:am i|are we|will i be|will we be|do i)"
    r" (?:going|headed|heading|off|flying|travel(?:l)?ing|travel|go|fly|driving|sailing)\b"
    r"(?: to)?(?P<when>(?: (?:in|on|this|next|at|for|during) [\w' -]{1,40}?)?)\??$",
    _F,
)
# A journey with a place it goes to ("flight to Tokyo is on 14 March").
_DESTINATION = re.compile(r"\bto\s+[A-Z]")
# What "when is my flight?" may ask of a trip told in other words ("I'm flying to Rome in May").
_JOURNEY_WORDS = "flight trip travel journey holiday vacation train drive voyage getaway break"
_JOURNEY = re.compile("(?:" + "|".join(f"{word}s?" for word in _JOURNEY_WORDS.split()) + ")", _F)
# "when is my flight?", "when's my dentist appointment?"
_ASK_WHEN = re.compile(
    r"^(?:when|what\s+time|what\s+day|what\s+date|which\s+day)(?:'s|\s+is|\s+are|\s+does|\s+do)"
    r"\s+(?:(?:my|the|our)\s+|(?=[^\W\d_]+'s\s)|(?!(?:it|that|this|they|we|i|you)\b))"
    r"(?P<thing>[^\W_][\w': -]{0,60}?)"
    r"(?:\s+(?:leave|depart|start|begin|take off|happen|coming|visiting|arriving|due))?"
    r"(?:\s+(?:today|tonight|tomorrow|(?:on|this|next)\s+[a-z]+))?\??$",
    _F,
)
# "when do we fly out?", "when am I flying home?": the flight told.
_ASK_FLY_OUT = re.compile(
    r"^when (?:am i|are we|do i|do we) fly(?:ing)? (?:out|off|home|back)\??$", _F
)
# "when do we land?", "when does Sara's train get in?", "when does my mum arrive?": a journey's
# arrival, the user's or whose it is.
_ASK_ARRIVE = re.compile(
    r"^(?:when|what\s+time)\s+(?:(?:do|will)\s+(?:i|we)|(?:does|will)\s+(?P<who>[\w' ]{1,40}?))"
    r"\s+(?:land|arrive|get\s+in|get\s+here|get\s+back)\??$",
    _F,
)
_JOURNEY_STEMS = content_stems("flight train bus ferry coach")
# The words a trip is asked about by, whatever it was told as ("a stay at a cottage in Wales").
_TRIP_STEMS = content_stems(_JOURNEY_WORDS)
# "when am I flying to Lisbon?", "when are we going to Rome?": a trip, by where it goes.
_ASK_WHEN_GO = re.compile(
    r"^when (?:am i|are we|do i|do we|will i|will we) (?:be )?(?:fly(?:ing)?|go(?:ing)?"
    r"|travel(?:l)?(?:ing)?|head(?:ing)?|leav(?:e|ing)|off|driv(?:e|ing))(?: off)? (?:to|for)"
    r" (?P<thing>[^\W\d_][\w' -]{0,60}?)\??$"
    # "when are we going skiing?", "when do we go camping?": the plan to do it.
    r"|^when (?:am i|are we|will i|will we|do i|do we) (?:be )?go(?:ing)? (?P<doing>[^\W\d_]{2,}"
    r"ing(?: [\w' -]{0,40}?)?)(?: again)?\??$"
    # "when am I seeing grandma?", "when are we meeting Tom?": the plan or event with them.
    r"|^when (?:am i|are we|will i|will we|do i|do we) (?:be )?(?:see(?:ing)?|visit(?:ing)?"
    r"|meet(?:ing)?) (?:up with )?(?P<whom>[^\W\d_][\w' -]{0,60}?)(?: next| again)?\??$",
    _F,
)
# "when are we moving?", "when am I moving out?": the move told.
_ASK_MOVE = re.compile(
    r"^when (?:am i|are we|do i|do we|will i|will we) (?:be )?mov(?:e|ing)"
    r"(?: (?:house|home|flat|out|in(?: together)?))?\??$",
    _F,
)
_MOVE_STEMS = content_stems("move")
# "who am I going to Paris with?", "who are we flying with?": the trip told with whom.
_ASK_WHO_WITH = re.compile(
    r"^(?:who|which (?:friends?|people))(?:'s| am i| are we| will i be| will we be| is| are)"
    r" (?:going|flying|travel(?:l)?ing|heading|off|driving|coming)"
    r"(?: (?:to|for) (?P<thing>[^\W\d_][\w' -]{0,60}?))? with(?: me| us)?\??$",
    _F,
)
_WITH = re.compile(rf"\bwith\s+(?P<who>.+?)(?={TIME_BEGINS}|[,.;]|$)")
# "where am I staying in York?", "which hotel are we staying at?", "what hotel did I book?"
_ASK_STAY = re.compile(
    r"^(?:where|(?:which|what)\s+(?:hotel|place|airbnb|cottage))\s+(?:(?:am\s+i|are\s+we|will\s+i"
    r"\s+be|will\s+we\s+be)\s+staying|did\s+(?:i|we)\s+book(?:\s+to\s+stay)?)(?:\s+at)?"
    r"(?P<when>\s+(?:in|on|at|this|next|for|during|tonight|tomorrow)\b[\w' -]{0,40}?)?\??$",
    _F,
)
# "what are my plans for Friday?", "what am I doing this weekend?", "what's on next week?",
# "what's on Tuesday?", "what's happening on the 14th?",
# "what do I have on Tuesday?", "anything on this week?"
_TIME = (
    r"(?:(?:on|for|this|next|tomorrow|tonight|today|in|at)\b|(?:mon|tues|wednes|thurs|fri|satur"
    r"|sun)days?\b|the\s+\d{1,2}(?:st|nd|rd|th)\b)[\w' -]{0,40}?"
)
_ASK_PLANS_WHEN = re.compile(
    rf"^(?:what(?:'s|\s+is|\s+are)\s+my\s+plans?\s+(?P<a>{_TIME})"
    rf"|what\s+am\s+i\s+(?:doing|up\s+to)\s+(?P<b>{_TIME})"
    rf"|what(?:'s|\s+is|\s+are)\s+(?:on|happening|planned|due|coming\s+up)\s+(?P<c>{_TIME})"
    rf"|what\s+(?:happens|goes\s+on)\s+(?P<j>{_TIME})"
    rf"|(?:do\s+i\s+have|have\s+i\s+got|is\s+there)\s+(?:any\s+)?(?:plans|anything(?:\s+planned)?)"
    rf"\s+(?P<d>{_TIME})"
    rf"|what\s+(?:do\s+i\s+have|have\s+i\s+got)\s+(?:planned\s+)?(?P<e>{_TIME})"
    rf"|(?:is\s+there\s+|have\s+i\s+got\s+)?anything\s+(?:planned\s+|happening\s+)?(?P<f>{_TIME})"
    rf"|what\s+plans\s+(?:do\s+i\s+have|have\s+i\s+got)\s+(?P<g>{_TIME})"
    rf"|who\s+am\s+i\s+(?:meeting|seeing)\s+(?P<h>{_TIME})"
    # "am I free on Tuesday?", "are we busy this weekend?": what is planned then, or nothing.
    rf"|(?:am|are)\s+(?:i|we)\s+(?:free|busy|available|doing\s+anything)\s+(?P<i>{_TIME}))"
    r"\s*\??$",
    _F,
)
_WEEKDAYS_SAID = re.compile(r"\b((?:mon|tues|wednes|thurs|fri|satur|sun)day)s\b", _F)
# "is my dentist appointment on Tuesday?", "is the party this Saturday?": yes or no, by the
# event or plan told.
_ASK_IS_ON = re.compile(
    rf"^(?:is|are)\s+(?:my|the|our)\s+(?P<thing>[^\W\d_][\w' -]{{0,60}}?)\s+(?P<when>{_TIME})\??$",
    _F,
)
# "what's coming up?", "anything coming up?", "what's on my calendar?", "what are my plans?"
_ASK_UPCOMING = re.compile(
    r"^(?:what(?:'s|\s+is|\s+have\s+i\s+got|\s+do\s+i\s+have)|(?:is\s+there\s+|have\s+i\s+got\s+)?"
    r"anything)\s+coming\s+up\b|^what(?:'s|\s+is)\s+(?:on\s+)?(?:my|the)\s+(?:calendar|schedule"
    r"|agenda|diary)\b|^what(?:'s|\s+is)\s+next\s+for\s+me\b"
    # "what are my plans?", "any plans coming up?", "do I have any plans?", "what's planned?"
    r"|^(?:what(?:'s|\s+is|\s+are)\s+(?:my|our)\s+plans?|(?:do\s+i\s+have|have\s+i\s+got|any)"
    r"\s+(?:any\s+)?plans|what\s+plans\s+do\s+i\s+have|what(?:'s|\s+is)\s+planned)"
    r"(?:\s+coming\s+up|\s+(?:at\s+the\s+moment|right\s+now|so\s+far))?\s*\??$",
    _F,
)
# The days of the week a routine is said on: "on Wednesdays", "every Monday", "on weekdays".
_DAY_NAMES = WEEKDAY_STEMS.split("|")
_WEEKDAYS = re.compile(
    rf"\b(?:(?P<day>{'|'.join(_DAY_NAMES)})days?|weekdays|(?:at\s+)?weekends|every\s+day)\b", _F
)
# A time asked about that says its own preposition ("for Friday", "this week", "tomorrow").
_SAID_WITH_WORD = re.compile(
    r"^(?:on|for|in|at|by|this|next|last|tomorrow|today|tonight|the\s+weekend)\b", _F
)
# Words of a time asked about that every plan shares or none says ("on", "for").
_TIME_WORDS = content_stems("on for in at the this")
# How a stay is kept (``agent.memory.rules.fact_rules``: "a stay at the hotel in York").
_STAY = ("a stay at ", "a stay in ")


def answer_event(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "when is my flight?" (or "when am I seeing grandma?", "is my trip to Wales next
    month?") from the dated things the user told of; ``None`` when none matches (another rule,
    or a line said in passing, may answer)."""
    who_with = _ASK_WHO_WITH.match(reading.text)
    if who_with is not None:  # "who am I going to Paris with?": whom the trip was told with
        return _companions(reading, who_with.group("thing"))
    going = _ASK_WHEN_GO.match(reading.text)
    said = (going.group("whom") or going.group("doing")) if going is not None else None
    if said:  # "when am I seeing grandma?", "when are we going skiing?"
        wanted = content_stems(said)
        seen = [f for f in own_facts(reading, "plan", "event") if wanted <= content_stems(f.value)]
        return " ".join(answer_line(f) for f in seen) or None
    if going is not None:  # "when am I flying to Lisbon?": the trips there, or not told
        wanted = content_stems(going.group("thing"))
        trips = [f for f in _trips(reading) if wanted <= content_stems(f.value)]
        told = " ".join(answer_line(f) for f in trips)
        return told or f"{NOT_TOLD} about a trip to {going.group('thing')} yet."
    if _ASK_MOVE.match(reading.text):  # "when are we moving?": the move told
        moves = [f for f in own_facts(reading, "plan") if _MOVE_STEMS & content_stems(f.value)]
        return " ".join(answer_line(f) for f in moves) or f"{NOT_TOLD} about a move yet."
    if _ASK_FLY_OUT.match(reading.text):  # "when do we fly out?": the flight
        flights = [f for f in own_facts(reading, "event") if "flight" in content_stems(f.value)]
        return " ".join(answer_line(f) for f in flights) or None
    arriving = _ASK_ARRIVE.match(reading.text)
    if arriving is not None:  # "when does Sara land?": her flight; "when do we land?": ours
        who = arriving.group("who")
        wanted = content_stems(who or "") - _JOURNEY_STEMS
        journeys = [
            f
            for f in own_facts(reading, "event")
            if content_stems(f.value) & _JOURNEY_STEMS
            and (wanted <= content_stems(f.value) if who else "'s " not in f.value.split(" is ")[0])
        ]
        return " ".join(answer_line(f) for f in journeys) or None
    asked = _ASK_IS_ON.match(reading.text)
    if asked is not None:  # "is my dentist appointment on Tuesday?": yes or no, and when
        wanted = content_stems(asked.group("thing"))
        kept = own_facts(reading, "event", "plan")
        named = [f for f in kept if wanted <= content_stems(f.value)]
        place = wanted - _TRIP_STEMS  # "my trip to Wales": a stay or a journey there
        if not named and place != wanted:  # "my holiday": any trip or stay (a plan)
            named = [f for f in _trips(reading) if place <= content_stems(f.value)]
        if not named:  # "is my ... ?" of nothing told: not told; "is the match ...?": the world
            mine = re.match(r"(?:is|are)\s+(?:my|our)\b", reading.text, _F) is not None
            return f"{NOT_TOLD} about your {asked.group('thing')} yet." if mine else None
        said = " ".join(answer_line(f) for f in named)
        then = any(_said_for(asked.group("when").strip(), f, reading) for f in named)
        return f"{'Yes' if then else 'No'}: {said[:1].lower()}{said[1:]}"
    match = _ASK_WHEN.match(reading.text)
    if match is None:
        return None
    thing = match.group("thing")
    wanted = content_stems(thing)
    if not wanted:
        return None
    # "when is my 1:1?": a dated thing, or one that repeats ("my 1:1 is every Monday at 10")
    kept = own_facts(reading, "event", "plan", "routine")
    found = [f for f in kept if wanted <= content_stems(f.value)]
    if not found and _JOURNEY.fullmatch(thing.strip()):
        found = _trips(reading)  # "I'm flying to Rome in May": a trip, whatever its word
    return " ".join(answer_line(f) for f in found) if found else None


def answer_stay(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "where am I staying (in York)?" from the stays told of ("I've booked the hotel
    for two nights in York"): those said with the place or time asked about; ``None`` when
    none was told and none is asked about ("where am I staying?" may ask where one lives)."""
    match = _ASK_STAY.match(reading.text)
    if match is None:
        return None
    stays = [f for f in own_facts(reading, "plan") if f.value.startswith(_STAY)]
    when = (match.group("when") or "").strip()
    if when:
        stays = [f for f in stays if _said_for(when, f, reading)]
    if stays:
        return " ".join(answer_line(f) for f in stays)
    return f"{NOT_TOLD} about a stay {when} yet." if when else None


def answer_upcoming(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what's coming up?" with the plans and dated events told of and the reminders
    set, or say there is none."""
    if _ASK_UPCOMING.search(reading.text) is None:
        return None
    told = " ".join(answer_line(f) for f in own_facts(reading, "plan", "event"))
    scheduled = scheduled_jobs(packet, jobs)
    reminders = "\n".join(job_line(ref, reading) for ref in scheduled)
    if not told and not reminders:
        return f"{NOT_TOLD} about anything coming up, and no reminders are set."
    return "\n\n".join(part for part in (told, reminders and f"Reminders:\n{reminders}") if part)


def answer_trip(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "where am I going (in August)?" from the trips and journeys the user told of
    ("I'm going to Lisbon in August", "my flight to Tokyo is on 14 March"): those said with
    the time asked about, or all of them when none is asked; an honest "not told" else."""
    match = _ASK_TRIP.search(reading.text)
    if match is None:
        return None
    trips = _trips(reading)
    when = match.group("when")
    if when:
        trips = [f for f in trips if _said_for(when, f, reading)]
    if not trips:
        return f"{NOT_TOLD} about a trip{' ' + when.strip() if when else ''} yet."
    return " ".join(answer_line(f) for f in trips)


def answer_plans_when(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what are my plans for Friday?" with the plans and events said with that time,
    or say none was told for it."""
    match = _ASK_PLANS_WHEN.match(reading.text)
    if match is None:
        return None
    when = next(group for group in match.groups() if group is not None).strip()
    when = re.sub(r"^on\s+(?=this\b|next\b)", "", when, flags=_F)  # "anything on this week?"
    when = _WEEKDAYS_SAID.sub(r"\1", when)  # "what happens on Fridays?": on a Friday
    # "I'm off on Friday", "I'm in Paris this week": where the user is then, with the plans;
    # and whose birthday it is ("my husband's birthday is on Saturday").
    birthdays = [f for f in reading.facts if parse_key(f.key).name == "birthday"]
    kept = [*own_facts(reading, "plan", "event", "away"), *birthdays]
    found = [f for f in kept if _said_for(when, f, reading)]
    # What happens every week on a day asked about: "Ava has swimming on Wednesdays".
    asked = days_asked(when, reading.now, reading.zone)
    weekly = [f for f in reading.facts if parse_key(f.key).name in {"routine", "does"}]
    found += [f for f in weekly if _weekly_then(asked, f)]
    due = [  # the reminders set for that time too ("what do I have on Tuesday?")
        ref
        for ref in scheduled_jobs(packet, jobs)
        if ref.due_at is not None and falls_in(when, ref.due_at, reading.now, reading.zone)
    ]
    if not found and not due:
        said = when if _SAID_WITH_WORD.match(when) else f"on {when}"  # "plans on Monday"
        return f"{NOT_TOLD} about plans {said} yet."
    told = " ".join(answer_line(f) for f in found)
    reminders = "\n".join(job_line(ref, reading) for ref in due)
    return "\n\n".join(part for part in (told, reminders and f"Reminders:\n{reminders}") if part)


def _said_for(when: str, fact: Fact, reading: Reading) -> bool:
    """Whether ``fact`` is kept for the time asked about: a day said relatively ("for Friday",
    "this weekend") is the days it names, matched with the fact's kept dates (a birthday's
    next one); other times ("in August") by their words."""
    if parse_key(fact.key).name == "birthday":
        kept = kept_when(fact.value, reading.now, reading.zone)
        noon = None if kept is None else datetime.combine(kept[0], time(12), tzinfo=reading.zone)
        return noon is not None and bool(falls_in(when, noon, reading.now, reading.zone))
    same = same_time(when, fact.value, reading.now, reading.zone)
    if same is not None:
        return same
    return content_stems(when) - _TIME_WORDS <= content_stems(fact.value)


def _weekly_then(asked: Sequence[tuple[date, date]], fact: Fact) -> bool:
    """Whether ``fact``, a routine said by its days of the week ("on Wednesdays", "every
    Monday", "at weekends"), happens on one of the days ``asked`` (spans of days)."""
    days: set[int] = set()
    for said in _WEEKDAYS.finditer(fact.value):
        name = said.group().casefold()
        if said.group("day"):
            days.add(_DAY_NAMES.index(said.group("day").casefold()))
        elif "weekday" in name:
            days.update(range(5))
        else:  # at weekends, every day
            days.update(range(5, 7) if "weekend" in name else range(7))
    return any(
        (first + timedelta(days=n)).weekday() in days
        for first, last in asked
        for n in range(min((last - first).days + 1, 7))  # a week holds every day of the week
    )


def _companions(reading: Reading, place: str | None) -> str | None:
    """Whom the trips (to ``place``, if said) go with, as told; ``None`` when no trip was told
    (another rule, or a line said in passing, may answer)."""
    wanted = content_stems(place or "")
    trips = [f for f in _trips(reading) if wanted <= content_stems(f.value)]
    if not trips:
        return f"{NOT_TOLD} about a trip to {place} yet." if place else None
    told = [(f, m.group("who")) for f in trips if (m := _WITH.search(f.value))]
    if not told:
        return f"{NOT_TOLD} who's going with you. " + " ".join(answer_line(f) for f in trips)
    return " ".join(f"With {in_second_person(who)}. {answer_line(f)}" for f, who in told)


def _trips(reading: Reading) -> list[Fact]:
    """The user's plans, and the events that go to a place ("my flight to Tokyo is on ...")."""
    return [
        f
        for f in own_facts(reading, "plan", "event")
        if parse_key(f.key).name == "plan" or _DESTINATION.search(f.value)
    ]
