"""The turn log on SQLite: each turn of a session, its delivery, and its edits.

:class:`SqliteTurnLog` is the part of
:class:`~agent.memory.conversation_store.SqliteConversationStore` that reads and writes
``conversation_turns`` and ``turn_edits`` (``schema.sql``); the protocol it implements is
:class:`~agent.memory.conversation_store.ConversationStore`. Every query a turn or a start-up
runs reads through an index and a ``LIMIT``, so its cost does not grow with the length of the
history. Tested in ``tests/test_conversation_store.py`` and ``tests/test_store_conformance.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import orjson

from agent.db import Row, Snapshot, Transaction
from agent.errors import StorageError
from agent.memory.schemas import ConversationTurn, JobRef, SessionControl, dump_json
from agent.memory.storage.id_lists import SqliteIdLists
from agent.utils.timestamps import from_db_time, to_db_time
from agent.utils.tokens import estimate_tokens

__all__ = ["SqliteTurnLog", "TurnEdit"]

_TURN_COLUMNS = (
    "turn_id, session_id, seq, user_text, assistant_text, intent, action_name, job_refs,"
    " created_at, status, bot_id, update_id, user_id, speaker, message_id, reply_message_id,"
    " delivered_at, control"
)
# Rows read per page when collecting recent turns up to a token limit.
_PAGE = 32


class TurnEdit(NamedTuple):
    """One edit of a turn's message: the text it replaced (a row of ``turn_edits``).

    Attributes:
        edited_at: when the user edited the message (Telegram's ``edit_date``).
        previous_text: the turn's text before the edit.
        update_id: the Telegram update that carried the edit, if any.
    """

    edited_at: datetime
    previous_text: str
    update_id: int | None


def _row_to_turn(row: Row) -> ConversationTurn:
    return ConversationTurn(
        turn_id=row["turn_id"],
        session_id=row["session_id"],
        seq=row["seq"],
        user_text=row["user_text"],
        assistant_text=row["assistant_text"],
        intent=row["intent"],
        action_name=row["action_name"],
        job_refs=tuple(JobRef.model_validate(ref) for ref in orjson.loads(row["job_refs"])),
        created_at=from_db_time(row["created_at"]),
        status=row["status"],
        bot_id=row["bot_id"],
        update_id=row["update_id"],
        user_id=row["user_id"],
        speaker=row["speaker"],
        message_id=row["message_id"],
        reply_message_id=row["reply_message_id"],
        delivered_at=from_db_time(row["delivered_at"]),
        control=None
        if row["control"] is None
        else SessionControl.model_validate_json(row["control"]),
    )


#: The turns a ``WHERE`` clause finds (always a constant of this module, never user text).
_SELECT_TURNS = f"SELECT {_TURN_COLUMNS} FROM conversation_turns WHERE "
#: The turn of one Telegram update.
_OF_UPDATE = "bot_id = ? AND update_id = ?"


async def _select_turns(
    conn: Transaction, where: str, params: tuple[Any, ...]
) -> list[ConversationTurn]:
    """Return the turns ``SELECT ... FROM conversation_turns WHERE {where}`` finds.

    ``where`` is always a constant of this module (with any ORDER BY / LIMIT), never user text.
    """
    rows = await conn.fetchall(_SELECT_TURNS + where, params)
    return [_row_to_turn(row) for row in rows]


class SqliteTurnLog(SqliteIdLists):
    """The turns part of the SQLite
    :class:`~agent.memory.conversation_store.ConversationStore`."""

    #: What orders a turn's edits oldest first (SQLite's ``rowid``).
    EDIT_ORDER = "rowid"
    #: Which turns :meth:`recent_turns_of` reads: the last ``?`` of each session in
    #: :attr:`IDS_TABLE`, by ``rowid``, through the primary key's index.
    RECENT_TURNS_OF = (
        "rowid IN (SELECT t.rowid FROM {ids} JOIN conversation_turns AS t"
        "  ON t.session_id = s.value AND t.seq > coalesce((SELECT u.seq"
        "   FROM conversation_turns AS u WHERE u.session_id = s.value"
        "   ORDER BY u.seq DESC LIMIT 1 OFFSET ?), 0))"
    )

    async def append_turn(self, tx: Transaction, turn: ConversationTurn) -> bool:
        """Append a turn; return ``False`` (and change nothing) if its update is known.

        Raises:
            StorageError: the insert failed for another reason (e.g. a duplicate ``seq``).
        """
        try:
            # I3: a redelivered update is a no-op, not an error (STYLE.md rule 9).
            changed = await tx.execute(
                f"INSERT INTO conversation_turns ({_TURN_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (bot_id, update_id) WHERE update_id IS NOT NULL DO NOTHING",
                (
                    turn.turn_id,
                    turn.session_id,
                    turn.seq,
                    turn.user_text,
                    turn.assistant_text,
                    turn.intent,
                    turn.action_name,
                    orjson.dumps([ref.model_dump(mode="json") for ref in turn.job_refs]),
                    to_db_time(turn.created_at),
                    turn.status,
                    turn.bot_id,
                    turn.update_id,
                    turn.user_id,
                    turn.speaker,
                    turn.message_id,
                    turn.reply_message_id,
                    to_db_time(turn.delivered_at),
                    None if turn.control is None else dump_json(turn.control),
                ),
            )
        except sqlite3.Error as exc:
            raise StorageError(f"append_turn failed for session {turn.session_id}: {exc}") from exc
        return changed == 1

    async def turn_for_update(
        self, conn: Transaction, bot_id: int, update_id: int
    ) -> ConversationTurn | None:
        """Return the turn recorded for a Telegram update, or ``None``."""
        found = await _select_turns(conn, _OF_UPDATE, (bot_id, update_id))
        return next(iter(found), None)

    def recorded_turn(
        self, conn: Snapshot, bot_id: int, update_id: int
    ) -> ConversationTurn | None:
        """:meth:`turn_for_update` on a snapshot (in the searcher's thread)."""
        row = conn.fetchone(_SELECT_TURNS + _OF_UPDATE, (bot_id, update_id))
        return None if row is None else _row_to_turn(row)

    async def turn_for_message(
        self, conn: Transaction, bot_id: int, chat_id: int, message_id: int
    ) -> ConversationTurn | None:
        """Return the turn of a chat's Telegram message (in any of its sessions), or ``None``.

        Through the chat's sessions (``conversation_sessions_chat``), then the message in each
        (``conversation_turns_message``): the cost grows with the chat's sessions, not turns.
        """
        found = await _select_turns(
            conn,
            "bot_id = ? AND message_id = ? AND session_id IN"
            " (SELECT session_id FROM conversation_sessions WHERE chat_id = ?)"
            " ORDER BY created_at DESC LIMIT 1",
            (bot_id, message_id, chat_id),
        )
        return next(iter(found), None)

    async def edit_known(self, conn: Transaction, bot_id: int, update_id: int) -> bool:
        """Return whether the edit a Telegram update carries was recorded already."""
        rows = await conn.fetchall(
            "SELECT 1 FROM turn_edits WHERE bot_id = ? AND update_id = ?", (bot_id, update_id)
        )
        return bool(rows)

    async def edit_turn(
        self,
        tx: Transaction,
        session_id: str,
        seq: int,
        *,
        text: str,
        previous_text: str,
        edited_at: datetime,
        bot_id: int,
        update_id: int | None,
    ) -> bool:
        """Replace a turn's user text, keeping ``previous_text`` as its edit history.

        The full-text index follows the new text (its update trigger); the history row is
        not indexed: a search finds what the message says now.

        Returns:
            ``False``, with nothing changed, if the edit's update was recorded already (I3) or
            the turn's text is no longer ``previous_text`` (it is gone, or changed meanwhile).

        Raises:
            StorageError: the writes failed.
        """
        try:
            rows = await tx.fetchall(
                "INSERT INTO turn_edits"
                " (session_id, seq, edited_at, previous_text, bot_id, update_id)"
                " SELECT session_id, seq, ?, user_text, ?, ? FROM conversation_turns"
                " WHERE session_id = ? AND seq = ? AND user_text = ?"
                " ON CONFLICT DO NOTHING RETURNING 1",
                (to_db_time(edited_at), bot_id, update_id, session_id, seq, previous_text),
            )
            if not rows:
                return False
            await tx.execute(
                "UPDATE conversation_turns SET user_text = ? WHERE session_id = ? AND seq = ?",
                (text, session_id, seq),
            )
        except sqlite3.Error as exc:
            raise StorageError(f"edit_turn failed for session {session_id} turn {seq}") from exc
        return True

    async def erase_turn_text(self, tx: Transaction, session_id: str, seq: int) -> bool:
        """Erase what a turn said: its user text and reply become empty, and so does the text
        its edits kept (their keys stay, so that a redelivered edit is still known, I3).

        The full-text index and the sentence vector follow the update (its triggers).

        Returns:
            Whether the turn exists.

        Raises:
            StorageError: the writes failed.
        """
        try:
            rows = await tx.fetchall(
                "UPDATE conversation_turns SET user_text = '',"
                " assistant_text = CASE WHEN assistant_text IS NULL THEN NULL ELSE '' END"
                " WHERE session_id = ? AND seq = ? RETURNING 1",
                (session_id, seq),
            )
            await tx.execute(
                "UPDATE turn_edits SET previous_text = '' WHERE session_id = ? AND seq = ?",
                (session_id, seq),
            )
        except sqlite3.Error as exc:
            raise StorageError(f"erasing turn {seq} of session {session_id} failed") from exc
        return bool(rows)

    async def turn_edits(self, conn: Transaction, session_id: str, seq: int) -> list[TurnEdit]:
        """Return the edit history of a turn, oldest edit first."""
        rows = await conn.fetchall(
            "SELECT edited_at, previous_text, update_id FROM turn_edits"
            f" WHERE session_id = ? AND seq = ? ORDER BY {self.EDIT_ORDER}",
            (session_id, seq),
        )
        return [
            TurnEdit(from_db_time(row["edited_at"]), row["previous_text"], row["update_id"])
            for row in rows
        ]

    async def recent_turns(
        self, conn: Transaction, session_id: str, limit: int
    ) -> list[ConversationTurn]:
        """Return the last ``limit`` turns of a session, oldest first."""
        newest_first = await _select_turns(
            conn, "session_id = ? ORDER BY seq DESC LIMIT ?", (session_id, limit)
        )
        return newest_first[::-1]

    async def recent_turns_of(
        self, conn: Transaction, session_ids: Sequence[str], limit: int
    ) -> dict[str, list[ConversationTurn]]:
        """Return the last ``limit`` turns of each session, oldest first.

        One statement for a page of sessions at hydration, instead of one each: per session, an
        index range from the seq ``limit`` turns back (found through the same index).
        """
        found: dict[str, list[ConversationTurn]] = {sid: [] for sid in session_ids}
        if not session_ids or limit < 1:
            return found
        turns = await _select_turns(
            conn,
            self.RECENT_TURNS_OF.format(ids=self.IDS_TABLE) + " ORDER BY session_id, seq",
            (self.ids_param(session_ids), limit),
        )
        for turn in turns:
            found[turn.session_id].append(turn)
        return found

    async def recent_turns_within(
        self, conn: Transaction, session_id: str, max_tokens: int
    ) -> list[ConversationTurn]:
        """Return the longest run of latest turns whose text fits ``max_tokens``, oldest first.

        Reads page by page from the newest turn backwards and stops at the first turn that does
        not fit, so it reads only what it returns (plus one page at most).
        """
        chosen: list[ConversationTurn] = []
        used = 0
        before = None
        while True:
            sql = f"SELECT {_TURN_COLUMNS} FROM conversation_turns WHERE session_id = ?"
            params: list[Any] = [session_id]
            if before is not None:
                sql += " AND seq < ?"
                params.append(before)
            params.append(_PAGE)
            rows = list(await conn.fetchall(sql + " ORDER BY seq DESC LIMIT ?", params))
            for row in rows:
                turn = _row_to_turn(row)
                cost = estimate_tokens(turn.user_text) + estimate_tokens(turn.assistant_text)
                if used + cost > max_tokens:
                    return chosen[::-1]
                used += cost
                chosen.append(turn)
            if len(rows) < _PAGE:
                return chosen[::-1]
            before = rows[-1]["seq"]

    async def iter_turns(
        self, conn: Transaction, session_id: str
    ) -> AsyncIterator[ConversationTurn]:
        """Yield every turn of a session in order, a page at a time."""
        after = 0
        while True:
            rows = list(
                await conn.fetchall(
                    f"SELECT {_TURN_COLUMNS} FROM conversation_turns"
                    " WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT 500",
                    (session_id, after),
                )
            )
            for row in rows:
                yield _row_to_turn(row)
            if len(rows) < 500:
                return
            after = rows[-1]["seq"]

    async def get_turn(
        self, conn: Transaction, session_id: str, seq: int
    ) -> ConversationTurn | None:
        """Return one turn of a session, or ``None``."""
        found = await _select_turns(conn, "session_id = ? AND seq = ?", (session_id, seq))
        return next(iter(found), None)

    async def mark_delivered(
        self,
        tx: Transaction,
        session_id: str,
        seq: int,
        *,
        message_id: int,
        now: datetime,
    ) -> None:
        """Record that a turn's reply was sent as Telegram message ``message_id``."""
        await tx.execute(
            "UPDATE conversation_turns SET status = 'delivered', reply_message_id = ?,"
            " delivered_at = ? WHERE session_id = ? AND seq = ? AND status = 'answered'",
            (message_id, to_db_time(now), session_id, seq),
        )

    async def mark_undeliverable(
        self, tx: Transaction, session_id: str, seq: int, *, error: str
    ) -> None:
        """Record that Telegram refused a turn's reply for good, and why: it is never resent.

        The turn stays ``answered`` (committed, never delivered); only the reason is added.
        """
        await tx.execute(
            "UPDATE conversation_turns SET delivery_error = ?"
            " WHERE session_id = ? AND seq = ? AND status = 'answered'",
            (error[:500], session_id, seq),
        )

    async def undelivered_turns(
        self, conn: Transaction, limit: int = 1000
    ) -> list[ConversationTurn]:
        """Return turns answered but not yet delivered nor refused, oldest first per session
        (I4)."""
        return await _select_turns(
            conn,
            "status = 'answered' AND delivery_error IS NULL ORDER BY session_id, seq LIMIT ?",
            (limit,),
        )
