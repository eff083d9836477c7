"""Whether what follows "I need to", "I have to", "I must" names a duty: something to do and
tick off. A guess ("must be nice", "must have been hard"), a way of speaking ("I have to say",
"I must tell you that ...") and a resolution ("I need to stay positive", "I'll keep pushing")
are none: they go on nobody's list. Read by :func:`agent.memory.rules.todo_openers.extract_openers`
(to-dos) and :func:`agent.memory.rules.dialogue_acts.read_acts` (promises).

Tested by ``tests/test_extraction.py`` and ``tests/test_dialogue_acts.py``.
"""

from __future__ import annotations

import re

__all__ = ["RESOLUTION", "is_duty"]

_F = re.IGNORECASE

# What follows "must" in a guess ("must be nice", "must have been hard"), not a duty.
_GUESSED = re.compile(r"(?:be|been|have\s+(?:been|\w+(?:ed|en|t))|'ve|feel|seem|look|sound)\b", _F)
# "I have to say", "I need to tell you": a way of speaking, not something to do.
_SPEAKING = re.compile(
    r"(?:say|admit|agree|confess|mention|be honest|(?:tell|ask|warn|remind) (?:you|that)"
    r"|hand it to)\b",
    _F,
)
# Ways to stay ("stay positive", "keep calm").
_STEADY = (
    r"positive|strong|focused|motivated|resilient|calm|true|humble|optimistic|hopeful|grounded"
    r"|sane|patient|brave|busy|inspired|determined|dedicated|confident|curious|safe|healthy"
)
#: A resolution: a way to be from now on ("keep pushing", "stay positive", "do my best",
#: "always remember"), never done and ticked off: neither a to-do nor a promise to track.
RESOLUTION = re.compile(
    r"(?:always|never|forever)\b"
    r"|(?:keep|stay)\s+(?:(?!(?:every|any|some|no)thing\b)\w+ing\b|on\b|at\s+it\b|it\s+up\b"
    r"|up\b|(?:it|that|this|them)\s+in\s+mind\b|(?:my|your|our)\s+(?:head|chin|spirits?)\s+up\b"
    rf"|(?:{_STEADY})\b)"
    r"|(?:do|try|give\s+it)\s+(?:my|our)\s+(?:very\s+)?(?:best|all|utmost)\b",
    _F,
)


def is_duty(value: str, *, after_must: bool = False) -> bool:
    """Whether ``value`` (the words after "I need to", normalised) is something to do: not a
    way of speaking nor a resolution, nor, ``after_must``, a guess ("must be nice")."""
    if after_must and _GUESSED.match(value):
        return False
    return not (_SPEAKING.match(value) or RESOLUTION.match(value))
