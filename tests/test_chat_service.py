"""Tests of agent/chat/service.py: the turn service every transport uses.

A real lane over a SQLite file in ``tmp_path`` (built by the application's wiring), the real
rule-based engine, real reminders on the event loop's timers, and a recording outbox: the
outbox is the outside boundary (Telegram, the terminal), so a test one stands in for it. The
database refuses writes through SQLite's own page limit (:func:`let_the_file_grow`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from agent.app.wiring import build_lane, open_database
from agent.chat.inbound_journal import HANDLING_FAILED, InboundJournal, JournalEntry
from agent.chat.reminder_message import reminder_text
from agent.chat.reminders import AsyncioScheduler
from agent.chat.service import ChatService
from agent.config import Settings
from agent.db import Database
from agent.engines.rule_based import RuleBasedConcierge
from agent.errors import DeliveryError, DeliveryFailed, DeliveryRefused, UnreadableUpdate
from agent.memory import ConversationLane, InboundMessage, JobRef
from tests.test_disk_faults import BIG, let_the_file_grow

CHAT = 7
BOT = 99


@dataclass
class Sent:
    chat_id: int
    text: str
    reply_to: int | None = None
    confirm_forget: str | None = None
    attempts: int | None = None
    document: tuple[str, bytes] | None = None


@dataclass
class RecordingOutbox:
    """Records every send; ``failure`` (if set) is raised by the next sends instead."""

    sent: list[Sent] = field(default_factory=list)
    failure: DeliveryError | None = None
    tries: int = 0
    stopped: bool = False

    async def send_text(
        self,
        chat_id: int,
        text: str,
        *,
        reply_to: int | None = None,
        confirm_forget: str | None = None,
        attempts: int | None = None,
    ) -> int:
        self.tries += 1
        if self.failure is not None:
            raise self.failure
        self.sent.append(Sent(chat_id, text, reply_to, confirm_forget, attempts))
        return 1000 + len(self.sent)

    async def send_document(
        self, chat_id: int, filename: str, data: bytes, caption: str, *, reply_to: int | None = None
    ) -> int:
        self.tries += 1
        if self.failure is not None:
            raise self.failure
        self.sent.append(Sent(chat_id, caption, reply_to, document=(filename, data)))
        return 1000 + len(self.sent)

    def stop_retrying(self) -> None:
        self.stopped = True

    def texts(self) -> list[str]:
        return [sent.text for sent in self.sent]


@dataclass
class Chat:
    service: ChatService
    outbox: RecordingOutbox
    lane: ConversationLane
    db: Database
    journal: InboundJournal


def settings_for(tmp_path: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        db_path=tmp_path / "memory.db",
        checkpoint_dir=tmp_path / "checkpoints",
        durability="process",
    )


@pytest.fixture
async def chat(tmp_path: Path) -> AsyncIterator[Chat]:
    settings = settings_for(tmp_path)
    db = await open_database(settings)
    lane = build_lane(settings, db)
    await lane.hydrate()
    outbox = RecordingOutbox()
    scheduler = AsyncioScheduler()
    journal = InboundJournal(db, BOT)
    service = ChatService(
        lane, RuleBasedConcierge(), outbox, db=db, scheduler=scheduler, journal=journal
    )

    async def read(entry: JournalEntry) -> None:
        """The transport's part (here: the payload is the message text as JSON)."""
        try:
            text = orjson.loads(entry.payload)["text"]
        except (orjson.JSONDecodeError, KeyError) as exc:
            raise UnreadableUpdate(str(exc)) from exc
        if text == "boom":
            raise RuntimeError("the handler failed")
        chat_id = entry.chat_id or 0
        await service.answer(
            InboundMessage(chat_id=chat_id, text=text, update_id=entry.update_id, bot_id=BOT)
        )

    service.read_entries_with(read)
    yield Chat(service, outbox, lane, db, journal)
    await scheduler.shutdown()
    await service.shutdown()
    await lane.shutdown()


def said(text: str, chat_id: int = CHAT) -> InboundMessage:
    return InboundMessage(chat_id=chat_id, text=text)


async def statuses(db: Database, chat_id: int = CHAT) -> list[tuple[str, int | None]]:
    rows = await db.fetchall(
        "SELECT t.status, t.reply_message_id FROM conversation_turns t"
        " JOIN conversation_sessions s USING (session_id) WHERE s.chat_id = ?"
        " ORDER BY t.session_id, t.seq",
        (chat_id,),
    )
    return [(row[0], row[1]) for row in rows]


async def journal_rows(db: Database) -> list[tuple[int, str, int]]:
    rows = await db.fetchall("SELECT update_id, status, attempts FROM inbound_updates")
    return sorted((row[0], row[1], row[2]) for row in rows)


async def test_a_message_is_answered_through_the_outbox_and_recorded_as_delivered(chat):
    """on_message commits the turn with the engine's reply, sends it through the outbox and
    records the message id the outbox returned (I4: delivered once sent)."""
    await chat.service.on_message(said("my name is Ada"))
    await chat.service.on_message(said("what's my name?"))
    assert len(chat.outbox.sent) == 2
    assert "Ada" in chat.outbox.sent[1].text
    assert await statuses(chat.db) == [("delivered", 1001), ("delivered", 1002)]


async def test_a_command_is_answered_and_is_no_turn(chat):
    """A text starting with / runs the command; its answer is sent and no turn is written."""
    await chat.service.on_message(said("my name is Ada"))
    await chat.service.on_message(said("/HISTORY 5"))
    assert chat.outbox.sent[-1].text.startswith("The last 1 turn:")
    await chat.service.on_message(said("/export"))
    export = chat.outbox.sent[-1]
    assert export.document is not None
    assert b"Ada" in export.document[1]
    assert len(await statuses(chat.db)) == 1


async def test_a_command_s_answer_replies_to_the_command(chat):
    """A command's answer, text or file, is sent as a reply to the command's message: handled
    again after a crash (at least once), it still says which message it answers."""
    await chat.service.on_message(said("my name is Ada"))
    await chat.service.on_message(InboundMessage(chat_id=CHAT, text="/stats", message_id=71))
    await chat.service.on_message(InboundMessage(chat_id=CHAT, text="/export", message_id=72))

    assert [(sent.reply_to, sent.document is not None) for sent in chat.outbox.sent[1:]] == [
        (71, False),
        (72, True),
    ]


async def test_forget_asks_the_outbox_to_confirm_and_the_confirmation_erases(chat):
    """/forget hands the outbox the session to confirm; confirm_forget erases it (a stale
    session id erases nothing) and says so."""
    await chat.service.on_message(said("my name is Ada"))
    await chat.service.on_message(said("/forget"))
    sid = chat.outbox.sent[-1].confirm_forget
    assert sid is not None
    await chat.service.in_order(CHAT, lambda: chat.service.confirm_forget(CHAT, "stale"))
    assert "nothing was erased" in chat.outbox.texts()[-1]
    await chat.service.in_order(CHAT, lambda: chat.service.confirm_forget(CHAT, sid))
    assert chat.outbox.texts()[-1].startswith("Done: I have forgotten")
    assert await chat.lane.inspector.session(sid) is None


async def test_a_refused_reply_is_recorded_and_never_resent(chat):
    """A reply the outbox refuses for good keeps the refusal on its turn (still answered);
    neither recover nor redeliver sends it again."""
    chat.outbox.failure = DeliveryRefused("Forbidden: bot was blocked by the user")
    await chat.service.on_message(said("my name is Ada"))
    chat.outbox.failure = None
    rows = await chat.db.fetchall("SELECT status, delivery_error FROM conversation_turns")
    assert [(row[0], row[1]) for row in rows] == [
        ("answered", "Forbidden: bot was blocked by the user")
    ]
    assert await chat.service.recover() == (0, 0)
    await chat.service.redeliver(timedelta(0))
    await chat.service.join()
    assert chat.outbox.sent == []


async def test_a_reply_not_sent_yet_stays_due_and_recover_and_redeliver_send_it(chat):
    """A reply the outbox could not send for now stays answered; the start-up recovery sends
    it (the outbox's own attempts), the redelivery pass tries once per reply."""
    chat.outbox.failure = DeliveryFailed("5 attempts failed")
    await chat.service.on_message(said("my name is Ada"))
    await chat.service.redeliver(timedelta(0))
    await chat.service.join()
    assert chat.outbox.tries == 2
    assert await statuses(chat.db) == [("answered", None)]

    chat.outbox.failure = None
    assert await chat.service.recover() == (1, 0)
    await chat.service.join()
    [resent] = chat.outbox.sent
    assert resent.attempts is None
    assert await statuses(chat.db) == [("delivered", 1001)]
    await chat.service.redeliver(timedelta(0))
    await chat.service.join()
    assert len(chat.outbox.sent) == 1  # delivered: not sent again


async def test_a_due_reminder_records_its_turn_and_sends_the_reminder_text(chat):
    """job_due fires a reminder in its chat's order: the lane closes the job with a turn whose
    reply is the reminder text, which the outbox sends; the job is no longer active."""
    await chat.service.on_message(said("remind me in 20 minutes to call mom"))
    [job] = [job for chat_id, job in chat.lane.active_jobs() if chat_id == CHAT]
    assert reminder_text(job) == "⏰ Reminder: call mom"
    await chat.service.job_due(CHAT, job)
    await chat.service.join()
    assert chat.outbox.texts()[-1] == "⏰ Reminder: call mom"
    assert [j for c, j in chat.lane.active_jobs() if c == CHAT] == []
    assert await statuses(chat.db) == [("delivered", 1001), ("delivered", 1002)]


@pytest.mark.parametrize(
    ("asked", "set_as", "fired", "listed", "day", "at", "within"),
    [
        ("remind me every day at 8am to take my vitamins",
         "every day at 08:00 UTC to take your vitamins", "⏰ Reminder: take my vitamins",
         "take your vitamins, every day at 08:00 (next: ", None, "08:00", timedelta(days=1)),
        ("remind me on the 1st of every month at 9am to pay rent",
         "every month on the 1st at 09:00 UTC to pay rent", "⏰ Reminder: pay rent",
         "pay rent, every month on the 1st at 09:00 (next: ", 1, "09:00", timedelta(days=31)),
    ],
)  # fmt: skip
async def test_a_repeating_reminder_fires_and_its_next_one_is_set_and_kept_across_a_restart(
    chat, tmp_path, asked, set_as, fired, listed, day, at, within
):
    """A reminder set "every day" (or "on the 1st of every month") fires like any other; the
    turn that fires it sets the next one, a day (a month) later on the clock it was set on,
    which is scheduled at once and is still active for a lane opened again on the same files
    (a crash between the two loses none)."""
    await chat.service.on_message(said(asked))
    assert set_as in chat.outbox.texts()[-1]
    [first] = [job for chat_id, job in chat.lane.active_jobs() if chat_id == CHAT]
    assert first.repeat is not None
    assert first.due_at is not None
    await chat.service.job_due(CHAT, first)
    await chat.service.join()
    assert chat.outbox.texts()[-1] == fired
    [second] = [job for chat_id, job in chat.lane.active_jobs() if chat_id == CHAT]
    assert second.job_id != first.job_id
    assert second.label == first.label
    assert second.repeat == first.repeat
    assert second.due_at is not None
    assert second.due_at.strftime("%H:%M") == at
    assert day is None or second.due_at.day == day
    assert second.due_at > max(first.due_at, datetime.now(UTC))
    assert second.due_at - max(first.due_at, datetime.now(UTC)) <= within
    await chat.service.on_message(said("what reminders do I have?"))
    assert listed in chat.outbox.texts()[-1]
    await chat.service.shutdown()
    await chat.lane.shutdown()
    settings = settings_for(tmp_path)
    again = build_lane(settings, await open_database(settings))
    await again.hydrate()
    assert [job for chat_id, job in again.active_jobs() if chat_id == CHAT] == [second]
    await again.shutdown()


async def test_a_repeating_reminder_cancelled_sets_no_next_one(chat):
    await chat.service.on_message(said("remind me every Monday at 9am to put the bins out"))
    [job] = [job for chat_id, job in chat.lane.active_jobs() if chat_id == CHAT]
    await chat.service.on_message(said("cancel the bins reminder"))
    assert chat.outbox.texts()[-1] == "Cancelled the reminder: put the bins out."
    await chat.service.job_due(CHAT, job)  # its timer, late: the job is no longer active
    await chat.service.join()
    assert [j for c, j in chat.lane.active_jobs() if c == CHAT] == []
    assert "⏰" not in chat.outbox.texts()[-1]


async def test_an_occurrence_skipped_ahead_is_passed_over_when_the_series_fires(chat):
    """ "skip the bins on <the Monday after next>": the next one fires as set, and the turn that
    fires it sets the one after the skipped Monday, without the skip, which has passed."""
    await chat.service.on_message(said("remind me every Monday at 9am to put the bins out"))
    [first] = [job for chat_id, job in chat.lane.active_jobs() if chat_id == CHAT]
    assert first.due_at is not None
    skipped = first.due_at + timedelta(days=7)
    await chat.service.on_message(said(f"skip the bins on {skipped.day} {skipped:%B}"))
    assert chat.outbox.texts()[-1].startswith(f"Skipped the one on Monday {skipped.day} ")
    [kept] = [job for chat_id, job in chat.lane.active_jobs() if chat_id == CHAT]
    assert kept.due_at == first.due_at
    assert kept.repeat is not None
    assert kept.repeat.skips == (skipped.date(),)
    await chat.service.job_due(CHAT, kept)
    await chat.service.join()
    assert chat.outbox.texts()[-1] == "⏰ Reminder: put the bins out"
    [after] = [job for chat_id, job in chat.lane.active_jobs() if chat_id == CHAT]
    assert after.due_at == first.due_at + timedelta(days=14)
    assert after.repeat == first.repeat  # the skip, passed, is dropped


async def test_journaled_updates_are_marked_by_what_their_handling_returned(chat):
    """Entries run in chat order through the transport's reader: handled, done; unreadable or
    failing, one failed attempt each (no shared sets: the reader raises)."""
    entries = [
        JournalEntry(1, CHAT, orjson.dumps({"text": "my name is Ada"}).decode()),
        JournalEntry(2, CHAT, "not json"),
        JournalEntry(3, CHAT, orjson.dumps({"text": "boom"}).decode()),
        JournalEntry(4, CHAT, orjson.dumps({"text": "what's my name?"}).decode()),
    ]
    await chat.journal.record(entries)
    for entry in entries:
        chat.service.submit(entry)
    await chat.service.join()
    assert await journal_rows(chat.db) == [
        (1, "done", 0),
        (2, "pending", 1),
        (3, "pending", 1),
        (4, "done", 0),
    ]
    assert "Ada" in chat.outbox.texts()[-1]
    assert chat.outbox.sent[-1].reply_to is None
    # The user whose message failed is told so, once; an unreadable update is no message.
    assert chat.outbox.texts().count(HANDLING_FAILED) == 1


async def test_an_update_the_database_refuses_is_held_and_handled_once_it_accepts(chat):
    """While the database refuses writes, a journaled update stays pending and is held in the
    backlog; the backlog's retry handles it once writes commit, and marks it done."""
    await chat.service.on_message(said("hello"))  # the session exists
    text = "my name is Ada. " + BIG  # needs pages the database may not take
    entry = JournalEntry(1, CHAT, orjson.dumps({"text": text}).decode())
    await chat.journal.record([entry])
    await let_the_file_grow(chat.db, 0)
    chat.service.submit(entry)
    await chat.service.join()
    backlog = chat.service.backlog
    assert backlog is not None
    assert len(backlog) == 1
    assert await journal_rows(chat.db) == [(1, "pending", 0)]

    await let_the_file_grow(chat.db, None)
    await backlog.retry()
    await chat.service.join()
    assert await journal_rows(chat.db) == [(1, "done", 0)]
    assert "Ada" in chat.outbox.texts()[-1]


async def test_without_a_journal_a_refused_write_reaches_the_caller(tmp_path):
    """A service without a journal (the console) has no backlog: on_message raises what the
    lane raised, so the caller knows the message was not kept."""
    settings = settings_for(tmp_path)
    db = await open_database(settings)
    lane = build_lane(settings, db)
    await lane.hydrate()
    outbox = RecordingOutbox()
    service = ChatService(lane, RuleBasedConcierge(), outbox, db=db, scheduler=AsyncioScheduler())
    try:
        await service.on_message(said("hello"))
        await lane.shutdown()
        with pytest.raises(RuntimeError):
            await service.on_message(said("my name is Ada"))
        assert service.backlog is None
        with pytest.raises(RuntimeError, match="read_entries_with"):
            service.submit(JournalEntry(1, CHAT, "{}"))
    finally:
        await service.shutdown()
    assert outbox.stopped
    assert len(outbox.sent) == 1


async def test_forget_everywhere_erases_the_session_and_the_chats_journal_entries(chat):
    """forget_everywhere erases the open conversation and its chat's journal entries (of
    every bot); an unknown session is None."""
    await chat.journal.record([JournalEntry(1, CHAT, orjson.dumps({"text": "hi"}).decode())])
    chat.service.submit(JournalEntry(1, CHAT, orjson.dumps({"text": "hi"}).decode()))
    await chat.service.join()
    other = InboundJournal(chat.db, BOT + 1)  # another bot of the same chat: processed
    await other.record([JournalEntry(5, CHAT, '{"text": "x"}'), JournalEntry(6, CHAT, "{}")])
    await other.mark_done(5)
    sid = chat.lane.session_id_for_chat(CHAT)
    assert sid is not None
    assert await chat.service.forget_everywhere(sid) == 2
    assert await chat.lane.inspector.session(sid) is None
    rows = await chat.db.fetchall("SELECT bot_id, update_id FROM inbound_updates")
    assert [tuple(row) for row in rows] == [(BOT + 1, 6)]  # never tried: it stays
    assert await chat.service.forget_everywhere(sid) is None


async def test_chats_run_in_order_each_and_concurrently_across(chat):
    """Work of one chat runs in submission order; another chat does not wait for it."""
    order: list[str] = []
    release = asyncio.Event()

    async def slow() -> str:
        await release.wait()
        order.append("slow")
        return "slow"

    async def quick(name: str) -> str:
        order.append(name)
        return name

    first = asyncio.ensure_future(chat.service.in_order(1, slow))
    second = asyncio.ensure_future(chat.service.in_order(1, lambda: quick("after")))
    assert await chat.service.in_order(2, lambda: quick("other")) == "other"
    release.set()
    assert (await first, await second) == ("slow", "after")
    assert order == ["other", "slow", "after"]


@pytest.mark.parametrize(
    ("late", "text"),
    [
        (timedelta(seconds=-30), "⏰ Reminder: water the plants"),  # early (a job run at once)
        (timedelta(seconds=59), "⏰ Reminder: water the plants"),
        (timedelta(minutes=1), "⏰ Late reminder (due 2026-03-01 09:30 UTC, 1 min ago): water "
         "the plants"),
        (timedelta(hours=2, minutes=5, seconds=40), "⏰ Late reminder (due 2026-03-01 09:30 "
         "UTC, 2 h 5 min ago): water the plants"),
        (timedelta(days=3, hours=1), "⏰ Late reminder (due 2026-03-01 09:30 UTC, 3 days 1 h "
         "ago): water the plants"),
    ],
)  # fmt: skip
def test_a_late_reminder_says_when_it_was_due(late, text):
    """A reminder fired a minute or more after its time (the bot was down) says when it was
    due and how long ago; one fired on time, or early, says only what to do."""
    due = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    job = JobRef(job_id="job-1", kind="reminder", label="water the plants", due_at=due)
    assert reminder_text(job, due + late) == text
    assert reminder_text(job) == "⏰ Reminder: water the plants"
