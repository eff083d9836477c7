"""The lane's start (:mod:`agent.memory.lane_parts.hydration`): every open session comes back, a
checkpoint that is missing or behind is rebuilt from the turn log (I5), a file whose session
was erased is deleted, and replies never delivered are listed to be sent (I4)."""

from __future__ import annotations

from pathlib import Path

from agent.db import Database
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage


async def start(db_path: Path, checkpoint_dir: Path) -> ConversationLane:
    lane = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    return lane


async def test_start_rebuilds_missing_checkpoints_deletes_orphans_and_lists_replies(
    db_path: Path, checkpoint_dir: Path, engine
):
    """After a stop, one session's checkpoint is deleted and a stray file of an erased
    session appears: the next start rebuilds the first from the log, deletes the stray one,
    and lists the reply that was never delivered."""
    lane = await start(db_path, checkpoint_dir)
    await lane.hydrate()
    delivered = await lane.on_turn(InboundMessage(chat_id=1, text="one", update_id=1), engine)
    await lane.mark_delivered(delivered.turn, 11)
    pending = await lane.on_turn(InboundMessage(chat_id=2, text="two", update_id=2), engine)
    kept, lost = delivered.turn.session_id, pending.turn.session_id
    await lane.shutdown()
    (checkpoint_dir / f"{lost}.json").unlink()
    stray = "ses_" + "f" * 32
    (checkpoint_dir / f"{stray}.json").write_bytes((checkpoint_dir / f"{kept}.json").read_bytes())

    again = await start(db_path, checkpoint_dir)
    report = await again.hydrate()
    try:
        assert report.sessions == 2
        assert list(report.rebuilt) == [lost]
        assert report.orphans_removed == [stray]
        assert [turn.turn_id for turn in report.undelivered] == [pending.turn.turn_id]
        snapshot = await again.inspector.checkpoint(lost)
        assert snapshot is not None
        assert snapshot.turn_count == 1
        assert sorted(await again.inspector.checkpoint_ids()) == sorted([kept, lost])
    finally:
        await again.shutdown()
