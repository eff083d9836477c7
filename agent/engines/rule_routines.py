"""Routines: what the user does on a day, and when they do a thing ("I go swimming every
Monday", then "what do I do on Mondays?" or "how often do I go swimming?").

Covered by the "routines" family of ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.engines.rule_facts import NOT_TOLD, answer_line, own_facts
from agent.engines.rule_reading import Reading
from agent.memory.rules.extraction import content_stems
from agent.memory.schemas import ConversationContextPacket, JobRef

__all__ = ["answer_routine"]

_F = re.IGNORECASE

# "what do I do on Sundays?", "what do I usually do every morning?"
_ASK_ROUTINE = re.compile(
    r"^what do i (?:usually |normally |typically |always )?do (?P<when>(?:on|every|at the|in the)"
    r" [^\W\d_][\w ]{0,30}?)\??$",
    _F,
)

# "when do I go swimming?", "how often do I play tennis?", "what days do I go to the gym?".
_ASK_WHEN_ROUTINE = re.compile(
    r"^(?:when|how often|on what days?|what days?|which days?) do i (?:usually |normally "
    r"|typically |always )?(?P<what>[^\W\d_][\w' ]{0,60}?)\??$",
    _F,
)


def answer_routine(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what do I do on Sundays?" with the routines said then (or that none were)."""
    match = _ASK_ROUTINE.match(reading.text)
    if match is None:
        return _routine_of(reading)
    when = match.group("when")
    wanted = content_stems(when) - content_stems("on every at the")
    found = [f for f in own_facts(reading, "routine") if wanted <= content_stems(f.value)]
    if not found:
        return f"{NOT_TOLD} what you do {when} yet."
    return " ".join(answer_line(f) for f in found)


def _routine_of(reading: Reading) -> str | None:
    """Answer "when do I go swimming?", "how often do I go to the gym?" with the routines
    that do it; ``None`` when none does (the question may be of a plan)."""
    match = _ASK_WHEN_ROUTINE.match(reading.text)
    if match is None:
        return None
    wanted = content_stems(match.group("what"))
    found = [f for f in own_facts(reading, "routine") if wanted <= content_stems(f.value)]
    return " ".join(answer_line(f) for f in found) if wanted and found else None
