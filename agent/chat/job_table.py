"""Due jobs across the workers of a bot: the ``jobs`` table, claimed once with a lease.

A reminder, or a maintenance job, is a row: its id, kind, chat, the time it falls due and a
JSON payload. Every worker's local timer (python-telegram-bot's ``JobQueue``, or the event
loop's) only says *when* to look; the table says *what* is due and *who* runs it, so that a
job fires once whichever workers are alive (issue 18, section 3):

* :meth:`JobTable.claim` takes the due jobs no live claim holds: it writes this worker's id
  and a lease (``claimed_until``) on them in one statement. On PostgreSQL the rows are chosen
  ``FOR UPDATE SKIP LOCKED`` (:class:`PostgresJobTable`): workers claiming at once take
  different jobs and never wait for each other; on SQLite the one writer's transaction makes
  the same statement a claim (:class:`JobTable`).
* :meth:`JobTable.complete_in` marks the job done *in the transaction of what firing it
  writes*, and only while the claim is still this worker's: a worker that overran its lease
  and lost the job to another rolls its firing back. So a job's effect is committed once.
* A worker renews the leases of the claims it still holds (:meth:`JobTable.renew`, from its
  claim loop), so a job queued behind a long turn of its chat is not taken from it. A worker
  that dies holding a claim stops renewing it and loses it when the lease ends, within
  ``lease`` (30 s by default): the job is claimable again (``attempts`` counts the claims; past
  ``max_attempts`` a job is no longer claimed). Should two workers fire one job all the same
  (a lease that lapsed while its worker stalled), the chat's lock and the session's record of
  the job make the second firing find it fired.

Times are the database's ISO text (:func:`~agent.utils.timestamps.to_db_time`), compared as
text on both backends. Tested in ``tests/test_job_table.py`` (SQLite, PostgreSQL with
concurrent claimers and one killed by SIGKILL).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.db import AnyDatabase, Row, Transaction
from agent.memory.schemas import JobRef, utc_now
from agent.utils.timestamps import from_db_time, to_db_time

__all__ = ["Job", "JobTable", "PostgresJobTable", "reminder_jobs"]


@dataclass(frozen=True, slots=True)
class Job:
    """One due job: what it is, for which chat, when, and its JSON payload.

    ``attempts`` is how many times it was claimed (read back by :meth:`JobTable.claim`).
    """

    job_id: str
    kind: str
    chat_id: int | None
    due_at: datetime
    payload: str = "{}"
    attempts: int = 0


def reminder_jobs(refs: Iterable[tuple[int, JobRef]], now: datetime) -> list[Job]:
    """The rows of the scheduled reminders among ``(chat_id, job ref)`` pairs: due when the
    ref says (``now`` if it says nothing), the ref's JSON as the payload."""
    return [
        Job(ref.job_id, ref.kind, chat_id, ref.due_at or now, ref.model_dump_json())
        for chat_id, ref in refs
        if ref.kind == "reminder" and ref.status == "scheduled"
    ]


def _job(row: Row) -> Job:
    return Job(
        job_id=row["job_id"],
        kind=row["kind"],
        chat_id=row["chat_id"],
        due_at=from_db_time(row["due_at"]),
        payload=row["payload"],
        attempts=row["attempts"],
    )


class JobTable:
    """The ``jobs`` table of one bot's database, seen by one worker (SQLite's dialect).

    Args:
        db: the open database.
        worker_id: this worker's name (``AGENT_WORKER_ID``), written on its claims.
        lease: how long a claim keeps a job from other workers unless renewed; the claims
            still held are renewed once less than half of it is left (:meth:`renew`).
        max_attempts: claims after which a job is left alone (a job that kills its worker).
        clock: returns the current time.
    """

    #: The claim: the due rows no live claim holds, earliest first, stamped with this
    #: worker's claim in the same statement (under SQLite's one writer, no one else looks).
    CLAIM = (
        "UPDATE jobs SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1"
        " WHERE job_id IN (SELECT job_id FROM jobs"
        "  WHERE done_at IS NULL AND due_at <= ? AND attempts < ?"
        "  AND (claimed_until IS NULL OR claimed_until <= ?)"
        "  ORDER BY due_at, job_id LIMIT ?)"
        " RETURNING job_id, kind, chat_id, due_at, payload, attempts"
    )

    def __init__(
        self,
        db: AnyDatabase,
        worker_id: str,
        *,
        lease: timedelta = timedelta(seconds=30),
        max_attempts: int = 5,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.db = db
        self.worker_id = worker_id
        self.lease = lease
        self.max_attempts = max_attempts
        self._clock = clock
        self._held: set[str] = set()  # the claims this worker holds and has not let go
        self._renewed_at: datetime | None = None

    async def add(self, jobs: Sequence[Job]) -> int:
        """Store jobs in one transaction; return how many were new (an id stored already, done
        or not, is left as it is: adding is idempotent). No jobs: no transaction."""
        if not jobs:
            return 0
        return await self.db.write(lambda tx: self.add_in(tx, jobs))

    async def add_in(self, tx: Transaction, jobs: Sequence[Job]) -> int:
        """:meth:`add` inside the caller's transaction (the turn that set the reminders)."""
        now = to_db_time(self._clock())
        added = 0
        for job in sorted(jobs, key=lambda j: j.job_id):  # one lock order for every writer
            rows = await tx.fetchall(
                "INSERT INTO jobs (job_id, kind, chat_id, due_at, payload, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job_id) DO NOTHING RETURNING job_id",
                (job.job_id, job.kind, job.chat_id, to_db_time(job.due_at), job.payload, now),
            )
            added += len(rows)
        return added

    async def track_reminders(self, refs: Iterable[tuple[int, JobRef]]) -> None:
        """Add the scheduled reminders among ``(chat_id, job ref)`` pairs (idempotently) and
        delete the cancelled ones: what a turn, or a start's active jobs, say of them."""
        refs = list(refs)
        await self.add(reminder_jobs(refs, self._clock()))
        for _, ref in refs:
            if ref.kind == "reminder" and ref.status == "cancelled":
                await self.cancel(ref.job_id)

    async def claim(self, *, limit: int = 10) -> list[Job]:
        """Claim up to ``limit`` due jobs no live claim holds, the earliest due first.

        Each is this worker's until ``now + lease`` (its ``attempts`` counted); fire it and
        mark it with :meth:`complete_in` (or :meth:`complete`) before then.
        """
        now = self._clock()
        at, until = to_db_time(now), to_db_time(now + self.lease)
        rows = await self.db.write(
            lambda tx: tx.fetchall(
                self.CLAIM, (self.worker_id, until, at, self.max_attempts, at, limit)
            )
        )
        if rows and not self._held:
            self._renewed_at = now
        self._held.update(row["job_id"] for row in rows)
        return sorted((_job(row) for row in rows), key=lambda j: (j.due_at, j.job_id))

    @property
    def held(self) -> frozenset[str]:
        """The ids of the jobs this worker claimed and has neither completed, released nor
        let go."""
        return frozenset(self._held)

    async def renew(self) -> int:
        """Extend the lease of every claim still held, once less than half of it is left since
        the last renewal (sooner does nothing); return how many claims were renewed.

        A claim another worker took meanwhile (this worker stalled past its lease) is not
        renewed, and no longer held.
        """
        now = self._clock()
        if not self._held or (
            self._renewed_at is not None and now - self._renewed_at < self.lease / 2
        ):
            return 0
        until, held = to_db_time(now + self.lease), sorted(self._held)

        async def extend(tx: Transaction) -> set[str]:
            kept: set[str] = set()
            for job_id in held:  # one lock order for every writer
                kept.update(row["job_id"] for row in await tx.fetchall(
                    "UPDATE jobs SET claimed_until = ? WHERE job_id = ? AND claimed_by = ?"
                    " AND done_at IS NULL RETURNING job_id",
                    (until, job_id, self.worker_id),
                ))
            return kept

        kept = await self.db.write(extend)
        self._renewed_at = now
        self._held -= set(held) - kept  # taken by another worker meanwhile
        return len(kept)

    def let_go(self, job_id: str) -> None:
        """Stop renewing a claim (its firing ended, or failed): left to its lease's end."""
        self._held.discard(job_id)

    async def complete(self, job_id: str) -> bool:
        """Mark a job this worker claimed done, in a transaction of its own
        (:meth:`complete_in`)."""
        return await self.db.write(lambda tx: self.complete_in(tx, job_id))

    async def complete_in(self, tx: Transaction, job_id: str) -> bool:
        """Mark a job done in the caller's transaction, if the claim is still this worker's.

        Returns:
            ``False`` when the job was done already or another worker claimed it after this
            worker's lease ended: the caller must roll its firing back (raise), so that the
            job's effect is committed once.
        """
        rows = await tx.fetchall(
            "UPDATE jobs SET done_at = ?, claimed_until = NULL"
            " WHERE job_id = ? AND claimed_by = ? AND done_at IS NULL RETURNING job_id",
            (to_db_time(self._clock()), job_id, self.worker_id),
        )
        self._held.discard(job_id)
        return bool(rows)

    async def release(self, job_id: str) -> None:
        """Hand a claimed job back undone, claimable again at once (a worker shutting down, a
        write the database refused)."""
        self._held.discard(job_id)
        await self.db.write(
            lambda tx: tx.execute(
                "UPDATE jobs SET claimed_until = NULL"
                " WHERE job_id = ? AND claimed_by = ? AND done_at IS NULL",
                (job_id, self.worker_id),
            )
        )

    async def cancel(self, job_id: str) -> bool:
        """Delete a job, done or not (a reminder cancelled); return whether it existed."""
        changed = await self.db.write(
            lambda tx: tx.execute("DELETE FROM jobs WHERE job_id = ?", (job_id,))
        )
        return changed > 0

    async def forget_chat(self, chat_id: int) -> int:
        """Delete every job of a chat (part of ``/forget``: a payload holds the user's words);
        return how many."""
        return await self.db.write(
            lambda tx: tx.execute("DELETE FROM jobs WHERE chat_id = ?", (chat_id,))
        )

    async def next_due(self) -> datetime | None:
        """Return when the next job becomes claimable (due, and its lease over), or ``None``.

        A worker's local timer sleeps until then (or until it adds a job itself).
        """
        row = await self.db.fetchone(
            "SELECT min(CASE WHEN claimed_until > due_at THEN claimed_until ELSE due_at END)"
            " FROM jobs WHERE done_at IS NULL AND attempts < ?",
            (self.max_attempts,),
        )
        return None if row is None or row[0] is None else from_db_time(row[0])

    async def prune(self, *, older_than: timedelta) -> int:
        """Delete the jobs done longer than ``older_than`` ago; return how many."""
        cutoff = to_db_time(self._clock() - older_than)
        return await self.db.write(
            lambda tx: tx.execute(
                "DELETE FROM jobs WHERE done_at IS NOT NULL AND done_at < ?", (cutoff,)
            )
        )


class PostgresJobTable(JobTable):
    """:class:`JobTable` on PostgreSQL: claimers skip the rows another claim is writing."""

    # The rows another claimer is stamping are locked: skip them rather than wait, and take
    # others (a row it has stamped no longer matches once its claim commits).
    CLAIM = JobTable.CLAIM.replace("LIMIT ?)", "LIMIT ? FOR UPDATE SKIP LOCKED)")
