"""Long-term memories on PostgreSQL (``agent/db/schema_postgres.sql``, migration 0005).

:class:`PostgresMemoryStore` is :class:`~agent.memory.longterm.memory_store.SqliteMemoryStore`
with PostgreSQL's dialect where the SQL differs: lists of memory ids go as a ``text[]`` and of
chat ids as a ``bigint[]`` (:class:`~agent.memory.storage.id_lists.PostgresIdLists`), the larger
of two values is ``GREATEST`` (SQLite's two-argument ``max``), and the search is its own. The
slot rules, the sources and the relations are the SQLite store's statements; the exact-erasure
triggers of SQLite's migration 0011 are PL/pgSQL row triggers there.

The search fetches the chat's memories that hold a query word (``tsquery`` over the GIN index of
the ``search`` column: subject, attribute and text) and ranks them with FTS5's BM25 from the
whole index's statistics (:mod:`agent.db.bm25`): per query the ``limit`` best rows of the chat,
ties by memory id (time-ordered, as FTS5's rowid), then only the current active ones, by score
and key, as the SQLite statement does. Tested by the conformance suite
(``tests/test_store_conformance.py``, ``postgres`` parameter).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.db import Snapshot
from agent.db.bm25 import best, index_statistics, lexemes, tsquery, word_counts
from agent.db.search import search_words
from agent.memory.longterm.memory_read_store import READ_COLUMNS, row_to_memory
from agent.memory.longterm.memory_store import SqliteMemoryStore
from agent.memory.schemas import Memory
from agent.memory.storage.id_lists import PostgresIdLists

__all__ = ["PostgresMemoryStore"]


class PostgresMemoryStore(PostgresIdLists, SqliteMemoryStore):
    """The :class:`~agent.memory.longterm.memory_store.MemoryStore` on PostgreSQL."""

    GREATEST = "GREATEST"
    CHAT_IDS_TABLE = "unnest(?::bigint[]) AS s (value)"

    def search(
        self, conn: Snapshot, chat_id: int, queries: Sequence[str], *, limit: int
    ) -> list[list[tuple[Memory, float]]]:
        """Return, for each of ``queries``, the chat's current active memories that best match
        it (BM25 as FTS5 computes it, lower is better), best first.

        Each query is reduced to its words (:func:`agent.db.search.search_words`); a query
        without one finds nothing. One statement for the candidates of every query, two for
        the statistics.
        """
        found: list[list[tuple[Memory, float]]] = [[] for _ in queries]
        words_of = [lexemes(search_words(query)) for query in queries]
        every = list(dict.fromkeys(word for words in words_of for word in words))
        if limit < 1 or not every:
            return found
        rows = conn.fetchall(
            f"SELECT {READ_COLUMNS}, search_length FROM memories"
            " WHERE chat_id = ? AND search @@ ?::tsquery ORDER BY memory_id",
            (chat_id, tsquery(every)),
        )
        statistics = index_statistics(conn, "memories", every)
        candidates = [
            (row, word_counts(row["subject"], row["attribute"], row["text"]), row["search_length"])
            for row in rows
        ]
        for index, words in enumerate(words_of):
            hits = [
                (row_to_memory(row), score)
                for row, score in best(statistics, words, candidates, limit)
                if row["status"] == "active" and row["valid_until"] is None
            ]
            found[index] = sorted(hits, key=lambda hit: (hit[1], hit[0].key))
        return found
