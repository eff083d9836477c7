"""One way of saying a fact, as data: :class:`FactRule` and its constructor :func:`rule`, shared
by the rule tables (:mod:`agent.memory.rules.fact_rules`, :mod:`agent.memory.rules.event_rules`).

Tested through those tables, by ``tests/test_extraction.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FactRule", "rule"]

_F = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class FactRule:
    """One way of saying a fact: its key, its pattern (group ``v``: the value), how the value
    is read, and when the rule is tried."""

    key: str
    pattern: re.Pattern[str]
    kind: str  # how the value is read (fact_value): name, place, short, phrase, raw, zone...
    in_questions: bool
    alongside: bool  # the clause may state another fact too: the next rules still read it
    # A word every match holds, looked for once per clause for the rules that share it: a
    # clause without it is not searched by them (a turn's cost: most clauses state nothing).
    cue: re.Pattern[str] | None
    # How an event is said when its words are not the text's ("{item} is due {when}").
    said: str | None
    # What the event is when the text does not name it ("getting married": the wedding).
    item: str | None


def rule(
    key: str,
    pattern: str,
    kind: str,
    *,
    in_questions: bool = False,
    alongside: bool = False,
    cue: re.Pattern[str] | None = None,
    said: str | None = None,
    item: str | None = None,
) -> FactRule:
    """A :class:`FactRule` of ``pattern`` (compiled ignoring case); the rest as its fields."""
    return FactRule(key, re.compile(pattern, _F), kind, in_questions, alongside, cue, said, item)
