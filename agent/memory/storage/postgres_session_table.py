"""The sessions table on PostgreSQL (``agent/db/schema_postgres.sql``, migration 0002).

:class:`PostgresSessionTable` is :class:`~agent.memory.storage.session_table.SqliteSessionTable`
with the three statements whose SQL is SQLite's own replaced: the lists of ids go as a
PostgreSQL ``text[]`` parameter (``= ANY(?)``, ``unnest``) instead of a JSON text read by
``json_each``, and the status inside the state JSON is set with ``jsonb_set``. Every other
statement is shared (the ``?`` placeholders are translated by :mod:`agent.db.postgres`).

A statement the server refuses inside a write (a second open session of a chat) aborts the
whole transaction on PostgreSQL: :meth:`agent.db.postgres.PostgresDatabase.write` reports it
as :class:`~agent.errors.StorageError`, as the SQLite table does from inside the work. Tested
by the conformance suite (``tests/test_store_conformance.py``, ``postgres`` parameter).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agent.db import Transaction
from agent.memory.schemas import SessionStatus
from agent.memory.storage.session_table import SqliteSessionTable

__all__ = ["PostgresSessionTable"]


class PostgresSessionTable(SqliteSessionTable):
    """The sessions part of a PostgreSQL
    :class:`~agent.memory.conversation_store.ConversationStore`."""

    async def existing_session_ids(self, conn: Transaction, session_ids: list[str]) -> set[str]:
        """Return which of ``session_ids`` are sessions in the database (one query)."""
        rows = await conn.fetchall(
            "SELECT session_id FROM conversation_sessions WHERE session_id = ANY(?)",
            (list(session_ids),),
        )
        return {row["session_id"] for row in rows}

    async def set_status(self, tx: Transaction, status: SessionStatus, *, now: datetime) -> int:
        """Set the status of every open session (and inside its state JSON); return the count."""
        return await tx.execute(
            "UPDATE conversation_sessions SET status = ?,"
            " state = jsonb_set(state::jsonb, '{status}', to_jsonb(?::text))::text"
            " WHERE closed_at IS NULL AND status != ?",
            (status, status, status),
        )

    async def first_words(self, conn: Transaction, session_ids: Sequence[str]) -> dict[str, str]:
        """Return the first user message of each of ``session_ids`` that has one (one query)."""
        rows = await conn.fetchall(
            "SELECT s.value AS session_id, (SELECT t.user_text FROM conversation_turns AS t"
            "  WHERE t.session_id = s.value AND t.user_text != '' ORDER BY t.seq LIMIT 1)"
            " AS user_text FROM unnest(?::text[]) AS s (value)",
            (list(session_ids),),
        )
        return {row["session_id"]: row["user_text"] for row in rows if row["user_text"]}
