"""Tests of the polling loop that confirms to Telegram only what the journal holds (I1).

The poller runs in-process with a real ``telegram.Bot`` against the fake Bot API server and a
real SQLite journal.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from telegram import Bot
from telegram.error import InvalidToken

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.db import Database
from agent.telegram.poller import UpdatePoller
from tests.fake_bot_api import ApiError, FakeBotApi

TOKEN = "123456:ABC-fake"  # noqa: S105 - the fake's test token
HANG = 20.0  # only turns a hang into a failure; every wait ends as soon as its event happens


class JournalCheckingApi(FakeBotApi):
    """The fake Bot API, checking the rule at the moment it matters: when a ``getUpdates``
    call is about to confirm updates (offset above them), each one must already be in the
    journal, read through a second SQLite connection (so: committed).

    It wraps the fake's getUpdates handler, which runs on the server's thread before the
    offset confirms anything.
    """

    def __init__(self, db_path: Path) -> None:
        super().__init__(TOKEN)
        self.db_path = db_path
        self.pushed: list[int] = []
        self.checked: set[int] = set()
        self.unjournaled: set[int] = set()

    def push_raw(self, update: dict[str, Any]) -> int:
        update_id = super().push_raw(update)
        self.pushed.append(update_id)
        return update_id

    def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = params.get("offset")
        if isinstance(offset, int) and offset > 0:
            confirming = {u for u in self.pushed if u < offset} - self.confirmed_update_ids
            with sqlite3.connect(self.db_path) as conn:
                journaled = {r[0] for r in conn.execute("SELECT update_id FROM inbound_updates")}
            self.checked |= confirming
            self.unjournaled |= confirming - journaled
        return super()._get_updates(params)


@pytest.fixture
def api(db_path: Path) -> Iterator[JournalCheckingApi]:
    with JournalCheckingApi(db_path) as fake:
        yield fake


class Handed:
    """The ``on_entry`` callback: collects the entries and wakes waiters."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.entries: list[JournalEntry] = []
        self.changed = asyncio.Event()
        self._fail_on = fail_on

    def __call__(self, entry: JournalEntry) -> None:
        if entry.update_id == self._fail_on:
            raise SimulatedCrash(entry.update_id)
        self.entries.append(entry)
        self.changed.set()

    @property
    def ids(self) -> list[int]:
        return [e.update_id for e in self.entries]

    async def wait_for(self, count: int) -> None:
        async def wait() -> None:
            while len(self.entries) < count:
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(wait(), HANG)


class SimulatedCrash(Exception):
    """Raised by ``on_entry`` to stop the poller right after a journal commit."""


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def confirmed(api: FakeBotApi, update_id: int) -> None:
    await asyncio.to_thread(api.wait_until_confirmed, update_id, HANG)


async def test_updates_are_journaled_before_telegram_may_forget_them(
    api: JournalCheckingApi, bot: Bot, db: Database
) -> None:
    """I1: every getUpdates that confirms updates comes after they were committed to the
    journal; each new update is handed on once, in order, with its payload."""
    journal = InboundJournal(db, bot.id)
    handed = Handed()
    task = asyncio.create_task(UpdatePoller(bot, journal, handed, poll_timeout=5).run())
    try:
        first = [api.push_message(1, f"first {i}") for i in range(3)]
        await confirmed(api, first[-1])
        later = [api.push_message(chat, f"later {chat}") for chat in (1, 2, -100)]
        await confirmed(api, later[-1])
    finally:
        await stop(task)
    assert api.unjournaled == set()
    assert api.checked == set(first + later)  # the rule was checked for every update
    assert handed.ids == first + later
    assert [e.chat_id for e in handed.entries] == [1, 1, 1, 1, 2, -100]
    assert '"later 2"' in handed.entries[4].payload
    assert [e.update_id for e in await journal.pending()] == first + later


async def test_a_restart_resumes_after_the_last_journaled_update(
    api: JournalCheckingApi, bot: Bot, db: Database
) -> None:
    """A poller stopped right after a journal commit (before confirming) is followed by one
    that asks for the next offset at once: what was journaled is confirmed without being
    handed on again (it waits in pending() for recovery), the rest is handed on."""
    journal = InboundJournal(db, bot.id)
    first = [api.push_message(1, f"before the crash {i}") for i in range(3)]
    crashed = UpdatePoller(bot, journal, Handed(fail_on=first[0]), poll_timeout=5)
    with pytest.raises(SimulatedCrash):
        await asyncio.wait_for(crashed.run(), HANG)
    assert api.confirmed_update_ids == set()  # journaled, never confirmed
    assert await journal.last_update_id() == first[-1]

    later = [api.push_message(1, "after the restart"), api.push_message(2, "another chat")]
    handed = Handed()
    restarted = InboundJournal(db, bot.id)
    task = asyncio.create_task(UpdatePoller(bot, restarted, handed, poll_timeout=5).run())
    try:
        await handed.wait_for(2)
        await confirmed(api, later[-1])
    finally:
        await stop(task)
    offsets = [call.get("offset") for call in api.calls("getUpdates")]
    assert offsets[:2] == [None, first[-1] + 1]  # the crashed poll, then the resumed one
    assert handed.ids == later
    assert [e.update_id for e in await restarted.pending()] == first + later
    assert api.unjournaled == set()


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param({"status": 429, "retry_after": 1}, id="429-retry-after"),
        pytest.param({"status": 500}, id="500"),
        pytest.param({"status": 502}, id="502-bad-gateway"),
        pytest.param({"status": 409, "description": "Conflict: other getUpdates"}, id="409"),
        pytest.param(None, id="dropped-connection"),
    ],
)
async def test_transient_failures_are_retried_and_nothing_is_lost(
    api: JournalCheckingApi, bot: Bot, db: Database, fault: dict[str, Any] | None
) -> None:
    """Flood control, server errors, a conflict and a dropped connection only delay polling:
    every update still arrives once, in order, journaled before it is confirmed."""
    journal = InboundJournal(db, bot.id)
    handed = Handed()
    ids = [api.push_message(1, f"m{i}") for i in range(3)]
    if fault is None:
        api.drop_connections("getUpdates")
    else:
        api.fail_next("getUpdates", **fault)
    task = asyncio.create_task(UpdatePoller(bot, journal, handed, poll_timeout=5).run())
    try:
        await handed.wait_for(3)
        await confirmed(api, ids[-1])
    finally:
        await stop(task)
    assert handed.ids == ids
    assert [e.update_id for e in await journal.pending()] == ids
    assert api.unjournaled == set()
    # The failed call moved nothing: the retry asked again from the start.
    assert api.calls("getUpdates")[0].get("offset") is None


@pytest.mark.parametrize("status", [401, 404])
async def test_a_rejected_token_stops_the_loop_with_invalid_token(
    api: JournalCheckingApi, bot: Bot, db: Database, status: int
) -> None:
    """InvalidToken (the token was revoked) is not retried: run() raises it."""
    api.push_message(1, "nobody will read this")
    api.fail_next("getUpdates", status=status, description="Unauthorized")
    handed = Handed()
    poller = UpdatePoller(bot, InboundJournal(db, bot.id), handed, poll_timeout=5)
    with pytest.raises(InvalidToken):
        await asyncio.wait_for(poller.run(), HANG)
    assert handed.entries == []
    assert api.confirmed_update_ids == set()


async def test_an_update_telegram_cannot_read_is_journaled_as_sent_and_polling_goes_on(
    api: JournalCheckingApi, bot: Bot, db: Database
) -> None:
    """An update python-telegram-bot cannot parse (here a date that is no number) would fail
    every getUpdates of its batch forever: the batch is journaled as Telegram's own JSON
    instead (the unreadable update without a chat key), confirmed, and polling goes on."""
    journal = InboundJournal(db, bot.id)
    handed = Handed()
    before = api.push_message(1, "before")
    poison = {
        "update_id": before + 1,
        "message": {"message_id": 9, "date": "yesterday", "text": "poison",
                    "chat": {"id": 1, "type": "private"}},
    }
    api.push_raw(poison)
    task = asyncio.create_task(UpdatePoller(bot, journal, handed, poll_timeout=1).run())
    try:
        await handed.wait_for(2)
        after = api.push_message(2, "after")
        await handed.wait_for(3)
        await confirmed(api, after)
    finally:
        await stop(task)
    assert handed.ids == [before, poison["update_id"], after]
    assert [e.chat_id for e in handed.entries] == [1, None, 2]
    assert orjson.loads(handed.entries[1].payload) == poison
    assert api.unjournaled == set()


class RejectingJsonReads(JournalCheckingApi):
    """Rejects the token on a getUpdates that does not wait: the poller's re-read as JSON."""

    def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if params.get("timeout") == 0:
            raise ApiError(401, "Unauthorized")
        return super()._get_updates(params)


async def test_a_token_rejected_while_rereading_as_json_stops_the_loop_with_invalid_token(
    db_path: Path, db: Database
) -> None:
    """A token revoked just when an unreadable batch is read again as JSON raises
    InvalidToken, as on any poll (not python-telegram-bot's EndPointNotFound)."""
    with RejectingJsonReads(db_path) as api:
        api.push_raw({"update_id": 1, "message": {"message_id": 1, "date": "yesterday",
                                                  "chat": {"id": 1, "type": "private"}}})
        async with Bot(TOKEN, base_url=api.base_url, base_file_url=api.base_file_url) as tg:
            poller = UpdatePoller(tg, InboundJournal(db, tg.id), Handed(), poll_timeout=1)
            with pytest.raises(InvalidToken):
                await asyncio.wait_for(poller.run(), HANG)
    assert api.confirmed_update_ids == set()
