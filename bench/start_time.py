"""Start time: the real bot over 10,000 and 100,000 sessions, time to its first reply, and RSS.

Run ``python -m bench`` from the repository root (the whole suite; ``--quick``: 2,000 sessions,
one run, printed only), or this part alone with ``python -m bench.start_time [--quick]
[--no-write] [--sessions 10000,100000] [--runs 3]``. It rewrites the "Start time" section of
``BENCHMARKS.md``.

**The database.** One template session is made by the real lane (``TEMPLATE_TURNS`` turns of
a private chat through ``on_turn``, the state fold, the summary chain, a clean stop): its rows
(session, turns, summary versions) and its checkpoint file are then copied ``N`` times with new
ids, chats and times, by ``executemany`` in big transactions (the full-text triggers run as for
any insert) and plain file writes, so that 100,000 sessions take minutes, not hours of
``on_turn``. Session ``i`` was last active ``N - i`` seconds before a day ago: the last ones are
the most recent. Most sessions' checkpoints are recorded (``checkpoint_seq`` at their last turn,
migration 0015); ``UNRECORDED_SHARE`` have a good file but no record, and ``STALE_SHARE`` a file
one turn behind and no record (the start must rebuild those before their chat's turn, I5).

**A run.** Two messages wait in the fake Bot API (``tests.fake_bot_api.FakeBotApi``): one to a
chat among the oldest (its session is not resident: it is hydrated when its message comes) and
one to the most recent chat. ``python run_bot.py`` starts (durability ``full``, the default
resident cap, as :class:`tests.bot_harness.BotProcess` runs it); the time from the spawn to the
sendMessage answering each of them is the start's "first reply". Then the background pass runs
to its end (its log line), and the bot process's ``VmRSS`` and ``VmHWM`` are read from ``/proc``;
the bot is stopped with SIGTERM. Each figure is the median of the runs; every run answers other
chats (each chat's message is its first since the start). The floor is the same run over an
empty database: what Python, the imports, the migrations and the first poll cost whatever the
sessions. Two scenarios: **recorded** (the database as a clean stop leaves it) and **after
0015** (every record unknown: the first start after migration 0015, or after a crash with every
chat busy).

**Backends.** What depends on the database is :class:`SqliteBackend` (fill, the scenario's
records, the bot's environment, the drop); ``--backend postgres`` takes
:class:`bench.start_time_postgres.PostgresBackend` on the server of ``AGENT_TEST_POSTGRES_URL``
and writes the "Start time on PostgreSQL" section.
"""

from __future__ import annotations

import asyncio
import compileall
import contextlib
import os
import re
import shutil
import sqlite3
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from agent.app.wiring import open_lane
from agent.memory.schemas import dump_json
from agent.utils.timestamps import to_db_time
from bench.benchmarks_file import write_section
from bench.harness import arguments, lane_settings, machine, temporary_workdir
from bench.lane_cost import Messages, TrivialEngine
from bench.locomo_texts import utterances
from tests.bot_harness import REPO, TOKEN, BotProcess, bot_env, message_update
from tests.fake_bot_api import FakeBotApi, SentCall

#: Bars of issue 18: the first reply within 1 s of start, RSS under 200 MB at 100,000.
BAR_FIRST_REPLY_S = 1.0
BAR_RSS_MB = 200.0
#: Turns of every session (a few, as most chats have).
TEMPLATE_TURNS = 4
#: Shares of sessions whose record is unknown: a good file, or a file one turn behind.
UNRECORDED_SHARE = 0.01
STALE_SHARE = 0.01
#: The first chat id; session ``i`` is chat ``FIRST_CHAT + i``.
FIRST_CHAT = 1_000_000
#: Sessions per fill transaction.
_FILL_BATCH = 5_000
#: How long the background pass may take before the run fails (per 10,000 sessions).
_SWEEP_TIMEOUT_PER_10K = 120.0
_TEMPLATE_CHAT = 987_654_321  # a number found nowhere else in the template's files
#: The message id of the message each chat sends at start (its answer replies to it).
_MESSAGE_ID = 1_000
_SWEPT = re.compile(r"hydrated (\d+) sessions")


@dataclass(frozen=True, slots=True)
class Template:
    """One session as the real lane left it: its rows by table, and its checkpoint files."""

    session_id: str
    sessions: list[dict[str, Any]]
    parts: list[dict[str, Any]]
    turns: list[dict[str, Any]]
    summaries: list[dict[str, Any]]
    checkpoint: bytes
    behind: bytes


class Backend(Protocol):
    """**Protocol:** what a run needs of a database backend; :func:`measure` calls it.

    ``fill`` once per size, ``forget_records`` before each run of the "after 0015" scenario,
    ``env`` for each bot it starts (variables to set; ``None``: to unset), ``drop`` when the
    size is done.
    """

    name: str

    def fill(self, home: Path, template: Template, sessions: int) -> None: ...

    def forget_records(self, home: Path) -> None: ...

    def env(self, home: Path) -> dict[str, str | None]: ...

    def drop(self, home: Path) -> None: ...


def _rows(conn: sqlite3.Connection, table: str, session_id: str) -> list[dict[str, Any]]:
    conn.row_factory = sqlite3.Row
    order = {"conversation_summaries": "summary_id", "conversation_session_parts": "name"}.get(
        table, "rowid"
    )
    rows = conn.execute(
        f"SELECT * FROM {table} WHERE session_id = ? ORDER BY {order}",  # noqa: S608 (constants)
        (session_id,),
    ).fetchall()
    return [dict(row) for row in rows]


async def make_template(workdir: Path, texts: list[str]) -> Template:
    """Run ``TEMPLATE_TURNS`` turns of one chat through the real lane; stop it cleanly."""
    settings = lane_settings(workdir, "template", "process")
    lane = await open_lane(settings)
    await lane.hydrate()
    messages, engine = Messages(texts, _TEMPLATE_CHAT, 1), TrivialEngine()
    behind = b""
    for _ in range(TEMPLATE_TURNS):
        result = await lane.on_turn(messages.next(), engine)
        if result.turn.seq == TEMPLATE_TURNS - 1:  # as a file holds it (no journal beside)
            snapshot = await lane.inspector.checkpoint(result.turn.session_id)
            assert snapshot is not None  # noqa: S101 - written after the turn's commit
            behind = dump_json(snapshot, indent=True)
    await lane.shutdown()
    sid = result.turn.session_id
    with contextlib.closing(sqlite3.connect(settings.db_path)) as conn:
        return Template(
            session_id=sid,
            sessions=_rows(conn, "conversation_sessions", sid),
            parts=_rows(conn, "conversation_session_parts", sid),
            turns=_rows(conn, "conversation_turns", sid),
            summaries=_rows(conn, "conversation_summaries", sid),
            checkpoint=(settings.checkpoint_dir / f"{sid}.json").read_bytes(),
            behind=behind,
        )


def session_id_of(i: int) -> str:
    """The id of session ``i`` (the shape :func:`agent.utils.ids.session_id` makes)."""
    return f"ses_{i:032x}"


def chat_of(i: int) -> int:
    """The chat of session ``i``."""
    return FIRST_CHAT + i


class _Copier:
    """Makes session ``i``'s rows and file from the template."""

    def __init__(self, template: Template, sessions: int) -> None:
        self.t = template
        self.n = sessions
        self.stale_every = max(1, round(1 / STALE_SHARE))
        self.unrecorded_every = max(1, round(1 / UNRECORDED_SHARE))
        self.epoch = datetime.now(UTC) - timedelta(days=1, seconds=sessions)
        self.turn_ids = [row["turn_id"] for row in template.turns]

    def recorded(self, i: int) -> bool:
        return i % self.stale_every != 1 and i % self.unrecorded_every != 2

    def text(self, value: Any, i: int) -> Any:
        if not isinstance(value, str):
            return value
        value = value.replace(self.t.session_id, session_id_of(i))
        return value.replace(str(_TEMPLATE_CHAT), str(chat_of(i)))

    def session(self, i: int) -> dict[str, Any]:
        row = {key: self.text(value, i) for key, value in self.t.sessions[0].items()}
        when = to_db_time(self.epoch + timedelta(seconds=i))
        row.update(chat_id=chat_of(i), user_id=chat_of(i), created_at=when, updated_at=when)
        row["checkpoint_seq"] = row["last_seq"] if self.recorded(i) else None
        return row

    def parts(self, i: int) -> list[dict[str, Any]]:
        return [{key: self.text(value, i) for key, value in row.items()} for row in self.t.parts]

    def turns(self, i: int) -> list[dict[str, Any]]:
        rows = []
        for k, template in enumerate(self.t.turns):
            row = {key: self.text(value, i) for key, value in template.items()}
            row.update(turn_id=f"trn_{i * 64 + k:032x}", user_id=chat_of(i), update_id=None)
            if row["assistant_text"]:  # delivered: the fill leaves no reply to send
                row.update(
                    status="delivered", reply_message_id=k + 1, delivered_at=row["created_at"]
                )
            rows.append(row)
        return rows

    def summaries(self, i: int) -> list[dict[str, Any]]:
        base = i * 64
        first = self.t.summaries[0]["summary_id"] if self.t.summaries else 0
        rows = []
        for template in self.t.summaries:
            row = {key: self.text(value, i) for key, value in template.items()}
            row["summary_id"] = base + row["summary_id"] - first + 1
            if row["parent_summary_id"] is not None:
                row["parent_summary_id"] = base + row["parent_summary_id"] - first + 1
            rows.append(row)
        return rows

    def checkpoint(self, i: int) -> bytes:
        data = self.t.behind if i % self.stale_every == 1 else self.t.checkpoint
        data = data.replace(self.t.session_id.encode(), session_id_of(i).encode())
        for k, turn_id in enumerate(self.turn_ids):
            data = data.replace(turn_id.encode(), f"trn_{i * 64 + k:032x}".encode())
        return data.replace(str(_TEMPLATE_CHAT).encode(), str(chat_of(i)).encode())


def _insert(conn: sqlite3.Connection, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    columns = list(rows[0])
    conn.executemany(
        f"INSERT INTO {table} ({', '.join(columns)})"  # noqa: S608 (the schema's own names)
        f" VALUES ({', '.join('?' for _ in columns)})",
        [tuple(row[c] for c in columns) for row in rows],
    )


class SqliteBackend:
    """The embedded default: ``memory.db`` and ``checkpoints/`` in the bot's directory."""

    name = "sqlite"

    def fill(self, home: Path, template: Template, sessions: int) -> None:
        """Copy the template ``sessions`` times: rows by ``executemany``, files written plainly."""
        db_path, checkpoints = home / "memory.db", home / "checkpoints"
        asyncio.run(_migrate(home))
        copier = _Copier(template, sessions)
        with contextlib.closing(sqlite3.connect(db_path, isolation_level=None)) as conn:
            conn.execute("PRAGMA synchronous = OFF")  # a fill, not a deployment
            for first in range(0, sessions, _FILL_BATCH):
                batch = range(first, min(first + _FILL_BATCH, sessions))
                conn.execute("BEGIN")
                _insert(conn, "conversation_sessions", [copier.session(i) for i in batch])
                _insert(
                    conn, "conversation_session_parts", [r for i in batch for r in copier.parts(i)]
                )
                _insert(conn, "conversation_turns", [r for i in batch for r in copier.turns(i)])
                _insert(
                    conn, "conversation_summaries", [r for i in batch for r in copier.summaries(i)]
                )
                conn.execute("COMMIT")
                for i in batch:
                    (checkpoints / f"{session_id_of(i)}.json").write_bytes(copier.checkpoint(i))
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def forget_records(self, home: Path) -> None:
        """Make every record unknown, as migration 0015 leaves a database."""
        with contextlib.closing(sqlite3.connect(home / "memory.db", isolation_level=None)) as conn:
            conn.execute("UPDATE conversation_sessions SET checkpoint_seq = NULL")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def env(self, home: Path) -> dict[str, str | None]:
        """The bot's environment: its files in ``home`` (:func:`tests.bot_harness.bot_env`)."""
        return {}

    def drop(self, home: Path) -> None:
        """Nothing beyond ``home``, which :func:`measure` removes."""


async def _migrate(home: Path) -> None:
    settings = lane_settings(home, "memory", "process")
    (home / "checkpoints").mkdir(mode=0o700)
    lane = await open_lane(settings.model_copy(update={"checkpoint_dir": home / "checkpoints"}))
    await lane.close()


BACKENDS: dict[str, Backend] = {"sqlite": SqliteBackend()}


def _postgres(url: str) -> Backend:
    from bench.start_time_postgres import PostgresBackend  # it builds on this module

    return PostgresBackend(url)


@dataclass(slots=True)
class RunResult:
    """One start of the bot: when each chat got its answer, and the memory after the pass."""

    replies_s: dict[str, float] = field(default_factory=dict)
    swept_s: float = 0.0
    rss_mb: float = 0.0
    hwm_mb: float = 0.0


def _status_mb(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def start_once(
    home: Path,
    backend: Backend,
    chats: dict[str, int],
    *,
    first_update: int,
    sweep_timeout: float,
) -> RunResult:
    """Start the bot with a message waiting in each of ``chats`` (label -> chat); measure.

    The messages' update ids start at ``first_update``, above those of earlier runs.
    """
    arrived: dict[int, float] = {}
    done = threading.Event()

    def on_sent(call: SentCall) -> None:
        replied_to = (call.params.get("reply_parameters") or {}).get("message_id")
        if replied_to == _MESSAGE_ID and isinstance(call.chat_id, int):
            arrived[call.chat_id] = time.perf_counter()
            if all(chat in arrived for chat in chats.values()):
                done.set()

    env = bot_env(home, None, AGENT_LOG_LEVEL="INFO")
    for key, value in backend.env(home).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    result = RunResult()
    with FakeBotApi(TOKEN, on_sent=on_sent) as api:
        env.update(TELEGRAM_BASE_URL=api.base_url, TELEGRAM_BASE_FILE_URL=api.base_file_url)
        for n, chat in enumerate(chats.values()):
            # Update ids go on from the last run's (the bot's journal has those).
            text = "hello again, what were we talking about?"
            api.push_update(message_update(first_update + n, chat, text, message_id=_MESSAGE_ID))
        bot = BotProcess(home, env, name=f"bot-{time.monotonic_ns()}")
        began = time.perf_counter()
        bot.start()
        try:
            if not done.wait(120.0):
                raise AssertionError(f"no first replies within 120 s{bot.stderr[-3000:]}")
            result.replies_s = {label: arrived[chat] - began for label, chat in chats.items()}
            deadline = time.monotonic() + sweep_timeout
            while not _SWEPT.search(bot.stderr):
                if time.monotonic() > deadline or not bot.alive:
                    raise AssertionError(f"the background pass did not end{bot.stderr[-3000:]}")
                time.sleep(0.05)
            result.swept_s = time.perf_counter() - began
            pid = bot.proc.pid if bot.proc is not None else 0
            result.rss_mb, result.hwm_mb = _status_mb(pid)
            bot.stop(timeout=300.0)
        finally:
            bot.ensure_dead()
    return result


@dataclass(slots=True)
class Scenario:
    """The runs of one size and one state of the records."""

    sessions: int
    records: str
    runs: list[RunResult] = field(default_factory=list)

    def median(self, figure: str, label: str = "") -> float:
        values = [r.replies_s[label] if label else getattr(r, figure) for r in self.runs]
        return statistics.median(values)


def measure(
    workdir: Path, backend: Backend, template: Template, sessions: int, runs: int
) -> list[Scenario]:
    """Fill a database of ``sessions``; run both scenarios ``runs`` times each."""
    home = workdir / f"{backend.name}-{sessions}"
    home.mkdir()
    began = time.perf_counter()
    backend.fill(home, template, sessions)
    filled = time.perf_counter() - began
    print(f"start_time: filled {sessions:,} in {filled:.0f} s", file=sys.stderr)
    timeout = max(60.0, _SWEEP_TIMEOUT_PER_10K * sessions / 10_000)
    out = []
    for records in ("recorded", "after 0015"):
        scenario = Scenario(sessions, records)
        for run in range(runs):
            if records == "after 0015":
                backend.forget_records(home)
            # Each run talks to chats not seen since the fill: an old one and a recent one.
            chats = {"cold": chat_of(2 * run + len(out) * runs * 2 + 3)}
            if sessions:
                chats["recent"] = chat_of(sessions - 1 - run - len(out) * runs)
            first_update = (len(out) * runs + run) * 10 + 1
            result = start_once(
                home, backend, chats, first_update=first_update, sweep_timeout=timeout
            )
            print(f"start_time: {sessions:,} {records}: {result}", file=sys.stderr)
            scenario.runs.append(result)
        out.append(scenario)
        if not sessions:
            break
    backend.drop(home)
    shutil.rmtree(home)
    return out


def report(floor: Scenario, scenarios: list[Scenario], runs: int) -> list[str]:
    """The section's tables and bars."""
    lines = [
        "| sessions | records | first reply, cold chat | first reply, recent chat"
        " | background pass done | VmRSS after it | VmHWM |",
        "|---:|---|---:|---:|---:|---:|---:|",
        f"| 0 (floor) | - | {floor.median('', 'cold'):.2f} s | - | {floor.median('swept_s'):.2f} s"
        f" | {floor.median('rss_mb'):.0f} MB | {floor.median('hwm_mb'):.0f} MB |",
    ]
    for s in scenarios:
        lines.append(
            f"| {s.sessions:,} | {s.records} | {s.median('', 'cold'):.2f} s"
            f" | {s.median('', 'recent'):.2f} s | {s.median('swept_s'):.1f} s"
            f" | {s.median('rss_mb'):.0f} MB | {s.median('hwm_mb'):.0f} MB |"
        )
    lines += [
        "",
        f"Medians of {runs} runs; times from the spawn of `python run_bot.py`.",
        "",
        "| bar | measured | |",
        "|---|---:|---|",
    ]
    biggest = max(s.sessions for s in scenarios)
    base = floor.median("", "cold")
    for s in scenarios:
        first = max(s.median("", "cold"), s.median("", "recent"))
        ok = "pass" if first < BAR_FIRST_REPLY_S else "**miss**"
        more = "pass" if first - base < BAR_FIRST_REPLY_S else "**miss**"
        lines += [
            f"| first reply within {BAR_FIRST_REPLY_S:.0f} s of the spawn, {s.sessions:,}"
            f" sessions, {s.records} | {first:.2f} s | {ok} |",
            f"| what the sessions add to it (over the floor's {base:.2f} s) under"
            f" {BAR_FIRST_REPLY_S:.0f} s, {s.sessions:,} sessions, {s.records}"
            f" | {first - base:+.2f} s | {more} |",
        ]
    for s in scenarios:
        if s.sessions == biggest:
            rss = s.median("hwm_mb")
            ok = "pass" if rss < BAR_RSS_MB else "**miss**"
            lines.append(
                f"| VmHWM under {BAR_RSS_MB:.0f} MB, {s.sessions:,} sessions, {s.records}"
                f" | {rss:.0f} MB | {ok} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print its section, and (full runs) write it to ``BENCHMARKS.md``."""
    parser = arguments("python -m bench.start_time", __doc__, "2,000 sessions, one run, printed")
    parser.add_argument("--sessions", help="comma-separated sizes (default 10000,100000)")
    parser.add_argument("--runs", type=int, help="runs per scenario (default 3)")
    parser.add_argument("--backend", choices=[*BACKENDS, "postgres"], default="sqlite")
    args = parser.parse_args(argv)
    if args.backend == "postgres" and not os.environ.get("AGENT_TEST_POSTGRES_URL"):
        parser.error("--backend postgres needs the server of AGENT_TEST_POSTGRES_URL")
    sizes = [2_000] if args.quick else [10_000, 100_000]
    if args.sessions:
        sizes = [int(n) for n in args.sessions.split(",")]
    runs = args.runs or (1 if args.quick else 3)
    backend = BACKENDS.get(args.backend) or _postgres(os.environ["AGENT_TEST_POSTGRES_URL"])
    # The bot's bytecode compiled, as pip leaves an installed package: the bots run with
    # PYTHONDONTWRITEBYTECODE (bot_env), so a tree never imported would be compiled anew at
    # every start, and that is no start a user sees.
    compileall.compile_dir(REPO / "agent", quiet=1)
    started = time.perf_counter()
    with temporary_workdir(".bench-start-") as workdir:
        where = machine(workdir)
        template = asyncio.run(make_template(workdir, utterances(args.data)))
        floor = measure(workdir, backend, template, 0, runs)[0]
        scenarios = [s for n in sizes for s in measure(workdir, backend, template, n, runs)]
    elapsed = time.perf_counter() - started
    command = "python -m bench" + (" --quick" if args.quick else "")
    section = "\n".join(
        [
            "## Start time" + ("" if backend.name == "sqlite" else " on PostgreSQL"),
            "",
            f"`{command}` or `python -m bench.start_time` ({elapsed:.0f} s for this part) on"
            f" {where}; backend {backend.name}; the temporary directory is next to the"
            " repository, on the same filesystem.",
            "",
            f"A database of N open private sessions of {TEMPLATE_TURNS} turns each (copies of one"
            " session the real lane made), their checkpoints present (files on SQLite, rows on"
            " PostgreSQL);"
            f" {UNRECORDED_SHARE:.0%} of the records unknown with a good file and"
            f" {STALE_SHARE:.0%} unknown with a file one turn behind (\"recorded\"), or every"
            " record unknown (\"after 0015\"). `python run_bot.py` (durability `full`, the"
            " default resident cap) starts with a message waiting from one of the oldest chats"
            " (cold: not resident, hydrated by its message) and one from the most recent chat;"
            " first reply = spawn to the sendMessage answering it at the fake Bot API. VmRSS and"
            " VmHWM of the bot process are read after the background pass has checked every"
            " session. The floor is the same start over an empty database: the interpreter,"
            " the imports, the migrations, getMe, setMyCommands, the first poll and one turn;"
            " what N adds is the part the start's design answers for.",
            "",
            *report(floor, scenarios, runs),
        ]
    )
    print(section)
    if not (args.no_write or args.quick):  # the file shows full runs only
        write_section(section + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
