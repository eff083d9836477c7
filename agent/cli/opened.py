"""The memory a command works on: the bot's database and checkpoints, opened as the bot does.

:class:`OpenedMemory` builds the memory lane from the bot's own settings
(:func:`agent.app.wiring.build_lane`: same database, checkpoint directory, summary and retrieval
settings) but never hydrates it or shuts it down: both write (session statuses, checkpoint
files) and belong to the bot. Commands read, check and repair through the lane's
:class:`~agent.memory.MemoryInspector`, and erase through the lane. Reads go through the
database's read-only connections, which in WAL mode never wait for a running bot; writes take
the same lock as the bot's writes and give up with :class:`~agent.errors.DatabaseLocked` after
``AGENT_DB_LOCK_TIMEOUT`` seconds.

The checkpoint directory is the one the bot recorded in its database (an absolute path, written
at each start: :mod:`agent.db.bot_settings`), so that a command run from any directory finds
the bot's files; ``--checkpoints`` overrides it, and without either the settings' own
(``AGENT_CHECKPOINT_DIR``) is used. :meth:`OpenedMemory.check_repairable` refuses a repair
anywhere but in the bot's directory.

Sessions are named on the command line by their id or, for a chat's open session, by
``chat:<chat id>`` (:class:`~agent.cli.arguments.SessionRef`).
Tested by ``tests/test_cli.py``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Self

from agent.app.wiring import build_lane, open_database
from agent.cli.arguments import CommandError, SessionRef
from agent.cli.render import Output
from agent.config import Settings
from agent.db import AnyDatabase
from agent.db.bot_settings import CHECKPOINT_DIR, recorded_setting
from agent.db.migrations import schema_version
from agent.errors import SessionNotFound, StorageError
from agent.memory import ConversationLane, ConversationSession, MemoryInspector

__all__ = ["Handler", "OpenedMemory"]

#: What a command runs: given the opened memory, its arguments and stdout; returns the exit code.
Handler = Callable[["OpenedMemory", argparse.Namespace, Output], Awaitable[int]]


class OpenedMemory:
    """The bot's memory, opened for one command; use it as an async context manager.

    Args:
        settings: the bot's settings (database path, checkpoint directory, summary and
            retrieval settings, lock timeout).
        checkpoints: the checkpoint directory named on the command line (``None``: the one
            the bot recorded, else the settings').
    """

    def __init__(self, settings: Settings, *, checkpoints: Path | None = None) -> None:
        self.settings = settings
        self._given = checkpoints
        #: The checkpoint directory the bot recorded in its database, if it did.
        self.recorded_checkpoints: Path | None = None
        self._lane: ConversationLane | None = None
        self._db: AnyDatabase | None = None

    async def __aenter__(self) -> Self:
        """Open the database (never creating one) and build the lane.

        Raises:
            ConfigError: PostgreSQL is named but its extra is not installed.
            StorageError: there is no database at the path, it is not the bot's, or it
                cannot be opened.
        """
        await self._check_schema()
        # Model summaries run in the bot only; a tool never starts them.
        settings = self.settings.model_copy(update={"llm_summarizer": False})
        self._db = await open_database(settings)
        try:
            recorded = await recorded_setting(self._db, CHECKPOINT_DIR)
        except BaseException:
            await self._db.close()
            raise
        self.recorded_checkpoints = Path(recorded) if recorded is not None else None
        directory = self._given or self.recorded_checkpoints
        if directory is not None:
            settings = settings.model_copy(update={"checkpoint_dir": directory})
        self.settings = settings
        self._lane = build_lane(settings, self._db)
        return self

    def check_repairable(self) -> None:
        """Refuse to write checkpoint files anywhere but in the bot's checkpoint directory.

        Raises:
            CommandError: ``--checkpoints`` names another directory than the one the bot
                recorded; or the bot recorded none and the directory does not exist (a
                command never creates one where the bot may not look).
        """
        if not self.settings.checkpoint_files:
            return  # rows: nothing is written outside the database
        target = self.settings.checkpoint_dir.resolve()
        recorded = self.recorded_checkpoints
        if recorded is not None and target != recorded:
            raise CommandError(
                f"--repair writes only into the bot's checkpoint directory, {recorded} "
                f"(recorded in the database), not {target}; leave out --checkpoints"
            )
        if recorded is None and not target.is_dir():
            raise CommandError(
                f"no checkpoint directory at {target}: --repair never creates one; pass "
                "--checkpoints DIR, the bot's AGENT_CHECKPOINT_DIR (nothing was written)"
            )

    async def _check_schema(self) -> None:
        """Refuse a database that is not the bot's before opening it (opening migrates)."""
        url = self.settings.database_url
        if url is not None:
            try:
                from agent.db.postgres import postgres_schema_version  # the `postgres` extra
            except ImportError:
                return  # open_database says what to install
            if await postgres_schema_version(url.get_secret_value()) < 1:
                raise StorageError(
                    "the PostgreSQL database of AGENT_DATABASE_URL is not one of this bot "
                    "(no schema version): start the bot on it first"
                )
            return
        path = self.settings.db_path
        if not path.is_file():
            raise StorageError(f"no database at {path}: set AGENT_DB_PATH or pass --db")
        if await asyncio.to_thread(schema_version, path) < 1:
            raise StorageError(f"{path} is not a database of this bot (no schema version)")

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the database (the lane's shutdown sequence is the bot's, not ours)."""
        if self._lane is not None:
            await self._lane.close()

    @property
    def lane(self) -> ConversationLane:
        """The lane, never hydrated: what a command erases goes through it."""
        if self._lane is None:
            raise RuntimeError("OpenedMemory is not open: use `async with OpenedMemory(settings)`")
        return self._lane

    @property
    def inspector(self) -> MemoryInspector:
        """The lane's read, check and repair door."""
        return self.lane.inspector

    @property
    def database(self) -> AnyDatabase:
        """The bot's database (the inbound journal's too: ``forget`` erases a chat's entries)."""
        if self._db is None:
            raise RuntimeError("OpenedMemory is not open: use `async with OpenedMemory(settings)`")
        return self._db

    async def session(self, ref: SessionRef) -> ConversationSession:
        """Return the session a SESSION argument names.

        Raises:
            SessionNotFound: no such session, or the chat has no open session.
        """
        inspector = self.inspector
        if ref.session_id is not None:
            session = await inspector.session(ref.session_id)
            if session is None:
                raise SessionNotFound(f"no session {ref.session_id}")
            return session
        session = await inspector.open_session(ref.chat_id)
        if session is None:
            raise SessionNotFound(f"chat {ref.chat_id} has no open session")
        return session
