"""Reading a plan or an event called off: "cancel my Paris trip", "the dentist appointment is
cancelled", "we're not going to Rome anymore".

Such a message names what it calls off by some of its words. :func:`ended_plans` finds, among the
facts known before it, the one plan or event of the user's that holds them all, and returns its
end: an ``ex_plan`` or ``ex_event`` fact of its slot (:mod:`agent.memory.longterm.memory_slots`),
so that the plan is kept as history and no longer answered as one. Nothing is ended when the
words fit no plan ("cancel my gym membership") or more than one ("cancel my trip" with two
trips). A pure function of the text and the known facts.

Tested by the "plans with dates" family of ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.memory.longterm.memory_slots import USER, parse_key
from agent.memory.rules.extraction import content_stems, normalize_text
from agent.memory.schemas import Fact

__all__ = ["ended_plans", "ends_plan"]

_F = re.IGNORECASE
_WHAT = r"(?:my|our|the)\s+(?P<{}>[^,.;!?]{{2,60}}?)"
_ENDS = re.compile(
    r"^(?:(?:oh|ah|so|well|ok|okay|sadly|unfortunately|bad news|actually|turns out|update)"
    r"[\s,:!]+)*(?:(?:please\s+)?"
    rf"(?:cancel|scrap|call off)\s+{_WHAT.format('cancelled')}(?=\s*(?:[,.;!]|$|\s+(?:it's|it is"
    rf"|as|because|since)\b))|{_WHAT.format('off')}\s+(?:is|are|has been|have been|got|was|were"
    r")\s+(?:cancelled|canceled|called off|off)\b|(?:i'm|i am|we're|we are)\s+(?:not|no longer)"
    r"\s+going\s+to\s+(?P<not_going>[^,.;!?]{2,40}?)(?:\s+any\s?more)?\s*(?:[,.;!]|$))",
    _F,
)
# Words that name a plan by its kind, not which one: "my trip", "the holiday".
_KIND_WORDS = content_stems("trip trips plan plans holiday holidays vacation travel journey")
_EVENT_VERB = re.compile(r"\s+(?:is|are|leaves|departs|starts|begins)\s", _F)


def ends_plan(text: str) -> bool:
    """Whether ``text`` calls something off, as :func:`ended_plans` reads (a cheap test before
    the facts known are gathered)."""
    return _ENDS.match(normalize_text(text).strip()) is not None


def ended_plans(text: str, known: Sequence[Fact], *, turn: int) -> tuple[Fact, ...]:
    """Return the end of the one plan or event of the user's that ``text`` calls off, or nothing.

    Args:
        text: one user message ("the Rome trip is off").
        known: the facts known before it.
        turn: the seq of the turn that calls it off (recorded on the fact).
    """
    match = _ENDS.match(normalize_text(text).strip())
    if match is None:
        return ()
    what = next(said for said in match.groups() if said)
    wanted = content_stems(what) - _KIND_WORDS
    mine = [
        (fact, key)
        for fact in known
        if (key := parse_key(fact.key)).subject == USER and key.name in {"plan", "event"}
    ]
    found = [(f, k) for f, k in mine if wanted <= content_stems(f"{k.item} {f.value}")]
    if len(found) != 1:
        return ()
    fact, key = found[0]
    # An event is said by its name ("your dentist appointment is called off"), not its time.
    value = _EVENT_VERB.split(fact.value, maxsplit=1)[0] if key.name == "event" else fact.value
    return (Fact(key=f"ex_{key.name}:{key.item}", value=value, turn=turn),)
