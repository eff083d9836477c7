"""Answering a question about a detail of the user's world by what it is used for: "what car do
I drive?", "which team do we support?", "where's my car parked?".

A detail is a fact of its own (``detail:<thing>``, read by
:mod:`agent.memory.rules.fact_extraction`: "my car is a blue Honda Civic", "the garage code is
4471"). "What's my blood type?" names the detail's words, and the quote from memory answers it
with when it was said (:mod:`agent.engines.rule_recall`: "Earlier today you told me: my blood
type is O negative"); "what car do I drive?" shares only "car" with it, so it is answered here.
When no detail it names is known the question is left to the other rules and to the quote,
which says honestly that nothing was told. Covered by ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.engines.rule_facts import NOT_TOLD, answer_line
from agent.engines.rule_reading import Reading
from agent.memory.longterm.memory_slots import USER, in_second_person, parse_key
from agent.memory.rules.extraction import content_stems
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef

__all__ = ["answer_detail"]

_F = re.IGNORECASE
_THING = r"(?P<thing>[^\W\d_][\w-]*(?:\s+[^\W\d_][\w-]*){0,4})"
# "what car do I drive?", "which team do we support?"
_ASK_DETAIL = re.compile(
    rf"\b(?:what|which)\s+{_THING}\s+(?:do|did)\s+(?:i|we)\s+(?:drive|have|own|use|ride"
    r"|support|follow|have got|wear|take|drink|order)\b",
    _F,
)
# "where did I park?", "where's my car parked?": the parking spot told.
_ASK_PARKED = re.compile(
    r"\bwhere (?:did|have) i parked?\b|\bwhere(?:'s| is) (?:my|the) (?:car|bike|van) parked\b"
    r"|\bwhere did i leave (?:my|the) (?:car|bike|van)\b",
    _F,
)
# "how much do I weigh?", "what's my weight?" is asked by its words; "how tall am I?".
_ASK_MEASURE = re.compile(r"\bhow much do i (?P<w>weigh)\b|\bhow tall am i\b", _F)
# The key of where the user parked ("I parked on level 3").
_PARKED = "detail:parking spot"
# Words of a question that name no part of the thing asked about.
_NOT_THING = frozenset({"the", "my", "our", "new", "current", "latest", "at", "of", "for", "in"})
# Words a question may add to what a detail was called: "email address" for "email".
_GENERIC = content_stems("address number name")


def answer_detail(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what car do I drive?" from a detail the user told, or ``None`` when none is
    known."""
    if _ASK_PARKED.search(reading.text):  # "where did I park?"
        spot = [f for f in reading.facts if f.key == _PARKED]
        said = in_second_person(spot[-1].value) if spot else None
        return f"You parked {said}." if said else f"{NOT_TOLD} where you parked."
    measure = _ASK_MEASURE.search(reading.text)
    if measure is not None:  # "how much do I weigh?", "how tall am I?"
        key = f"detail:{'weight' if measure.group('w') else 'height'}"
        told = [f for f in reading.facts if f.key == key]
        return answer_line(told[-1]) if told else None
    match = _ASK_DETAIL.search(reading.text)
    if match is None:
        return None
    asked = _words(match.group("thing"))
    found = [f for f in reading.facts if _names(f, asked)]
    return " ".join(answer_line(f) for f in found) if found else None


def _words(thing: str) -> frozenset[str]:
    """The stems of ``thing``'s words that name it ("size shoes": size, shoe)."""
    return content_stems(" ".join(w for w in thing.casefold().split() if w not in _NOT_THING))


def _names(fact: Fact, asked: frozenset[str]) -> bool:
    """Whether a question's words name ``fact``'s detail: its head ("password") is among them
    and every other is one of its words ("cabin wifi password", "wifi password at the cabin"),
    or a word any detail may be asked with ("email address")."""
    parts = parse_key(fact.key)
    if parts.subject != USER or parts.name != "detail" or not asked:
        return False
    head = _words(re.split(r"\s+(?:at|of|for|in|on)\s+", parts.item)[0].split()[-1])
    return head <= asked and asked - _GENERIC <= _words(parts.item)
