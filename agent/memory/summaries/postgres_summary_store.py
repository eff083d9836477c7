"""The summary version chain on PostgreSQL (``agent/db/schema_postgres.sql``, migration 0004).

:class:`PostgresSummaryStore` is :class:`~agent.memory.summaries.summary_store.SqliteSummaryStore`
with PostgreSQL's dialect where the SQL differs: lists of session ids go as a ``text[]``
(:class:`~agent.memory.storage.id_lists.PostgresIdLists`), and the search is its own. Every
write and read of the chain is the SQLite store's statement (the ``?`` placeholders are
translated by :mod:`agent.db.postgres`); a statement the server refuses (an erased session's
parent) fails the whole write as :class:`~agent.errors.StorageError`, as on SQLite.

The search fetches the session's rows that hold a query word (``tsquery`` over the GIN index of
the ``search`` column) and ranks them with FTS5's BM25 from the whole index's statistics
(:mod:`agent.db.bm25`), so both backends find and order the same deltas: at most ``limit`` per
query, best first, ties by ``summary_id`` (FTS5's rowid), and then only the completed extractive
ones are kept, as the SQLite statement does. Tested by the conformance suite
(``tests/test_store_conformance.py``, ``postgres`` parameter).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.db import Snapshot
from agent.db.bm25 import best, index_statistics, lexemes, tsquery, word_counts
from agent.db.search import search_words
from agent.memory.storage.id_lists import PostgresIdLists
from agent.memory.summaries.summary_store import SqliteSummaryStore, SummaryHit

__all__ = ["PostgresSummaryStore"]


class PostgresSummaryStore(PostgresIdLists, SqliteSummaryStore):
    """The :class:`~agent.memory.summaries.summary_store.SummaryStore` on PostgreSQL."""

    def search(
        self, conn: Snapshot, session_id: str, queries: Sequence[str], limit: int
    ) -> list[list[SummaryHit]]:
        """BM25 over the session's extractive summary deltas, for each query.

        Each query is reduced to its words (:func:`agent.db.search.search_words`); a query
        without one finds nothing. At most ``limit`` hits per query, in no particular order;
        one statement for the candidates of every query, two for the statistics.
        """
        found: list[list[SummaryHit]] = [[] for _ in queries]
        words_of = [lexemes(search_words(query)) for query in queries]
        every = list(dict.fromkeys(word for words in words_of for word in words))
        if not every:
            return found
        rows = conn.fetchall(
            "SELECT summary_id, from_seq, to_seq, delta, summarizer, status, search_length"
            " FROM conversation_summaries WHERE session_id = ? AND search @@ ?::tsquery"
            " ORDER BY summary_id",
            (session_id, tsquery(every)),
        )
        statistics = index_statistics(conn, "conversation_summaries", every)
        candidates = [(row, word_counts(row["delta"]), int(row["search_length"])) for row in rows]
        for index, words in enumerate(words_of):
            for row, score in best(statistics, words, candidates, limit):
                if row["summarizer"] == "extractive" and row["status"] == "completed":
                    found[index].append(
                        SummaryHit(
                            row["summary_id"], row["from_seq"], row["to_seq"], row["delta"], score
                        )
                    )
        return found
