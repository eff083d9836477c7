"""Long-term memory storage: one row per chat and key, with the sessions that stated it.

:class:`MemoryStore` is the protocol the lane depends on; :class:`SqliteMemoryStore` implements
it on the tables of migration 0004. As in the conversation store, write methods take the
transaction connection and never commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import aiosqlite
import orjson

from agent.memory.conversation_store import scoped_searches
from agent.memory.schemas import Memory, MemoryCandidate
from agent.utils import ids
from agent.utils.timestamps import from_db_time, to_db_time

__all__ = ["MemoryStore", "SqliteMemoryStore"]

_COLUMNS = (
    "memory_id, chat_id, kind, key, text, confidence, importance, access_count, status,"
    " created_at, updated_at, last_accessed_at"
)
# What a read returns: the inserted columns plus those consolidation maintains (0006).
_READ_COLUMNS = _COLUMNS + ", decay, archived_at"


class MemoryStore(Protocol):
    """**Protocol:** storage of long-term memories.

    Called by :func:`agent.memory.writer.write_if_worthy` inside a turn's transaction, and by
    the lane when it loads a chat's memories into its packets. ``search`` is synchronous, on a
    ``sqlite3`` connection: the retriever runs it in the database's searcher thread
    (:meth:`agent.db.database.Database.read`).
    """

    async def upsert(
        self,
        tx: Any,
        chat_id: int,
        candidate: MemoryCandidate,
        *,
        session_id: str,
        seq: int,
        threshold: float,
        now: datetime,
    ) -> Memory:
        """Insert a candidate or reinforce the chat's memory with the same key; return it."""
        ...

    async def remove_sources(self, tx: Any, session_id: str, seq: int) -> int:
        """Drop one turn as a source of the memories it stated (the turn was edited); a memory
        left with no source goes with it. Return how many memories lost the source."""
        ...

    async def active_for_chats(
        self, conn: Any, chat_ids: Sequence[int], *, per_chat: int
    ) -> dict[int, list[Memory]]:
        """Return the most important active memories of each chat."""
        ...

    def search(
        self, conn: sqlite3.Connection, chat_id: int, queries: Sequence[str], *, limit: int
    ) -> list[list[tuple[Memory, float]]]:
        """Return, for each query, the chat's active memories that best match it (BM25, lower
        is better)."""
        ...

    async def touch(self, tx: Any, memory_ids: Sequence[str], *, now: datetime) -> None:
        """Record that memories were retrieved into a packet (access count and time)."""
        ...

    async def unarchived(self, conn: Any) -> list[Memory]:
        """Return every memory not archived (for consolidation), by chat."""
        ...

    async def set_decay(
        self,
        tx: Any,
        decays: Sequence[tuple[str, float]],
        *,
        archive: Sequence[str],
        now: datetime,
    ) -> None:
        """Store new decay factors, and archive the memories in ``archive``."""
        ...

    async def merge(self, tx: Any, survivor: Memory, duplicates: Sequence[str]) -> None:
        """Replace ``duplicates`` by ``survivor`` (its new values), keeping their sources."""
        ...


def _row_to_memory(row: sqlite3.Row) -> Memory:
    return Memory(
        memory_id=row["memory_id"],
        chat_id=row["chat_id"],
        kind=row["kind"],
        key=row["key"],
        text=row["text"],
        confidence=row["confidence"],
        importance=row["importance"],
        access_count=row["access_count"],
        status=row["status"],
        created_at=from_db_time(row["created_at"]),
        updated_at=from_db_time(row["updated_at"]),
        last_accessed_at=from_db_time(row["last_accessed_at"]),
        decay=row["decay"],
        archived_at=from_db_time(row["archived_at"]),
    )


# The confidence after a candidate meets the memory with its key: the same text again is
# independent evidence (1 - (1-a)(1-b)); a different text replaces the old one outright.
_NEW_CONFIDENCE = (
    "CASE WHEN lower(memories.text) = lower(excluded.text)"
    " THEN 1.0 - (1.0 - memories.confidence) * (1.0 - excluded.confidence)"
    " ELSE excluded.confidence END"
)


class SqliteMemoryStore:
    """The :class:`MemoryStore` on SQLite."""

    async def upsert(
        self,
        tx: aiosqlite.Connection,
        chat_id: int,
        candidate: MemoryCandidate,
        *,
        session_id: str,
        seq: int,
        threshold: float,
        now: datetime,
    ) -> Memory:
        """Insert a candidate or reinforce the chat's memory with the same key; return it.

        The memory is ``active`` once its confidence reaches ``threshold``, ``candidate``
        before; the turn that said it is recorded as one of its sources.
        """
        stamp = to_db_time(now)
        rows = await tx.execute_fetchall(
            f"INSERT INTO memories ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 1,"
            " CASE WHEN ? >= ? THEN 'active' ELSE 'candidate' END, ?, ?, ?)"
            " ON CONFLICT (chat_id, key) DO UPDATE SET"
            f" status = CASE WHEN {_NEW_CONFIDENCE} >= ? THEN 'active' ELSE memories.status END,"
            # Said again: fresh (decay 1), and back from the archive once it is active again.
            f" archived_at = CASE WHEN {_NEW_CONFIDENCE} >= ? THEN NULL"
            " ELSE memories.archived_at END, decay = 1.0,"
            f" confidence = {_NEW_CONFIDENCE},"
            " text = excluded.text, kind = excluded.kind,"
            " importance = max(memories.importance, excluded.importance),"
            " access_count = memories.access_count + 1,"
            " updated_at = excluded.updated_at, last_accessed_at = excluded.last_accessed_at"
            f" RETURNING {_READ_COLUMNS}",
            (
                ids.memory_id(),
                chat_id,
                candidate.kind,
                candidate.key,
                candidate.text,
                candidate.confidence,
                candidate.importance,
                candidate.confidence,
                threshold,
                stamp,
                stamp,
                stamp,
                threshold,
                threshold,
            ),
        )
        memory = _row_to_memory(next(iter(rows)))
        await tx.execute(
            "INSERT INTO memory_sources (memory_id, session_id, seq) VALUES (?, ?, ?)"
            " ON CONFLICT DO NOTHING",
            (memory.memory_id, session_id, seq),
        )
        return memory

    async def remove_sources(self, tx: aiosqlite.Connection, session_id: str, seq: int) -> int:
        """Drop one turn as a source of the memories it stated; return how many lost it.

        Called when the turn's message was edited: what it said before is no evidence any
        more. A memory left with no source is deleted by the ``memory_sources_orphan``
        trigger (as after ``/forget``); one that another turn also stated stays.
        """
        cursor = await tx.execute(
            "DELETE FROM memory_sources WHERE session_id = ? AND seq = ?", (session_id, seq)
        )
        return cursor.rowcount

    async def active_for_chats(
        self, conn: aiosqlite.Connection, chat_ids: Sequence[int], *, per_chat: int
    ) -> dict[int, list[Memory]]:
        """Return the most important active memories of each chat (one query)."""
        found: dict[int, list[Memory]] = {chat_id: [] for chat_id in chat_ids}
        if not chat_ids:
            return found
        rows = await conn.execute_fetchall(
            f"SELECT {_READ_COLUMNS} FROM (SELECT *, row_number() OVER ("
            "   PARTITION BY chat_id ORDER BY importance * decay DESC, updated_at DESC) AS rank"
            "  FROM memories WHERE status = 'active'"
            "  AND chat_id IN (SELECT value FROM json_each(?)))"
            " WHERE rank <= ? ORDER BY chat_id, rank",
            (orjson.dumps(list(chat_ids)), per_chat),
        )
        for row in rows:
            found[row["chat_id"]].append(_row_to_memory(row))
        return found

    def search(
        self, conn: sqlite3.Connection, chat_id: int, queries: Sequence[str], *, limit: int
    ) -> list[list[tuple[Memory, float]]]:
        """Return, for each of ``queries``, the chat's active memories that best match it
        (FTS5 BM25), best first; all the queries in one statement.

        Each query is reduced to quoted words (:func:`scoped_searches`), so FTS5 syntax in it is
        searched for, never parsed. The chat's key is part of the MATCH expression, so other
        chats' memories cost nothing. The score is BM25's (lower is better).
        """
        found: list[list[tuple[Memory, float]]] = [[] for _ in queries]
        if limit < 1:
            return found
        scope = "chat_" + str(chat_id).replace("-", "m")
        sql, params = scoped_searches(
            f"SELECT ? AS query, {_READ_COLUMNS}, hit.score AS score FROM memories"
            " JOIN (SELECT rowid AS hit_rowid, bm25(memories_fts, 0.0, 1.0, 1.0) AS score"
            "       FROM memories_fts WHERE memories_fts MATCH ?"
            "       ORDER BY score, hit_rowid LIMIT ?) AS hit"
            " ON memories.rowid = hit.hit_rowid WHERE memories.status = 'active'",
            f'chat_key : "{scope}" AND {{key text}}',
            queries,
            limit,
        )
        if not sql:
            return found
        for row in conn.execute(sql + " ORDER BY query, score, key", params):
            found[row["query"]].append((_row_to_memory(row), float(row["score"])))
        return found

    async def touch(
        self, tx: aiosqlite.Connection, memory_ids: Sequence[str], *, now: datetime
    ) -> None:
        """Record that memories were retrieved into a packet: one more access, fresh decay."""
        if not memory_ids:
            return
        await tx.execute(
            "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?,"
            " decay = 1.0 WHERE memory_id IN (SELECT value FROM json_each(?))",
            (to_db_time(now), orjson.dumps(list(memory_ids))),
        )

    async def unarchived(self, conn: aiosqlite.Connection) -> list[Memory]:
        """Return every memory not archived, by chat then key (for consolidation)."""
        rows = await conn.execute_fetchall(
            f"SELECT {_READ_COLUMNS} FROM memories WHERE status != 'archived' ORDER BY chat_id, key"
        )
        return [_row_to_memory(row) for row in rows]

    async def set_decay(
        self,
        tx: aiosqlite.Connection,
        decays: Sequence[tuple[str, float]],
        *,
        archive: Sequence[str],
        now: datetime,
    ) -> None:
        """Store new decay factors (``(memory_id, decay)``), and archive those in ``archive``."""
        await tx.executemany(
            "UPDATE memories SET decay = ? WHERE memory_id = ?",
            [(decay, memory_id) for memory_id, decay in decays],
        )
        await tx.executemany(
            "UPDATE memories SET status = 'archived', archived_at = ? WHERE memory_id = ?",
            [(to_db_time(now), memory_id) for memory_id in archive],
        )

    async def merge(
        self, tx: aiosqlite.Connection, survivor: Memory, duplicates: Sequence[str]
    ) -> None:
        """Fold ``duplicates`` into ``survivor``: their sources become its, then they go.

        The survivor's row takes the values of ``survivor`` (text, confidence, importance,
        access count, status, last access). The duplicates' sources are re-pointed first, so
        a ``/forget`` of any session that stated one of them still finds the merged memory.
        """
        await tx.execute(
            "UPDATE memories SET text = ?, kind = ?, confidence = ?, importance = ?,"
            " access_count = ?, status = ?, decay = ?, updated_at = ?, last_accessed_at = ?"
            " WHERE memory_id = ?",
            (
                survivor.text,
                survivor.kind,
                survivor.confidence,
                survivor.importance,
                survivor.access_count,
                survivor.status,
                survivor.decay,
                to_db_time(survivor.updated_at),
                to_db_time(survivor.last_accessed_at),
                survivor.memory_id,
            ),
        )
        for memory_id in duplicates:
            await tx.execute(
                "INSERT INTO memory_sources (memory_id, session_id, seq)"
                " SELECT ?, session_id, seq FROM memory_sources WHERE memory_id = ?"
                " ON CONFLICT DO NOTHING",
                (survivor.memory_id, memory_id),
            )
            await tx.execute("DELETE FROM memories WHERE memory_id = ?", (memory_id,))
