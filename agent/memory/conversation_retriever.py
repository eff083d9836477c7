"""Retrieval: which older turns, summaries and memories a packet should carry.

Candidates come from three SQLite FTS5 indexes (migration 0006), each scoped in the MATCH
expression itself: the session's older turns, the session's summary deltas (where the turns
found do not fill the candidate set: a delta repeats turns in short), and the chat's active
long-term memories. Each candidate gets a score in [0, 1]::

    score = (w_message * relevance to the new message
             + w_topics * relevance to the active topics
             + w_recency * recency + w_importance * importance
             + w_open_loop * open-loop priority) / (sum of the weights)

* **relevance**: FTS5 BM25 of the candidate for the query (function words dropped) or, with the
  optional semantic search (:mod:`agent.memory.semantic_search`), BM25's ranking of the turns fused
  with their ranking by the message's vector, moved towards its best hits'
  (:func:`~agent.memory.retrieval_ranking.fuse`), times ``speaker_boost`` for a turn said by
  someone the message names, divided by the best's (1 for the best). Memories are searched for the
  message and the topics; the session's turns and summaries for the message, and for the topics too
  when no word of the message was found in a turn. The turns next to a strong hit inherit part of
  its relevance (``neighbour_weight`` / distance, less for the turns before it): in a chat the
  answer is often the reply to the message that shares the question's words;
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

import asyncio
import logging
from concurrent.futures import Future
from datetime import datetime
from functools import lru_cache
from typing import Any

from agent.db import Snapshot, Transaction
from agent.db.search import QUERY_WORDS
from agent.memory.conversation_store import ConversationStore, SqliteConversationStore, TurnText
from agent.memory.longterm.memory_consolidator import decay_factor
from agent.memory.longterm.memory_slots import render_memory
from agent.memory.longterm.memory_store import MemoryStore, SqliteMemoryStore
from agent.memory.packet_lines import render_turn, turn_day
from agent.memory.retrieval_ranking import (
    Candidate,
    RetrievalPolicy,
    RetrievalWeights,
    fact_turns,
    fuse,
    loop_turns,
    rank,
    spread,
)
from agent.memory.schemas import RetrievedItem, SessionState
from agent.memory.semantic_search import SemanticSearch
from agent.memory.storage.word_frequencies import WordFrequencies
from agent.memory.summaries.summary_store import SqliteSummaryStore, SummaryStore
from agent.utils.text import SEARCH_STOP_WORDS as _STOP_WORDS
from agent.utils.text import split_words

__all__ = [
    "ConversationRetriever",
    "RetrievalPolicy",
    "RetrievalWeights",
    "query_words",
]

logger = logging.getLogger(__name__)

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


def query_words(text: str) -> list[str]:
    """Return the content words of ``text``, lowercased, in order, without repeats.

    Function words are dropped; what remains is searched for word by word (see
    :func:`agent.db.search.match_query`), so no FTS5 syntax survives.
    """
    words = (word.lower() for word in split_words(text))
    # Years and other long numbers are content; "3" or "10" alone are not.
    kept = [
        word for word in words if word not in _STOP_WORDS and not (word.isdigit() and len(word) < 3)
    ]
    return list(dict.fromkeys(kept))[:QUERY_WORDS]


class ConversationRetriever:
    """Scores and returns the candidates a packet should carry, best first.

    Args:
        store: the turn log (its ``search_turn_texts`` is BM25 over a session's turns).
        memory_store: the long-term memories (its ``search`` is BM25 over a chat's memories).
        policy: the weights and bounds.
        summary_store: the summary chain (its ``search`` is BM25 over a session's deltas).
        semantic: the optional semantic search of turns (the ``semantic`` extra): its
            ranking is fused with BM25's for the message; ``None``: BM25 alone.
    """

    def __init__(
        self,
        store: ConversationStore | None = None,
        memory_store: MemoryStore | None = None,
        policy: RetrievalPolicy | None = None,
        *,
        summary_store: SummaryStore | None = None,
        semantic: SemanticSearch | None = None,
    ) -> None:
        self.store: ConversationStore = store or SqliteConversationStore()
        self.semantic = semantic
        self.memory_store: MemoryStore = memory_store or SqliteMemoryStore()
        self.summary_store: SummaryStore = summary_store or SqliteSummaryStore()
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
        conn: Snapshot,
        *,
        chat_id: int,
        session_id: str | None,
        text: str,
        now: datetime,
        state: SessionState | None = None,
        before_seq: int | None = None,
        after_seq: int = 0,
        token_budget: int | None = None,
        query_vector: Any = None,
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
            query_vector: the message's vector (:meth:`query_vector`); with one, the
                session's turns nearest it are ranked too, and the ranking fused with BM25's.
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
        candidates: dict[str, Candidate] = {}
        # The memories first: searched while the message's vector may still be encoded.
        self._memory_candidates(conn, candidates, chat_id, queries, limit, now)
        semantic = self.semantic is not None and query_vector is not None
        if session_id is not None and (session_queries or semantic):
            hits = self._turn_candidates(
                conn, candidates, session_id, session_queries, limit, before_seq, state,
                query_vector,
            )  # fmt: skip
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
        if state is not None:
            last_seq = state.turn_count
        else:
            last_seq = max((c.seq or 0 for c in candidates.values()), default=0)
        return rank(candidates.values(), last_seq, state, token_budget, self.policy)

    def _turn_candidates(
        self,
        conn: Snapshot,
        found: dict[str, Candidate],
        session_id: str,
        queries: list[tuple[str, str]],
        limit: int,
        before_seq: int | None,
        state: SessionState | None,
        query_vector: Any,
    ) -> int:
        # Returns how many turns matched a query (the raw turns at the end left out). The raw
        # turns at the end are matched too and dropped here: ask for that many more.
        slack = 0 if before_seq is None or state is None else max(state.turn_count - before_seq, 0)
        facts, loops = fact_turns(state), loop_turns(state)
        texts = [query for query, _ in queries]
        results = self.store.search_turn_texts(conn, session_id, texts, limit + slack + 1)
        # The words searched, the message's vector (if encoded by now) moved towards its hits'.
        first = results[0] if queries and queries[0][1] == "message" else []
        seeds = [t.seq for t, _ in first if before_seq is None or t.seq < before_seq]
        nearest = [] if self.semantic is None else self.semantic.search(
            conn, session_id, query_vector, limit, before_seq, wait=self.policy.vector_wait,
            seeds=seeds[: self.policy.feedback_hits], feedback=self.policy.feedback)  # fmt: skip
        if not queries:  # no word of the message to search for: its vector alone
            queries, results = [("", "message")], [[]]
        for turn in self.store.get_turn_texts(conn, session_id, nearest):  # [] reads nothing
            self._add_turn(found, turn, facts, loops)
        scored: list[tuple[str, dict[int, float], dict[int, float]]] = []
        for (query, slot), hits in zip(queries, results, strict=True):
            words = set(query.split())
            strength: dict[int, float] = {}
            for turn, bm25 in hits:
                if before_seq is not None and turn.seq >= before_seq:
                    continue
                strength[turn.seq] = -bm25
                self._add_turn(found, turn, facts, loops)
            if slot == "message" and nearest:
                strength = fuse(strength, nearest, self.policy)
            for seq in strength:
                # A turn said by someone the message names ("what did Ada say about...").
                named = not words.isdisjoint(_name_words(found[f"turn:{seq}"].speaker))
                strength[seq] *= self.policy.speaker_boost if named else 1.0
            # Conversational context: the replies after a hit (and the lines before it) often
            # carry the answer without sharing its words, so they inherit part of its strength.
            scored.append((slot, strength, spread(strength, before_seq, self.policy)))
        missing = [
            seq for _, _, inherited in scored for seq in inherited if f"turn:{seq}" not in found
        ]
        for turn in self.store.get_turn_texts(conn, session_id, missing):
            self._add_turn(found, turn, facts, loops)
        for slot, strength, inherited in scored:
            for seq, value in {**inherited, **strength}.items():
                candidate = found.get(f"turn:{seq}")
                if candidate is not None:
                    best = max(value, strength.get(seq, 0.0), inherited.get(seq, 0.0))
                    setattr(candidate, slot, max(getattr(candidate, slot), best))
        return len({seq for _, strength, _ in scored for seq in strength})

    def _selective(self, conn: Snapshot, queries: list[str]) -> list[tuple[str, bool]]:
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

    def _add_turn(
        self, found: dict[str, Candidate], turn: TurnText, facts: set[int], loops: set[int]
    ) -> None:
        ref = f"turn:{turn.seq}"
        if ref in found:
            return
        policy, important = self.policy, turn.has_jobs or turn.seq in facts
        found[ref] = Candidate(
            kind="turn",
            ref=ref,
            text=render_turn(turn),
            seq=turn.seq,
            speaker=turn.speaker,
            # "#12 " and " (8 May 2023)": the packet's line shows neither (split_day).
            unlisted_chars=len(str(turn.seq)) + 2 + len(turn_day(turn.created_at)) + 3,
            importance=policy.fact_turn_importance if important else policy.turn_importance,
            open_loop=1.0 if turn.seq in loops else 0.0,
        )

    def _summary_candidates(
        self,
        conn: Snapshot,
        found: dict[str, Candidate],
        session_id: str,
        queries: list[tuple[str, str]],
        limit: int,
    ) -> None:
        results = self.summary_store.search(
            conn, session_id, [query for query, _ in queries], limit
        )
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
                    candidate = found[ref] = Candidate(
                        kind="summary",
                        ref=ref,
                        text=f"Summary of turns #{hit.from_seq}-#{hit.to_seq}: {delta}",
                        seq=hit.to_seq,
                        importance=self.policy.summary_importance,
                    )
                setattr(candidate, slot, max(getattr(candidate, slot), -hit.bm25))

    def _memory_candidates(
        self,
        conn: Snapshot,
        found: dict[str, Candidate],
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
                    candidate = found[memory.memory_id] = Candidate(
                        kind="memory",
                        ref=memory.memory_id,
                        text=render_memory(memory),
                        seq=None,
                        recency=decay,
                        importance=memory.importance * decay,
                        open_loop=0.5 if memory.kind == "goal" else 0.0,
                    )
                setattr(candidate, slot, max(getattr(candidate, slot), -bm25))

    def for_packet(
        self,
        conn: Snapshot,
        *,
        chat_id: int,
        session_id: str | None,
        text: str,
        now: datetime,
        state: SessionState,
        recent_turns: int,
        token_budget: int,
        query_vector: Any = None,
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
            query_vector=query_vector,
        )

    def recall(
        self,
        conn: Snapshot,
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

    async def query_vector(self, text: str, speaker: str | None = None) -> Future[Any] | None:
        """Start encoding a message for :meth:`for_packet` (:meth:`SemanticSearch.
        encode_message`); return its vector's future (``None``: no semantic search).

        The retriever waits for it after its lexical searches. While the model loads (the
        first encoding: seconds) it is awaited here, on the loop, not in the searcher's thread.
        """
        if self.semantic is None or not text.strip():
            return None
        loaded = self.semantic.loaded
        vector = self.semantic.encode_message(text, speaker)
        if not loaded:
            await asyncio.wait([asyncio.wrap_future(vector)])
        return vector

    def turn_committed(self, session_id: str) -> None:
        """Index the session's new turns in the background (after a turn's commit, never in it)."""
        if self.semantic is not None:
            self.semantic.schedule(session_id)

    async def shutdown(self) -> None:
        """Finish the indexing in flight (before the database closes)."""
        if self.semantic is not None:
            await self.semantic.shutdown()

    async def purge(self, tx: Transaction) -> None:
        """Merge the full-text indexes so that erased rows leave no trace in their pages.

        FTS5 records a deletion as a tombstone next to the old entry; ``optimize`` rewrites
        each index without either. Run in the transaction that erased (``/forget``, prune):
        its cost is proportional to the index, and erasing is rare.
        """
        await self.store.purge_search(tx)
        self._frequencies.forget()  # words of the erased turns count no more
        if self.semantic is not None:
            self.semantic.forget()  # the cascade took their vectors: the cache reads anew


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
