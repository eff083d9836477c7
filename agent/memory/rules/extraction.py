"""Reading one utterance by rules: its clauses, its values and words, timed reminders (the
to-dos it opens: :mod:`agent.memory.rules.todo_openers`; those it closes:
:mod:`agent.memory.rules.todo_closers`).

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
from dataclasses import dataclass
from functools import lru_cache

from agent.memory.rules.informal_words import respell, without_emoji
from agent.memory.rules.reminder_time import MAX_REMINDER_DELAY, WHEN, named_days, spoken_clock
from agent.utils.text import LOOP_STOP_WORDS, split_words

__all__ = [
    "IRREGULAR_STEMS",
    "MAX_REMINDER_DELAY",
    "NOT_REMIND",
    "Clause",
    "clean_value",
    "content_stems",
    "each_time",
    "match_reminder",
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
    r"|honestly|btw|xd|actually|though)$",
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


#: Past forms and other spellings of a word, and its stem ("bought": buy).
IRREGULAR_STEMS = {
    "bought": "buy", "paid": "pay", "sent": "send", "made": "make", "wrote": "write",
    "written": "write", "took": "take", "taken": "take", "sold": "sell", "told": "tell",
    "found": "find", "gave": "give", "given": "give", "went": "go", "ate": "eat", "met": "meet",
    "brought": "bring", "spoke": "speak", "left": "leave", "fed": "feed", "hung": "hang",
    "won": "win", "rang": "ring", "drank": "drink", "drove": "drive", "ran": "run",
    "threw": "throw", "swept": "sweep", "mum": "mom", "mother": "mom",
    # short forms: "car reg" is the car registration, "bday" the birthday
    "reg": "registration", "rego": "registration", "bday": "birthday", "appt": "appointment",
    "pw": "password", "pwd": "password", "num": "number", "addr": "address",
}  # fmt: skip


def _stem(word: str) -> str:
    word = IRREGULAR_STEMS.get(word, word)
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


# -- timed reminders (read by agent.memory.rules.reminder_requests) ---------------------------

_REMIND = (
    r"(?:please\s+)?(?:remind (?:me|us|everyone|everybody|the group)|set (?:a |an |my |our )?"
    r"(?:reminder|alarm|timer)(?: for (?:me|us))?"
    r"|wake (?:me|us)(?: up)?|ping (?:me|us)|nudge (?:me|us)"
    r"|give (?:me|us) a (?:nudge|shout|heads[- ]up)"
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


# "every day at 7am and 6pm", "at 8 and at 20:00": two clock times for one reminder.
_CLOCK = r"\d{1,2}(?:[:.]\d\d)?\s*(?:am|pm)?"
_TWO_TIMES = re.compile(
    rf"\bat\s+(?P<a>{_CLOCK})\s+and\s+(?:at\s+)?(?P<b>{_CLOCK})(?![\w:.])", re.IGNORECASE
)
_BARE = re.compile(r"\d{1,2}")
_DAY_CLOCK = re.compile(r"(?P<h>\d{1,2})(?:[:.]\d\d)?")  # no am or pm


def each_time(text: str) -> tuple[str, ...]:
    """Return ``text`` once for each clock time of a reminder said with two ("remind me at 7am
    and 6pm to ...": "... at 7am ...", "... at 6pm ..."), or alone as it is. A bare hour beside
    a time of the 24-hour clock is of that clock ("at 8 and 20:00": at 08:00, at 20:00)."""
    two = _TWO_TIMES.search(text)
    if two is None:
        return (text,)
    times = [two.group("a").strip(), two.group("b").strip()]
    clocks = [_DAY_CLOCK.fullmatch(time) for time in times]
    if any(clock and int(clock.group("h")) >= 13 for clock in clocks):
        times = [f"{int(time):02d}:00" if _BARE.fullmatch(time) else time for time in times]
    return tuple(f"{text[: two.start()]}at {time}{text[two.end() :]}" for time in times)


# A reminder asked not to be: "don't remind me ...", "no need to remind me ...".
NOT_REMIND = re.compile(
    r"\b(?:don't|dont|do\s+not|no\s+need\s+to|never|stop|needn't)\s+(?:remind(?:ing)?|nudg(?:e|ing)"
    r"|ping(?:ing)?)\s+me\b",
    _F,
)


def match_reminder(clause: str) -> re.Match[str] | None:
    """The match of a reminder request in ``clause``: its ``when``, ``link`` and ``label`` (of
    its last time, when it says two: :func:`each_time`)."""
    clause = named_days(spoken_clock(each_time(clean_value(clause, len(clause) + 1))[-1]))
    clause = _TIMER_FOR.sub("timer in ", clause)
    if NOT_REMIND.search(clause):  # "don't remind me about the bins on Monday"
        return None
    for pattern in _REMINDER_FORMS:
        match = pattern.search(clause)
        if match is not None:
            return match
    return None
