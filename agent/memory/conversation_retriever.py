"""Retrieval: which older turns, summaries and memories a packet should carry.

Candidates come from three SQLite FTS5 indexes (migration 0006), each scoped in the MATCH
expression itself: the session's older turns, the session's summary deltas (where the turns
found do not fill the candidate set: a delta repeats turns in short), and the chat's active
long-term memories. Each candidate gets a score in [0, 1]::

    score = (w_message * relevance to the new message
             + w_topics * relevance to the active topics
             + w_recency * recency + w_importance * importance
             + w_open_loop * open-loop priority) / (sum of the weights)

* **relevance**: FTS5 BM25 of the candidate for the query (function words dropped), times
  ``speaker_boost`` for a turn said by someone the message names, divided by the best of that
  query among all candidates, so the best match is 1. Memories are searched for the message
  and for the topics; the session's turns and summaries for the message, and for the topics
  too when no word of the message was found in a turn. The turns next to a strong hit inherit
  part of its relevance (``neighbour_weight`` / distance, less for the turns before it): in a
  chat the answer is often the reply to the message that shares the question's words;
* **recency**: turns and summaries halve every ``recency_half_life_turns`` turns back;
  memories use their decay factor (seed 003: half-life in days, boosted by accesses);
* **importance**: a memory's importance times its decay; turns that stated a fact or carry a
  job, and summaries, a fixed prior;
* **open-loop priority**: 1 for the turn that opened a loop still open or asked a question
  still pending, 0.5 for a summary covering one, or a goal among the memories.

The cost is bounded whatever the history's length: each index returns at most ``k`` candidates
(BM25 order with ``LIMIT k``, ``k`` set by the token budget only) and the neighbours are one
primary-key read. A session's turn searches (recent and older turns) are one statement, and so are
their neighbours and the summary searches. The retriever is synchronous: a packet's statements, and
the scoring between them, run in the database's searcher thread in one hand-over, on one snapshot
(:meth:`Database.read <agent.db.database.Database.read>`). Turns are read as plain texts (the
store's ``TurnText``, no model) and scored as such; with a token budget, only the items a first fit
of that budget could take are built (see :meth:`ConversationRetriever.retrieve`): a packet carries
a few dozen of the few hundred candidates. FTS5's bm25() counts the documents of every phrase of
its query by reading the phrase's whole posting list, so a session-id term in the MATCH cost a read
of every turn of the session (profiled: 4.3 ms of 7.9 at 100,000 turns). Migration 0007 numbers the
turn index so that a session is one rowid range, and the turn search restricts with ``rowid
BETWEEN`` instead: all query words over the session's last ``RECENT_TURNS`` turns, and over the
older turns only the words found in at most ``OLD_WORD_TURNS`` of them (a fact said once long ago
is found; a word said throughout is not searched for there). Both are FTS5 BM25 of the same index,
so their scores compare. bm25() still counts each query word's documents in the whole index, so
function words and words found in more than ``max_word_turns`` turns are dropped from the queries
of every index, which bounds that read per word (``bench/retrieval_cost.py`` measures the whole at
100,000 turns).
"""

from __future__ import annotations

import logging
import math
import sqlite3
from bisect import bisect_right, insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from typing import Any, NamedTuple

from agent.memory.conversation_store import (
    ConversationStore,
    SqliteConversationStore,
    TurnText,
    scoped_searches,
)
from agent.memory.longterm.memory_consolidator import DecayPolicy, decay_factor
from agent.memory.longterm.memory_slots import render_memory
from agent.memory.longterm.memory_store import MemoryStore, SqliteMemoryStore
from agent.memory.schemas import (
    ConversationTurn,
    RetrievedItem,
    RetrievedKind,
    SessionState,
)
from agent.memory.word_frequencies import WordFrequencies
from agent.utils.text import SEARCH_STOP_WORDS as _STOP_WORDS
from agent.utils.text import split_words
from agent.utils.tokens import estimate_tokens

__all__ = [
    "SEARCH_INDEXES",
    "ConversationRetriever",
    "RetrievalPolicy",
    "RetrievalWeights",
    "query_words",
    "render_turn",
]

logger = logging.getLogger(__name__)

#: The full-text indexes retrieval reads (migration 0006); erasing optimizes them.
SEARCH_INDEXES = ("conversation_turns_fts", "conversation_summaries_fts", "memories_fts")

# Words of one query at most (the longest questions stay well below it).
_QUERY_WORDS = 24
# Words of a query found in turns that a search ranks by, at most: the rarest. bm25() reads
# the documents of each (up to max_word_turns), so this bounds a long message's searches; 6
# lost half a point of bench/memory_quality.py's recall, 8 a tenth or two.
_RANKED_WORDS = 8
# Topics that make the topic query, heaviest first.
_QUERY_TOPICS = 5
# Tokens a candidate is assumed to cost when sizing the candidate set to the budget. A turn
# item costs ~40 tokens of LoCoMo talk; asking each index for a third as many candidates as 16
# did left bench/memory_quality.py's recall unchanged (within one question of 999) and reads,
# converts and scores a third of the rows.
_TOKENS_PER_CANDIDATE = 48
# The excerpt of a summary delta an item carries at most (characters).
_SUMMARY_CHARS = 600
# What a turn before a hit inherits, relative to a turn after it (replies carry answers).
_BEFORE = 0.7


def query_words(text: str) -> list[str]:
    """Return the content words of ``text``, lowercased, in order, without repeats.

    Function words are dropped; what remains is searched for word by word (see
    :func:`agent.memory.conversation_store.match_query`), so no FTS5 syntax survives.
    """
    words = (word.lower() for word in split_words(text))
    # Years and other long numbers are content; "3" or "10" alone are not.
    kept = [
        word for word in words if word not in _STOP_WORDS and not (word.isdigit() and len(word) < 3)
    ]
    return list(dict.fromkeys(kept))[:_QUERY_WORDS]


def _date(moment: datetime) -> str:
    return f"{moment.day} {_month(moment.year, moment.month)}"


@lru_cache(maxsize=1024)
def _month(year: int, month: int) -> str:
    # Cached: strftime costs more than the rest of a rendered turn, and turns share months.
    return f"{date(year, month, 1):%b %Y}"


def render_turn(turn: ConversationTurn | TurnText) -> str:
    """Return a turn as a retrieved item shows it: ``#12 Ada (8 May 2023): ...``."""
    text = f"#{turn.seq} {turn.speaker or 'user'} ({_date(turn.created_at)}): {turn.user_text}"
    if turn.assistant_text:
        text += f"\n  bot: {turn.assistant_text}"
    return text


@dataclass(frozen=True, slots=True)
class RetrievalWeights:
    """The weights of the retrieval score.

    Seed 003's weights were the start: semantic 0.4 and keyword 0.3 (here BM25 against the
    new message and against the active topics), recency 0.2, importance 0.1, and 0.1 for open
    loops. On ``bench/memory_quality.py`` those lost to plain BM25 (the topics and recency of
    the moment pulled in turns unrelated to the question), so relevance to the message now
    dominates and the other signals break ties and fill in when the message matches nothing.
    """

    message: float = 1.0
    topics: float = 0.1
    recency: float = 0.1
    importance: float = 0.1
    open_loop: float = 0.1

    def __post_init__(self) -> None:
        values = (self.message, self.topics, self.recency, self.importance, self.open_loop)
        if min(values) < 0 or sum(values) <= 0:
            raise ValueError("retrieval weights must be non-negative and not all zero")


@dataclass(frozen=True, slots=True)
class RetrievalPolicy:
    """How candidates are gathered and scored.

    Attributes:
        weights: the score's weights.
        candidates: the fewest candidates each index returns per query.
        max_candidates: the most (the budget sizes the set between the two).
        recency_half_life_turns: turns back after which a turn's recency halves.
        min_score: candidates scoring below this are left out.
        turn_importance: the importance of an ordinary turn.
        fact_turn_importance: of a turn that stated a fact or carries a job.
        summary_importance: of a summary delta.
        speaker_boost: the BM25 strength of a turn is multiplied by this when the message
            names its speaker.
        neighbour_weight: the share of a hit's strength the turns next to it inherit (divided
            by the distance; the turns before it get 0.7 of that).
        neighbour_span: how many turns on each side of a hit inherit.
        neighbour_hits: the strongest hits whose neighbours inherit (20 built twice as many
            neighbours and found the evidence of one more question of 999 in
            bench/memory_quality.py).
        max_word_turns: a word found in more turns than this (in the whole index) is left out
            of every search: it says little, and ranking by it would cost more and more as the
            history grows. 1,000 kept bench/memory_quality.py's recall of 2,000 to the
            question (500 lost half a point) at half the cost of the words near the cap.
        decay: how memories decay (their recency and importance).
    """

    weights: RetrievalWeights = field(default_factory=RetrievalWeights)
    candidates: int = 40
    max_candidates: int = 400
    recency_half_life_turns: float = 200.0
    min_score: float = 0.0
    turn_importance: float = 0.5
    fact_turn_importance: float = 0.8
    summary_importance: float = 0.5
    speaker_boost: float = 1.5
    neighbour_weight: float = 0.6
    neighbour_span: int = 2
    neighbour_hits: int = 10
    max_word_turns: int = 1000
    decay: DecayPolicy = field(default_factory=DecayPolicy)

    def __post_init__(self) -> None:
        if self.candidates < 1 or self.max_candidates < self.candidates:
            raise ValueError("need 1 <= candidates <= max_candidates")
        if self.recency_half_life_turns <= 0:
            raise ValueError("recency_half_life_turns must be positive")
        if self.neighbour_span < 0 or self.neighbour_hits < 0 or self.neighbour_weight < 0:
            raise ValueError("neighbour_span, neighbour_hits and neighbour_weight must be >= 0")


class _SummaryHit(NamedTuple):
    summary_id: int
    from_seq: int
    to_seq: int
    delta: str
    bm25: float


class _Ranked(NamedTuple):
    score: float  # rounded as the item shows it
    candidate: _Candidate


@dataclass(slots=True)
class _Candidate:
    kind: RetrievedKind
    ref: str
    text: str
    seq: int | None
    message: float = 0.0  # raw BM25 strength (-bm25) for the message query
    topics: float = 0.0  # ... for the topic query
    recency: float = 0.0
    importance: float = 0.0
    open_loop: float = 0.0


class ConversationRetriever:
    """Scores and returns the candidates a packet should carry, best first.

    Args:
        store: the turn log (its ``search_turns`` is BM25 over a session's turns).
        memory_store: the long-term memories (its ``search`` is BM25 over a chat's memories).
        policy: the weights and bounds.
    """

    def __init__(
        self,
        store: ConversationStore | None = None,
        memory_store: MemoryStore | None = None,
        policy: RetrievalPolicy | None = None,
    ) -> None:
        self.store: ConversationStore = store or SqliteConversationStore()
        self.memory_store: MemoryStore = memory_store or SqliteMemoryStore()
        self.policy = policy or RetrievalPolicy()
        self._frequencies = WordFrequencies(self.store, cap=self.policy.max_word_turns)

    def candidate_limit(self, token_budget: int | None) -> int:
        """Return how many candidates each index returns per query for ``token_budget``."""
        policy = self.policy
        if token_budget is None:
            return policy.candidates
        wanted = token_budget // _TOKENS_PER_CANDIDATE
        return max(policy.candidates, min(wanted, policy.max_candidates))

    def retrieve(
        self,
        conn: sqlite3.Connection,
        *,
        chat_id: int,
        session_id: str | None,
        text: str,
        now: datetime,
        state: SessionState | None = None,
        before_seq: int | None = None,
        after_seq: int = 0,
        token_budget: int | None = None,
    ) -> list[RetrievedItem]:
        """Return the candidates for a new message, best first, scored as the module says.

        Args:
            conn: a connection (normally the database's searcher: :meth:`Database.read
                <agent.db.database.Database.read>`).
            chat_id: the chat (whose long-term memories are candidates).
            session_id: the session (whose turns and summaries are); ``None`` for a session
                not in the database yet.
            text: the new message (or the words of ``/recall``).
            now: the current time (memories decay with it).
            state: the session's state (topics, open loops, facts); ``None``: none.
            before_seq: only turns with a smaller seq are candidates (the raw turns the packet
                carries anyway are left out); ``None``: every turn.
            after_seq: only turns, and summaries of turns, after this seq are candidates (those
                up to a ``/clear`` are left out of packets).
            token_budget: the budget the items will fill (``None``: no budget). It sizes the
                candidate set, and the candidates that a first fit of it, best first, could
                never take are left out (see :func:`_could_fit`): the packet is the same
                without them, and they are not built.
        """
        limit = self.candidate_limit(token_budget)
        message = " ".join(query_words(text))
        topics = " ".join(query_words(" ".join(_topic_names(state))))
        (message, said), (topics, _) = self._selective(conn, [message, topics])
        queries = [
            (query, slot) for query, slot in ((message, "message"), (topics, "topics")) if query
        ]
        # The session's turns and summaries are searched for the message, and for the topics
        # only when no word of the message was in a turn when counted ("and then?"): searching
        # both cost twice the time and moved bench/memory_quality.py's recall by less than a
        # point. Memories (a few per chat) are searched for both.
        session_queries = queries[:1] if said else queries
        candidates: dict[str, _Candidate] = {}
        if session_id is not None and session_queries:
            hits = self._turn_candidates(
                conn, candidates, session_id, session_queries, limit, before_seq, state
            )
            # A summary delta repeats turns in short: it is a candidate where the turns found
            # do not fill the candidate set. Searched always, summaries took room that turns
            # fill better (bench/memory_quality.py: 2 points of recall at every budget) and
            # cost a third of the searches' time.
            if hits < limit:
                self._summary_candidates(conn, candidates, session_id, session_queries, limit)
        if after_seq:
            candidates = {
                ref: c
                for ref, c in candidates.items()
                if c.kind == "memory" or (c.seq or 0) > after_seq
            }
        self._memory_candidates(conn, candidates, chat_id, queries, limit, now)
        if state is not None:
            last_seq = state.turn_count
        else:
            last_seq = max((c.seq or 0 for c in candidates.values()), default=0)
        return self._rank(candidates.values(), last_seq, state, token_budget)

    def _turn_candidates(
        self,
        conn: sqlite3.Connection,
        found: dict[str, _Candidate],
        session_id: str,
        queries: list[tuple[str, str]],
        limit: int,
        before_seq: int | None,
        state: SessionState | None,
    ) -> int:
        # Returns how many turns matched a query (the raw turns at the end left out). The raw
        # turns at the end are matched too and dropped here: ask for that many more.
        slack = 0 if before_seq is None or state is None else max(state.turn_count - before_seq, 0)
        facts, loops = _fact_turns(state), _loop_turns(state)
        results = self.store.search_turn_texts(
            conn, session_id, [query for query, _ in queries], limit + slack + 1
        )
        scored: list[tuple[str, dict[int, float], dict[int, float]]] = []
        for (query, slot), hits in zip(queries, results, strict=True):
            words = set(query.split())
            strength: dict[int, float] = {}
            for turn, bm25 in hits:
                if before_seq is not None and turn.seq >= before_seq:
                    continue
                # A turn said by someone the message names ("what did Ada say about...").
                named = not words.isdisjoint(_name_words(turn.speaker))
                strength[turn.seq] = -bm25 * (self.policy.speaker_boost if named else 1.0)
                self._add_turn(found, turn, facts, loops)
            # Conversational context: the replies after a hit (and the lines before it) often
            # carry the answer without sharing its words, so they inherit part of its strength.
            scored.append((slot, strength, self._spread(strength, before_seq)))
        missing = [seq for _, _, spread in scored for seq in spread if f"turn:{seq}" not in found]
        for turn in self.store.get_turn_texts(conn, session_id, missing):
            self._add_turn(found, turn, facts, loops)
        for slot, strength, spread in scored:
            for seq, value in {**spread, **strength}.items():
                candidate = found.get(f"turn:{seq}")
                if candidate is not None:
                    best = max(value, strength.get(seq, 0.0), spread.get(seq, 0.0))
                    setattr(candidate, slot, max(getattr(candidate, slot), best))
        return len({seq for _, strength, _ in scored for seq in strength})

    def _selective(self, conn: sqlite3.Connection, queries: list[str]) -> list[tuple[str, bool]]:
        """Leave out of each query the words found in more than ``max_word_turns`` turns;
        return each query with whether any word left was in a turn when counted.

        Such a word tells little about which turn is meant, and FTS5's bm25() reads the whole
        posting list of every word it ranks by (to count its documents), so ranking by it is
        what would make a search's cost grow with the history, of the session and of the bot.
        Summaries and memories come from turns, so a word is no rarer there: every index is
        searched with the same words, and by the ``_RANKED_WORDS`` rarest of them at most. If
        no word of a query is in at most that many turns, its rarest stays. A word in no turn
        stays too: searching for it costs nothing, and it may have been said since it was
        counted. The words are counted once and the counts kept while the turns written since
        cannot change what they decide (:class:`WordFrequencies`).
        """
        cap = self.policy.max_word_turns
        every = list(dict.fromkeys(word for query in queries for word in query.split()))
        counts = self._frequencies.counts(conn, every)
        selective: list[tuple[str, bool]] = []
        for query in queries:
            words = query.split()
            kept = {word for word in words if counts[word] <= cap}
            said_words = sorted(  # stable: ties keep the message's order
                (word for word in words if word in kept and counts[word]), key=counts.__getitem__
            )
            kept.difference_update(said_words[_RANKED_WORDS:])
            said = bool(said_words)
            common = [word for word in words if word not in kept]
            if common and not said:
                kept.add(min(common, key=lambda word: (counts[word], word)))
                said = True
            selective.append((" ".join(word for word in words if word in kept), said))
        return selective

    def _spread(self, strength: dict[int, float], before_seq: int | None) -> dict[int, float]:
        policy = self.policy
        spread: dict[int, float] = {}
        top = sorted(strength.items(), key=lambda hit: (-hit[1], hit[0]))[: policy.neighbour_hits]
        for seq, value in top:
            for distance in range(1, policy.neighbour_span + 1):
                share = value * policy.neighbour_weight / distance
                for neighbour, side in ((seq + distance, 1.0), (seq - distance, _BEFORE)):
                    if neighbour < 1 or (before_seq is not None and neighbour >= before_seq):
                        continue
                    spread[neighbour] = max(spread.get(neighbour, 0.0), share * side)
        return spread

    def _add_turn(
        self, found: dict[str, _Candidate], turn: TurnText, facts: set[int], loops: set[int]
    ) -> None:
        ref = f"turn:{turn.seq}"
        if ref in found:
            return
        important = turn.has_jobs or turn.seq in facts
        found[ref] = _Candidate(
            kind="turn",
            ref=ref,
            text=render_turn(turn),
            seq=turn.seq,
            importance=(
                self.policy.fact_turn_importance if important else self.policy.turn_importance
            ),
            open_loop=1.0 if turn.seq in loops else 0.0,
        )

    def _summary_candidates(
        self,
        conn: sqlite3.Connection,
        found: dict[str, _Candidate],
        session_id: str,
        queries: list[tuple[str, str]],
        limit: int,
    ) -> None:
        results = _search_summaries(conn, session_id, [query for query, _ in queries], limit)
        for (_, slot), hits in zip(queries, results, strict=True):
            for hit in hits:
                ref = f"summary:{hit.summary_id}"
                candidate = found.get(ref)
                if candidate is None:
                    delta = (
                        hit.delta
                        if len(hit.delta) <= _SUMMARY_CHARS
                        else (hit.delta[: _SUMMARY_CHARS - 1].rstrip() + "…")
                    )
                    candidate = found[ref] = _Candidate(
                        kind="summary",
                        ref=ref,
                        text=f"Summary of turns #{hit.from_seq}-#{hit.to_seq}: {delta}",
                        seq=hit.to_seq,
                        importance=self.policy.summary_importance,
                    )
                setattr(candidate, slot, max(getattr(candidate, slot), -hit.bm25))

    def _memory_candidates(
        self,
        conn: sqlite3.Connection,
        found: dict[str, _Candidate],
        chat_id: int,
        queries: list[tuple[str, str]],
        limit: int,
        now: datetime,
    ) -> None:
        results = self.memory_store.search(
            conn, chat_id, [query for query, _ in queries], limit=limit
        )
        for (_, slot), hits in zip(queries, results, strict=True):
            for memory, bm25 in hits:
                candidate = found.get(memory.memory_id)
                if candidate is None:
                    decay = decay_factor(memory, now, self.policy.decay)
                    candidate = found[memory.memory_id] = _Candidate(
                        kind="memory",
                        ref=memory.memory_id,
                        text=render_memory(memory),
                        seq=None,
                        recency=decay,
                        importance=memory.importance * decay,
                        open_loop=0.5 if memory.kind == "goal" else 0.0,
                    )
                setattr(candidate, slot, max(getattr(candidate, slot), -bm25))

    def _rank(
        self,
        candidates: Iterable[_Candidate],
        last_seq: int,
        state: SessionState | None,
        token_budget: int | None,
    ) -> list[RetrievedItem]:
        pool = list(candidates)
        if not pool:
            return []
        policy = self.policy
        weights = policy.weights
        best_message = max(c.message for c in pool) or 1.0
        best_topics = max(c.topics for c in pool) or 1.0
        first_loop = min(_loop_turns(state), default=None)
        total = (
            weights.message + weights.topics + weights.recency + weights.importance
            + weights.open_loop
        )  # fmt: skip
        ranked: list[_Ranked] = []
        for c in pool:
            if c.kind != "memory" and c.seq is not None:
                c.recency = 0.5 ** (max(last_seq - c.seq, 0) / policy.recency_half_life_turns)
            if c.kind == "summary" and c.seq is not None and first_loop is not None:
                c.open_loop = 0.5 if first_loop <= c.seq else c.open_loop
            score = (
                weights.message * c.message / best_message
                + weights.topics * c.topics / best_topics
                + weights.recency * c.recency
                + weights.importance * c.importance
                + weights.open_loop * c.open_loop
            ) / total
            if score < policy.min_score or math.isnan(score):
                continue
            ranked.append(_Ranked(round(score, 4), c))
        # Best first; ties go to the newer item, then the reference (deterministic).
        ranked.sort(key=lambda r: (-r.score, -(r.candidate.seq or 0), r.candidate.ref))
        if token_budget is not None:
            ranked = _could_fit(ranked, token_budget)
        return [
            RetrievedItem(kind=c.kind, ref=c.ref, text=c.text, seq=c.seq, score=score)
            for score, c in ranked
        ]

    def for_packet(
        self,
        conn: sqlite3.Connection,
        *,
        chat_id: int,
        session_id: str | None,
        text: str,
        now: datetime,
        state: SessionState,
        recent_turns: int,
        token_budget: int,
    ) -> list[RetrievedItem]:
        """Return the candidates for a packet: the last ``recent_turns`` turns, which the
        packet carries verbatim anyway, are none of them; the budget sizes the set."""
        return self.retrieve(
            conn,
            chat_id=chat_id,
            session_id=session_id,
            text=text,
            now=now,
            state=state,
            before_seq=state.turn_count - recent_turns + 1,
            after_seq=state.cleared_through,
            token_budget=token_budget,
        )

    def recall(
        self,
        conn: sqlite3.Connection,
        *,
        chat_id: int,
        session_id: str,
        words: str,
        now: datetime,
        state: SessionState,
    ) -> list[RetrievedItem]:
        """Return what ``/recall words`` finds, best first: the words alone (no topic query),
        over every turn of the session and the chat's memories."""
        return self.retrieve(
            conn,
            chat_id=chat_id,
            session_id=session_id,
            text=words,
            now=now,
            state=state.model_copy(update={"active_topics": ()}),
        )

    async def purge(self, tx: Any) -> None:
        """Merge the full-text indexes so that erased rows leave no trace in their pages.

        FTS5 records a deletion as a tombstone next to the old entry; ``optimize`` rewrites
        each index without either. Run in the transaction that erased (``/forget``, prune):
        its cost is proportional to the index, and erasing is rare.
        """
        for table in SEARCH_INDEXES:
            # The table names are this module's constants, never user text.
            await tx.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")  # noqa: S608
        self._frequencies.forget()  # words of the erased turns count no more


@lru_cache(maxsize=1024)
def _name_words(speaker: str | None) -> frozenset[str]:
    # Cached: a chat has few speakers, and each hit of each packet asks.
    if not speaker:
        return frozenset()
    return frozenset(word for word in query_words(speaker) if len(word) > 2)


def _topic_names(state: SessionState | None) -> list[str]:
    if state is None:
        return []
    topics = sorted(state.active_topics, key=lambda t: (-t.weight, t.name))[:_QUERY_TOPICS]
    return [topic.name for topic in topics]


def _fact_turns(state: SessionState | None) -> set[int]:
    return set() if state is None else {fact.turn for fact in state.facts}


def _loop_turns(state: SessionState | None) -> set[int]:
    if state is None:
        return set()
    opened = {loop.opened_turn for loop in state.open_loops}
    return opened | {c.asked_turn for c in state.pending_clarifications}


def _could_fit(ranked: list[_Ranked], budget: int) -> list[_Ranked]:
    """Return the ranked candidates a first fit of ``budget`` tokens could take, in order.

    :meth:`ConversationContextBuilder.build <agent.memory.conversation_context_builder.
    ConversationContextBuilder.build>` takes the retrieved items best first, each one that
    still fits after what the packet holds already (first fit). So an item is taken only if
    every item before it that costs no more was taken too (one left out found less room than
    this one needs), hence only if its cost plus theirs is within the budget, whatever the
    packet held before. The items that fail this can never be taken, and leaving them out
    changes nothing: a left-out item adds nothing to the packet. (This holds because none of
    the items is one the packet carries already: :meth:`ConversationRetriever.for_packet`
    leaves out the raw turns.)
    """
    kept: list[_Ranked] = []
    costs: list[int] = []  # the costs of the kept items, sorted
    never = budget + 1  # an item costing this much or more cannot be taken
    for entry in ranked:
        cost = estimate_tokens(entry.candidate.text)
        if cost >= never:
            continue
        if cost + sum(costs[: bisect_right(costs, cost)]) > budget:
            # Nor can any later item that costs as much: this one would have been before it.
            never = cost
            continue
        insort(costs, cost)
        kept.append(entry)
    return kept


def _search_summaries(
    conn: sqlite3.Connection, session_id: str, queries: Sequence[str], limit: int
) -> list[list[_SummaryHit]]:
    """BM25 over the session's extractive summary deltas (migration 0006), for each query.

    At most ``limit`` hits per query, in no particular order; all the queries in one statement.
    """
    found: list[list[_SummaryHit]] = [[] for _ in queries]
    scope = session_id.replace('"', '""')
    sql, params = scoped_searches(
        "SELECT ?, s.summary_id, s.from_seq, s.to_seq, s.delta, hit.score FROM"
        " conversation_summaries AS s JOIN (SELECT rowid AS hit_rowid,"
        "   bm25(conversation_summaries_fts, 0.0, 1.0) AS score FROM conversation_summaries_fts"
        "   WHERE conversation_summaries_fts MATCH ? ORDER BY score, hit_rowid LIMIT ?) AS hit"
        " ON s.summary_id = hit.hit_rowid"
        " WHERE s.summarizer = 'extractive' AND s.status = 'completed'",
        f'session_id : "{scope}" AND delta',
        queries,
        limit,
    )
    if not sql:
        return found
    for row in conn.execute(sql, params):
        found[row[0]].append(_SummaryHit(row[1], row[2], row[3], row[4], float(row[5])))
    return found
