"""Reading the facts a user states about themselves: "my name is Ada", "I live in Lisbon".

A pure function of the text (no clock, no I/O), shared by the state manager, which records the
facts on the session state (I6: the same turns give the same facts), and by the offline
concierge, which acknowledges them. Text handling (normalisation, clauses, value cleaning) is
:mod:`agent.memory.extraction`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agent.memory.extraction import Clause, clean_value, split_clauses
from agent.memory.schemas import Fact

__all__ = ["extract_facts"]

_F = re.IGNORECASE

_WORD = r"[^\W\d_]+(?:['-][^\W\d_]+)*"
_NAME = re.compile(rf"({_WORD})(?:\s+({_WORD}))?(?:\s+({_WORD}))?")
# Words that follow "call me" / "I'm" but are no name ("I'm tired", "call me later").
_NOT_NAMES = frozenset(
    """a an the not no so very too just really also still now here there back later tomorrow
    today tonight maybe sometime soon again anytime whenever when if please home ok okay sorry
    fine good great well tired done ready sure busy bored sick hungry thirsty happy sad glad
    afraid excited new old in at on from with going about all alone lost late early up out off
    sleepy cold hot free interested curious confused worried scared angry stressed exhausted
    right wrong bad better worse alright awake asleep away around into over under working
    trying looking thinking planning hoping moving leaving coming staying living crazy anything
    whatever something sometimes back""".split()
)
_NAME_STOP = frozenset(
    """and but or from here btw by the i my so because who when if please later now tomorrow
    today instead anytime at on in thanks ok okay""".split()
)
_AFTER_NAME = re.compile(r"(?:,|from\b|here\b|and\b|by the way\b|btw\b|$)", _F)
_ADV = r"(?:\s+(?:really|also|actually|currently|now|still|just|do|absolutely|originally))?"
_PLACE_STOP = re.compile(
    r"\s+(?:with|for|since|near|now|currently|and|but|at|on|in|because|as|where|which|last|this"
    r"|next|ago|recently)\b|,\s",
    _F,
)
_PHRASE_STOP = re.compile(r"\s+(?:because|since|but|although|though|which|whereas)\b", _F)
_PRONOUN_OBJECT = re.compile(r"(?:it|that|this|them|you|him|her|those|these|me)\b", _F)

_LIVE = r"(?:live|reside|'m living|am living|'m based|am based|'m staying|am staying)"
_WORK = r"(?:work|'m working|am working)"
_DISLIKE = r"(?:(?:don't|do not|dont)\s+(?:like|love|enjoy)|hate|dislike|can't stand|cannot stand)"


@dataclass(frozen=True, slots=True)
class _FactRule:
    key: str
    pattern: re.Pattern[str]
    kind: str  # how the value is read: name, strict_name, place, short, phrase, raw
    in_questions: bool


def _rule(key: str, pattern: str, kind: str, *, in_questions: bool = False) -> _FactRule:
    return _FactRule(key, re.compile(pattern, _F), kind, in_questions)


# The first rule that reads a clause wins; order matters ("I'm from X" is no name).
_FACT_RULES: tuple[_FactRule, ...] = (
    _rule("name", r"\bmy name(?:'s|\s+is)\s+(?P<v>.+)", "name"),
    _rule("name", r"\bcall me\s+(?P<v>.+)", "name", in_questions=True),
    _rule("age", r"^(?:i'm|i am|im)\s+(?P<v>\d{1,3})(?:\s*(?:years?\s+old|yo|y/o))?$", "raw"),
    _rule("name", r"^(?:i'm|i am|im)\s+(?P<v>.+)", "strict_name"),
    _rule("location", rf"\bi{_ADV}\s+{_LIVE}\s+in\s+(?P<v>.+)", "place"),
    _rule("location", rf"\bi{_ADV}\s+(?:moved|relocated)\s+to\s+(?P<v>.+)", "place"),
    _rule("hometown", rf"\bi(?:'m|\s+am|\s+come){_ADV}\s+from\s+(?P<v>.+)", "place"),
    _rule("plan", rf"\bi(?:'m|\s+am){_ADV}\s+planning\s+(?P<v>.+)", "phrase"),
    _rule("plan", rf"\bi{_ADV}\s+plan\s+(?P<v>to\s+.+)", "phrase"),
    _rule("job", rf"\bi{_ADV}\s+{_WORK}\s+as\s+(?P<v>.+)", "short"),
    _rule("job", r"\bmy (?:job|profession|occupation) is\s+(?P<v>.+)", "short"),
    _rule("workplace", rf"\bi{_ADV}\s+{_WORK}\s+(?:at|for)\s+(?P<v>.+)", "place"),
    _rule(
        "favourite",
        r"\bmy (?:favou?rite|fav)\s+(?P<k>[^\W\d_]+(?:\s[^\W\d_]+)?)\s+(?:is|are)\s+(?P<v>.+)",
        "short",
    ),
    _rule("birthday", r"\bmy (?:birthday|bday|date of birth) is\s+(?:on\s+)?(?P<v>.+)", "short"),
    _rule("birthday", r"\bi was born on\s+(?P<v>.+)", "short"),
    _rule("dislikes", rf"\bi{_ADV}\s+{_DISLIKE}\s+(?P<v>.+)", "short"),
    _rule("likes", rf"\bi{_ADV}\s+(?:like|love|enjoy|adore)\s+(?P<v>.+)", "short"),
)


def _name_value(raw: str, *, strict: bool) -> str | None:
    match = _NAME.match(raw)
    if match is None:
        return None
    words: list[str] = []
    for word in (w for w in match.groups() if w):
        if word.lower() in _NAME_STOP or (strict and not word[0].isupper()):
            break
        words.append(word)
    if not words or words[0].lower() in _NOT_NAMES or len(words[0]) > 40:
        return None
    # After "I'm X" only the name may follow ("I'm Ada, from Lisbon"; not "I'm Planning a trip").
    rest = raw[match.end(len(words)) :].lstrip()
    gerund = len(words[0]) >= 6 and words[0].lower().endswith("ing")
    if strict and (gerund or not _AFTER_NAME.match(rest)):
        return None
    name = " ".join(words)
    return name.title() if name.islower() else name


def _cut(value: str, stop: re.Pattern[str], words: int | None) -> str:
    match = stop.search(value)
    if match:
        value = value[: match.start()]
    if words is not None:
        value = " ".join(value.split()[:words])
    return clean_value(value, 80)


def _fact_value(kind: str, raw: str) -> str | None:
    if kind == "name":
        return _name_value(raw, strict=False)
    if kind == "strict_name":
        return _name_value(raw, strict=True)
    if kind == "place":
        value = _cut(raw, _PLACE_STOP, 5)
    elif kind == "short":
        value = _cut(raw, _PHRASE_STOP, 8)
    elif kind == "phrase":
        value = _cut(raw, _PHRASE_STOP, 16)
    else:
        value = clean_value(raw, 80)
    return value or None


@lru_cache(maxsize=256)  # the state rules and the summarizer both read each turn's text
def extract_facts(text: str, *, turn: int) -> tuple[Fact, ...]:
    """Return the facts the user states about themselves in ``text``, in the order stated.

    Keys are stable slots: ``name``, ``age``, ``location``, ``hometown``, ``plan``, ``job``,
    ``workplace``, ``birthday``, ``favourite:<thing>``, ``likes:<item>``, ``dislikes:<item>``.
    Questions state nothing ("do I like jazz?"), except "call me X" ("could you call me Ada?").
    "I'm X" is a name only when X is capitalised and nothing but the name follows ("I'm Ada",
    not "I'm tired" or "I'm Planning a trip").

    Args:
        text: one user message.
        turn: the seq of the turn that states them (recorded on each fact).

    Returns:
        The facts, at most one per key (the last stated wins).
    """
    found: dict[str, Fact] = {}
    for clause in split_clauses(text, statements=True):
        fact = _read_fact(clause, turn)
        if fact is not None:
            found.pop(fact.key, None)
            found[fact.key] = fact
    return tuple(found.values())


def _read_fact(clause: Clause, turn: int) -> Fact | None:
    # One fact per clause: the first rule that reads it.
    for rule in _FACT_RULES:
        if clause.question and not rule.in_questions:
            continue
        match = rule.pattern.search(clause.text)
        if match is None:
            continue
        key = rule.key
        if key in {"likes", "dislikes"} and _PRONOUN_OBJECT.match(match.group("v")):
            continue
        value = _fact_value(rule.kind, match.group("v"))
        if value is None:
            continue
        if key in {"likes", "dislikes"}:
            key = f"{key}:{value.casefold()}"
        elif key == "favourite":
            key = f"favourite:{' '.join(match.group('k').casefold().split())}"
        return Fact(key=key, value=value, turn=turn)
    return None
