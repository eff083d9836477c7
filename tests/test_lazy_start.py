"""A start that does not wait for every session (issue 18, section 1;
:mod:`agent.memory.lane_parts.hydration`): ``hydrate(background=True)`` does only what cannot
wait, a session is hydrated (checkpoint checked against the log, I5) by its first message, the
background sweep neither reorders nor blocks turns, and the checkpoint record
(``checkpoint_seq``, migration 0015) never vouches for a file that was not written."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from agent.db import Database
from agent.memory import (
    CheckpointWriter,
    ConversationContextPacket,
    ConversationLane,
    InboundMessage,
    Reply,
)
from agent.memory.conversation_store import SqliteConversationStore
from agent.memory.lane_parts.hydration import CHECKED_FIRST
from agent.memory.lane_parts.live_sessions import PACKED_PER_RESIDENT
from agent.memory.lane_parts.parts import ChatLocks
from tests.test_conversation_memory import JobEngine

SESSIONS = 2_000


async def start(db_path: Path, checkpoint_dir: Path, *, resident: int = 8) -> ConversationLane:
    db = await Database(db_path).open()
    return ConversationLane(db, CheckpointWriter(checkpoint_dir), resident_sessions=resident)


async def fill(db_path: Path, checkpoint_dir: Path, engine: object, chats: int) -> None:
    """Give ``chats`` chats one turn each, then stop cleanly (files and records written)."""
    lane = await start(db_path, checkpoint_dir, resident=64)
    await lane.hydrate()

    async def talk(chat_id: int) -> None:
        message = InboundMessage(chat_id=chat_id, text=f"my code word is w{chat_id}")
        await lane.on_turn(message, engine)  # type: ignore[arg-type]

    for first in range(0, chats, 100):
        await asyncio.gather(*(talk(chat) for chat in range(first, min(first + 100, chats))))
    await lane.shutdown()


async def forget_records(db_path: Path) -> None:
    """Make every record unknown, as migration 0015 leaves a database."""
    async with Database(db_path) as db:
        await db.write(
            lambda tx: tx.execute("UPDATE conversation_sessions SET checkpoint_seq = NULL")
        )


async def unknown_records(db_path: Path, limit: int | None = None) -> list[str]:
    async with Database(db_path) as db:
        return await SqliteConversationStore().checkpoint_unknown(db.reader, limit)


class FileReadingEngine:
    """Answers with the turn count the chat's checkpoint file holds when the engine runs."""

    def __init__(self, checkpoint_dir: Path, sessions: dict[int, str]) -> None:
        self.seen: dict[int, int | None] = {}
        self._writer = CheckpointWriter(checkpoint_dir)
        self._sessions = sessions

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        snapshot = await self._writer.load(self._sessions[message.chat_id])
        self.seen[message.chat_id] = None if snapshot is None else snapshot.turn_count
        return Reply(text="noted", intent="echo")


async def test_a_start_over_many_sessions_answers_one_never_hydrated_with_its_memory(
    db_path: Path, checkpoint_dir: Path, engine
):
    """2,000 sessions on disk, all cleanly recorded: the start holds none of them, and the
    first message of one of the oldest chats finds its turns as they were."""
    await fill(db_path, checkpoint_dir, engine, SESSIONS)
    assert await unknown_records(db_path) == []  # the clean stop recorded every file

    lane = await start(db_path, checkpoint_dir)
    report = await lane.hydrate(background=True)
    try:
        assert report.rebuilt == {}
        assert lane.session_id_for_chat(7) is None  # not hydrated by the start
        result = await lane.on_turn(InboundMessage(chat_id=7, text="what was it?"), engine)
        assert result.packet is not None
        assert [turn.user_text for turn in result.packet.recent_turns] == ["my code word is w7"]
        assert result.turn.seq == 2
        await lane.swept()
        assert report.sessions == SESSIONS
        assert report.rebuilt == {}
    finally:
        await lane.shutdown()


async def test_checkpoints_deleted_or_stale_before_the_start_are_rebuilt_before_a_turn(
    db_path: Path, checkpoint_dir: Path, engine
):
    """After a clean stop (every record says the files are written) one file is deleted and
    another put back one turn behind: each session's first turn after the start finds its
    file rebuilt at the log's turn before the engine runs (I5), though the record vouched
    for both."""
    lane = await start(db_path, checkpoint_dir)
    await lane.hydrate()
    first = await lane.on_turn(InboundMessage(chat_id=1, text="one"), engine)
    behind = await lane.on_turn(InboundMessage(chat_id=2, text="two"), engine)
    stale_file = checkpoint_dir / f"{behind.turn.session_id}.json"
    old_bytes = stale_file.read_bytes()
    await lane.on_turn(InboundMessage(chat_id=2, text="three"), engine)
    await lane.shutdown()
    (checkpoint_dir / f"{first.turn.session_id}.json").unlink()
    stale_file.write_bytes(old_bytes)
    assert await unknown_records(db_path) == []

    sessions = {1: first.turn.session_id, 2: behind.turn.session_id}
    reader = FileReadingEngine(checkpoint_dir, sessions)
    again = await start(db_path, checkpoint_dir)
    await again.hydrate(background=True)
    try:
        await again.on_turn(InboundMessage(chat_id=1, text="later"), reader)
        await again.on_turn(InboundMessage(chat_id=2, text="later"), reader)
        assert reader.seen == {1: 1, 2: 2}
    finally:
        await again.shutdown()


async def test_a_turn_leaves_its_record_unknown_until_its_file_is_recorded(
    db_path: Path, checkpoint_dir: Path, engine
):
    """The record lags the file, never leads it: a crash after a turn (no stop, no
    maintenance run) leaves its session among those the next start checks."""
    lane = await start(db_path, checkpoint_dir)
    await lane.hydrate()
    result = await lane.on_turn(InboundMessage(chat_id=1, text="one"), engine)
    assert await unknown_records(db_path) == [result.turn.session_id]
    await lane.rewrite_stale_checkpoints()  # the maintenance job records the written files
    assert await unknown_records(db_path) == []
    await lane.on_turn(InboundMessage(chat_id=1, text="two"), engine)
    assert await unknown_records(db_path) == [result.turn.session_id]
    await lane.shutdown()
    assert await unknown_records(db_path) == []


async def test_a_start_records_the_files_it_found_good_that_were_not_recorded(
    db_path: Path, checkpoint_dir: Path, engine
):
    """A foreground start after a crash (a turn's file written, its record not) checks that
    file, finds it good and records it, so that the next start need not check it; the files
    whose record was at their turn already stay recorded."""
    await fill(db_path, checkpoint_dir, engine, 3)
    running = await start(db_path, checkpoint_dir)
    await running.hydrate()
    turn = (await running.on_turn(InboundMessage(chat_id=1, text="and one more"), engine)).turn
    assert await unknown_records(db_path) == [turn.session_id]
    # Another start while it runs, as after its crash (it never stops, nor records).
    restarted = await start(db_path, checkpoint_dir)
    report = await restarted.hydrate()
    try:
        assert report.sessions == 3
        assert report.rebuilt == {}
        assert await unknown_records(db_path) == []
    finally:
        await restarted.shutdown()
        await running.shutdown()


async def test_the_background_sweep_does_not_reorder_turns(
    db_path: Path, checkpoint_dir: Path, engine
):
    """Messages of many chats arrive while the sweep is hydrating and checking: every chat's
    turns are in the order its messages arrived."""
    await fill(db_path, checkpoint_dir, engine, 300)
    lane = await start(db_path, checkpoint_dir, resident=32)
    await lane.hydrate(background=True)
    chats = range(0, 300, 7)

    async def send(chat_id: int, n: int) -> None:
        await lane.on_turn(InboundMessage(chat_id=chat_id, text=f"m{n}"), engine)

    try:
        await asyncio.gather(*(send(chat, n) for n in range(4) for chat in chats))
        await lane.swept()
        for chat in chats:
            turns = await lane.inspector.history(chat, 10)
            assert [turn.user_text for turn in turns] == [
                f"my code word is w{chat}", "m0", "m1", "m2", "m3"
            ]
    finally:
        await lane.shutdown()


async def test_a_start_with_every_record_unknown_checks_nothing_before_it_returns(
    db_path: Path, checkpoint_dir: Path, engine
):
    """Every record unknown (the first start after migration 0015, or a crash with every chat
    busy): a background start holds no session before it returns (no check is owed before the
    first reply); a file put back a turn behind is rebuilt before its chat's turn (I5); the
    sweep holds CHECKED_FIRST of the unknown ones first, then checks and records the rest."""
    chats = CHECKED_FIRST * 3
    await fill(db_path, checkpoint_dir, engine, chats)
    last = chats - 1  # the newest session: last in the order the start takes them
    lane = await start(db_path, checkpoint_dir)
    await lane.hydrate()
    sid = lane.session_id_for_chat(last)
    assert sid is not None
    old_bytes = (checkpoint_dir / f"{sid}.json").read_bytes()
    await lane.on_turn(InboundMessage(chat_id=last, text="two"), engine)
    await lane.shutdown()
    (checkpoint_dir / f"{sid}.json").write_bytes(old_bytes)
    await forget_records(db_path)
    everything = await unknown_records(db_path)
    assert len(everything) == chats
    assert await unknown_records(db_path, 5) == sorted(everything)[:5]

    reader = FileReadingEngine(checkpoint_dir, {last: sid})
    again = await start(db_path, checkpoint_dir)
    report = await again.hydrate(background=True)
    try:
        held = [chat for chat in range(chats) if again.session_id_for_chat(chat) is not None]
        assert held == []  # the sweep has not begun
        result = await again.on_turn(InboundMessage(chat_id=last, text="three"), reader)
        assert reader.seen == {last: 2}  # rebuilt at the log's turn before the engine ran
        assert result.packet is not None
        assert result.packet.session_status == "resuming"
        await again.swept()
        assert report.sessions == chats
        assert set(await unknown_records(db_path)) <= {sid}  # its new turn may wait
    finally:
        await again.shutdown()
    assert await unknown_records(db_path) == []


async def test_a_stop_right_after_a_start_leaves_no_file_behind_its_log(
    db_path: Path, checkpoint_dir: Path, engine
):
    """A crash left a file a turn behind and its record unknown; the next run stops before
    its sweep began (a restart that is stopped at once): the clean stop checks what the sweep
    had not, so the file is at the log's turn when the bot exits (I5)."""
    lane = await start(db_path, checkpoint_dir)
    await lane.hydrate()
    first = await lane.on_turn(InboundMessage(chat_id=3, text="one"), engine)
    behind = checkpoint_dir / f"{first.turn.session_id}.json"
    old_bytes = behind.read_bytes()
    await lane.on_turn(InboundMessage(chat_id=3, text="two"), engine)
    await lane.shutdown()
    behind.write_bytes(old_bytes)
    await forget_records(db_path)

    again = await start(db_path, checkpoint_dir)
    await again.hydrate(background=True)
    await again.shutdown()  # before SWEEP_DELAY: the sweep has held nothing
    snapshot = await CheckpointWriter(checkpoint_dir).load(first.turn.session_id)
    assert snapshot is not None
    assert snapshot.turn_count == 2
    assert await unknown_records(db_path) == []


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
async def test_a_start_commits_nothing_and_leaves_the_rows_status_to_each_sessions_next_turn(
    db_path: Path, checkpoint_dir: Path, engine, background: bool
):
    """A start writes nothing before the first turn (issue 20: no commit, no fsync; it once
    marked every row ``resuming`` in one write): a session is ``resuming`` in memory once
    hydrated (its packet says so), its row keeps the clean stop's status until its next turn
    commits one, and its checkpoint record is at its turn already."""
    await fill(db_path, checkpoint_dir, engine, 3)
    watcher = sqlite3.connect(db_path)  # another connection sees every commit in data_version
    lane = await start(db_path, checkpoint_dir)
    try:
        before = watcher.execute("PRAGMA data_version").fetchone()
        report = await lane.hydrate(background=background)
        await lane.swept()
        assert report.rebuilt == {}
        assert watcher.execute("PRAGMA data_version").fetchone() == before
        assert Path(f"{db_path}-wal").stat().st_size == 0
        quiet = await lane.inspector.open_session(2)
        assert quiet is not None
        assert quiet.status == "shutdown_clean"
        packet = await lane.inspector.packet(1)
        assert packet is not None
        assert packet.session_status == "resuming"
        result = await lane.on_turn(InboundMessage(chat_id=1, text="back again"), engine)
        assert result.packet is not None
        assert result.packet.session_status == "resuming"
        assert watcher.execute("PRAGMA data_version").fetchone() != before
        talked = await lane.inspector.open_session(1)
        assert talked is not None
        assert talked.status == "active"
    finally:
        await lane.shutdown()
        watcher.close()
    assert await unknown_records(db_path) == []


async def test_the_sessions_held_stay_bounded_and_one_let_go_comes_back_whole(
    db_path: Path, checkpoint_dir: Path, engine
):
    """A lane that keeps 2 sessions as objects holds at most 2 x (1 + PACKED_PER_RESIDENT):
    past that the least recently used are let go, but not one with a reminder; a chat let go
    finds its turns and its checkpoint at its next message, as after a lazy start."""
    resident = 2
    bound = resident * (1 + PACKED_PER_RESIDENT)
    chats = bound + 20
    lane = await start(db_path, checkpoint_dir, resident=resident)
    await lane.hydrate(background=True)
    try:
        await lane.on_turn(InboundMessage(chat_id=0, text="remind me of the report"), JobEngine())
        for chat in range(1, chats):
            message = InboundMessage(chat_id=chat, text=f"my code word is w{chat}")
            await lane.on_turn(message, engine)
        held = [chat for chat in range(chats) if lane.session_id_for_chat(chat) is not None]
        assert len(held) == bound
        assert 0 in held  # its reminder is scheduled from what the lane holds
        assert [chat for chat, _ in lane.active_jobs()] == [0]
        assert 1 not in held  # the least recently used
        result = await lane.on_turn(InboundMessage(chat_id=1, text="what was it?"), engine)
        assert result.packet is not None
        assert [t.user_text for t in result.packet.recent_turns] == ["my code word is w1"]
        assert result.turn.seq == 2
        assert await lane.rewrite_stale_checkpoints() == 0
    finally:
        await lane.shutdown()


async def test_a_chats_lock_lives_while_held_or_awaited_and_goes_after():
    """The sweep takes every chat's lock once: a lock nobody holds or awaits is not kept, and
    one held or awaited is the one every caller gets."""
    locks = ChatLocks()
    first = locks[7]
    async with first:
        waiter = asyncio.create_task(locks[7].acquire())
        await asyncio.sleep(0)
        assert locks[7] is first
    await waiter
    assert locks[7] is first
    assert first.locked()
    first.release()
    del first, waiter
    async with locks[8]:
        pass
    assert list(locks.keys()) == []
