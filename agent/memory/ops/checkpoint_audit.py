"""Checkpoint files compared with the database, and rewritten where they do not match (I5).

The bot checks the checkpoints of its open sessions once, at start-up
(:meth:`~agent.memory.lane.ConversationLane.hydrate`). :class:`CheckpointAudit` does the same
for any session, open or closed, at any time, for tools such as ``agent-memory verify``:

* a checkpoint *matches* when it parses, is at the database's turn and holds the state the
  database holds (all but the status, which records the process's lifecycle);
* it is *missing*, *corrupt* (unreadable, not a snapshot, of an unknown version), *behind* or
  *ahead* of the database's turn, or it *differs* from the database's state; a file whose
  session the database does not have is an *orphan*.

It is safe while the bot runs. The bot commits a turn, then writes its checkpoint, so for an
instant every checkpoint it is writing is behind: :meth:`CheckpointAudit.check_all` looks at a
mismatch again, and a session whose database turn or file moved meanwhile is *writing*: the
bot is keeping that checkpoint up to date, nothing to repair. A repair reads the
database and writes the file while holding the database's write lock, so the bot cannot commit
a newer turn whose checkpoint the repair would then overwrite with an older one.

Covered by ``tests/test_cli.py`` (``verify``, ``--repair``) and
``tests/test_memory_inspector.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from agent.db import AnyDatabase, Transaction
from agent.errors import CheckpointError
from agent.memory.conversation_checkpoint import CheckpointStore
from agent.memory.conversation_store import ConversationStore
from agent.memory.schemas import (
    CheckpointTurn,
    ConversationCheckpointSnapshot,
    ConversationSession,
    ConversationTurn,
    utc_now,
)

__all__ = ["CheckpointAudit", "CheckpointCheck", "CheckpointVerdict", "session_snapshot"]

#: What a checkpoint file is, compared with the database.
CheckpointVerdict = Literal[
    "matches", "writing", "missing", "corrupt", "behind", "ahead", "differs", "orphan"
]

# How long check_all gives a mismatch to resolve (a checkpoint being written), and how often
# it looks again meanwhile.
_SETTLE_SECONDS = 2.0
_SETTLE_STEP = 0.1
# The verdicts a bot at work shows for an instant: its file trails its commit (a new session's
# file is missing until then), a row read before a commit trails the file written after it, an
# erased session's file outlives its row, and an edited message changes the state at the same
# turn (the file differs until it is rewritten). A torn file is never a write in flight:
# checkpoint writes are atomic. A file that still differs once the check settles is reported.
_TRANSIENT: frozenset[CheckpointVerdict] = frozenset(
    {"behind", "ahead", "missing", "orphan", "differs"}
)


@dataclass(frozen=True, slots=True)
class CheckpointCheck:
    """What one session's checkpoint file holds, compared with the database.

    Attributes:
        session_id: the session.
        verdict: see :data:`CheckpointVerdict`.
        detail: the verdict as a sentence (``"is behind the log (turn 4 of 6)"``).
        db_turns: the session's turn count in the database (``None`` for an orphan).
        snapshot: the file's snapshot, when it parses.
    """

    session_id: str
    verdict: CheckpointVerdict
    detail: str
    db_turns: int | None
    snapshot: ConversationCheckpointSnapshot | None = None

    @property
    def ok(self) -> bool:
        """Whether the checkpoint matches the database (or the bot is writing it)."""
        return self.verdict in ("matches", "writing")

    @property
    def position(self) -> tuple[int | None, int | None]:
        """The database's turn and the file's: a check whose position changes saw writes."""
        return self.db_turns, self.snapshot.turn_count if self.snapshot else None


def session_snapshot(
    session: ConversationSession, recent: list[ConversationTurn], *, now: datetime
) -> ConversationCheckpointSnapshot:
    """Return the checkpoint of a session as the database holds it.

    Args:
        session: the session row (its state, with the row's status).
        recent: its latest turns, oldest first, as many as the bot's packets carry.
        now: the time the snapshot records as written.
    """
    return ConversationCheckpointSnapshot(
        session_id=session.session_id,
        chat_id=session.chat_id,
        state=session.state,
        recent_turns=tuple(CheckpointTurn.of(turn) for turn in recent),
        written_at=now,
    )


class CheckpointAudit:
    """Compares checkpoint files with the database and rewrites those that do not match.

    Args:
        checkpoints: the checkpoint directory.
        store: the storage backend.
        recent_turns: the turns a checkpoint carries verbatim (the bot's ``recent_turns``;
            at least one, as the lane keeps).
        clock: returns the current time (the ``written_at`` of rewritten files).
    """

    def __init__(
        self,
        checkpoints: CheckpointStore,
        store: ConversationStore,
        *,
        recent_turns: int,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.checkpoints = checkpoints
        self.store = store
        self.recent_turns = max(recent_turns, 1)
        self._clock = clock

    async def check(self, session: ConversationSession) -> CheckpointCheck:
        """Return how the session's checkpoint file compares with ``session`` (never raises)."""
        sid, expected = session.session_id, session.state

        def verdict(
            kind: CheckpointVerdict, detail: str, snapshot: ConversationCheckpointSnapshot | None
        ) -> CheckpointCheck:
            return CheckpointCheck(sid, kind, detail, expected.turn_count, snapshot)

        try:
            snapshot = await self.checkpoints.load(sid)
        except CheckpointError as exc:
            return verdict("corrupt", f"is unusable ({exc})", None)
        if snapshot is None:
            return verdict("missing", "is missing", None)
        position = f"(turn {snapshot.turn_count} of {expected.turn_count})"
        if snapshot.turn_count < expected.turn_count:
            return verdict("behind", f"is behind the log {position}", snapshot)
        if snapshot.turn_count > expected.turn_count:
            return verdict("ahead", f"is ahead of the log {position}", snapshot)
        # The log's part of the state (all but ``status``), compared as values: dumping both
        # to JSON first cost a start a quarter of a millisecond a session.
        if snapshot.state.model_copy(update={"status": expected.status}) != expected:
            return verdict("differs", "does not match the state in the database", snapshot)
        return verdict("matches", "matches the log", snapshot)

    async def check_all(
        self, conn: Transaction, *, settle: float = _SETTLE_SECONDS
    ) -> list[CheckpointCheck]:
        """Check the checkpoint of every session, and every file without a session.

        A file behind, ahead, missing, orphaned or different (after an edited message) may be a
        write in flight: it is looked at again, every tenth of a second for up to ``settle``
        seconds. Once the database's turn or the file's has moved, the check says *writing*;
        once it matches, *matches*; a session erased meanwhile is left out. What is still wrong
        after that (and at once, a corrupt file) is reported as it is.

        Args:
            conn: any connection (normally ``db.reader``).
            settle: the most seconds to wait for a mismatch to resolve (``0``: report at once).

        Returns:
            One check per session, by session id, then the orphans.
        """
        # Files first: a file is written after its session's commit, so a session read later
        # is there for every file listed (no false orphan).
        on_disk = await self.checkpoints.session_ids()
        sessions = await self.store.list_sessions(conn, limit=None)
        known = {session.session_id for session in sessions}
        checks = {session.session_id: await self.check(session) for session in sessions}
        checks.update((sid, self._orphan(sid)) for sid in on_disk if sid not in known)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settle
        unsettled = [check for check in checks.values() if check.verdict in _TRANSIENT]
        while unsettled and loop.time() < deadline:
            await asyncio.sleep(_SETTLE_STEP)
            still = []
            for first in unsettled:
                again = await self._recheck(conn, first)
                if again is None:
                    del checks[first.session_id]
                    continue
                checks[first.session_id] = again
                if not again.ok:
                    still.append(first)  # compared with the first look, not the latest
            unsettled = still
        return sorted(checks.values(), key=_order)

    async def _recheck(self, conn: Transaction, first: CheckpointCheck) -> CheckpointCheck | None:
        session = await self.store.get_session(conn, first.session_id)
        if session is None:
            on_disk = first.session_id in await self.checkpoints.session_ids()
            return first if first.verdict == "orphan" and on_disk else None  # None: erased
        again = await self.check(session)
        if again.ok or again.position == first.position:
            return again
        return CheckpointCheck(
            first.session_id,
            "writing",
            "is being written (the log moved on while it was checked)",
            again.db_turns,
            again.snapshot,
        )

    def _orphan(self, session_id: str) -> CheckpointCheck:
        return CheckpointCheck(
            session_id, "orphan", "has no session in the database", db_turns=None
        )

    async def repair(self, db: AnyDatabase, session_id: str) -> bool:
        """Rewrite a session's checkpoint from the database, or delete it if it has no session.

        Runs while holding the database's write lock (and writes nothing to the database):
        the bot cannot commit a newer turn of the session between the read and the file
        write, so the repaired file is never older than the bot's own.

        Returns:
            ``True`` if the file was rewritten, ``False`` if it was deleted (an orphan).

        Raises:
            DatabaseLocked: another process held the write lock past the lock timeout.
            CheckpointError: the file could not be written.
        """

        async def rewrite(tx: Transaction) -> bool:
            session = await self.store.get_session(tx, session_id)
            if session is None:
                await self.checkpoints.delete(session_id)
                return False
            recent = await self.store.recent_turns(tx, session_id, self.recent_turns)
            # The file is written inside the transaction on purpose: it only reads, and the
            # lock it holds keeps the bot's next commit (and checkpoint) after this write.
            await self.checkpoints.write(session_snapshot(session, recent, now=self._clock()))
            return True

        return await db.write(rewrite)


def _order(check: CheckpointCheck) -> tuple[bool, str]:
    return check.verdict == "orphan", check.session_id
