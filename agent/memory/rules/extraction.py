"""Reading one utterance by rules: its clauses, to-dos closed, timed reminders (the to-dos it
opens: :mod:`agent.memory.rules.todo_openers`).

Everything here is a pure function of its arguments: no clock (``now`` is passed in), no
randomness, no I/O. The state manager folds it over the turn log and must get the live state
back (I6); the offline concierge uses the very same rules, so what it acknowledges is what the
state records. Facts ("my name is Ada") are read by :mod:`agent.memory.rules.fact_extraction`;
a timed reminder's request is matched here (:func:`match_reminder`, so that it opens no to-do)
and read by :mod:`agent.memory.rules.reminder_requests`.

Text is normalised first (NFKC, zero-width and bidi marks dropped, curly quotes straightened)
and cut into clauses at sentence ends. Patterns are anchored or bounded, with no nested
unbounded quantifiers, so a hostile message of Telegram's 4096 characters is read in well
under a second (tests/test_extraction.py feeds it the worst cases found).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from agent.memory.rules.informal_words import respell, without_emoji
from agent.memory.rules.reminder_time import MAX_REMINDER_DELAY, WHEN, named_days, spoken_clock
from agent.memory.schemas import OpenLoop
from agent.utils.text import LOOP_STOP_WORDS, split_words

__all__ = [
    "EVERYTHING",
    "MAX_REMINDER_DELAY",
    "Clause",
    "Closer",
    "clean_value",
    "content_stems",
    "extract_closers",
    "list_left",
    "match_loop",
    "match_reminder",
    "names_its_thing",
    "normalize_text",
    "split_clauses",
    "without_mention",
]

_VALUE_CHARS = 200
_F = re.IGNORECASE

# -- normalisation and clauses -----------------------------------------------------------------

_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"'})
_BLANKS = re.compile(r"[^\S\n]+")
# A period ends a clause only before a space or the end, so "18.30" and "1.5 hours" survive; the
# lookbehind starts a run of dots only once (linear on "......x").
# A sentence ends at a full stop, not one of "a.m." nor of a title before a name ("Dr. Smith").
_CLAUSE_END = re.compile(
    r"[!?;\n]+|(?=\.)(?<!\.)(?<![ap]\.m)(?<![AP]\.M)(?<!\bDr)(?<!\bMr)(?<!\bMrs)(?<!\bMs)"
    r"(?<!\bProf)(?<!\bSt)\.+(?=\s|$)"
)
_FILLER = re.compile(
    r"(?:(?:ok(?:ay)?|so|well|also|and|oh|hey+|hi+|hiya|hel+o+|btw|by the way|actually|please|just"
    r"|um+|uh+|alright|right|anyway|no|nope|wait|sorry|oops|my bad|i mean|i meant"
    r"|scratch that)\b[\s,!:-]*)+",
    _F,
)
# "but I eat fish" is what a diet allows ("I'm vegetarian but I eat fish"): no new statement.
_BUT = r"but(?!\s+i\s+(?:still\s+|do\s+|also\s+)?(?:eat|drink)\b)"
# "... and I need to X": a second statement in one sentence.
_AND_I = re.compile(
    rf",?\s+(?:and|{_BUT}|also|plus|then)\s+(?=i\s|i'(?:ve|ll|m)\s|remind me\b|don't let me\b)",
    _F,
)
# ... "and a granddaughter called Poppy": a second one named, after the first ("me and my
# sister are ..." is one subject).
_SUBCLAUSE = re.compile(
    rf"(?<!\bme),?\s+(?:and|{_BUT}|also|plus)\s+(?=(?:i|i'm|i've|my|our|call me"
    r"|(?:everyone|everybody|people|most people|my friends|friends)\s+calls?\s+me)\b)"
    r"|,\s+(?=(?:i|i'm|i've|my)\b)|,?\s+and\s+(?=an?\s+[\w ]{1,30}?\s+(?:called|named)\s)",
    _F,
)


# The rules read a turn's text several times (facts, loops, summary items, topics) and the
# open loops' texts on every turn: the pure readings of a text are cached (``_TEXTS`` recent
# texts; a message is at most 4,096 characters, so at most ~3 MB in all).
_TEXTS = 256
_MENTION = re.compile(r"^@\w+[\s,:]*")


@lru_cache(maxsize=_TEXTS)
def normalize_text(text: str) -> str:
    """Return ``text`` in the form the rules read: NFKC, no invisible marks, plain quotes, no
    leading handle ("@helper_bot done 2": who is spoken to is no part of what is said), and
    informal spellings respelled ("im" -> "I'm") and emoji read as pauses ("Mochi 🐰 she's 2"
    -> "Mochi, she's 2"): :mod:`agent.memory.rules.informal_words`.

    Args:
        text: raw user text (any length, any script).

    Returns:
        The text with runs of blanks collapsed to one space (newlines kept) and stripped.
    """
    text = unicodedata.normalize("NFKC", without_emoji(text))
    text = _INVISIBLE.sub("", text).translate(_QUOTES)
    return respell(without_mention(_BLANKS.sub(" ", text).strip()))


def without_mention(text: str) -> str:
    """Return ``text`` without the handle it starts with, if any ("@helper_bot +1" -> "+1")."""
    return _MENTION.sub("", text)


@dataclass(frozen=True, slots=True)
class Clause:
    """One statement of an utterance.

    Attributes:
        text: the statement, normalised, without leading fillers ("ok so", "hi,").
        question: it ended with a question mark.
    """

    text: str
    question: bool


@lru_cache(maxsize=_TEXTS)
def split_clauses(text: str, *, statements: bool = False) -> tuple[Clause, ...]:
    """Cut ``text`` into clauses at sentence ends, then before "and I ...".

    Args:
        text: raw user text.
        statements: also cut before "and my ..." and ", I ..." (each fact its own clause).

    Returns:
        The non-empty clauses, in order.
    """
    text = normalize_text(text)
    sentences: list[Clause] = []
    start = 0
    for end in _CLAUSE_END.finditer(text):
        sentences.append(Clause(text[start : end.start()], "?" in end.group()))
        start = end.end()
    sentences.append(Clause(text[start:], False))
    splitter = _SUBCLAUSE if statements else _AND_I
    return tuple(
        Clause(part, sentence.question)
        for sentence in sentences
        for part in map(_strip_filler, splitter.split(sentence.text))
        if part
    )


def _strip_filler(text: str) -> str:
    text = text.strip(" ,:-\"'")
    match = _FILLER.match(text)
    return text[match.end() :].strip() if match else text


# Words said around a value, not part of it: "I hate mornings lol", "I live in Leeds tbh".
# No repeat before the word: "[\s,]+word$" was quadratic on a long run of commas.
_TAIL = re.compile(
    r"(?<=[\s,])(?:please|pls|thanks|thank you|lol|lmao|rofl|ha(?:ha)+|he(?:he)+|tbh|imo"
    r"|honestly|btw|xd)$",
    _F,
)


def clean_value(value: str, limit: int = _VALUE_CHARS) -> str:
    """Trim a captured value: trailing punctuation and emoji, quotes, "please", "lol", "tbh";
    cap its length."""
    value = _trim_end(value)
    while (tail := _TAIL.search(value)) is not None:
        value = _trim_end(value[: tail.start()])
    if len(value) > limit:
        value = value[: limit - 1].rstrip() + "…"
    return value


def _trim_end(value: str) -> str:
    # A loop, not a regex: "[\W_]+$" is quadratic on a long run of symbols.
    end = len(value)
    while end and not (value[end - 1].isalnum() or value[end - 1] in ")]'\""):
        end -= 1
    return value[:end].strip().strip("\"'")


# -- to-dos: closers, matching (openers: agent.memory.rules.todo_openers) -----------------------

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
                closer = Closer(match.group("v"), explicit=True, removal=True)
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
        if closer is None and (last.endswith("ed") or last in _IRREGULAR_STEMS):
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


_IRREGULAR_STEMS = {
    "bought": "buy", "paid": "pay", "sent": "send", "made": "make", "wrote": "write",
    "written": "write", "took": "take", "taken": "take", "sold": "sell", "told": "tell",
    "found": "find", "gave": "give", "given": "give", "went": "go", "ate": "eat", "met": "meet",
    "brought": "bring", "spoke": "speak", "left": "leave", "fed": "feed", "hung": "hang",
    "won": "win", "rang": "ring", "drank": "drink", "drove": "drive", "ran": "run",
    "threw": "throw", "swept": "sweep", "mum": "mom", "mother": "mom",
}  # fmt: skip


def _stem(word: str) -> str:
    word = _IRREGULAR_STEMS.get(word, word)
    if len(word) > 4 and word.endswith(("ies", "ied")):
        word = word[:-3] + "y"
    elif len(word) >= 6 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) >= 5 and word.endswith("ed"):
        word = word[:-2]
    elif len(word) >= 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "lsz"[len(word) >= 6 :]:
        word = word[:-1]  # stopped -> stop, cancelled -> cancel (called -> call)
    if len(word) >= 4 and word.endswith("e"):
        word = word[:-1]  # bake / baked / baking -> bak
    return word


@lru_cache(maxsize=_TEXTS)
def content_stems(text: str) -> frozenset[str]:
    """Return the stems of the content words of ``text`` (``booked the hotel`` -> book, hotel)."""
    said = split_words(normalize_text(text).casefold(), split_underscores=True)
    return frozenset(_stem(w) for w in said if w not in LOOP_STOP_WORDS)


# One deed said in other words ("spoke to the plumber" calls them, "got Tom's present" buys it);
# what a closer names with a pronoun ("watered them") names no thing.
_SAME_DEED = {"speak": "call", "talk": "call", "phon": "call", "ring": "call", "got": "buy",
              "get": "buy", "purchas": "buy"}  # fmt: skip
_NOT_THINGS = frozenset({"them", "it", "her", "him", "that", "this", "those", "these"})


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
        if not (said <= wanted or wanted <= said or jaccard >= 0.6):
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


# -- timed reminders (read by agent.memory.rules.reminder_requests) ---------------------------

_REMIND = (
    r"(?:please\s+)?(?:remind me|set (?:a |an |my )?(?:reminder|alarm|timer)(?: for me)?"
    r"|wake me(?: up)?|ping me|nudge me|give me a (?:nudge|shout|heads[- ]up)"
    r"|(?:don't|do not) let me forget|make sure i (?:remember|don't forget|do not forget))"
)
# "remind me of the dentist tomorrow": about it.
_LINK = r"(?P<link>to|about|that|for|of)"
_REMINDER_FORMS = (
    re.compile(
        rf"\b{_REMIND}\s+(?:for\s+)?(?P<when>{WHEN})\s*[,:-]?\s*(?:{_LINK}\s+(?P<label>.+))?$",
        _F,
    ),
    re.compile(rf"\b{_REMIND}\s+{_LINK}\s+(?P<label>.{{1,300}}?),?\s+(?P<when>{WHEN})$", _F),
    re.compile(rf"^(?P<when>{WHEN})\s*,?\s*{_REMIND}\s+{_LINK}\s+(?P<label>.+)$", _F),
    # "remind me tomorrow 9am gym", "set a reminder for tomorrow morning: dentist": what to remind
    # of, said without its "to" (the empty link).
    re.compile(
        rf"\b{_REMIND}\s+(?:for\s+)?(?P<when>{WHEN})\s*[,:-]?\s*(?P<link>)"
        r"(?P<label>(?!(?:to|about|that|for|of|and|but|or|so|if|because|when)\b)"
        r"[^\W\d_][\w' -]{0,60})$",
        _F,
    ),
)
# "set a timer for 10 minutes": a timer's length is a delay.
_TIMER_FOR = re.compile(r"\btimer\s+for\s+(?=(?:\d|an?\s|half\s))", _F)


def match_reminder(clause: str) -> re.Match[str] | None:
    """The match of a reminder request in ``clause``: its ``when``, ``link`` and ``label``."""
    clause = named_days(spoken_clock(clean_value(clause, len(clause) + 1)))
    clause = _TIMER_FOR.sub("timer in ", clause)
    for pattern in _REMINDER_FORMS:
        match = pattern.search(clause)
        if match is not None:
            return match
    return None
