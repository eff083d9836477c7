"""Reading a fact's value from the words after its cue: a name ("Ada", not "tired"), a place cut
where its sentence goes on ("Leeds, with my sister": "Leeds"), a short phrase, a time zone, an
age, what a detail is called ("my blood type is O negative": "blood type"). Pure functions,
shared by :mod:`agent.memory.rules.fact_extraction` (the user's facts) and
:mod:`agent.memory.rules.entity_facts` (the people and pets in their life).

Tested by ``tests/test_extraction.py``.
"""

from __future__ import annotations

import re

from agent.memory.rules.extraction import clean_value
from agent.memory.rules.fact_words import (
    DETAIL_NOUNS,
    NAME_STOP,
    NOT_DETAILS,
    NOT_NAMES,
    PEOPLE,
    PETS,
)
from agent.utils.text import LETTER_WORD
from agent.utils.time_zones import find_zone

__all__ = [
    "NAME",
    "PHRASE_STOP",
    "PLACE_STOP",
    "PRONOUN_OBJECT",
    "cut",
    "detail_name",
    "fact_value",
    "liked_value",
    "name_value",
]

_F = re.IGNORECASE

#: Up to three words that may be a name.
NAME = re.compile(rf"({LETTER_WORD})(?:\s+({LETTER_WORD}))?(?:\s+({LETTER_WORD}))?")
# What may follow a name said "I'm Ada": "I'm Ada, from Lisbon", "I'm Ada and ...".
_AFTER_NAME = re.compile(r"(?:,|from\b|here\b|speaking\b|and\b|by the way\b|btw\b|$)", _F)
PLACE_STOP = re.compile(
    r"\s+(?:with|for|since|near|now|currently|and|but|at|on|in|because|as|where|which|last|this"
    r"|next|ago|recently|today|tonight|tomorrow)\b|,\s",
    _F,
)
PHRASE_STOP = re.compile(r"\s+(?:because|since|but|although|though|which|whereas)\b", _F)
PRONOUN_OBJECT = re.compile(r"(?:it|that|this|them|you|him|her|those|these|me)\b", _F)
# The way back of a trip ("to Lisbon on the 3rd and back on the 10th"): not where it goes.
_BACK = re.compile(r"\s+(?:and|then)\s+(?:back|home|return(?:ing)?|fly(?:ing)? back)\b", _F)
# Words a value cut short may not end with ("a trip to Paris from the 4th to the").
_LOOSE_END = re.compile(r"(?:\s+(?:the|a|an|to|of|and|or|from|on|in|at|for|with|by|my|your))+$", _F)
# What may follow an age: "5 now", "5 last month".
_AGE_TAIL = re.compile(
    r"\s+(?:now|already|today|this year|last (?:week|month|year)|recently|yesterday|actually"
    r"|tomorrow|this\s+(?:week|weekend|month)|next\s+(?:week|month|year|[a-z]+day)"
    r"|on\s+[\w ]{1,20}|in\s+[a-z]+)$",
    _F,
)

# Where a value ends and a comment on it begins: "aerial yoga, it's a great way to...",
# "shellfish - it's pretty bad", "Rome next month, can't wait" (a list goes on: "reading,
# watching movies").
_COMMENT = re.compile(
    r"\s+[-\u2013\u2014]\s+|,\s+(?:the|it|it's|its|they|they're|that|that's|which|so|but|as|'cause"
    r"|cause|because|since|i|i'm|i've|we|we're|he|she|there|this|these|those|plus|can't|cannot"
    r"|yay|finally|lol|haha|omg|hopefully|fingers crossed)\b",
    _F,
)
# "cockroaches as well", "hiking so much": what is said, without how much.
_INTENSIFIER = re.compile(
    r"(?:\s+(?:so\s+much|a\s+lot|a\s+ton|very\s+much|too|as\s+well|either|also|so|really))+$",
    _F,
)


# A title said before a name: "call me Dr. Smith".
_TITLE = re.compile(r"^(?P<t>(?:dr|mr|mrs|ms|mx|miss|prof)\.?)\s+(?=[A-Z])", _F)


def name_value(raw: str, *, strict: bool) -> str | None:
    """The name ``raw`` opens with, or ``None`` ("tired" is none); ``strict``: capitalised, and
    nothing but the name follows ("I'm Ada", "I'm Ada, from Lisbon"); with its title ("Dr.
    Smith") if one is said before it."""
    title = _TITLE.match(raw)
    if title is not None:
        name = name_value(raw[title.end() :], strict=strict)
        said = title.group("t")
        return None if name is None else f"{said[:1].upper()}{said[1:]} {name}"
    match = NAME.match(raw)
    if match is None:
        return None
    words: list[str] = []
    for word in (w for w in match.groups() if w):
        if word.lower() in NAME_STOP or (strict and not word[0].isupper()):
            break
        words.append(word)
    if not words or words[0].lower() in NOT_NAMES or len(words[0]) > 40:
        return None
    # After "I'm X" only the name may follow ("I'm Ada, from Lisbon"; not "I'm Planning a trip").
    rest = raw[match.end(len(words)) :].lstrip()
    gerund = len(words[0]) >= 6 and words[0].lower().endswith("ing")
    if strict and (gerund or not _AFTER_NAME.match(rest)):
        return None
    name = " ".join(words)
    return name.title() if name.islower() else name


# A word said after "I'm" of how one is, not who ("stuck", "nervous", "starving", "kinda").
_STATE_WORD = re.compile(
    r"(?:ing|ed|ly|ous|ful|less|ive|able|ible)$|^(?:stuck|broke|single|pregnant|drunk|upset"
    r"|almost|kinda|sorta|gonna|wanna|ill|hurt|unwell|alive|such|your|his|her|their|this|that"
    r"|what|who|how|why|yes|yeah|yep|nope|literally|honestly|only|even|like|cool|lol|new)$"
)


def cut(value: str, stop: re.Pattern[str], words: int | None) -> str:
    """``value`` up to where a comment on it begins or ``stop`` finds the sentence going on,
    without "as well" or "so much", in at most ``words`` words."""
    value = _COMMENT.split(value, maxsplit=1)[0]
    match = stop.search(value)
    if match:
        value = value[: match.start()]
    value = _INTENSIFIER.sub("", value)
    if words is not None and len(value.split()) > words:  # a cut does not end on "the", "to"
        value = _LOOSE_END.sub("", " ".join(value.split()[:words]))
    return clean_value(value, 80)


# A reaction to the moment or a compliment, not a taste: "how you explained it", "the way it
# turned out", "to hear that", "when you call", "the thought", "seeing them soak in the sun".
_REACTION = re.compile(
    r"(?:how|the\s+way|when|what|that|it\s+when|the\s+(?:thought|idea|fact)|to\s+(?:hear|see|know"
    r"|read|think)\b|\w+ing\s+(?:it|them|this|that|these|those|him|her)\b)",
    _F,
)
_LISTENER = re.compile(r"\b(?:you|your|yours|you're|ya)\b", _F)
# The most words a liked thing has: a longer value is a sentence, not a thing.
_LIKED_WORDS = 10


# When a liking is said to hold, after what is liked: "I prefer coffee now".
_LIKED_NOW = re.compile(r"\s+(?:now|these days|nowadays|at the moment|lately|instead)$", re.I)


def liked_value(raw: str) -> str | None:
    """What ``raw`` (the words after "I love") says is liked: up to where a comment on it begins,
    without "so much"; ``None`` for a reaction or a compliment ("how you explained it")."""
    if _REACTION.match(raw) or _LISTENER.search(raw):
        return None
    value = _LIKED_NOW.sub("", cut(raw, PHRASE_STOP, None) or "")  # "coffee now": coffee
    return value if value and len(value.split()) <= _LIKED_WORDS else None


def fact_value(kind: str, raw: str) -> str | None:
    """The value of a fact said by ``raw``, read as ``kind`` says (name, strict_name, zone, age,
    year, trip, org, place, short, liked, teacher, phrase, raw), or ``None`` when it holds
    none."""
    if kind == "liked":
        return liked_value(raw)
    if kind == "teacher":  # "maths" taught: "a maths teacher"
        return f"a {clean_value(raw, 40)} teacher"
    if kind == "name":
        return name_value(raw, strict=False)
    if kind == "strict_name":
        return name_value(raw, strict=True)
    if kind == "casual_name":  # "hey im jake": one word, no word of how one is
        word = raw.casefold()
        return None if word in NOT_NAMES or _STATE_WORD.search(word) else raw.title()
    if kind == "zone":
        zone = find_zone(raw)
        return None if zone is None else zone.key
    if kind == "year":  # "1960 in Cork": the year
        year = re.match(r"(?:1[89]|20)\d\d\b", raw.strip())
        return None if year is None else year.group()
    if kind == "age":  # "5 now": the number and its unit
        return _AGE_TAIL.sub("", raw.strip())
    if kind == "trip":  # "going to Japan in August": a place, by its capital letter
        place = cut(_BACK.split(raw, maxsplit=1)[0], PHRASE_STOP, 8)
        return f"a trip to {place}" if place[:1].isupper() else None
    if kind == "org":  # "joined Google as a designer": a name, by its capital letter
        value = cut(raw, PLACE_STOP, 5)
        return value if value[:1].isupper() else None
    if kind == "place":
        value = cut(raw, PLACE_STOP, 5)
    elif kind == "short":
        value = cut(raw, PHRASE_STOP, 8)
    elif kind == "phrase":
        value = cut(raw, PHRASE_STOP, 16)
    else:
        value = clean_value(raw, 80)
    return value or None


# A value that holds a detail by its shape: a number, a name, "a blue Honda Civic".
_DETAIL_VALUE = re.compile(r"\d|[A-Z]|^(?:an?|the|my|our)\s")
# A value that says how things are, not what something is: "a bit cold", "the worst", "so slow".
_PASSING_VALUE = re.compile(
    r"^(?:an?\s+(?:bit|little|lot|mess|nightmare|disaster|joke|pain|struggle|drag)\b"
    r"|the\s+(?:best|worst)\b|(?:so|very|really|too|not|still|just|kind|sort|pretty|quite"
    r"|always|never|getting|going|being|all|called|named)\b)|\bis\b",
    _F,
)
_SOMEONE = re.compile(rf"(?:{PEOPLE}|{PETS}|ex)s?", _F)
_NEW = frozenset({"new", "current", "latest", "updated", "actual", "real"})


def detail_name(called: str, said: str) -> str | None:
    """What a detail is called ("blood type", "gym locker code": without "my", "the new"), or
    ``None`` when "my X is Y" says no lasting detail: X is a time, the body, a mood or someone
    (read by other rules), Y a passing state; "the X is Y" is a detail only for a code, a
    password, a number (:data:`DETAIL_NOUNS`)."""
    owner, *words = called.casefold().split()
    while len(words) > 1 and words[0] in _NEW:  # "the new locker code": the locker code's slot
        words = words[1:]
    ends = next((n for n, w in enumerate(words) if w in {"at", "for", "of", "in", "on"}), None)
    named = words[:ends]
    if not named or named[-1] in NOT_DETAILS or any(_SOMEONE.fullmatch(w) for w in named):
        return None
    if named == ["name"]:  # "my name is ...": a name or none, never a detail called "name"
        return None
    if _PASSING_VALUE.search(said):
        return None
    by_name = any(w in DETAIL_NOUNS for w in named)
    if owner == "the" and not by_name:
        return None
    if not by_name and _DETAIL_VALUE.search(said) is None:
        return None
    return " ".join(words)
