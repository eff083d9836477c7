"""Due jobs claimed once across workers (agent/chat/job_table.py, the ``jobs`` table).

The tests run on both backends of the ``backend`` fixture: ``sqlite`` (one database file; the
"workers" are tables of different worker ids over it, as the one process would have) and
``postgres`` (the real server, marked ``postgres``; each worker has pools of its own). A
claimer killed with SIGKILL is a real process (``tests/pg_worker.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from agent.chat.job_table import Job, JobTable, PostgresJobTable, reminder_jobs
from agent.db import AnyDatabase, Database, Transaction
from agent.memory.schemas import JobRef, utc_now
from tests.clock import T0, Clock

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Backend:
    """Opens databases (one per worker on PostgreSQL) and makes a worker's job table."""

    name: str
    open_db: Callable[[], Awaitable[AnyDatabase]]
    table: type[JobTable]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """The backend's databases are created with ``open_db()`` and closed after the test."""
    opened: list[AnyDatabase] = []
    if request.param == "sqlite":
        shared = Database(tmp_path / "jobs.db")

        async def open_sqlite() -> AnyDatabase:
            if not opened:
                opened.append(await shared.open())
            return shared

        yield Backend("sqlite", open_sqlite, JobTable)
        await shared.close()
        return
    from agent.db.postgres import PostgresDatabase  # the `postgres` extra

    url = request.getfixturevalue("postgres_url")

    async def open_postgres() -> AnyDatabase:
        db = PostgresDatabase(url)
        opened.append(db)
        return await db.open()

    yield Backend("postgres", open_postgres, PostgresJobTable)
    for db in opened:
        await db.close()  # type: ignore[attr-defined]


def job(n: int, *, due: timedelta = timedelta(0), chat_id: int | None = 7) -> Job:
    return Job(f"job-{n:03d}", "reminder", chat_id, T0 + due, f'{{"label": "call {n}"}}')


async def create_fired(db: AnyDatabase) -> None:
    """A table of what firing wrote: the effect a job must have once."""
    await db.write(
        lambda tx: tx.execute("CREATE TABLE fired (job_id TEXT NOT NULL, worker TEXT NOT NULL)")
    )


async def fire(db: AnyDatabase, table: JobTable, claimed: Job) -> bool:
    """Fire a claimed job: its effect and its "done" in one transaction, or neither."""

    class LostClaim(Exception):
        pass

    async def work(tx: Transaction) -> None:
        await tx.execute("INSERT INTO fired VALUES (?, ?)", (claimed.job_id, table.worker_id))
        if not await table.complete_in(tx, claimed.job_id):
            raise LostClaim  # rolls the effect back: another worker fires it

    try:
        await db.write(work)
    except LostClaim:
        return False
    return True


async def fired(db: AnyDatabase) -> list[tuple[str, str]]:
    rows = await db.fetchall("SELECT job_id, worker FROM fired ORDER BY job_id, worker")
    return [(row[0], row[1]) for row in rows]


async def test_a_due_job_is_claimed_by_one_worker_until_its_lease_ends(backend):
    """Adding is idempotent; a job is claimed once due, the earliest first, by one worker for
    the length of its lease; after the lease another worker claims it (``attempts`` 2), and
    the first, finishing late, cannot mark it done, so its firing rolls back; a released job
    is claimable at once; past ``max_attempts`` claims a job is left alone."""
    clock = Clock()
    db = await backend.open_db()
    one = backend.table(db, "w1", lease=timedelta(seconds=30), max_attempts=3, clock=clock)
    two = backend.table(await backend.open_db(), "w2", lease=timedelta(seconds=30), clock=clock)
    await create_fired(db)

    assert await one.add([job(2, due=timedelta(seconds=20)), job(1, due=timedelta(seconds=10))])
    assert await one.add([job(1), job(3, due=timedelta(hours=1))]) == 1  # job 1 stays as it was
    assert await one.claim() == []
    assert await one.next_due() == T0 + timedelta(seconds=10)

    clock.advance(seconds=25)
    first = await one.claim(limit=1)
    assert [(j.job_id, j.attempts, j.due_at) for j in first] == [
        ("job-001", 1, T0 + timedelta(seconds=10))
    ]
    assert first[0].payload == '{"label": "call 1"}'
    assert [j.job_id for j in await two.claim()] == ["job-002"]
    assert await one.claim() == []  # both held by their leases
    assert await one.next_due() == T0 + timedelta(seconds=55)  # job 1's lease ends

    clock.advance(seconds=31)  # both leases ended unfired: w2 claims both
    again = await two.claim()
    assert [(j.job_id, j.attempts) for j in again] == [("job-001", 2), ("job-002", 2)]
    assert await fire(db, two, again[0])
    assert not await fire(db, one, first[0])  # w1, finishing late, lost job 1
    assert await fire(db, two, again[1])
    assert await fired(db) == [("job-001", "w2"), ("job-002", "w2")]
    assert not await one.complete("job-001")  # done already

    clock.advance(hours=1)
    third = await one.claim()
    assert [(j.job_id, j.attempts) for j in third] == [("job-003", 1)]
    await one.release("job-003")
    for attempts in (2, 3):
        assert [(j.job_id, j.attempts) for j in await one.claim()] == [("job-003", attempts)]
        clock.advance(minutes=1)
    assert await one.claim() == []  # three claims, never done: left alone
    assert await one.next_due() is None


async def test_a_held_claim_is_renewed_and_one_let_go_or_abandoned_lapses(backend):
    """A worker renews the leases of the claims it holds (a job queued behind a long turn stays
    its own): another worker cannot claim them however long it holds them; a claim let go
    (its firing failed) or held by a worker that stopped renewing (died) is claimable once
    its lease ends; a claim another worker took meanwhile is no longer held."""
    clock = Clock()
    db = await backend.open_db()
    one = backend.table(db, "w1", lease=timedelta(seconds=30), clock=clock)
    two = backend.table(await backend.open_db(), "w2", lease=timedelta(seconds=30), clock=clock)
    await one.add([job(1), job(2), job(3)])
    clock.advance(seconds=1)
    assert [j.job_id for j in await one.claim()] == ["job-001", "job-002", "job-003"]
    assert one.held == {"job-001", "job-002", "job-003"}

    clock.advance(seconds=10)
    assert await one.renew() == 0  # more than half of the lease is left
    one.let_go("job-002")  # its firing failed: left to its lease's end
    for step in range(8):  # two minutes of renewals: jobs 1 and 3 stay w1's
        clock.advance(seconds=15)
        await one.renew()
        # job 2's lease, not renewed, ends in the second step: w2 takes it and fires it
        assert [j.job_id for j in await two.claim()] == (["job-002"] if step == 1 else [])
        if step == 1:
            assert await two.complete("job-002")
    assert await one.complete("job-001")
    assert one.held == {"job-003"}

    clock.advance(seconds=31)  # w1 stopped renewing (it died): job 3 is free again
    assert [(j.job_id, j.attempts) for j in await two.claim()] == [("job-003", 2)]
    clock.advance(seconds=15)
    assert await one.renew() == 0  # w2 holds it now
    assert one.held == frozenset()
    assert await two.renew() == 1
    assert two.held == {"job-003"}


async def test_jobs_go_with_their_chat_and_done_ones_are_pruned(backend):
    """``cancel`` deletes one job, ``forget_chat`` every job of a chat (done or not), ``prune``
    the jobs done long enough ago."""
    clock = Clock()
    db = await backend.open_db()
    table = backend.table(db, "w1", clock=clock)
    await table.add([job(1), job(2), job(3, chat_id=8), job(4, chat_id=None)])
    assert await table.cancel("job-002")
    assert not await table.cancel("job-002")
    assert await table.forget_chat(7) == 1
    clock.advance(seconds=1)
    claimed = await table.claim()
    assert [j.job_id for j in claimed] == ["job-003", "job-004"]
    assert [j.chat_id for j in claimed] == [8, None]
    assert await table.complete("job-003")
    clock.advance(days=2)
    assert await table.prune(older_than=timedelta(days=1)) == 1
    rows = await db.fetchall("SELECT job_id FROM jobs ORDER BY job_id")
    assert [row[0] for row in rows] == ["job-004"]


async def test_concurrent_claimers_fire_every_due_job_exactly_once(backend):
    """Four workers claim and fire 200 due jobs at once, a few at a time: every job fires
    once, and (on PostgreSQL, where each has connections of its own) they share the work."""
    clock = Clock(T0 + timedelta(minutes=1))
    workers = [backend.table(await backend.open_db(), f"w{i}", clock=clock) for i in range(4)]
    await create_fired(workers[0].db)
    await workers[0].add([job(n, due=timedelta(seconds=n % 7)) for n in range(200)])

    async def run(table: JobTable) -> int:
        count = 0
        while claimed := await table.claim(limit=5):
            for claimed_job in claimed:
                assert await fire(table.db, table, claimed_job)
                count += 1
        return count

    counts = await asyncio.gather(*(run(table) for table in workers))
    rows = await fired(workers[0].db)
    assert sorted(job_id for job_id, _ in rows) == [f"job-{n:03d}" for n in range(200)]
    assert sum(counts) == 200
    if backend.name == "postgres":
        assert sum(1 for count in counts if count) >= 2, counts


@pytest.mark.postgres
@pytest.mark.crash
async def test_the_jobs_of_a_claimer_killed_by_sigkill_fire_once_after_its_lease(postgres_url):
    """A worker claims 10 of 30 due jobs (a lease of 1.5 s) and is killed with SIGKILL before
    firing them; three live workers fire the 20 others at once and the 10 once the lease ended:
    each job once."""
    from agent.db.postgres import PostgresDatabase  # the `postgres` extra

    async with contextlib.AsyncExitStack() as stack:
        dbs = [await stack.enter_async_context(PostgresDatabase(postgres_url)) for _ in range(3)]
        await _kill_a_claimer_and_fire_the_rest(postgres_url, dbs)


async def _kill_a_claimer_and_fire_the_rest(url: str, dbs: list[AnyDatabase]) -> None:
    live = [PostgresJobTable(db, f"live-{i}") for i, db in enumerate(dbs)]
    first = live[0]
    await create_fired(first.db)
    now = utc_now()
    await first.add(
        [Job(f"job-{n:03d}", "reminder", 7, now - timedelta(seconds=30 - n)) for n in range(30)]
    )
    killed = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "tests.pg_worker", "claim", url, "doomed", "1.5", "10"),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert killed.stdout is not None
        line = await asyncio.wait_for(killed.stdout.readline(), 30)
        claimed_at = time.monotonic()
        doomed = set(json.loads(line))
        assert len(doomed) == 10
    finally:
        killed.kill()
        await killed.wait()
    late: dict[str, float] = {}

    async def run(table: JobTable) -> None:
        while len(await fired(table.db)) < 30:
            for claimed_job in await table.claim(limit=3):
                assert await fire(table.db, table, claimed_job)
                if claimed_job.job_id in doomed:
                    assert claimed_job.attempts == 2
                    late[claimed_job.job_id] = time.monotonic() - claimed_at
            await asyncio.sleep(0.05)

    await asyncio.wait_for(asyncio.gather(*(run(table) for table in live)), 20)
    rows = await fired(first.db)
    assert sorted(job_id for job_id, _ in rows) == [f"job-{n:03d}" for n in range(30)]
    assert not any(worker == "doomed" for _, worker in rows)
    assert set(late) == doomed
    assert min(late.values()) >= 1.0  # not before the killed worker's lease ended


def test_reminder_jobs_are_the_scheduled_reminders_with_their_refs_as_payload() -> None:
    due = T0 + timedelta(minutes=5)
    refs = [
        (1, JobRef(job_id="r1", kind="reminder", label="call mom", due_at=due)),
        (1, JobRef(job_id="r2", kind="reminder", label="done already", status="done")),
        (2, JobRef(job_id="j1", kind="job", label="not a reminder")),
        (2, JobRef(job_id="r3", kind="reminder", label="no time")),
    ]
    jobs = reminder_jobs(refs, T0)
    assert [(j.job_id, j.chat_id, j.due_at) for j in jobs] == [("r1", 1, due), ("r3", 2, T0)]
    assert JobRef.model_validate_json(jobs[0].payload) == refs[0][1]


async def test_tracking_reminders_adds_the_scheduled_once_and_deletes_the_cancelled(
    backend: Backend,
) -> None:
    table = backend.table(await backend.open_db(), "w1", clock=Clock(T0))
    ref = JobRef(job_id="r1", kind="reminder", label="call mom", due_at=T0)
    await table.track_reminders([(1, ref)])
    await table.track_reminders([(1, ref)])  # a start adds the active ones again
    assert [j.job_id for j in await table.claim()] == ["r1"]
    await table.track_reminders([(1, ref.model_copy(update={"status": "cancelled"}))])
    assert await table.next_due() is None
