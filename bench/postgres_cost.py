"""The per-turn commit cost on PostgreSQL against a floor measured in the same run (issue 18).

``python -m bench.postgres_cost [--quick] [--no-write]``, and a part of ``python -m bench``.
It needs a PostgreSQL server: ``AGENT_TEST_POSTGRES_URL`` (the tests' variable); the run gets a
fresh schema of its own there, dropped at the end. Without it, it prints one line and skips.

Measured in one run, interleaved in rounds so that the ratios hold on a noisy machine:

* the **floor**: a one-row ``INSERT`` (~600 bytes) + ``COMMIT`` through psycopg on one
  connection to the same server, from plain code (sync) and from the event loop (async);
* ``ConversationLane.on_turn`` on PostgreSQL (checkpoints as rows) and on SQLite (durability
  ``full``, checkpoint files) for the same workload: one private chat each, LoCoMo utterances,
  a trivial reply engine (the lane is measured, not a model);
* the **write transaction of the turn alone**: the ``PostgresDatabase.write`` call of
  ``on_turn`` that commits the turn (timed around the call: taking a pooled connection,
  ``BEGIN``, the statements, ``COMMIT``), and every write of a turn together (the turn's, its
  checkpoint row's).

It rewrites the "PostgreSQL: per-turn commit cost" section of ``BENCHMARKS.md`` (a full run; not
with ``--quick`` or ``--no-write``). Durability on PostgreSQL is the server's
(``synchronous_commit``, ``fsync``; their values are printed with the figures). Tested (a tiny
run, and the skip without a server) by ``tests/test_postgres_cost.py``.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from agent.app.wiring import build_lane, open_database, open_lane
from agent.config import Settings
from agent.db import AnyDatabase
from bench.benchmarks_file import write_section
from bench.harness import arguments, lane_settings, machine, percentile, temporary_workdir
from bench.lane_cost import Messages, TrivialEngine
from bench.locomo_texts import utterances as _texts

__all__ = ["main"]

TITLE = "## PostgreSQL: per-turn commit cost"
_NO_SERVER = "postgres cost: skipped (AGENT_TEST_POSTGRES_URL is not set)"


def _schema_url(url: str, schema: str) -> str:
    """Return ``url`` (``postgresql://...``) with ``schema`` as its search path."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@contextlib.contextmanager
def _fresh_schema(url: str) -> Iterator[str]:
    """Create a schema of its own on the server; yield the URL that uses it; drop it."""
    import psycopg
    from psycopg import sql

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield _schema_url(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


class Floor:
    """One-row INSERT + COMMIT on the server, through psycopg, sync and async."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.body = os.urandom(300).hex()  # 600 bytes, about a turn's row
        self.sync = psycopg.connect(url)
        self.sync.execute("CREATE TABLE floor (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL)")
        self.sync.commit()
        self.url = url
        self.conn: Any = None

    async def open(self) -> None:
        import psycopg

        self.conn = await psycopg.AsyncConnection.connect(self.url)

    def insert(self) -> None:
        self.sync.execute("INSERT INTO floor (body) VALUES (%s)", (self.body,))
        self.sync.commit()

    async def insert_async(self) -> None:
        await self.conn.execute("INSERT INTO floor (body) VALUES (%s)", (self.body,))
        await self.conn.commit()

    async def close(self) -> None:
        self.sync.close()
        if self.conn is not None:
            await self.conn.close()


def _ms(began: float) -> float:
    return (time.perf_counter() - began) * 1000


@contextlib.asynccontextmanager
async def _writes_timed(db: AnyDatabase) -> AsyncIterator[list[float]]:
    """Time every ``db.write`` call while the block runs; yield the list they go to."""
    spans: list[float] = []
    original = db.write

    async def write(work: Callable[[Any], Awaitable[Any]]) -> Any:
        began = time.perf_counter()
        try:
            return await original(work)
        finally:
            spans.append(_ms(began))

    db.write = write  # type: ignore[method-assign]
    try:
        yield spans
    finally:
        del db.write


@contextlib.contextmanager
def _statements_counted() -> Iterator[dict[str, int]]:
    """Count the statements sent while the block runs: on the async connections (writes and
    single reads) and in the sync pool's snapshots (a read on a worker thread)."""
    from agent.db.postgres_adapters import PostgresSnapshot, PostgresTransaction

    counts = {"async": 0, "snapshot": 0}
    undo: list[Callable[[], None]] = []

    def count(owner: Any, name: str, key: str) -> None:
        original = getattr(owner, name)

        if key == "async":

            async def counted(*args: Any, **kwargs: Any) -> Any:
                counts[key] += 1
                return await original(*args, **kwargs)
        else:

            def counted(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
                counts[key] += 1
                return original(*args, **kwargs)

        setattr(owner, name, counted)
        undo.append(lambda: setattr(owner, name, original))

    for name in ("execute", "executemany", "fetchall"):
        count(PostgresTransaction, name, "async")
    count(PostgresSnapshot, "fetchall", "snapshot")
    try:
        yield counts
    finally:
        for restore in reversed(undo):
            restore()


async def _turns(
    lane: Any, messages: Messages, engine: TrivialEngine, n: int, samples: dict[str, list[float]],
    key: str, writes: list[float] | None = None,
) -> None:  # fmt: skip
    """Time ``n`` turns into ``samples[key]``; with ``writes`` (the lane's timed writes), the
    turn's own write into ``key + " commit"`` and all its writes into ``key + " writes"``."""
    for _ in range(n):
        first = len(writes) if writes is not None else 0
        began = time.perf_counter()
        await lane.on_turn(messages.next(), engine)
        samples[key].append(_ms(began))
        if writes is not None:
            samples[f"{key} commit"].append(writes[first])
            samples[f"{key} writes"].append(sum(writes[first:]))


async def measure(
    url: str, workdir: Path, texts: list[str], rounds: int, per_round: int
) -> list[str]:
    """Run the rounds on the database at ``url`` (a schema of its own) and on SQLite in
    ``workdir``; return the section's lines (without its title)."""
    floor = Floor(url)
    await floor.open()
    postgres = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        db_path=workdir / "unused.db",
        durability="full",
    )
    pg_db = await open_database(postgres)
    pg_lane = build_lane(postgres, pg_db)
    sqlite_lane = await open_lane(lane_settings(workdir, "sqlite", "full"))
    engine = TrivialEngine()
    chats = {"pg": Messages(texts, 21, 1_000_000), "sqlite": Messages(texts, 22, 2_000_000)}
    samples: dict[str, list[float]] = {k: [] for k in ("floor", "floor async", "pg", "sqlite")}
    samples.update({"pg commit": [], "pg writes": []})
    try:
        await pg_lane.hydrate()
        await sqlite_lane.hydrate()
        warm: dict[str, list[float]] = {k: [] for k in samples}
        await _turns(pg_lane, chats["pg"], engine, 20, warm, "pg")
        await _turns(sqlite_lane, chats["sqlite"], engine, 20, warm, "sqlite")
        for _ in range(20):
            floor.insert()
            await floor.insert_async()
        async with _writes_timed(pg_db) as writes:
            for _ in range(rounds):
                for _ in range(per_round):
                    began = time.perf_counter()
                    floor.insert()
                    samples["floor"].append(_ms(began))
                for _ in range(per_round):
                    began = time.perf_counter()
                    await floor.insert_async()
                    samples["floor async"].append(_ms(began))
                await _turns(pg_lane, chats["pg"], engine, per_round, samples, "pg", writes)
                await _turns(sqlite_lane, chats["sqlite"], engine, per_round, samples, "sqlite")
        with _statements_counted() as statements:
            await _turns(pg_lane, chats["pg"], engine, 20, warm, "pg")
        settings_rows = floor.sync.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN"
            " ('synchronous_commit', 'fsync', 'wal_sync_method') ORDER BY name"
        ).fetchall()
        version = floor.sync.execute("SHOW server_version").fetchone()
    finally:
        await floor.close()
        await pg_lane.shutdown()
        await sqlite_lane.shutdown()
    pairs = zip(samples["pg"], samples["pg writes"], strict=True)
    samples["pg rest"] = [turn - writes for turn, writes in pairs]
    base50 = statistics.median(samples["floor"])
    base99 = percentile(samples["floor"], 0.99)

    def row(label: str, key: str) -> str:
        v = samples[key]
        p50, p99 = statistics.median(v), percentile(v, 0.99)
        return f"| {label} | {p50:.2f} | {p99:.2f} | {p50 / base50:.2f}x | {p99 / base99:.2f}x |"

    server = ", ".join(f"`{name}={value}`" for name, value in settings_rows)
    n = rounds * per_round
    return [
        "| what | p50 ms | p99 ms | p50 / floor | p99 / floor |",
        "|---|---:|---:|---:|---:|",
        row("**floor**: one-row INSERT (600 B) + COMMIT, psycopg", "floor"),
        row("floor from the event loop (psycopg async)", "floor async"),
        row("the turn's write transaction alone (`PostgresDatabase.write`)", "pg commit"),
        row("every write of a turn (the turn's + its checkpoint row's)", "pg writes"),
        row("`on_turn` on PostgreSQL (checkpoints as rows)", "pg"),
        row("... of which not in a write (reads, retrieval, CPU)", "pg rest"),
        row("`on_turn` on SQLite, durability `full` (same workload)", "sqlite"),
        "",
        f"{n} samples of each, interleaved in {rounds} rounds of {per_round}; one private chat"
        " per lane, LoCoMo utterances as messages, every message wants a reply (so retrieval"
        " runs), a trivial reply engine. The server is PostgreSQL"
        f" {version[0] if version else '?'} on the same machine (TCP to 127.0.0.1), {server};"
        " the floor's and the lane's connections are its only load from this run (other"
        " engineers' tests may share it). The SQLite row is the same lane on a file beside"
        " the repository: its own floor is in the *Per-turn cost* section.",
        "",
        f"Where the time goes: a turn on PostgreSQL sends"
        f" {(statements['async'] + statements['snapshot']) / 20:.1f} statements, each a round"
        f" trip to the server ({statements['snapshot'] / 20:.1f} of them in the retrieval's"
        " snapshot, run on a worker thread of the sync pool), besides the `BEGIN` and"
        " `COMMIT` of its two write transactions (the turn's, then its checkpoint row's) and"
        " a pooled connection taken for each; the floor is one statement and one `COMMIT`."
        " On SQLite the same statements are calls into a library in the process.",
    ]


async def main(argv: list[str] | None = None) -> int:
    parser = arguments("python -m bench.postgres_cost", __doc__, "a smaller run, printed only")
    args = parser.parse_args(argv)
    url = os.environ.get("AGENT_TEST_POSTGRES_URL")
    if not url:
        print(_NO_SERVER, file=sys.stderr)
        return 0
    rounds, per_round = (3, 20) if args.quick else (10, 100)
    command = "python -m bench.postgres_cost" + (" --quick" if args.quick else "")
    started = time.perf_counter()
    with temporary_workdir(".bench-pg-") as workdir, _fresh_schema(url) as schema_url:
        where = machine(workdir)
        lines = await measure(schema_url, workdir, _texts(args.data), rounds, per_round)
    elapsed = time.perf_counter() - started
    head = [
        f"`AGENT_TEST_POSTGRES_URL=postgresql://... {command}` ({elapsed:.0f} s) on {where}.",
        "",
    ]
    section = "\n".join([TITLE, "", *head, *lines]) + "\n"
    print(section)
    if not (args.quick or args.no_write):
        write_section(section)
    return 0


if __name__ == "__main__":
    import asyncio

    raise SystemExit(asyncio.run(main()))
