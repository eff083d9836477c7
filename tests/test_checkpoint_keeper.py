"""Checkpoint upkeep (:mod:`agent.memory.lane_parts.checkpoint_keeper`): a checkpoint write that
fails loses no turn and is logged once; the maintenance job rewrites the files left behind once the
disk takes writes again; a clean stop marks every file ``shutdown_clean``. One failure is
injected with monkeypatch; everything else is real."""

from __future__ import annotations

import logging

import pytest

from agent.errors import CheckpointError
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage

LANE_LOGGER = "agent.memory.lane"


async def say(lane: ConversationLane, chat_id: int, text: str, engine) -> str:
    result = await lane.on_turn(InboundMessage(chat_id=chat_id, text=text), engine)
    return result.turn.session_id


async def test_failed_checkpoint_writes_lose_no_turn_and_heal_later(
    lane, engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    """While checkpoint writes fail, turns still commit and the files stay behind (or
    missing); the error is logged once for the outage, not once per turn. Once writes work
    again, rewrite_stale_checkpoints brings every file left behind to its session's turn."""
    caplog.set_level(logging.DEBUG, logger=LANE_LOGGER)
    first = await say(lane, 1, "before the outage", engine)
    original = CheckpointWriter.write

    async def refuse(self, snapshot, **options):
        raise CheckpointError("disk full")

    monkeypatch.setattr(CheckpointWriter, "write", refuse)
    await say(lane, 1, "during the outage", engine)
    second = await say(lane, 2, "another chat", engine)
    report = await lane.inspector.save_report(1)  # tries the write again: still refused
    assert report is not None
    assert report.turns == 2
    behind = await lane.inspector.checkpoint(first)
    assert behind is not None
    assert behind.turn_count == 1
    assert await lane.inspector.checkpoint(second) is None
    errors = [r for r in caplog.records if r.name == LANE_LOGGER and r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "disk full" in errors[0].getMessage()

    monkeypatch.setattr(CheckpointWriter, "write", original)
    assert await lane.rewrite_stale_checkpoints() == 2
    for sid, turns in ((first, 2), (second, 1)):
        snapshot = await lane.inspector.checkpoint(sid)
        assert snapshot is not None
        assert snapshot.turn_count == turns
    assert await lane.rewrite_stale_checkpoints() == 0


async def test_a_clean_stop_marks_every_checkpoint_shutdown_clean(db, checkpoint_dir, engine):
    """shutdown writes each open session's file with the status ``shutdown_clean``."""
    lane = ConversationLane(db, CheckpointWriter(checkpoint_dir))
    await lane.hydrate()
    sids = [await say(lane, chat, "hello", engine) for chat in (1, 2, 3)]
    await lane.shutdown()

    writer = CheckpointWriter(checkpoint_dir)
    for sid in sids:
        snapshot = await writer.load(sid)
        assert snapshot is not None
        assert snapshot.state.status == "shutdown_clean"
