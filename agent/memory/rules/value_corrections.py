"""Reading a correction that names only the values: "actually it's Bath, not Bristol".

Such a message states no fact by itself (:func:`~agent.memory.rules.fact_extraction.extract_facts`
reads none): it says which value was wrong and which is right. :func:`correct_by_value` finds,
among the facts known before the message, the one whose value holds the wrong value, and returns
it with the right one in its place, as a ``corrected`` fact of the same key, so that it replaces
the old one wherever facts are kept (a session's state, long-term memory, the concierge's
acknowledgement). A pure function of the text and the known facts.

A fact whose key is its value (a like, a plan, a relative: many-value attributes of
:mod:`agent.memory.longterm.memory_slots`) is not corrected this way: the new value would be a
new fact beside the old one, not in its place.

:func:`correct_last` reads the other kind, which names the right value alone ("no, it's on
Wednesday") of the fact the user's message before stated. A weekday corrects a date kept from
one ("oops, Tuesday, not Monday" of "on Mon 3 Mar").

Tested by ``tests/test_value_corrections.py`` and the "corrections" family of
``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.memory.longterm.memory_slots import parse_key
from agent.memory.rules.fact_dates import kept_day
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.schemas import Fact

__all__ = ["correct_by_value", "correct_last", "names_values"]

_F = re.IGNORECASE
# What may open a correction: "no,", "sorry -", "oops, actually".
_LEAD = r"^(?:(?:no|nope|sorry|oops|actually|correction|wait|my bad|my mistake)\b[\s,:!.-]*)*"
_VALUE = r"[^,.!?;:]{1,40}?"
_END = r"\s*[.!]*$"
# (new) "not" (old), "not" (old) (new), "I said" (old) "but I meant" (new).
_INSTEAD = tuple(
    re.compile(pattern, _F)
    for pattern in (
        rf"{_LEAD}(?:(?:it's|it is|that's|that is|i meant|i mean|make that|it should be)\s+)?"
        rf"(?P<new>{_VALUE}),?\s+not\s+(?P<old>{_VALUE}){_END}",
        rf"{_LEAD}not\s+(?P<old>{_VALUE})\s*[,;-]\s*(?:but\s+)?(?:it's\s+|it is\s+)?"
        rf"(?P<new>{_VALUE}){_END}",
        rf"{_LEAD}i (?:said|wrote|typed)\s+(?P<old>{_VALUE}),?\s+but\s+(?:i\s+)?meant\s+"
        rf"(?P<new>{_VALUE}){_END}",
    )
)
# "no, it's on Wednesday": the right value alone, of what the message before said.
_IT_IS = re.compile(
    rf"^(?:no|nope|sorry|oops|actually|correction|wait|my bad|my mistake)\b[\s,:!.-]*{_LEAD[1:]}"
    rf"(?:it's|it is|it was|that's|that is|make that|it should be)\s+(?:actually\s+)?"
    rf"(?P<new>{_VALUE}){_END}",
    _F,
)
# A place said with its preposition ("no, it's in Bath"): the place.
_PLACE_WORD = re.compile(r"^(?:in|at|to|for)\s+", _F)
# A clause of its own is no value ("I like cats, not dogs" states a like), nor a filler.
_CLAUSE = re.compile(
    r"\b(?:i|i'm|i've|my|me|you|we|is|are|was|am|do|don't|like|love|it|its|that|this|no|nope"
    r"|sorry|oops|actually|wait)\b",
    _F,
)
_MOST_WORDS = 5


def _instead(text: str) -> list[tuple[str, str]]:
    """The (right, wrong) values ``text`` may name, in the order of its patterns."""
    said = []
    for pattern in _INSTEAD:
        match = pattern.match(text.strip())
        if match is None:
            continue
        new, old = (" ".join(match.group(g).split()) for g in ("new", "old"))
        if any(_CLAUSE.search(v) or len(v.split()) > _MOST_WORDS for v in (new, old)):
            continue
        if new.casefold() != old.casefold():
            said.append((new, old))
    return said


def names_values(text: str) -> bool:
    """Whether ``text`` names a wrong and a right value, as :func:`correct_by_value` reads (a
    cheap test before the facts known are gathered)."""
    return bool(_instead(text))


def _is_its_value(fact: Fact) -> bool:
    # A many-value fact's key ends with its value: a new value is a new key.
    return parse_key(fact.key).item == " ".join(fact.value.casefold().split())


def correct_by_value(text: str, known: Sequence[Fact], *, turn: int) -> tuple[Fact, ...]:
    """Return the fact ``text`` corrects by naming its wrong and right values, or nothing.

    Args:
        text: one user message ("actually it's Bath, not Bristol").
        known: the facts known before it, oldest first: the newest holding the wrong value
            is the one corrected.
        turn: the seq of the turn that corrects (recorded on the fact).
    """
    for new, old in _instead(text):
        wrong = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)", _F)
        # "Tuesday, not Monday" of a date kept from "on Monday" ("on Mon 3 Mar"): the new day
        # takes the kept date's place, to be dated anew.
        kept = kept_day(old)
        for fact in reversed(known):
            found = wrong.search(fact.value) or (kept.search(fact.value) if kept else None)
            if _is_its_value(fact) or found is None:
                continue
            value = fact.value[: found.start()] + new + fact.value[found.end() :]
            return (Fact(key=fact.key, value=value, turn=turn, mode="corrected"),)
    return ()


def correct_last(text: str, previous: str | None, *, turn: int) -> tuple[Fact, ...]:
    """Return the fact ``previous`` (the user's message before) stated, with the value
    ``text`` puts right ("my dentist appointment is on Tuesday", then "no, it's on
    Wednesday"; "I live in Bristol", then "sorry, it's Bath"), or nothing: ``text`` must open
    as a correction, and ``previous`` state exactly one fact that has one value.
    """
    match = _IT_IS.match(text.strip())
    if match is None or not previous:
        return ()
    new = " ".join(match.group("new").split())
    stated = [f for f in extract_facts(previous, turn=turn) if not _is_its_value(f)]
    if len(stated) != 1 or _CLAUSE.search(new) or len(new.split()) > _MOST_WORDS:
        return ()
    fact = stated[0]
    value = _PLACE_WORD.sub("", new)
    verb = re.search(r"\s(?:is|are|leaves)\s", fact.value)
    if parse_key(fact.key).name == "event" and verb:  # "dentist appointment is on Tuesday"
        value = fact.value[: verb.end()] + new
    return (Fact(key=fact.key, value=value, turn=turn, mode="corrected"),)
