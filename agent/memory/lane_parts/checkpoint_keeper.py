"""Checkpoint upkeep: each open session's file written after its turns, and healed after faults.

:class:`CheckpointKeeper` writes a live session's checkpoint after every commit (side effects
after COMMIT), remembers which files are behind the log when a write fails (I5: the turn log
stays the source of truth), logs an outage once rather than once per turn, rewrites the files
left behind (:meth:`CheckpointKeeper.rewrite_stale`, the lane's maintenance job), and at start
and stop checks, rewrites and cleans the files of every session.
Tested by ``tests/test_checkpoint_keeper.py`` and the disk-fault tests
(``tests/test_disk_faults.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from datetime import datetime

from agent.errors import CheckpointError, StorageError
from agent.memory.lane_parts.live_sessions import LiveSession
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.ops.checkpoint_audit import CheckpointAudit, CheckpointCheck
from agent.memory.schemas import (
    CheckpointTurn,
    ConversationCheckpointSnapshot,
    ConversationSession,
)

__all__ = ["CheckpointKeeper", "bounded_gather"]

# The lane's parts log as the lane: operators and tests follow one logger name.
logger = logging.getLogger("agent.memory.lane")

# Checkpoint files written at once at start and stop (each is a thread doing an fsync).
_CHECKPOINT_CONCURRENCY = 16


async def bounded_gather(coroutines: Iterable[Awaitable[object]]) -> None:
    """Await ``coroutines`` a few at a time (no more are made than are running)."""
    pending = iter(coroutines)

    async def worker() -> None:
        for coroutine in pending:
            await coroutine

    await asyncio.gather(*(worker() for _ in range(_CHECKPOINT_CONCURRENCY)))


class CheckpointKeeper:
    """Keeps the checkpoint file of every open session at its session's turn.

    Args:
        parts: the lane's parts (its checkpoint writer, sessions, locks and clock).
    """

    def __init__(self, parts: LaneParts) -> None:
        self._parts = parts
        # Why checkpoint writes fail, while they do (logged once, not once per turn).
        self._failure: str | None = None
        # Files written since the last :meth:`record`: session id -> (its chat, the file's seq).
        self._written: dict[str, tuple[int, int]] = {}
        #: Set by a start that read them all: the sessions whose record was not at their
        #: last turn then. A file found matching a session not among them is recorded already
        #: (its row changed since would have cleared the record and written the file anew);
        #: ``None``: any may not be.
        self.unrecorded: set[str] | None = None
        #: Set by a background start (its time): a session last changed before it is
        #: ``resuming`` once hydrated, as the start marks every session in the foreground.
        self.resumed_at: datetime | None = None

    def audit(self) -> CheckpointAudit:
        """Return an audit of the lane's checkpoint files against its database."""
        parts = self._parts
        return CheckpointAudit(
            parts.checkpoints,
            parts.store,
            recent_turns=parts.builder.recent_turns,
            clock=parts.clock,
        )

    def snapshot(
        self, live: LiveSession, pending_summary_delta: str = ""
    ) -> ConversationCheckpointSnapshot:
        """Return the checkpoint of ``live`` as it stands now."""
        return self._snapshot_of(live, pending_summary_delta)()

    def _snapshot_of(
        self, live: LiveSession, pending_summary_delta: str
    ) -> Callable[[], ConversationCheckpointSnapshot]:
        """Return what makes the checkpoint of ``live`` as it stands now, in any thread."""
        state, recent, chat_id = live.state, tuple(live.recent), live.session.chat_id
        written_at = self._parts.clock()

        def make() -> ConversationCheckpointSnapshot:
            return ConversationCheckpointSnapshot(
                session_id=state.session_id,
                chat_id=chat_id,
                state=state,
                recent_turns=tuple(CheckpointTurn.of(turn) for turn in recent),
                pending_summary_delta=pending_summary_delta,
                written_at=written_at,
            )

        return make

    async def save(
        self, live: LiveSession, pending_summary_delta: str = "", *, compact: bool = False
    ) -> None:
        """Write the checkpoint of ``live`` (after its commit); a failure is logged, not raised.

        ``compact``: in one file (a clean stop's, see :meth:`CheckpointStore.write`).
        """
        state = live.state
        # Built where the store writes it (the file store's worker thread), off the loop.
        snapshot = self._snapshot_of(live, pending_summary_delta)
        try:
            await self._parts.checkpoints.write(snapshot, compact=compact)
        except CheckpointError as exc:
            # I5: the turn log stays the source of truth; rewrite_stale, the session's next
            # turn or the next start rewrites the file.
            live.checkpoint_status = None
            self._written.pop(state.session_id, None)
            if self._failure is None:  # one line per outage, not one per turn
                logger.error(
                    "checkpoint of session %s not written, the turn log has the turn: %s "
                    "(checkpoints are rewritten once they can be)",
                    state.session_id,
                    exc,
                )
            else:
                logger.debug("checkpoint of session %s not written: %s", state.session_id, exc)
            self._failure = str(exc)
        else:
            live.checkpoint_status = state.status
            seq = live.recent[-1].seq if live.recent else live.session.last_seq
            self._written[state.session_id] = (
                live.session.chat_id,
                max(seq, live.session.last_seq),
            )
            if self._failure is not None:
                logger.warning(
                    "checkpoints are written again (they failed with: %s)", self._failure
                )
                self._failure = None

    async def record(self, *, quiesced: bool = False) -> int:
        """Record in the database the files written since the last call (one transaction).

        The record lags the files, never leads them (migration 0015): an entry is recorded
        only while its chat has no turn under way, with the chat's lock held through the
        commit, so no state change of the chat commits between the file and its record; a
        row no longer at the file's seq keeps its record unknown. Chats busy now wait for the
        next call. ``quiesced``: the caller holds every chat's lock (the stop sequence).
        Returns how many rows were recorded.
        """
        parts = self._parts
        held: list[asyncio.Lock] = []
        taken: dict[str, tuple[int, int]] = {}
        if quiesced:
            taken, self._written = self._written, {}
        for sid, (chat_id, _) in list(self._written.items()):
            lock = parts.chat_locks[chat_id]
            if lock.locked() or lock in held:
                continue
            await lock.acquire()  # free: returns at once
            held.append(lock)
            taken[sid] = self._written.pop(sid)
        try:
            if not taken:
                return 0
            # A file found matching a row whose record is at its seq already (every file at a
            # start after a clean stop) needs no write: one read instead of a commit.
            records = await parts.store.checkpoint_records(parts.db.reader, list(taken))
            batch = [(sid, seq) for sid, (_, seq) in taken.items() if records.get(sid, seq) != seq]
            if not batch:
                return 0
            return await parts.db.write(lambda tx: parts.store.record_checkpoints(tx, batch))
        except StorageError as exc:  # the record may lag: kept for the next call
            logger.debug("checkpoint records not written: %s", exc)
            for sid, entry in taken.items():
                self._written.setdefault(sid, entry)
            return 0
        finally:
            for lock in held:
                lock.release()

    async def rewrite_stale(self) -> int:
        """Rewrite every checkpoint whose last write failed; return how many were rewritten.

        Stops at the first write that fails again (the disk has not recovered). Then records
        the files written meanwhile (:meth:`record`): the periodic batch of the record.
        """
        rewritten = 0
        for sid in self._parts.sessions.unwritten():
            written = await self.rewrite(sid)
            if written is False:
                break
            if written:
                rewritten += 1
        await self.record()
        return rewritten

    async def rewrite(self, session_id: str) -> bool | None:
        """Write the file of a session whose checkpoint is not written.

        Under the chat's lock: the session stays an object meanwhile.

        Returns:
            Whether it got written; ``None`` if there was nothing to do.
        """
        parts = self._parts
        chat_id = parts.sessions.chat_id_of(session_id)
        if chat_id is None:
            return None
        async with parts.chat_locks[chat_id]:
            parts.check_open()
            # A turn of the chat may have written it, or closed the session, meanwhile.
            live = parts.sessions.get(session_id)
            if live is None or live.checkpoint_status is not None:
                return None
            await self.save(live)
            return live.checkpoint_status is not None

    async def open_live(
        self,
        chat_id: int,
        rebuilt: dict[str, str] | None = None,
        *,
        resuming: bool = False,
        row: ConversationSession | None = None,
    ) -> LiveSession | None:
        """Return the chat's open session, held; one not held yet is hydrated first.

        The caller holds the chat's lock. A session the lane does not hold (not hydrated since
        the start, or opened by another process) is read from the database (its row and last
        turns, through indexes) and its checkpoint checked (:meth:`checked`) before it serves
        a turn (I5). It is ``resuming`` when ``resuming`` (the start holds it, before any
        turn) or when its row last changed before the start. ``row`` is the chat's open
        session as the caller has just read it (the start, before any turn), read again
        otherwise.
        """
        parts = self._parts
        live = parts.sessions.for_chat(chat_id)
        if live is not None:
            return live
        session = row or await parts.store.open_session_for_chat(parts.db.reader, chat_id)
        if session is None:
            return None
        if parts.summary_worker is not None:
            await parts.summary_worker.initialize([session.session_id])
        live = await self.checked(session, rebuilt)
        if resuming or (self.resumed_at is not None and session.updated_at <= self.resumed_at):
            live.state = live.state.model_copy(update={"status": "resuming"})
        parts.sessions.add(live)
        return live

    async def drop_if_behind(self, chat_id: int) -> bool:
        """Let go of what the lane holds of a chat that another process may have moved on:
        its memories at hand always, its session when the database's open session of the
        chat is another one or has another state (a newer turn, an edit); the chat's next
        use hydrates it again (:meth:`open_live`). Return whether the session was let go.

        The caller holds the chat's lock. One indexed query when a session is held.
        """
        parts = self._parts
        parts.memories.drop(chat_id)
        held = parts.sessions.for_chat(chat_id)
        if held is None:
            return False
        row = await parts.store.open_session_for_chat(parts.db.reader, chat_id)
        if row is not None and row.session_id == held.session.session_id:
            if row.state == held.state:
                return False
        parts.forget_live(held.session.session_id)
        return True

    async def checked(
        self, session: ConversationSession, rebuilt: dict[str, str] | None = None
    ) -> LiveSession:
        """Return ``session`` as a live session (not held), its checkpoint checked against it.

        The caller holds the chat's lock. A file that is missing, unreadable or not at the
        row's turn is rewritten from the database with a warning, and why goes into
        ``rebuilt`` (session id -> why) when given.
        """
        parts = self._parts
        sid = session.session_id
        recent, check = await asyncio.gather(
            parts.store.recent_turns(parts.db.reader, sid, parts.builder.recent_turns),
            self.audit().check(session),  # the file is read while the turns are
        )
        live = parts.sessions.new(session, recent)
        problem = self._problem(live, check)
        if problem is not None:
            logger.warning("checkpoint of session %s %s; rebuilt from the turn log", sid, problem)
            if rebuilt is not None:
                rebuilt[sid] = problem
            await self.save(live)
        return live

    def _problem(self, live: LiveSession, check: CheckpointCheck) -> str | None:
        """Return why a hydrated session's file must be rebuilt (``None``: it is good)."""
        # At hydration the session row holds the state the lane starts from (live.state).
        if check.verdict != "matches" or check.snapshot is None:
            return check.detail
        live.checkpoint_status = check.snapshot.state.status
        sid = live.session.session_id
        if self.unrecorded is None or sid in self.unrecorded:
            self._written[sid] = (live.session.chat_id, live.session.last_seq)
        return None

    async def remove_orphans(self) -> list[str]:
        """Delete the files of sessions the database no longer has; return their ids."""
        parts = self._parts
        on_disk = await parts.checkpoints.session_ids()
        if not on_disk:
            return []
        # A session the lane holds was read from the database: only the others are asked for.
        rest = [sid for sid in on_disk if parts.sessions.get(sid) is None]
        known = await parts.store.existing_session_ids(parts.db.reader, rest) if rest else set()
        orphans = [sid for sid in rest if sid not in known]
        for sid in orphans:
            logger.warning("checkpoint of session %s has no session in the database; deleted", sid)
            await parts.checkpoints.delete(sid)
        return orphans

    async def write_clean(self) -> None:
        """Mark every held session ``shutdown_clean`` and write the files that say otherwise.

        The pending summary delta (the turns not yet folded into the rolling summary) goes into
        each file's ``pending_summary_delta``; the state stays the fold of the turn log (I6).
        """
        await bounded_gather(self._clean())

    def _clean(self) -> Iterator[Awaitable[None]]:
        # One session unpacked at a time (the writes are consumed as they are made).
        parts = self._parts
        for live in parts.sessions.each():
            live.state = live.state.model_copy(update={"status": "shutdown_clean"})
            if live.checkpoint_status != "shutdown_clean":
                delta = parts.states.summarizer.pending_delta(live.state)
                yield self.save(live, delta, compact=True)
