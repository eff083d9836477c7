"""Crash test of the memory lane (issue 2): SIGKILL a real worker over and over, then check.

Each cycle starts ``tests/lane_crash_worker.py`` in a subprocess on the same database, checkpoint
directory and acknowledgment log, lets it stream turns, and kills it with SIGKILL at a random
moment: during start-up and hydration, in the middle of the turn stream, or the instant a
checkpoint write is seen (a temp file, or a journal growing; with large messages, so that
checkpoint writes take a while). After
each kill a fresh lane is opened in this process and the invariants of DESIGN.md section 3 are
checked before and after ``hydrate()``. Some updates are edits of earlier messages
(:meth:`ConversationLane.on_edit`): the checks hold with them too, and each edit is applied
exactly once, in order, with the text it replaced kept.

The random choices come from ``random.Random(seed)``; the seed is in every failure message and
``CRASH_SEED=<seed>`` replays the same choices (the timing of the kills still varies).
The test runs on both backends: the SQLite file with checkpoint files, and PostgreSQL (marked
``postgres``: a fresh schema of the ``postgres_url`` fixture, handed to every worker as
``--database-url``) with checkpoints as rows; the checks read checkpoints through the lane's
checkpoint store either way, and their few SQL spellings that differ are :class:`Dialect`'s.
``CRASH_KILLS`` sets how many SIGKILLs must land on a worker that is turning (default 50 on
SQLite, 20 on PostgreSQL, where each cycle is slower);
``CRASH_MODE=stream`` or ``CRASH_MODE=checkpoint`` makes every cycle kill that way (the
latter aims every kill at a checkpoint write).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pytest

from agent.app.wiring import build_lane, open_database, state_manager
from agent.db import AnyDatabase, Database
from agent.errors import CheckpointError
from agent.memory import ConversationLane, ConversationTurn, SessionState
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.schemas import ConversationCheckpointSnapshot
from tests.lane_crash_worker import (
    REPLY_MESSAGE_BASE,
    Update,
    crash_settings,
    database_url,
    message_text,
    read_log,
)

WORKER = Path(__file__).with_name("lane_crash_worker.py")
KILLS = int(os.environ.get("CRASH_KILLS", "50"))
# On PostgreSQL each cycle also opens pools and checks over the network: fewer by default.
POSTGRES_KILLS = int(os.environ.get("CRASH_KILLS", "20"))
SEED = int(os.environ.get("CRASH_SEED", str(random.SystemRandom().randrange(2**32))))
CRASH_MODE = os.environ.get("CRASH_MODE")
MODES = ("start", "stream", "checkpoint")
CHATS = 4
# How long a worker may take to import and hydrate before the test gives up on it.
START_TIMEOUT = 60.0
# The crash lane's state rules (its summary settings; the paths play no part in them).
STATES = state_manager(crash_settings(Path("memory.db"), Path("checkpoints")))
_TEMP_PREFIX = ".tmp-"


@dataclass
class CrashStats:
    """What the kills hit, counted over the whole run (printed with every failure)."""

    cycles: int = 0
    kills: int = 0  # SIGKILLs that landed on a running worker
    killed_starting: int = 0  # ... before the worker said "ready" (opening, migrating, hydrating)
    killed_turning: int = 0  # ... after the test saw "ready": while it was turning
    killed_mid_stream: int = 0  # ... after it had acknowledged turns in that cycle
    killed_in_checkpoint: int = 0  # ... with a checkpoint temp file on disk at the kill
    clean_exits: int = 0  # workers that ran out of --count and shut down before the kill
    acks: int = 0  # acknowledgments in the log (resends included)
    dup_acks: int = 0  # ... that the lane answered as a duplicate (I3)
    edit_acks: int = 0  # acknowledgments of edits (resends included)
    edits_applied: int = 0  # edits in the turn log's edit history
    torn_temp_files: int = 0  # checkpoint temp files a kill left behind, seen before hydrate
    checkpoints_behind: int = 0  # checkpoints behind the log before hydrate (kill after COMMIT)
    # updates committed whose acknowledgment a kill prevented (killed after COMMIT)
    committed_unacked: set[int] = field(default_factory=set)
    rebuilt_at_hydrate: int = 0  # checkpoints hydrate() rewrote from the database
    worker_seconds: float = 0.0  # wall time from spawning workers to reaping them
    check_seconds: float = 0.0  # wall time of the checks after the kills

    def render(self) -> str:
        """Return the counters as one line."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return ", ".join(
            f"{name}={len(value) if isinstance(value, set) else round(value, 1)}"
            for name, value in values.items()
        )


@dataclass(frozen=True)
class Paths:
    """The files one crash run shares between its workers and its checker."""

    db: Path
    checkpoints: Path
    log: Path
    stderr: Path
    url: str | None = None  # a PostgreSQL database instead of the file ``db``


@dataclass
class Verified:
    """What earlier cycles already checked; the turn log is append-only, so it stays true.

    Edits change turns after the fact: a fold is kept with the session's edit count and used
    only while the count is the same; edited turns are checked at every restart.

    Attributes:
        texts: updates whose turn text was compared with the message sent.
        files: checkpoint file name -> its base and journal bytes already checked against the
            log (the bot crash test's checker).
        snapshots: session id -> checkpoint already checked against the log (read through
            the lane's checkpoint store: files on SQLite, rows on PostgreSQL).
        folds: session id -> (seq, edits, state folded from its log up to seq with that many
            edits), to fold on from.
    """

    texts: set[int] = field(default_factory=set)
    files: dict[str, tuple[bytes, bytes]] = field(default_factory=dict)
    snapshots: dict[str, ConversationCheckpointSnapshot] = field(default_factory=dict)
    folds: dict[str, tuple[int, int, SessionState]] = field(default_factory=dict)


# -- the checker ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    """The few SQL spellings of the checks that differ between SQLite and PostgreSQL.

    Attributes:
        edit_order: the column that orders ``turn_edits`` oldest first.
        summary_version: the integer ``summary_version`` of ``s.state`` (a JSON text).
        rolling_summary: the text of the state's ``rolling_summary``, a row of
            ``conversation_session_parts`` once saved non-empty (schema.sql 0019).
        in_ids: ``column`` + this is true when the column is in the list of the parameter.
        is_not: NULL-safe inequality.
    """

    edit_order: str
    summary_version: str
    rolling_summary: str
    in_ids: str
    is_not: str
    sqlite: bool

    @staticmethod
    def of(db: AnyDatabase) -> Dialect:
        """Return the dialect of ``db``'s backend."""
        return _SQLITE if isinstance(db, Database) else _POSTGRES

    def ids(self, values: set[int]) -> object:
        """Return the parameter of :attr:`in_ids` for ``values``."""
        return json.dumps(sorted(values)) if self.sqlite else sorted(values)


_SQLITE = Dialect(
    edit_order="rowid",
    summary_version="json_extract(s.state, '$.summary_version')",
    rolling_summary="coalesce((SELECT json_extract(p.value, '$') FROM conversation_session_parts"
    " AS p WHERE p.session_id = s.session_id AND p.name = 'rolling_summary'), '')",
    in_ids=" IN (SELECT value FROM json_each(?))",
    is_not="IS NOT",
    sqlite=True,
)
_POSTGRES = Dialect(
    edit_order="edit_id",
    summary_version="(s.state::jsonb ->> 'summary_version')::integer",
    rolling_summary="coalesce((SELECT p.value::jsonb #>> '{}' FROM conversation_session_parts"
    " AS p WHERE p.session_id = s.session_id AND p.name = 'rolling_summary'), '')",
    in_ids=" = ANY(?)",
    is_not="IS DISTINCT FROM",
    sqlite=False,
)


async def _turns_between(
    lane: ConversationLane, session_id: str, after: int, upto: int
) -> AsyncIterator[ConversationTurn]:
    async for turn in lane.inspector.turns(session_id):
        if turn.seq > upto:
            return
        if turn.seq > after:
            yield turn


async def edit_count(lane: ConversationLane, db: AnyDatabase, session_id: str) -> int:
    """Return how many edits the session's turns have had."""
    (count,) = await db.fetchone(
        "SELECT COUNT(*) FROM turn_edits WHERE session_id = ?", (session_id,)
    ) or (0,)
    return int(count)


async def state_at(
    lane: ConversationLane,
    db: AnyDatabase,
    session_id: str,
    seq: int,
    verified: Verified,
    *,
    unedit: tuple[int, str] | None = None,
    states: ConversationStateManager = STATES,
) -> SessionState:
    """Fold a session's turn log up to ``seq``: the state a checkpoint at ``seq`` must hold.

    Folds on from the last state this test rebuilt for the session when that is not past
    ``seq`` and no edit came since (the same fold, :meth:`ConversationStateManager.apply`,
    turn by turn). ``unedit`` = (seq, text) folds with that turn's text as it was before its
    last edit, from the start. ``states`` are the state rules of the lane checked.
    """
    session = await lane.inspector.session(session_id)
    assert session is not None, f"no session {session_id}"
    start = SessionState(session_id=session_id, chat_type=session.chat_type)
    edits = await edit_count(lane, db, session_id)
    done, then, state = verified.folds.get(session_id, (0, edits, start))
    if done > seq or then != edits or unedit is not None:
        done, state = 0, start
    async for turn in _turns_between(lane, session_id, done, seq):
        if unedit is not None and turn.seq == unedit[0]:
            turn = turn.model_copy(update={"user_text": unedit[1]})
        state = states.apply(state, turn)
    return state


async def last_edit(
    lane: ConversationLane, db: AnyDatabase, session_id: str
) -> tuple[int, str] | None:
    """Return (seq, text it replaced) of the session's latest edit, or ``None``."""
    row = await db.fetchone(
        "SELECT seq, previous_text FROM turn_edits WHERE session_id = ?"  # noqa: S608
        f" ORDER BY {Dialect.of(db).edit_order} DESC LIMIT 1",
        (session_id,),
    )
    return None if row is None else (int(row[0]), str(row[1]))


def temp_files(paths: Paths) -> list[Path]:
    """Return the checkpoint temp files in the directory (writes a kill interrupted)."""
    if not paths.checkpoints.is_dir():
        return []
    return [p for p in paths.checkpoints.iterdir() if p.name.startswith(_TEMP_PREFIX)]


async def check_checkpoints_before_hydrate(
    lane: ConversationLane, db: AnyDatabase, paths: Paths, verified: Verified, stats: CrashStats
) -> None:
    """I5 as a crash leaves things: every checkpoint parses, none is ahead, a behind one is an
    old state of the log (never a torn or invented one).

    Read through the lane's checkpoint store (files on SQLite, rows on PostgreSQL); where
    they are files, every ``*.json`` of the directory must be one it lists.
    """
    stats.torn_temp_files += len(temp_files(paths))
    ids = await lane.inspector.checkpoint_ids()
    if Dialect.of(db).sqlite:
        assert [p.stem for p in sorted(paths.checkpoints.glob("*.json"))] == ids, (
            "a checkpoint file that is not a session's"
        )
    for sid in ids:
        name = f"checkpoint of {sid}"
        try:
            snapshot = await lane.inspector.checkpoint(sid)
        except CheckpointError as exc:
            raise AssertionError(f"a kill left an unparseable checkpoint (I5): {exc}") from exc
        assert snapshot is not None, f"{name} listed but missing"
        session = await lane.inspector.session(snapshot.session_id)
        assert session is not None, f"{name}: checkpoint of a session the database lacks"
        assert snapshot.turn_count <= session.turn_count, (
            f"{name} is ahead of the database: turn {snapshot.turn_count} of "
            f"{session.turn_count}"
        )
        if snapshot.turn_count < session.turn_count:
            stats.checkpoints_behind += 1
        if verified.snapshots.get(sid) == snapshot:
            continue
        expected = await state_at(lane, db, snapshot.session_id, snapshot.turn_count, verified)
        if snapshot.state.log_view() != expected.log_view():
            # A kill between an edit's commit and its checkpoint leaves it one edit behind,
            # at the same turn: the log's state without that edit.
            unedit = await last_edit(lane, db, snapshot.session_id)
            assert unedit is not None, f"{name} is not the log's state at its turn"
            assert snapshot.turn_count == session.turn_count, (
                f"{name} at turn {snapshot.turn_count} is not the log's state at that turn"
            )
            before = await state_at(
                lane, db, snapshot.session_id, snapshot.turn_count, verified, unedit=unedit
            )
            assert snapshot.state.log_view() == before.log_view(), (
                f"{name} is neither the log's state nor the state before its last edit"
            )
            stats.checkpoints_behind += 1
        log_tail = await db.fetchall(
            "SELECT seq, turn_id FROM conversation_turns WHERE session_id = ? AND seq <= ?"
            " AND seq > ? ORDER BY seq",
            (
                snapshot.session_id,
                snapshot.turn_count,
                snapshot.turn_count - len(snapshot.recent_turns),
            ),
        )
        assert [(t.seq, t.turn_id) for t in snapshot.recent_turns] == [
            tuple(row) for row in log_tail
        ], f"{name}: recent turns are not the log's last turns at its count"
        verified.snapshots[sid] = snapshot


async def check_turn_log(
    lane: ConversationLane,
    db: AnyDatabase,
    records: list[dict[str, Any]],
    verified: Verified,
    stats: CrashStats,
) -> None:
    """I2 and I3: every acknowledged update is exactly one turn, the one the caller was told."""
    dialect = Dialect.of(db)
    duplicates = await db.fetchall(
        "SELECT bot_id, update_id, COUNT(*) AS n FROM conversation_turns"
        " WHERE update_id IS NOT NULL GROUP BY bot_id, update_id HAVING COUNT(*) > 1"
    )
    assert not duplicates, f"updates recorded twice: {[tuple(r) for r in duplicates]}"
    rows = await db.fetchall(
        "SELECT update_id, session_id, seq FROM conversation_turns WHERE bot_id = 0"
    )
    by_update = {row["update_id"]: (row["session_id"], row["seq"]) for row in rows}
    await check_edits(lane, db, records, stats)
    edited = {
        row[0]
        for row in await db.fetchall(
            "SELECT DISTINCT t.update_id FROM turn_edits JOIN conversation_turns AS t"
            " USING (session_id, seq)"
        )
    }
    acks = [r for r in records if r["ev"] == "ack" and r.get("edit_of") is None]
    for ack in acks:
        told = (ack["session_id"], ack["seq"])
        assert ack["update_id"] in by_update, f"acknowledged update lost: {ack}"
        assert by_update[ack["update_id"]] == told, (
            f"update {ack['update_id']} acknowledged as turn {told}, the log has "
            f"{by_update[ack['update_id']]}"
        )
    # The text of each newly acknowledged turn is the message that was sent.
    fresh = {a["update_id"]: a for a in acks if a["update_id"] not in verified.texts}
    if fresh:
        texts = await db.fetchall(
            "SELECT update_id, user_text FROM conversation_turns WHERE bot_id = 0"  # noqa: S608
            f" AND update_id{dialect.in_ids}",
            (dialect.ids(set(fresh)),),
        )
        for row in texts:
            if row["update_id"] in edited:
                continue  # check_edits compares it with its edits
            ack = fresh[row["update_id"]]
            update = Update(ack["update_id"], ack["chat_id"], ack["size"])
            assert row["user_text"] == message_text(update), f"wrong text for update {ack}"
        verified.texts.update(fresh)
    acked = {a["update_id"] for a in acks}
    attempted = {
        r["update_id"] for r in records if r["ev"] == "attempt" and r.get("edit_of") is None
    }
    stats.committed_unacked |= (attempted - acked) & by_update.keys()
    stats.acks = len(acks)
    stats.dup_acks = sum(1 for a in acks if a["dup"])
    # The sessions' counters match their logs: seqs 1..turn_count, no gap, nothing beyond.
    counters = await db.fetchall(
        "SELECT s.session_id, s.turn_count, s.last_seq, COUNT(t.seq) AS n,"
        " COALESCE(MAX(t.seq), 0) AS top FROM conversation_sessions AS s"
        " LEFT JOIN conversation_turns AS t USING (session_id) GROUP BY s.session_id"
    )
    for row in counters:
        assert row["turn_count"] == row["last_seq"] == row["n"] == row["top"], (
            f"session {row['session_id']}: counters {tuple(row)} do not match its turn log"
        )


async def check_edits(
    lane: ConversationLane, db: AnyDatabase, records: list[dict[str, Any]], stats: CrashStats
) -> None:
    """I2 and I3 for edits: every acknowledged edit is in its turn's edit history, applied once
    (one ``edited`` acknowledgment at most per edit update), and each edited turn's history
    is its message's texts in order: the original, then each edit's but the last, whose text
    the turn has."""
    acks = [r for r in records if r["ev"] == "ack" and r.get("edit_of") is not None]
    stats.edit_acks = len(acks)
    assert all(a["outcome"] in ("edited", "duplicate") for a in acks), (
        f"an edit of an acknowledged message was not applied: {[a['outcome'] for a in acks]}"
    )
    applied = [a["update_id"] for a in acks if a["outcome"] == "edited"]
    assert len(applied) == len(set(applied)), "an edit was applied twice (I3)"
    rows = await db.fetchall(
        "SELECT t.update_id AS message, t.user_text, e.update_id AS edit, e.previous_text"  # noqa: S608
        " FROM turn_edits AS e JOIN conversation_turns AS t USING (session_id, seq)"
        f" ORDER BY e.{Dialect.of(db).edit_order}"
    )
    stats.edits_applied = len(rows)
    in_history = {row["edit"] for row in rows}
    lost = {a["update_id"] for a in acks} - in_history
    assert not lost, f"acknowledged edits not in the edit history: {sorted(lost)}"
    sent = {
        int(r["update_id"]): Update(
            int(r["update_id"]), int(r["chat_id"]), int(r["size"]), r.get("edit_of")
        )
        for r in records
        if r["ev"] == "attempt"
    }
    histories: dict[int, list[Any]] = {}
    for row in rows:
        histories.setdefault(row["message"], []).append(row)
    for message, history in histories.items():
        texts = [message_text(sent[message])]
        texts += [message_text(sent[row["edit"]]) for row in history]
        assert [row["previous_text"] for row in history] == texts[:-1], (
            f"the edit history of message {message} is not its texts in order"
        )
        assert history[-1]["user_text"] == texts[-1], f"message {message} lost its last edit"


async def check_summary_chain(lane: ConversationLane, db: AnyDatabase) -> None:
    """I6 for the summary version chain: for every session, open or closed, the chain's latest
    extractive version is the one its state counts, with the state's rolling summary as text
    (never behind the log), and no version lies beyond it (never ahead)."""
    dialect = Dialect.of(db)
    version = dialect.summary_version
    desynced = await db.fetchall(
        f"SELECT s.session_id, {version} AS version"  # noqa: S608
        " FROM conversation_sessions AS s"
        " LEFT JOIN conversation_summaries AS c ON c.session_id = s.session_id"
        "  AND c.summarizer = 'extractive'"
        f"  AND c.version = {version}"
        f" WHERE ({version} > 0"
        f"        AND (c.text IS NULL OR c.text {dialect.is_not} {dialect.rolling_summary}))"
        "  OR EXISTS (SELECT 1 FROM conversation_summaries AS x"
        "             WHERE x.session_id = s.session_id AND x.summarizer = 'extractive'"
        f"             AND x.version > {version})"
    )
    assert not desynced, f"summary chain out of step with the state: {[tuple(r) for r in desynced]}"


async def check_deliveries(lane: ConversationLane, db: AnyDatabase, undelivered: list[str]) -> None:
    """I4 bookkeeping: hydrate() reports exactly the answered, unsent turns, and they are only
    the few in flight when the worker died (it sends the reported ones before anything else);
    every recorded delivery names the message the reply was sent as."""
    rows = await db.fetchall(
        "SELECT turn_id FROM conversation_turns WHERE status = 'answered' ORDER BY session_id, seq"
    )
    assert undelivered == [row["turn_id"] for row in rows], "hydrate() missed undelivered turns"
    assert len(undelivered) <= CHATS, f"{len(undelivered)} replies never delivered"
    (wrong,) = await db.fetchone(
        "SELECT COUNT(*) FROM conversation_turns WHERE status = 'delivered'"  # noqa: S608
        f" AND reply_message_id {Dialect.of(db).is_not} ? + update_id",
        (REPLY_MESSAGE_BASE,),
    ) or (0,)
    assert wrong == 0, f"{wrong} deliveries recorded on the wrong turn"


async def check_after_hydrate(
    lane: ConversationLane, db: AnyDatabase, paths: Paths, verified: Verified
) -> None:
    """I5 and I6 after a start: every open session's checkpoint is at the log's turn and holds
    the state rebuilt from the whole log, which is also the state in the sessions table."""
    assert not temp_files(paths), "hydrate() left checkpoint temp files behind"
    sessions = await lane.inspector.sessions(open_only=True)
    assert len(sessions) <= CHATS, f"{len(sessions)} open sessions for {CHATS} chats"
    for session in sessions:
        sid = session.session_id
        snapshot = await lane.inspector.checkpoint(sid)
        assert snapshot is not None, f"open session {sid} has no checkpoint after hydrate"
        assert snapshot.turn_count == session.turn_count == session.state.turn_count, (
            f"{sid}: checkpoint at turn {snapshot.turn_count}, database at {session.turn_count}"
        )
        rebuilt = await lane.inspector.rebuild_state(sid)
        assert snapshot.state.log_view() == rebuilt.log_view(), f"{sid}: checkpoint != log"
        assert session.state.log_view() == rebuilt.log_view(), f"{sid}: sessions row != log"
        verified.folds[sid] = (session.turn_count, await edit_count(lane, db, sid), rebuilt)
    for sid in await lane.inspector.checkpoint_ids():
        snapshot = await lane.inspector.checkpoint(sid)
        session = await lane.inspector.session(sid)
        assert snapshot is not None
        assert session is not None, f"orphan checkpoint {sid} survived hydrate"
        assert snapshot.turn_count <= session.turn_count, f"checkpoint {sid} ahead of the log"


async def check_restart(paths: Paths, verified: Verified, stats: CrashStats) -> int:
    """Open a fresh lane on what the killed worker left, check everything, and return the
    highest update id in the database (so the next worker starts above it)."""
    records = read_log(paths.log)
    settings = crash_settings(paths.db, paths.checkpoints, paths.url)
    db = await open_database(settings)
    lane = build_lane(settings, db)
    try:
        if isinstance(db, Database):
            (integrity,) = await db.fetchone("PRAGMA integrity_check") or ("missing",)
            assert integrity == "ok", f"PRAGMA integrity_check: {integrity}"
        else:
            problems = await db.integrity_problems()
            assert not problems, f"integrity: {problems}"
        await check_checkpoints_before_hydrate(lane, db, paths, verified, stats)
        await check_turn_log(lane, db, records, verified, stats)
        await check_summary_chain(lane, db)
        report = await lane.hydrate()
        stats.rebuilt_at_hydrate += len(report.rebuilt)
        await check_deliveries(lane, db, [turn.turn_id for turn in report.undelivered])
        await check_after_hydrate(lane, db, paths, verified)
        (top,) = await db.fetchone(
            "SELECT COALESCE(MAX(update_id), 0) FROM conversation_turns"
        ) or (0,)
        return int(top)
    finally:
        # Not lane.shutdown(): the next worker must start from a crash, not a clean stop.
        await db.close()


# -- the kills --------------------------------------------------------------------------------


async def _expect_line(proc: asyncio.subprocess.Process, expected: bytes, paths: Paths) -> None:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT)
    if line.strip() != expected:
        await proc.wait()
        raise AssertionError(
            f"worker printed {line!r} instead of {expected!r} (exit {proc.returncode}):\n"
            + paths.stderr.read_text(errors="replace")[-3000:]
        )


def _journal_sizes(paths: Paths) -> dict[str, int]:
    """The size of every checkpoint journal in the directory, by name."""
    sizes = {}
    for journal in paths.checkpoints.glob("*.journal") if paths.checkpoints.is_dir() else ():
        with contextlib.suppress(FileNotFoundError):
            sizes[journal.name] = journal.stat().st_size
    return sizes


async def _kill_when_checkpointing(paths: Paths, limit: float) -> bool:
    """Wait until a checkpoint write is in progress: a temp file exists (a base being
    rewritten) or a journal grew (an append, maybe not yet synced); False if none came."""
    deadline = time.monotonic() + limit
    journals = _journal_sizes(paths)
    while time.monotonic() < deadline:
        if temp_files(paths) or _journal_sizes(paths).items() - journals.items():
            return True
        await asyncio.sleep(0.0002)
    return False


async def _wait_for_acks(
    proc: asyncio.subprocess.Process, paths: Paths, log_size: int, count: int, limit: float
) -> None:
    """Wait until the log has ``count`` acknowledgments past byte ``log_size``, the worker has
    exited, or ``limit`` s have passed."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.returncode is None:
        lines = []
        if paths.log.exists():
            with paths.log.open("rb") as log:
                log.seek(log_size)
                lines = log.read().split(b"\n")[:-1]  # whole lines only
        if sum(json.loads(line)["ev"] == "ack" for line in lines if line) >= count:
            return
        await asyncio.sleep(0.002)


async def run_cycle(paths: Paths, rng: random.Random, start_update: int, stats: CrashStats) -> None:
    """Start one worker, kill it at a moment chosen by ``rng``, and count what was hit."""
    mode = rng.choices(MODES, weights=(1, 6, 3))[0]
    if CRASH_MODE is not None:
        assert CRASH_MODE in MODES[1:], f"CRASH_MODE must be one of {MODES[1:]}"
        mode = CRASH_MODE
    args = [
        "--db",
        str(paths.db),
        "--checkpoints",
        str(paths.checkpoints),
        "--log",
        str(paths.log),
        "--chats",
        str(CHATS),
        "--start-update",
        str(start_update),
        "--seed",
        str(rng.randrange(2**31)),
    ]
    if paths.url is not None:
        args += ["--database-url", paths.url]
    if mode == "checkpoint":
        args += ["--text-bytes", str(rng.choice((16_000, 64_000)))]
    elif mode == "stream" and rng.random() < 0.1:
        args += ["--count", str(rng.randint(1, 60))]  # sometimes a clean stop comes first
    acks_before = sum(1 for r in read_log(paths.log) if r["ev"] == "ack")
    log_size = paths.log.stat().st_size if paths.log.exists() else 0
    with paths.stderr.open("ab") as stderr:
        stderr.write(f"--- cycle {stats.cycles} ({mode}) ---\n".encode())
        stderr.flush()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(WORKER), *args, stdout=asyncio.subprocess.PIPE, stderr=stderr
        )
    stats.cycles += 1
    ready = False
    in_checkpoint = False
    try:
        await _expect_line(proc, b"opening", paths)
        if mode == "start":
            await asyncio.sleep(rng.uniform(0, 0.04))  # opening, migrating, hydrating
        else:
            await _expect_line(proc, b"ready", paths)
            ready = True
            if mode == "stream":
                # Mid-stream means after some of this worker's acknowledgments: the kill is
                # placed by counting them, not by the clock, so that a slow machine neither
                # turns a stream kill into a start-up one nor acknowledges fewer turns per kill;
                # the short sleep after lands it anywhere within a turn.
                await _wait_for_acks(proc, paths, log_size, rng.randint(2, 16), START_TIMEOUT)
                await asyncio.sleep(rng.uniform(0, 0.05))
            else:
                await asyncio.sleep(rng.uniform(0, 0.1))
                in_checkpoint = await _kill_when_checkpointing(paths, 1.0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    if proc.returncode == 0:
        stats.clean_exits += 1
        return
    if proc.returncode != -signal.SIGKILL:
        raise AssertionError(
            f"worker failed by itself (exit {proc.returncode}):\n"
            + paths.stderr.read_text(errors="replace")[-3000:]
        )
    stats.kills += 1
    stats.killed_turning += ready
    stats.killed_in_checkpoint += in_checkpoint and bool(temp_files(paths))
    acks_after = sum(1 for r in read_log(paths.log) if r["ev"] == "ack")
    if not ready and acks_after == acks_before:
        stats.killed_starting += 1
    elif acks_after > acks_before:
        stats.killed_mid_stream += 1


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def crash_url(request: pytest.FixtureRequest) -> str | None:
    """The backend of a crash run: ``None`` for the SQLite file, else the URL of a fresh
    PostgreSQL schema (the workers get it as ``--database-url``)."""
    if request.param == "sqlite":
        return None
    return database_url(request.getfixturevalue("postgres_url"))


@pytest.mark.crash
async def test_sigkill_at_any_moment_loses_no_acknowledged_turn(
    tmp_path: Path, crash_url: str | None
) -> None:
    """A worker killed with SIGKILL at any moment (start-up, mid-stream, mid-checkpoint) leaves
    every acknowledged update as exactly one turn (I2, I3), only parseable checkpoints that are
    never ahead of the database (I5), an intact database, and after hydrate() checkpoints equal
    to the state rebuilt from the turn log and to the sessions table (I6).

    At least ``CRASH_KILLS`` (default 50; 20 on PostgreSQL) kills must land while the worker is
    turning (kills during start-up come on top), half of them mid-stream, over more than 4
    acknowledged turns per kill (200 for the default), so the test cannot pass without
    exercising the lane; the
    counters (kills during start-up, inside a checkpoint write, commits whose acknowledgment
    was lost, checkpoints found behind) are printed with every failure.
    """
    paths = Paths(
        db=tmp_path / "memory.db",
        checkpoints=tmp_path / "checkpoints",
        log=tmp_path / "acks.jsonl",
        stderr=tmp_path / "worker-stderr.log",
        url=crash_url,
    )
    kills = KILLS if crash_url is None else POSTGRES_KILLS
    rng = random.Random(SEED)
    stats = CrashStats()
    verified = Verified()
    start_update = 1
    started = time.monotonic()
    try:
        while stats.killed_turning < kills:
            assert stats.cycles < 3 * kills + 10, "workers keep exiting before the kill"
            lap = time.monotonic()
            await run_cycle(paths, rng, start_update, stats)
            stats.worker_seconds += time.monotonic() - lap
            lap = time.monotonic()
            top_in_db = await check_restart(paths, verified, stats)
            stats.check_seconds += time.monotonic() - lap
            attempted = max((r["update_id"] for r in read_log(paths.log)), default=0)
            start_update = max(top_in_db, attempted) + 1
        # Not vacuous: the kills hit a lane that was doing real work.
        assert stats.killed_mid_stream >= kills // 2, "too few kills landed mid-stream"
        assert stats.dup_acks > 0, "no resend was answered as a duplicate (I3 unexercised)"
        assert stats.edits_applied > 0, "no edit reached the turn log (edits unexercised)"
        if CRASH_MODE is None:  # (checkpoint-only kills come early, after a few turns)
            assert stats.acks > 4 * kills, "too few turns acknowledged"
        if kills >= 50:
            assert stats.killed_in_checkpoint + stats.checkpoints_behind > 0, (
                "no kill landed between a commit and its checkpoint"
            )
    except Exception as exc:  # any failure: add the seed and what the kills hit
        raise AssertionError(
            f"{exc}\n  seed={SEED} (replay: CRASH_SEED={SEED}); {stats.render()}"
        ) from exc
    print(  # shown with -s: what the kills hit
        f"crash run seed={SEED} in {time.monotonic() - started:.1f}s: {stats.render()}"
    )
