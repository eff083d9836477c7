"""A chat's sessions over time (:mod:`agent.memory.lane_parts.session_lifecycle`): ``/new`` carries
the open to-dos into a fresh session, ``/resume`` brings an earlier one back, ``/clear`` takes the
turns out of the packet but not out of the log, and erasing or pruning removes a session
everywhere. Real SQLite, real checkpoint files, the offline concierge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.db import Database
from agent.engines.rule_based import RuleBasedConcierge
from agent.errors import SessionNotFound
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage

CHAT = 6161


async def say(lane: ConversationLane, text: str, chat_id: int = CHAT) -> str:
    result = await lane.on_turn(InboundMessage(chat_id=chat_id, text=text), RuleBasedConcierge())
    return result.turn.session_id


async def test_new_carries_the_open_todo_and_resume_brings_the_old_session_back(lane):
    """/new closes the session and opens a fresh one carrying the open to-do; /resume makes
    the closed one current again, with the to-do once, not twice; an unknown id is refused."""
    old = await say(lane, "remind me to book the hotel")
    switch = await lane.new_session(CHAT)
    assert switch is not None
    assert (switch.closed, len(switch.loops)) == (old, 1)
    assert lane.session_id_for_chat(CHAT) == switch.opened
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    assert [loop.text for loop in packet.open_loops] == [switch.loops[0].text]

    back = await lane.resume_session(CHAT, old)
    assert (back.closed, back.opened) == (switch.opened, old)
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    assert len(packet.open_loops) == 1
    with pytest.raises(SessionNotFound):
        await lane.resume_session(CHAT, "ses_" + "0" * 32)


async def test_new_without_open_items_leaves_the_next_message_to_open_a_session(lane):
    """With nothing open, /new only closes: the chat has no session until it speaks again."""
    await say(lane, "hello there")
    switch = await lane.new_session(CHAT)
    assert switch is not None
    assert switch.opened is None
    assert lane.session_id_for_chat(CHAT) is None
    assert await lane.new_session(CHAT) is None


async def test_clear_takes_turns_out_of_the_packet_but_recall_still_finds_them(lane):
    """/clear: the packet starts afresh, /recall still searches the earlier turns."""
    await say(lane, "The kayak is yellow.")
    await say(lane, "The paddles are in the shed.")
    assert await lane.clear_session(CHAT) == 2
    assert await lane.clear_session(CHAT) == 0
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    assert packet.recent_turns == ()
    assert await lane.inspector.recall(CHAT, "yellow kayak")
    assert await lane.clear_session(CHAT + 1) is None


async def test_forget_and_prune_erase_sessions_everywhere(db_path, checkpoint_dir):
    """A forgotten session leaves no row and no checkpoint file; pruning erases the sessions
    quiet for longer than asked, and only those."""
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    lane = ConversationLane(
        await Database(db_path).open(), CheckpointWriter(checkpoint_dir), clock=lambda: now[0]
    )
    await lane.hydrate()
    try:
        gone = await say(lane, "my secret is 1234")
        assert await lane.forget_session(gone)
        assert await lane.inspector.session(gone) is None
        assert gone not in await lane.inspector.checkpoint_ids()
        assert not await lane.forget_session(gone)

        old = await say(lane, "an old chat", chat_id=1)
        now[0] += timedelta(days=30)
        recent = await say(lane, "a recent chat", chat_id=2)
        assert await lane.prune(older_than_days=10) == [old]
        assert await lane.inspector.session(old) is None
        assert await lane.inspector.session(recent) is not None
    finally:
        await lane.shutdown()
