"""One chat's journaled updates in order, across workers (agent/chat/journal_drain.py), and the
journal's per-chat queries it reads (agent/chat/inbound_journal.py).

Each test runs on both backends of the ``workers`` fixture: ``sqlite`` (one process: one
database file and in-process chat locks, shared by the two "workers") and ``postgres`` (two
workers, each with its own pools: a :class:`PostgresDatabase` and :class:`PostgresChatLocks`,
on the real server, marked ``postgres``).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.chat.journal_drain import JournalDrain
from agent.db import AnyDatabase, ChatLocks, Database, LocalChatLocks
from tests.clock import Clock

BOT = 777


@dataclass
class Worker:
    name: str
    db: AnyDatabase
    locks: ChatLocks
    journal: InboundJournal
    clock: Clock


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def workers(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[list[Worker]]:
    """Two workers of one bot on one database, with a fake clock each (set together)."""
    clock = Clock()
    if request.param == "sqlite":
        locks = LocalChatLocks()
        async with Database(tmp_path / "drain.db") as db:
            yield [Worker(n, db, locks, InboundJournal(db, BOT, clock=clock), clock) for n in "ab"]
        return
    from agent.db.postgres import PostgresDatabase  # the `postgres` extra
    from agent.db.postgres_locks import PostgresChatLocks

    url, scope = request.getfixturevalue("postgres_url"), uuid.uuid4().hex
    async with (
        PostgresDatabase(url) as db_a,
        PostgresDatabase(url) as db_b,
        PostgresChatLocks(url, scope) as locks_a,
        PostgresChatLocks(url, scope) as locks_b,
    ):
        yield [
            Worker("a", db_a, locks_a, InboundJournal(db_a, BOT, clock=clock), clock),
            Worker("b", db_b, locks_b, InboundJournal(db_b, BOT, clock=clock), clock),
        ]


def entry(update_id: int, chat_id: int | None = 7) -> JournalEntry:
    return JournalEntry(update_id=update_id, chat_id=chat_id, payload=f'{{"u": {update_id}}}')


async def test_interleaved_updates_of_a_chat_are_processed_in_order_once(workers):
    """Updates of two chats reach the two workers alternately; each worker journals an update
    (then "answers Telegram", which sends the next) and drains the update's chat in a task of
    its own. Every update is processed once, each chat's in ``update_id`` order, never two of
    one chat at the same moment, while the two chats run side by side."""
    processed: dict[int, list[int]] = {7: [], 8: []}
    running: dict[int, int] = {7: 0, 8: 0}
    overlaps: list[int] = []

    def processor(worker: Worker):
        async def process(e: JournalEntry) -> None:
            chat = e.chat_id or 0
            running[chat] += 1
            if running[chat] > 1:
                overlaps.append(e.update_id)
            await asyncio.sleep(random.uniform(0, 0.004))
            processed[chat].append(e.update_id)
            running[chat] -= 1
            await worker.journal.mark_done(e.update_id)

        return process

    drains = [JournalDrain(w.journal, w.locks, processor(w)) for w in workers]
    tasks: list[tuple[int, asyncio.Task[int]]] = []
    sent = {7: list(range(1, 121, 2)), 8: list(range(2, 121, 2))}
    for update_id in range(1, 121):
        worker = update_id % 4 // 2  # a, a, b, b, ...: each chat's updates alternate workers
        chat = 7 if update_id % 2 else 8
        assert await workers[worker].journal.record([entry(update_id, chat)])
        tasks.append((worker, asyncio.create_task(drains[worker].drain(chat))))
        await asyncio.sleep(random.uniform(0, 0.002))
    counts = await asyncio.gather(*(task for _, task in tasks))

    assert processed == sent
    assert sum(counts) == 120
    by_worker = [sum(n for (w, _), n in zip(tasks, counts, strict=True) if w == i) for i in (0, 1)]
    assert min(by_worker) > 0, by_worker  # both workers processed some of each other's
    assert overlaps == []
    assert await workers[0].journal.pending() == []


async def test_a_chats_pending_entries_read_in_order_after_a_point(workers):
    """``pending_of_chat`` returns one chat's pending entries by ``update_id`` (``0``: the
    entries of no chat), after a given one, at most ``limit``; ``pending_chats`` names the chats
    with entries pending for longer than a while, the chat of the oldest first."""
    journal = workers[0].journal
    await journal.record([entry(5), entry(3), entry(4, 8), entry(9), entry(6, None)])
    await journal.mark_done(5)
    assert [e.update_id for e in await journal.pending_of_chat(7)] == [3, 9]
    assert [e.update_id for e in await journal.pending_of_chat(7, after=3)] == [9]
    assert [e.update_id for e in await journal.pending_of_chat(7, limit=1)] == [3]
    assert [(e.update_id, e.chat_id) for e in await journal.pending_of_chat(0)] == [(6, None)]
    assert await journal.pending_of_chat(9) == []

    clock = workers[0].clock
    assert await journal.pending_chats(older_than=timedelta(seconds=30)) == []
    clock.advance(minutes=1)
    await journal.record([entry(1, 9)])
    assert await journal.pending_chats(older_than=timedelta(seconds=30)) == [7, 8, 0]
    clock.advance(seconds=1)
    assert await journal.pending_chats(older_than=timedelta(0)) == [9, 7, 8, 0]


async def test_an_entry_left_pending_waits_for_the_next_drain(workers):
    """An entry its processing leaves pending (a failed attempt below the limit) is not tried
    again by the same drain, which goes on with the chat's next entries; the next drain tries
    it first. What ``process`` raises ends the drain, lets the lock go and leaves the entry
    pending."""
    journal, locks = workers[0].journal, workers[0].locks
    seen: list[int] = []
    fail_once = {2}

    async def process(e: JournalEntry) -> None:
        seen.append(e.update_id)
        if e.update_id in fail_once:
            fail_once.discard(e.update_id)
            await journal.mark_failed_attempt(e.update_id, "handler failed")
            return
        if e.update_id == 4:
            raise RuntimeError("the handler broke")
        await journal.mark_done(e.update_id)

    drain = JournalDrain(journal, locks, process, batch=2)
    await journal.record([entry(1), entry(2), entry(3)])
    assert await drain.drain(7) == 3
    assert seen == [1, 2, 3]
    await journal.record([entry(4), entry(5)])
    with pytest.raises(RuntimeError, match="broke"):
        await drain.drain(7)
    assert seen == [1, 2, 3, 2, 4]
    async with asyncio.timeout(1), workers[1].locks.hold(7):
        pass  # the lock was let go
    assert [e.update_id for e in await journal.pending_of_chat(7)] == [4, 5]


async def test_a_sweep_processes_what_a_dead_worker_journaled(workers):
    """Entries a worker journaled and never processed (it died) are processed, in order, by
    another worker's sweep once they are older than the sweep's age (a swept chat's younger
    entries with them); a chat with young entries only is left to its own worker's drain."""
    dead, alive = workers
    await dead.journal.record([entry(1), entry(3), entry(2, 8)])
    processed: list[int] = []

    async def process(e: JournalEntry) -> None:
        processed.append(e.update_id)
        await alive.journal.mark_done(e.update_id)

    drain = JournalDrain(alive.journal, alive.locks, process)
    assert await drain.sweep(older_than=timedelta(seconds=30)) == 0
    alive.clock.advance(minutes=1)
    await dead.journal.record([entry(4, 9), entry(5)])
    assert await drain.sweep(older_than=timedelta(seconds=30)) == 4
    assert processed == [1, 3, 5, 2]
    assert [e.update_id for e in await alive.journal.pending()] == [4]


async def test_a_caller_holding_the_chat_drains_it_without_asking_again(workers):
    """``drain_held`` runs the chat's entries for a caller that holds the chat's lock (the chat
    service around all of a chat's work): it does not ask for the lock again, and the other
    worker's drain of the chat waits until the caller lets go, then finds nothing left."""
    one, two = workers
    processed: list[int] = []

    async def process(e: JournalEntry) -> None:
        processed.append(e.update_id)
        await one.journal.mark_done(e.update_id)

    await one.journal.record([entry(1), entry(2)])
    async with one.locks.hold(7):
        other = asyncio.create_task(JournalDrain(two.journal, two.locks, process).drain(7))
        assert await JournalDrain(one.journal, one.locks, process).drain_held(7) == 2
        await asyncio.sleep(0.05)
        assert not other.done()
    assert await asyncio.wait_for(other, 5) == 0
    assert processed == [1, 2]


async def test_a_drain_leaves_what_is_journaled_meanwhile_to_the_next_drain(workers):
    """A drain processes what was pending when it began (batch after batch while one comes
    back full), not an entry journaled while it runs: that one is the next drain's, so a chat
    whose user keeps writing lets go of its lock between drains (bench/throughput_postgres.py
    found a worker's busy chats holding every lock connection and starving its other chats)."""
    journal, locks = workers[0].journal, workers[0].locks
    seen: list[int] = []

    async def process(e: JournalEntry) -> None:
        seen.append(e.update_id)
        await journal.mark_done(e.update_id)
        if e.update_id == 3:
            await journal.record([entry(4)])  # the user writes again during the turn

    drain = JournalDrain(journal, locks, process, batch=2)
    await journal.record([entry(1), entry(2), entry(3)])
    assert await drain.drain(7) == 3
    assert seen == [1, 2, 3]
    assert [e.update_id for e in await journal.pending_of_chat(7)] == [4]
    assert await drain.drain(7) == 1
    assert seen == [1, 2, 3, 4]
