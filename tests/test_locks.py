"""Locks between workers (agent/db/locks.py, agent/db/postgres_locks.py): one holder per chat,
one leader; on PostgreSQL across processes, a holder killed with SIGKILL releasing at once.

The PostgreSQL tests (marked ``postgres``) use the real server; each uses a scope of its own
(advisory locks are per database, and other tests may run on it at the same time). The killed
holders are real processes (``tests/pg_worker.py``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agent.db import LocalChatLocks, SoleLeader
from tests.bot_harness import free_port

ROOT = Path(__file__).resolve().parents[1]


# -- one process ---------------------------------------------------------------------------


async def test_local_chat_locks_admit_one_holder_per_chat_and_forget_idle_chats():
    """Holders of one chat run one after the other, in the order they asked; another chat
    runs meanwhile; once nobody holds or waits, the chat's lock is gone."""
    locks = LocalChatLocks()
    events: list[str] = []

    async def work(chat: int, name: str) -> None:
        async with locks.hold(chat):
            events.append(f"{name}+")
            await asyncio.sleep(0.01)
            events.append(f"{name}-")

    await asyncio.gather(work(1, "a"), work(1, "b"), work(2, "c"))
    assert events.index("a-") < events.index("b+")
    assert events.index("c+") < events.index("a-")  # chat 2 did not wait for chat 1
    assert locks.busy_chats == 0


async def test_the_sole_leader_leads_at_once_until_released():
    """One process leads without waiting; it loses the lead only by releasing it."""
    leader = SoleLeader()
    await leader.acquire()
    assert leader.held
    lost = asyncio.create_task(leader.wait_lost())
    await asyncio.sleep(0.01)
    assert not lost.done()
    await leader.release()
    await asyncio.wait_for(lost, 1)
    assert not leader.held
    await leader.acquire()
    assert leader.held


# -- PostgreSQL ----------------------------------------------------------------------------


@pytest.fixture
def scope() -> str:
    return uuid.uuid4().hex


@pytest.fixture
async def spawn() -> AsyncIterator[Callable[..., asyncio.Future[asyncio.subprocess.Process]]]:
    """Start ``python -m tests.pg_worker ARGS`` processes; kill and reap leftovers after."""
    started: list[asyncio.subprocess.Process] = []

    async def start(*args: str) -> asyncio.subprocess.Process:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.pg_worker",
            *args,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=asyncio.subprocess.PIPE,
        )
        started.append(proc)
        return proc

    yield start  # type: ignore[misc]
    for proc in started:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def read_line(proc: asyncio.subprocess.Process, timeout: float = 30.0) -> str:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), timeout)
    assert line, "the worker ended without a word"
    return line.decode().strip()


async def held_by_someone_else(locks, chat: int) -> bool:
    """Whether ``hold(chat)`` would wait (tried for a short while, then given up)."""
    try:
        async with asyncio.timeout(0.3):
            async with locks.hold(chat):
                return False
    except TimeoutError:
        return True


@pytest.mark.postgres
async def test_postgres_chat_locks_admit_one_holder_per_chat_across_workers(postgres_url, scope):
    """Two workers (each its own pool): while one holds a chat the other waits for it, and
    gets it once it is let go; another chat is free; a wait cut short leaves nothing held."""
    from agent.db.postgres_locks import PostgresChatLocks

    async with (
        PostgresChatLocks(postgres_url, scope) as one,
        PostgresChatLocks(postgres_url, scope) as two,
    ):
        async with one.hold(7):
            assert await held_by_someone_else(two, 7)  # the timeout cancelled a waiting hold
            async with two.hold(8):
                pass
        async with asyncio.timeout(1):
            async with two.hold(7):
                assert await held_by_someone_else(one, 7)
        async with asyncio.timeout(1), one.hold(7):
            pass
        async with PostgresChatLocks(postgres_url, f"{scope}-other") as other:
            async with other.hold(7), asyncio.timeout(1), one.hold(7):
                pass  # the same chat id in another scope (another bot) is another lock


@pytest.mark.postgres
@pytest.mark.crash
async def test_a_chat_lock_holder_killed_by_sigkill_releases_it_within_a_second(
    postgres_url, scope, spawn
):
    """A worker holding a chat is killed with SIGKILL: the server ends its session and the
    waiting worker holds the chat less than a second later."""
    from agent.db.postgres_locks import PostgresChatLocks

    holder = await spawn("chat-lock", postgres_url, scope, "7")
    assert await read_line(holder) == "held"
    async with PostgresChatLocks(postgres_url, scope) as locks:
        assert await held_by_someone_else(locks, 7)
        waiting = asyncio.create_task(_hold_once(locks, 7))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        killed_at = time.monotonic()
        holder.kill()
        acquired_at = await asyncio.wait_for(waiting, 5)
    assert acquired_at - killed_at < 1.0


async def _hold_once(locks, chat: int) -> float:
    async with locks.hold(chat):
        return time.monotonic()


@pytest.mark.postgres
async def test_one_leader_at_a_time_and_the_next_takes_over_when_it_lets_go(postgres_url, scope):
    """Of two workers one leads; the other leads within about a second of the first letting
    go; a leader whose connection the server ends learns it from ``wait_lost``."""
    from agent.db.postgres_locks import PostgresLeaderLock

    first = PostgresLeaderLock(postgres_url, scope, check_interval=0.1)
    second = PostgresLeaderLock(postgres_url, scope, check_interval=0.1)
    await asyncio.wait_for(first.acquire(), 5)
    waiting = asyncio.create_task(second.acquire())
    await asyncio.sleep(1.5)
    assert first.held
    assert not waiting.done()
    assert not second.held
    released_at = time.monotonic()
    await first.release()
    await asyncio.wait_for(waiting, 5)
    assert second.held
    assert time.monotonic() - released_at < 1.5

    lost = asyncio.create_task(second.wait_lost())
    await asyncio.sleep(0.3)
    assert not lost.done()
    import psycopg

    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as admin:
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
            " AND classid = %s::bigint::oid AND objid = %s::bigint::oid AND objsubid = 1",
            _lock_parts(second.key),
        )
    await asyncio.wait_for(lost, 5)
    assert not second.held
    await asyncio.wait_for(first.acquire(), 5)  # the lock went with the session
    await first.release()


@pytest.mark.postgres
async def test_a_leader_lock_outage_is_logged_once_and_its_end_once(postgres_url, scope, caplog):
    """A worker trying the leader lock while the server cannot be reached warns once, not at
    every try; when the server answers again it says so once and leads."""
    import psycopg

    from agent.db.postgres_locks import PostgresLeaderLock

    real = psycopg.conninfo.conninfo_to_dict(postgres_url)
    port = free_port()  # nothing listens here until the forwarder starts
    lock = PostgresLeaderLock(
        psycopg.conninfo.make_conninfo(postgres_url, port=port), scope, retry=0.05
    )

    forwarding: list[asyncio.Task[object]] = []

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        forwarding.append(task)
        server_reader, server_writer = await asyncio.open_connection(
            str(real["host"]), int(str(real["port"]))
        )

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()
            await dst.wait_closed()

        await asyncio.gather(pipe(reader, server_writer), pipe(server_reader, writer))

    caplog.set_level(logging.DEBUG, logger="agent.db.postgres_locks")
    trying = asyncio.create_task(lock.acquire())
    await asyncio.sleep(1.0)  # about twenty tries refused
    assert not trying.done()
    server = await asyncio.start_server(forward, "127.0.0.1", port)
    try:
        await asyncio.wait_for(trying, 10)
        assert lock.held
        records = [r for r in caplog.records if r.name == "agent.db.postgres_locks"]
        warned = [r for r in records if r.levelno == logging.WARNING]
        assert len(warned) == 1, [r.getMessage() for r in warned]
        assert "cannot try the leader lock" in warned[0].getMessage()
        assert sum(r.levelno == logging.DEBUG for r in records) >= 5  # the others, quietly
        said = [r.getMessage() for r in records if r.levelno == logging.INFO]
        assert said == ["the leader lock can be tried again", f"this worker leads (lock {scope})"]
    finally:
        await lock.release()  # its connection closes: the forwarding ends
        server.close()
        await asyncio.wait_for(asyncio.gather(*forwarding), 5)


def _lock_parts(key: int) -> tuple[int, int]:
    """The (classid, objid) under which ``pg_locks`` shows a bigint advisory key."""
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return unsigned >> 32, unsigned & 0xFFFF_FFFF


async def next_leader(
    procs: list[asyncio.subprocess.Process], timeout: float
) -> tuple[asyncio.subprocess.Process, float]:
    """Wait for one of ``procs`` to say it leads; check that no other says so for 2 s more;
    return it and how long it took."""
    started = time.monotonic()
    lines = {asyncio.create_task(read_line(proc, timeout)): proc for proc in procs}
    done, _ = await asyncio.wait(lines, timeout=timeout, return_when="FIRST_COMPLETED")
    took = time.monotonic() - started
    assert len(done) == 1, "no worker, or several at once, took the lead"
    await asyncio.sleep(2.0)  # the others keep trying, and still do not lead
    others = [task for task in lines if task not in done]
    assert not any(task.done() for task in others)
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    (task,) = done
    assert (await task).startswith("leader ")
    return lines[task], took


@pytest.mark.postgres
@pytest.mark.crash
async def test_when_the_leader_process_is_killed_another_leads_within_seconds(
    postgres_url, scope, spawn
):
    """Three worker processes: exactly one leads; killed with SIGKILL, one of the others leads
    within a few seconds (they try every second), and only one; and so again."""
    alive = [await spawn("leader", postgres_url, scope) for _ in range(3)]
    leader, _ = await next_leader(alive, 30)
    for _ in range(2):
        leader.kill()
        await leader.wait()
        alive.remove(leader)
        leader, took = await next_leader(alive, 10)
        assert took < 3.0
