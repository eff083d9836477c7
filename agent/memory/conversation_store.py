"""The turn log and the sessions table: SQL in, models out.

:class:`ConversationStore` is the storage protocol the lane depends on (DESIGN.md section 6);
:class:`SqliteConversationStore` implements it on SQLite, from three parts: the sessions table
(:mod:`agent.memory.storage.session_table`), the turn log (:mod:`agent.memory.storage.turn_log`)
and the turn search (:mod:`agent.memory.storage.turn_search`).
:class:`~agent.memory.storage.postgres_conversation_store.PostgresConversationStore` implements it
on PostgreSQL from their ``Postgres*`` counterparts, with the same words and the same BM25.
Write methods take the :class:`~agent.db.Transaction` handed out by
:meth:`agent.db.Database.write` and never commit; read methods take any transaction (normally
``db.reader``), retrieval's reads a :class:`~agent.db.Snapshot`. No method takes or returns a
driver's type. Tested in ``tests/test_conversation_store.py`` and, as the contract of
every backend, ``tests/test_store_conformance.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Protocol

from agent.db import Snapshot, Transaction
from agent.db.search import match_query, optimize_indexes
from agent.memory.schemas import (
    ChatType,
    ConversationSession,
    ConversationTurn,
    SessionState,
    SessionStatus,
)
from agent.memory.storage.session_table import EncodedState, SqliteSessionTable, encode_state
from agent.memory.storage.turn_log import SqliteTurnLog, TurnEdit
from agent.memory.storage.turn_search import SqliteTurnSearch, TurnText, WordCounts

__all__ = [
    "ConversationStore",
    "EncodedState",
    "SqliteConversationStore",
    "TurnEdit",
    "TurnText",
    "WordCounts",
    "encode_state",
    "match_query",
]


class ConversationStore(Protocol):
    """**Protocol:** the storage backend of the memory lane.

    Called by :class:`agent.memory.lane.ConversationLane` (and the inspection tools) for every
    read and write of sessions and turns. ``tx`` is the open write transaction
    (:meth:`agent.db.Database.write`); ``conn`` the write transaction or the database's reader.
    Implementations never commit. The reads of retrieval (``search_turn_texts``,
    ``word_counts``, ``get_turn_texts``) are synchronous, on a :class:`~agent.db.Snapshot`:
    the retriever runs them in the database's searcher thread
    (:meth:`agent.db.Database.read`). ``tests/test_store_conformance.py`` is the contract
    every implementation passes.
    """

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
        """Insert a new session for ``chat_id`` (open, unless ``closed_at``) and return it."""
        ...

    async def get_session(self, conn: Transaction, session_id: str) -> ConversationSession | None:
        """Return the session with this id, open or closed, or ``None``."""
        ...

    async def open_session_for_chat(
        self, conn: Transaction, chat_id: int
    ) -> ConversationSession | None:
        """Return the chat's open session, or ``None``."""
        ...

    async def existing_session_ids(self, conn: Transaction, session_ids: list[str]) -> set[str]:
        """Return which of ``session_ids`` are sessions in the database."""
        ...

    async def list_sessions(
        self,
        conn: Transaction,
        *,
        limit: int | None = 10,
        open_only: bool = False,
        status: SessionStatus | None = None,
        chat_id: int | None = None,
    ) -> list[ConversationSession]:
        """Return sessions, most recently active first."""
        ...

    def open_session_pages(self, conn: Transaction) -> AsyncIterator[list[ConversationSession]]:
        """Yield the open sessions a page at a time (hydration never holds all at once)."""
        ...

    async def save_state(
        self,
        tx: Transaction,
        state: SessionState,
        *,
        last_seq: int,
        now: datetime,
        encoded: EncodedState | None = None,
    ) -> None:
        """Store a session's new state, its counters and its status (``encoded``: as
        :func:`encode_state` made it; else made here)."""
        ...

    async def checkpoint_unknown(self, conn: Transaction, limit: int | None = None) -> list[str]:
        """Return the open sessions whose checkpoint is not recorded at their last turn (at
        most ``limit``)."""
        ...

    async def open_sessions_with_jobs(self, conn: Transaction) -> list[ConversationSession]:
        """Return the open sessions whose state has active jobs (reminders)."""
        ...

    async def record_checkpoints(self, tx: Transaction, written: Sequence[tuple[str, int]]) -> int:
        """Record ``(session_id, seq)`` checkpoints as written, where the row is still at
        ``seq``; return how many were recorded."""
        ...

    async def checkpoint_records(
        self, conn: Transaction, session_ids: Sequence[str]
    ) -> dict[str, int | None]:
        """Return the recorded checkpoint seq (``None``: unknown) of each of ``session_ids``
        that is in the database (one query)."""
        ...

    async def set_status(self, tx: Transaction, status: SessionStatus, *, now: datetime) -> int:
        """Set the status of every open session; return how many changed."""
        ...

    async def close_session(self, tx: Transaction, session_id: str, *, now: datetime) -> None:
        """Close a session so that its chat's next message opens a new one."""
        ...

    async def reopen_session(self, tx: Transaction, session_id: str, *, now: datetime) -> bool:
        """Make a closed session its chat's open one again; ``False`` if it is not closed."""
        ...

    async def first_words(self, conn: Transaction, session_ids: Sequence[str]) -> dict[str, str]:
        """Return the first user message of each of ``session_ids`` that has one."""
        ...

    async def append_turn(self, tx: Transaction, turn: ConversationTurn) -> bool:
        """Append a turn; return ``False`` (and change nothing) if its update is known."""
        ...

    async def turn_for_update(
        self, conn: Transaction, bot_id: int, update_id: int
    ) -> ConversationTurn | None:
        """Return the turn recorded for a Telegram update, or ``None``."""
        ...

    def recorded_turn(self, conn: Snapshot, bot_id: int, update_id: int) -> ConversationTurn | None:
        """:meth:`turn_for_update` on a :class:`~agent.db.Snapshot`: the packet's read looks
        the message's update up in the same hand-over as its retrieval."""
        ...

    async def turn_for_message(
        self, conn: Transaction, bot_id: int, chat_id: int, message_id: int
    ) -> ConversationTurn | None:
        """Return the turn of a chat's Telegram message (in any of its sessions), or ``None``."""
        ...

    async def edit_known(self, conn: Transaction, bot_id: int, update_id: int) -> bool:
        """Return whether the edit a Telegram update carries was recorded already."""
        ...

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
        """Replace a turn's user text, keeping ``previous_text`` as its edit history; return
        ``False`` (and change nothing) if the edit's update is known or the turn is not as
        ``previous_text`` says."""
        ...

    async def erase_turn_text(self, tx: Transaction, session_id: str, seq: int) -> bool:
        """Empty a turn's user text and reply (and its edits' texts), its index row and
        vector with them; return whether the turn exists."""
        ...

    async def turn_edits(self, conn: Transaction, session_id: str, seq: int) -> list[TurnEdit]:
        """Return the edit history of a turn, oldest edit first."""
        ...

    async def recent_turns(
        self, conn: Transaction, session_id: str, limit: int
    ) -> list[ConversationTurn]:
        """Return the last ``limit`` turns of a session, oldest first."""
        ...

    async def recent_turns_of(
        self, conn: Transaction, session_ids: Sequence[str], limit: int
    ) -> dict[str, list[ConversationTurn]]:
        """Return the last ``limit`` turns of each session, oldest first (one read for all)."""
        ...

    async def recent_turns_within(
        self, conn: Transaction, session_id: str, max_tokens: int
    ) -> list[ConversationTurn]:
        """Return the longest run of latest turns whose text fits ``max_tokens``, oldest first."""
        ...

    def iter_turns(self, conn: Transaction, session_id: str) -> AsyncIterator[ConversationTurn]:
        """Yield every turn of a session in order (for rebuilds and exports)."""
        ...

    def search_turn_texts(
        self,
        conn: Snapshot,
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

    def word_counts(self, conn: Snapshot, words: list[str], *, cap: int) -> WordCounts:
        """Return in how many turns (of all sessions) each word occurs, counting up to
        ``cap + 1``, and the turn log's high-water mark at that moment (see
        :class:`WordCounts`)."""
        ...

    async def get_turn(
        self, conn: Transaction, session_id: str, seq: int
    ) -> ConversationTurn | None:
        """Return one turn of a session, or ``None``."""
        ...

    def get_turn_texts(self, conn: Snapshot, session_id: str, seqs: list[int]) -> list[TurnText]:
        """Return the turns of a session with these seqs (those that exist), in seq order, as
        retrieval reads them (the neighbours of its hits)."""
        ...

    async def mark_delivered(
        self, tx: Transaction, session_id: str, seq: int, *, message_id: int, now: datetime
    ) -> None:
        """Record that a turn's reply was sent as Telegram message ``message_id``."""
        ...

    async def mark_undeliverable(
        self, tx: Transaction, session_id: str, seq: int, *, error: str
    ) -> None:
        """Record that Telegram refused a turn's reply for good (it is never resent), and why."""
        ...

    async def undelivered_turns(
        self, conn: Transaction, limit: int = 1000
    ) -> list[ConversationTurn]:
        """Return turns answered but not yet delivered nor refused, oldest first per session."""
        ...

    async def delete_session(self, tx: Transaction, session_id: str) -> bool:
        """Delete a session and everything of it; return whether it existed."""
        ...

    async def prune_sessions(self, tx: Transaction, *, inactive_since: datetime) -> list[str]:
        """Delete sessions last active before ``inactive_since``; return their ids."""
        ...

    async def purge_search(self, tx: Transaction) -> None:
        """Make erased turns, summaries and memories leave no trace in the search indexes
        (run in the transaction that erased them)."""
        ...


class SqliteConversationStore(SqliteSessionTable, SqliteTurnLog, SqliteTurnSearch):
    """The :class:`ConversationStore` on SQLite (tables of ``schema.sql``, migration 0001).

    Each part holds the statements of its tables; this class only puts them together.
    """

    async def purge_search(self, tx: Transaction) -> None:
        """Merge the full-text indexes so that erased rows leave no trace in their pages
        (FTS5 ``optimize``, :func:`agent.db.search.optimize_indexes`). Its cost is
        proportional to the indexes; erasing is rare."""
        await optimize_indexes(tx)
