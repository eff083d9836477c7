"""The lane's cost against the disk's floor, flat in history, and its memory and disk use.

Run ``python -m bench`` from the repository root (``--quick``: a smaller run in under a
minute, printed only, the CI smoke run; ``--no-write``: print only). It rewrites three sections
of ``BENCHMARKS.md`` (the others are left as they are):

* **Per-turn cost**: in one run, interleaved in rounds so that the ratios hold on a noisy
  machine, the physical floor (append ~600 bytes + fsync; atomic 4 KB replace with fsync of
  file and directory), the floor of what ``on_turn`` must do durably (one SQLite commit with
  ``synchronous=FULL`` in WAL + one atomic 4 KB replace), and ``ConversationLane.on_turn`` with
  durability ``full`` and ``process``. Where the bar is missed, where the time goes.
* **Flat in history**: ``on_turn``, packet build with retrieval and cold-start hydration of one
  session after 100 ... 100,000 turns (histories bulk-inserted through the store, the real state
  fold applied to every turn), drawn in ``docs/flat_in_history.png``.
* **Memory and disk**: resident memory of a fresh process that hydrates 10,000 sessions, database
  bytes per turn and checkpoint bytes per session against history length.

Everything runs in a temporary directory next to the repository (same filesystem). The turn
texts are LoCoMo utterances (``../shared/data/locomo-dev.json``, read in place, CC BY-NC 4.0),
or a small built-in text without it. The reply engine is trivial: the lane is measured, not a
model.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from agent.app.wiring import build_lane, open_database, open_lane, state_manager, stores_for
from agent.config import Settings
from agent.db import Database
from agent.memory import (
    ConversationContextPacket,
    ConversationTurn,
    InboundMessage,
    Reply,
    SessionState,
)
from agent.memory.conversation_checkpoint import CheckpointWriter
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_store import SqliteConversationStore
from agent.memory.schemas import dump_json
from agent.memory.writer import write_summary_version
from agent.utils import ids
from bench.benchmarks_file import write_section
from bench.harness import ROOT, temporary_workdir
from bench.harness import lane_settings as _settings
from bench.harness import machine as _machine
from bench.harness import percentile as _p
from bench.locomo_texts import DATA, FALLBACK_TEXTS, T0
from bench.locomo_texts import utterances as _texts
from bench.plots import Panel, save_line_panels

_BATCH = 5000
# The turns of a long session the bulk fill folds into its state (see fill()).
_FOLD_LAST = 5000
_REPLIES = ["Noted.", "That sounds lovely!", "Got it, thanks for telling me.", "Oh, nice."]

# Bars of issue 5.
BAR_P50, BAR_P99 = 1.5, 3.0
BAR_FLAT = 1.3
BAR_HYDRATE_MS = 20.0
BAR_PACKET_MS = 5.0
BAR_RSS_MB = 200.0
BAR_CHECKPOINT = 1.2  # checkpoint bytes at the largest history within 1.2x of 100 turns

PLOT = ROOT / "docs" / "flat_in_history.png"


# -- helpers -------------------------------------------------------------------------------------


def _med(values: list[float]) -> float:
    return statistics.median(values)


def _ok(passed: bool) -> str:
    return "pass" if passed else "**miss**"


class TrivialEngine:
    """A reply engine that answers at once: the lane is measured, not a model."""

    def __init__(self) -> None:
        self.calls = 0

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        self.calls += 1
        return Reply(text=_REPLIES[self.calls % len(_REPLIES)], intent="chat")


class Messages:
    """Realistic short messages of one chat, each with a new Telegram update id.

    ``wants_reply=False``: messages the bot keeps without answering (most group talk).
    """

    def __init__(
        self, texts: list[str], chat_id: int, first_update: int, *, wants_reply: bool = True
    ) -> None:
        self.texts = [t for t in texts if len(t) < 200] or FALLBACK_TEXTS
        self.wants_reply = wants_reply
        self.chat_id = chat_id
        self.update = first_update
        self.i = 0

    def next(self) -> InboundMessage:
        self.i += 1
        self.update += 1
        return InboundMessage(
            chat_id=self.chat_id,
            text=self.texts[(self.i * 7) % len(self.texts)],
            user_id=self.chat_id,
            speaker="Ada",
            update_id=self.update,
            message_id=self.update,
            wants_reply=self.wants_reply,
        )


async def _timed_turns(lane: Any, messages: Messages, engine: TrivialEngine, n: int) -> list[float]:
    out = []
    for _ in range(n):
        message = messages.next()
        began = time.perf_counter()
        await lane.on_turn(message, engine)
        out.append((time.perf_counter() - began) * 1000)
    return out


async def fill(
    db: Database,
    settings: Settings,
    sessions: list[tuple[int, int]],
    texts: list[str],
    *,
    fold_last: int | None = None,
) -> None:
    """Bulk-insert ``(chat_id, turns)`` sessions through the store, in big transactions.

    Every turn goes through the real state fold (the state rules ``settings`` describe, as the
    lane's) and the summary chain,
    so the stored state and chain are what ``on_turn`` would have left; the ``sessions`` row is
    saved with each batch. Turns are delivered, without update ids. With ``fold_last``, only a
    session's last that many turns are folded (the turns before are stored alone): the
    state's lists are capped and the chain keeps ``AGENT_SUMMARY_RETENTION`` versions, so a
    longer fold ends in a state of the same size, and the fold is most of a fill's time.
    """
    store = SqliteConversationStore()
    rules, chain = state_manager(settings), stores_for(settings, db).summaries
    turns_of = dict(sessions)
    work: list[tuple[int, int, int]] = []  # chat, first seq, count
    for chat_id, turns in sessions:
        for first in range(0, turns, _BATCH):
            work.append((chat_id, first, min(_BATCH, turns - first)))
    states: dict[int, SessionState] = {}
    pending: list[tuple[int, int, int]] = []
    size = 0

    async def flush(items: list[tuple[int, int, int]]) -> None:
        async def tx_work(tx: Any) -> None:
            for chat_id, first, count in items:
                if first == 0:
                    sid = ids.session_id()
                    await store.create_session(
                        tx, session_id=sid, chat_id=chat_id, chat_type="private",
                        user_id=chat_id, title="Ada", now=T0,
                    )  # fmt: skip
                    states[chat_id] = SessionState(session_id=sid, chat_type="private")
                state = states[chat_id]
                when = T0
                for seq in range(first + 1, first + count + 1):
                    when = T0 + timedelta(minutes=seq)
                    turn = ConversationTurn(
                        turn_id=ids.turn_id(),
                        session_id=state.session_id,
                        seq=seq,
                        user_text=texts[(seq + chat_id) % len(texts)],
                        assistant_text=_REPLIES[seq % len(_REPLIES)],
                        intent="chat",
                        created_at=when,
                        status="delivered",
                        user_id=chat_id,
                        speaker="Ada",
                        reply_message_id=seq,
                        delivered_at=when,
                    )
                    await store.append_turn(tx, turn)
                    if fold_last is not None and seq <= turns_of[chat_id] - fold_last:
                        # Not folded: the fold of the last turns starts after it.
                        state = state.model_copy(update={"turn_count": seq})
                        continue
                    after = rules.apply(state, turn)
                    await write_summary_version(tx, chain, state, after, now=when)
                    state = after
                states[chat_id] = state
                await store.save_state(tx, state, last_seq=first + count, now=when)

        await db.write(tx_work)

    for item in work:
        pending.append(item)
        size += item[2]
        if size >= _BATCH:
            await flush(pending)
            pending, size = [], 0
    if pending:
        await flush(pending)


def _file_bytes(*paths: Path) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


# -- 1. per-turn cost against the floor ----------------------------------------------------------


class Floor:
    """The physical floor, measured with plain syscalls and the stdlib sqlite3 (no threads)."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / "floor"
        self.dir.mkdir()
        self.log = os.open(self.dir / "append.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self.record = os.urandom(300).hex().encode()  # 600 bytes
        self.page = os.urandom(2048).hex().encode()  # 4 KB
        self.db = sqlite3.connect(self.dir / "floor.db", isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = FULL")
        self.db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")

    def append(self) -> None:
        os.write(self.log, self.record)
        os.fsync(self.log)

    def replace(self, name: str = "checkpoint.json") -> None:
        temp = self.dir / (name + ".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, self.page)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self.dir / name)
        dir_fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def commit(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO t (body) VALUES (?)", (self.record.decode(),))
        self.db.execute("COMMIT")

    def durable_turn(self) -> None:
        self.commit()
        self.replace()

    def close(self) -> None:
        os.close(self.log)
        self.db.close()


class TurnWork:
    """The CPU work every turn needs besides its I/O, timed alone (no I/O, no event loop).

    The state rules fold the turn into the session state, the state is serialised for the
    session row and the checkpoint for its file: what the lane computes per turn of a message
    kept without a reply, on the kept chat's own state.
    """

    def __init__(self, lane: Any, settings: Settings, chat_id: int, messages: Messages) -> None:
        sid = lane.session_id_for_chat(chat_id)
        snapshot = CheckpointWriter.parse(lane.inspector.checkpoint_bytes(sid), session_id=sid)
        self.states = state_manager(settings)
        self.snapshot = snapshot
        self.messages = messages

    def step(self) -> None:
        message = self.messages.next()
        state = self.snapshot.state
        turn = ConversationTurn(
            turn_id=ids.turn_id(),
            session_id=state.session_id,
            seq=state.turn_count + 1,
            user_text=message.text,
            created_at=T0,
            status="recorded",
            speaker=message.speaker,
            user_id=message.user_id,
        )
        after = self.states.apply(state, turn)
        dump_json(after)
        recent = (*self.snapshot.recent_turns[1:], turn)
        self.snapshot = self.snapshot.model_copy(
            update={"state": after, "recent_turns": recent, "turn_count": after.turn_count}
        )
        dump_json(self.snapshot, indent=True)


def _time_sync(fn: Callable[[], None], n: int) -> list[float]:
    out = []
    for _ in range(n):
        began = time.perf_counter()
        fn()
        out.append((time.perf_counter() - began) * 1000)
    return out


@contextlib.contextmanager
def _instrument(db: Database) -> Iterator[dict[str, float]]:
    """Wrap the steps of ``on_turn`` to add up where it spends time, while the block runs.

    The database's writes and reads (a turn's only ``read`` is its retrieval) are wrapped on
    ``db``, the instance the timed lane was built on; the checkpoint writer, the duplicate
    check and the packet's assembly through their classes for the block's length (only the
    timed lane runs then).
    """
    spans: dict[str, float] = defaultdict(float)
    undo: list[Callable[[], None]] = []

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)
        # Undone by putting back what the owner itself held, or by deleting the wrapper (an
        # instance's method, or one a class inherits, shows through again).
        restore = vars(owner).get(name)

        async def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                spans[label] += time.perf_counter() - began

        setattr(owner, name, timed)
        undo.append(
            (lambda: setattr(owner, name, restore))
            if restore is not None
            else (lambda: delattr(owner, name))
        )

    original_write = db.write

    async def write(work: Callable[[Any], Awaitable[Any]]) -> Any:
        async def inner(tx: Any) -> Any:
            began = time.perf_counter()
            try:
                return await work(tx)
            finally:
                spans["db: statements inside the transaction"] += time.perf_counter() - began

        began = time.perf_counter()
        try:
            return await original_write(inner)
        finally:
            spans["db: write() total"] += time.perf_counter() - began

    db.write = write  # type: ignore[method-assign]
    undo.append(lambda: delattr(db, "write"))
    wrap(db, "read", "packet build with retrieval")
    build = ConversationContextBuilder.build

    def timed_build(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return build(*args, **kwargs)
        finally:
            spans["packet build with retrieval"] += time.perf_counter() - began

    ConversationContextBuilder.build = timed_build  # type: ignore[method-assign]
    undo.append(lambda: setattr(ConversationContextBuilder, "build", build))
    wrap(CheckpointWriter, "write", "checkpoint: serialise + atomic replace")
    wrap(SqliteConversationStore, "turn_for_update", "duplicate check (turn_for_update, both)")
    try:
        yield spans
    finally:
        for restore in reversed(undo):
            restore()


async def per_turn(workdir: Path, texts: list[str], rounds: int, per_round: int) -> list[str]:
    floor = Floor(workdir)
    settings = {d: _settings(workdir, f"turn-{d}", d) for d in ("full", "process")}
    full_db = await open_database(settings["full"])
    lanes = {"full": build_lane(settings["full"], full_db)}
    lanes["process"] = await open_lane(settings["process"])
    engine = TrivialEngine()
    chats = {"full": Messages(texts, 11, 1_000_000), "process": Messages(texts, 12, 2_000_000)}
    # The same durable lane, a chat whose messages it keeps without a reply: no engine, no
    # retrieval, only what on_turn must do durably (plus the state rules).
    kept = Messages(texts, 13, 4_000_000, wants_reply=False)
    samples: dict[str, list[float]] = defaultdict(list)
    try:
        for lane in lanes.values():
            await lane.hydrate()
        for d, lane in lanes.items():  # warm up: the session exists, caches are hot
            await _timed_turns(lane, chats[d], engine, 20)
        await _timed_turns(lanes["full"], kept, engine, 20)
        for _ in range(20):
            floor.durable_turn()
            floor.append()
        more = Messages(texts, 13, 5_000_000)
        work = TurnWork(lanes["full"], settings["full"], kept.chat_id, more)
        for _ in range(rounds):
            samples["append"] += _time_sync(floor.append, per_round)
            samples["replace"] += _time_sync(floor.replace, per_round)
            samples["durable"] += _time_sync(floor.durable_turn, per_round)
            samples["commit"] += _time_sync(floor.commit, per_round)
            samples["work"] += _time_sync(work.step, per_round)
            pairs = zip(samples["durable"][-per_round:], samples["work"][-per_round:], strict=True)
            samples["work floor"] += [durable + cpu for durable, cpu in pairs]
            for d, lane in lanes.items():
                samples[d] += await _timed_turns(lane, chats[d], engine, per_round)
            samples["kept"] += await _timed_turns(lanes["full"], kept, engine, per_round)
        full_sid = lanes["full"].session_id_for_chat(11)
        assert full_sid is not None  # noqa: S101
        checkpoint = lanes["full"].inspector.checkpoint_path(full_sid).stat().st_size
        durable50, durable99 = _med(samples["durable"]), _p(samples["durable"], 0.99)
        full50, full99 = _med(samples["full"]), _p(samples["full"], 0.99)
        r50, r99 = full50 / durable50, full99 / durable99
        k50 = _med(samples["kept"]) / durable50
        k99 = _p(samples["kept"], 0.99) / durable99
        n = rounds * per_round

        def row(label: str, key: str, ratio: bool = False) -> str:
            v = samples[key]
            cells = f"| {label} | {_med(v):.2f} | {_p(v, 0.99):.2f} |"
            if ratio:
                cells += f" {_med(v) / durable50:.2f}x | {_p(v, 0.99) / durable99:.2f}x |"
            else:
                cells += " | |"
            return cells

        out = [
            "| what | p50 ms | p99 ms | p50 / durable floor | p99 / durable floor |",
            "|---|---:|---:|---:|---:|",
            row("floor: append 600 B + fsync", "append"),
            row("floor: atomic 4 KB replace (fsync file + dir)", "replace"),
            row("floor: SQLite commit (WAL, synchronous=FULL)", "commit"),
            row("**durable floor**: SQLite commit + atomic 4 KB replace", "durable"),
            row("state rules + serialising state and checkpoint (CPU only)", "work", ratio=True),
            row("**work floor**: durable floor + that CPU work", "work floor", ratio=True),
            row("`on_turn`, durability `full`", "full", ratio=True),
            row("`on_turn`, durability `process`", "process", ratio=True),
            row("`on_turn` of a message kept without a reply (`full`)", "kept", ratio=True),
            "",
            f"{n} samples of each, interleaved in {rounds} rounds of {per_round}; one private"
            f" chat per lane, LoCoMo utterances as messages, every message wants a reply (so"
            f" retrieval runs), except the last row: a third chat on the `full` lane whose"
            f" messages are kept without a reply (no engine, no packet, no retrieval), i.e."
            f" what `on_turn` must do durably plus the state rules. The `full` lane's"
            f" checkpoint file is {checkpoint:,} bytes. The *work floor* adds to each durable"
            f" floor sample the CPU work a turn of the kept chat needs besides its I/O, timed"
            f" alone in the same round (`TurnWork`: the state rules on that chat's state, the"
            f" state's JSON for the session row, the checkpoint's JSON): what a perfect"
            f" implementation of the same rules, with no event loop, no threads and no"
            f" indexing, would cost per turn. Its ratio to the durable floor is what is left of"
            f" the {BAR_P50}x bar for everything else.",
            "",
            "| bar | measured | |",
            "|---|---:|---|",
            f"| `on_turn` (`full`) p50 ≤ {BAR_P50}x durable floor | {r50:.2f}x"
            f" | {_ok(r50 <= BAR_P50)} |",
            f"| `on_turn` (`full`) p99 ≤ {BAR_P99}x durable floor | {r99:.2f}x"
            f" | {_ok(r99 <= BAR_P99)} |",
            f"| `on_turn` kept without a reply p50 ≤ {BAR_P50}x durable floor | {k50:.2f}x"
            f" | {_ok(k50 <= BAR_P50)} |",
            f"| `on_turn` kept without a reply p99 ≤ {BAR_P99}x durable floor | {k99:.2f}x"
            f" | {_ok(k99 <= BAR_P99)} |",
        ]
        if r50 > BAR_P50 or r99 > BAR_P99:
            out += ["", *await _where_time_goes(lanes["full"], full_db, chats["full"], engine, n)]
        return out
    finally:
        floor.close()
        for lane in lanes.values():
            await lane.shutdown()


async def _where_time_goes(
    lane: Any, db: Database, messages: Messages, engine: TrivialEngine, n: int
) -> list[str]:
    with _instrument(db) as spans:
        return await _profiled(lane, messages, engine, n, spans)


async def _profiled(
    lane: Any, messages: Messages, engine: TrivialEngine, n: int, spans: dict[str, float]
) -> list[str]:
    profiler: Any = None
    with contextlib.suppress(ImportError):
        from pyinstrument import Profiler

        profiler = Profiler(async_mode="enabled", interval=0.0005)
    if profiler is not None:
        profiler.start()
    began = time.perf_counter()
    await _timed_turns(lane, messages, engine, n)
    total = time.perf_counter() - began
    if profiler is not None:
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False), file=sys.stderr)
    out = [
        f"Where the time of `on_turn` (`full`) goes ({n} more turns of the same chat, each"
        f" step timed by wrapping it, under the profiler, so slower than"
        f" above; mean ms per turn; rows nest as indented):",
        "",
        "| step | ms / turn | share |",
        "|---|---:|---:|",
        f"| on_turn total | {total / n * 1000:.2f} | 100% |",
    ]
    order = [
        ("duplicate check (turn_for_update, both)", ""),
        ("packet build with retrieval", ""),
        ("db: write() total", ""),
        ("db: statements inside the transaction", "&nbsp;&nbsp;"),
        ("checkpoint: serialise + atomic replace", ""),
    ]
    for label, indent in order:
        spent = spans.get(label, 0.0)
        out.append(f"| {indent}{label} | {spent / n * 1000:.2f} | {spent / total:.0%} |")
    out += [
        "",
        "`db: write() total` is the hand-over to the writer task, the transaction in"
        " aiosqlite's thread (every statement a thread hop) and the fsync of the commit; the"
        " duplicate check runs once on the reader before the engine and once inside the"
        " transaction (counted in both rows)."
        + (" The pyinstrument profile is printed on stderr." if profiler is not None else ""),
    ]
    return out


# -- 2. flat in history --------------------------------------------------------------------------


async def flat(
    workdir: Path, texts: list[str], sizes: list[int], window: int, repeats: int
) -> tuple[list[str], dict[int, dict[str, float]]]:
    engine = TrivialEngine()
    empty = workdir / "empty"
    lane = await open_lane(_settings(workdir, "empty", "process"))
    await lane.shutdown()
    empty_db = _file_bytes(empty.with_suffix(".db"))
    settings: dict[int, Any] = {}
    filled: dict[int, float] = {}
    for size in sizes:
        settings[size] = _settings(workdir, f"flat-{size}", "full")
        filling = settings[size].model_copy(update={"durability": "process"})
        db = await open_database(filling)
        lane = build_lane(filling, db)
        began = time.perf_counter()
        await fill(db, filling, [(21, size)], texts, fold_last=_FOLD_LAST)
        filled[size] = time.perf_counter() - began
        await lane.hydrate()  # writes the checkpoint
        await lane.shutdown()
    # The sizes take turns, round by round: a machine that slows down for a while slows every
    # size down, and the ratios between sizes hold.
    samples: dict[int, dict[str, list[float]]] = {
        size: {key: [] for key in ("turn", "packet", "turn0", "packet0", "hydrate", "open")}
        for size in sizes
    }
    messages = {size: Messages(texts, 21, 3_000_000) for size in sizes}
    questions = {size: Messages(texts, 21, 0) for size in sizes}
    checkpoint: dict[int, int] = {}
    for _ in range(repeats):
        for size in sizes:
            got = samples[size]
            began = time.perf_counter()
            lane = await open_lane(settings[size])
            opened = time.perf_counter()
            report = await lane.hydrate()
            done = time.perf_counter()
            assert report.sessions == 1, report  # noqa: S101
            assert not report.rebuilt, report.rebuilt  # noqa: S101
            got["hydrate"].append((done - opened) * 1000)
            got["open"].append((done - began) * 1000)
            await _timed_turns(lane, messages[size], engine, 2)  # warm the new connections
            # The first turns after the start (keys ...0), then as many of a running bot.
            for suffix in ("0", ""):
                for _ in range(window // repeats):
                    got["turn" + suffix] += await _timed_turns(lane, messages[size], engine, 1)
                    text = questions[size].next().text
                    began = time.perf_counter()
                    await lane.inspector.context(21, text)
                    got["packet" + suffix].append((time.perf_counter() - began) * 1000)
            sid = lane.session_id_for_chat(21)
            assert sid is not None  # noqa: S101
            checkpoint[size] = lane.inspector.checkpoint_path(sid).stat().st_size
            await lane.shutdown()
    results: dict[int, dict[str, float]] = {}
    for size in sizes:
        got, db = samples[size], settings[size].db_path
        db_bytes = _file_bytes(db, Path(f"{db}-wal")) - empty_db
        results[size] = {
            "turn50": _med(got["turn"]),
            "turn99": _p(got["turn"], 0.99),
            "packet50": _med(got["packet"]),
            "packet99": _p(got["packet"], 0.99),
            "turn50_start": _med(got["turn0"]),
            "packet50_start": _med(got["packet0"]),
            "hyd50": _med(got["hydrate"]),
            "hyd99": max(got["hydrate"]),
            "open50": _med(got["open"]),
            "db_per_turn": db_bytes / (size + repeats * (2 * (window // repeats) + 2)),
            "checkpoint": checkpoint[size],
            "fill_s": filled[size],
        }
        print(f"flat {size:,}: {results[size]}", file=sys.stderr)
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            path.unlink(missing_ok=True)
    small, big = results[sizes[0]], results[sizes[-1]]
    bars: list[tuple[str, float, float]] = []  # (what, measured, bar)
    for key, what in (("turn50", "`on_turn` p50"), ("turn99", "`on_turn` p99"),
                      ("packet50", "packet build p50"), ("hyd50", "hydrate p50")):  # fmt: skip
        bars.append((f"{what} at {sizes[-1]:,} within {BAR_FLAT}x of {sizes[0]:,}",
                     big[key] / small[key], BAR_FLAT))  # fmt: skip
    for key, what in (("turn50", "`on_turn` p50"), ("packet50", "packet build p50")):
        worst = max(sizes, key=lambda size: results[size][key])
        bars.append((f"{what}: the largest of all sizes ({worst:,}) within {BAR_FLAT}x of"
                     f" {sizes[0]:,}", results[worst][key] / small[key], BAR_FLAT))  # fmt: skip
    out = [
        "| turns in the session | `on_turn` p50 ms | `on_turn` p99 ms | packet build p50 ms"
        " | packet build p99 ms | just started: `on_turn` p50 ms | just started: packet build"
        " p50 ms | hydrate p50 ms | hydrate max ms | open + hydrate p50 ms | bulk fill s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {s:,} | {v['turn50']:.2f} | {v['turn99']:.2f} | {v['packet50']:.2f}"
            f" | {v['packet99']:.2f} | {v['turn50_start']:.2f} | {v['packet50_start']:.2f}"
            f" | {v['hyd50']:.2f} | {v['hyd99']:.2f} | {v['open50']:.2f} | {v['fill_s']:.1f} |"
            for s, v in results.items()
        ),
        "",
        f"Durability `full`. At each size: one private session bulk-filled through the store"
        f" (transactions of {_BATCH:,} turns; the real state fold and summary chain over its"
        f" last {_FOLD_LAST:,} turns, every turn of a shorter one: the state's lists are"
        f" capped, so it is the state a longer fold leaves, in size). Then {repeats} rounds;"
        f" in each, every size in turn gets a cold start of a lane (`open_lane` + `hydrate`,"
        f" the checkpoint present; the OS page cache is warm, so this is a process restart, not"
        f" a machine boot), 2 untimed turns, then twice {window // repeats} timed `on_turn`,"
        f" each followed by a timed packet build with retrieval for another message"
        f" (`MemoryInspector.context`). The first {window // repeats} are the *just started*"
        f" columns; the other columns and the bars are the second {window // repeats}, a bot"
        f" that has been running. Right after a start, every packet counts in how many turns"
        f" each word of its message occurs (the counts are kept between packets, in memory:"
        f" `agent/memory/storage/word_frequencies.py`), and counting a word said throughout a"
        f" long history reads"
        f" up to 1,001 entries of its posting list in every segment of the index. The sizes"
        f" take turns so that a machine slowing down for a while slows all of them.",
        "",
        "| bar | measured | |",
        "|---|---:|---|",
        *(f"| {what} | {value:.2f}x | {_ok(value <= bar)} |" for what, value, bar in bars),
        f"| packet build with retrieval p50 at {sizes[-1]:,} < {BAR_PACKET_MS:.0f} ms"
        f" | {big['packet50']:.2f} ms | {_ok(big['packet50'] < BAR_PACKET_MS)} |",
        f"| hydrate of a {sizes[-1]:,}-turn session < {BAR_HYDRATE_MS:.0f} ms (max of"
        f" {repeats}) | {big['hyd99']:.2f} ms | {_ok(big['hyd99'] < BAR_HYDRATE_MS)} |",
    ]
    if sizes[-1] < 100_000:
        out.append("")
        out.append(f"(`--quick`: the bars are for 100,000 turns; this run stops at {sizes[-1]:,}.)")
    return out, results


def _plot_flat(results: dict[int, dict[str, float]]) -> Path | None:
    small = min(results)

    def lines(*keys: tuple[str, str]) -> dict[str, list[tuple[float, float]]]:
        return {label: [(size, got[key]) for size, got in results.items()] for label, key in keys}

    def flat(key: str) -> tuple[str, float]:
        return f"bar: p50 within {BAR_FLAT:g}x of {small:,} turns", BAR_FLAT * results[small][key]

    return save_line_panels(
        PLOT,
        [
            Panel(
                "on_turn, durability full",
                "ms",
                lines(("p50", "turn50"), ("p99", "turn99")),
                bars=(flat("turn50"),),
            ),
            Panel(
                "Packet build with retrieval",
                "ms",
                lines(
                    ("p50", "packet50"), ("p99", "packet99"), ("p50 just started", "packet50_start")
                ),
                bars=(flat("packet50"), (f"bar: p50 < {BAR_PACKET_MS:g} ms", BAR_PACKET_MS)),
            ),
            Panel(
                "Hydration of the session (cold start)",
                "ms",
                lines(("p50", "hyd50"), ("max", "hyd99")),
                bars=(flat("hyd50"), (f"bar: max < {BAR_HYDRATE_MS:g} ms", BAR_HYDRATE_MS)),
            ),
        ],
        xlabel="turns in the session",
        log_x=True,
        from_zero=True,
    )


# -- 3. memory and disk --------------------------------------------------------------------------


def _status_kb(field: str) -> int:
    """A memory figure of this process from ``/proc/self/status`` (``VmRSS``, ``VmHWM``), KB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


async def rss_child(db_path: str, checkpoint_dir: str, trace: bool = False) -> None:
    """In a fresh process: hydrate every open session and print the memory it takes, as JSON.

    With ``trace``, tracemalloc runs during hydration and the JSON also says which source files
    allocated what is still held afterwards (slower: not used for the figures).
    """
    if trace:
        import tracemalloc

        tracemalloc.start(1)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        db_path=Path(db_path),
        checkpoint_dir=Path(checkpoint_dir),
        durability="full",
    )
    before = _status_kb("VmRSS")
    lane = await open_lane(settings)
    began = time.perf_counter()
    report = await lane.hydrate()
    elapsed = time.perf_counter() - began
    after = _status_kb("VmRSS")
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would report the peak of
    # the benchmark process this child was forked from.
    peak = _status_kb("VmHWM")
    held: list[tuple[str, int]] = []
    if trace:
        import gc

        gc.collect()
        stats = tracemalloc.take_snapshot().statistics("filename")
        held = [(str(s.traceback[0].filename), s.size) for s in stats[:6]]
    print(
        json.dumps(
            {
                "sessions": report.sessions,
                "rebuilt": len(report.rebuilt),
                "before_kb": before,
                "after_kb": after,
                "peak_kb": peak,
                "hydrate_s": elapsed,
                "held": held,
            }
        ),
        flush=True,
    )
    os._exit(0)  # no shutdown: it would rewrite every checkpoint, and a kill is safe anyway


async def _run_child(settings: Settings, *, trace: bool) -> dict[str, Any]:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.lane_cost", "--rss-child",
        str(settings.db_path), str(settings.checkpoint_dir), *(["trace"] if trace else []),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, _ = await child.communicate()
    got: dict[str, Any] = json.loads(stdout.decode().strip().splitlines()[-1])
    return got


async def memory(
    workdir: Path, texts: list[str], sessions: int, turns_each: int, flat_results: dict[int, Any]
) -> list[str]:
    settings = _settings(workdir, "rss", "process")
    db = await open_database(settings)
    lane = build_lane(settings, db)
    began = time.perf_counter()
    await fill(db, settings, [(100_000 + i, turns_each) for i in range(sessions)], texts)
    filled = time.perf_counter() - began
    await lane.hydrate()  # writes every checkpoint (no fsync: durability process)
    await lane.shutdown()
    got = await _run_child(settings, trace=False)
    total_turns = sessions * turns_each
    db_bytes = _file_bytes(settings.db_path, Path(f"{settings.db_path}-wal"))
    checkpoints = list(settings.checkpoint_dir.glob("*.json"))
    ck_mean = sum(p.stat().st_size for p in checkpoints) / max(1, len(checkpoints))
    rss_mb = got["after_kb"] / 1024
    per_session = (got["after_kb"] - got["before_kb"]) / max(1, got["sessions"])
    sizes = sorted(flat_results)
    small, big = flat_results[sizes[0]], flat_results[sizes[-1]]
    ck_ratio = big["checkpoint"] / small["checkpoint"]
    tenth = flat_results[sizes[-2]] if len(sizes) > 1 else small
    ck_bounded = big["checkpoint"] / tenth["checkpoint"]
    print(f"memory: {got} fill {filled:.1f} s", file=sys.stderr)
    why: list[str] = []
    if rss_mb >= BAR_RSS_MB:
        traced = await _run_child(settings, trace=True)
        print(f"memory, traced: {traced}", file=sys.stderr)
        why = [
            "",
            "Where the memory goes (a second child with tracemalloc; Python allocations still"
            " held after hydration, by the file that allocated them, per hydrated session):",
            "",
            "| allocated in | MB | KB / session |",
            "|---|---:|---:|",
            *(
                f"| `{_short(name)}` | {size / 2**20:.1f} | {size / 1024 / sessions:.1f} |"
                for name, size in traced["held"]
            ),
        ]
    return (
        [
            f"A fresh process (`python -m bench.lane_cost --rss-child`) opens a database of"
            f" {sessions:,} open private sessions of {turns_each} turns each"
            f" ({total_turns:,} turns,"
            f" bulk-filled in {filled:.0f} s) and hydrates them all (checkpoints present,"
            f" {got['rebuilt']} rebuilt) in {got['hydrate_s']:.2f} s.",
            "",
            "| figure | value |",
            "|---|---:|",
            f"| VmRSS after imports, before `open_lane` | {got['before_kb'] / 1024:.1f} MB |",
            f"| VmRSS with {got['sessions']:,} sessions hydrated | {rss_mb:.1f} MB |",
            f"| peak during hydration (VmHWM) | {got['peak_kb'] / 1024:.1f} MB |",
            f"| per hydrated session | {per_session:.1f} KB |",
            f"| database bytes per turn, {sessions:,} sessions x {turns_each}"
            f" | {db_bytes / total_turns:,.0f} |",
            f"| checkpoint bytes per session, {turns_each} turns | {ck_mean:,.0f} |",
            *(
                f"| database bytes per turn, one session of {s:,} turns"
                f" | {flat_results[s]['db_per_turn']:,.0f} |"
                for s in sizes
            ),
            *(
                f"| checkpoint bytes, one session of {s:,} turns"
                f" | {flat_results[s]['checkpoint']:,} |"
                for s in sizes
            ),
            "",
            "Database bytes include the WAL and every index (FTS5 included); one session's are"
            " net of an empty database.",
            "",
            "| bar | measured | |",
            "|---|---:|---|",
            f"| VmRSS with {got['sessions']:,} sessions hydrated < {BAR_RSS_MB:.0f} MB"
            f" | {rss_mb:.1f} MB | {_ok(rss_mb < BAR_RSS_MB)} |",
            f"| checkpoint at {sizes[-1]:,} turns within {BAR_CHECKPOINT}x of {sizes[0]:,}"
            f" (independent of history) | {ck_ratio:.2f}x | {_ok(ck_ratio <= BAR_CHECKPOINT)} |",
            f"| checkpoint at {sizes[-1]:,} turns within {BAR_CHECKPOINT}x of {sizes[-2]:,}"
            f" (bounded) | {ck_bounded:.2f}x | {_ok(ck_bounded <= BAR_CHECKPOINT)} |",
            "",
            "The checkpoint holds the state and the last turns; the state's lists are capped"
            " (`MAX_FACTS` = `MAX_OPEN_LOOPS` = 50, `MAX_CLOSED_LOOPS` = 10 in"
            " `conversation_state_manager.py`), so the file grows with the history until the caps"
            " fill (a few thousand turns of LoCoMo talk) and is flat after: bounded, not"
            " independent of history length.",
        ]
        + (
            [
                "",
                f"(`--quick`: the memory bar is for 10,000 sessions; this run has {sessions:,}.)",
            ]
            if sessions < 10_000
            else []
        )
        + why
    )


def _short(filename: str) -> str:
    parts = Path(filename).parts
    for anchor in ("site-packages", "main", "lib"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) + 1 :])
    return filename


# -- main ----------------------------------------------------------------------------------------


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="a smaller run, under a minute, printed only"
    )
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--data", type=Path, default=DATA, help="the LoCoMo JSON file")
    args = parser.parse_args(argv)
    logging.getLogger("agent").setLevel(logging.ERROR)  # "checkpoint missing": expected here
    texts = _texts(args.data)
    command = "python -m bench" + (" --quick" if args.quick else "")
    if args.quick:
        rounds, per_round, sizes, window, repeats = 5, 20, [100, 1_000, 3_000], 50, 5
        sessions, turns_each = 1_000, 12
    else:
        rounds, per_round, sizes, window, repeats = 10, 50, [100, 1_000, 10_000, 100_000], 200, 10
        sessions, turns_each = 10_000, 12
    started = time.perf_counter()
    with temporary_workdir(".bench-lane-") as workdir:
        machine = _machine(workdir)
        print(f"machine: {machine}; workdir {workdir}", file=sys.stderr)
        cost = await per_turn(workdir, texts, rounds, per_round)
        print("\n".join(cost), file=sys.stderr)
        history, flat_results = await flat(workdir, texts, sizes, window, repeats)
        print("\n".join(history), file=sys.stderr)
        mem = await memory(workdir, texts, sessions, turns_each, flat_results)
    elapsed = time.perf_counter() - started
    write = not (args.no_write or args.quick)  # the file shows full runs only
    if write and (plot := _plot_flat(flat_results)) is not None:
        history += ["", f"![cost against the session's history]({plot.relative_to(ROOT)})"]
    head = [
        f"`{command}` ({elapsed:.0f} s for this part) on {machine}; the temporary"
        f" directory is next to the repository, on the same filesystem.",
        "",
    ]
    sections = [
        "\n".join(["## Per-turn cost", "", *head, *cost]) + "\n",
        "\n".join(["## Flat in history", "", *head, *history]) + "\n",
        "\n".join(["## Memory and disk", "", *head, *mem]) + "\n",
    ]
    for section in sections:
        print(section)
        if write:
            write_section(section)
    print(f"suite: {elapsed:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--rss-child":
        asyncio.run(rss_child(sys.argv[2], sys.argv[3], trace=sys.argv[4:] == ["trace"]))
    raise SystemExit(asyncio.run(main()))
