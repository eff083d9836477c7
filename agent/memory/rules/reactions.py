"""Reading a reaction in a group message: support ("+1", "sounds good", "the picnic works for
me"), opposition ("-1", "I disagree", "that doesn't work") or neither ("not sure"), and what a
reaction said after what it reacts to names ("Italian works for me": Italian). Read by
:mod:`agent.memory.rules.deliberation`, which records the stance on the proposal it is about.

Pure functions of the text. Tested by ``tests/test_deliberation.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.memory.group_schemas import Stance
from agent.memory.rules.extraction import Clause

__all__ = ["FILLERS", "read_reaction", "said_after"]

_F = re.IGNORECASE

#: Words a move may open with before what it says ("ok so, +1", "honestly, sounds good").
FILLERS = (
    r"(?:(?:ok(?:ay)?|well|so|hmm+|honestly|tbh|yeah|yes|yep|great|cool|good|alright|right"
    r"|fine|perfect|sure)[,!.\s]+)*"
)
_OPPOSE = re.compile(
    rf"^{FILLERS}(?:-1(?!\d)|\U0001f44e|i\s+(?:disagree|object|don'?t\s+agree|do\s+not\s+agree"
    r"|(?:am|'m)\s+against|don'?t\s+like\s+(?:it|that|this|the\s+idea)|(?:am|'m)\s+not\s+"
    r"(?:convinced|a\s+fan|sure\s+about\s+(?:it|that|this)))|disagree\b|no\s+way\b|nope\b"
    r"|(?:that|this|it)\s+won'?t\s+work|won'?t\s+work|bad\s+idea|not\s+a\s+good\s+idea"
    r"|against\b|veto\b)",
    _F,
)
_SUPPORT = re.compile(
    rf"^{FILLERS}(?:\+1(?!\d)|\U0001f44d|i\s+(?:agree|support|second|like\s+(?:it|that|this"
    r"|the\s+idea)|(?:am|'m)\s+in\b)|agreed?\b|seconded\b|sounds\s+(?:good|great|fine|perfect"
    r"|like\s+a\s+plan)|(?:great|good|nice)\s+idea|let'?s\s+do\s+(?:it|that|this)\b"
    r"|(?:that\s+|it\s+)?works\s+for\s+me|count\s+me\s+in|love\s+(?:it|that)|same\s+here"
    r"|makes\s+sense|fine\s+by\s+me|deal\b)",
    _F,
)
_NEUTRAL = re.compile(
    rf"^{FILLERS}(?:not\s+sure\b|no\s+opinion|i\s+don'?t\s+mind|either\s+way|on\s+the\s+fence"
    r"|no\s+strong\s+(?:opinion|feelings))",
    _F,
)
# One-word answers count as reactions only in a short message ("yes!", not "yes, but ...").
_SHORT_SUPPORT = re.compile(r"^(?:yes|yep|yeah|yup|sure|absolutely|definitely|exactly)\b", _F)
_SHORT_OPPOSE = re.compile(r"^(?:no|nah)\b", _F)
_SHORT_WORDS = 5
# A reaction after what it reacts to, in a short message ("the picnic sounds good to me").
_NAMED_OPPOSE = re.compile(
    r"\b(?:doesn'?t|does\s+not|don'?t|do\s+not)\s+(?:really\s+)?(?:sound|look|work)\b"
    r"|\bi(?:'m|\s+am)\s+(?:not\s+for|against)\b"
    r"|\bi\s+vote\s+against\b"
    # "Porto is too far for me", "that's a bit too pricey": too much of something for them
    r"|\b(?:is|'s|are|sounds?|seems?|looks?)\s+(?:a\s+bit\s+|way\s+|far\s+|much\s+|just\s+)?too"
    r"\s+(?:far|expensive|pricey|late|early|long|much|small|big|busy|cold|hot|loud|fancy)\b"
    r"|\bnot\s+for\s+me\b",
    _F,
)
_NAMED_SUPPORT = re.compile(
    r"\b(?:sounds?|looks?)\s+(?:good|great|fine|perfect|right)\b|\bworks?\s+for\s+me\b"
    r"|\bfine\s+by\s+me\b|\bi(?:'m|\s+am)\s+(?:all\s+)?for\b|\bi\s+vote\s+for\b"
    r"|\bi(?:'m|\s+am)\s+in\s+favou?r\s+of\b|\bgets?\s+my\s+vote\b"
    r"|\bmy\s+vote\s+(?:goes\s+to|is\s+for)\b",
    _F,
)
_NAMED_WORDS = 10


def read_reaction(text: str, clauses: Sequence[Clause]) -> Stance | None:
    """The stance ``text`` (cut into ``clauses``) takes, or ``None`` for no reaction."""
    first = clauses[0].text if clauses else ""
    for candidate in (text, first):
        if _OPPOSE.match(candidate):
            return "oppose"
        if _SUPPORT.match(candidate):
            return "support"
        if _NEUTRAL.match(candidate):
            return "neutral"
    if len(text.split()) <= _SHORT_WORDS:
        if _SHORT_SUPPORT.match(text):
            return "support"
        if _SHORT_OPPOSE.match(text):
            return "oppose"
    # The message, or its part before a counter-proposal ("Porto is too far for me, how
    # about Bristol?").
    for said in dict.fromkeys((text, _FIRST_PART.split(text, maxsplit=1)[0])):
        if len(said.split()) <= _NAMED_WORDS and not said.rstrip().endswith("?"):
            if _NAMED_OPPOSE.search(said):
                return "oppose"
            if _NAMED_SUPPORT.search(said):
                return "support"
    return None


_FIRST_PART = re.compile(r"\s*[,;]\s*|\s+(?=(?:how|what)\s+about\b|but\b)", _F)


def said_after(text: str) -> str:
    """What a reaction said after what it reacts to names ("Italian works for me": "Italian"),
    fillers left out; "" for a reaction said first ("sounds good") or none."""
    said = _NAMED_SUPPORT.search(text) or _NAMED_OPPOSE.search(text)
    return "" if said is None else re.sub(rf"^{FILLERS}", "", text[: said.start()], flags=_F)
