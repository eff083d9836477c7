"""The turn search on SQLite: BM25 over a session's turns, and word counts (FTS5).

:class:`SqliteTurnSearch` is the part of
:class:`~agent.memory.conversation_store.SqliteConversationStore` that retrieval calls, in the
database's searcher thread, on a :class:`~agent.db.Snapshot`
(:meth:`agent.db.Database.read`): the session's turns that best match each query, the
neighbours of its hits, and in how many turns words occur. Turns are read as
:class:`TurnText`, not models: retrieval reads a few hundred per packet. The FTS5 query of each
search comes from :mod:`agent.db.search`. Tested in ``tests/test_conversation_retriever.py``
(cost, plans) and ``tests/test_store_conformance.py`` (the contract).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import orjson

from agent.db import Row, Snapshot
from agent.db.search import match_query, search_words
from agent.memory.rules.dialogue_acts import MEMORY_ERASURE_INTENTS, UNRETRIEVED_REPLY_INTENTS
from agent.utils.timestamps import from_db_time

__all__ = [
    "OLD_WORD_TURNS",
    "RECENT_TURNS",
    "SqliteTurnSearch",
    "TurnText",
    "WordCounts",
    "turn_search_sql",
    "turn_text_columns",
]

# What retrieval reads of a turn (a TurnText): no ids, no delivery columns, no JSON to parse.
# Help and error replies, and erasure requests, are never retrieved (the turn index leaves
# them out too: migration 0013): a retrieved turn carries them as no reply, an erasure request
# as no words either.
_UNRETRIEVED_INTENTS = ", ".join(f"'{intent}'" for intent in sorted(UNRETRIEVED_REPLY_INTENTS))
_ERASURE_INTENTS = ", ".join(f"'{intent}'" for intent in sorted(MEMORY_ERASURE_INTENTS))


def turn_text_columns(job_count: str = "json_array_length(job_refs)") -> str:
    """Return the columns of a turn that make a :class:`TurnText`, in its order;
    ``job_count`` counts the turn's job references (the dialect's JSON function)."""
    return (
        f"seq, speaker, created_at,"
        f" CASE WHEN intent IN ({_ERASURE_INTENTS}) THEN '' ELSE user_text END,"
        f" CASE WHEN intent IN ({_UNRETRIEVED_INTENTS}) THEN NULL ELSE assistant_text END,"
        f" {job_count} > 0"
    )


_TURN_TEXT_COLUMNS = turn_text_columns()


class TurnText(NamedTuple):
    """A turn as retrieval reads it: what its score and its rendered item need, no model.

    Building a :class:`~agent.memory.schemas.ConversationTurn` costs more than scoring it, and
    retrieval reads a few hundred turns per packet, most of which never make it into the
    packet.

    Attributes:
        seq: the turn's position in its session.
        speaker: who said it (``None``: the user of a private chat).
        created_at: when it was recorded.
        user_text: what was said.
        assistant_text: the bot's answer, if any (``None`` for a help or error text).
        has_jobs: whether the turn carries job references.
    """

    seq: int
    speaker: str | None
    created_at: datetime
    user_text: str
    assistant_text: str | None
    has_jobs: bool


class WordCounts(NamedTuple):
    """In how many turns words occur, as of one moment of the turn log.

    Attributes:
        high_water: the turn log's high-water mark (the largest row id of a turn): it grows
            by one with each turn written, so two marks bound how many turns came between
            them.
        counts: each word's number of turns, up to the cap asked for plus one.
    """

    high_water: int
    counts: dict[str, int]


#: A turn search ranks every query word over the session's last this many turns ... (bm25()
#: scores every match: 500 cost 9% more per packet at 100,000 turns, 2,000 up to 4x the matches,
#: for the same bench/memory_quality.py recall)
RECENT_TURNS = 250
#: One search of the turn search: the BM25 of FTS5's matches inside one session's block of index
#: row ids, the best first (ties: the newer turn), with a LIMIT. Parameters: MATCH expression, low
#: and high row id, limit. bm25() is a column sorted by SQLite, not FTS5's ``ORDER BY rank``:
#: FTS5 prepares a statement for that sort at every search (a third of a search's time).
_TURN_HITS_SQL = (
    "SELECT rowid AS hit_rowid, bm25(conversation_turns_fts, 0.0, 0.5, 1.0, 1.0) AS score"
    " FROM conversation_turns_fts WHERE conversation_turns_fts MATCH ? AND rowid BETWEEN ? AND ?"
    " ORDER BY score, hit_rowid DESC LIMIT ?"
)


def turn_search_sql(queries: Sequence[int]) -> str:
    """Return the turn search statement: one ranked search (``_TURN_HITS_SQL``) for each of
    ``queries`` (the index of the query it searches for), as one ``UNION ALL``.

    The best ``limit`` hits of each query (ties: the newer turn) are kept, and only they are
    read, by the turns' primary key (session_id, seq), as :class:`TurnText` columns with the
    query's index first and the score last. Parameters: each search's four, then the session
    id, the session's row id base, and ``limit``.
    """
    searches = " UNION ALL ".join(
        f"SELECT {int(query)} AS query, * FROM ({_TURN_HITS_SQL})" for query in queries
    )
    return (
        f"SELECT hit.query, {_TURN_TEXT_COLUMNS}, hit.score FROM"
        " (SELECT *, row_number() OVER"
        "   (PARTITION BY query ORDER BY score, hit_rowid DESC) AS place"
        f"  FROM ({searches})) AS hit"
        " JOIN conversation_turns ON conversation_turns.session_id = ?"
        " AND conversation_turns.seq = hit.hit_rowid - ?"
        " WHERE hit.place <= ? ORDER BY hit.query, hit.place"
    )


#: ... and, over the turns before them, the words found in at most this many of those.
OLD_WORD_TURNS = 100


def _row_to_turn_text(row: Row, first: int = 0) -> TurnText:
    """Map the :data:`_TURN_TEXT_COLUMNS` of a row, from its column ``first`` on, to a
    :class:`TurnText`."""
    return TurnText(
        row[first],
        row[first + 1],
        from_db_time(row[first + 2]),
        row[first + 3],
        row[first + 4],
        bool(row[first + 5]),
    )


class SqliteTurnSearch:
    """The retrieval reads of the SQLite
    :class:`~agent.memory.conversation_store.ConversationStore`."""

    #: The :class:`TurnText` columns (:func:`turn_text_columns`) in this dialect.
    TURN_TEXT_COLUMNS = _TURN_TEXT_COLUMNS
    #: A subquery of the seqs of one parameter (:meth:`seqs_param`).
    SEQS = "SELECT value FROM json_each(?)"

    @staticmethod
    def seqs_param(seqs: list[int]) -> Any:
        """Return the one parameter that carries ``seqs`` to :attr:`SEQS`."""
        return orjson.dumps(seqs)

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
        """Return, for each of ``queries``, the session's turns that best match it (FTS5 BM25).

        Each query is user text: it is reduced to its words, each quoted, so that FTS5 query
        syntax in it (quotes, ``*``, ``NEAR``, ``OR``, column filters) is searched for as plain
        words and never parsed. Each list is best first (ties: the newer turn), at most
        ``limit`` long; the score is BM25's (lower is better); a word naming the speaker counts
        half as much as one in the text.

        The cost does not grow with the history (migration 0007: a session's turns are one
        rowid range of the index, ``(session rowid << 32) + seq``). Two ranked searches per
        query, each restricted by ``rowid BETWEEN`` and not by a MATCH term (FTS5's bm25() reads
        the whole posting list of every phrase of its query to count its documents):

        * the session's last ``recent`` turns, for every word;
        * the turns before them, for the words found in at most ``old_word_turns`` of those
          turns only (counted with a bounded ``LIMIT``): a word said once 5,000 turns ago is
          found, and a word said throughout the session, which would make the ranking read
          every turn, is not searched for there (it says little about which old turn is meant).

        Both are BM25 of the same index, so their scores compare: the best ``limit`` of both
        reach the join, which reads turns by primary key. Every search of every query is one
        statement (:func:`turn_search_sql`), and a turn is read as a :class:`TurnText`, not a
        model.
        """
        found: list[list[tuple[TurnText, float]]] = [[] for _ in queries]
        asked = [search_words(words) for words in queries]
        if limit < 1 or not any(asked):
            return found
        every = list(dict.fromkeys(word for words in asked for word in words))
        session = self._session_block(conn, session_id, every, recent, old_word_turns)
        if session is None:
            return found
        base, first_recent, old = session
        columns = "{speaker user_text assistant_text}"
        searched: list[int] = []
        params: list[Any] = []
        for index, words in enumerate(asked):
            if not words:
                continue
            ranges = [(words, base + first_recent, base + 0xFFFFFFFF)]
            rare = [word for word in words if 0 < old.get(word, 0) <= old_word_turns]
            if rare:
                ranges.append((rare, base + 1, base + first_recent - 1))
            for chosen, low, high in ranges:
                searched.append(index)
                query = " OR ".join(f'"{word}"' for word in chosen)
                params += [f"{columns} : ({query})", low, high, limit]
        params += [session_id, base, limit]
        for row in conn.fetchall(turn_search_sql(searched), params):
            found[row[0]].append((_row_to_turn_text(row, 1), float(row[7])))
        return found

    def _session_block(
        self, conn: Snapshot, session_id: str, words: list[str], recent: int, cap: int
    ) -> tuple[int, int, dict[str, int]] | None:
        """Return the session's block of index row ids (its base), the seq of the first of its
        last ``recent`` turns, and in how many of the turns before that each word occurs, up to
        ``cap + 1``; ``None`` for a session without turns.

        ``words`` are lowercased words (:func:`search_words`); one statement for all of it.
        """
        one = (
            ", (SELECT count(*) FROM (SELECT 1 FROM conversation_turns_fts"
            "  WHERE conversation_turns_fts MATCH ?"
            "  AND rowid BETWEEN s.base + 1 AND s.base + s.top - ? LIMIT ?))"
        )
        params: list[Any] = []
        for word in words:
            params += [f'{{speaker user_text assistant_text}} : ("{word}")', recent, cap + 1]
        row = conn.fetchone(
            "SELECT s.base, s.top" + one * len(words) + " FROM"
            " (SELECT rowid << 32 AS base, (SELECT max(seq) FROM conversation_turns"
            "   WHERE session_id = ?) AS top FROM conversation_sessions WHERE session_id = ?) AS s",
            [*params, session_id, session_id],
        )
        if row is None or row[1] is None:
            return None
        base, top, *counts = row
        first_recent = max(int(top) - recent + 1, 1)
        return int(base), first_recent, dict(zip(words, map(int, counts), strict=True))

    def word_counts(self, conn: Snapshot, words: list[str], *, cap: int) -> WordCounts:
        """Return in how many turns (of all sessions) each word occurs, counting up to
        ``cap + 1``, and the turn log's high-water mark.

        One query; each count stops at ``cap + 1`` matches (the ``LIMIT`` inside), so its cost
        is bounded whatever the history's length. Words are quoted (:func:`match_query`); a
        word with nothing to search for counts 0.
        """
        queries = [match_query(word) for word in words]
        asked = [(word, query) for word, query in zip(words, queries, strict=True) if query]
        one = (
            "(SELECT count(*) FROM (SELECT 1 FROM conversation_turns_fts"
            " WHERE conversation_turns_fts MATCH ? LIMIT ?))"
        )
        params: list[Any] = []
        for _, query in asked:
            params += [f"{{speaker user_text assistant_text}} : ({query})", cap + 1]
        [(high_water, *counts)] = conn.fetchall(
            ", ".join(["SELECT coalesce((SELECT max(rowid) FROM conversation_turns), 0)"]
                      + [one] * len(asked)),
            params,
        )  # fmt: skip
        found = dict.fromkeys(words, 0)
        found.update((word, int(count)) for (word, _), count in zip(asked, counts, strict=True))
        return WordCounts(int(high_water), found)

    def get_turn_texts(self, conn: Snapshot, session_id: str, seqs: list[int]) -> list[TurnText]:
        """Return the turns of a session with these seqs (those that exist), in seq order.

        One query through the primary key, for the neighbours of retrieved turns; each turn is
        read as a :class:`TurnText`, not a model.
        """
        if not seqs:
            return []
        rows = conn.fetchall(
            f"SELECT {self.TURN_TEXT_COLUMNS} FROM conversation_turns WHERE session_id = ?"
            f" AND seq IN ({self.SEQS}) ORDER BY seq",
            (session_id, self.seqs_param(sorted(set(seqs)))),
        )
        return [_row_to_turn_text(row) for row in rows]
