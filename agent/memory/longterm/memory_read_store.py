"""The reads of the long-term memory store: what a chat keeps, as rows and by search.

:class:`SqliteMemoryReads` is the read half of
:class:`~agent.memory.longterm.memory_store.SqliteMemoryStore` (the tables of ``schema.sql``
migration 0011): the packet's memories of several chats, the ``/facts`` listing, the state at a
moment, the search, the consolidator's list and the relations between memories. Its one row
mapper, :func:`row_to_memory`, and the columns it reads are the write half's too. A statement
that differs between SQL dialects takes it from a class attribute
(:class:`~agent.memory.storage.id_lists.SqliteIdLists`, :attr:`SqliteMemoryReads.CHAT_IDS_TABLE`),
which :class:`~agent.memory.longterm.postgres_memory_store.PostgresMemoryStore` overrides.
Contract: ``tests/test_store_conformance.py``; the SQLite details: ``tests/test_memory_store.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agent.db import Row, Snapshot, Transaction
from agent.db.search import scoped_searches
from agent.memory.schemas import Memory, MemoryRelation
from agent.memory.storage.id_lists import SqliteIdLists
from agent.utils.timestamps import from_db_time, to_db_time

__all__ = ["CURRENT", "INSERT_COLUMNS", "READ_COLUMNS", "SqliteMemoryReads", "row_to_memory"]

#: The columns a new memory is inserted with.
INSERT_COLUMNS = (
    "memory_id, chat_id, kind, subject, attribute, key, text, origin, confidence, importance,"
    " access_count, status, valid_from, valid_until, created_at, updated_at, last_accessed_at"
)
#: What a read returns: the inserted columns plus those consolidation maintains.
READ_COLUMNS = INSERT_COLUMNS + ", decay, archived_at"
#: A memory still true (not superseded): the current value of its slot.
CURRENT = "valid_until IS NULL"


def row_to_memory(row: Row) -> Memory:
    """Return the memory of a row of :data:`READ_COLUMNS`."""
    return Memory(
        memory_id=row["memory_id"],
        chat_id=row["chat_id"],
        kind=row["kind"],
        subject=row["subject"],
        attribute=row["attribute"],
        key=row["key"],
        text=row["text"],
        origin=row["origin"],
        confidence=row["confidence"],
        importance=row["importance"],
        access_count=row["access_count"],
        status=row["status"],
        valid_from=from_db_time(row["valid_from"]),
        valid_until=from_db_time(row["valid_until"]),
        created_at=from_db_time(row["created_at"]),
        updated_at=from_db_time(row["updated_at"]),
        last_accessed_at=from_db_time(row["last_accessed_at"]),
        decay=row["decay"],
        archived_at=from_db_time(row["archived_at"]),
    )


class SqliteMemoryReads(SqliteIdLists):
    """The reads of the :class:`~agent.memory.longterm.memory_store.MemoryStore` on SQLite."""

    #: A table ``s`` whose column ``value`` holds the chat ids of :meth:`ids_param`.
    CHAT_IDS_TABLE = SqliteIdLists.IDS_TABLE

    async def current_for_chats(
        self, conn: Transaction, chat_ids: Sequence[int], *, per_chat: int, past: int
    ) -> dict[int, list[Memory]]:
        """Return each chat's most important current memories (active ones first, then the
        unconfirmed), then its ``past`` most recently superseded active ones (one query; what
        the chat's packets carry)."""
        found: dict[int, list[Memory]] = {chat_id: [] for chat_id in chat_ids}
        if not chat_ids:
            return found
        rows = await conn.fetchall(
            f"SELECT {READ_COLUMNS} FROM (SELECT *, row_number() OVER ("
            "   PARTITION BY chat_id, valid_until IS NULL"
            "   ORDER BY status != 'active', importance * decay DESC, valid_until DESC,"
            "   updated_at DESC) AS rank"
            "  FROM memories WHERE (status = 'active'"
            f"   OR (status = 'candidate' AND {CURRENT}))"
            f"  AND chat_id IN (SELECT s.value FROM {self.CHAT_IDS_TABLE})) AS ranked"
            " WHERE rank <= CASE WHEN valid_until IS NULL THEN ? ELSE ? END"
            " ORDER BY chat_id, valid_until IS NOT NULL, rank",
            (self.ids_param(chat_ids), per_chat, past),
        )
        for row in rows:
            found[row["chat_id"]].append(row_to_memory(row))
        return found

    async def listing(self, conn: Transaction, chat_id: int, *, history: bool) -> list[Memory]:
        """Return what the chat keeps, not archived: current memories (with ``history``, the
        superseded ones too), by kind, then oldest first."""
        rows = await conn.fetchall(
            f"SELECT {READ_COLUMNS} FROM memories WHERE chat_id = ? AND status != 'archived'"
            + ("" if history else f" AND {CURRENT}")
            + " ORDER BY kind, valid_from, created_at, memory_id",
            (chat_id,),
        )
        return [row_to_memory(row) for row in rows]

    async def as_of(self, conn: Transaction, chat_id: int, moment: datetime) -> list[Memory]:
        """Return the chat's active memories that were true at ``moment`` (valid from it or
        before, and not yet ended at it), oldest first."""
        stamp = to_db_time(moment)
        rows = await conn.fetchall(
            f"SELECT {READ_COLUMNS} FROM memories WHERE chat_id = ? AND status = 'active'"
            " AND valid_from <= ? AND (valid_until IS NULL OR valid_until > ?)"
            " ORDER BY valid_from, memory_id",
            (chat_id, stamp, stamp),
        )
        return [row_to_memory(row) for row in rows]

    async def relations(self, conn: Transaction, memory_id: str) -> list[MemoryRelation]:
        """Return the relations of a memory, from it and to it, oldest first."""
        rows = await conn.fetchall(
            "SELECT memory_id, relation, other_id, created_at FROM memory_relations"
            " WHERE memory_id = ? UNION SELECT memory_id, relation, other_id, created_at"
            " FROM memory_relations WHERE other_id = ?"
            " ORDER BY created_at, memory_id, relation, other_id",
            (memory_id, memory_id),
        )
        return [
            MemoryRelation(
                memory_id=row["memory_id"],
                relation=row["relation"],
                other_id=row["other_id"],
                created_at=from_db_time(row["created_at"]),
            )
            for row in rows
        ]

    def search(
        self, conn: Snapshot, chat_id: int, queries: Sequence[str], *, limit: int
    ) -> list[list[tuple[Memory, float]]]:
        """Return, for each of ``queries``, the chat's current active memories that best match
        it (FTS5 BM25, lower is better), best first; all the queries in one statement.

        Each query is reduced to quoted words (:func:`scoped_searches`), so FTS5 syntax in it is
        searched for, never parsed. The chat's key is in the MATCH: other chats cost nothing.
        """
        found: list[list[tuple[Memory, float]]] = [[] for _ in queries]
        if limit < 1:
            return found
        scope = "chat_" + str(chat_id).replace("-", "m")
        sql, params = scoped_searches(
            f"SELECT ? AS query, {READ_COLUMNS}, hit.score AS score FROM memories"
            " JOIN (SELECT rowid AS hit_rowid, bm25(memories_fts, 0.0, 1.0, 1.0, 1.0) AS score"
            "       FROM memories_fts WHERE memories_fts MATCH ?"
            "       ORDER BY score, hit_rowid LIMIT ?) AS hit"
            " ON memories.rowid = hit.hit_rowid"
            f" WHERE memories.status = 'active' AND memories.{CURRENT}",
            f'chat_key : "{scope}" AND {{subject attribute text}}',
            queries,
            limit,
        )
        if not sql:
            return found
        for row in conn.fetchall(sql + " ORDER BY query, score, key", params):
            found[row["query"]].append((row_to_memory(row), float(row["score"])))
        return found

    async def unarchived(self, conn: Transaction) -> list[Memory]:
        """Return every current memory not archived, by chat then key (for consolidation)."""
        rows = await conn.fetchall(
            f"SELECT {READ_COLUMNS} FROM memories WHERE status != 'archived' AND {CURRENT}"
            " ORDER BY chat_id, key"
        )
        return [row_to_memory(row) for row in rows]
