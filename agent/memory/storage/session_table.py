"""The sessions table on SQLite: one row per conversation of a chat, with its state.

:class:`SqliteSessionTable` is the part of
:class:`~agent.memory.conversation_store.SqliteConversationStore` that reads and writes
``conversation_sessions`` (``schema.sql``, migration 0001) and the large fields of its state,
one row each in ``conversation_session_parts`` (migration 0019: a turn rewrites only those it
changed); the protocol it implements is
:class:`~agent.memory.conversation_store.ConversationStore`. Write methods take the
:class:`~agent.db.Transaction` of :meth:`agent.db.Database.write` and never commit. Tested in
``tests/test_conversation_store.py``, ``tests/test_session_state_parts.py`` and
``tests/test_store_conformance.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import orjson

from agent.db import Row, Transaction
from agent.errors import StorageError
from agent.memory.schemas import (
    ChatType,
    ConversationSession,
    SessionState,
    SessionStatus,
    dump_json,
)
from agent.memory.storage.id_lists import SqliteIdLists
from agent.utils.timestamps import from_db_time, to_db_time

__all__ = ["EncodedState", "SqliteSessionTable", "encode_state"]

_SESSION_COLUMNS = (
    "session_id, chat_id, chat_type, user_id, title, status, state, turn_count, last_seq,"
    " created_at, updated_at, closed_at"
)
# The state's fields kept as rows of conversation_session_parts (migration 0019): large, and
# most turns leave them as they were, so a turn rewrites only those whose value changed. The
# row's state keeps the others (``status`` and ``active_job_refs`` among them: the SQL of this
# module reads them there).
_PARTS = (
    "closed_loops",
    "decisions",
    "facts",
    "open_loops",
    "pending_clarifications",
    "proposals",
    "resolved_entities",
    "rolling_summary",
)
_SORTED = orjson.OPT_SORT_KEYS
# Sessions read per page at hydration.
_SESSION_PAGE = 256


class EncodedState(NamedTuple):
    """A session state as :meth:`SqliteSessionTable.save_state` stores it, made by
    :func:`encode_state` (pure: a worker thread makes it, off the event
    loop): the row's JSON, and each part that changed as ``(name, JSON, not empty)``."""

    row: bytes
    parts: tuple[tuple[str, str, bool], ...]


def encode_state(state: SessionState, before: SessionState | None = None) -> EncodedState:
    """Return ``state`` as :meth:`SqliteSessionTable.save_state` stores it (both backends).
    Pure, so a turn's worker thread makes it, off the event loop. With ``before`` (the state
    the database holds for the session), the parts equal to its own are left out: unchanged,
    they cost no statement."""
    document = state.model_dump(mode="json")
    parts = []
    for name in _PARTS:
        value = document.pop(name)
        if before is None or getattr(before, name) != getattr(state, name):
            parts.append((name, orjson.dumps(value, option=_SORTED).decode(), bool(value)))
    return EncodedState(dump_json(document), tuple(parts))


def _stored_state(row: Row) -> SessionState:
    """The state of a row: its ``state`` JSON with the fields kept as parts put back."""
    if row["state_parts"] is None:
        return SessionState.model_validate_json(row["state"])
    document = orjson.loads(row["state"])
    document.update(orjson.loads(f"{{{row['state_parts']}}}"))
    return SessionState.model_validate(document)


def _row_to_session(row: Row) -> ConversationSession:
    state = _stored_state(row)
    if state.status != row["status"]:
        # The status column is set in bulk at start and stop (set_status); it is authoritative.
        state = state.model_copy(update={"status": row["status"]})
    return ConversationSession(
        session_id=row["session_id"],
        chat_id=row["chat_id"],
        chat_type=row["chat_type"],
        user_id=row["user_id"],
        title=row["title"],
        status=row["status"],
        turn_count=row["turn_count"],
        last_seq=row["last_seq"],
        created_at=from_db_time(row["created_at"]),
        updated_at=from_db_time(row["updated_at"]),
        closed_at=from_db_time(row["closed_at"]),
        state=state,
    )


class SqliteSessionTable(SqliteIdLists):
    """The sessions part of the SQLite
    :class:`~agent.memory.conversation_store.ConversationStore`."""

    #: The ``state`` JSON with its ``status`` set to the parameter (SQLite's ``json_set``).
    STATE_WITH_STATUS = "json_set(state, '$.status', ?)"
    #: "Differs, NULL included" (SQLite's ``IS NOT``).
    DIFFERS = "IS NOT"
    #: The number of active jobs in the ``state`` JSON (as migration 0015's partial index has it).
    ACTIVE_JOB_COUNT = "json_array_length(state, '$.active_job_refs')"
    #: The aggregate that joins texts with a separator (SQLite's ``group_concat``).
    JOIN_TEXTS = "group_concat"
    #: The partial index of the unknown checkpoints, named for SQLite's planner.
    CHECKPOINT_UNKNOWN_INDEX = "INDEXED BY conversation_sessions_checkpoint_unknown"
    #: The partial index of the sessions with jobs, named for SQLite's planner (left to
    #: itself it scans every open session: 0.7 s over 100,000, in ``bench/start_time.py``).
    WITH_JOBS_INDEX = "INDEXED BY conversation_sessions_with_jobs"

    @property
    def _select_columns(self) -> str:
        """The session columns, and the session's parts as the members of one JSON object
        without its braces (``state_parts``; NULL: none)."""
        member = "'\"' || p.name || '\":' || p.value"
        return (
            f"{_SESSION_COLUMNS}, (SELECT {self.JOIN_TEXTS}({member}, ',')"
            " FROM conversation_session_parts AS p"
            " WHERE p.session_id = conversation_sessions.session_id) AS state_parts"
        )

    async def _select_sessions(
        self, conn: Transaction, where: str, params: tuple[Any, ...]
    ) -> list[ConversationSession]:
        """Return the sessions ``SELECT ... FROM conversation_sessions WHERE {where}`` finds.

        ``where`` is always a constant of this module or a dialect attribute of the table (with
        any ORDER BY / LIMIT), never user text.
        """
        rows = await conn.fetchall(
            f"SELECT {self._select_columns} FROM conversation_sessions WHERE {where}", params
        )
        return [_row_to_session(row) for row in rows]

    async def create_session(
        self,
        tx: Transaction,
        *,
        session_id: str,
        chat_id: int,
        chat_type: ChatType,
        user_id: int | None,
        title: str | None,
        now: datetime,
        closed_at: datetime | None = None,
    ) -> ConversationSession:
        """Insert a new session for ``chat_id`` and return it.

        Args:
            tx: the write transaction.
            session_id: the new session's id.
            chat_id: its chat.
            chat_type: the chat's type.
            user_id: who opened it, if known.
            title: the chat's title or the user's name.
            now: the creation time.
            closed_at: when the session was closed (an imported one); ``None``: it is open.

        Raises:
            StorageError: it is open and the chat already has an open session, or the insert
                failed.
        """
        session = ConversationSession(
            session_id=session_id,
            chat_id=chat_id,
            chat_type=chat_type,
            user_id=user_id,
            title=title,
            created_at=now,
            updated_at=now,
            closed_at=closed_at,
            state=SessionState(session_id=session_id),
        )
        try:
            await tx.execute(
                f"INSERT INTO conversation_sessions ({_SESSION_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session.session_id,
                    chat_id,
                    chat_type,
                    user_id,
                    title,
                    session.status,
                    dump_json(session.state),
                    0,
                    0,
                    to_db_time(now),
                    to_db_time(now),
                    to_db_time(closed_at),
                ),
            )
        except sqlite3.Error as exc:
            raise StorageError(f"create_session failed for chat {chat_id}: {exc}") from exc
        return session

    async def get_session(self, conn: Transaction, session_id: str) -> ConversationSession | None:
        """Return the session with this id, open or closed, or ``None``."""
        return next(iter(await self._select_sessions(conn, "session_id = ?", (session_id,))), None)

    async def open_session_for_chat(
        self, conn: Transaction, chat_id: int
    ) -> ConversationSession | None:
        """Return the chat's open session, or ``None``."""
        found = await self._select_sessions(conn, "chat_id = ? AND closed_at IS NULL", (chat_id,))
        return next(iter(found), None)

    async def existing_session_ids(self, conn: Transaction, session_ids: list[str]) -> set[str]:
        """Return which of ``session_ids`` are sessions in the database (one query)."""
        rows = await conn.fetchall(
            "SELECT session_id FROM conversation_sessions"
            f" WHERE session_id IN (SELECT s.value FROM {self.IDS_TABLE})",
            (self.ids_param(session_ids),),
        )
        return {row["session_id"] for row in rows}

    async def list_sessions(
        self,
        conn: Transaction,
        *,
        limit: int | None = 10,
        open_only: bool = False,
        status: SessionStatus | None = None,
        chat_id: int | None = None,
    ) -> list[ConversationSession]:
        """Return sessions, most recently active first.

        Args:
            conn: any connection.
            limit: at most this many; ``None`` for all.
            open_only: leave out sessions closed by ``/new``.
            status: only sessions with this status.
            chat_id: only sessions of this chat.
        """
        where: list[str] = []
        params: list[Any] = []
        if open_only:
            where.append("closed_at IS NULL")
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if chat_id is not None:
            where.append("chat_id = ?")
            params.append(chat_id)
        sql = f"SELECT {self._select_columns} FROM conversation_sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC, session_id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = await conn.fetchall(sql, params)
        return [_row_to_session(row) for row in rows]

    async def open_session_pages(
        self, conn: Transaction
    ) -> AsyncIterator[list[ConversationSession]]:
        """Yield the open sessions a page at a time, in ``session_id`` order."""
        after = ""
        while True:
            page = await self._select_sessions(
                conn,
                "closed_at IS NULL AND session_id > ? ORDER BY session_id LIMIT ?",
                (after, _SESSION_PAGE),
            )
            if page:
                yield page
            if len(page) < _SESSION_PAGE:
                return
            after = page[-1].session_id

    async def save_state(
        self,
        tx: Transaction,
        state: SessionState,
        *,
        last_seq: int,
        now: datetime,
        encoded: EncodedState | None = None,
    ) -> None:
        """Store a session's new state, its counters and its status (``encoded``: the state
        as :func:`encode_state` made it, off the event loop; else made here).

        The fields of ``_PARTS`` go to their rows of ``conversation_session_parts``, each
        written only if its value changed (:meth:`_save_parts`): a turn writes what it changed
        of the state, not the whole state.

        Raises:
            StorageError: the session does not exist or the update failed.
        """
        encoded = encode_state(state) if encoded is None else encoded
        sid = state.session_id
        try:
            changed = await tx.execute(
                "UPDATE conversation_sessions SET state = ?, status = ?,"
                " turn_count = ?, last_seq = ?, updated_at = ?, checkpoint_seq = NULL"
                " WHERE session_id = ?",
                (
                    encoded.row,
                    state.status,
                    state.turn_count,
                    last_seq,
                    to_db_time(now),
                    sid,
                ),
            )
            if changed == 1 and encoded.parts:
                await self._save_parts(tx, sid, encoded.parts)
        except sqlite3.Error as exc:
            raise StorageError(f"save_state failed for session {state.session_id}: {exc}") from exc
        if changed != 1:
            raise StorageError(f"save_state: session {state.session_id} does not exist")

    async def _save_parts(
        self, tx: Transaction, session_id: str, parts: tuple[tuple[str, str, bool], ...]
    ) -> None:
        """Write the session's parts whose value changed, in one statement (one hand-over to the
        writer's thread): an upsert that leaves an equal value alone (no page written); a field
        never set (at its default) gets no row, one that empties keeps its row, empty."""
        rows = [(session_id, name, value, held, session_id, name) for name, value, held in parts]
        await tx.executemany(
            "INSERT INTO conversation_session_parts (session_id, name, value)"
            " SELECT ?, ?, ? WHERE ? OR EXISTS (SELECT 1 FROM conversation_session_parts"
            " WHERE session_id = ? AND name = ?)"
            " ON CONFLICT (session_id, name) DO UPDATE SET value = excluded.value"
            f" WHERE conversation_session_parts.value {self.DIFFERS} excluded.value",
            rows,
        )

    async def checkpoint_unknown(self, conn: Transaction, limit: int | None = None) -> list[str]:
        """Return the open sessions whose checkpoint is not recorded at their last turn (at
        most ``limit``, in ``session_id`` order).

        One query on the partial index of migration 0015: its cost is the number of such
        sessions (or ``limit``), not the number of sessions.
        """
        rows = await conn.fetchall(
            f"SELECT session_id FROM conversation_sessions {self.CHECKPOINT_UNKNOWN_INDEX}"
            f" WHERE closed_at IS NULL AND checkpoint_seq {self.DIFFERS} last_seq"
            " ORDER BY session_id" + ("" if limit is None else " LIMIT ?"),
            () if limit is None else (limit,),
        )
        return [row["session_id"] for row in rows]

    async def open_sessions_with_jobs(self, conn: Transaction) -> list[ConversationSession]:
        """Return the open sessions whose state has active jobs (one query, partial index)."""
        rows = await conn.fetchall(
            f"SELECT {self._select_columns} FROM conversation_sessions {self.WITH_JOBS_INDEX}"
            f" WHERE closed_at IS NULL AND {self.ACTIVE_JOB_COUNT} > 0"
        )
        return [_row_to_session(row) for row in rows]

    async def checkpoint_records(
        self, conn: Transaction, session_ids: Sequence[str]
    ) -> dict[str, int | None]:
        """Return the recorded checkpoint seq (``None``: unknown) of each of ``session_ids``
        that is in the database (one query)."""
        rows = await conn.fetchall(
            "SELECT session_id, checkpoint_seq FROM conversation_sessions"
            f" WHERE session_id IN (SELECT s.value FROM {self.IDS_TABLE})",
            (self.ids_param(session_ids),),
        )
        return {row["session_id"]: row["checkpoint_seq"] for row in rows}

    async def record_checkpoints(self, tx: Transaction, written: Sequence[tuple[str, int]]) -> int:
        """Record ``(session_id, seq)`` checkpoints as written, where the row is still at
        ``seq`` (a turn committed since keeps the record unknown); return how many changed."""
        changed = 0
        for session_id, seq in written:
            changed += await tx.execute(
                "UPDATE conversation_sessions SET checkpoint_seq = ?"
                f" WHERE session_id = ? AND last_seq = ? AND checkpoint_seq {self.DIFFERS} ?",
                (seq, session_id, seq, seq),
            )
        return changed

    async def set_status(self, tx: Transaction, status: SessionStatus, *, now: datetime) -> int:
        """Set the status of every open session (and inside its state JSON); return the count."""
        changed = await tx.execute(
            f"UPDATE conversation_sessions SET status = ?, state = {self.STATE_WITH_STATUS}"
            " WHERE closed_at IS NULL AND status != ?",
            (status, status, status),
        )
        return changed

    async def close_session(self, tx: Transaction, session_id: str, *, now: datetime) -> None:
        """Close a session so that its chat's next message opens a new one."""
        await tx.execute(
            "UPDATE conversation_sessions SET closed_at = ?, updated_at = ?"
            " WHERE session_id = ? AND closed_at IS NULL",
            (to_db_time(now), to_db_time(now), session_id),
        )

    async def reopen_session(self, tx: Transaction, session_id: str, *, now: datetime) -> bool:
        """Make a closed session its chat's open one again (``/resume``).

        The chat's open session must be closed first (in the same transaction): a chat has one.

        Returns:
            Whether the session was closed and is now open.

        Raises:
            StorageError: the chat still has another open session.
        """
        try:
            changed = await tx.execute(
                "UPDATE conversation_sessions SET closed_at = NULL, updated_at = ?,"
                " checkpoint_seq = NULL"
                " WHERE session_id = ? AND closed_at IS NOT NULL",
                (to_db_time(now), session_id),
            )
        except sqlite3.Error as exc:
            raise StorageError(f"reopen_session failed for session {session_id}: {exc}") from exc
        return changed == 1

    async def first_words(self, conn: Transaction, session_ids: Sequence[str]) -> dict[str, str]:
        """Return the first user message of each of ``session_ids`` that has one (one query)."""
        rows = await conn.fetchall(
            "SELECT s.value AS session_id, (SELECT t.user_text FROM conversation_turns AS t"
            "  WHERE t.session_id = s.value AND t.user_text != '' ORDER BY t.seq LIMIT 1)"
            f" AS user_text FROM {self.IDS_TABLE}",
            (self.ids_param(session_ids),),
        )
        return {row["session_id"]: row["user_text"] for row in rows if row["user_text"]}

    async def delete_session(self, tx: Transaction, session_id: str) -> bool:
        """Delete a session and, by cascade, its turns; return whether it existed."""
        changed = await tx.execute(
            "DELETE FROM conversation_sessions WHERE session_id = ?", (session_id,)
        )
        return changed == 1

    async def prune_sessions(self, tx: Transaction, *, inactive_since: datetime) -> list[str]:
        """Delete sessions last active before ``inactive_since``; return their ids."""
        rows = await tx.fetchall(
            "DELETE FROM conversation_sessions WHERE updated_at < ? RETURNING session_id",
            (to_db_time(inactive_since),),
        )
        return sorted(row["session_id"] for row in rows)
