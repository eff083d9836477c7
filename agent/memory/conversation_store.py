"""The turn log and the sessions table: SQL in, models out.

:class:`ConversationStore` is the storage protocol the lane depends on (a PostgreSQL backend
can implement it later, DESIGN.md section 6); :class:`SqliteConversationStore` implements it
on SQLite. Write methods take the transaction connection handed out by
:meth:`agent.db.Database.write` and never commit; read methods take any connection (normally
``db.reader``). Every query a turn or a start-up runs reads through an index and a ``LIMIT``,
so its cost does not grow with the length of the history.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any, NamedTuple, Protocol, TypeVar

import aiosqlite
import orjson

from agent.errors import StorageError
from agent.memory.rules.dialogue_acts import MEMORY_ERASURE_INTENTS, UNRETRIEVED_REPLY_INTENTS
from agent.memory.schemas import (
    ChatType,
    ConversationSession,
    ConversationTurn,
    JobRef,
    SessionControl,
    SessionState,
    SessionStatus,
    dump_json,
)
from agent.utils.text import split_words
from agent.utils.timestamps import from_db_time, to_db_time
from agent.utils.tokens import estimate_tokens

__all__ = [
    "ConversationStore",
    "SqliteConversationStore",
    "TurnEdit",
    "TurnText",
    "WordCounts",
    "match_query",
]

_T = TypeVar("_T")

_TURN_COLUMNS = (
    "turn_id, session_id, seq, user_text, assistant_text, intent, action_name, job_refs,"
    " created_at, status, bot_id, update_id, user_id, speaker, message_id, reply_message_id,"
    " delivered_at, control"
)
_SESSION_COLUMNS = (
    "session_id, chat_id, chat_type, user_id, title, status, state, turn_count, last_seq,"
    " created_at, updated_at, closed_at"
)
# Sessions read per page at hydration.
_SESSION_PAGE = 256
# What retrieval reads of a turn (a TurnText): no ids, no delivery columns, no JSON to parse.
# Help and error replies, and erasure requests, are never retrieved (the turn index leaves
# them out too: migration 0013): a retrieved turn carries them as no reply, an erasure request
# as no words either.
_UNRETRIEVED_INTENTS = ", ".join(f"'{intent}'" for intent in sorted(UNRETRIEVED_REPLY_INTENTS))
_ERASURE_INTENTS = ", ".join(f"'{intent}'" for intent in sorted(MEMORY_ERASURE_INTENTS))
_TURN_TEXT_COLUMNS = (
    f"seq, speaker, created_at,"
    f" CASE WHEN intent IN ({_ERASURE_INTENTS}) THEN '' ELSE user_text END,"
    f" CASE WHEN intent IN ({_UNRETRIEVED_INTENTS}) THEN NULL ELSE assistant_text END,"
    " json_array_length(job_refs) > 0"
)
# Rows read per page when collecting recent turns up to a token limit.
_PAGE = 32


class TurnText(NamedTuple):
    """A turn as retrieval reads it: what its score and its rendered item need, no model.

    Building a :class:`ConversationTurn` costs more than scoring it, and retrieval reads a few
    hundred turns per packet, most of which never make it into the packet.

    Attributes:
        seq: the turn's position in its session.
        speaker: who said it (``None``: the user of a private chat).
        created_at: when it was recorded.
        user_text: what was said.
        assistant_text: the bot's answer, if any (``None`` for a help or error text).
        has_jobs: whether the turn carries job references.
    """

    seq: int
    speaker: str | None
    created_at: datetime
    user_text: str
    assistant_text: str | None
    has_jobs: bool


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


class WordCounts(NamedTuple):
    """In how many turns words occur, as of one moment of the turn log.

    Attributes:
        high_water: the turn log's high-water mark (the largest row id of a turn): it grows
            by one with each turn written, so two marks bound how many turns came between
            them.
        counts: each word's number of turns, up to the cap asked for plus one.
    """

    high_water: int
    counts: dict[str, int]


class ConversationStore(Protocol):
    """**Protocol:** the storage backend of the memory lane.

    Called by :class:`agent.memory.lane.ConversationLane` (and the inspection tools) for every
    read and write of sessions and turns. ``tx`` is a connection inside an open write
    transaction; ``conn`` any connection. Implementations never commit. The reads of retrieval
    (``search_turn_texts``, ``word_counts``, ``get_turn_texts``) are synchronous, on a
    ``sqlite3`` connection: the retriever runs them in the database's searcher thread
    (:meth:`agent.db.database.Database.read`).
    """

    async def create_session(
        self,
        tx: Any,
        *,
        session_id: str,
        chat_id: int,
        chat_type: ChatType,
        user_id: int | None,
        title: str | None,
        now: datetime,
        closed_at: datetime | None = None,
    ) -> ConversationSession:
        """Insert a new session for ``chat_id`` (open, unless ``closed_at``) and return it."""
        ...

    async def get_session(self, conn: Any, session_id: str) -> ConversationSession | None:
        """Return the session with this id, open or closed, or ``None``."""
        ...

    async def open_session_for_chat(self, conn: Any, chat_id: int) -> ConversationSession | None:
        """Return the chat's open session, or ``None``."""
        ...

    async def existing_session_ids(self, conn: Any, session_ids: list[str]) -> set[str]:
        """Return which of ``session_ids`` are sessions in the database."""
        ...

    async def list_sessions(
        self,
        conn: Any,
        *,
        limit: int | None = 10,
        open_only: bool = False,
        status: SessionStatus | None = None,
        chat_id: int | None = None,
    ) -> list[ConversationSession]:
        """Return sessions, most recently active first."""
        ...

    def open_session_pages(self, conn: Any) -> AsyncIterator[list[ConversationSession]]:
        """Yield the open sessions a page at a time (hydration never holds all at once)."""
        ...

    async def save_state(
        self, tx: Any, state: SessionState, *, last_seq: int, now: datetime
    ) -> None:
        """Store a session's new state, its counters and its status."""
        ...

    async def set_status(self, tx: Any, status: SessionStatus, *, now: datetime) -> int:
        """Set the status of every open session; return how many changed."""
        ...

    async def close_session(self, tx: Any, session_id: str, *, now: datetime) -> None:
        """Close a session so that its chat's next message opens a new one."""
        ...

    async def reopen_session(self, tx: Any, session_id: str, *, now: datetime) -> bool:
        """Make a closed session its chat's open one again; ``False`` if it is not closed."""
        ...

    async def first_words(self, conn: Any, session_ids: Sequence[str]) -> dict[str, str]:
        """Return the first user message of each of ``session_ids`` that has one."""
        ...

    async def append_turn(self, tx: Any, turn: ConversationTurn) -> bool:
        """Append a turn; return ``False`` (and change nothing) if its update is known."""
        ...

    async def turn_for_update(
        self, conn: Any, bot_id: int, update_id: int
    ) -> ConversationTurn | None:
        """Return the turn recorded for a Telegram update, or ``None``."""
        ...

    async def turn_for_message(
        self, conn: Any, bot_id: int, chat_id: int, message_id: int
    ) -> ConversationTurn | None:
        """Return the turn of a chat's Telegram message (in any of its sessions), or ``None``."""
        ...

    async def edit_known(self, conn: Any, bot_id: int, update_id: int) -> bool:
        """Return whether the edit a Telegram update carries was recorded already."""
        ...

    async def edit_turn(
        self,
        tx: Any,
        session_id: str,
        seq: int,
        *,
        text: str,
        previous_text: str,
        edited_at: datetime,
        bot_id: int,
        update_id: int | None,
    ) -> bool:
        """Replace a turn's user text, keeping ``previous_text`` as its edit history; return
        ``False`` (and change nothing) if the edit's update is known or the turn is not as
        ``previous_text`` says."""
        ...

    async def turn_edits(self, conn: Any, session_id: str, seq: int) -> list[TurnEdit]:
        """Return the edit history of a turn, oldest edit first."""
        ...

    async def recent_turns(self, conn: Any, session_id: str, limit: int) -> list[ConversationTurn]:
        """Return the last ``limit`` turns of a session, oldest first."""
        ...

    async def recent_turns_of(
        self, conn: Any, session_ids: Sequence[str], limit: int
    ) -> dict[str, list[ConversationTurn]]:
        """Return the last ``limit`` turns of each session, oldest first (one read for all)."""
        ...

    async def recent_turns_within(
        self, conn: Any, session_id: str, max_tokens: int
    ) -> list[ConversationTurn]:
        """Return the longest run of latest turns whose text fits ``max_tokens``, oldest first."""
        ...

    def iter_turns(self, conn: Any, session_id: str) -> AsyncIterator[ConversationTurn]:
        """Yield every turn of a session in order (for rebuilds and exports)."""
        ...

    def search_turn_texts(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        queries: Sequence[str],
        limit: int = 5,
        *,
        recent: int = 2000,
        old_word_turns: int = 100,
    ) -> list[list[tuple[TurnText, float]]]:
        """Return, for each of ``queries``, the session's turns that best match it (BM25).

        Each list is best first, at most ``limit`` long, with each turn's BM25 score. All words
        over the last ``recent`` turns; over older turns, only the words found in at most
        ``old_word_turns`` of them (so that the cost does not grow with the history). Called by
        the retriever for each packet, with the message and topic queries together.
        """
        ...

    def word_counts(self, conn: sqlite3.Connection, words: list[str], *, cap: int) -> WordCounts:
        """Return in how many turns (of all sessions) each word occurs, counting up to
        ``cap + 1``, and the turn log's high-water mark at that moment (see
        :class:`WordCounts`)."""
        ...

    async def get_turn(self, conn: Any, session_id: str, seq: int) -> ConversationTurn | None:
        """Return one turn of a session, or ``None``."""
        ...

    def get_turn_texts(
        self, conn: sqlite3.Connection, session_id: str, seqs: list[int]
    ) -> list[TurnText]:
        """Return the turns of a session with these seqs (those that exist), in seq order, as
        retrieval reads them (the neighbours of its hits)."""
        ...

    async def mark_delivered(
        self, tx: Any, session_id: str, seq: int, *, message_id: int, now: datetime
    ) -> None:
        """Record that a turn's reply was sent as Telegram message ``message_id``."""
        ...

    async def mark_undeliverable(self, tx: Any, session_id: str, seq: int, *, error: str) -> None:
        """Record that Telegram refused a turn's reply for good (it is never resent), and why."""
        ...

    async def undelivered_turns(self, conn: Any, limit: int = 1000) -> list[ConversationTurn]:
        """Return turns answered but not yet delivered nor refused, oldest first per session."""
        ...

    async def delete_session(self, tx: Any, session_id: str) -> bool:
        """Delete a session and everything of it; return whether it existed."""
        ...

    async def prune_sessions(self, tx: Any, *, inactive_since: datetime) -> list[str]:
        """Delete sessions last active before ``inactive_since``; return their ids."""
        ...


# Words taken from a query at most: a longer text adds cost, not precision.
_QUERY_WORDS = 24
#: A turn search ranks every query word over the session's last this many turns ... (bm25()
#: scores every match: 500 cost 9% more per packet at 100,000 turns, 2,000 up to 4x the matches,
#: for the same bench/memory_quality.py recall)
RECENT_TURNS = 250
#: One search of the turn search: the BM25 of FTS5's matches inside one session's block of index
#: row ids, the best first (ties: the newer turn), with a LIMIT. Parameters: MATCH expression, low
#: and high row id, limit. bm25() is a column sorted by SQLite, not FTS5's ``ORDER BY rank``:
#: FTS5 prepares a statement for that sort at every search (a third of a search's time).
_TURN_HITS_SQL = (
    "SELECT rowid AS hit_rowid, bm25(conversation_turns_fts, 0.0, 0.5, 1.0, 1.0) AS score"
    " FROM conversation_turns_fts WHERE conversation_turns_fts MATCH ? AND rowid BETWEEN ? AND ?"
    " ORDER BY score, hit_rowid DESC LIMIT ?"
)


def turn_search_sql(queries: Sequence[int]) -> str:
    """Return the turn search statement: one ranked search (``_TURN_HITS_SQL``) for each of
    ``queries`` (the index of the query it searches for), as one ``UNION ALL``.

    The best ``limit`` hits of each query (ties: the newer turn) are kept, and only they are
    read, by the turns' primary key (session_id, seq), as :class:`TurnText` columns with the
    query's index first and the score last. Parameters: each search's four, then the session
    id, the session's row id base, and ``limit``.
    """
    searches = " UNION ALL ".join(
        f"SELECT {int(query)} AS query, * FROM ({_TURN_HITS_SQL})" for query in queries
    )
    return (
        f"SELECT hit.query, {_TURN_TEXT_COLUMNS}, hit.score FROM"
        " (SELECT *, row_number() OVER"
        "   (PARTITION BY query ORDER BY score, hit_rowid DESC) AS place"
        f"  FROM ({searches})) AS hit"
        " JOIN conversation_turns ON conversation_turns.session_id = ?"
        " AND conversation_turns.seq = hit.hit_rowid - ?"
        " WHERE hit.place <= ? ORDER BY hit.query, hit.place"
    )


#: ... and, over the turns before them, the words found in at most this many of those.
OLD_WORD_TURNS = 100


def _query_words(text: str) -> list[str]:
    """Return the words of ``text`` a search takes, lowercased, without repeats."""
    return list(dict.fromkeys(word.lower() for word in split_words(text)))[:_QUERY_WORDS]


def match_query(text: str) -> str:
    """Turn free text into a safe FTS5 query: its words, each quoted, joined by ``OR``."""
    return " OR ".join(f'"{word}"' for word in _query_words(text))


def scoped_searches(
    arm: str, scope: str, queries: Sequence[str], limit: int
) -> tuple[str, list[Any]]:
    """Return one ``arm`` for each of ``queries`` that has a word to search for, joined by
    ``UNION ALL``, and the statement's parameters (``""`` when no query has one).

    ``arm`` is a ranked search whose parameters are the query's index (its first column), its
    MATCH expression and ``limit``. The expression is ``scope`` (a scope term and a column
    filter) applied to the query's quoted words (:func:`match_query`).
    """
    arms: list[str] = []
    params: list[Any] = []
    for index, words in enumerate(queries):
        query = match_query(words)
        if query:
            arms.append(arm)
            params += [index, f"{scope} : ({query})", limit]
    return " UNION ALL ".join(arms), params


def _row_to_turn(row: sqlite3.Row) -> ConversationTurn:
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


def _row_to_turn_text(row: Sequence[Any]) -> TurnText:
    """Map the :data:`_TURN_TEXT_COLUMNS` of a row (in that order) to a :class:`TurnText`."""
    seq, speaker, created_at, user_text, assistant_text, has_jobs = row[:6]
    return TurnText(
        seq, speaker, from_db_time(created_at), user_text, assistant_text, bool(has_jobs)
    )


def _row_to_session(row: sqlite3.Row) -> ConversationSession:
    state = SessionState.model_validate_json(row["state"])
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


async def _select_turns(
    conn: aiosqlite.Connection, where: str, params: tuple[Any, ...]
) -> list[ConversationTurn]:
    """Return the turns ``SELECT ... FROM conversation_turns WHERE {where}`` finds.

    ``where`` is always a constant of this module (with any ORDER BY / LIMIT), never user text.
    """
    rows = await conn.execute_fetchall(
        f"SELECT {_TURN_COLUMNS} FROM conversation_turns WHERE {where}", params
    )
    return [_row_to_turn(row) for row in rows]


async def _select_sessions(
    conn: aiosqlite.Connection, where: str, params: tuple[Any, ...]
) -> list[ConversationSession]:
    """Return the sessions ``SELECT ... FROM conversation_sessions WHERE {where}`` finds."""
    rows = await conn.execute_fetchall(
        f"SELECT {_SESSION_COLUMNS} FROM conversation_sessions WHERE {where}", params
    )
    return [_row_to_session(row) for row in rows]


def _first(items: list[_T]) -> _T | None:
    return items[0] if items else None


class SqliteConversationStore:
    """The :class:`ConversationStore` on SQLite (tables of ``schema.sql``, migration 0001)."""

    async def create_session(
        self,
        tx: aiosqlite.Connection,
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

    async def get_session(
        self, conn: aiosqlite.Connection, session_id: str
    ) -> ConversationSession | None:
        """Return the session with this id, open or closed, or ``None``."""
        return _first(await _select_sessions(conn, "session_id = ?", (session_id,)))

    async def open_session_for_chat(
        self, conn: aiosqlite.Connection, chat_id: int
    ) -> ConversationSession | None:
        """Return the chat's open session, or ``None``."""
        return _first(await _select_sessions(conn, "chat_id = ? AND closed_at IS NULL", (chat_id,)))

    async def existing_session_ids(
        self, conn: aiosqlite.Connection, session_ids: list[str]
    ) -> set[str]:
        """Return which of ``session_ids`` are sessions in the database (one query)."""
        rows = await conn.execute_fetchall(
            "SELECT session_id FROM conversation_sessions"
            " WHERE session_id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(session_ids),),
        )
        return {row["session_id"] for row in rows}

    async def list_sessions(
        self,
        conn: aiosqlite.Connection,
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
        sql = f"SELECT {_SESSION_COLUMNS} FROM conversation_sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC, session_id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = await conn.execute_fetchall(sql, params)
        return [_row_to_session(row) for row in rows]

    async def open_session_pages(
        self, conn: aiosqlite.Connection
    ) -> AsyncIterator[list[ConversationSession]]:
        """Yield the open sessions a page at a time, in ``session_id`` order."""
        after = ""
        while True:
            page = await _select_sessions(
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
        self, tx: aiosqlite.Connection, state: SessionState, *, last_seq: int, now: datetime
    ) -> None:
        """Store a session's new state, its counters and its status.

        Raises:
            StorageError: the session does not exist or the update failed.
        """
        try:
            cursor = await tx.execute(
                "UPDATE conversation_sessions SET state = ?, status = ?, rolling_summary = ?,"
                " turn_count = ?, last_seq = ?, updated_at = ? WHERE session_id = ?",
                (
                    dump_json(state),
                    state.status,
                    state.rolling_summary,
                    state.turn_count,
                    last_seq,
                    to_db_time(now),
                    state.session_id,
                ),
            )
        except sqlite3.Error as exc:
            raise StorageError(f"save_state failed for session {state.session_id}: {exc}") from exc
        if cursor.rowcount != 1:
            raise StorageError(f"save_state: session {state.session_id} does not exist")

    async def set_status(
        self, tx: aiosqlite.Connection, status: SessionStatus, *, now: datetime
    ) -> int:
        """Set the status of every open session (and inside its state JSON); return the count."""
        cursor = await tx.execute(
            "UPDATE conversation_sessions SET status = ?, state = json_set(state, '$.status', ?)"
            " WHERE closed_at IS NULL AND status != ?",
            (status, status, status),
        )
        return cursor.rowcount

    async def close_session(
        self, tx: aiosqlite.Connection, session_id: str, *, now: datetime
    ) -> None:
        """Close a session so that its chat's next message opens a new one."""
        await tx.execute(
            "UPDATE conversation_sessions SET closed_at = ?, updated_at = ?"
            " WHERE session_id = ? AND closed_at IS NULL",
            (to_db_time(now), to_db_time(now), session_id),
        )

    async def reopen_session(
        self, tx: aiosqlite.Connection, session_id: str, *, now: datetime
    ) -> bool:
        """Make a closed session its chat's open one again (``/resume``).

        The chat's open session must be closed first (in the same transaction): a chat has one.

        Returns:
            Whether the session was closed and is now open.

        Raises:
            StorageError: the chat still has another open session.
        """
        try:
            cursor = await tx.execute(
                "UPDATE conversation_sessions SET closed_at = NULL, updated_at = ?"
                " WHERE session_id = ? AND closed_at IS NOT NULL",
                (to_db_time(now), session_id),
            )
        except sqlite3.Error as exc:
            raise StorageError(f"reopen_session failed for session {session_id}: {exc}") from exc
        return cursor.rowcount == 1

    async def first_words(
        self, conn: aiosqlite.Connection, session_ids: Sequence[str]
    ) -> dict[str, str]:
        """Return the first user message of each of ``session_ids`` that has one (one query)."""
        rows = await conn.execute_fetchall(
            "SELECT s.value AS session_id, (SELECT t.user_text FROM conversation_turns AS t"
            "  WHERE t.session_id = s.value AND t.user_text != '' ORDER BY t.seq LIMIT 1)"
            " AS user_text FROM json_each(?) AS s",
            (orjson.dumps(list(session_ids)),),
        )
        return {row["session_id"]: row["user_text"] for row in rows if row["user_text"]}

    async def append_turn(self, tx: aiosqlite.Connection, turn: ConversationTurn) -> bool:
        """Append a turn; return ``False`` (and change nothing) if its update is known.

        Raises:
            StorageError: the insert failed for another reason (e.g. a duplicate ``seq``).
        """
        try:
            # I3: a redelivered update is a no-op, not an error (STYLE.md rule 9).
            cursor = await tx.execute(
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
        return cursor.rowcount == 1

    async def turn_for_update(
        self, conn: aiosqlite.Connection, bot_id: int, update_id: int
    ) -> ConversationTurn | None:
        """Return the turn recorded for a Telegram update, or ``None``."""
        return _first(
            await _select_turns(conn, "bot_id = ? AND update_id = ?", (bot_id, update_id))
        )

    async def turn_for_message(
        self, conn: aiosqlite.Connection, bot_id: int, chat_id: int, message_id: int
    ) -> ConversationTurn | None:
        """Return the turn of a chat's Telegram message (in any of its sessions), or ``None``.

        Through the chat's sessions (``conversation_sessions_chat``), then the message in each
        (``conversation_turns_message``): the cost grows with the chat's sessions, not turns.
        """
        return _first(
            await _select_turns(
                conn,
                "bot_id = ? AND message_id = ? AND session_id IN"
                " (SELECT session_id FROM conversation_sessions WHERE chat_id = ?)"
                " ORDER BY created_at DESC LIMIT 1",
                (bot_id, message_id, chat_id),
            )
        )

    async def edit_known(self, conn: aiosqlite.Connection, bot_id: int, update_id: int) -> bool:
        """Return whether the edit a Telegram update carries was recorded already."""
        rows = await conn.execute_fetchall(
            "SELECT 1 FROM turn_edits WHERE bot_id = ? AND update_id = ?", (bot_id, update_id)
        )
        return bool(rows)

    async def edit_turn(
        self,
        tx: aiosqlite.Connection,
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
            rows = await tx.execute_fetchall(
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

    async def turn_edits(
        self, conn: aiosqlite.Connection, session_id: str, seq: int
    ) -> list[TurnEdit]:
        """Return the edit history of a turn, oldest edit first."""
        rows = await conn.execute_fetchall(
            "SELECT edited_at, previous_text, update_id FROM turn_edits"
            " WHERE session_id = ? AND seq = ? ORDER BY rowid",
            (session_id, seq),
        )
        return [
            TurnEdit(from_db_time(row["edited_at"]), row["previous_text"], row["update_id"])
            for row in rows
        ]

    async def recent_turns(
        self, conn: aiosqlite.Connection, session_id: str, limit: int
    ) -> list[ConversationTurn]:
        """Return the last ``limit`` turns of a session, oldest first."""
        newest_first = await _select_turns(
            conn, "session_id = ? ORDER BY seq DESC LIMIT ?", (session_id, limit)
        )
        return newest_first[::-1]

    async def recent_turns_of(
        self, conn: aiosqlite.Connection, session_ids: Sequence[str], limit: int
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
            "rowid IN (SELECT t.rowid FROM json_each(?) AS s JOIN conversation_turns AS t"
            "  ON t.session_id = s.value AND t.seq > coalesce((SELECT u.seq"
            "   FROM conversation_turns AS u WHERE u.session_id = s.value"
            "   ORDER BY u.seq DESC LIMIT 1 OFFSET ?), 0))"
            " ORDER BY session_id, seq",
            (orjson.dumps(list(session_ids)), limit),
        )
        for turn in turns:
            found[turn.session_id].append(turn)
        return found

    async def recent_turns_within(
        self, conn: aiosqlite.Connection, session_id: str, max_tokens: int
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
            rows = list(await conn.execute_fetchall(sql + " ORDER BY seq DESC LIMIT ?", params))
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
        self, conn: aiosqlite.Connection, session_id: str
    ) -> AsyncIterator[ConversationTurn]:
        """Yield every turn of a session in order, a page at a time."""
        after = 0
        while True:
            rows = list(
                await conn.execute_fetchall(
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

    def search_turn_texts(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        queries: Sequence[str],
        limit: int = 5,
        *,
        recent: int = RECENT_TURNS,
        old_word_turns: int = OLD_WORD_TURNS,
    ) -> list[list[tuple[TurnText, float]]]:
        """Return, for each of ``queries``, the session's turns that best match it (FTS5 BM25).

        Each query is user text: it is reduced to its words, each quoted, so that FTS5 query
        syntax in it (quotes, ``*``, ``NEAR``, ``OR``, column filters) is searched for as plain
        words and never parsed. Each list is best first (ties: the newer turn), at most
        ``limit`` long; the score is BM25's (lower is better); a word naming the speaker counts
        half as much as one in the text.

        The cost does not grow with the history (migration 0007: a session's turns are one
        rowid range of the index, ``(session rowid << 32) + seq``). Two ranked searches per
        query, each restricted by ``rowid BETWEEN`` and not by a MATCH term (FTS5's bm25() reads
        the whole posting list of every phrase of its query to count its documents):

        * the session's last ``recent`` turns, for every word;
        * the turns before them, for the words found in at most ``old_word_turns`` of those
          turns only (counted with a bounded ``LIMIT``): a word said once 5,000 turns ago is
          found, and a word said throughout the session, which would make the ranking read
          every turn, is not searched for there (it says little about which old turn is meant).

        Both are BM25 of the same index, so their scores compare: the best ``limit`` of both
        reach the join, which reads turns by primary key. Every search of every query is one
        statement (:func:`turn_search_sql`), and a turn is read as a :class:`TurnText`, not a
        model.
        """
        found: list[list[tuple[TurnText, float]]] = [[] for _ in queries]
        asked = [_query_words(words) for words in queries]
        if limit < 1 or not any(asked):
            return found
        every = list(dict.fromkeys(word for words in asked for word in words))
        session = self._session_block(conn, session_id, every, recent, old_word_turns)
        if session is None:
            return found
        base, first_recent, old = session
        columns = "{speaker user_text assistant_text}"
        searched: list[int] = []
        params: list[Any] = []
        for index, words in enumerate(asked):
            if not words:
                continue
            ranges = [(words, base + first_recent, base + 0xFFFFFFFF)]
            rare = [word for word in words if 0 < old.get(word, 0) <= old_word_turns]
            if rare:
                ranges.append((rare, base + 1, base + first_recent - 1))
            for chosen, low, high in ranges:
                searched.append(index)
                query = " OR ".join(f'"{word}"' for word in chosen)
                params += [f"{columns} : ({query})", low, high, limit]
        params += [session_id, base, limit]
        for row in conn.execute(turn_search_sql(searched), params):
            found[row[0]].append((_row_to_turn_text(row[1:]), float(row[7])))
        return found

    def _session_block(
        self, conn: sqlite3.Connection, session_id: str, words: list[str], recent: int, cap: int
    ) -> tuple[int, int, dict[str, int]] | None:
        """Return the session's block of index row ids (its base), the seq of the first of its
        last ``recent`` turns, and in how many of the turns before that each word occurs, up to
        ``cap + 1``; ``None`` for a session without turns.

        ``words`` are lowercased words (:func:`_query_words`); one statement for all of it.
        """
        one = (
            ", (SELECT count(*) FROM (SELECT 1 FROM conversation_turns_fts"
            "  WHERE conversation_turns_fts MATCH ?"
            "  AND rowid BETWEEN s.base + 1 AND s.base + s.top - ? LIMIT ?))"
        )
        params: list[Any] = []
        for word in words:
            params += [f'{{speaker user_text assistant_text}} : ("{word}")', recent, cap + 1]
        row = conn.execute(
            "SELECT s.base, s.top" + one * len(words) + " FROM"
            " (SELECT rowid << 32 AS base, (SELECT max(seq) FROM conversation_turns"
            "   WHERE session_id = ?) AS top FROM conversation_sessions WHERE session_id = ?) AS s",
            [*params, session_id, session_id],
        ).fetchone()
        if row is None or row[1] is None:
            return None
        base, top, *counts = row
        first_recent = max(int(top) - recent + 1, 1)
        return int(base), first_recent, dict(zip(words, map(int, counts), strict=True))

    def word_counts(self, conn: sqlite3.Connection, words: list[str], *, cap: int) -> WordCounts:
        """Return in how many turns (of all sessions) each word occurs, counting up to
        ``cap + 1``, and the turn log's high-water mark.

        One query; each count stops at ``cap + 1`` matches (the ``LIMIT`` inside), so its cost
        is bounded whatever the history's length. Words are quoted (:func:`match_query`); a
        word with nothing to search for counts 0.
        """
        queries = [match_query(word) for word in words]
        asked = [(word, query) for word, query in zip(words, queries, strict=True) if query]
        one = (
            "(SELECT count(*) FROM (SELECT 1 FROM conversation_turns_fts"
            " WHERE conversation_turns_fts MATCH ? LIMIT ?))"
        )
        params: list[Any] = []
        for _, query in asked:
            params += [f"{{speaker user_text assistant_text}} : ({query})", cap + 1]
        high_water, *counts = conn.execute(
            ", ".join(["SELECT coalesce((SELECT max(rowid) FROM conversation_turns), 0)"]
                      + [one] * len(asked)),
            params,
        ).fetchone()  # fmt: skip
        found = dict.fromkeys(words, 0)
        found.update((word, int(count)) for (word, _), count in zip(asked, counts, strict=True))
        return WordCounts(int(high_water), found)

    async def get_turn(
        self, conn: aiosqlite.Connection, session_id: str, seq: int
    ) -> ConversationTurn | None:
        """Return one turn of a session, or ``None``."""
        return _first(await _select_turns(conn, "session_id = ? AND seq = ?", (session_id, seq)))

    def get_turn_texts(
        self, conn: sqlite3.Connection, session_id: str, seqs: list[int]
    ) -> list[TurnText]:
        """Return the turns of a session with these seqs (those that exist), in seq order.

        One query through the primary key, for the neighbours of retrieved turns; each turn is
        read as a :class:`TurnText`, not a model.
        """
        if not seqs:
            return []
        rows = conn.execute(
            f"SELECT {_TURN_TEXT_COLUMNS} FROM conversation_turns WHERE session_id = ?"
            " AND seq IN (SELECT value FROM json_each(?)) ORDER BY seq",
            (session_id, orjson.dumps(sorted(set(seqs)))),
        )
        return [_row_to_turn_text(row) for row in rows]

    async def mark_delivered(
        self,
        tx: aiosqlite.Connection,
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
        self, tx: aiosqlite.Connection, session_id: str, seq: int, *, error: str
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
        self, conn: aiosqlite.Connection, limit: int = 1000
    ) -> list[ConversationTurn]:
        """Return turns answered but not yet delivered nor refused, oldest first per session
        (I4)."""
        return await _select_turns(
            conn,
            "status = 'answered' AND delivery_error IS NULL ORDER BY session_id, seq LIMIT ?",
            (limit,),
        )

    async def delete_session(self, tx: aiosqlite.Connection, session_id: str) -> bool:
        """Delete a session and, by cascade, its turns; return whether it existed."""
        cursor = await tx.execute(
            "DELETE FROM conversation_sessions WHERE session_id = ?", (session_id,)
        )
        return cursor.rowcount == 1

    async def prune_sessions(
        self, tx: aiosqlite.Connection, *, inactive_since: datetime
    ) -> list[str]:
        """Delete sessions last active before ``inactive_since``; return their ids."""
        rows = await tx.execute_fetchall(
            "DELETE FROM conversation_sessions WHERE updated_at < ? RETURNING session_id",
            (to_db_time(inactive_since),),
        )
        return sorted(row["session_id"] for row in rows)
