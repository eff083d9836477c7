"""Routines: what the user does on a day, and when they do a thing ("I go swimming every
Monday", then "what do I do on Mondays?" or "how often do I go swimming?"), and what someone
in their life does when ("Mira has swimming on Tuesdays", then "when does Mira have swimming?"),
how long something has held ("we've been together for 5 years", then "how long have we
been together?"), and the medication taken ("I take 50mg of sertraline every morning", then
"what medication do I take?").

Covered by the "routines" and "medication taken" families of
``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.engines.rule_facts import NOT_TOLD, answer_line, own_facts
from agent.engines.rule_reading import Reading
from agent.memory.longterm.memory_slots import USER, in_second_person, parse_key, role_and_name
from agent.memory.rules.extraction import content_stems
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef

__all__ = ["answer_how_long", "answer_medication", "answer_routine"]

_F = re.IGNORECASE

# "what do I do on Sundays?", "what do I usually do every morning?"
_ASK_ROUTINE = re.compile(
    r"^what do i (?:usually |normally |typically |always )?do (?P<when>(?:on|every|at the|in the)"
    r" [^\W\d_][\w ]{0,30}?)\??$",
    _F,
)

# "what does Kwame do on Saturdays?", "what has my son got on Tuesdays?"
_ASK_THEIR_DAY = re.compile(
    r"^what (?:does|has) (?:my )?(?P<who>[\w' ]{1,30}?) (?:usually |normally |got |have )?"
    r"(?:do|have|got)?\s*(?P<when>(?:on|every) [^\W\d_][\w ]{0,30}?)\??$",
    _F,
)
# "when do I go swimming?", "how often do I play tennis?", "what days do I go to the gym?".
_ASK_WHEN_ROUTINE = re.compile(
    r"^(?:when|how often|on what days?|what days?|which days?|what time|at what time) do i"
    r" (?:usually |normally "
    r"|typically |always )?(?P<what>[^\W\d_][\w' ]{0,60}?)\??$",
    _F,
)
# "when does Mira have swimming?", "how often does my son go to judo?".
_ASK_THEIR_ROUTINE = re.compile(
    r"^(?:when|how often|on what days?|what days?|which days?|what time|at what time) do(?:es)?"
    r" (?:my |the |our )?(?P<who>[\w' ]{1,30}?)"
    r" (?P<what>(?:have|go|do|play|take|swim|train|attend|phone|call|ring|visit|come|deliver)\b"
    r"[\w' ]{0,60}?)\??$",
    _F,
)
# "what day is Ellie's swimming?", "when's my son's football?": the same, said of the thing.
_ASK_THEIR_THING = re.compile(
    r"^(?:when|what\s+time|what\s+days?|which\s+days?)(?:'s|\s+is|\s+are)\s+(?:my\s+)?"
    r"(?P<who>[\w' ]{1,30}?)'s?\s+(?P<what>[^\W\d_][\w' ]{0,40}?)\??$",
    _F,
)
# "what days is Alfie at nursery?", "when is my son in school?": where they are, when.
_ASK_THEIR_PLACE = re.compile(
    r"^(?:when|what\s+days?|which\s+days?|on\s+what\s+days?)(?:'s|\s+is|\s+are)\s+(?:my\s+)?"
    r"(?P<who>[\w' ]{1,30}?)\s+(?:at|in)\s+(?:the\s+|his\s+|her\s+|their\s+)?"
    r"(?P<what>[^\W\d_][\w' ]{0,40}?)\??$",
    _F,
)
# "do I work from home on Friday?", "do I have swimming on Tuesdays?": yes, by a routine.
_ASK_DO_I = re.compile(
    r"^do i (?:usually |normally |always )?(?P<what>[^\W\d_][\w' ]{0,40}?)\s+(?:on|every)\s+"
    r"(?P<day>(?:mon|tues|wednes|thurs|fri|satur|sun)day)s?\??$",
    _F,
)
# "how long have we been together?", "how long have I lived in Leeds?", "how long have my wife
# and I been married?"
_ASK_HOW_LONG = re.compile(
    r"^how long (?:have|has) (?:i|we|(?:my )?[\w ]{2,30}? and i)\s+(?P<what>(?:been|lived|worked"
    r"|known|had|played|studied|taught|run|owned)\b[\w' ]{0,60}?)\??$",
    _F,
)
# "what medication do I take?", "what meds am I on?", "which pills do I take?"
_ASK_MEDICATION = re.compile(
    r"^(?:what|which)\s+(?:medications?|medicines?|meds|pills|tablets|drugs|prescriptions?)\s+"
    r"(?:do\s+i\s+(?:take|have|use)|am\s+i\s+(?:on|taking))\b|^what\s+am\s+i\s+taking\b",
    _F,
)
# What a thing taken is, by its words: "50mg of sertraline", "my inhaler", "blood pressure pills".
_MEDICINE = re.compile(
    r"\d\s*(?:mg|mcg|ml)\b|\b(?:medications?|medicines?|meds|pills?|tablets?|capsules?|inhalers?"
    r"|insulin|doses?|prescriptions?|drops|antibiotics|antidepressants?|vitamins?|supplements?)\b",
    _F,
)
# The verbs a routine is said with, which a question says in another form ("have", "has").
_VERBS = content_stems("have has go goes do does play plays take takes attend attends")
# A question of someone's calls or visits asks of them all: "when does David call?" is
# answered by "David phones me every Sunday".
_CALLS = content_stems("phone phones call calls ring rings")


def answer_routine(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what do I do on Sundays?" with the routines said then (or that none were)."""
    match = _ASK_ROUTINE.match(reading.text)
    if match is None:
        return _routine_that_day(reading) or _routine_of(reading) or _their_day(reading)
    when = match.group("when")
    wanted = content_stems(when) - content_stems("on every at the")
    found = [f for f in own_facts(reading, "routine") if wanted <= content_stems(f.value)]
    if not found:
        return f"{NOT_TOLD} what you do {when} yet."
    return " ".join(answer_line(f) for f in found)


def _their_day(reading: Reading) -> str | None:
    """Answer "what does Kwame do on Saturdays?" with what the user said he does then, or
    that nothing was (of someone the user told of)."""
    match = _ASK_THEIR_DAY.match(reading.text)
    if match is None:
        return None
    who, when = match.group("who").casefold(), match.group("when")
    wanted = content_stems(when) - content_stems("on every")
    theirs = [
        fact
        for fact in reading.facts
        if (parts := parse_key(fact.key)).subject != USER
        and who in {word.casefold() for word in role_and_name(parts.subject) if word}
    ]
    if not theirs:
        return None
    found = [
        f for f in theirs
        if parse_key(f.key).name in {"does", "routine"} and wanted <= content_stems(f.value)
    ]  # fmt: skip
    if not found:
        return f"{NOT_TOLD} what {match.group('who')} does {when} yet."
    return " ".join(answer_line(f) for f in found)


def _routine_that_day(reading: Reading) -> str | None:
    """Answer "do I work from home on Friday?" yes by the routines said of that day that do it
    ("I work from home on Fridays"); ``None`` when none does (nothing is known to say no)."""
    match = _ASK_DO_I.match(reading.text)
    if match is None:
        return None
    wanted = content_stems(f"{match.group('what')} {match.group('day')}")
    found = [f for f in own_facts(reading, "routine") if wanted <= content_stems(f.value)]
    said = " ".join(answer_line(f) for f in found)
    return f"Yes: {said[0].lower()}{said[1:]}" if found else None


def _routine_of(reading: Reading) -> str | None:
    """Answer "when do I go swimming?", "how often do I go to the gym?" with the routines
    that do it; ``None`` when none does (the question may be of a plan)."""
    match = _ASK_WHEN_ROUTINE.match(reading.text)
    if match is None:
        return _their_routine(reading)
    wanted = content_stems(match.group("what"))
    found = [f for f in own_facts(reading, "routine") if wanted <= content_stems(f.value)]
    return " ".join(answer_line(f) for f in found) if wanted and found else None


def _their_routine(reading: Reading) -> str | None:
    """Answer "when does Mira have swimming?" (or "what day is Mira's swimming?") with what
    the user said Mira does then; ``None`` when nothing said of Mira does it."""
    match = (
        _ASK_THEIR_ROUTINE.match(reading.text)
        or _ASK_THEIR_THING.match(reading.text)
        or _ASK_THEIR_PLACE.match(reading.text)
    )
    if match is None:
        return None
    who = match.group("who").casefold()
    wanted = content_stems(match.group("what")) - _VERBS
    calls = bool(wanted & _CALLS)  # said by any of the words for a call
    wanted -= _CALLS

    def does_it(fact: Fact) -> bool:
        said = content_stems(fact.value)
        return wanted <= said and (bool(said & _CALLS) if calls else bool(wanted))

    found = [
        fact
        for fact in reading.facts
        if (parts := parse_key(fact.key)).subject != USER
        and parts.name in {"does", "routine"}
        and who in {word.casefold() for word in role_and_name(parts.subject) if word}
        and does_it(fact)
    ]
    return " ".join(answer_line(f) for f in found) if found else None


def answer_medication(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what medication do I take?" with what the user told they take (a routine, a
    habit, a detail: "I take 50mg of sertraline every morning"), or say none was told."""
    if _ASK_MEDICATION.search(reading.text) is None:
        return None
    kept = own_facts(reading, "routine", "does", "detail", "note", "condition")
    taken = [f for f in kept if _MEDICINE.search(f"{parse_key(f.key).item} {f.value}")]
    return " ".join(answer_line(f) for f in taken) or f"{NOT_TOLD} of any medication yet."


def answer_how_long(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "how long have we been together?" with what the user said of how long it has
    held, or say it was not told."""
    match = _ASK_HOW_LONG.match(reading.text)
    if match is None:
        return None
    what = match.group("what")
    wanted = content_stems(what)
    found = [f for f in own_facts(reading, "lasting") if wanted <= content_stems(f.value)]
    if not found:
        return f"{NOT_TOLD} how long you've {in_second_person(what)} yet."
    return " ".join(answer_line(f) for f in found)
