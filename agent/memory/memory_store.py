"""Long-term memory storage: one row per chat and key, with the sessions that stated it.

:class:`MemoryStore` is the protocol the lane depends on; :class:`SqliteMemoryStore` implements
it on the tables of migration 0004. As in the conversation store, write methods take the
transaction connection and never commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import aiosqlite
import orjson

from agent.memory.schemas import Memory, MemoryCandidate
from agent.utils import ids

__all__ = ["MemoryStore", "SqliteMemoryStore"]

_COLUMNS = (
    "memory_id, chat_id, kind, key, text, confidence, importance, access_count, status,"
    " created_at, updated_at, last_accessed_at"
)


class MemoryStore(Protocol):
    """**Protocol:** storage of long-term memories.

    Called by :func:`agent.memory.writer.write_if_worthy` inside a turn's transaction, and by
    the lane when it loads a chat's memories into its packets.
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

    async def active_for_chats(
        self, conn: Any, chat_ids: Sequence[int], *, per_chat: int
    ) -> dict[int, list[Memory]]:
        """Return the most important active memories of each chat."""
        ...


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


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
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]),
        last_accessed_at=datetime.fromisoformat(row["last_accessed_at"]),
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
        stamp = _iso(now)
        rows = await tx.execute_fetchall(
            f"INSERT INTO memories ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 1,"
            " CASE WHEN ? >= ? THEN 'active' ELSE 'candidate' END, ?, ?, ?)"
            " ON CONFLICT (chat_id, key) DO UPDATE SET"
            f" status = CASE WHEN {_NEW_CONFIDENCE} >= ? THEN 'active' ELSE memories.status END,"
            f" confidence = {_NEW_CONFIDENCE},"
            " text = excluded.text, kind = excluded.kind,"
            " importance = max(memories.importance, excluded.importance),"
            " access_count = memories.access_count + 1,"
            " updated_at = excluded.updated_at, last_accessed_at = excluded.last_accessed_at"
            f" RETURNING {_COLUMNS}",
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
            ),
        )
        memory = _row_to_memory(next(iter(rows)))
        await tx.execute(
            "INSERT INTO memory_sources (memory_id, session_id, seq) VALUES (?, ?, ?)"
            " ON CONFLICT DO NOTHING",
            (memory.memory_id, session_id, seq),
        )
        return memory

    async def active_for_chats(
        self, conn: aiosqlite.Connection, chat_ids: Sequence[int], *, per_chat: int
    ) -> dict[int, list[Memory]]:
        """Return the most important active memories of each chat (one query)."""
        found: dict[int, list[Memory]] = {chat_id: [] for chat_id in chat_ids}
        if not chat_ids:
            return found
        rows = await conn.execute_fetchall(
            f"SELECT {_COLUMNS} FROM (SELECT *, row_number() OVER ("
            "   PARTITION BY chat_id ORDER BY importance DESC, updated_at DESC) AS rank"
            "  FROM memories WHERE status = 'active'"
            "  AND chat_id IN (SELECT value FROM json_each(?)))"
            " WHERE rank <= ? ORDER BY chat_id, rank",
            (orjson.dumps(list(chat_ids)), per_chat),
        )
        for row in rows:
            found[row["chat_id"]].append(_row_to_memory(row))
        return found
