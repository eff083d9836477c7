"""The lane's shared parts (:mod:`agent.memory.lane_parts.parts`): a session another process opened
is picked up from the database when a command needs it, and a packet built from what the lane
holds leaves out the turns a ``/clear`` took away. Two real lanes on one SQLite file."""

from __future__ import annotations

from pathlib import Path

from agent.db import Database
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage

CHAT = 9191


async def test_a_session_opened_by_another_process_is_found_when_needed(
    db_path: Path, tmp_path: Path, engine
):
    """Lane B (another process on the same database) opens the chat's session after lane A
    started; /new on lane A finds and closes it."""
    first = ConversationLane(await Database(db_path).open(), CheckpointWriter(tmp_path / "a"))
    await first.hydrate()
    other = ConversationLane(await Database(db_path).open(), CheckpointWriter(tmp_path / "b"))
    await other.hydrate()
    try:
        opened = await other.on_turn(InboundMessage(chat_id=CHAT, text="hello"), engine)
        assert first.session_id_for_chat(CHAT) is None  # not held by lane A yet
        switch = await first.new_session(CHAT)
        assert switch is not None
        assert switch.closed == opened.turn.session_id
        closed = await first.inspector.session(opened.turn.session_id)
        assert closed is not None
        assert closed.closed_at is not None
    finally:
        await other.shutdown()
        await first.shutdown()


async def test_the_packet_leaves_out_cleared_turns(lane, engine):
    """After /clear the packet carries only the turns said since (the clear's own turn is a
    bot-side record, not conversation)."""
    for text in ("one", "two"):
        await lane.on_turn(InboundMessage(chat_id=CHAT, text=text), engine)
    await lane.clear_session(CHAT)
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="three"), engine)
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    assert [t.user_text for t in packet.recent_turns] == ["three"]
