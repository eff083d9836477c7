"""The rule-based concierge's reading of one message, and the phrasing its answers share.

:class:`Reading` is the current message read against the packet: what the session state will
become once the turn is committed (the concierge answers from both). The helpers say times and
sentences the same way in every answer. Covered by ``tests/test_rule_based.py`` (through
:class:`~agent.engines.rule_based.RuleBasedConcierge`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from agent.memory.longterm.memory_slots import whose
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.fact_extraction import PEOPLE, PETS
from agent.memory.rules.reminder_requests import ReminderRequest
from agent.memory.rules.session_rules import LoopUpdate
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef
from agent.utils.time_zones import DEFAULT_ZONE, zone_label

__all__ = [
    "ATTRIBUTE_STEMS",
    "Answer",
    "Reading",
    "direct_question",
    "due_order",
    "first_sentence",
    "is_about_user",
    "joined_of",
    "say_when",
    "sentence",
    "singular_question",
    "utc",
]

_MONTHS = (
    "January February March April May June July August September October November December"
).split()

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")

#: Words that name an attribute ("where I live": location), as the stems the loop rules read
#: words with (one tokeniser, one stop-word list): "forget where I live", "did I tell you
#: about my job?".
ATTRIBUTE_STEMS: dict[str, frozenset[str]] = {
    stem: content_stems(attributes)
    for words, attributes in (
        ("live lives living home address", "location"),
        ("work works job", "job workplace"),
        ("plan plans trip trips", "plan"),
        ("like likes", "likes"),
        ("old", "age"),
        ("allergies allergic", "allergy"),
        ("away staying stay", "away"),
    )
    for stem in content_stems(words)
}

# Words about the user's own things ("where I live"), and words that name someone else.
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|my|me|mine|myself)\b", re.I)
_SOMEONE = re.compile(rf"(?i:\b(?:{PEOPLE}|{PETS})\b)|(?<!^)\b[A-Z][^\W\d_]+")

# "do you know where I work?", "remind me where I work" ask "where do I work?": an indirect
# question made direct for the question rules (the forms, in order: the first that reads the
# rest wins). "remind me when I get home to call mom" asks for a reminder.
_INDIRECT = re.compile(
    r"^(?:(?:do|did|can|could) you (?:know|remember|recall|tell me)|(?:please\s+)?tell me"
    r"|(?:(?:can|could) you\s+|please\s+)?remind me(?=\s+(?:what|where|when|who|how)\b"
    r"(?!.*(?<!have )(?<!need )\bto\s+[a-z]+\b)))\s+(?P<q>.+?)\s*[?.!]*$",
    re.I,
)
_DIRECT_FORMS = tuple(
    (re.compile(pattern, re.I), form)
    for pattern, form in (
        (r"^how old i am$", "how old am I?"),
        (r"^what (?P<x>time|day|date) it is(?P<rest>.*)$", r"what \g<x> is it\g<rest>?"),
        (r"^(?P<wh>where|when|what|who)\s+i\s+said\b(?P<rest>.*)$", r"\g<wh> did I say\g<rest>?"),
        (r"^(?P<wh>where|when|what|who)\s+i\s+told you\b(?P<rest>.*)$",
         r"\g<wh> did I tell you\g<rest>?"),
        (r"^(?P<wh>where|when|what|who|how)\s+i\s+(?P<rest>(?!am\b|was\b).+)$",
         r"\g<wh> do I \g<rest>?"),
        (r"^(?P<wh>where|when|what|who)\s+(?P<subject>(?:my|the)\s+.+?)\s+(?P<be>is|are|was)$",
         r"\g<wh> \g<be> \g<subject>?"),
        (r"^(?P<subject>my\s+.+)$", r"what is \g<subject>?"),
    )
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Reading:
    """The current message read against the packet: what the state will become.

    ``zone`` is the user's time zone (their ``timezone`` fact; UTC if they set none).
    """

    text: str
    now: datetime
    new_facts: tuple[Fact, ...]
    facts: tuple[Fact, ...]
    loops: LoopUpdate
    reminder: ReminderRequest | None
    zone: ZoneInfo = DEFAULT_ZONE


#: A question rule: the answer to the message if it asks what the rule answers, else ``None``.
#: It reads the packet, the reading and the reminders this reply schedules.
Answer = Callable[[ConversationContextPacket, Reading, Sequence[JobRef]], str | None]


def direct_question(text: str) -> str:
    """Return the direct form of an indirect question ("do you know where I work?" -> "where
    do I work?"), or ``text`` as it is."""
    indirect = _INDIRECT.match(text.strip())
    if indirect is None:
        return text
    asked = indirect.group("q")
    for pattern, form in _DIRECT_FORMS:
        if pattern.match(asked):
            return pattern.sub(form, asked)
    return text


# A question asked for a household ("where do we live?", "how old is our son?"), asked as the
# user's own: the facts of a private chat are the user's, whoever "we" are.
_QUESTION = re.compile(
    r"^(?:what|where|when|who|whom|whose|which|how|do|does|did|is|are|was|were|have|has|can)\b"
    r"|\?\s*$",
    re.I,
)
_WE = re.compile(
    r"\b(?:are we|were we|we're|we've|we'll|we'd|we are|we were|we|our|ours|us|ourselves)\b", re.I
)
# "What did we talk about?", "where were we?": we, the user and the bot.
_OF_THE_TALK = re.compile(
    r"\bwe\b.{0,30}\b(?:talk|discuss|decid|agree|chat|spoke|speak|say|said|cover|conclud|settl"
    r"|leave|left)|\bwhere (?:were|are) we\b"
    r"|\b(?:our|us)\b(?:\s+\w+)?\s+(?:talks?|chats?|conversations?|discussions?|sessions?)\b",
    re.I,
)
_AS_I = {
    "are we": "am I", "were we": "was I", "we're": "I'm", "we've": "I've", "we'll": "I'll",
    "we'd": "I'd", "we are": "I am", "we were": "I was", "we": "I", "our": "my", "ours": "mine",
    "us": "me", "ourselves": "myself",
}  # fmt: skip


def singular_question(text: str) -> str:
    """A question asked with "we" and "our" asked with "I" and "my" ("where do we live?" ->
    "where do I live?", "are we going to Rome?" -> "am I going to Rome?"); anything else as it
    is (and so is a question of the talk itself: "what did we talk about?"). For a private
    chat, where what "we" have is what the user told."""
    if _QUESTION.search(text) is None or _OF_THE_TALK.search(text) is not None:
        return text
    return _WE.sub(lambda match: _AS_I[match.group(0).casefold()], text)


def is_about_user(words: str) -> bool:
    """Whether ``words`` speak of the user's own things ("where I live", "my job"), naming no
    one else ("my sister's job", "Mia")."""
    return _FIRST_PERSON.search(words) is not None and _SOMEONE.search(words) is None


def utc(moment: datetime) -> datetime:
    """Return ``moment`` in UTC (a naive time is taken to be UTC already)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def due_order(ref: JobRef) -> tuple[bool, datetime]:
    """Sort key of scheduled jobs: the soonest first, one without a time last."""
    due = ref.due_at
    return (due is None, utc(due) if due is not None else datetime.max.replace(tzinfo=UTC))


def say_when(due: datetime, now: datetime, zone: ZoneInfo = DEFAULT_ZONE) -> str:
    """Say when ``due`` is, seen from ``now``, on the clock of ``zone``: "at 18:30 UTC",
    "tomorrow at 08:00 Europe/Lisbon", "on 3 May at …"."""
    short = utc(due) - utc(now) < timedelta(minutes=1) and due.second
    due, now = utc(due).astimezone(zone), utc(now).astimezone(zone)
    clock = due.strftime("%H:%M:%S" if short else "%H:%M") + " " + zone_label(zone)
    if due.date() == now.date():
        return f"at {clock}"
    if due.date() == (now + timedelta(days=1)).date():
        return f"tomorrow at {clock}"
    day = f"{due.day} {_MONTHS[due.month - 1]}"
    return f"on {day} at {clock}" if due.year == now.year else f"on {day} {due.year} at {clock}"


def sentence(phrase: str) -> str:
    """Return ``phrase`` as a sentence: capitalised, with a full stop."""
    return phrase[:1].upper() + phrase[1:] + "."


def first_sentence(text: str, limit: int) -> str:
    """Return the first sentence of ``text``, cut to ``limit`` characters with "…".

    The same shape as the summarizer's lines, so raw and summarised turns read alike.
    """
    flat = _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0]
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def joined_of(said: Sequence[tuple[str, str]]) -> str:
    """Join phrases said of subjects with "and", naming a subject once when it goes on: of
    ("sister Lena", "your sister Lena lives in Vienna") and ("sister Lena", "your sister Lena
    works as an architect"), "your sister Lena lives in Vienna and works as an architect"."""
    phrases: list[str] = []
    # The subject the phrase before opened with: none for "your niece Lily's birthday is ...",
    # after which "and is 7" would be said of the birthday.
    last = None
    for subject, phrase in said:
        named = f"{whose(subject)} "
        opens = phrase.startswith(named)
        if subject == last and opens:
            phrase = phrase.removeprefix(named)
        phrases.append(phrase)
        last = subject if opens else None
    if len(phrases) > 2:  # "you work as a chef, your wife is called Giulia and you live in Turin"
        return ", ".join(phrases[:-1]) + " and " + phrases[-1]
    return " and ".join(phrases)
