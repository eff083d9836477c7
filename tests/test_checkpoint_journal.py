"""Tests of the checkpoint journal: a base file plus one line per write of what changed.

The rule on every test: a checkpoint reads as the last snapshot written, or, after a crash in
the middle of an append, as the one before it (behind, which the start rebuilds: I5); never as
something that was not written. The format is :mod:`agent.memory.checkpoint_journal`, the files
:class:`agent.memory.CheckpointWriter`'s; the lane-level tests kill a real process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.app.wiring import open_lane
from agent.errors import CheckpointCorrupt
from agent.memory import (
    CheckpointWriter,
    ConversationLane,
    ConversationTurn,
    OpenLoop,
    SessionState,
)
from agent.memory.checkpoint_journal import base_digest, change, compose, header, line
from agent.memory.conversation_checkpoint import JOURNAL_LINES
from agent.memory.schemas import CheckpointTurn, ConversationCheckpointSnapshot, dump_json
from tests.lane_crash_worker import crash_settings

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2
ROOT = Path(__file__).resolve().parents[1]


def snapshot(
    turn_count: int, *, recent: int = 3, text: str = "said", loops: int = 1
) -> ConversationCheckpointSnapshot:
    """The snapshot after ``turn_count`` turns: the last ``recent`` turns, a growing buffer."""
    turns = tuple(
        CheckpointTurn.of(
            ConversationTurn(
                turn_id=f"trn_{seq:032x}",
                session_id=SID,
                seq=seq,
                user_text=f"{text} {seq} — ünïcödé ✓",
                assistant_text=f"answer {seq}",
                created_at=T0 + timedelta(minutes=seq),
            )
        )
        for seq in range(max(1, turn_count - recent + 1), turn_count + 1)
    )
    state = SessionState(
        session_id=SID,
        turn_count=turn_count,
        open_loops=tuple(
            OpenLoop(loop_id=f"l{n}", text=f"send report {n}", opened_turn=n)
            for n in range(1, loops + 1)
        ),
        summary_buffer=tuple(f"#{seq} user: {text}" for seq in range(1, turn_count % 5 + 1)),
    )
    return ConversationCheckpointSnapshot(
        session_id=SID,
        chat_id=42,
        state=state,
        recent_turns=turns,
        written_at=T0 + timedelta(minutes=turn_count),
    )


def journal_lines(writer: CheckpointWriter) -> list[bytes]:
    path = writer.journal_path(SID)
    return path.read_bytes().split(b"\n")[:-1] if path.exists() else []


@pytest.fixture
def writer(checkpoint_dir: Path) -> CheckpointWriter:
    return CheckpointWriter(checkpoint_dir)


async def test_a_later_write_appends_only_what_changed(writer):
    """The first write is the whole base; each later one a line far smaller than the base,
    after a header naming the base; both this writer and a fresh one read the last write."""
    await writer.write(snapshot(1, loops=20))  # a base as large as a real one, in lines
    base = writer.path_for(SID).read_bytes()
    for turn in range(2, 7):
        await writer.write(snapshot(turn, loops=20))

    assert writer.path_for(SID).read_bytes() == base  # the base is not rewritten
    lines = journal_lines(writer)
    assert lines[0] + b"\n" == header(base_digest(base))
    assert len(lines) == 6
    assert all(len(data) < len(base) / 2 for data in lines[1:])
    assert b"said 6" in lines[-1]
    assert b"said 5" not in lines[-1]
    assert await writer.load(SID) == snapshot(6, loops=20)
    assert await CheckpointWriter(writer.directory).load(SID) == snapshot(6, loops=20)


async def test_a_torn_last_line_reads_as_the_checkpoint_before_it(writer):
    """A crash during an append leaves part of a line (no newline) or a garbled last line: the
    checkpoint is the write before it, whole; never an error, never a mix."""
    for turn in range(1, 5):
        await writer.write(snapshot(turn))
    path = writer.journal_path(SID)
    whole = path.read_bytes()
    last = whole.rstrip(b"\n").rsplit(b"\n", 1)[1]

    for cut in (1, len(last) // 2, len(last)):  # newline lost, half a line, only its start
        path.write_bytes(whole[: len(whole) - cut])
        assert await writer.load(SID) == snapshot(3), cut
    path.write_bytes(whole[: len(whole) - len(last) - 1] + b'{"state": {"turn_count"\x00\n')
    assert await writer.load(SID) == snapshot(3)
    path.write_bytes(whole[: len(whole) - len(last) - 1] + b'{"lists": {"nope": [0, []]}}\n')
    assert await writer.load(SID) == snapshot(3)  # parses, but names no list of the state


async def test_a_garbled_line_before_the_last_is_corrupt(writer):
    """Appends never garble a line that has another after it: such a journal is corrupt, and
    says which line."""
    for turn in range(1, 5):
        await writer.write(snapshot(turn))
    path = writer.journal_path(SID)
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2][:10] + b"#" + lines[2][11:]
    path.write_bytes(b"\n".join(lines))

    with pytest.raises(CheckpointCorrupt, match=r"journal line 3 of 4 is garbled"):
        await writer.load(SID)


async def test_a_journal_of_another_base_is_left_out(writer):
    """A crash after the base was rewritten and before its old journal was removed (or a reader
    that read the old base, then the new journal): the journal names another base, so the
    checkpoint is the base alone."""
    for turn in range(1, 4):
        await writer.write(snapshot(turn))
    old_journal = writer.journal_path(SID).read_bytes()
    await writer.write(snapshot(4), compact=True)
    assert not writer.journal_path(SID).exists()

    writer.journal_path(SID).write_bytes(old_journal)
    assert await writer.load(SID) == snapshot(4)


async def test_the_base_is_rewritten_once_the_journal_reaches_its_size(writer):
    """Large turns make long lines: once the journal is as large as the base, the next write
    rewrites the base and starts no journal; every write reads back exactly."""
    bases = set()
    for turn in range(1, 40):
        await writer.write(snapshot(turn, text="x" * 3_000))
        base = writer.path_for(SID).read_bytes()
        bases.add(base)
        journal = writer.journal_path(SID)
        size = journal.stat().st_size if journal.exists() else 0
        assert size <= 2 * len(base)
        assert await writer.load(SID) == snapshot(turn, text="x" * 3_000)
    assert len(bases) > 5  # rewritten every few writes


async def test_the_base_is_rewritten_after_journal_lines_lines(writer):
    """Small changes: the journal holds at most JOURNAL_LINES lines after its header."""
    big = snapshot(1, recent=1, loops=200)  # a large base: size never triggers
    await writer.write(big)
    for n in range(2, JOURNAL_LINES + 3):
        await writer.write(big.model_copy(update={"written_at": T0 + timedelta(seconds=n)}))
        assert len(journal_lines(writer)) <= JOURNAL_LINES + 1
        assert (await writer.load(SID)).written_at == T0 + timedelta(seconds=n)
    assert len(journal_lines(writer)) < JOURNAL_LINES


async def test_a_writer_does_not_append_to_files_another_wrote(writer):
    """Another process (or a repair) rewrote the files since this writer's last write: it
    rewrites the base instead of appending a change from a snapshot the files no longer hold."""
    await writer.write(snapshot(1))
    await writer.write(snapshot(2))
    other = CheckpointWriter(writer.directory)
    await other.write(snapshot(7, text="other"))  # its first write: a base
    await other.write(snapshot(8, text="other"))  # then a journal

    await writer.write(snapshot(3))
    assert await writer.load(SID) == snapshot(3)
    await other.write(snapshot(9, text="other"))
    assert await other.load(SID) == snapshot(9, text="other")

    writer.path_for(SID).write_bytes(dump_json(snapshot(5), indent=True))  # edited in place
    await writer.write(snapshot(6))
    assert await writer.load(SID) == snapshot(6)


async def test_delete_removes_the_journal_and_a_start_removes_a_journal_alone(writer):
    """Deleting a checkpoint deletes its journal; a journal whose base is gone (a delete cut
    short) is removed with the temporary files at a start; another session's is kept."""
    for turn in range(1, 4):
        await writer.write(snapshot(turn))
    assert await writer.delete(SID) is True
    assert list(writer.directory.iterdir()) == []

    for turn in range(1, 4):
        await writer.write(snapshot(turn))
    writer.path_for(SID).unlink()
    kept = writer.directory / ("ses_" + "ab" * 16 + ".journal")
    (writer.directory / kept.with_suffix(".json").name).write_bytes(b"{}")
    kept.write_bytes(b"{}\n")
    assert writer.remove_temp_files() == 1
    assert sorted(p.name for p in writer.directory.iterdir()) == [kept.name, f"{kept.stem}.json"]


_TEXTS = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 4), _TEXTS, st.booleans()),
        min_size=1,
        max_size=12,
    )
)
def test_any_sequence_of_writes_reads_back_as_the_last(tmp_path_factory, steps):
    """Turns added, turns dropped, a recent turn edited, buffers grown and emptied, loops
    opened and closed, compactions in between: the files always read as the last write."""

    async def run() -> None:
        writer = CheckpointWriter(tmp_path_factory.mktemp("journal"), fsync=False)
        turn = 1
        current = snapshot(turn)
        await writer.write(current)
        for added, loops, text, compact in steps:
            turn += added
            current = snapshot(turn, recent=3, text=text or "said", loops=loops)
            await writer.write(current, compact=compact and added == 0)
            assert await writer.load(SID) == current

    asyncio.run(run())


def test_change_and_compose_agree_with_each_other():
    """A line from :func:`change` composed on its base is the new document."""
    old = snapshot(3).model_dump(mode="json")
    new = snapshot(4, loops=2).model_dump(mode="json")
    base = dump_json(old, indent=True)
    delta = change(old, new)
    assert delta is not None
    assert delta["recent_turns"][0] == 1  # one turn dropped off the front
    assert compose(base, header(base_digest(base)) + line(delta), "x") == new
    assert change(old, {**new, "extra": 1}) is None  # a field added: rewrite the base


# -- the lane, killed mid-journal -------------------------------------------------------------

_WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from agent.app.wiring import open_lane
    from agent.memory import InboundMessage
    from tests.lane_crash_worker import ScriptedEngine, crash_settings

    async def main() -> None:
        db, checkpoints, turns = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
        lane = await open_lane(crash_settings(db, checkpoints))
        await lane.hydrate()
        n = 0
        # At least `turns` turns, and then until the journal holds a turn's line.
        while n < turns or len(list(checkpoints.glob("*.journal"))) != 1:
            n += 1
            message = InboundMessage(
                chat_id=7, text=f"turn {n}: I'm planning a trip to Lisbon", update_id=n,
                user_id=70, speaker="ada",
            )
            await lane.on_turn(message, ScriptedEngine())
        print(n, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def _killed_mid_journal(tmp_path: Path, turns: int) -> tuple[Path, Path, int]:
    """Run at least ``turns`` turns in a real process, until its checkpoint has a journal,
    then SIGKILL it; return its database, its directory and how many turns it took."""
    db, checkpoints = tmp_path / "memory.db", tmp_path / "checkpoints"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(db), str(checkpoints), str(turns)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None
        line = proc.stdout.readline()
        proc.send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
    assert line.strip().isdigit(), stderr.decode(errors="replace")
    assert proc.returncode == -signal.SIGKILL
    (journal,) = checkpoints.glob("ses_*.journal")  # killed with a journal on disk
    assert len(journal.read_bytes().split(b"\n")) > 2
    return db, checkpoints, int(line)


@asynccontextmanager
async def _restarted(db: Path, checkpoints: Path) -> AsyncIterator[tuple[ConversationLane, str]]:
    """The lane started again on what the killed process left, hydrated; its chat's session."""
    lane = await open_lane(crash_settings(db, checkpoints))
    try:
        await lane.hydrate()
        sid = lane.session_id_for_chat(7)
        assert sid is not None
        yield lane, sid
    finally:
        await lane.shutdown()


async def test_a_restart_after_sigkill_mid_journal_hydrates_the_same_state(tmp_path, caplog):
    """SIGKILL a real lane between turns, its journal unfinished: the next start finds the
    base and journal at the database's turn (nothing rebuilt), and the state it hydrates is
    the fold of the turn log (I6) and what the checkpoint holds (I5)."""
    db, checkpoints, turns = _killed_mid_journal(tmp_path, turns=11)
    caplog.set_level(logging.WARNING)

    async with _restarted(db, checkpoints) as (lane, sid):
        assert "rebuilt" not in caplog.text
        snapshot_ = await lane.inspector.checkpoint(sid)
        assert snapshot_ is not None
        session = await lane.inspector.session(sid)
        assert session is not None
        assert snapshot_.turn_count == session.state.turn_count == turns
        assert snapshot_.state.log_view() == session.state.log_view()
        assert not await lane.inspector.state_differs(sid)
    assert list(checkpoints.glob("*.journal")) == []  # a clean stop leaves the base alone


async def test_a_restart_after_a_torn_append_rebuilds_the_checkpoint(tmp_path, caplog):
    """Killed in the middle of an append (simulated by tearing the last line the kill left):
    the checkpoint is behind, the start says so, rebuilds it from the log, and hydrates the
    same state as the log's fold."""
    db, checkpoints, turns = _killed_mid_journal(tmp_path, turns=6)
    (journal,) = checkpoints.glob("ses_*.journal")
    journal.write_bytes(journal.read_bytes()[:-25])
    caplog.set_level(logging.WARNING)

    async with _restarted(db, checkpoints) as (lane, sid):
        behind = f"is behind the log (turn {turns - 1} of {turns}); rebuilt from the turn log"
        assert f"checkpoint of session {sid} {behind}" in caplog.text
        snapshot_ = await lane.inspector.checkpoint(sid)
        assert snapshot_ is not None
        assert snapshot_.turn_count == turns
        assert not await lane.inspector.state_differs(sid)


def _cli(db: Path, checkpoints: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENT_")}
    env |= {"PYTHONPATH": str(ROOT), "AGENT_DB_PATH": str(db)}
    env["AGENT_CHECKPOINT_DIR"] = str(checkpoints)
    return subprocess.run(
        [sys.executable, "-m", "agent", *args], cwd=db.parent, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


async def test_the_cli_shows_verifies_and_erases_a_journaled_checkpoint(tmp_path):
    """`agent-memory checkpoint` prints the current snapshot (base and journal together, as a
    whole file would read), `verify` finds it consistent, `stats` counts the journal's bytes
    with the checkpoint's, and `forget` leaves no journal."""
    db, checkpoints, turns = _killed_mid_journal(tmp_path, turns=9)
    (base,) = checkpoints.glob("ses_*.json")
    sid = base.stem
    current = CheckpointWriter.parse(
        base.read_bytes(), journal=base.with_suffix(".journal").read_bytes(), session_id=sid
    )
    assert current.turn_count == turns
    assert CheckpointWriter.parse(base.read_bytes()).turn_count < turns  # the base is behind

    shown = _cli(db, checkpoints, "checkpoint", sid)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == dump_json(current, indent=True).decode()
    assert orjson.loads(shown.stdout)["state"]["turn_count"] == turns
    verified = _cli(db, checkpoints, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "1 checked: 1 matches" in verified.stdout

    stats = _cli(db, checkpoints, "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    sizes = orjson.loads(stats.stdout)["bytes"]
    on_disk = base.stat().st_size + base.with_suffix(".journal").stat().st_size
    assert (sizes["checkpoint_files"], sizes["checkpoints"]) == (1, on_disk)

    erased = _cli(db, checkpoints, "forget", sid, "--yes")
    assert erased.returncode == 0, erased.stderr
    assert list(checkpoints.iterdir()) == []
