"""The summary version chain on PostgreSQL (``agent/db/schema_postgres.sql``, migration 0004).

:class:`PostgresSummaryStore` is :class:`~agent.memory.summaries.summary_store.SqliteSummaryStore`
with PostgreSQL's dialect where the SQL differs: lists of session ids go as a ``text[]``
(:class:`~agent.memory.storage.id_lists.PostgresIdLists`), and the search is its own. Every
write and read of the chain is the SQLite store's statement (the ``?`` placeholders are
translated by :mod:`agent.db.postgres`); a statement the server refuses (an erased session's
parent) fails the whole write as :class:`~agent.errors.StorageError`, as on SQLite.

The search index holds what SQLite's ``conversation_summaries_fts`` holds
(:mod:`agent.db.bm25`): the tokens FTS5's tokenizer (Porter stems) makes of the delta, in the
``search`` tsvector, and ``search_length``, those with the session id's (the scope column FTS5
counts in a row's size), for every row (a model summary's delta is empty). The store writes
both after each statement that adds a row or changes a delta, in the same transaction. The
search fetches the session's rows that hold a query token (GIN) with their occurrences and
ranks them with FTS5's BM25 from the whole index's statistics, so both backends find and
order the same deltas: at most ``limit`` per query, best first, ties by ``summary_id`` (FTS5's
rowid), and then only the completed extractive ones are kept, as the SQLite statement does.
Tested by the conformance suite (``tests/test_store_conformance.py``, ``postgres`` parameter).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agent.db import Snapshot, Transaction
from agent.db.bm25 import search_rows, tsvector
from agent.db.search import index_tokens
from agent.memory.schemas import SummaryVersion
from agent.memory.storage.id_lists import PostgresIdLists
from agent.memory.summaries.summary_store import SqliteSummaryStore, SummaryHit

__all__ = ["PostgresSummaryStore"]

#: What a search reads of a row.
_SEARCH_COLUMNS = "summary_id, from_seq, to_seq, delta, summarizer, status"


class PostgresSummaryStore(PostgresIdLists, SqliteSummaryStore):
    """The :class:`~agent.memory.summaries.summary_store.SummaryStore` on PostgreSQL."""

    async def append_extractive(
        self,
        tx: Transaction,
        session_id: str,
        *,
        version: int,
        from_seq: int,
        to_seq: int,
        text: str,
        delta: str,
        now: datetime,
    ) -> SummaryVersion:
        """As :meth:`SqliteSummaryStore.append_extractive`; the new row is indexed."""
        added = await super().append_extractive(
            tx, session_id, version=version, from_seq=from_seq, to_seq=to_seq, text=text,
            delta=delta, now=now,
        )  # fmt: skip
        await _index(tx, session_id, delta, "summary_id = ?", (added.summary_id,))
        return added

    async def revise_extractive(
        self, tx: Transaction, session_id: str, *, version: int, text: str, delta: str
    ) -> bool:
        """As :meth:`SqliteSummaryStore.revise_extractive`; the new delta is indexed."""
        kept = await super().revise_extractive(
            tx, session_id, version=version, text=text, delta=delta
        )
        if kept:
            await _index(
                tx, session_id, delta,
                "session_id = ? AND version = ? AND summarizer = 'extractive'",
                (session_id, version),
            )  # fmt: skip
        return kept

    async def begin_llm(
        self, tx: Transaction, parent: SummaryVersion, *, now: datetime
    ) -> SummaryVersion | None:
        """As :meth:`SqliteSummaryStore.begin_llm`; the new row (no delta) is indexed."""
        begun = await super().begin_llm(tx, parent, now=now)
        if begun is not None:
            await _index(tx, begun.session_id, "", "summary_id = ?", (begun.summary_id,))
        return begun

    def search(
        self, conn: Snapshot, session_id: str, queries: Sequence[str], limit: int
    ) -> list[list[SummaryHit]]:
        """BM25 over the session's extractive summary deltas, for each query.

        Each query is reduced to its words (:func:`agent.db.search.search_words`), each word to
        its tokens; a query without one finds nothing (:func:`agent.db.bm25.search_rows`). At
        most ``limit`` hits per query, in no particular order.
        """
        found = search_rows(
            conn, "conversation_summaries", _SEARCH_COLUMNS, "summary_id",
            ("session_id", session_id), queries, limit,
        )  # fmt: skip
        return [
            [
                SummaryHit(row["summary_id"], row["from_seq"], row["to_seq"], row["delta"], score)
                for row, score in hits
                if row["summarizer"] == "extractive" and row["status"] == "completed"
            ]
            for hits in found
        ]


async def _index(
    tx: Transaction, session_id: str, delta: str, where: str, params: tuple[object, ...]
) -> None:
    """Write the ``search`` and ``search_length`` of the rows ``where`` picks (a statement's
    condition with ``params``, the store's own) from their session id and ``delta``."""
    scope, tokens = index_tokens([session_id, delta])
    await tx.execute(
        f"UPDATE conversation_summaries SET search = ?::tsvector, search_length = ? WHERE {where}",
        (tsvector([("A", tokens)]), len(scope) + len(tokens), *params),
    )
