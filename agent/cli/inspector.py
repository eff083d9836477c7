"""The memory a command inspects: the bot's database and checkpoints, opened as the bot does.

:class:`Inspector` builds the memory lane from the bot's own settings
(:func:`agent.app.wiring.open_lane`: same database, checkpoint directory, summary and retrieval
settings) but never hydrates it or shuts it down: both write (session statuses, checkpoint
files) and belong to the bot. Reads go through the database's read-only connections (the
reader, and the searcher for retrieval), which in WAL mode never wait for a running bot;
writes go through :meth:`agent.db.Database.write`, which takes the same lock as the bot's
writes and gives up with :class:`~agent.errors.DatabaseLocked` after
``AGENT_DB_LOCK_TIMEOUT`` seconds.

Sessions are named on the command line by their id or, for a chat's open session, by
``chat:<chat id>`` (:class:`~agent.cli.arguments.SessionRef`).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Self

from agent.app.wiring import open_lane
from agent.cli.arguments import SessionRef
from agent.cli.render import Output
from agent.config import Settings
from agent.errors import SessionNotFound, StorageError
from agent.memory import (
    CheckpointAudit,
    ConversationContextPacket,
    ConversationLane,
    ConversationSession,
    ConversationTurn,
    RetrievedItem,
)

__all__ = ["Handler", "Inspector"]

#: What a command runs: given the opened memory, its arguments and stdout; returns the exit code.
Handler = Callable[["Inspector", argparse.Namespace, Output], Awaitable[int]]


def _schema_version(path: Path) -> int:
    # Read-only and outside the migration runner: a file that is not the bot's database must
    # be refused before anything writes to it (opening migrates).
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read database {path}: {exc}") from exc


class Inspector:
    """The bot's memory, opened for one command; use it as an async context manager.

    Args:
        settings: the bot's settings (database path, checkpoint directory, summary and
            retrieval settings, lock timeout).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lane: ConversationLane | None = None
        self._audit: CheckpointAudit | None = None

    async def __aenter__(self) -> Self:
        """Open the database (never creating one) and build the lane.

        Raises:
            StorageError: there is no database at the path, it is not the bot's, or it
                cannot be opened.
        """
        path = self.settings.db_path
        if not path.is_file():
            raise StorageError(f"no database at {path}: set AGENT_DB_PATH or pass --db")
        if await asyncio.to_thread(_schema_version, path) < 1:
            raise StorageError(f"{path} is not a database of this bot (no schema version)")
        # Model summaries run in the bot only; a tool never starts them.
        lane = await open_lane(self.settings.model_copy(update={"llm_summarizer": False}))
        self._lane = lane
        self._audit = CheckpointAudit(
            lane.checkpoints, lane.store, recent_turns=lane.builder.recent_turns, clock=lane.now
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the database (the lane's shutdown sequence is the bot's, not ours)."""
        if self._lane is not None:
            await self._lane.db.close()

    @property
    def lane(self) -> ConversationLane:
        """The lane: its store, state rules, builder, retriever and checkpoint writer."""
        if self._lane is None:
            raise RuntimeError("Inspector is not open: use `async with Inspector(settings)`")
        return self._lane

    @property
    def audit(self) -> CheckpointAudit:
        """Compares checkpoint files with the database."""
        if self._audit is None:
            raise RuntimeError("Inspector is not open: use `async with Inspector(settings)`")
        return self._audit

    async def session(self, ref: SessionRef) -> ConversationSession:
        """Return the session a SESSION argument names.

        Raises:
            SessionNotFound: no such session, or the chat has no open session.
        """
        lane = self.lane
        if ref.session_id is not None:
            session = await lane.store.get_session(lane.db.reader, ref.session_id)
            if session is None:
                raise SessionNotFound(f"no session {ref.session_id}")
            return session
        session = await lane.store.open_session_for_chat(lane.db.reader, ref.chat_id)
        if session is None:
            raise SessionNotFound(f"chat {ref.chat_id} has no open session")
        return session

    async def recent(self, session: ConversationSession) -> list[ConversationTurn]:
        """Return the session's latest turns, as many as the lane keeps for its packets."""
        lane = self.lane
        count = max(lane.builder.recent_turns, 1)
        return await lane.store.recent_turns(lane.db.reader, session.session_id, count)

    async def packet(self, session: ConversationSession) -> ConversationContextPacket:
        """Return the packet the session's next reply would get, as ``/memory`` shows it.

        The bot's builder and retriever, with the retrieval query ``/memory`` uses: the
        session's last message (the next one is not known yet).
        """
        lane = self.lane
        state, now = session.state, lane.now()
        recent = await self.recent(session)
        chat = session.chat_id
        memories = await lane.chat_memories(chat)
        retrieved = await lane.db.read(
            partial(
                lane.retriever.for_packet,
                chat_id=chat,
                session_id=session.session_id,
                text=recent[-1].user_text if recent else "",
                now=now,
                state=state,
                recent_turns=lane.builder.recent_turns,
                token_budget=lane.builder.token_budget,
            )
        )
        return lane.builder.build(state, recent, now=now, memories=memories, retrieved=retrieved)

    async def recall(
        self, session: ConversationSession, words: str, limit: int
    ) -> list[RetrievedItem]:
        """Search a session and its chat's memories for ``words``, best first (``/recall``).

        The bot's retriever and scores, over every turn of the session, without the topic
        query (what is searched is the words alone).
        """
        lane = self.lane
        recall = partial(
            lane.retriever.recall,
            chat_id=session.chat_id,
            session_id=session.session_id,
            words=words,
            now=lane.now(),
            state=session.state,
        )
        return (await lane.db.read(recall))[:limit]
