"""What a user asks of long-term memory (:mod:`agent.memory.lane_parts.memory_commands`):
``/remember`` keeps a note verbatim, ``/facts confirm`` makes an unconfirmed memory active, ``/facts
forget``
erases one with its history, and consolidation archives what decayed. Real SQLite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.db import Database
from agent.memory import CheckpointWriter, ConversationLane
from agent.memory.lane_parts.memory_commands import MAX_NOTE_CHARS

CHAT = 7171


async def test_remember_keeps_a_note_verbatim_and_refuses_empty_or_long_ones(lane):
    """A note is kept with its blanks collapsed, active at once; an empty note or one past
    MAX_NOTE_CHARS is refused with the reason."""
    memory = await lane.remember(CHAT, "  my passport   number ends in 42 ")
    assert (memory.text, memory.status) == ("my passport number ends in 42", "active")
    assert [m.text for m in await lane.inspector.facts(CHAT)] == [memory.text]
    with pytest.raises(ValueError, match="1 to"):
        await lane.remember(CHAT, "   ")
    with pytest.raises(ValueError, match=str(MAX_NOTE_CHARS)):
        await lane.remember(CHAT, "x" * (MAX_NOTE_CHARS + 1))


async def test_forget_erases_a_memory_and_confirm_of_an_unknown_one_finds_nothing(lane):
    """/facts forget erases the memory (and the packet no longer carries it); confirming or
    forgetting a memory the chat does not have changes nothing."""
    memory = await lane.remember(CHAT, "the spare key is under the mat")
    assert await lane.confirm_memory(CHAT + 1, memory.memory_id) is None
    assert await lane.forget_memories(CHAT + 1, [memory.memory_id]) == []

    erased = await lane.forget_memories(CHAT, [memory.memory_id])
    assert [m.memory_id for m in erased] == [memory.memory_id]
    assert await lane.inspector.facts(CHAT, history=True) == []
    assert await lane.inspector.chat_memories(CHAT) == ()


async def test_consolidation_archives_what_went_unused_for_a_year(db_path, checkpoint_dir):
    """The consolidation job keeps a fresh note, and archives it once a year went by without
    it being used: /facts no longer lists it."""
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    lane = ConversationLane(
        await Database(db_path).open(), CheckpointWriter(checkpoint_dir), clock=lambda: now[0]
    )
    await lane.hydrate()
    try:
        note = await lane.remember(CHAT, "my locker code is 31")
        assert (await lane.consolidate_memories()).archived == []
        assert [m.text for m in await lane.inspector.facts(CHAT)] == [note.text]
        now[0] += timedelta(days=365)
        report = await lane.consolidate_memories()
        assert report.archived == [note.memory_id]
        assert await lane.inspector.facts(CHAT) == []
    finally:
        await lane.shutdown()
