"""Reading what an utterance says is done or to be dropped from the list ("I booked the hotel",
"done 2", "the invoice is sent", "remove milk from my list", "clear my list"), and which open
to-do it names (:func:`match_loop`; what is left of a list, :func:`list_left`). The to-dos an
utterance opens are :mod:`agent.memory.rules.todo_openers`'.

Pure functions of their arguments, as the rest of :mod:`agent.memory.rules.extraction`. Tested
by ``tests/test_extraction.py`` and the to-do families of ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent.memory.rules.extraction import (
    IRREGULAR_STEMS,
    clean_value,
    content_stems,
    split_clauses,
)
from agent.memory.schemas import OpenLoop

__all__ = [
    "EVERYTHING",
    "Closer",
    "extract_closers",
    "list_left",
    "match_loop",
    "names_its_thing",
]

_F = re.IGNORECASE

# -- closers -----------------------

# "I've finished everything", "all done": every open to-do at once.
EVERYTHING = frozenset({"everything", "all", "all of it", "all of them", "the lot", "my list",
                        "my whole list", "the whole list", "all my to-dos", "all my todos"})
_EXPLICIT_CLOSERS = (
    re.compile(
        r"^(?:all|everything(?:'s| is)?)\s+(?P<v>)(?:done|finished|completed?|sorted)\b", _F
    ),
    re.compile(
        r"^(?:done|finished|completed|ticked off|tick off|check off|checked off)\b\s*"
        r"(?:[:#-]\s*|with\s+)?(?P<v>.+)",
        _F,
    ),
    re.compile(
        r"^(?P<v>.+?)\s+(?:is|are)\s+(?:(?:now|all|already)\s+)?(?:done|finished|sorted|complete"
        r"|completed|taken care of|booked|handled)$",
        _F,
    ),
    re.compile(
        r"^i(?:'ve|\s+have)?(?:\s+(?:just|already|finally|now|also))?\s+(?:done|did|finished"
        r"|completed|managed to)\s+(?P<v>.+)",
        _F,
    ),
)
# "the invoice went out", "the parcel is in the post", "the transfer went through": done, if
# a to-do is about it ("the power went out" closes nothing, and says nothing of it).
_GONE = re.compile(r"^(?P<v>.+?)\s+(?:went|has gone|have gone|is|are|got)\s+(?:out|off|through"
                   r"|in the (?:post|mail))$", _F)
_IRREGULAR_PAST = (
    "bought|paid|sent|made|wrote|written|got|took|taken|sold|told|found|gave|given|went|ate|read"
    "|put|set|met|brought|spoke|left|fed|hung|sat|won|cut|rang|drank|drove|ran|threw|swept"
)
_PAST_CLOSER = re.compile(
    r"^(?:i(?:'ve|\s+have)?\s+)?(?:(?:just|already|finally|now|also)\s+)?"
    rf"(?P<verb>{_IRREGULAR_PAST}|[^\W\d_]{{2,}}ed)\s+(?P<v>.+)",
    _F,
)
# "the invoice is sent", "the dentist has been booked", "the vet's been called", "passport
# renewed": what was done, said of the thing (its participle, the verb; not a completion word:
# read as a past tense).
_DONE_TO = re.compile(
    r"^(?P<v>[^\W\d_][\w' -]{0,80}?)(?:\s+(?:is|are|was|were|got|has been|have been)\s+"
    r"|'s\s+been\s+|\s+)"
    rf"(?:(?:now|all|already|finally|just)\s+)?(?P<verb>{_IRREGULAR_PAST}|[^\W\d_]{{2,}}ed)$",
    _F,
)
# Past tenses that say nothing was done ("I wanted to book...", "I need..." ends in -ed too).
_NOT_DONE = frozenset(
    """wanted needed tried planned hoped intended failed decided started used attempted wished
    liked loved hated considered forgot missed postponed delayed agreed offered promised
    expected preferred asked wondered pretended refused learned learnt""".split()
)
# Participles that say how something is, not that it was done ("my cat is called Miso").
_STATES = _NOT_DONE | frozenset(
    """tired bored worried excited scared interested confused stressed married based called
    named located supposed allowed closed crowded""".split()
)
_LAST_ADVERB = re.compile(r"\s+(?:now|already|today|at last|finally)$", _F)
# "dentist appointment booked for Tuesday": when it is for, after what was done.
_LAST_WHEN = re.compile(
    r"\s+(?:for|on)\s+(?:(?:next|this)\s+)?(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day"
    r"|tomorrow|tonight|the\s+\d{1,2}(?:st|nd|rd|th)?)$",
    _F,
)
# "the garage is clean now": how a thing is when the to-do of that word is done.
_IS_DONE_STATE = re.compile(
    r"^(?P<v>[^\W\d_][\w' -]{0,80}?)\s+(?:is|are)\s+(?:(?:now|all|finally)\s+)?"
    r"(?P<state>clean|tidy|empty|spotless)$",
    _F,
)
# Past tenses said with "to" of what was done ("spoke to the plumber", "went to the bank"),
# unlike "wanted to ...".
_DONE_TO_SOMEONE = frozenset("spoke talked wrote replied chatted texted emailed went".split())
_NEGATION = re.compile(r"(?:not|never|n't|no)\b", _F)


# "remove walk the dog from my list", "take the dog walk off my list": dropped, not done.
_REMOVERS = (
    re.compile(r"^(?:please\s+)?(?:remove|delete|drop|strike|erase|scratch)\s+(?P<v>.+?)\s+"
               r"(?:from|off)\s+(?:my|the)\s+(?:[\w-]+\s+)?list$", _F),
    re.compile(r"^(?:please\s+)?(?:take|cross|strike|scratch)\s+(?P<v>.+?)\s+off(?:\s+(?:my|the)"
               r"\s+(?:[\w-]+\s+)?list)?$", _F),
    # "clear my list", "delete everything on my to-do list": every to-do
    re.compile(r"^(?:please\s+)?(?:(?:clear|empty|wipe|reset)(?:\s+out)?(?P<v>)|(?:remove|delete"
               r"|drop|erase)\s+(?P<all>everything|all(?:\s+the\s+items)?)\s+(?:on|in|from))"
               r"\s+(?:my|the)\s+(?:whole\s+)?(?:[\w-]+\s+)?list[.!]*$", _F),
)  # fmt: skip
# "remove call the vet": the to-do, when it is one (else no reply: it may ask to forget a fact).
_BARE_REMOVER = re.compile(r"^(?:please\s+)?(?:remove|delete|drop|scratch)\s+(?P<v>.+?)[.!]*$", _F)


@dataclass(frozen=True, slots=True)
class Closer:
    """A statement that something is done, or is to be dropped from the list.

    Attributes:
        text: what is done, e.g. ``booked the hotel``, ``2`` (the second to-do), or one of
            :data:`EVERYTHING` (every open to-do).
        explicit: said as a completion ("done: X", "X is done", "I did X"), not merely in the
            past tense ("I booked the hotel"): worth a reply when it matches no open loop.
        removal: "remove X from my list": dropped, not done.
    """

    text: str
    explicit: bool
    removal: bool = False


def extract_closers(text: str) -> tuple[Closer, ...]:
    """Return what ``text`` says is done: "I booked the hotel", "done: X", "X is done", "I did X".

    Each closer is matched against the open loops by :func:`match_loop`; "done 2" names the
    second open loop. Questions and negations close nothing ("did I book it?", "I did not").
    """
    found: list[Closer] = []
    for clause in split_clauses(text):
        if clause.question:
            continue
        closer: Closer | None = None
        for pattern in _REMOVERS:
            match = pattern.match(clause.text)
            if match:
                closer = Closer(match.group("v") or "everything", explicit=True, removal=True)
                break
        bare = _BARE_REMOVER.match(clause.text) if closer is None else None
        if bare is not None:
            closer = Closer(bare.group("v"), explicit=False, removal=True)
        for pattern in _EXPLICIT_CLOSERS if closer is None else ():
            match = pattern.match(clause.text)
            if match:
                closer = Closer(match.group("v") or "everything", explicit=True)
                break
        if closer is None:
            match = _PAST_CLOSER.match(clause.text)
            verb = match.group("verb").lower() if match else ""
            # "need", "feed", "proceed" end in -ed and are present tense.
            if match and verb not in _NOT_DONE and not verb.endswith("eed"):
                rest = match.group("v")
                if not rest.lower().startswith("to ") or verb in _DONE_TO_SOMEONE:
                    closer = Closer(f"{match.group('verb')} {rest}", explicit=False)
        # Only a clause that ends in a past participle can say what was done to something.
        # "the fence is fixed now", "the dentist booked for Tuesday"
        said = _LAST_WHEN.sub("", _LAST_ADVERB.sub("", clause.text.rstrip(" .!")))
        last = said.rpartition(" ")[2].casefold()
        if closer is None and (last.endswith("ed") or last in IRREGULAR_STEMS):
            match = _DONE_TO.match(said)
            verb = match.group("verb").lower() if match else ""
            # "the vet's been called": phoned, not named ("my cat is called Miso").
            called = verb == "called" and " been " in said
            if match and (verb not in _STATES or called) and not verb.endswith("eed"):
                closer = Closer(f"{verb} {match.group('v')}", explicit=False)
        if closer is None and (match := _GONE.match(said)) is not None:
            closer = Closer(match.group("v"), explicit=False)
        if closer is None and (match := _IS_DONE_STATE.match(said)) is not None:
            state = match.group("state").casefold().replace("spotless", "clean")
            closer = Closer(f"{state} {match.group('v')}", explicit=False)
        if closer is None or _NEGATION.match(closer.text):
            continue
        value = clean_value(closer.text)
        if value:
            found.append(Closer(value, closer.explicit, closer.removal))
    return tuple(found)


# -- which to-do a closer names ------------------------------------------------------------

# One deed said in other words ("spoke to the plumber" calls them, "got Tom's present" buys it,
# "dry cleaning collected" picks it up);
# what a closer names with a pronoun ("watered them") names no thing.
_SAME_DEED = {"speak": "call", "talk": "call", "phon": "call", "ring": "call", "got": "buy",
              "get": "buy", "purchas": "buy", "collect": "pick", "fetch": "pick"}  # fmt: skip
_NOT_THINGS = frozenset({"them", "it", "her", "him", "that", "this", "those", "these"})
# Handing a thing over finishes a to-do said as the thing owed ("the report for my boss by
# Monday", then "sent the report").
_HANDED_OVER = content_stems("sent emailed submitted handed delivered posted filed returned")


def names_its_thing(closer: str) -> bool:
    """Whether a deed said done names what it was done to ("I called the bank"), not only a
    pronoun ("I called her": which call?)."""
    return len(content_stems(closer) - _NOT_THINGS) > 1


def _deeds(stems: frozenset[str]) -> frozenset[str]:
    return frozenset(_SAME_DEED.get(stem, stem) for stem in stems)


def match_loop(closer: str, loops: Sequence[OpenLoop]) -> OpenLoop | None:
    """Return the open loop ``closer`` refers to, or ``None``.

    A number ``n`` names the n-th loop. Otherwise the content-word stems must agree: one set
    holds the other ("booked the hotel" ~ "book the hotel"; "the hotel is done" ~ "book the
    hotel") or they share at least 60% (Jaccard). "I booked a flight to Lisbon" does not close
    "book the hotel in Lisbon". Ties go to the oldest loop.
    """
    if closer.strip().isdecimal():
        index = int(closer.strip()) - 1
        return loops[index] if 0 <= index < len(loops) else None
    stems = _deeds(content_stems(closer))
    said = stems - _NOT_THINGS
    if not said:
        return None
    best: tuple[float, OpenLoop] | None = None
    matched = 0
    for loop in loops:
        wanted = _deeds(content_stems(loop.text))
        common = len(said & wanted)
        if not common:
            continue
        jaccard = common / len(said | wanted)
        handed = said - _HANDED_OVER  # "sent the report": the report owed is done
        if not (
            said <= wanted
            or wanted <= said
            or jaccard >= 0.6
            or (bool(handed) and handed != said and handed <= wanted)
        ):
            continue
        matched += 1
        if best is None or jaccard > best[0]:
            best = (jaccard, loop)
    if said != stems and matched > 1:
        return None  # "called her" with two calls to make: which one is not said
    return best[1] if best else None


# The things of a to-do said as a list ("buy eggs, milk and bread"): cut where a list is.
_LIST_CUT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", _F)
_PARTICLES = frozenset({"up", "off", "out", "back"})


def list_left(todo: str, closer: str) -> tuple[str, str] | None:
    """What is left of a to-do said as a list when ``closer`` names some of its things:
    ("milk", "buy eggs and bread") for "got the milk" of "buy eggs, milk and bread"; ``None``
    when the to-do is no list of short things (at most three words each: "finish the report on
    sales and marketing" is one), or the closer names none of them, or all of them."""
    words = todo.split()
    # A verb opens the to-do unless it is a list of things alone ("milk, eggs and bread").
    verb = 0 if len(_LIST_CUT.split(todo)[0].split()) < 2 else 1
    verb += 1 if verb and len(words) > 2 and words[1].casefold() in _PARTICLES else 0
    things = _LIST_CUT.split(" ".join(words[verb:]))
    if len(things) < 2 or any(not thing or len(thing.split()) > 3 for thing in things):
        return None
    named = (
        _deeds(content_stems(closer)) - _NOT_THINGS - _deeds(content_stems(" ".join(words[:verb])))
    )
    stems = [content_stems(thing) for thing in things]
    done = [thing for thing, of in zip(things, stems, strict=True) if of and of <= named]
    if not done or len(done) == len(things) or not named <= frozenset().union(*stems):
        return None
    left = [thing for thing in things if thing not in done]
    listed = left[0] if len(left) == 1 else f"{', '.join(left[:-1])} and {left[-1]}"
    return " and ".join(done), " ".join([*words[:verb], listed])
