"""The lane's start: what cannot wait done at once, every other session left to the background.

:class:`Hydration` is the PRD-014 start-up sequence (section 5) that
:meth:`~agent.memory.lane.ConversationLane.hydrate` runs once, and :class:`HydrationReport` what
it found and repaired. Tested by ``tests/test_hydration.py``, ``tests/test_lazy_start.py`` and
the crash tests (``tests/test_lane_crash.py``).

Design (issue 18, "start in constant time"):

- **The checkpoint record.** ``conversation_sessions.checkpoint_seq`` (migration 0015) is the
  seq up to which the session's checkpoint file is known to be written; ``NULL`` is unknown.
  Every state change clears it in its own transaction (``save_state``, ``reopen_session``).
  :class:`~agent.memory.lane_parts.checkpoint_keeper.CheckpointKeeper` notes each file it
  writes (after the COMMIT, atomically) or finds matching, and records them in one batched
  transaction (:meth:`~agent.memory.lane_parts.checkpoint_keeper.CheckpointKeeper.record`):
  after the start's checks, at each run of the maintenance job (``rewrite_stale``) and at
  shutdown. No turn pays for it. It is written only for a chat with no turn under way (the
  chat's lock held through the commit) and only where ``last_seq`` still equals the file's seq.
- **Why a crash is safe.** The record may lag the file, never lead it: the file is durable
  before its record is written, and a state change that makes the file stale clears the record
  in the transaction that makes the change. A crash between the file and its record leaves the
  record unknown (or older), and the start then checks that file as before. So a record at
  ``last_seq`` proves the file was written at that turn; the start finds the files that may be
  stale with one query on a partial index (``checkpoint_seq IS NOT last_seq``), whose cost is
  the number of such sessions, not of all sessions. A file damaged behind the lane's back (or
  deleted) is still caught before its session serves a turn: every session is checked against
  the log when it is hydrated (below), and the background sweep checks the rest.
- **Lazy hydration.** Before the first reply :meth:`Hydration.start` only holds the sessions
  with active jobs (their reminders are scheduled from memory; one partial-index query) and
  lists the undelivered replies. The record never says a file is behind (it is at
  ``last_seq`` or unknown), so no check is owed before the first reply: any session is
  hydrated by :meth:`~agent.memory.lane_parts.checkpoint_keeper.CheckpointKeeper.open_live`
  under its chat's lock the moment its first message, command, edit or due job arrives, its
  checkpoint checked first and rebuilt if behind (I5). The background sweep then holds the
  sessions whose record is unknown (up to :data:`CHECKED_FIRST`: after a crash, the chats
  that were talking, whose files may be a turn behind), then the most recently active ones up
  to the resident cap, and checks every other file, one chat at a time under the chat's lock,
  so it never reorders or blocks a chat's turns for longer than one session's check; it
  records the files it found good a page at a time, and rests after each page
  (:data:`SWEEP_PAUSE`) so that turns keep most of the event loop. It begins
  :data:`SWEEP_DELAY` after the start: the updates that waited through the restart are
  answered first, without the sweep's queries between theirs (on PostgreSQL each check is
  round trips to a server that shares the machine's cores: 64 checks before the first reply
  took 0.2 s there).
  ``background=False`` (tools and tests) runs the sweep before returning and holds every
  session, as the start did before (up to the bound of
  :class:`~agent.memory.lane_parts.live_sessions.LiveSessions`).
- **Resuming, lazily.** A start writes nothing before the first turn (issue 20: a commit
  with its fsync was most of a one-session start). It once marked every open session
  ``resuming`` in one write; over 100,000 sessions that write alone took 2-3 s
  (``bench/start_time.py``), and it would hold the one writer meanwhile. A session is
  ``resuming`` in memory from the moment it is hydrated (the packet says so) until its next
  turn's fold sets its status, which is then committed. Its row keeps the status it had
  (``shutdown_clean`` after a clean stop) until that turn. The checkpoint record is written
  only for a file whose record is not at its seq already (after a clean stop every record is).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import dataclass, field

from agent.memory.lane_parts.checkpoint_keeper import CheckpointKeeper
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.schemas import ConversationSession, ConversationTurn

__all__ = ["CHECKED_FIRST", "SWEEP_DELAY", "SWEEP_PAUSE", "Hydration", "HydrationReport"]

#: Sessions whose checkpoint is not recorded the background sweep holds first (checked, and
#: rebuilt if behind); it checks the others with every other session.
CHECKED_FIRST = 64
#: The background sweep rests this share of the time each page took (pacing: turns get the
#: loop for at least a third of the sweep's time).
SWEEP_PAUSE = 0.5
#: Seconds between a background start and its sweep: the first replies go first.
SWEEP_DELAY = 1.0
#: Sessions the sweep holds between two rests (the resident cap's, most recent first).
_HOLD_PAGE = 32

# The lane's parts log as the lane: operators and tests follow one logger name.
logger = logging.getLogger("agent.memory.lane")


@dataclass(slots=True)
class HydrationReport:
    """What :meth:`ConversationLane.hydrate` found and repaired.

    Attributes:
        sessions: open sessions hydrated or checked (by the sweep too, once it is done).
        rebuilt: session id -> why its checkpoint was rebuilt from the database.
        orphans_removed: checkpoint files of sessions no longer in the database, deleted.
        undelivered: turns answered but never delivered, to be sent now (I4).
    """

    sessions: int = 0
    rebuilt: dict[str, str] = field(default_factory=dict)
    orphans_removed: list[str] = field(default_factory=list)
    undelivered: list[ConversationTurn] = field(default_factory=list)


class Hydration:
    """The start of one lane: the work that cannot wait, then the background sweep.

    Args:
        parts: the lane's parts.
        keeper: the lane's checkpoint upkeep (it hydrates and checks sessions).
    """

    def __init__(self, parts: LaneParts, keeper: CheckpointKeeper) -> None:
        self._parts = parts
        self._keeper = keeper
        self.report = HydrationReport()
        self._sweep: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        # Until start() returns no turn has run: every session held is ``resuming``.
        self._starting = True

    async def start(self, *, background: bool) -> HydrationReport:
        """Do what cannot wait, then sweep the rest in the background (or now).

        Returns:
            The report; with ``background=True`` the sweep adds to it as it goes.
        """
        parts, keeper, report = self._parts, self._keeper, self.report
        checkpoints, store, db = parts.checkpoints, parts.store, parts.db
        try:
            checkpoints.make_private()
        except OSError as exc:  # I5: the log has every turn; the files are rewritten later
            logger.error("checkpoint directory %s unusable: %s", checkpoints.directory, exc)
        checkpoints.remove_temp_files()
        # No write: a session is ``resuming`` in memory once hydrated, until its next turn.
        keeper.resumed_at = parts.clock()
        if parts.summary_worker is not None:
            await parts.summary_worker.initialize()
        # The start's reads at once (one wait, not three); no turn runs before they are used.
        unknown, with_jobs, report.undelivered = await asyncio.gather(
            _no_ids() if background else store.checkpoint_unknown(db.reader),
            store.open_sessions_with_jobs(db.reader),
            store.undelivered_turns(db.reader),
        )
        for sid in unknown:  # the files the record does not vouch for (else the sweep's)
            await self._hold_session(sid)
        # Read whole, the list says which sessions the sweep finds recorded already: their
        # files, found good, need no record (nor the read that would find it written).
        keeper.unrecorded = None if background else set(unknown)
        for session in with_jobs:
            await self._hold(session.chat_id, session)
        await keeper.record()
        logger.info(
            "started with %d sessions held (%d checkpoints rebuilt, %d undelivered replies)",
            len(parts.sessions),
            len(report.rebuilt),
            len(report.undelivered),
        )
        if background:
            self._sweep = asyncio.create_task(self._run_sweep(hold_all=False))
        else:
            await self._run_sweep(hold_all=True)
            keeper.unrecorded = None
        self._starting = False
        return report

    async def stop(self) -> None:
        """Stop the background sweep after the session it is at (the stop sequence), then check
        the checkpoints a crash may have left a turn behind that it had not reached (their
        record unknown, at most :data:`CHECKED_FIRST`): a clean stop leaves no file behind its
        log (I5), however soon it comes after the start."""
        self._stopping.set()
        if self._sweep is None:
            return
        await self._sweep
        store, reader = self._parts.store, self._parts.db.reader
        try:
            for sid in await store.checkpoint_unknown(reader, CHECKED_FIRST):
                session = await store.get_session(reader, sid)
                if session is not None and session.closed_at is None:
                    await self._check(session)
            await self._keeper.record()
        except Exception:  # the stop goes on: the next start checks them (I5)
            logger.exception("checking the checkpoints left behind at stop failed")

    async def swept(self) -> None:
        """Wait for the background sweep to finish (tests and tools)."""
        if self._sweep is not None:
            await asyncio.shield(self._sweep)

    async def _hold_session(self, session_id: str) -> None:
        session = await self._parts.store.get_session(self._parts.db.reader, session_id)
        if session is not None and session.closed_at is None:
            await self._hold(session.chat_id)

    async def _hold(self, chat_id: int, row: ConversationSession | None = None) -> None:
        # ``row``: the chat's open session read by the start, before any turn could change it.
        async with self._parts.chat_locks[chat_id]:
            if not self._parts.closed:
                await self._keeper.open_live(
                    chat_id,
                    self.report.rebuilt,
                    resuming=self._starting,
                    row=row if self._starting else None,
                )

    async def _run_sweep(self, *, hold_all: bool) -> None:
        try:
            if not hold_all:
                await self._rest(SWEEP_DELAY)
            await self._sweep_sessions(hold_all=hold_all)
        except Exception:  # a background task's error would otherwise go unseen
            logger.exception("the background checkpoint sweep stopped")

    async def _sweep_sessions(self, *, hold_all: bool) -> None:
        parts, store, report = self._parts, self._parts.store, self.report
        reader = parts.db.reader
        loop = asyncio.get_running_loop()
        if not hold_all:  # the files that may be behind, then the chats likely to talk first
            unknown = await store.checkpoint_unknown(reader, CHECKED_FIRST)
            cap = parts.sessions.resident_limit
            recent = await store.list_sessions(reader, limit=cap, open_only=True)
            holds = [functools.partial(self._hold_session, sid) for sid in unknown]
            holds += [functools.partial(self._hold, session.chat_id) for session in recent]
            for at in range(0, len(holds), _HOLD_PAGE):
                began = loop.time()
                for hold in holds[at : at + _HOLD_PAGE]:
                    if self._stopping.is_set():
                        return
                    await hold()
                await self._rest((loop.time() - began) * SWEEP_PAUSE)
        async for sessions in store.open_session_pages(reader):
            began = loop.time()
            for session in sessions:
                if self._stopping.is_set():
                    return
                if hold_all:
                    await self._hold(session.chat_id, session)
                else:
                    await self._check(session)
                report.sessions += 1
            await self._keeper.record()  # a page at a time: the files noted stay few
            if not hold_all:  # turns get the loop for a share of the sweep's time
                await self._rest((loop.time() - began) * SWEEP_PAUSE)
        report.orphans_removed = await self._keeper.remove_orphans()
        logger.info(
            "hydrated %d sessions (%d checkpoints rebuilt, %d undelivered replies)",
            report.sessions,
            len(report.rebuilt),
            len(report.undelivered),
        )

    async def _rest(self, seconds: float) -> None:
        """Sleep ``seconds``, or less if the lane stops meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _check(self, session: ConversationSession) -> None:
        # Checked, not held (memory stays bounded); a session held was checked when hydrated.
        parts = self._parts
        async with parts.chat_locks[session.chat_id]:
            if parts.closed or parts.sessions.session_id_for_chat(session.chat_id) is not None:
                return
            row = await parts.store.get_session(parts.db.reader, session.session_id)
            if row is None or row.closed_at is not None:
                return
            await self._keeper.checked(row, self.report.rebuilt)


async def _no_ids() -> list[str]:
    return []
