"""The sessions table on PostgreSQL (``agent/db/schema_postgres.sql``, migration 0002).

:class:`PostgresSessionTable` is :class:`~agent.memory.storage.session_table.SqliteSessionTable`
with PostgreSQL's dialect where the SQL differs: lists of ids go as a ``text[]``
(:class:`~agent.memory.storage.id_lists.PostgresIdLists`) and the status inside the state JSON is
set with ``jsonb_set``; "differs" is ``IS DISTINCT FROM``; texts are joined by ``string_agg``.
Every statement is otherwise shared (the ``?`` placeholders are translated by
:mod:`agent.db.postgres`).

A statement the server refuses inside a write (a second open session of a chat) aborts the
whole transaction on PostgreSQL: :meth:`agent.db.postgres.PostgresDatabase.write` reports it
as :class:`~agent.errors.StorageError`, as the SQLite table does from inside the work. Tested
by the conformance suite (``tests/test_store_conformance.py``, ``postgres`` parameter).
"""

from __future__ import annotations

from agent.memory.storage.id_lists import PostgresIdLists
from agent.memory.storage.session_table import SqliteSessionTable

__all__ = ["PostgresSessionTable"]


class PostgresSessionTable(PostgresIdLists, SqliteSessionTable):
    """The sessions part of a PostgreSQL
    :class:`~agent.memory.conversation_store.ConversationStore`."""

    STATE_WITH_STATUS = "jsonb_set(state::jsonb, '{status}', to_jsonb(?::text))::text"
    DIFFERS = "IS DISTINCT FROM"
    JOIN_TEXTS = "string_agg"
    ACTIVE_JOB_COUNT = "json_array_length(state::json -> 'active_job_refs')"
    CHECKPOINT_UNKNOWN_INDEX = ""
    WITH_JOBS_INDEX = ""
