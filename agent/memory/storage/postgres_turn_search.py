"""The turn search on PostgreSQL: BM25 over a session's turns, and word counts (tsvector, GIN).

:class:`PostgresTurnSearch` answers what
:class:`~agent.memory.storage.turn_search.SqliteTurnSearch` answers, with the same retrieval
policy and, by construction, the same numbers: the same words, counted the same way, ranked by
the same formula.

**The words are FTS5's** (:mod:`agent.db.bm25` says how a row's tokens, FTS5's own, go into a
``tsvector``). Each turn has a row in ``conversation_turn_search``
(``agent/db/schema_postgres.sql``, migration 0007): the tokens FTS5's tokenizer makes of its
speaker (weight class B), text and reply (A), with a GIN index, and the turn's token count. A
help or error reply and the whole of an erasure request are left out, as SQLite's migration 0013
does.

**Why the store writes the row, not a generated column.** A generated column can only call SQL,
and the tokens come from Python: the store writes the row in the transaction that appends the
turn or edits its text
(:class:`~agent.memory.storage.postgres_conversation_store.PostgresConversationStore`), and the
foreign key's ``ON DELETE CASCADE`` removes it with its turn, whatever erases the turn
(``delete_session``, ``prune_sessions``, a session deleted by the CLI). The collection
statistics, turns and tokens, are kept by a trigger on the row, in 16 shards summed when read.

**Ranking: FTS5's bm25(), in Python** (:func:`agent.db.bm25.bm25`). ``ts_rank_cd`` knows neither
IDF nor document length, so the candidates are fetched by ``@@`` (GIN, or the primary key over a
range of the session's turns) with each query token's occurrences, weighted 1 in the text and
the reply and 0.5 in the speaker (the SQLite search's ``bm25(fts, 0.0, 0.5, 1.0, 1.0)``), and
scored as FTS5 does: a token's IDF counts the turns (of every session) that hold it, through the
GIN index as FTS5 counts it through its posting list, up to :data:`~agent.db.bm25.COUNTED_ROWS`
and estimated from ANALYZE's statistics past it; a turn's length is its tokens with its session
id's. The two ranges of the SQLite search are kept (the last ``recent`` turns for every
word, the turns before them for the words found in at most ``old_word_turns`` of those), and the
order is the same: best score first, then the newer turn.

A packet's search is three statements on one snapshot: the session's last seq with the counts
of its words in the older turns and the collection statistics, the candidates, and the winners'
texts (:meth:`get_turn_texts`). Tested by the conformance suite
(``tests/test_store_conformance.py``, both backends, the same scores and words) and
``tests/test_postgres_turn_search.py`` (a 200-turn conversation: the same best turns).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.db import Snapshot, Transaction
from agent.db import bm25 as ranking
from agent.db.bm25 import (
    IndexStatistics,
    bm25,
    capped_count,
    estimated_hits,
    frequencies,
    occurrences,
    tsquery,
    tsvector,
    word_tokens,
)
from agent.db.search import index_tokens, search_words
from agent.memory.rules.dialogue_acts import MEMORY_ERASURE_INTENTS, UNRETRIEVED_REPLY_INTENTS
from agent.memory.schemas import ConversationTurn
from agent.memory.storage.turn_search import (
    OLD_WORD_TURNS,
    RECENT_TURNS,
    SqliteTurnSearch,
    TurnText,
    WordCounts,
    turn_text_columns,
)

__all__ = ["PostgresTurnSearch", "turn_index_row"]

#: A word's weight by where it occurs: A the text or the reply, B the speaker.
_WEIGHTS = {"A": 1.0, "B": 0.5}
#: The largest seq (an ``INTEGER``): the end of the recent turns' range.
_LAST_SEQ = 2**31 - 1

#: The session's turns in a range of seqs that hold any of some tokens, with the occurrences of
#: those tokens. Parameters: the tokens, session id, lowest and highest seq, tsquery.
_CANDIDATES_SQL = (
    f"SELECT t.seq, t.length, {occurrences('t.words')} FROM conversation_turn_search AS t"
    " WHERE t.session_id = ? AND t.seq BETWEEN ? AND ? AND t.words @@ ?::tsquery"
)


def turn_index_row(
    session_id: str,
    speaker: str | None,
    user_text: str | None,
    assistant_text: str | None,
    intent: str | None,
) -> tuple[str, int]:
    """Return a turn's ``tsvector`` literal and its length in tokens (see the module docstring).

    The speaker's tokens have weight B, the text's and the reply's A; the session id counts in
    the length only, as FTS5 counts it in the document's size.
    """
    if intent in MEMORY_ERASURE_INTENTS:
        user_text = None
    if intent in UNRETRIEVED_REPLY_INTENTS:
        assistant_text = None
    session, who, said, reply = index_tokens([session_id, speaker, user_text, assistant_text])
    words = tsvector([("A", said + reply), ("B", who)])
    return words, len(session) + len(who) + len(said) + len(reply)


class PostgresTurnSearch(SqliteTurnSearch):
    """The retrieval reads of the PostgreSQL
    :class:`~agent.memory.conversation_store.ConversationStore`, and the writes of its turn
    index (:meth:`index_turn`, :meth:`reindex_turn`)."""

    TURN_TEXT_COLUMNS = turn_text_columns("json_array_length(job_refs::json)")
    SEQS = "SELECT unnest(?::integer[])"

    @staticmethod
    def seqs_param(seqs: list[int]) -> Any:
        """Return the one parameter that carries ``seqs`` to :attr:`SEQS`."""
        return seqs

    async def index_turn(self, tx: Transaction, turn: ConversationTurn) -> None:
        """Write the index row of a turn just appended (in the transaction that appends it)."""
        row = turn_index_row(
            turn.session_id, turn.speaker, turn.user_text, turn.assistant_text, turn.intent
        )
        await self._write_row(tx, turn.session_id, turn.seq, row)

    async def reindex_turn(self, tx: Transaction, session_id: str, seq: int) -> None:
        """Write the index row of a turn again from the turn as it now is (after an edit)."""
        row = await tx.fetchone(
            "SELECT speaker, user_text, assistant_text, intent FROM conversation_turns"
            " WHERE session_id = ? AND seq = ?",
            (session_id, seq),
        )
        if row is not None:
            await self._write_row(tx, session_id, seq, turn_index_row(session_id, *row))

    async def _write_row(
        self, tx: Transaction, session_id: str, seq: int, row: tuple[str, int]
    ) -> None:
        await tx.execute(
            "INSERT INTO conversation_turn_search (session_id, seq, words, length)"
            " VALUES (?, ?, ?::tsvector, ?) ON CONFLICT (session_id, seq)"
            " DO UPDATE SET words = excluded.words, length = excluded.length",
            (session_id, seq, *row),
        )

    def search_turn_texts(
        self,
        conn: Snapshot,
        session_id: str,
        queries: Sequence[str],
        limit: int = 5,
        *,
        recent: int = RECENT_TURNS,
        old_word_turns: int = OLD_WORD_TURNS,
    ) -> list[list[tuple[TurnText, float]]]:
        """Return, for each of ``queries``, the session's turns that best match it (BM25).

        As :meth:`SqliteTurnSearch.search_turn_texts
        <agent.memory.storage.turn_search.SqliteTurnSearch.search_turn_texts>`: each query is
        reduced to its words (no syntax is parsed), all of them are searched over the last
        ``recent`` turns and those found in at most ``old_word_turns`` of the turns before
        them over those; each list is best first (the score is FTS5's bm25(): lower is
        better; ties: the newer turn), at most ``limit`` long.
        """
        found: list[list[tuple[TurnText, float]]] = [[] for _ in queries]
        asked = [search_words(words) for words in queries]
        if limit < 1 or not any(asked):
            return found
        every = list(dict.fromkeys(word for words in asked for word in words))
        tokens = dict(zip(every, word_tokens(every), strict=True))
        stats = self._statistics(conn, session_id, tokens, recent, old_word_turns)
        if stats is None:
            return found
        first_recent, old, statistics = stats
        # Each query's words over the recent turns, and its rare ones over the older turns.
        searches: list[tuple[int, list[str], int, int]] = []
        for index, words in enumerate(asked):
            every_token = [token for word in words for token in tokens[word]]
            searches.append((index, every_token, first_recent, _LAST_SEQ))
            rare = [word for word in words if 0 < old.get(word, 0) <= old_word_turns]
            if rare:
                rare_tokens = [token for word in rare for token in tokens[word]]
                searches.append((index, rare_tokens, 1, first_recent - 1))
        turns = self._candidates(conn, session_id, searches)
        ranked: list[list[tuple[float, int]]] = [[] for _ in queries]
        for index, phrases, low, high in searches:
            for seq, (length, frequency) in turns.items():
                if low <= seq <= high and not frequency.keys().isdisjoint(phrases):
                    ranked[index].append((bm25(statistics, phrases, frequency, length), seq))
        best = [sorted(hits, key=lambda hit: (hit[0], -hit[1]))[:limit] for hits in ranked]
        texts = {
            text.seq: text
            for text in self.get_turn_texts(conn, session_id, [s for hits in best for _, s in hits])
        }
        for index, hits in enumerate(best):
            found[index] = [(texts[seq], score) for score, seq in hits if seq in texts]
        return found

    def _statistics(
        self,
        conn: Snapshot,
        session_id: str,
        tokens: dict[str, list[str]],
        recent: int,
        cap: int,
    ) -> tuple[int, dict[str, int], IndexStatistics] | None:
        """Return the seq of the first of the session's last ``recent`` turns, in how many of
        the turns before it each word occurs (up to ``cap + 1``) and the index's statistics
        for the tokens; ``None`` for a session without turns. One statement."""
        words = [word for word, word_tokens in tokens.items() if word_tokens]
        terms = list(dict.fromkeys(token for word in words for token in tokens[word]))
        old = (
            ", (SELECT count(*) FROM (SELECT 1 FROM conversation_turn_search"
            "  WHERE session_id = ? AND seq <= s.top - ? AND words @@ ?::tsquery LIMIT ?) AS o)"
        )
        counted = capped_count("conversation_turn_search")
        params: list[Any] = []
        for word in words:
            params += [session_id, recent, tsquery(tokens[word]), cap + 1]
        for term in terms:
            params += [tsquery([term]), ranking.COUNTED_ROWS]
        row = conn.fetchone(
            "SELECT s.top, t.turns, t.tokens" + old * len(words) + counted * len(terms)
            + " FROM (SELECT max(seq) AS top FROM conversation_turns WHERE session_id = ?) AS s,"
            " (SELECT coalesce(sum(turns), 0) AS turns, coalesce(sum(tokens), 0) AS tokens"
            "  FROM conversation_turn_search_totals) AS t",
            [*params, session_id],
        )  # fmt: skip
        if row is None or row[0] is None:
            return None
        top, indexed, length, *counts = (int(value) for value in row)
        first_recent = max(top - recent + 1, 1)
        old_counts = dict(zip(words, counts[: len(words)], strict=True))
        counted_hits = dict(zip(terms, counts[len(words) :], strict=True))
        hits = estimated_hits(conn, "conversation_turn_search", counted_hits)
        return first_recent, old_counts, IndexStatistics(indexed, length / max(indexed, 1), hits)

    def _candidates(
        self, conn: Snapshot, session_id: str, searches: list[tuple[int, list[str], int, int]]
    ) -> dict[int, tuple[int, dict[str, float]]]:
        """Return the session's turns that any search finds (in its range, by any of its
        tokens): each turn's length and the weighted occurrences of the searched tokens.
        One statement: a ``UNION ALL`` of one range for each distinct range searched."""
        ranges: dict[tuple[int, int], list[str]] = {}
        for _, phrases, low, high in searches:
            ranges.setdefault((low, high), []).extend(phrases)
        arms: list[str] = []
        params: list[Any] = []
        for (low, high), terms in ranges.items():
            if terms and low <= high:
                arms.append(_CANDIDATES_SQL)
                params += [list(dict.fromkeys(terms)), session_id, low, high, tsquery(terms)]
        if not arms:
            return {}
        return {
            int(seq): (int(length), frequencies(found, _WEIGHTS))
            for seq, length, found in conn.fetchall(" UNION ALL ".join(arms), params)
        }

    def word_counts(self, conn: Snapshot, words: list[str], *, cap: int) -> WordCounts:
        """Return in how many turns (of all sessions) each word occurs, counting up to
        ``cap + 1``, and the turn log's high-water mark (the largest ``search_id``).

        A word is its tokens (:func:`~agent.db.search.search_words`, then FTS5's tokenizer),
        any of which counts, as SQLite's ``MATCH`` of :func:`~agent.db.search.match_query`;
        one statement, each count bounded by its ``LIMIT``; a word with nothing to search for
        counts 0.
        """
        parts = [search_words(word) for word in words]
        tokens = word_tokens([word for part in parts for word in part])
        asked: list[tuple[str, str]] = []
        start = 0
        for word, part in zip(words, parts, strict=True):
            searched = [t for found in tokens[start : start + len(part)] for t in found]
            start += len(part)
            if searched:
                asked.append((word, tsquery(searched)))
        one = capped_count("conversation_turn_search")
        params: list[Any] = []
        for _, query in asked:
            params += [query, cap + 1]
        [(high_water, *counts)] = conn.fetchall(
            "SELECT coalesce((SELECT max(search_id) FROM conversation_turn_search), 0)"
            + one * len(asked),
            params,
        )
        found = dict.fromkeys(words, 0)
        found.update((word, int(count)) for (word, _), count in zip(asked, counts, strict=True))
        return WordCounts(int(high_water), found)
