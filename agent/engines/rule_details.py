"""Answering a question about a detail of the user's world: "what's my blood type?", "what car
do I drive?", "who's my dentist?".

A detail is a fact of its own (``detail:<thing>``, read by
:mod:`agent.memory.rules.fact_extraction`: "my blood type is O negative", "the garage code is
4471"). A question names the thing in its own words ("the cabin wifi password" for "wifi
password at the cabin"); when no detail it names is known the question is left to the other
rules and to the quote from memory (:mod:`agent.engines.rule_recall`), which says honestly that
nothing was told. Covered by ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.engines.rule_facts import answer_line
from agent.engines.rule_reading import Reading
from agent.memory.longterm.memory_slots import USER, parse_key
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef

__all__ = ["answer_detail"]

_F = re.IGNORECASE
_THING = r"(?P<thing>[^\W\d_][\w-]*(?:\s+[^\W\d_][\w-]*){0,4})"
_ASK_DETAIL = (
    # "what's my blood type?", "which is the garage code?", "who's my dentist?"
    re.compile(
        rf"^(?:and\s+|so\s+)?(?:what|which|who)(?:'s|\s+is|\s+was|\s+are)\s+(?:my|our|the)\s+"
        rf"{_THING}\s*[?.!]*$",
        _F,
    ),
    # "what car do I drive?", "which team do we support?"
    re.compile(
        rf"\b(?:what|which)\s+{_THING}\s+(?:do|did)\s+(?:i|we)\s+(?:drive|have|own|use|ride"
        r"|support|follow|have got)\b",
        _F,
    ),
)
# Words of a question that name no part of the thing asked about.
_NOT_THING = frozenset({"the", "my", "our", "new", "current", "latest", "at", "of", "for", "in"})
# Words a question may add to what a detail was called: "email address" for "email".
_GENERIC = frozenset({"address", "number", "name"})


def answer_detail(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer a question about a detail the user told, or ``None`` when none is known."""
    for pattern in _ASK_DETAIL:
        match = pattern.search(reading.text)
        if match is None:
            continue
        asked = _words(match.group("thing"))
        found = [f for f in reading.facts if _names(f, asked)]
        if found:
            return " ".join(answer_line(f) for f in found)
    return None


def _words(thing: str) -> frozenset[str]:
    return frozenset(w for w in thing.casefold().split() if w not in _NOT_THING)


def _names(fact: Fact, asked: frozenset[str]) -> bool:
    """Whether a question's words name ``fact``'s detail: its head ("password") is among them
    and every other is one of its words ("cabin wifi password", "wifi password at the cabin"),
    or a word any detail may be asked with ("email address")."""
    parts = parse_key(fact.key)
    if parts.subject != USER or parts.name != "detail" or not asked:
        return False
    head = re.split(r"\s+(?:at|of|for|in|on)\s+", parts.item)[0].split()[-1]
    return head in asked and asked - _GENERIC <= _words(parts.item)
