"""Tests of agent/chat/storage_backlog.py: what waits while the database refuses writes.

A real journal in a real SQLite file; the database refuses writes through SQLite's own page
limit (see :func:`tests.test_disk_faults.let_the_file_grow`).
"""

from __future__ import annotations

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.chat.storage_backlog import StorageBacklog
from agent.db import Database
from tests.test_disk_faults import BIG, let_the_file_grow


async def test_retry_writes_the_deferred_then_requeues_held_updates_still_pending(db_path):
    """While the database refuses writes, retry keeps everything and queues nothing. Once it
    accepts them, the deferred writes run once, in order, then the held updates still pending
    are queued again in update order; one handled meanwhile is not."""
    async with Database(db_path) as db:
        journal = InboundJournal(db, bot_id=1)
        await journal.record([JournalEntry(update_id, 10, "{}") for update_id in (5, 6, 7)])
        queued: list[int] = []
        backlog = StorageBacklog(journal, lambda entry: queued.append(entry.update_id))
        for update_id in (7, 5, 6):
            backlog.hold(update_id)
        await journal.mark_done(6)  # handled meanwhile (e.g. by a restart's recovery)
        written: list[str] = []

        async def big_write() -> None:
            await journal.record([JournalEntry(8, 10, BIG)])
            written.append("big")

        async def small_write() -> None:
            written.append("small")

        backlog.defer("big", big_write)
        backlog.defer("small", small_write)
        await let_the_file_grow(db, 0)

        await backlog.retry()
        assert (written, queued, len(backlog)) == ([], [], 5)
        assert backlog.is_deferred("big")

        await let_the_file_grow(db, None)
        await backlog.retry()
        assert (written, queued, len(backlog)) == (["big", "small"], [5, 7], 0)
        await backlog.retry()
        assert (written, queued) == (["big", "small"], [5, 7])


def test_each_update_gets_one_apology_until_it_is_handled(db_path):
    """first_apology is true once per update, and again only after handled() forgot it."""
    backlog = StorageBacklog(InboundJournal(Database(db_path), bot_id=1), lambda entry: None)
    assert [backlog.first_apology(u) for u in (1, 1, 2, 1)] == [True, False, True, False]
    backlog.handled(1)
    assert [backlog.first_apology(u) for u in (1, 2)] == [True, False]
