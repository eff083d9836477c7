"""Per-turn cost of the lane beside a reference design, in one run (issue 20).

Run ``python -m bench.turn_cost`` from the repository root (``--quick``: 100 and 1,000 turns,
a few rounds, printed only; ``--no-write``: print only), or ``python -m bench`` for the whole
suite. It rewrites the section "Per-turn cost (issue 20)" of ``BENCHMARKS.md``.

The harness is outside the lane: it times the public ``ConversationLane.on_turn`` of a private
chat whose reply engine returns a fixed text, durability ``full``, after a history of 100 /
1,000 / 10,000 turns (bulk-filled as ``bench/lane_cost.py`` does), beside a *reference design*
fed the same messages in the same run: an aiosqlite WAL turn log (one ``INSERT`` and a commit,
``synchronous=FULL``) holding as many turns, plus an atomic orjson checkpoint file (write a
temporary file, fsync, rename, fsync the directory) of a state as big as the lane's. The
samples are interleaved in rounds (a block of lane turns, then a block of reference turns, for
every history), so that a noisy machine slows both alike. Per turn it records:

* the wall time of the turn (p50, p99);
* *event loop busy*: CPU time of the event loop's thread during the turn
  (``time.thread_time()`` deltas): the time every other chat waits;
* *bytes written*: the delta of ``wchar`` in ``/proc/self/io`` (every thread of the process:
  aiosqlite's writer thread included).

Tested by ``tests/test_turn_cost.py`` (a tiny run).
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiosqlite
import orjson

from agent.app.wiring import build_lane, open_database, open_lane
from agent.db import Database
from agent.memory import ConversationLane
from bench.benchmarks_file import write_section
from bench.harness import arguments, lane_settings, machine, percentile, temporary_workdir
from bench.lane_cost import _FOLD_LAST, Messages, TrivialEngine, fill
from bench.locomo_texts import utterances

__all__ = ["BARS", "ReferenceDesign", "TurnSample", "main", "run"]

#: Bars of issue 20: event loop busy p50 ms, bytes written per turn at the largest history,
#: on_turn p50 / reference p50.
BARS = {"loop_ms": 1.0, "bytes": 40_000, "ratio": 3.0}

_CHAT = 21


def _wchar() -> int:
    """Bytes this process has written through syscalls so far (``/proc/self/io``)."""
    with open("/proc/self/io", "rb") as io:
        for line in io:
            if line.startswith(b"wchar:"):
                return int(line.split()[1])
    return 0


class TurnSample:
    """The samples of one design at one history: wall ms, loop-busy ms, bytes written."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.loop: list[float] = []
        self.written: list[int] = []

    async def time(self, turn: Callable[[], Awaitable[object]]) -> None:
        """Run one ``turn`` and record what it cost."""
        written, cpu, began = _wchar(), time.thread_time(), time.perf_counter()
        await turn()
        self.wall.append((time.perf_counter() - began) * 1000)
        self.loop.append((time.thread_time() - cpu) * 1000)
        self.written.append(_wchar() - written)


class ReferenceDesign:
    """A turn log in an aiosqlite WAL database and an atomic orjson checkpoint file.

    Args:
        directory: where its database and checkpoint live (created).
        state: the checkpoint's content to start from (a dict as big as the lane's).
    """

    def __init__(self, directory: Path, state: dict[str, Any]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.path = directory / "checkpoint.json"
        self.state = state
        self.db: aiosqlite.Connection | None = None

    async def open(self, history: list[tuple[str, str]]) -> None:
        """Open the turn log (creating it) and fill it with ``history`` (user, reply) turns."""
        self.db = db = await aiosqlite.connect(self.directory / "turns.db", isolation_level=None)
        await db.execute("PRAGMA journal_mode = WAL")
        await db.execute("PRAGMA synchronous = FULL")
        await db.execute(
            "CREATE TABLE IF NOT EXISTS turns (seq INTEGER PRIMARY KEY, created_at REAL,"
            " user_text TEXT NOT NULL, assistant_text TEXT)"
        )
        await db.execute("BEGIN")
        await db.executemany(
            "INSERT INTO turns (created_at, user_text, assistant_text) VALUES (?, ?, ?)",
            [(time.time(), user, reply) for user, reply in history],
        )
        await db.execute("COMMIT")

    def _replace(self, data: bytes) -> None:
        temp = self.path.with_suffix(".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self.path)
        dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    async def on_turn(self, text: str, reply: str) -> None:
        """Log one turn (INSERT + commit), then replace the checkpoint with the new state."""
        assert self.db is not None  # noqa: S101
        now = time.time()
        await self.db.execute("BEGIN IMMEDIATE")
        await self.db.execute(
            "INSERT INTO turns (created_at, user_text, assistant_text) VALUES (?, ?, ?)",
            (now, text, reply),
        )
        await self.db.execute("COMMIT")
        recent = self.state.setdefault("recent_turns", [])
        recent.append({"user_text": text, "assistant_text": reply, "created_at": now})
        del recent[:-20]
        self.state["turn_count"] = self.state.get("turn_count", 0) + 1
        await asyncio.to_thread(self._replace, orjson.dumps(self.state))

    async def close(self) -> None:
        """Close the turn log."""
        if self.db is not None:
            await self.db.close()


async def _lane_at(workdir: Path, size: int, texts: list[str]) -> tuple[ConversationLane, Path]:
    """A lane of durability ``full`` whose one private chat holds ``size`` turns, started."""
    settings = lane_settings(workdir, f"history-{size}", "full")
    filling = settings.model_copy(update={"durability": "process"})
    db = await open_database(filling)
    assert isinstance(db, Database)  # noqa: S101 - the bench fills SQLite
    lane = build_lane(filling, db)
    await fill(db, filling, [(_CHAT, size)], texts, fold_last=_FOLD_LAST)
    await lane.hydrate()  # writes the checkpoint
    await lane.shutdown()
    lane = await open_lane(settings)
    await lane.hydrate()
    sid = lane.session_id_for_chat(_CHAT)
    assert sid is not None  # noqa: S101
    checkpoint = lane.inspector.checkpoint_path(sid)
    assert checkpoint is not None  # noqa: S101
    return lane, checkpoint


async def run(
    workdir: Path, texts: list[str], sizes: list[int], rounds: int, per_round: int
) -> dict[int, dict[str, TurnSample]]:
    """Measure the lane and the reference at every history size; return the samples."""
    engine = TrivialEngine()
    lanes: dict[int, ConversationLane] = {}
    references: dict[int, ReferenceDesign] = {}
    messages = {size: Messages(texts, _CHAT, 10_000_000 * (i + 1)) for i, size in enumerate(sizes)}
    samples: dict[int, dict[str, TurnSample]] = {
        size: {"lane": TurnSample(), "reference": TurnSample()} for size in sizes
    }
    try:
        for size in sizes:
            lanes[size], checkpoint = await _lane_at(workdir, size, texts)
            state = orjson.loads(checkpoint.read_bytes())
            references[size] = ReferenceDesign(workdir / f"reference-{size}", state)
            history = [(texts[i % len(texts)], "Noted.") for i in range(size)]
            await references[size].open(history)

        async def lane_turn(size: int) -> None:
            await lanes[size].on_turn(messages[size].next(), engine)

        async def reference_turn(size: int) -> None:
            await references[size].on_turn(messages[size].next().text, "Noted.")

        for size in sizes:  # warm up: connections opened, caches hot
            for _ in range(5):
                await lane_turn(size)
                await reference_turn(size)
        for _ in range(rounds):
            for size in sizes:
                got = samples[size]
                for _ in range(per_round):
                    await got["lane"].time(lambda: lane_turn(size))  # noqa: B023
                for _ in range(per_round):
                    await got["reference"].time(lambda: reference_turn(size))  # noqa: B023
        return samples
    finally:
        for lane in lanes.values():
            await lane.shutdown()
        for reference in references.values():
            await reference.close()


def _ok(passed: bool) -> str:
    return "pass" if passed else "**miss**"


def report(samples: dict[int, dict[str, TurnSample]], rounds: int, per_round: int) -> list[str]:
    """The section's tables and bars."""
    rows = []
    ratios: dict[int, float] = {}
    loops: dict[int, float] = {}
    written: dict[int, float] = {}
    for size, got in samples.items():
        lane, ref = got["lane"], got["reference"]
        ratios[size] = statistics.median(lane.wall) / statistics.median(ref.wall)
        loops[size] = statistics.median(lane.loop)
        written[size] = statistics.median(lane.written)
        rows.append(
            f"| {size:,} | {statistics.median(lane.wall):.2f} | {percentile(lane.wall, 0.99):.2f}"
            f" | {statistics.median(ref.wall):.2f} | {percentile(ref.wall, 0.99):.2f}"
            f" | {ratios[size]:.2f}x | {loops[size]:.2f} | {statistics.median(ref.loop):.2f}"
            f" | {written[size] / 1000:,.1f} | {statistics.median(ref.written) / 1000:,.1f} |"
        )
    largest = max(samples)
    worst_loop = max(loops.values())
    worst_ratio = max(ratios.values())
    return [
        "| turns in the session | `on_turn` p50 ms | `on_turn` p99 ms | reference p50 ms"
        " | reference p99 ms | p50 / reference p50 | event loop busy p50 ms (lane)"
        " | event loop busy p50 ms (reference) | KB written per turn (lane)"
        " | KB written per turn (reference) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"{rounds * per_round} turns of each design at each history, interleaved in {rounds}"
        f" rounds (per round and history: {per_round} lane turns, then {per_round} reference"
        f" turns). The lane: `ConversationLane.on_turn` of one private chat, durability"
        f" `full`, a reply engine that returns a fixed text, LoCoMo utterances as messages"
        f" (every one wants a reply, so retrieval runs); its history bulk-filled as in *Flat in"
        f" history*. The reference: an aiosqlite WAL turn log (`INSERT` + commit,"
        f" `synchronous=FULL`) of as many turns, then an atomic orjson checkpoint (temporary"
        f" file, fsync, rename, fsync of the directory, in a worker thread) of the lane's own"
        f" checkpoint content with the new turn appended. *Event loop busy*: CPU time of the"
        f" loop's thread during the turn (`time.thread_time()`), p50. *KB written*:"
        f" `/proc/self/io` `wchar` delta over the turn (every thread of the process), median;"
        f" KB = 1,000 bytes.",
        "",
        "| bar (issue 20) | measured | |",
        "|---|---:|---|",
        f"| event loop busy per turn p50 ≤ {BARS['loop_ms']:.1f} ms (worst history)"
        f" | {worst_loop:.2f} ms | {_ok(worst_loop <= BARS['loop_ms'])} |",
        f"| bytes written per turn at {largest:,} turns ≤ {BARS['bytes'] / 1000:.0f} KB"
        f" | {written[largest] / 1000:.1f} KB | {_ok(written[largest] <= BARS['bytes'])} |",
        f"| `on_turn` p50 ≤ {BARS['ratio']:.0f}x the reference's (worst history)"
        f" | {worst_ratio:.2f}x | {_ok(worst_ratio <= BARS['ratio'])} |",
    ]


async def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write (or print) its section."""
    args = arguments(
        "python -m bench.turn_cost", __doc__, "100 and 1,000 turns, a few rounds, printed only"
    ).parse_args(argv)
    logging.getLogger("agent").setLevel(logging.ERROR)
    texts = utterances(args.data)
    if args.quick:
        sizes, rounds, per_round = [100, 1_000], 3, 10
    else:
        sizes, rounds, per_round = [100, 1_000, 10_000], 10, 40
    command = "python -m bench.turn_cost" + (" --quick" if args.quick else "")
    started = time.perf_counter()
    with temporary_workdir(".bench-turn-") as workdir:
        where = machine(workdir)
        samples = await run(workdir, texts, sizes, rounds, per_round)
    elapsed = time.perf_counter() - started
    section = "\n".join(
        [
            "## Per-turn cost (issue 20)",
            "",
            f"`{command}` or `python -m bench` ({elapsed:.0f} s for this part) on {where};"
            f" the temporary directory is next to the repository, on the same filesystem.",
            "",
            *report(samples, rounds, per_round),
        ]
    )
    print(section)
    if not (args.quick or args.no_write):
        write_section(section + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1:])))
