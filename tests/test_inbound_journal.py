"""Tests of the inbound journal (step 1 of a turn, I1) against a real SQLite file."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

import pytest

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.db import Database
from tests.clock import T0, Clock

BOT = 777


def entry(update_id: int, chat_id: int | None = 1, text: str = "hi") -> JournalEntry:
    return JournalEntry(
        update_id=update_id, chat_id=chat_id, payload=f'{{"update_id": {update_id}, "t": "{text}"}}'
    )


async def row(db: Database, update_id: int, bot_id: int = BOT) -> sqlite3.Row | None:
    return await db.fetchone(
        "SELECT * FROM inbound_updates WHERE bot_id = ? AND update_id = ?", (bot_id, update_id)
    )


async def stored_ids(db: Database, bot_id: int = BOT) -> list[int]:
    rows = await db.fetchall(
        "SELECT update_id FROM inbound_updates WHERE bot_id = ? ORDER BY update_id", (bot_id,)
    )
    return [r[0] for r in rows]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def journal(db: Database, clock: Clock) -> InboundJournal:
    return InboundJournal(db, BOT, clock=clock)


async def test_record_returns_only_new_entries(journal: InboundJournal, db: Database) -> None:
    """A redelivered update is skipped, not an error, and its first payload is kept (I3)."""
    first = await journal.record([entry(1), entry(2)])
    again = await journal.record([entry(2, text="changed"), entry(3)])
    assert [e.update_id for e in first] == [1, 2]
    assert again == [entry(3)]
    assert await stored_ids(db) == [1, 2, 3]
    stored = await row(db, 2)
    assert stored is not None
    assert stored["payload"] == entry(2).payload
    assert (stored["status"], stored["attempts"]) == ("pending", 0)
    assert await journal.record([]) == []


async def test_record_is_durable_for_a_second_connection(
    journal: InboundJournal, db: Database
) -> None:
    """Once record() returns, the entries are committed: another connection reads them."""
    await journal.record([entry(5, chat_id=-100)])
    with sqlite3.connect(db.path) as other:
        rows = other.execute("SELECT bot_id, update_id, chat_id FROM inbound_updates").fetchall()
    assert rows == [(BOT, 5, -100)]


async def test_pending_is_oldest_first_with_payloads(journal: InboundJournal) -> None:
    """pending() returns unprocessed updates by update id, whatever the order they came in."""
    await journal.record([entry(30), entry(10, chat_id=None), entry(20, chat_id=-5)])
    pending = await journal.pending()
    assert pending == [entry(10, chat_id=None), entry(20, chat_id=-5), entry(30)]
    assert [e.update_id for e in await journal.pending(limit=2)] == [10, 20]


async def test_mark_done_drops_the_payload_but_keeps_the_key(
    journal: InboundJournal, db: Database, clock: Clock
) -> None:
    """A processed entry leaves pending() and loses its text, but still stops a redelivery."""
    await journal.record([entry(1, text="secret"), entry(2)])
    clock.now = T0 + timedelta(seconds=3)
    await journal.mark_done(1)
    assert [e.update_id for e in await journal.pending()] == [2]
    done = await row(db, 1)
    assert done is not None
    assert (done["status"], done["payload"]) == ("done", "")
    assert datetime.fromisoformat(done["processed_at"]) == clock.now
    assert await journal.record([entry(1, text="secret")]) == []  # I3
    again = await row(db, 1)
    assert again is not None
    assert (again["status"], again["payload"]) == ("done", "")


async def test_mark_failed_attempt_gives_up_after_max_attempts(db: Database, clock: Clock) -> None:
    """Failures are counted; the last allowed one marks the update failed, out of pending()."""
    journal = InboundJournal(db, BOT, max_attempts=3, clock=clock)
    await journal.record([entry(1), entry(2)])
    assert await journal.mark_failed_attempt(1, "boom 1") is False
    assert await journal.mark_failed_attempt(1, "boom 2") is False
    assert [(e.update_id, e.attempts) for e in await journal.pending()] == [(1, 2), (2, 0)]
    assert await journal.mark_failed_attempt(1, "x" * 2000) is True
    assert [e.update_id for e in await journal.pending()] == [2]
    failed = await row(db, 1)
    assert failed is not None
    assert (failed["status"], failed["attempts"]) == ("failed", 3)
    assert failed["error"] == "x" * 500  # bounded
    assert failed["payload"] == entry(1).payload  # kept, to look at
    assert await journal.mark_failed_attempt(404, "unknown") is False  # no such update


async def test_last_update_id_is_the_highest_ever_journaled(
    journal: InboundJournal, db: Database
) -> None:
    """The poller resumes after the highest journaled id of this bot, whatever its status."""
    assert await journal.last_update_id() is None
    await journal.record([entry(7), entry(9), entry(8)])
    await journal.mark_done(9)
    other_bot = InboundJournal(db, BOT + 1)
    await other_bot.record([entry(100)])
    assert await journal.last_update_id() == 9
    assert await other_bot.last_update_id() == 100


async def test_forget_chat_deletes_the_chats_entries_but_those_never_tried(
    journal: InboundJournal, db: Database
) -> None:
    """/forget erases the chat's processed entries, given-up ones and pending ones that failed
    once (their text would come back at the next start); entries never tried yet (the
    request itself, later messages) and other chats stay."""
    entries = [entry(1, 10), entry(2, 10), entry(3, 10), entry(4, 20), entry(5, 20)]
    await journal.record([*entries, entry(6, 10)])
    await journal.mark_done(1)
    await journal.mark_done(4)
    for _ in range(journal.max_attempts):
        await journal.mark_failed_attempt(2, "poison")
    await journal.mark_failed_attempt(6, "handler failed")  # retried at the next start
    other_bot = InboundJournal(db, BOT + 1)
    await other_bot.record([entry(1, 10)])
    await other_bot.mark_done(1)
    assert await journal.forget_chat(10) == 3
    assert await stored_ids(db) == [3, 4, 5]
    assert await stored_ids(db, BOT + 1) == [1]
    assert [e.update_id for e in await journal.pending()] == [3, 5]
    assert await journal.forget_chat(10) == 0


async def test_prune_deletes_processed_entries_older_than_the_retention(
    journal: InboundJournal, db: Database, clock: Clock
) -> None:
    """Maintenance deletes done and failed entries received before the cutoff; pending ones
    stay whatever their age."""
    await journal.record([entry(1), entry(2), entry(3)])  # at T0
    clock.now = T0 + timedelta(days=6)
    await journal.record([entry(4)])
    await journal.mark_done(1)
    for _ in range(journal.max_attempts):
        await journal.mark_failed_attempt(2, "poison")
    await journal.mark_done(4)
    clock.now = T0 + timedelta(days=8)  # cutoff T0 + 1 day: 1, 2 and 3 are old
    assert await journal.prune(older_than=timedelta(days=7)) == 2
    assert await stored_ids(db) == [3, 4]  # 3 is old but pending; 4 is recent
    assert [e.update_id for e in await journal.pending()] == [3]
    assert await journal.prune(older_than=timedelta(days=7)) == 0
