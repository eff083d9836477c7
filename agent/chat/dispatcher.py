"""Runs work per chat: strictly in order within a chat, concurrently across chats.

Each chat with work waiting gets one worker task that drains the chat's queue in submission
order and ends when the queue is empty; a semaphore caps how many chats run at once. A worker
holds its slot for one item at a time and then queues for it again, behind the chats already
waiting (the semaphore wakes its waiters first come, first served). Past the cap, the busy
chats take turns: a chat whose queue never empties (a busy group, a user who writes faster
than the bot answers) cannot keep its slot while the chats waiting for one go unanswered.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["ChatDispatcher"]

logger = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class ChatDispatcher(Generic[K, T]):
    """Feeds items to ``handle``, one at a time per key, many keys at once.

    Args:
        handle: awaited once per item; an exception is logged and the chat goes on with its
            next item (the handler is responsible for recording the failure).
        max_concurrent: how many keys may be handled at the same moment.
    """

    def __init__(self, handle: Callable[[K, T], Awaitable[None]], *, max_concurrent: int = 256):
        self._handle = handle
        self._queues: dict[K, deque[T]] = {}
        self._workers: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(max_concurrent)
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False

    def submit(self, key: K, item: T) -> None:
        """Queue ``item`` behind everything already queued for ``key``.

        Raises:
            RuntimeError: the dispatcher is shut down.
        """
        if self._closed:
            raise RuntimeError("ChatDispatcher is shut down; no new work is accepted")
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(item)
            return
        self._queues[key] = deque([item])
        self._idle.clear()
        # A fresh context: the worker must not inherit the submitter's log fields (a reminder
        # job would otherwise log under the update_id of the message that set it).
        worker = asyncio.create_task(
            self._drain(key), name=f"chat-{key}", context=contextvars.Context()
        )
        self._workers.add(worker)
        worker.add_done_callback(self._worker_done)

    async def _drain(self, key: K) -> None:
        queue = self._queues[key]
        try:
            while queue:
                # One item per turn of the slot: with chats waiting, this one goes behind them.
                # (Without any, acquiring a free slot does not even yield to the event loop.)
                async with self._slots:
                    try:
                        await self._handle(key, queue[0])
                    except Exception:
                        logger.exception("handling work of chat %s failed", key)
                    finally:
                        queue.popleft()
        finally:
            # Done, or cancelled at shutdown (what was queued is rebuilt at the next start from
            # the journal, the undelivered turns and the active jobs): the next submit for
            # this chat starts a fresh worker.
            del self._queues[key]

    def _worker_done(self, worker: asyncio.Task[None]) -> None:
        self._workers.discard(worker)
        if not worker.cancelled() and worker.exception() is not None:
            logger.error("chat worker died", exc_info=worker.exception())
        if not self._workers:
            self._idle.set()

    @property
    def busy_chats(self) -> int:
        """How many chats have work queued or running."""
        return len(self._queues)

    async def join(self) -> None:
        """Wait until every queued item has been handled."""
        await self._idle.wait()

    async def shutdown(self) -> None:
        """Stop accepting work and wait for what is queued to finish."""
        self._closed = True
        await self.join()
