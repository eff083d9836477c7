"""Throughput on PostgreSQL: 1, 2 and 3 webhook workers of one bot on one database.

``python -m bench.throughput_postgres [--workers 1,2,3] [--chats 100] [--seconds 8]
[--no-write]`` (the server of ``AGENT_TEST_POSTGRES_URL``; ``python -m bench`` runs it and, with
no server configured, skips it in one line). It rewrites the "Throughput on PostgreSQL" section
of ``BENCHMARKS.md``.

For each number of workers, a fresh schema of the server (:func:`bench.postgres_schema.
fresh_schema`) and that many ``python run_bot.py`` processes on it (``AGENT_DATABASE_URL``,
durability ``full``, checkpoints as rows only), each a webhook worker on a port of its own, as
``tests/test_workers.py`` starts them. The fake Bot API posts the updates to them as Telegram
posts to a webhook behind an nginx round-robin (:meth:`tests.fake_bot_api.FakeBotApi.
deliver_webhooks`: one chat's next message after the 2xx for its last, as Telegram's queues do;
``MAX_CONNECTIONS`` in flight, Telegram's default). Webhooks, not polling: with polling only the
leader fetches updates and every turn passes through its one process, so the other workers'
share of the work would be the leader's hand-off, not their processing. The load is
:class:`bench.throughput.LoadDriver`'s closed loop (every chat keeps 2 messages unanswered),
counted over the same window after a warm-up, every reply checked (one chat's replies in
order, none missing).

CPU per turn is read from ``/proc`` over the window: the workers, and the PostgreSQL server's
processes that serve them: the client backends whose ``application_name`` is this run's (from
``pg_stat_activity``) and the server's own processes (postmaster, WAL writer, checkpointer,
background writer, autovacuum...), which other users of the server share. The server and the
workers share the machine's 2 cores. The reference row is the single-process bot on SQLite
(polling, ``bench/throughput.py``'s level) in the same run. Tested in
``tests/test_throughput_postgres.py``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from bench.benchmarks_file import write_section
from bench.harness import arguments, machine, temporary_workdir
from bench.locomo_texts import utterances
from bench.postgres_schema import fresh_schema
from bench.throughput import IN_FLIGHT, LevelResult, LoadDriver, _cpu_seconds, run_level
from tests.bot_harness import TOKEN, BotProcess, bot_env, free_port
from tests.fake_bot_api import FakeBotApi

__all__ = ["WorkersResult", "main", "postgres_cpu_pids", "run_workers"]

#: Updates in flight at once to the workers (Telegram's default ``max_connections``).
MAX_CONNECTIONS = 40
_SECRET = "bench-throughput-secret"  # noqa: S105 (the fake's webhook token, no secret)


@dataclass(slots=True)
class WorkersResult:
    """The figures of one number of workers."""

    workers: int
    turns: int
    seconds: float
    latencies_ms: list[float]
    bot_cpu: float
    server_cpu: float
    machine_cpu: float
    problems: list[str]

    @property
    def turns_per_s(self) -> float:
        """Replies received per second of the window."""
        return self.turns / self.seconds


def postgres_cpu_pids(conninfo: str, application: str) -> list[int]:
    """The pids of the server's processes that count for a run: its own client backends (by
    ``application_name``) and every process of the server that is not a client backend."""
    import psycopg  # the `postgres` extra

    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, backend_type, application_name FROM pg_stat_activity"
        ).fetchall()
        [(backend,)] = conn.execute("SELECT pg_backend_pid()").fetchall()
        # The postmaster is every backend's parent (field 4 of /proc/<pid>/stat), read while
        # this connection's backend still runs.
        stat = Path(f"/proc/{backend}/stat").read_text()
    postmaster = int(stat.rsplit(")", 1)[1].split()[1])
    mine = [pid for pid, kind, name in rows if kind != "client backend" or name == application]
    return [postmaster, *mine]


def _cpu(pids: list[int]) -> dict[int, float]:
    out = {}
    for pid in pids:
        with contextlib.suppress(OSError):  # a process that ended meanwhile
            out[pid] = _cpu_seconds(Path(f"/proc/{pid}/stat"))
    return out


def _used(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def _busy() -> float:
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _workers(
    workdir: Path, api: FakeBotApi, url: str, count: int
) -> Iterator[tuple[list[int], list[str]]]:
    """Start ``count`` webhook workers on ``url``; yield their pids and webhook URLs."""
    procs: list[BotProcess] = []
    hooks: list[str] = []
    try:
        for index in range(count):
            home = workdir / f"w{index}"
            home.mkdir()
            port = free_port()
            hooks.append(f"http://127.0.0.1:{port}/hook")
            env = bot_env(
                home,
                api,
                AGENT_DATABASE_URL=url,
                AGENT_WORKER_ID=f"w{index}",
                AGENT_DURABILITY="full",
                AGENT_LOG_LEVEL="INFO",
                AGENT_WEBHOOK_URL=hooks[-1],
                AGENT_WEBHOOK_LISTEN="127.0.0.1",
                AGENT_WEBHOOK_PORT=str(port),
                AGENT_WEBHOOK_SECRET=_SECRET,
            )
            del env["AGENT_CHECKPOINT_DIR"]  # checkpoints are rows only
            procs.append(BotProcess(home, env, name=f"w{index}").start())
        for proc in procs:
            proc.wait_until_up()
        yield [p.proc.pid for p in procs if p.proc is not None], hooks
        for proc in procs:
            proc.stop()
    finally:
        for proc in procs:
            proc.ensure_dead()


def run_workers(
    workdir: Path, server: str, count: int, chats: int, texts: list[str], *, window: float
) -> WorkersResult:
    """Load ``count`` workers on a fresh schema with ``chats`` chats; measure the window."""
    application = f"bench_tp_{count}_{os.getpid()}"
    home = workdir / f"pg-{count}"
    home.mkdir()
    with fresh_schema(server, f"throughput_{count}_{os.getpid()}") as conninfo:
        import psycopg

        options = psycopg.conninfo.conninfo_to_dict(conninfo)["options"]
        url = f"{server}?options={quote(str(options))}&application_name={application}"
        with FakeBotApi(TOKEN) as api, _workers(home, api, url, count) as (pids, hooks):
            api.deliver_webhooks(hooks, _SECRET, max_connections=MAX_CONNECTIONS)
            driver = LoadDriver(api, list(range(10_000, 10_000 + chats)), texts, IN_FLIGHT)
            driver.start()
            driver.expect_every_chat_answered(max(60.0, chats * 0.5))
            time.sleep(1.0)
            server_pids = postgres_cpu_pids(conninfo, application)
            first, began = len(driver.replies), time.perf_counter()
            bots, pg, busy = _cpu(pids), _cpu(server_pids), _busy()
            time.sleep(window)
            ended = time.perf_counter()
            bot_cpu, server_cpu = _used(bots, _cpu(pids)), _used(pg, _cpu(server_pids))
            machine_cpu = _busy() - busy
            replies = [r for r in driver.replies[first:] if began <= r[0] < ended]
            driver.finish(max(60.0, chats * IN_FLIGHT * 0.1))
            problems = driver.problems()
    return WorkersResult(
        count,
        len(replies),
        ended - began,
        [latency * 1000 for _, latency in replies],
        bot_cpu,
        server_cpu,
        machine_cpu,
        problems,
    )


def report(results: list[WorkersResult], sqlite: LevelResult, chats: int) -> list[str]:
    """The section's table and the scaling ratios."""
    from bench.harness import percentile

    lines = [
        "| bot | workers | turns/s | latency p50 ms | latency p99 ms | workers CPU ms/turn"
        " | PostgreSQL server CPU ms/turn | total CPU ms/turn | machine CPU busy"
        " | in order, none missing |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        per = 1000 / max(r.turns, 1)
        lines.append(
            f"| PostgreSQL, webhook | {r.workers} | {r.turns_per_s:.0f}"
            f" | {percentile(r.latencies_ms, 0.5):.1f} | {percentile(r.latencies_ms, 0.99):.1f}"
            f" | {r.bot_cpu * per:.2f} | {r.server_cpu * per:.2f}"
            f" | {(r.bot_cpu + r.server_cpu) * per:.2f}"
            f" | {r.machine_cpu / r.seconds / (os.cpu_count() or 1):.0%}"
            f" | {'yes' if not r.problems else 'NO'} |"
        )
    s = sqlite
    lines += [
        f"| SQLite, polling (reference) | 1 | {s.turns_per_s:.0f}"
        f" | {percentile(s.latencies_ms, 0.5):.1f} | {percentile(s.latencies_ms, 0.99):.1f}"
        f" | {s.ms_per_turn(s.cpu.bot):.2f} | - | {s.ms_per_turn(s.cpu.bot):.2f}"
        f" | {s.cpu.machine / s.seconds / (os.cpu_count() or 1):.0%}"
        f" | {'yes' if not s.problems else 'NO'} |",
        "",
    ]
    one = results[0].turns_per_s if results and results[0].workers == 1 else 0.0
    ratios = [f"{r.workers}/1: {r.turns_per_s / one:.2f}x" for r in results[1:] if one]
    return [
        *lines,
        f"Scaling of the turns/s with {chats} chats, workers/1 worker: " + "; ".join(ratios) + ".",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print its section, and (full runs) write it to ``BENCHMARKS.md``."""
    parser = arguments("python -m bench.throughput_postgres", __doc__, "1 and 2 workers, 2 s")
    parser.add_argument("--workers", help="comma-separated numbers of workers (default 1,2,3)")
    parser.add_argument("--chats", type=int, default=100, help="chats at once (default 100)")
    parser.add_argument("--seconds", type=float, help="length of each measured window")
    args = parser.parse_args(argv)
    server = os.environ.get("AGENT_TEST_POSTGRES_URL")
    if not server:
        print("throughput on PostgreSQL: skipped, AGENT_TEST_POSTGRES_URL is not set")
        return 0
    counts = [1, 2] if args.quick else [1, 2, 3]
    if args.workers:
        counts = [int(n) for n in args.workers.split(",")]
    window = args.seconds or (2.0 if args.quick else 8.0)
    texts = utterances(args.data)
    started = time.perf_counter()
    with temporary_workdir(".bench-throughput-pg-") as workdir:
        where = machine(workdir)
        sqlite = run_level(workdir, args.chats, texts, window=window, warmup=1.0)
        print(f"throughput: sqlite, {sqlite.turns_per_s:.0f}/s", file=sys.stderr)
        results = []
        for count in counts:
            results.append(run_workers(workdir, server, count, args.chats, texts, window=window))
            print(f"throughput: {count} workers, {results[-1].turns_per_s:.0f}/s", file=sys.stderr)
    elapsed = time.perf_counter() - started
    section = "\n".join(
        [
            "## Throughput on PostgreSQL",
            "",
            f"`python -m bench.throughput_postgres` ({elapsed:.0f} s) on {where}; PostgreSQL on"
            " the same machine: the server and the workers share its 2 cores (and the server"
            " other users' tests), so more workers add processes, not cores.",
            "",
            f"{args.chats} chats, each keeping {IN_FLIGHT} messages unanswered; turns/s over"
            f" {window:g} s after a warm-up. Webhook workers (`python run_bot.py` with"
            f" `AGENT_DATABASE_URL`, durability `full`), the updates posted round-robin as"
            f" nginx would ({MAX_CONNECTIONS} in flight, one chat's next after the 2xx of its"
            " last, as Telegram does); polling would pass every update through the leader."
            " Workers CPU: the bot processes; server CPU: this run's client backends and the"
            " server's own processes (WAL writer, checkpointer...), from `/proc`.",
            "",
            *report(results, sqlite, args.chats),
        ]
    )
    print(section)
    for result in results:
        for problem in result.problems[:20]:
            print(f"throughput, {result.workers} workers: {problem}", file=sys.stderr)
    if not (args.no_write or args.quick):
        write_section(section + "\n")
    return 1 if any(r.problems for r in results) or sqlite.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
