"""The turn log on PostgreSQL (``agent/db/schema_postgres.sql``, migration 0002).

:class:`PostgresTurnLog` is :class:`~agent.memory.storage.turn_log.SqliteTurnLog` with
PostgreSQL's dialect where the SQL differs: a turn's edits are ordered by ``edit_id`` (an
identity column, where SQLite uses ``rowid``), the last turns of several sessions are read with
one ``LATERAL`` join (SQLite: ``rowid``), and lists of ids go as a ``text[]``
(:class:`~agent.memory.storage.id_lists.PostgresIdLists`). The writes are shared: ``INSERT ...
ON CONFLICT (bot_id, update_id) WHERE update_id IS NOT NULL DO NOTHING`` is one statement in
both dialects (I3), and a refused insert (a duplicate seq) fails the whole write as
:class:`~agent.errors.StorageError` (:meth:`agent.db.postgres.PostgresDatabase.write`). Tested
by the conformance suite (``tests/test_store_conformance.py``, ``postgres`` parameter).
"""

from __future__ import annotations

from agent.memory.storage.id_lists import PostgresIdLists
from agent.memory.storage.turn_log import SqliteTurnLog

__all__ = ["PostgresTurnLog"]


class PostgresTurnLog(PostgresIdLists, SqliteTurnLog):
    """The turns part of a PostgreSQL
    :class:`~agent.memory.conversation_store.ConversationStore`."""

    EDIT_ORDER = "edit_id"
    RECENT_TURNS_OF = (
        "(session_id, seq) IN (SELECT s.value, u.seq FROM {ids}"
        "  CROSS JOIN LATERAL (SELECT t.seq FROM conversation_turns AS t"
        "   WHERE t.session_id = s.value ORDER BY t.seq DESC LIMIT ?) AS u)"
    )
