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
one ("oops, Tuesday, not Monday" of "on Mon 3 Mar"); a day put right keeps the time said with
the old one ("no, it's on Wednesday" of "on Tuesday at 3pm": "on Wednesday at 3pm").

:func:`read_said` is what a message states or puts right, as the concierge and the promotion
gate read it: the facts, dated, and the keys they replace. A value that is part of its key (a
name of someone's, a like, a trip) put right is a new key, so the old one is named to go: "my
sister is Hanna", then "sorry, her name is Anna" renames her (no second sister); "I like
coffee", then "no, I meant I like tea"; "I have a dog called Rex", then "oops, it's Max" or,
later, "I meant Max, not Rex".

Tested by ``tests/test_value_corrections.py`` and the "corrections" family of
``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple
from zoneinfo import ZoneInfo

from agent.memory.longterm.memory_slots import fact_key, parse_key, role_and_name, slot_of
from agent.memory.rules.event_moves import moved_event, moved_routine, of_known_event
from agent.memory.rules.fact_dates import dated_facts, kept_day
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.rules.plan_endings import ended_plans
from agent.memory.schemas import Fact
from agent.utils.time_zones import find_zone

__all__ = [
    "HISTORY",
    "Said",
    "as_history",
    "correct_by_value",
    "correct_last",
    "names_values",
    "puts_right",
    "read_said",
]

_F = re.IGNORECASE
# What may open a correction: "no,", "sorry -", "oops, actually", "oh wait,".
_OPENER = r"(?:no|nope|sorry|oops|whoops|actually|correction|wait|my bad|my mistake)"
# Said before it: "oh", "ah", "hmm" (alone they open no correction: "oh, it's raining").
_FILLER = r"(?:(?:oh|ah|hmm+|um+|uh|er+)\b[\s,:!.-]*)?"
_LEAD = rf"^{_FILLER}(?:{_OPENER}\b[\s,:!.-]*)*"
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
    rf"^{_FILLER}(?:(?:{_OPENER}\b[\s,:!.-]*)+(?:it's|it is|it was|that's|that is|make that"
    rf"|it should be|i meant|i mean)|i meant|i mean)\s+(?:actually\s+)?"
    rf"(?P<new>(?!(?:it|that|this|so|well|yes|no|whatever|who|what|why|how|like|really|you)\b)"
    rf"{_VALUE}){_END}"
    # "hmm no, Wednesday", "sorry, Bath", "no, 41", "sorry, the 15th": a bare value, a name, a
    # number or a day.
    rf"|^{_FILLER}(?:{_OPENER}\b[\s,:!.-]*)+(?P<bare>(?-i:[A-Z][^\W\d_]+(?:\s+[A-Z][^\W\d_]+)?)"
    r"|\d{1,3}|(?:on\s+)?(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|the\s+\d{1,2}(?:st|nd|rd|th)))"
    r"\s*[.!]*$",
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
# A message that opens by putting the one before right ("sorry, her name is Anna", "I meant
# my cousin"), and one that adds to it rather ("actually I also like tea").
_PUTS_RIGHT = re.compile(
    rf"^{_FILLER}(?:{_OPENER}|i meant|i mean|scratch that)\b",
    _F,
)
_ADDS = re.compile(r"\b(?:also|too|as well|another|second|other)\b", _F)
# Someone's name alone ("oops, it's Max").
_A_NAME = re.compile(r"[A-Z][^\W\d_]+(?:\s+[A-Z][^\W\d_]+)?")
# A time of day said with a date ("on Tuesday at 3pm"), kept when only the day is put right.
_AT_TIME = re.compile(r"\s+at\s+\d{1,2}(?:[:.]\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)?(?!\w)", _F)
# A name's spelling said after it ("John with an h", "Ann, spelt with no e").
_SPELLING = re.compile(r",?\s+(?:with|spelt|spelled)\b.*$", _F)
_ENTITIES = frozenset({"relative", "pet"})
# A day of the month said alone ("the 14th"), and the month of a date said before.
_DAY_OF_MONTH = re.compile(r"(?:on\s+)?(?:the\s+)?\d{1,2}(?:st|nd|rd|th)", _F)
_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", _F)
# "it's actually at 4", "it's at 4 actually", "it's spelled Sarah", "it's John with an h": a
# correction that says so after its "it's" (read as "actually it's at 4").
_AS_OPENED = re.compile(
    r"^(?P<it>it's|it is|that's|that is)\s+(?:(?:actually|spelt|spelled)\s+(?P<rest>.+)"
    r"|(?P<before>(?:(?:at|on|in)\s+)?(?:\d|(?-i:[A-Z])|(?:mon|tues|wednes|thurs|fri|satur|sun)day"
    r"|tomorrow|today|tonight)[^,]{0,30}?),?\s+actually"
    r"|(?P<spelt>(?-i:[A-Z])[^\W\d_]+,?\s+(?:with|spelt|spelled)\b.+))\s*[.!]*$",
    _F,
)


def _opened(match: re.Match[str]) -> str:
    said = match.group("rest") or match.group("before") or match.group("spelt")
    return f"actually {match.group('it')} {said}"


# A message put right as it goes: "I work at Google. no wait, at Microsoft", "my flight is on
# Friday, sorry, Saturday", "I like tea. hmm no, I prefer coffee". No repeat meets another
# over the same characters: "first" is lazy up to a mark, and the fix is bounded.
_FIX_WITHIN = re.compile(
    r"^(?P<first>.{3,300}?)(?:[.,;!]+\s+|\s+-+\s+)(?P<fix>(?:no+|nope|sorry|oops|wait|hmm+,?\s+no"
    r"|i mean|i meant|make that|or rather)\b[\s,:!.-]*(?P<rest>.{1,120}))$",
    _F,
)
# What the fix may say before the right value: "no wait, it's Microsoft".
_FIX_LEAD = re.compile(
    r"^(?:(?:no|wait|sorry|actually|i mean|i meant)\b[\s,:!.-]*)*(?:it's\s+|it is\s+)?", _F
)


class Said(NamedTuple):
    """What one message states or puts right: its ``facts`` (dated) and, for each of them that
    replaces a fact of another key, that key (``replaced[new key] = old key``)."""

    facts: tuple[Fact, ...]
    replaced: Mapping[str, str]


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


def puts_right(text: str) -> bool:
    """Whether ``text`` opens as a correction ("sorry, ...", "actually ...", "I meant ..."): it
    may rename one the user named before (a cheap test before the facts known are gathered);
    so does one that says so after its "it's" ("it's actually at 4")."""
    return (_PUTS_RIGHT.match(text.strip()) or _AS_OPENED.match(text.strip())) is not None


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
    as a correction, and ``previous`` state exactly one fact that has one value, or name one
    person or pet ("I have a dog called Rex", then "oops, it's Max").
    """
    return _correct_last(text, previous, turn=turn)[0]


def _correct_last(
    text: str, previous: str | None, *, turn: int
) -> tuple[tuple[Fact, ...], dict[str, Fact]]:
    match = _IT_IS.match(_AS_OPENED.sub(_opened, text.strip()))
    if match is None or not previous:
        return (), {}
    new = " ".join((match.group("new") or match.group("bare")).split())
    new = _SPELLING.sub("", new) if _A_NAME.fullmatch(_SPELLING.sub("", new)) else new
    said = extract_facts(previous, turn=turn)
    named = [f for f in said if parse_key(f.key).name in _ENTITIES]
    if len(said) == 1 and named and _A_NAME.fullmatch(new):  # "oops, it's Max": a rename
        renamed = _renamed(named[0], new, turn)
        return (renamed,), {renamed.key: named[0]}
    stated = [f for f in said if not _is_its_value(f)]
    if len(stated) != 1 or _CLAUSE.search(new) or len(new.split()) > _MOST_WORDS:
        return (), {}
    fact = stated[0]
    value = _in_its_month(_PLACE_WORD.sub("", new), fact.value)
    if fact.key == "timezone":  # "sorry, I meant London": its zone
        zone = find_zone(value)
        if zone is None:
            return (), {}
        value = zone.key
    verb = re.search(r"\s(?:is|are|leaves)\s", fact.value)
    if parse_key(fact.key).name == "event" and verb:  # "dentist appointment is on Tuesday"
        value = fact.value[: verb.end()] + _in_its_month(new, fact.value)
        kept_time = _AT_TIME.search(fact.value[verb.end() :])
        if kept_time is not None and _AT_TIME.search(new) is None:
            value += kept_time.group()  # "on Tuesday at 3pm", then "no, on Wednesday"
    return (Fact(key=fact.key, value=value, turn=turn, mode="corrected"),), {}


def _in_its_month(day: str, was: str) -> str:
    """A day of the month put right in the month said before: "the 14th" of "the 12th of May"
    is "the 14th of May"."""
    months = _MONTH.findall(was) if _DAY_OF_MONTH.fullmatch(day) else []
    return f"{day} of {months[-1]}" if months else day


def _renamed(fact: Fact, name: str, turn: int) -> Fact:
    """The fact that names someone (``sister Hanna``), named ``name`` instead."""
    parts = parse_key(fact.key)
    value = f"{role_and_name(fact.value)[0]} {name}"
    key = fact_key(parts.subject, parts.attribute, value)
    return Fact(key=key, value=value, turn=turn, mode="corrected")


def _rename_by_value(
    text: str, known: Sequence[Fact], *, turn: int
) -> tuple[tuple[Fact, ...], dict[str, Fact]] | None:
    """ "I meant Max, not Rex": the one the user named Rex is named Max."""
    for new, old in _instead(text):
        if not _A_NAME.fullmatch(new):
            continue
        for fact in reversed(known):
            if parse_key(fact.key).name in _ENTITIES:
                if role_and_name(fact.value)[1].casefold() == old.casefold():
                    renamed = _renamed(fact, new, turn)
                    return (renamed,), {renamed.key: fact}
    return None


def _put_right(stated: Sequence[Fact], text: str, previous: str | None) -> dict[str, Fact]:
    """The keys of the facts ``previous`` stated that those of ``text`` put right: of the
    same subject and many-value attribute, one each ("I like coffee", then "no, I meant I like
    tea"; "my brother is Mark", then "I meant my cousin is Mark")."""
    if not previous or not puts_right(text) or _ADDS.search(text):
        return {}
    before = extract_facts(previous, turn=0)
    keys = {f.key for f in stated}
    replaced: dict[str, Fact] = {}
    for fact in stated:
        parts = parse_key(fact.key)
        if fact.mode != "corrected" or not _is_its_value(fact):
            continue
        old = [
            f
            for f in before
            if f.key not in keys
            and parse_key(f.key).subject == parts.subject
            and parse_key(f.key).name == parts.name
        ]
        if len(old) == 1:
            replaced[fact.key] = old[0]
    return replaced


def _renamed_later(stated: Sequence[Fact], text: str, known: Sequence[Fact]) -> dict[str, Fact]:
    """ "actually my sister's name is Anna", said later: a message that only names someone, as a
    correction, renames the one the user has of that role (when they have exactly one); what
    else it says is of the one named ("actually my sister is Maria and she's 12")."""
    naming = [f for f in stated if parse_key(f.key).name in _ENTITIES]
    if len(naming) != 1 or not puts_right(text) or _ADDS.search(text):
        return {}
    (fact,) = naming
    if any(f is not fact and parse_key(f.key).subject != fact.value for f in stated):
        return {}
    parts = parse_key(fact.key)
    role, name = role_and_name(fact.value)
    if fact.mode != "corrected" or parts.name not in _ENTITIES or not name:
        return {}
    same = [
        f
        for f in known
        if f.key != fact.key
        and parse_key(f.key).name == parts.name
        and parse_key(f.key).subject == parts.subject
        and role_and_name(f.value)[0] == role
    ]
    return {fact.key: same[0]} if len(same) == 1 else {}


def _fixed_within(text: str, *, turn: int) -> tuple[Fact, ...] | None:
    """The facts of a message that puts itself right ("I'm allergic to cats. no, dogs!": an
    allergy to dogs only), or ``None`` when it does not: what the fix states replaces what the
    part before stated of the same attribute; a right value alone replaces the value of the
    one fact the part before stated."""
    split = _FIX_WITHIN.match(text.strip())
    if split is None:
        return None
    before = extract_facts(split.group("first"), turn=turn)
    after = extract_facts(split.group("fix"), turn=turn)
    if not before:
        return None
    if after:
        fixed = {(parse_key(f.key).subject, parse_key(f.key).name) for f in after}
        kept = [f for f in before if (parse_key(f.key).subject, parse_key(f.key).name) not in fixed]
        return (*kept, *(f.model_copy(update={"mode": "corrected"}) for f in after))
    new = _trim_value(_FIX_LEAD.sub("", split.group("rest")))
    if len(before) != 1 or not new or _CLAUSE.search(new) or len(new.split()) > _MOST_WORDS:
        return None
    (fact,) = before
    if _is_its_value(fact):  # "cats. no, dogs!": an allergy to dogs
        parts = parse_key(fact.key)
        return (Fact(key=fact_key(parts.subject, parts.attribute, new), value=new, turn=turn,
                     mode="corrected"),)  # fmt: skip
    return _correct_last(f"no, it's {new}", split.group("first"), turn=turn)[0] or None


def _trim_value(value: str) -> str:
    return " ".join(value.split()).strip(" .!,;")


def _said_again_of_renamed(
    stated: Sequence[Fact], replaced: Mapping[str, Fact], known: Sequence[Fact]
) -> dict[str, Fact]:
    """What a renaming message says again of the one renamed replaces what was kept of the old
    name: "actually my sister is Maria and she's 12" puts "sister Mia is 11" right too."""
    renamed = {
        new.value: old.value
        for new in stated
        if (old := replaced.get(new.key)) is not None and parse_key(new.key).name in _ENTITIES
    }
    again: dict[str, Fact] = {}
    for fact in stated:
        parts = parse_key(fact.key)
        before = renamed.get(fact.value if parts.name in _ENTITIES else parts.subject)
        if before is None or parts.name in _ENTITIES:
            continue
        olds = [
            f for f in known
            if parse_key(f.key).subject.casefold() == before.casefold()
            and parse_key(f.key).name == parts.name
        ]
        if len(olds) == 1:
            again[fact.key] = olds[0]
    return again


#: What an end said of a place or a work that is not the one known is kept as: history
#: ("I used to live in Rome" of someone in Madrid: ``lived``).
HISTORY = {"ex_location": "lived", "ex_workplace": "worked"}


def as_history(fact: Fact, known: Sequence[Fact]) -> Fact | None:
    """``fact``, or, when it :func:`_ends_another`, the history it tells ("I used to live in
    Rome" of someone known to live in Madrid: they lived in Rome), or ``None`` (nothing to
    keep: "I'm no longer vegan" of a vegetarian)."""
    if not _ends_another(fact, known):
        return fact
    parts = parse_key(fact.key)
    history = HISTORY.get(parts.attribute)
    if history is None:
        return None
    return Fact(key=fact_key(parts.subject, history, fact.value), value=fact.value, turn=fact.turn)


def _ends_another(fact: Fact, known: Sequence[Fact]) -> bool:
    """Whether ``fact`` says that a value no longer holds ("I don't live in Berlin anymore",
    "I used to live in Rome") while another value of its slot is the one known (Madrid): it
    ends nothing then, and is not kept as an end (it would put the end of Berlin in Madrid's
    place; :func:`as_history` keeps what it tells)."""
    parts = parse_key(fact.key)
    if not parts.attribute.startswith("ex_") or parts.attribute in {"ex_plan", "ex_event"}:
        return False
    slot = slot_of(fact.key)
    current = next((f for f in reversed(known) if slot_of(f.key) == slot), None)
    return (
        current is not None
        and not parse_key(current.key).attribute.startswith("ex_")
        and current.value.casefold() != fact.value.casefold()
    )


def _stated(
    text: str, known: Sequence[Fact], previous: str | None, *, turn: int
) -> tuple[tuple[Fact, ...], dict[str, Fact]]:
    """The facts ``text`` states, or else those it puts right, and the keys they replace."""
    fixed = _fixed_within(text, turn=turn)
    stated = extract_facts(text, turn=turn) if fixed is None else fixed
    stated = tuple(kept for fact in stated if (kept := as_history(fact, known)) is not None)
    replaced: dict[str, Fact] = {}
    if stated:
        replaced = _put_right(stated, text, previous) or _renamed_later(stated, text, known)
        replaced |= _said_again_of_renamed(stated, replaced, known)
    elif ended := ended_plans(text, known, turn=turn):
        stated = ended
    elif by_value := correct_by_value(text, known, turn=turn):
        stated = by_value
    elif (renamed := _rename_by_value(text, known, turn=turn)) is not None:
        stated, replaced = renamed
    else:
        stated, replaced = _correct_last(text, previous, turn=turn)
    return stated, replaced


def read_said(
    text: str,
    known: Sequence[Fact],
    previous: str | None,
    *,
    turn: int,
    said_at: datetime,
    zone: ZoneInfo,
) -> Said:
    """Return the facts ``text`` states, or else those it puts right, dated at ``said_at`` in
    ``zone``, with the keys they replace (see the module docstring).

    Args:
        text: one user message, its pronoun and names resolved.
        known: the facts known before it, oldest first.
        previous: the user's message before it, if any.
        turn: the seq of the turn that says it (recorded on each fact).
        said_at: when it was said (a relative date is read at it).
        zone: the user's time zone.
    """
    # "ballet moved to Thursdays" of a routine known: that routine (also what other rules
    # would read as a new event or routine: "my yoga class has been moved to Wednesday").
    moved = moved_routine(text, known, turn=turn)
    stated, replaced = moved or _stated(text, known, previous, turn=turn)
    events = tuple(of_known_event(f, known) for f in stated)
    dated = tuple(moved_event(f, known) for f in dated_facts(events, said_at, zone))
    new_keys = {f.key: d.key for f, d in zip(stated, dated, strict=True)}
    # A key that holds a dated value is the dated value's: the old fact's too.
    return Said(
        dated,
        {new_keys[new]: dated_facts((old,), said_at, zone)[0].key for new, old in replaced.items()},
    )
