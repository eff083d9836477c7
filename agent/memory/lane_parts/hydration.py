"""The lane's start: every open session loaded, its checkpoint checked, undelivered replies found.

:func:`hydrate` is the PRD-014 start-up sequence (section 5) that
:meth:`~agent.memory.lane.ConversationLane.hydrate` runs once, and :class:`HydrationReport` what
it found and repaired. Tested by ``tests/test_hydration.py`` and the crash tests
(``tests/test_lane_crash.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from agent.memory.lane_parts.checkpoint_keeper import CheckpointKeeper, bounded_gather
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.schemas import ConversationTurn

__all__ = ["HydrationReport", "hydrate"]

# The lane's parts log as the lane: operators and tests follow one logger name.
logger = logging.getLogger("agent.memory.lane")


@dataclass(slots=True)
class HydrationReport:
    """What :meth:`ConversationLane.hydrate` found and repaired.

    Attributes:
        sessions: open sessions hydrated.
        rebuilt: session id -> why its checkpoint was rebuilt from the database.
        orphans_removed: checkpoint files of sessions no longer in the database, deleted.
        undelivered: turns answered but never delivered, to be sent now (I4).
    """

    sessions: int = 0
    rebuilt: dict[str, str] = field(default_factory=dict)
    orphans_removed: list[str] = field(default_factory=list)
    undelivered: list[ConversationTurn] = field(default_factory=list)


async def hydrate(parts: LaneParts, keeper: CheckpointKeeper) -> HydrationReport:
    """Load every open session, check its checkpoint, and mark it ``resuming``.

    The state and last turns of each open session come from the database (through indexes: the cost
    does not depend on the history's length); a checkpoint that is missing, unreadable, of an
    unknown version, or not at the database's turn is rewritten from the database with a warning
    (I5). Checkpoint files of sessions the database no longer has are deleted (an erasure a crash
    interrupted). Sessions are read a page at a time and all but the most recently active are held
    packed (:mod:`agent.memory.lane_parts.live_sessions`); a chat's long-term memories are read at
    its first packet.
    """
    report = HydrationReport()
    checkpoints, store, db = parts.checkpoints, parts.store, parts.db
    try:
        checkpoints.make_private()
    except OSError as exc:  # I5: the log has every turn; the files are rewritten later
        logger.error("checkpoint directory %s unusable: %s", checkpoints.directory, exc)
    checkpoints.remove_temp_files()
    now = parts.clock()
    await db.write(lambda tx: store.set_status(tx, "resuming", now=now))
    worker = parts.summary_worker
    if worker is not None:
        await worker.initialize()
    stale: list[str] = []
    # A page of sessions at a time: a bot with many chats never holds all as objects.
    async for sessions in store.open_session_pages(db.reader):
        page = [session.session_id for session in sessions]
        if worker is not None:
            await worker.initialize(page)
        recent = await store.recent_turns_of(db.reader, page, parts.builder.recent_turns)
        for session in sessions:
            live = parts.sessions.new(session, recent[session.session_id])
            problem = await keeper.problem(live)
            parts.sessions.add(live)
            report.sessions += 1
            if problem is None:
                continue
            logger.warning(
                "checkpoint of session %s %s; rebuilt from the turn log",
                session.session_id,
                problem,
            )
            report.rebuilt[session.session_id] = problem
            stale.append(session.session_id)
    await bounded_gather(keeper.rewrite(sid) for sid in stale)
    await keeper.record()
    report.orphans_removed = await keeper.remove_orphans()
    report.undelivered = await store.undelivered_turns(db.reader)
    logger.info(
        "hydrated %d sessions (%d checkpoints rebuilt, %d undelivered replies)",
        report.sessions,
        len(report.rebuilt),
        len(report.undelivered),
    )
    return report
