"""One chat's journaled updates in ``update_id`` order, whichever worker received them.

With several bot processes (issue 18, section 3), the updates of one chat reach different
workers (a load balancer sends webhooks round-robin). Each worker journals what it receives
(:meth:`InboundJournal.record <agent.chat.inbound_journal.InboundJournal.record>`, before
Telegram is answered: I1) and then calls :meth:`JournalDrain.drain` for that chat, which

1. takes the chat's lock (:class:`~agent.db.locks.ChatLocks`: one holder across every worker);
2. reads the chat's pending entries, oldest ``update_id`` first
   (:meth:`~agent.chat.inbound_journal.InboundJournal.pending_of_chat`), and hands each to
   ``process``, which leaves it done or failed (the chat service marks it, after the turn's
   commit) before the next is read; it reads what was pending when it began (batch after
   batch while a batch comes back full), not what is journaled meanwhile: that is the next
   drain's, which its arrival queued, so that a chat whose user keeps writing lets go of its
   lock between drains and a worker's other chats get their turn (a worker holds at most as
   many chats as its lock pool has connections: endless drains of a few busy chats starved
   every other chat, found by ``bench/throughput_postgres.py``);
3. lets the lock go.

So the entries of a chat are processed one at a time and in order, and each once: an entry a
holder marked done is not pending for the next holder, who reads the journal only once it
holds the lock. Whoever drains first processes what the others journaled too; a drain that
finds nothing pending (another worker took its update) returns at once. A worker that dies
mid-entry releases the lock with its connection; the entry, still pending, is processed by the
next drain of the chat, or by :meth:`JournalDrain.sweep`, and the turn log's key ``(bot_id,
update_id)`` keeps it one turn (I3).

Order is the order of what is journaled when a drain reads: Telegram sends an update once the
previous one was answered (and a worker answers once it journaled), so a chat's updates are
journaled in order. An entry that ``process`` leaves pending (a failed attempt below the limit,
a write the database refused) is tried again by a later drain, not by this one.

Tested in ``tests/test_journal_drain.py`` (SQLite, and two PostgreSQL pools draining at once).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.db import ChatLocks

__all__ = ["JournalDrain", "ProcessEntry"]

logger = logging.getLogger(__name__)

#: Processes one journaled update and marks it done or failed in the journal (the chat
#: service's handler); called under the chat's lock, one entry at a time.
ProcessEntry = Callable[[JournalEntry], Awaitable[None]]


class JournalDrain:
    """Processes a chat's journaled updates in order under the chat's lock.

    Args:
        journal: this bot's inbound journal.
        locks: the chat locks shared by every worker of the bot.
        process: handles one entry and records its outcome in the journal.
        batch: entries read from the journal at a time.
    """

    def __init__(
        self,
        journal: InboundJournal,
        locks: ChatLocks,
        process: ProcessEntry,
        *,
        batch: int = 100,
    ) -> None:
        self._journal = journal
        self._locks = locks
        self._process = process
        self._batch = batch

    async def drain(self, chat_id: int) -> int:
        """Take the chat's lock and process its pending entries, oldest first
        (:meth:`drain_held`); return how many were processed.

        Args:
            chat_id: the chat (``0``: the updates of no chat).

        Raises:
            Exception: what ``process`` raised (the lock is let go; the entry stays pending).
        """
        async with self._locks.hold(chat_id):
            return await self.drain_held(chat_id)

    async def drain_held(self, chat_id: int) -> int:
        """Process the chat's pending entries, oldest first, for a caller that holds the chat's
        lock already (the chat service, around all of a chat's work); return how many.

        Raises:
            Exception: what ``process`` raised (the entry stays pending).
        """
        processed = 0
        after: int | None = None
        while entries := await self._journal.pending_of_chat(
            chat_id, after=after, limit=self._batch
        ):
            for entry in entries:
                await self._process(entry)
                processed += 1
            # Past what this drain tried: an entry left pending waits for a later drain.
            after = entries[-1].update_id
            if len(entries) < self._batch:  # all that was pending: what came since is the
                break  # next drain's (its arrival queued one)
        if processed:
            logger.debug("drained %d journal entries of chat %s", processed, chat_id)
        return processed

    async def sweep(self, *, older_than: timedelta) -> int:
        """Drain every chat with entries pending for longer than ``older_than`` (a worker died
        with them, or no update of the chat came since); return how many were processed.

        A maintenance job of every worker: a chat another worker holds is waited for.
        """
        processed = 0
        for chat_id in await self._journal.pending_chats(older_than=older_than):
            processed += await self.drain(chat_id)
        if processed:
            logger.info("processed %d journal entries left pending", processed)
        return processed
