"""Long-term memories on PostgreSQL (``agent/db/schema_postgres.sql``, migration 0005).

:class:`PostgresMemoryStore` is :class:`~agent.memory.longterm.memory_store.SqliteMemoryStore`
with PostgreSQL's dialect where the SQL differs: lists of memory ids go as a ``text[]`` and of
chat ids as a ``bigint[]`` (:class:`~agent.memory.storage.id_lists.PostgresIdLists`), the larger
of two values is ``GREATEST`` (SQLite's two-argument ``max``), and the search is its own. The
slot rules, the sources and the relations are the SQLite store's statements; the exact-erasure
triggers of SQLite's migration 0011 are PL/pgSQL row triggers there.

The search index holds what SQLite's ``memories_fts`` holds (:mod:`agent.db.bm25`): the tokens
FTS5's tokenizer (Porter stems) makes of subject, attribute and text, in the ``search``
tsvector, and ``search_length``, those with the chat key's (the scope column FTS5 counts in a
row's size). The store writes both after each statement that writes those columns (a memory
recorded, reinforced or merged into), in the same transaction: the tokens come from Python.
The search fetches the chat's memories that hold a query token (GIN) with their occurrences
and ranks them with FTS5's BM25 from the whole index's statistics: per query the ``limit`` best
rows of the chat, ties by memory id (time-ordered, as FTS5's rowid), then only the current
active ones, by score and key, as the SQLite statement does. Tested by the conformance suite
(``tests/test_store_conformance.py``, ``postgres`` parameter).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agent.db import Snapshot, Transaction
from agent.db.bm25 import search_rows, tsvector
from agent.db.search import index_tokens
from agent.memory.longterm.memory_read_store import READ_COLUMNS, row_to_memory
from agent.memory.longterm.memory_store import SqliteMemoryStore
from agent.memory.schemas import Memory, MemoryCandidate
from agent.memory.storage.id_lists import PostgresIdLists

__all__ = ["PostgresMemoryStore"]

class PostgresMemoryStore(PostgresIdLists, SqliteMemoryStore):
    """The :class:`~agent.memory.longterm.memory_store.MemoryStore` on PostgreSQL."""

    GREATEST = "GREATEST"
    CHAT_IDS_TABLE = "unnest(?::bigint[]) AS s (value)"

    async def record(
        self,
        tx: Transaction,
        chat_id: int,
        candidate: MemoryCandidate,
        *,
        source: tuple[str, int] | None,
        threshold: float,
        now: datetime,
    ) -> Memory | None:
        """As :meth:`SqliteMemoryStore.record`; the memory it made or reinforced is indexed."""
        memory = await super().record(
            tx, chat_id, candidate, source=source, threshold=threshold, now=now
        )
        if memory is not None:
            await _index(tx, memory)
        return memory

    async def merge(self, tx: Transaction, survivor: Memory, duplicates: Sequence[str]) -> None:
        """As :meth:`SqliteMemoryStore.merge`; the survivor's new text is indexed."""
        await super().merge(tx, survivor, duplicates)
        await _index(tx, survivor)

    def search(
        self, conn: Snapshot, chat_id: int, queries: Sequence[str], *, limit: int
    ) -> list[list[tuple[Memory, float]]]:
        """Return, for each of ``queries``, the chat's current active memories that best match
        it (BM25 as FTS5 computes it, lower is better), best first.

        Each query is reduced to its words (:func:`agent.db.search.search_words`), each word to
        its tokens; a query without one finds nothing (:func:`agent.db.bm25.search_rows`).
        """
        found: list[list[tuple[Memory, float]]] = []
        for hits in search_rows(
            conn, "memories", READ_COLUMNS, "memory_id", ("chat_id", chat_id), queries, limit
        ):
            current = [
                (row_to_memory(row), score)
                for row, score in hits
                if row["status"] == "active" and row["valid_until"] is None
            ]
            found.append(sorted(current, key=lambda hit: (hit[1], hit[0].key)))
        return found

async def _index(tx: Transaction, memory: Memory) -> None:
    """Write a memory's ``search`` and ``search_length`` as its columns now are (a row whose
    index is already so is not written again)."""
    chat_key = "chat_" + str(memory.chat_id).replace("-", "m")
    scope, *columns = index_tokens([chat_key, memory.subject, memory.attribute, memory.text])
    words = tsvector([("A", [token for column in columns for token in column])])
    length = len(scope) + sum(len(column) for column in columns)
    await tx.execute(
        "UPDATE memories SET search = ?::tsvector, search_length = ? WHERE memory_id = ?"
        " AND (search, search_length) IS DISTINCT FROM (?::tsvector, ?)",
        (words, length, memory.memory_id, words, length),
    )
