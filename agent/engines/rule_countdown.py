"""How long until a day: "how many days until my flight?", "how long until Sara's birthday?",
"how many days till Christmas?", "how many days until the 14th?".

The day is one the user told of (an event, a plan or a birthday, found by its words as a
reminder set before it is: :func:`agent.engines.rule_reminder_before.dated_fact`), a holiday
everyone keeps on the same day, or a day said as such ("Friday", "the 14th", "25 December"),
counted on the user's clock. Tested by the "how long until" family of
``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from agent.engines.rule_facts import NOT_TOLD
from agent.engines.rule_reading import Reading, sentence
from agent.engines.rule_reminder_before import dated_fact
from agent.memory.longterm.memory_slots import describe_fact, in_second_person, parse_key
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.fact_dates import day_said, kept_when
from agent.memory.rules.reminder_time import HOLIDAYS, local_moment, next_day_of_month
from agent.memory.schemas import ConversationContextPacket, JobRef

__all__ = ["answer_days_until"]

_F = re.IGNORECASE
_ASK = re.compile(
    r"^how (?:many (?:more )?(?:days|sleeps)|long)(?: is it| do i have| have i got)?"
    r" (?:until|till|til|to|before) (?P<thing>[^\W_][\w' -]{0,60}?)\??$",
    _F,
)


def answer_days_until(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "how many days until my flight?" in days from today on the user's clock."""
    match = _ASK.match(reading.text.strip())
    if match is None:
        return None
    thing = match.group("thing").strip()
    today = reading.now.astimezone(reading.zone).date()
    fact = dated_fact(thing, reading.facts)
    wanted = content_stems(thing)
    ended = [
        f
        for f in reading.facts
        if parse_key(f.key).name in {"ex_event", "ex_plan"}
        and wanted <= content_stems(describe_fact(f))
    ]
    if fact is None and ended and wanted:  # "cancel my flight", then "how long until my flight?"
        return sentence(describe_fact(ended[-1]))
    if fact is not None:
        when = kept_when(fact.value, reading.now, reading.zone)
        if when is None:
            return f"I don't know the day of that: {describe_fact(fact)}."
        return _count(when[0], today, in_second_person(thing))
    named = thing.casefold().removeprefix("the ")
    holiday = HOLIDAYS.get(named)
    if holiday is not None:
        day = next_day_of_month(holiday[0], holiday[1], today)
        return None if day is None else _count(day, today, thing[:1].upper() + thing[1:])
    moment = local_moment(thing, reading.now, reading.zone)
    if moment is None:
        return f"{NOT_TOLD} when {in_second_person(thing)} is."
    return _count(moment.date(), today, day_said(moment.date(), today))


def _count(day: date, today: date, what: str) -> str:
    ahead = (day - today).days
    what = what[:1].upper() + what[1:] if ahead <= 1 else what  # it opens the sentence
    on = day_said(day, today)
    if ahead < 0:
        return f"{what} was {-ahead} day{'s' if ahead != -1 else ''} ago ({on})."
    if ahead == 0:
        return f"{what} is today."
    if ahead == 1:
        return f"{what} is tomorrow ({on})."
    return f"{ahead} days until {what}" + ("." if what == on else f" ({on}).")
