"""The PRD-014 suite: the memory lane through its facade, over real SQLite files and checkpoints.

Nothing of our own code is faked. The reply engine is the outside world (a small engine defined
here), the clock is injected where time matters, and ``monkeypatch`` only injects one failure.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent.chat.erasure import forget_everywhere
from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.db import Database
from agent.errors import ReplyEngineError
from agent.memory import (
    CheckpointWriter,
    ConversationContextPacket,
    ConversationLane,
    ConversationTurn,
    HydrationReport,
    InboundMessage,
    JobRef,
    Reply,
    render_packet,
)
from agent.memory.checkpoint_journal import compose
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_summarizer import ExtractiveSummarizer
from agent.memory.schemas import CheckpointTurn, ConversationCheckpointSnapshot, dump_json
from agent.utils.tokens import estimate_tokens
from tests.clock import T0, Clock

LANE_LOGGER = "agent.memory.lane"
CHAT_A = 101
CHAT_B = 202


class CountingEngine:
    """Answers every message with an echo and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.packets: list[ConversationContextPacket] = []

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        self.calls.append(message.text)
        self.packets.append(packet)
        return Reply(text=f"echo: {message.text}", intent="echo")


class MustNotBeCalledEngine:
    """An engine for messages that want no reply: being asked is a failure."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        pytest.fail(f"the engine was asked about {message.text!r}")


class SlowEngine:
    """Takes its time and records how many replies were in flight at once."""

    def __init__(self, delay: float = 0.005) -> None:
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0
        self.order: list[str] = []

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.order.append(message.text)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        return Reply(text=f"slow: {message.text}")


class BarrierEngine:
    """Answers only once ``parties`` replies are in flight together (or times out)."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.all_in = asyncio.Event()

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        self.arrived += 1
        if self.arrived == self.parties:
            self.all_in.set()
        async with asyncio.timeout(5):
            await self.all_in.wait()
        return Reply(text=f"together: {message.text}")


class BrokenEngine:
    """The reply engine is down."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        raise ReplyEngineError("the model endpoint is down")


def text_of(chat_id: int, n: int) -> str:
    """The n-th message of a chat: a first sentence (summarised) and a detail (raw only)."""
    return f"Message {n} from chat {chat_id}. Detail {n} of chat {chat_id} stays raw."


def msg(chat_id: int, text: str, update_id: int | None = None, **fields: Any) -> InboundMessage:
    return InboundMessage(chat_id=chat_id, text=text, update_id=update_id, received_at=T0, **fields)


async def talk(
    lane: ConversationLane, chat_id: int, count: int, engine: Any, *, start: int = 1
) -> list[ConversationTurn]:
    """Send messages ``start .. start+count-1`` of a chat, one after another."""
    turns = []
    for n in range(start, start + count):
        result = await lane.on_turn(msg(chat_id, text_of(chat_id, n), chat_id * 1000 + n), engine)
        turns.append(result.turn)
    return turns


@asynccontextmanager
async def running_lane(
    db_path: Path, checkpoint_dir: Path, **options: Any
) -> AsyncIterator[tuple[ConversationLane, HydrationReport, Database]]:
    """Start a lane like the process does (open, hydrate) and shut it down afterwards; its
    database comes along for the tests that read raw rows or crash it."""
    db = await Database(db_path).open()
    lane = ConversationLane(db, CheckpointWriter(checkpoint_dir), **options)
    try:
        report = await lane.hydrate()
        yield lane, report, db
    finally:
        await lane.shutdown()


async def crash(db: Database) -> None:
    """Stop without the shutdown sequence: the lane's database closes, nothing else runs."""
    await db.close()


async def log_rows(db: Database, session_id: str) -> list[tuple[Any, ...]]:
    rows = await db.fetchall(
        "SELECT seq, user_text, status FROM conversation_turns WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    return [tuple(row) for row in rows]


def lane_records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LANE_LOGGER and r.levelno == level]


# -- one turn ------------------------------------------------------------------------------------


async def test_on_turn_appends_turn_to_log_state_and_checkpoint(lane, db, engine):
    """A turn is in the log, counted in the session state and in the checkpoint file."""
    result = await lane.on_turn(msg(CHAT_A, "Hello. I am Ada.", update_id=1), engine)

    turn = result.turn
    assert (turn.seq, turn.user_text, turn.status) == (1, "Hello. I am Ada.", "answered")
    assert turn.assistant_text == "echo #1: Hello. I am Ada."
    assert result.duplicate is False
    assert result.needs_delivery is True
    assert result.packet is not None
    assert result.packet.turn_count == 0  # the engine sees the state before the turn
    assert await log_rows(db, turn.session_id) == [(1, "Hello. I am Ada.", "answered")]
    session = await lane.inspector.session(turn.session_id)
    assert session is not None
    assert (session.turn_count, session.last_seq) == (1, 1)
    assert (session.state.turn_count, session.state.status) == (1, "active")
    assert session.state.last_intent == "echo"
    assert session.state.last_response_type == "text"
    snapshot = await lane.inspector.checkpoint(turn.session_id)
    assert snapshot is not None
    assert snapshot.turn_count == 1
    assert snapshot.recent_turns == (CheckpointTurn.of(turn),)
    assert snapshot.state == session.state
    assert snapshot.pending_summary_delta == ""


async def test_checkpoint_claims_no_delivery_the_database_may_not_have(lane, db, engine):
    """The file is written before the reply is sent, and delivery is recorded after it: the
    file keeps what was said and leaves the delivery to the database, so that it never says
    "answered" of a reply the database knows was delivered (nor the reverse). A repair from
    the database writes the very same turns."""
    first = await lane.on_turn(msg(CHAT_A, "first", update_id=1), engine)
    await lane.mark_delivered(first.turn, 9001)
    second = await lane.on_turn(msg(CHAT_A, "second", update_id=2), engine)
    sid = second.turn.session_id
    path = lane.inspector.checkpoint_path(sid)

    written = on_disk(path)["recent_turns"]  # the documents the files hold, as written

    assert [row[2] for row in await log_rows(db, sid)] == ["delivered", "answered"]
    assert [(t["seq"], t["user_text"], t["message_id"]) for t in written] == [
        (1, "first", None),
        (2, "second", None),
    ]
    delivery = {"status", "reply_message_id", "delivered_at"}
    assert not any(delivery & set(turn) for turn in written)
    await lane.mark_delivered(second.turn, 9002)
    session = await lane.inspector.session(sid)
    assert session is not None
    assert (await lane.inspector.check(session)).ok
    assert await lane.inspector.repair(sid)
    assert on_disk(path)["recent_turns"] == written


async def test_engine_failure_writes_nothing_and_the_chat_recovers(lane, db, engine):
    """A reply engine error writes no turn, session or checkpoint; the next message works."""
    with pytest.raises(ReplyEngineError, match="down"):
        await lane.on_turn(msg(CHAT_A, "first try", update_id=1), BrokenEngine())

    assert await db.fetchall("SELECT * FROM conversation_sessions") == []
    assert await db.fetchall("SELECT * FROM conversation_turns") == []
    assert lane.session_id_for_chat(CHAT_A) is None
    assert await lane.inspector.checkpoint_ids() == []
    # The redelivered update is answered now, as the first turn of a real session.
    result = await lane.on_turn(msg(CHAT_A, "first try", update_id=1), engine)
    assert (result.turn.seq, result.duplicate) == (1, False)
    assert await log_rows(db, result.turn.session_id) == [(1, "first try", "answered")]
    assert await lane.inspector.checkpoint_ids() == [result.turn.session_id]


# -- restart -------------------------------------------------------------------------------------


async def test_session_after_restart_has_same_packet_state_and_turns(db_path, checkpoint_dir):
    """After a restart the packet, state and recent turns are as before, status ``resuming``
    (in the packet; the row's is committed by the next turn)."""
    clock = Clock()
    engine = CountingEngine()
    async with running_lane(db_path, checkpoint_dir, clock=clock) as (lane, _, _):
        await talk(lane, CHAT_A, 5, engine)
        sid = lane.session_id_for_chat(CHAT_A)
        assert sid is not None
        packet_before = await lane.inspector.packet(CHAT_A)
        session_before = await lane.inspector.session(sid)
        recent_before = await lane.inspector.recent(sid, 3)

    async with running_lane(db_path, checkpoint_dir, clock=clock) as (lane, report, _):
        assert (report.sessions, report.rebuilt, report.orphans_removed) == (1, {}, [])
        assert lane.session_id_for_chat(CHAT_A) == sid
        packet_after = await lane.inspector.packet(CHAT_A)
        assert packet_after is not None
        assert packet_before is not None
        assert packet_after.session_status == "resuming"
        assert packet_after.model_copy(update={"session_status": "active"}) == packet_before
        assert [t.seq for t in packet_after.recent_turns] == [3, 4, 5]
        session = await lane.inspector.session(sid)
        assert session is not None
        assert session_before is not None
        # A start writes nothing (issue 20): the row keeps the clean stop's status until the
        # next turn commits one; the lane and its packets say ``resuming`` meanwhile.
        assert session.status == "shutdown_clean"
        assert session.state.log_view() == session_before.state.log_view()
        assert await lane.inspector.recent(sid, 3) == recent_before

        result = await lane.on_turn(msg(CHAT_A, "I am back.", update_id=9999), engine)

        assert result.packet is not None
        assert result.packet.session_status == "resuming"  # the engine knows it resumes
        assert result.turn.seq == 6
        packet_next = await lane.inspector.packet(CHAT_A)
        assert packet_next is not None
        assert packet_next.session_status == "active"
        session = await lane.inspector.session(sid)
        assert session is not None
        assert (session.status, session.turn_count) == ("active", 6)
        snapshot = await lane.inspector.checkpoint(sid)
        assert snapshot is not None
        assert (snapshot.state.status, snapshot.turn_count) == ("active", 6)


# -- packet ----------------------------------------------------------------------------------------


async def test_packet_holds_last_three_raw_turns_and_rolling_summary(db_path, checkpoint_dir):
    """After 25 turns the packet has turns 23-25 raw, the rest compressed, within budget."""
    options = {
        "state_manager": ConversationStateManager(ExtractiveSummarizer(every_n=10, keep_raw=3)),
        "builder": ConversationContextBuilder(token_budget=2000, recent_turns=3),
    }
    async with running_lane(db_path, checkpoint_dir, **options) as (lane, _, _):
        await talk(lane, CHAT_A, 25, CountingEngine())
        packet = await lane.inspector.packet(CHAT_A)

    assert packet is not None
    assert packet.turn_count == 25
    assert [turn.seq for turn in packet.recent_turns] == [23, 24, 25]
    # Folds at turns 10 and 20 leave #1-#17 in the rolling summary (two deltas), #18-#22
    # compressed to a line each.
    summary_lines = packet.rolling_session_summary.splitlines()
    assert [line for line in summary_lines if line.startswith("[")] == [
        "[turns 1-7]",
        "[turns 8-17]",
    ]
    assert {line.split()[0] for line in summary_lines if not line.startswith("[")} == {
        f"#{n}" for n in range(1, 18)
    }
    assert [line.split()[0] for line in packet.recent_turn_summaries] == [
        f"#{n}" for n in range(18, 23)
    ]
    rendered = render_packet(packet)
    for n in range(18, 26):
        assert f"Message {n} from chat {CHAT_A}." in rendered
        # The whole transcript is never injected: only the raw turns keep their details.
        assert (f"Detail {n} of chat" in rendered) == (n >= 23)
    # The budget counts the text the engine receives.
    assert packet.token_estimate == estimate_tokens(rendered)
    assert 0 < packet.token_estimate <= 2000


# -- checkpoint ----------------------------------------------------------------------------------


async def test_checkpoint_round_trip_through_the_lane(lane, engine, checkpoint_dir):
    """A checkpoint the lane wrote loads back equal, and writing it again changes nothing."""
    turns = await talk(lane, CHAT_A, 4, engine)
    sid = turns[0].session_id

    snapshot = await lane.inspector.checkpoint(sid)
    assert snapshot is not None
    assert snapshot.recent_turns == tuple(CheckpointTurn.of(t) for t in turns[-3:])
    path = await CheckpointWriter(checkpoint_dir).write(snapshot)
    again = await CheckpointWriter(checkpoint_dir).load(sid)

    assert again == snapshot
    assert CheckpointWriter.parse(path.read_bytes(), session_id=sid) == snapshot
    assert path.read_bytes() == dump_json(snapshot, indent=True)


# -- idempotency -----------------------------------------------------------------------------------


async def test_same_update_twice_is_one_turn_even_after_restart(db_path, checkpoint_dir):
    """I3: a redelivered update returns the first turn as a duplicate; the engine runs once."""
    engine = CountingEngine()
    async with running_lane(db_path, checkpoint_dir) as (lane, _, db):
        first = await lane.on_turn(msg(CHAT_A, "Remind me at five.", update_id=77), engine)
        second = await lane.on_turn(msg(CHAT_A, "Remind me at five.", update_id=77), engine)

        assert (first.duplicate, second.duplicate) == (False, True)
        assert second.turn == first.turn
        assert second.packet is None
        assert engine.calls == ["Remind me at five."]
        sid = first.turn.session_id
        assert await log_rows(db, sid) == [(1, "Remind me at five.", "answered")]
        snapshot = await lane.inspector.checkpoint(sid)
        assert snapshot is not None
        assert snapshot.turn_count == 1

    async with running_lane(db_path, checkpoint_dir) as (lane, _, db):
        third = await lane.on_turn(msg(CHAT_A, "Remind me at five.", update_id=77), engine)

        assert third.duplicate is True
        assert third.turn == first.turn
        assert engine.calls == ["Remind me at five."]
        assert await log_rows(db, sid) == [(1, "Remind me at five.", "answered")]
        session = await lane.inspector.session(sid)
        assert session is not None
        assert session.turn_count == 1


async def test_message_without_reply_is_recorded_without_engine(lane, db):
    """``wants_reply=False`` records the turn as ``recorded``; the engine is not asked."""
    message = msg(CHAT_B, "just chatting", 5, wants_reply=False, chat_type="group", speaker="bob")
    result = await lane.on_turn(message, MustNotBeCalledEngine())

    turn = result.turn
    assert (turn.status, turn.assistant_text, turn.speaker) == ("recorded", None, "bob")
    assert result.needs_delivery is False
    assert result.packet is None  # no engine saw one
    assert await log_rows(db, turn.session_id) == [(1, "just chatting", "recorded")]
    session = await lane.inspector.session(turn.session_id)
    assert session is not None
    assert (session.chat_type, session.state.turn_count) == ("group", 1)
    assert session.state.last_response_type == "none"
    assert await lane.undelivered() == []


# -- delivery ------------------------------------------------------------------------------------


async def test_hydrate_lists_answered_but_undelivered_turns(db_path, checkpoint_dir):
    """I4: after a restart the undelivered list holds answered turns, not delivered or silent."""
    engine = CountingEngine()
    async with running_lane(db_path, checkpoint_dir) as (lane, _, db):
        first = await lane.on_turn(msg(CHAT_A, "one", 1), engine)
        await lane.on_turn(msg(CHAT_A, "two", 2, wants_reply=False), MustNotBeCalledEngine())
        third = await lane.on_turn(msg(CHAT_A, "three", 3), engine)
        fourth = await lane.on_turn(msg(CHAT_A, "four", 4), engine)
        await lane.mark_delivered(first.turn, 501)
        await lane.mark_delivered(first.turn, 999)  # a second record does not overwrite
        await crash(db)

    async with running_lane(db_path, checkpoint_dir) as (lane, report, db):
        assert [(t.seq, t.user_text) for t in report.undelivered] == [(3, "three"), (4, "four")]
        assert report.undelivered == [third.turn, fourth.turn]
        rows = await db.fetchall(
            "SELECT status, reply_message_id, delivered_at FROM conversation_turns WHERE seq = 1"
        )
        assert [(row[0], row[1]) for row in rows] == [("delivered", 501)]
        assert rows[0][2] is not None


# -- shutdown ------------------------------------------------------------------------------------


async def test_shutdown_marks_clean_and_writes_the_pending_summary_delta(db_path, checkpoint_dir):
    """Shutdown sets ``shutdown_clean`` in db and checkpoint, with the pending summary delta."""
    async with running_lane(db_path, checkpoint_dir) as (lane, _, _):
        await talk(lane, CHAT_A, 7, CountingEngine())
        sid = lane.session_id_for_chat(CHAT_A)
        assert sid is not None

    async with Database(db_path) as db:
        rows = await db.fetchall(
            "SELECT status, json_extract(state, '$.status') FROM conversation_sessions"
        )
    assert [tuple(row) for row in rows] == [("shutdown_clean", "shutdown_clean")]
    snapshot = await CheckpointWriter(checkpoint_dir).load(sid)
    assert snapshot is not None
    assert snapshot.state.status == "shutdown_clean"
    assert snapshot.turn_count == 7
    # Seven turns, no fold yet (every 10): the delta is all but the three raw turns.
    assert len(snapshot.state.summary_buffer) == 7
    delta = snapshot.pending_summary_delta.splitlines()
    assert delta[0] == "[turns 1-4]"
    assert {line.split()[0] for line in delta[1:]} == {"#1", "#2", "#3", "#4"}
    assert snapshot.state.rolling_summary == ""
    # The delta is written beside the state, not folded into it (I6).
    async with running_lane(db_path, checkpoint_dir) as (lane, _, _):
        rebuilt = await lane.inspector.rebuild_state(sid)
    assert snapshot.state.log_view() == rebuilt.log_view()


async def test_on_turn_after_shutdown_raises(lane, engine):
    """A lane that was shut down refuses new turns with a fix-it RuntimeError."""
    await lane.on_turn(msg(CHAT_A, "before", 1), engine)
    await lane.shutdown()
    await lane.shutdown()  # idempotent

    with pytest.raises(RuntimeError, match="shut down"):
        await lane.on_turn(msg(CHAT_A, "after", 2), engine)


async def test_hydrate_twice_raises(lane):
    """Hydration is the start-up sequence: a second call is a misuse."""
    with pytest.raises(RuntimeError, match="already called"):
        await lane.hydrate()


# -- chats ---------------------------------------------------------------------------------------


async def test_chats_are_isolated(lane, engine):
    """Two chats get two sessions whose packets and checkpoints hold only their own text."""
    await lane.on_turn(msg(CHAT_A, "alpha secret one", 1), engine)
    await lane.on_turn(msg(CHAT_B, "bravo secret one", 2), engine)
    await lane.on_turn(msg(CHAT_A, "alpha secret two", 3), engine)

    sid_a = lane.session_id_for_chat(CHAT_A)
    sid_b = lane.session_id_for_chat(CHAT_B)
    assert sid_a is not None
    assert sid_b is not None
    assert sid_a != sid_b
    packet_a, packet_b = await lane.inspector.packet(CHAT_A), await lane.inspector.packet(CHAT_B)
    assert packet_a is not None
    assert packet_b is not None
    assert (packet_a.conversation_id, packet_a.turn_count) == (sid_a, 2)
    assert (packet_b.conversation_id, packet_b.turn_count) == (sid_b, 1)
    text_a, text_b = render_packet(packet_a), render_packet(packet_b)
    assert "alpha secret one" in text_a
    assert "alpha secret two" in text_a
    assert "bravo" not in text_a
    assert "bravo secret one" in text_b
    assert "alpha" not in text_b
    file_a = lane.inspector.checkpoint_path(sid_a).read_text()
    file_b = lane.inspector.checkpoint_path(sid_b).read_text()
    assert "bravo" not in file_a
    assert "alpha" not in file_b
    assert await lane.inspector.packet(999) is None


async def test_turns_of_one_chat_are_strictly_ordered(lane, db):
    """Twenty concurrent messages of one chat become turns 1..20 in submission order."""
    engine = SlowEngine()
    texts = [f"m{i:02d}" for i in range(20)]

    results = await asyncio.gather(
        *(lane.on_turn(msg(CHAT_A, t, i), engine) for i, t in enumerate(texts))
    )

    assert [r.turn.seq for r in results] == list(range(1, 21))
    assert [r.turn.user_text for r in results] == texts
    assert engine.order == texts
    assert engine.max_in_flight == 1
    # Each reply saw the state its predecessors left.
    assert [r.packet.turn_count for r in results if r.packet is not None] == list(range(20))
    sid = results[0].turn.session_id
    assert [row[:2] for row in await log_rows(db, sid)] == list(
        zip(range(1, 21), texts, strict=True)
    )
    snapshot = await lane.inspector.checkpoint(sid)
    assert snapshot is not None
    assert snapshot.turn_count == 20


async def test_different_chats_are_answered_concurrently(lane, db):
    """Turns of different chats do not wait for each other: all replies are in flight at once."""
    chats = [CHAT_A, CHAT_B, 303, 404]
    engine = BarrierEngine(parties=len(chats))

    results = await asyncio.gather(
        *(lane.on_turn(msg(chat, f"hello from {chat}", chat), engine) for chat in chats)
    )

    assert engine.arrived == len(chats)
    assert [r.turn.seq for r in results] == [1, 1, 1, 1]
    assert len({r.turn.session_id for r in results}) == len(chats)
    rows = await db.fetchall("SELECT COUNT(*) FROM conversation_turns")
    assert rows[0][0] == len(chats)


class JobEngine:
    """Echoes, and schedules a reminder when a message says ``remind``."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        jobs = ()
        if "remind" in message.text:
            jobs = (JobRef(job_id=f"job-{message.chat_id}", kind="reminder", label=message.text),)
        return Reply(text=f"echo: {message.text}", job_refs=jobs)


CHATS = [1001, 1002, 1003, 1004, 1005, 1006]


async def talk_at_once(lane: ConversationLane, rounds: int, engine: Any) -> None:
    """Every chat of :data:`CHATS` sends ``rounds`` messages; the chats talk concurrently."""

    async def chat(chat_id: int) -> None:
        for n in range(1, rounds + 1):
            text = text_of(chat_id, n) + (" Please remind me." if n == 2 else "")
            await lane.on_turn(msg(chat_id, text, chat_id * 1000 + n), engine)

    await asyncio.gather(*(chat(chat_id) for chat_id in CHATS))


async def test_sessions_held_packed_lose_nothing(db_path, checkpoint_dir):
    """Six chats talking at once through a lane that keeps two sessions as objects: every
    chat's packet, jobs, checkpoint and database state come out as if all were kept."""
    async with running_lane(db_path, checkpoint_dir, resident_sessions=2) as (lane, _, _):
        await talk_at_once(lane, 7, SlowEngine(delay=0.001))  # more chats busy than resident
        for chat_id in CHATS:
            await lane.on_turn(msg(chat_id, "remind me of the report", chat_id * 1000 + 8),
                               JobEngine())  # fmt: skip
        assert sorted(chat for chat, _ in lane.active_jobs()) == CHATS
        for chat_id in CHATS:
            packet = await lane.inspector.packet(chat_id)
            assert packet is not None
            assert packet.turn_count == 8
            assert [t.user_text for t in packet.recent_turns] == [
                text_of(chat_id, 6), text_of(chat_id, 7), "remind me of the report"
            ]  # fmt: skip
            sid = lane.session_id_for_chat(chat_id)
            assert sid is not None
            snapshot = await lane.inspector.checkpoint(sid)
            assert snapshot is not None
            assert snapshot.turn_count == 8
            rebuilt = await lane.inspector.rebuild_state(sid)
            assert packet_state(lane, chat_id).log_view() == rebuilt.log_view()
        assert await lane.rewrite_stale_checkpoints() == 0  # every file is known written


def packet_state(lane: ConversationLane, chat_id: int) -> Any:
    """The state the lane holds for a chat (through the checkpoint it would write)."""
    sid = lane.session_id_for_chat(chat_id)
    assert sid is not None
    return CheckpointWriter.parse(lane.inspector.checkpoint_bytes(sid), session_id=sid).state


async def test_shutdown_checkpoints_packed_sessions_and_restart_resumes_them(
    db_path, checkpoint_dir
):
    """At shutdown every session, packed or not, gets its clean checkpoint; a restart that
    keeps one session as an object finds all of them intact and answers in each."""
    async with running_lane(db_path, checkpoint_dir, resident_sessions=1) as (lane, _, _):
        await talk_at_once(lane, 4, CountingEngine())
        sids = {chat_id: lane.session_id_for_chat(chat_id) for chat_id in CHATS}

    for sid in sids.values():
        snapshot = await CheckpointWriter(checkpoint_dir).load(sid)
        assert snapshot is not None
        assert (snapshot.state.status, snapshot.turn_count) == ("shutdown_clean", 4)

    async with running_lane(db_path, checkpoint_dir, resident_sessions=1) as (lane, report, _):
        assert (report.sessions, report.rebuilt) == (len(CHATS), {})
        engine = CountingEngine()
        for chat_id in CHATS:
            result = await lane.on_turn(msg(chat_id, "and now?", chat_id * 1000 + 5), engine)
            assert (result.turn.session_id, result.turn.seq) == (sids[chat_id], 5)
        assert [p.turn_count for p in engine.packets] == [4] * len(CHATS)
        seen = zip(CHATS, engine.packets, strict=True)
        assert all(text_of(chat_id, 4) in render_packet(packet) for chat_id, packet in seen)


async def test_checkpoints_of_packed_sessions_heal_after_a_disk_fault(
    db_path, checkpoint_dir, monkeypatch
):
    """Checkpoint writes refused while sessions were packed are rewritten once the disk
    recovers, without a new message from their chats."""
    real_replace = os.replace

    def full_disk(src: Any, dst: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    async with running_lane(db_path, checkpoint_dir, resident_sessions=1) as (lane, _, _):
        monkeypatch.setattr(os, "replace", full_disk)
        await talk_at_once(lane, 2, CountingEngine())
        assert list(checkpoint_dir.glob("*.json")) == []
        monkeypatch.setattr(os, "replace", real_replace)

        assert await lane.rewrite_stale_checkpoints() == len(CHATS)
        assert await lane.rewrite_stale_checkpoints() == 0
        for chat_id in CHATS:
            sid = lane.session_id_for_chat(chat_id)
            assert sid is not None
            snapshot = await lane.inspector.checkpoint(sid)
            assert snapshot is not None
            assert snapshot.turn_count == 2


# -- session management --------------------------------------------------------------------------


async def test_new_session_closes_and_next_message_opens_a_new_one(db_path, checkpoint_dir):
    """``new_session`` closes the open session; the next message starts a fresh session id."""
    engine = CountingEngine()
    async with running_lane(db_path, checkpoint_dir) as (lane, _, db):
        assert await lane.new_session(CHAT_A) is None  # nothing to close yet
        old = await lane.on_turn(msg(CHAT_A, "old topic secret", 1), engine)
        switch = await lane.new_session(CHAT_A)
        assert switch is not None
        closed = switch.closed

        assert closed == old.turn.session_id
        assert lane.session_id_for_chat(CHAT_A) is None
        new = await lane.on_turn(msg(CHAT_A, "fresh start", 2), engine)
        assert new.turn.session_id != closed
        assert new.turn.seq == 1
        assert new.packet is not None
        assert new.packet.turn_count == 0
        assert "old topic secret" not in render_packet(new.packet)
        rows = await db.fetchall(
            "SELECT session_id, closed_at IS NOT NULL FROM conversation_sessions"
            " ORDER BY created_at, session_id"
        )
        assert [tuple(row) for row in rows] == [(closed, 1), (new.turn.session_id, 0)]
        # Closing is not forgetting: the old turns stay in the log.
        assert await log_rows(db, closed) == [(1, "old topic secret", "answered")]

    async with running_lane(db_path, checkpoint_dir) as (lane, report, _):
        assert report.sessions == 1
        assert lane.session_id_for_chat(CHAT_A) == new.turn.session_id


async def test_forget_conversation_erases_the_chats_journal_entries_of_every_bot(lane, db, engine):
    """Erasing a chat's open conversation (/forget, agent-memory forget) erases its journal
    entries first, whatever bot journaled them, except the never-tried ones (the request
    itself); another chat's stay; a closed conversation leaves the journal as it is."""
    await talk(lane, CHAT_A, 2, engine)
    await talk(lane, CHAT_B, 1, engine)
    for bot_id in (1, 2):
        journal = InboundJournal(db, bot_id)
        await journal.record(
            [
                JournalEntry(update_id=10, chat_id=CHAT_A, payload='{"text": "secret"}'),
                JournalEntry(update_id=11, chat_id=CHAT_B, payload='{"text": "other"}'),
                JournalEntry(update_id=12, chat_id=CHAT_A, payload='{"text": "/forget"}'),
            ]
        )
        await journal.mark_done(10)
        await journal.mark_done(11)
    sid_a = lane.session_id_for_chat(CHAT_A)
    assert sid_a is not None

    assert await forget_everywhere(lane, db, sid_a) == 2

    rows = await db.fetchall("SELECT bot_id, update_id FROM inbound_updates ORDER BY 1, 2")
    assert [tuple(r) for r in rows] == [(1, 11), (1, 12), (2, 11), (2, 12)]
    assert await lane.inspector.session(sid_a) is None
    assert await forget_everywhere(lane, db, sid_a) is None
    await lane.new_session(CHAT_B)
    closed = await lane.inspector.sessions(chat_id=CHAT_B)
    assert await forget_everywhere(lane, db, closed[0].session_id) == 0
    assert len(await db.fetchall("SELECT * FROM inbound_updates")) == 4


async def test_forget_session_erases_rows_turns_and_checkpoint(lane, db, engine):
    """``forget_session`` deletes the session row, its turns and its checkpoint file."""
    await talk(lane, CHAT_A, 3, engine)
    await talk(lane, CHAT_B, 2, engine)
    sid_a = lane.session_id_for_chat(CHAT_A)
    sid_b = lane.session_id_for_chat(CHAT_B)
    assert sid_a is not None
    assert sid_b is not None
    path_a = lane.inspector.checkpoint_path(sid_a)
    assert path_a.is_file()

    assert await lane.forget_session(sid_a) is True

    assert await lane.inspector.session(sid_a) is None
    assert await log_rows(db, sid_a) == []
    assert not path_a.exists()
    assert await lane.inspector.packet(CHAT_A) is None
    assert await lane.inspector.checkpoint_ids() == [sid_b]
    assert len(await log_rows(db, sid_b)) == 2
    assert await lane.forget_session(sid_a) is False
    # The chat's next message starts over.
    result = await lane.on_turn(msg(CHAT_A, "who am I?", 9), engine)
    assert result.turn.session_id != sid_a
    assert result.turn.seq == 1


async def test_prune_erases_sessions_inactive_longer_than_the_limit(db_path, checkpoint_dir):
    """``prune`` deletes only sessions whose last activity is older than the cut-off."""
    clock = Clock()
    engine = CountingEngine()
    async with running_lane(db_path, checkpoint_dir, clock=clock) as (lane, _, db):
        await talk(lane, CHAT_A, 2, engine)
        clock.advance(days=3)
        await talk(lane, CHAT_B, 2, engine)
        sid_a = lane.session_id_for_chat(CHAT_A)
        sid_b = lane.session_id_for_chat(CHAT_B)
        clock.advance(days=4)  # A idle for 7 days, B for 4

        assert await lane.prune(older_than_days=10) == []
        assert await lane.prune(older_than_days=5) == [sid_a]

        assert sid_a is not None
        assert sid_b is not None
        assert await lane.inspector.session(sid_a) is None
        assert await log_rows(db, sid_a) == []
        assert not lane.inspector.checkpoint_path(sid_a).exists()
        assert await lane.inspector.packet(CHAT_A) is None
        assert await lane.inspector.session(sid_b) is not None
        assert len(await log_rows(db, sid_b)) == 2
        assert await lane.inspector.checkpoint_ids() == [sid_b]


# -- corrupt checkpoints ---------------------------------------------------------------------------


@dataclass
class History:
    """Two sessions written by a lane and shut down cleanly."""

    writer: CheckpointWriter
    sid_a: str
    sid_b: str
    a_at_turn_5: bytes

    @property
    def path_a(self) -> Path:
        return self.writer.path_for(self.sid_a)

    @property
    def path_b(self) -> Path:
        return self.writer.path_for(self.sid_b)

    def snapshot_a(self) -> ConversationCheckpointSnapshot:
        return CheckpointWriter.parse(self.path_a.read_bytes())


async def write_history(db_path: Path, checkpoint_dir: Path) -> History:
    engine = CountingEngine()
    async with running_lane(db_path, checkpoint_dir) as (lane, _, _):
        await talk(lane, CHAT_A, 5, engine)
        sid_a = lane.session_id_for_chat(CHAT_A)
        assert sid_a is not None
        a_at_turn_5 = lane.inspector.checkpoint_path(sid_a).read_bytes()
        await talk(lane, CHAT_A, 7, engine, start=6)
        await talk(lane, CHAT_B, 4, engine)
        sid_b = lane.session_id_for_chat(CHAT_B)
        assert sid_b is not None
    return History(CheckpointWriter(checkpoint_dir), sid_a, sid_b, a_at_turn_5)


def _truncate(h: History) -> None:
    data = h.path_a.read_bytes()
    h.path_a.write_bytes(data[: len(data) // 2])


def _garbage(h: History) -> None:
    h.path_a.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe not a checkpoint \x00" * 8)


def _empty(h: History) -> None:
    h.path_a.write_bytes(b"")


def _wrong_version(h: History) -> None:
    document = orjson.loads(h.path_a.read_bytes())
    document["schema_version"] = 999
    h.path_a.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))


def _behind(h: History) -> None:
    # A valid checkpoint of turn 5 copied back over the one of turn 12.
    h.path_a.write_bytes(h.a_at_turn_5)


def _ahead(h: History) -> None:
    # A checkpoint of a turn 13 the database never committed (e.g. the db restored from backup).
    snapshot = h.snapshot_a()
    turn = ConversationTurn(
        turn_id="trn_" + "f" * 32,
        session_id=h.sid_a,
        seq=13,
        user_text="a turn the log does not have",
        created_at=T0,
    )
    state = ConversationStateManager().apply(snapshot.state, turn)
    ahead = snapshot.model_copy(
        update={
            "state": state,
            "recent_turns": (*snapshot.recent_turns[1:], CheckpointTurn.of(turn)),
        }
    )
    h.path_a.write_bytes(dump_json(ahead, indent=True))


def _other_session(h: History) -> None:
    h.path_a.write_bytes(h.path_b.read_bytes())


def _missing(h: History) -> None:
    h.path_a.unlink()


def _tampered(h: History) -> None:
    snapshot = h.snapshot_a()
    state = snapshot.state.model_copy(update={"rolling_summary": "#1 user: never said this"})
    h.path_a.write_bytes(dump_json(snapshot.model_copy(update={"state": state}), indent=True))


@pytest.mark.parametrize(
    ("corrupt", "reason"),
    [
        pytest.param(_truncate, "is unusable", id="truncated"),
        pytest.param(_garbage, "not valid JSON", id="garbage"),
        pytest.param(_empty, "is empty", id="empty"),
        pytest.param(
            _wrong_version,
            "schema version 999, newer than this program reads (2)",
            id="wrong-schema-version",
        ),
        pytest.param(_behind, "is behind the log (turn 5 of 12)", id="stale-behind"),
        pytest.param(_ahead, "is ahead of the log (turn 13 of 12)", id="ahead-of-log"),
        pytest.param(_other_session, "holds session", id="other-session-renamed"),
        pytest.param(_missing, "is missing", id="missing"),
        pytest.param(_tampered, "does not match", id="tampered-state"),
    ],
)
async def test_hydrate_rebuilds_a_bad_checkpoint_from_the_log(
    db_path, checkpoint_dir, caplog, corrupt: Callable[[History], None], reason: str
):
    """I5/I6: a bad checkpoint is rebuilt from the log with a warning; nothing is lost."""
    history = await write_history(db_path, checkpoint_dir)
    b_before = history.path_b.read_bytes()
    corrupt(history)
    clock = Clock()
    caplog.set_level(logging.WARNING, logger=LANE_LOGGER)

    async with running_lane(db_path, checkpoint_dir, clock=clock) as (lane, report, _):
        assert list(report.rebuilt) == [history.sid_a]
        assert reason in report.rebuilt[history.sid_a]
        warnings = lane_records(caplog, logging.WARNING)
        assert any(history.sid_a in w and "rebuilt" in w for w in warnings), warnings
        rebuilt = await lane.inspector.rebuild_state(history.sid_a)
        assert rebuilt.turn_count == 12
        # The state hydrated, the state in the database and the rewritten file all equal the
        # fold of the turn log.
        recent = await lane.inspector.recent(history.sid_a, 3)
        hydrated = rebuilt.model_copy(update={"status": "resuming"})
        expected = ConversationContextBuilder().build(hydrated, recent, now=clock())
        assert await lane.inspector.packet(CHAT_A) == expected
        session = await lane.inspector.session(history.sid_a)
        assert session is not None
        # A start writes nothing (issue 20): the row keeps the clean stop's status.
        assert session.state == hydrated.model_copy(update={"status": "shutdown_clean"})
        snapshot = await lane.inspector.checkpoint(history.sid_a)
        assert snapshot is not None
        assert snapshot.turn_count == 12
        assert snapshot.state.log_view() == rebuilt.log_view()
        assert snapshot.recent_turns == tuple(CheckpointTurn.of(t) for t in recent)
        # Nothing lost: every turn is in the log and the next one follows it.
        texts = [t.user_text async for t in lane.inspector.turns(history.sid_a)]
        assert texts == [text_of(CHAT_A, n) for n in range(1, 13)]
        result = await lane.on_turn(msg(CHAT_A, "still there?", 5555), CountingEngine())
        assert result.turn.seq == 13
        assert result.packet is not None
        assert result.packet.turn_count == 12
        # The other session's good checkpoint was left alone.
        assert history.path_b.read_bytes() == b_before


async def test_hydrate_keeps_a_good_checkpoint_without_warning(db_path, checkpoint_dir, caplog):
    """A checkpoint at the log's turn is used as it is: no rebuild, no warning, no rewrite."""
    history = await write_history(db_path, checkpoint_dir)
    a_before = history.path_a.read_bytes()
    caplog.set_level(logging.WARNING, logger=LANE_LOGGER)

    async with running_lane(db_path, checkpoint_dir) as (_, report, _):
        assert (report.sessions, report.rebuilt, report.orphans_removed) == (2, {}, [])
        assert lane_records(caplog, logging.WARNING) == []
        assert history.path_a.read_bytes() == a_before


async def test_hydrate_keeps_a_version_1_checkpoint_at_the_logs_turn(
    db_path, checkpoint_dir, caplog
):
    """A checkpoint file version 1 wrote, at the log's turn, is migrated as it is read and
    matches: no rebuild, no warning; the shutdown's pending delta is kept."""
    history = await write_history(db_path, checkpoint_dir)
    document = orjson.loads(history.path_a.read_bytes())
    pending = document.pop("pending_summary_delta")
    # As version 1 wrote it: the count twice, the delta beside the state's, each turn's
    # delivery as it stood before the reply was sent.
    document.update(schema_version=1, turn_count=12, summary_delta=pending)
    for turn in document["recent_turns"]:
        turn.update(status="answered", reply_message_id=None, delivered_at=None)
    history.path_a.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    caplog.set_level(logging.WARNING, logger=LANE_LOGGER)

    async with running_lane(db_path, checkpoint_dir) as (lane, report, _):
        assert (report.sessions, report.rebuilt) == (2, {})
        assert lane_records(caplog, logging.WARNING) == []
        snapshot = await lane.inspector.checkpoint(history.sid_a)

    assert snapshot is not None
    assert (snapshot.schema_version, snapshot.turn_count) == (2, 12)
    assert pending.startswith("[turns 8-9]\n")
    assert snapshot.pending_summary_delta == pending


async def test_hydrate_removes_temp_files_of_an_interrupted_write(db_path, checkpoint_dir):
    """Temp files a crash left mid-write are deleted at hydrate; real checkpoints stay."""
    history = await write_history(db_path, checkpoint_dir)
    half = history.path_a.read_bytes()[:100]
    (checkpoint_dir / f".tmp-{history.sid_a}.k2j4h1").write_bytes(half)
    (checkpoint_dir / f".tmp-{history.sid_b}.x9y8z7").write_bytes(b"")

    async with running_lane(db_path, checkpoint_dir) as (lane, report, _):
        assert report.rebuilt == {}
        assert sorted(p.name for p in checkpoint_dir.iterdir()) == sorted(
            [history.path_a.name, history.path_b.name]
        )
        snapshot = await lane.inspector.checkpoint(history.sid_a)
        assert snapshot is not None
        assert snapshot.turn_count == 12


async def test_hydrate_deletes_checkpoint_of_a_session_gone_from_the_db(
    db_path, checkpoint_dir, caplog
):
    """An orphan checkpoint (its session erased, the file not yet) is deleted at hydrate."""
    history = await write_history(db_path, checkpoint_dir)
    async with Database(db_path) as db:
        await db.write(
            lambda tx: tx.execute(
                "DELETE FROM conversation_sessions WHERE session_id = ?", (history.sid_b,)
            )
        )
    caplog.set_level(logging.WARNING, logger=LANE_LOGGER)

    async with running_lane(db_path, checkpoint_dir) as (lane, report, _):
        assert report.orphans_removed == [history.sid_b]
        assert report.sessions == 1
        assert not history.path_b.exists()
        assert await lane.inspector.checkpoint_ids() == [history.sid_a]
        assert any(history.sid_b in w for w in lane_records(caplog, logging.WARNING))
        assert await lane.inspector.packet(CHAT_B) is None


# -- checkpoint write failure ----------------------------------------------------------------------


def on_disk(path: Path) -> dict[str, Any]:
    """The snapshot document a checkpoint's files hold: its base and its journal, composed."""
    journal = path.with_suffix(".journal")
    return compose(path.read_bytes(), journal.read_bytes() if journal.exists() else b"", "x")


def files(path: Path) -> tuple[bytes, bytes | None]:
    """The bytes of a checkpoint's base file and of its journal (``None``: none)."""
    journal = path.with_suffix(".journal")
    return path.read_bytes(), journal.read_bytes() if journal.exists() else None


def fail_next_write(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Make the next checkpoint write fail with ENOSPC where it makes it durable: the rename
    of a base (``os.replace``) or the sync of a journal's append (``os.fdatasync``); return
    the files it refused."""
    real_replace, real_fdatasync = os.replace, os.fdatasync
    refused: list[Path] = []

    def refuse(path: Path) -> None:
        refused.append(path)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def replace(src: Any, dst: Any) -> None:
        if not refused:
            refuse(Path(dst))
        real_replace(src, dst)

    def fdatasync(fd: int) -> None:
        if not refused:
            refuse(Path(os.readlink(f"/proc/self/fd/{fd}")))
        real_fdatasync(fd)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "fdatasync", fdatasync)
    return refused


async def test_checkpoint_write_failure_keeps_turn_and_old_file_then_next_turn_heals(
    lane, db, engine, checkpoint_dir, monkeypatch, caplog
):
    """A failed checkpoint write does not fail the turn, logs an error, keeps the old file."""
    await talk(lane, CHAT_A, 2, engine)
    sid = lane.session_id_for_chat(CHAT_A)
    assert sid is not None
    path = lane.inspector.checkpoint_path(sid)
    before = files(path)
    refused = fail_next_write(monkeypatch)
    caplog.set_level(logging.ERROR, logger=LANE_LOGGER)

    result = await lane.on_turn(msg(CHAT_A, text_of(CHAT_A, 3), 3), engine)

    assert refused == [path.with_suffix(".journal")]  # turn 3 was an append
    assert (result.turn.seq, result.turn.status) == (3, "answered")
    errors = lane_records(caplog, logging.ERROR)
    assert len(errors) == 1
    assert sid in errors[0]
    assert os.strerror(errno.ENOSPC) in errors[0]
    assert files(path) == before
    assert await lane.inspector.checkpoint(sid) == CheckpointWriter.parse(
        before[0], journal=before[1] or b"", session_id=sid
    )
    assert (await lane.inspector.checkpoint(sid)).turn_count == 2
    assert sorted(checkpoint_dir.iterdir()) == sorted([path, path.with_suffix(".journal")])
    assert [row[0] for row in await log_rows(db, sid)] == [1, 2, 3]

    await lane.on_turn(msg(CHAT_A, text_of(CHAT_A, 4), 4), engine)

    snapshot = await lane.inspector.checkpoint(sid)
    assert snapshot is not None
    assert snapshot.turn_count == 4
    assert [t.seq for t in snapshot.recent_turns] == [2, 3, 4]
    assert snapshot.state == (await lane.inspector.session(sid)).state


async def test_checkpoint_write_failure_is_healed_at_next_start(
    db_path, checkpoint_dir, monkeypatch, caplog
):
    """A checkpoint left behind by a failed write is rebuilt at the next start (I5)."""
    engine = CountingEngine()
    async with running_lane(db_path, checkpoint_dir) as (lane, _, db):
        await talk(lane, CHAT_A, 2, engine)
        sid = lane.session_id_for_chat(CHAT_A)
        assert sid is not None
        fail_next_write(monkeypatch)
        await talk(lane, CHAT_A, 1, engine, start=3)
        await crash(db)
    caplog.set_level(logging.WARNING, logger=LANE_LOGGER)

    async with running_lane(db_path, checkpoint_dir) as (lane, report, _):
        assert report.rebuilt == {sid: "is behind the log (turn 2 of 3)"}
        assert any(sid in w for w in lane_records(caplog, logging.WARNING))
        snapshot = await lane.inspector.checkpoint(sid)
        assert snapshot is not None
        assert snapshot.turn_count == 3
        rebuilt = await lane.inspector.rebuild_state(sid)
        assert snapshot.state.log_view() == rebuilt.log_view()
