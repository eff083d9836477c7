"""Answering a question no rule answers from what the packet carries: "you told me ...".

A detail said in passing ("the wifi password at the cabin is pinecone42") becomes no fact, but
the retriever finds its turn for a later question about it. :func:`recollect` picks, among the
packet's turns (recent and retrieved) and long-term memories, the one that best covers the
question's content words, and :func:`answer_from_memory` quotes it with when it was said ("On
25 Nov you told me: the wifi password at the cabin is pinecone42"), or says honestly that
nothing was told when no candidate covers the question well enough.

The score of a candidate is the share of the question's content words (stems; question words,
function words and the bot's own words left out) that it contains, each word weighted by how
rare it is among the candidates (``log(1 + n / (1 + df))``): a speaker's name said in half the
turns counts little, "pinecone" or "wifi" much. :data:`RECALL_THRESHOLD` is tuned on the
LoCoMo development split by ``bench/concierge_recall.py`` (BENCHMARKS.md, "Concierge recall").
Questions asked earlier are no answers and are not candidates, nor is a line that stated a
fact no longer kept (forgotten with "forget that ...", or replaced). Covered by
``tests/test_rule_recall.py``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from functools import lru_cache

from agent.engines.rule_reading import ATTRIBUTE_STEMS, Reading, is_about_user
from agent.memory.longterm.memory_slots import (
    USER,
    describe_fact,
    describe_memory,
    fact_key,
    parse_key,
    role_and_name,
    slot_of,
)
from agent.memory.rules.dialogue_acts import MEMORY_ERASURE_INTENTS
from agent.memory.rules.extraction import content_stems, normalize_text
from agent.memory.rules.fact_dates import dated_facts
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef
from agent.utils.text import QUESTION_WORDS, SEARCH_STOP_WORDS
from agent.utils.time_zones import DEFAULT_ZONE

__all__ = [
    "RECALL_THRESHOLD",
    "Recollection",
    "answer_from_memory",
    "answer_told",
    "lines_saying",
    "quote_memory",
    "quote_said",
    "recollect",
]

#: The least score a candidate needs to be quoted (tuned on LoCoMo's development split).
RECALL_THRESHOLD = 0.75

_QUOTE_CHARS = 240
# What a line said by someone other than the speaker a question names is worth.
_OTHER_SPEAKER = 0.5
# What a question says about itself, not about what it asks: asking words and the bot's.
_NOT_ASKED = content_stems(
    " ".join(sorted(SEARCH_STOP_WORDS | QUESTION_WORDS))
    + " tell told say said remember remind know knew mention mentioned again ever"
    # Light verbs say nothing of what is asked ("where am I going in August?", "where did I
    # put my passport?").
    + " go going goes went gone get got put puts keep kept leave left"
    # "who wanted pizza?": who said it, in whatever words they wanted it.
    + " want wants wanted"
)
# "#12 Ada (8 May 2023): text" (a retrieved turn as the packet renders it), then "  bot: ...".
_RENDERED_TURN = re.compile(
    r"#(?P<seq>\d+) (?P<who>[^(\n]{1,80}?) \((?P<day>\d{1,2}) (?P<month>[A-Z][a-z]{2}) "
    r"(?P<year>\d{4})\): "
)
_BOT_LINE = "\n  bot: "
_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|myself|we|our|us)\b", re.IGNORECASE)
# "tell me a joke", "show me the news": the asker, not what is asked about.
_ASKER = re.compile(r"\b(?:tell|show|give|send|teach|help|let)\s+(?:me|us)\b", re.IGNORECASE)
# "what should I cook tonight?", "can you help me plan my week?": advice asked for.
_ADVICE = re.compile(
    r"\b(?:should|shall)\s+(?:i|we)\b|\b(?:can|could|would)\s+you\s+(?:please\s+)?(?:help"
    r"|recommend|suggest)\b|\b(?:recommend|suggest)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
# "have I told you about my job?", "did I mention my allergies?"
_ASK_TOLD = re.compile(
    r"^(?:have|did)\s+i\s+(?:ever\s+)?(?:told|tell|mention(?:ed)?|say|said|talk(?:ed)?)"
    r"\s+(?:to\s+)?(?:you\s+)?(?:anything\s+)?(?:about\s+)?(?P<what>.+?)\s*\??$",
    re.IGNORECASE,
)
# A word a question may add to what a detail was called ("email address"; "number" cost
# bench/concierge_recall.py 0.3 points of right - wrong, and was left in).
_ANY_DETAIL = content_stems("address")
_HOW = re.compile(r"\bhow\s+(?:long|much|many|often|far|soon)\b", re.IGNORECASE)
_QUESTION_ONLY = re.compile(r"[^.!?]*\?+")
# A question that asks for something said ("when is ...?", "what's ...?"), not yes or no.
_WH_QUESTION = re.compile(r"^\W*(?:what|when|where|who|whose|which|how)\b", re.IGNORECASE)
# The facts that name someone ("sister Mia", "cat Miso").
_NAMED = frozenset({"relative", "pet"})


def _only_asks(said: str) -> bool:
    """Whether ``said`` only asks, with its question mark or without ("where do i study")."""
    return _QUESTION_ONLY.fullmatch(normalize_text(said)) is not None


@dataclass(frozen=True, slots=True)
class Recollection:
    """The candidate that best answers a question.

    Attributes:
        said: the words to quote (the turn's user text, or the memory as the bot says it).
        speaker: who said it (``None``: the user of a personal chat, or a memory).
        when: the day it was said, if known.
        score: the share of the question's words it covers, weighted by rarity (0-1).
        seq: the turn's seq (``None`` for a memory).
    """

    said: str
    speaker: str | None
    when: date | None
    score: float
    seq: int | None = None


def _asked(question: str) -> frozenset[str]:
    # "@helper_bot what ...": the handle is none; "how long is my trip?" asks of the trip.
    asked = content_stems(_HOW.sub(" ", question)) - _NOT_ASKED
    # "what's my email address?" asks for the email, said "my email is ..."
    return asked - _ANY_DETAIL or asked


def _still_true(
    packet: ConversationContextPacket, *, personal: bool
) -> Callable[[str, str | None, date | None], bool]:
    """Whether a line (its words, speaker and day) states only facts still kept: one that
    stated a fact no longer kept must not bring it back. In a personal chat every fact lives in
    long-term memory (forgotten with "forget that ...", or replaced); in a group, a fact of the
    line's speaker whose slot now holds another value. A fact is read as it was kept: its
    relative dates ("on Saturday") as of the day the line was said."""
    kept = {fact_key(m.subject, m.attribute, m.text): m.text.casefold()
            for m in packet.memories if m.valid_until is None}  # fmt: skip
    kept.update((f.key, f.value.casefold()) for f in packet.facts)
    slots = {(f.speaker, slot_of(f.key)): f.value.casefold() for f in packet.facts}

    def fact_kept(fact: Fact, speaker: str | None) -> bool:
        value = fact.value.casefold()
        if personal:
            return kept.get(fact.key) == value
        return slots.get((speaker, slot_of(fact.key)), value) == value

    def still_true(said: str, speaker: str | None, when: date | None) -> bool:
        facts = extract_facts(said, turn=0)
        if facts and when is not None:
            facts = dated_facts(facts, datetime.combine(when, time(12), UTC), DEFAULT_ZONE)
        return all(fact_kept(f, speaker) for f in facts)

    return still_true


@lru_cache(maxsize=1024)  # a packet's retrieved turns come back in the next packets
def _rendered_turn(text: str) -> Recollection | None:
    match = _RENDERED_TURN.match(text)
    if match is None or match.group("month") not in _MONTHS:
        return None
    month = _MONTHS.index(match.group("month")) + 1
    day = date(int(match.group("year")), month, int(match.group("day")))
    who = match.group("who")
    said = text[match.end() :].partition(_BOT_LINE)[0].strip()
    if _only_asks(said):
        return None  # a line that only asks answers nothing
    return Recollection(said, None if who == "user" else who, day, 0.0, int(match.group("seq")))


def _candidates(packet: ConversationContextPacket) -> list[Recollection]:
    """The lines a question may be answered with, in the order ties are settled: retrieved
    turns (the retriever's best first), then the recent turns (newest first), then memories."""
    found: dict[int, Recollection] = {}
    for item in packet.retrieved:
        line = _rendered_turn(item.text) if item.kind == "turn" else None
        if line is not None and line.seq is not None:
            found[line.seq] = line
    for turn in reversed(packet.recent_turns):
        said = turn.user_text.strip()
        if (
            said
            and turn.intent not in MEMORY_ERASURE_INTENTS
            and not _only_asks(said)
        ):
            found.setdefault(
                turn.seq, Recollection(said, turn.speaker, turn.created_at.date(), 0.0, turn.seq)
            )
    memories = [
        Recollection(describe_memory(m), None, m.valid_from.date(), 0.0)
        for m in packet.memories
        if m.valid_until is None
    ]
    return [*found.values(), *memories]


def lines_saying(
    packet: ConversationContextPacket, words: frozenset[str], speaker: str | None
) -> list[Recollection]:
    """Return the packet's turns (recent and retrieved) whose words hold all of ``words``
    (stems), oldest first: those of ``speaker`` (``None``: anyone's, as in a personal chat)."""
    found = [
        line
        for line in _candidates(packet)
        if line.seq is not None
        and speaker in {None, line.speaker}
        and words <= content_stems(line.said)
    ]
    return sorted(found, key=lambda line: line.seq or 0)


def recollect(
    packet: ConversationContextPacket,
    question: str,
    *,
    personal: bool = True,
    asker: str | None = None,
) -> Recollection | None:
    """Return the packet's candidate that best covers ``question``, with its score, or ``None``.

    Ties go to the retriever's order (see :func:`_candidates`). The threshold is the caller's
    (:data:`RECALL_THRESHOLD`). ``personal``: a personal chat (its facts live in long-term
    memory: a line stating one that is not there is not quoted). ``asker``: who asks; in a
    group, a question about themselves is about their lines, even before they wrote any.
    """
    candidates = _candidates(packet)
    # A speaker the question names ("what did Caroline paint?") is who said it, not a word of
    # it: their lines are the candidates, and their name said by others counts for nothing.
    speakers = {c.speaker: content_stems(c.speaker) for c in candidates if c.speaker}
    every_name = frozenset().union(*speakers.values()) if speakers else frozenset()
    asked = _asked(question)
    named = {s for s, stems in speakers.items() if stems and stems <= asked}
    writer = packet.member.name if packet.member is not None else None if personal else asker
    if not named and writer is not None and is_about_user(normalize_text(question)):
        named = {writer}  # in a group, "what am I allergic to?" asks the writer's
    asked -= every_name
    if not asked or not candidates:
        return None
    words = [content_stems(c.said) - every_name for c in candidates]
    seen = Counter(w for found in words for w in found & asked)
    weight = {w: math.log(1 + len(candidates) / (1 + seen[w])) for w in asked}
    total = sum(weight.values())
    scored: list[tuple[float, int, Recollection]] = []
    for rank, (candidate, found) in enumerate(zip(candidates, words, strict=True)):
        score = sum(weight[w] for w in found & asked) / total
        if named and candidate.speaker not in named:
            score *= _OTHER_SPEAKER
        scored.append((score, -rank, candidate))
    # Best first; the facts a line states are read only for the lines in the running.
    still_true = _still_true(packet, personal=personal)
    for score, _, best in sorted(scored, key=lambda entry: entry[:2], reverse=True):
        if best.seq is None or still_true(best.said, best.speaker, best.when):
            return Recollection(best.said, best.speaker, best.when, score, best.seq)
    return None


def _day(when: date, today: datetime) -> str:
    if when == today.date():
        return "Earlier today"
    said = f"{when.day} {_MONTHS[when.month - 1]}"
    return f"On {said}" if when.year == today.year else f"On {said} {when.year}"


def quote_said(said: str, asked: frozenset[str], chars: int = _QUOTE_CHARS) -> str:
    """Return ``said`` to quote: whole when short, else its sentence holding most of the
    ``asked`` words (stems), cut at ``chars``."""
    flat = " ".join(said.split())
    if len(flat) <= chars:
        return flat
    # The sentence that holds most of what was asked.
    sentences = _SENTENCES.split(flat)
    best = max(sentences, key=lambda s: len(content_stems(s) & asked))
    return best if len(best) <= chars else best[: chars - 1].rstrip() + "…"


def answer_told(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "have I told you about my job?" with the facts kept on it ("Yes: you work at
    the library."), or ``None`` when none is (the turns may still hold it: quoted, or "you
    haven't told me", by :func:`answer_from_memory`)."""
    asked = _ASK_TOLD.match(reading.text)
    if asked is None:
        return None
    words = content_stems(asked.group("what")) - _NOT_ASKED
    if not words:
        return None
    mine = is_about_user(asked.group("what"))
    found = []
    for fact in reading.facts:
        key = parse_key(fact.key)
        if mine and key.subject != USER:
            continue  # "my job": not my brother's
        kept = content_stems(f"{key.subject} {key.attribute.replace(':', ' ')} {fact.value}")
        if all(word in kept or ATTRIBUTE_STEMS.get(word, frozenset()) & kept for word in words):
            found.append(describe_fact(fact))
    return "Yes: " + "; ".join(found) + "." if found else None


def quote_memory(
    packet: ConversationContextPacket,
    question: str,
    now: datetime,
    *,
    personal: bool,
    asker: str | None = None,
) -> str | None:
    """Quote what the packet holds that answers ``question``, with its day, or return ``None``
    when nothing covers it well enough (see :func:`answer_from_memory` for the arguments)."""
    found = recollect(packet, question, personal=personal, asker=asker)
    if found is None or found.score < RECALL_THRESHOLD:
        return None
    quote = quote_said(found.said, _asked(question))
    when = _day(found.when, now) if found.when else "Earlier"
    if found.seq is None:
        return f"{when} you told me that {quote}."
    if personal or found.speaker is None:
        return f"{when} you told me: {quote}"
    return f"{when} {found.speaker} said: {quote}"


def answer_from_memory(
    packet: ConversationContextPacket,
    question: str,
    now: datetime,
    *,
    personal: bool,
    asker: str | None = None,
) -> str | None:
    """Answer ``question`` with what the packet holds, or say it was not told.

    Args:
        packet: the session before the question.
        question: the question, as the user asked it.
        now: the time of the question (to say "earlier today", or the year when it differs).
        personal: a personal chat (the user is "you"; in a group, speakers are named).
        asker: the member who asks (in a group, their lines answer "what am I ...?").

    Returns:
        The quote with its day; "you haven't told me" when nothing covers the question and it
        is about the user (or someone the conversation names); ``None`` when it is neither
        (a question about the world: not this rule's to answer).
    """
    quoted = quote_memory(packet, question, now, personal=personal, asker=asker)
    if quoted is not None:
        return quoted
    said_of = _said_of_named(packet, question, now, personal=personal)
    if said_of is not None:
        return said_of
    if _ADVICE.search(question):
        return None  # "what should I cook tonight?" asks for advice, not for what was told
    names = {t.speaker.casefold() for t in packet.recent_turns if t.speaker}
    names.update(p.name.casefold() for p in packet.participants)
    about = _FIRST_PERSON.search(_ASKER.sub("", question)) or any(
        word.casefold() in names for word in re.findall(r"\w+", question)
    )
    if not about:
        return None
    return "You haven't told me that, as far as I can find. Tell me and I'll remember it."


def _known_names(packet: ConversationContextPacket) -> set[str]:
    """The names of the people and pets the user told of ("my sister Mia": Mia)."""
    labels = [m.subject for m in packet.memories if m.valid_until is None]
    labels += [m.text for m in packet.memories if m.valid_until is None and m.attribute in _NAMED]
    for fact in packet.facts:
        key = parse_key(fact.key)
        labels.append(key.subject)
        if key.name in _NAMED:
            labels.append(fact.value)
    return {role_and_name(label)[1] for label in labels} - {""}


def _said_of_named(
    packet: ConversationContextPacket, question: str, now: datetime, *, personal: bool
) -> str | None:
    """When no line answers a question about someone the user told of ("when is Omar's
    wedding?"), the line that says most of them ("my best friend Omar is getting married in
    June"), after saying that the question itself was not answered; ``None`` when the question
    names no one known, or no line says anything of them, or it asks for yes or no."""
    if _WH_QUESTION.match(question) is None:
        return None  # "can Leo eat pasta?" asks for a judgement, not for what was said
    names = [n for n in _known_names(packet) if re.search(rf"\b{re.escape(n)}\b", question)]
    if not names:
        return None
    name = max(names, key=len)
    stems = content_stems(name)
    still_true = _still_true(packet, personal=personal)
    for line in _candidates(packet):
        if line.seq is None or not stems <= content_stems(line.said):
            continue
        if not still_true(line.said, line.speaker, line.when):
            continue
        when = _day(line.when, now) if line.when else "Earlier"
        when = when[0].lower() + when[1:]
        quote = quote_said(line.said, stems)
        who = "you told me" if personal or line.speaker is None else f"{line.speaker} said"
        return f"You haven't told me that. About {name}, {when} {who}: {quote}"
    return None
