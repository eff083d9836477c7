"""Locks between the workers of one bot: per-chat order, and the one leader that polls.

Two protocols, each with an implementation for one process (SQLite: one process owns the
database file) and one across processes (PostgreSQL advisory locks,
:mod:`agent.db.postgres_locks`):

* :class:`ChatLocks`: ``async with locks.hold(chat_id):`` admits one holder per chat at a time,
  so that a chat's journaled updates, reminders and commands run one after the other whichever
  worker received them. :class:`LocalChatLocks` is an ``asyncio.Lock`` per chat, dropped when no
  task holds or waits for it.
* :class:`LeaderLock`: the one worker that polls Telegram (issue 18, section 3). :class:`SoleLeader`
  is held at once and never lost: the one process is the leader.

A lock across processes lives as long as its holder's database connection: a worker that dies
(even by SIGKILL) loses its connection, and the server releases what it held. Tested in
``tests/test_locks.py`` (both implementations, on the real server for PostgreSQL).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

__all__ = ["ChatLocks", "LeaderLock", "LocalChatLocks", "SoleLeader"]


class ChatLocks(Protocol):
    """**Protocol:** one holder per chat at a time, across every worker of the bot.

    Held by whoever runs a chat's work (the chat service, around a chat's pending journal
    entries, a due reminder, a command) for the whole of that work: the turn's commit, the send
    and the delivery record. Not reentrant: a holder must not ask for its own chat again.
    """

    def hold(self, chat_id: int) -> AbstractAsyncContextManager[None]:
        """Wait until no other holder has ``chat_id``, and hold it for the ``async with``."""
        ...

    async def close(self) -> None:
        """Let go of the resources (connections) the locks use. Idempotent."""
        ...


class LeaderLock(Protocol):
    """**Protocol:** one leader among the workers of a bot (the one that polls Telegram).

    The poller's loop: :meth:`acquire`, poll until :meth:`wait_lost` returns (the lock's
    connection broke: another worker may lead already, so polling must stop), then acquire
    again; :meth:`release` at shutdown.
    """

    @property
    def held(self) -> bool:
        """Whether this worker leads now."""
        ...

    async def acquire(self) -> None:
        """Wait until this worker leads (at once if it does already)."""
        ...

    async def wait_lost(self) -> None:
        """Return when this worker stops leading (it may have to poll again: :meth:`acquire`)."""
        ...

    async def release(self) -> None:
        """Stop leading, so that another worker takes over. Idempotent."""
        ...


class LocalChatLocks:
    """:class:`ChatLocks` within one process: an ``asyncio.Lock`` per chat.

    A chat's lock exists while a task holds or waits for it, so the table is as large as the
    number of busy chats, not of every chat ever seen.
    """

    def __init__(self) -> None:
        self._locks: dict[int, asyncio.Lock] = {}
        self._users: dict[int, int] = {}

    @asynccontextmanager
    async def hold(self, chat_id: int) -> AsyncIterator[None]:
        """Wait for the chat's lock and hold it for the ``async with``."""
        lock = self._locks.setdefault(chat_id, asyncio.Lock())
        self._users[chat_id] = self._users.get(chat_id, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[chat_id] -= 1
            if not self._users[chat_id]:
                del self._users[chat_id], self._locks[chat_id]

    @property
    def busy_chats(self) -> int:
        """How many chats are held or waited for now."""
        return len(self._locks)

    async def close(self) -> None:
        """Nothing to let go of."""


class SoleLeader:
    """:class:`LeaderLock` of a bot that runs as one process: it always leads."""

    def __init__(self) -> None:
        self._released = asyncio.Event()

    @property
    def held(self) -> bool:
        """Whether :meth:`release` has not been called."""
        return not self._released.is_set()

    async def acquire(self) -> None:
        """Return at once: the one process leads (again, after a :meth:`release`)."""
        self._released.clear()

    async def wait_lost(self) -> None:
        """Return only once :meth:`release` was called: nothing else takes the lead."""
        await self._released.wait()

    async def release(self) -> None:
        """Stop leading."""
        self._released.set()
