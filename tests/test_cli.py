"""Tests of the inspection CLI (issue 7): ``python -m agent`` run as a subprocess.

Every test drives the real program (``sys.executable -m agent ...``) against a database and
checkpoint directory that the real memory lane wrote (:func:`agent.app.wiring.open_lane`, the
offline :class:`~agent.engines.rule_based.RuleBasedConcierge`), and checks what it prints and its
exit code. Two tests run it beside another process: one holding the database's write lock, one
streaming turns through a real lane (``tests/lane_crash_worker.py``).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import struct
import subprocess
import sys
import termios
import time
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest

from agent.app.wiring import open_lane
from agent.config import Settings
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage, SessionArchive
from tests.lane_crash_worker import crash_settings, read_log

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("lane_crash_worker.py")
PRIVATE_CHAT = 42
GROUP_CHAT = -77
PRIVATE_TALK = (
    "my name is Ada",
    "I'm planning a trip to Lisbon in May",
    "remind me to book the hotel",
    "can you check the train times?",
    "what's my name?",
    "remind me in 10 minutes to call mom",
    "I like jazz",
)
GROUP_TALK = (
    ("Bob", "I propose we meet on Friday"),
    ("Cy", "+1 sounds good"),
    ("Bob", "we agreed on Friday at 3"),
)
# The lane's settings, as the bot's environment gives them to the CLI.
ENV = {"AGENT_SUMMARIZE_EVERY": "4", "AGENT_RECENT_TURNS": "3", "AGENT_DURABILITY": "process"}


@dataclass
class Memory:
    """What the real lane wrote: where, and the ids of its sessions."""

    root: Path
    db: Path
    checkpoints: Path
    private: str  # chat 42's open session (7 turns)
    group_closed: str  # the group's first session, closed by /new (3 turns)
    group_open: str  # the group's current session (1 turn)

    @property
    def env(self) -> dict[str, str]:
        inherited = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("AGENT_", "TELEGRAM_"))
        }
        return {
            **inherited,
            **ENV,
            "AGENT_DB_PATH": str(self.db),
            "AGENT_CHECKPOINT_DIR": str(self.checkpoints),
        }


def settings_for(db: Path, checkpoints: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        db_path=db,
        checkpoint_dir=checkpoints,
        summarize_every=4,
        recent_turns=3,
        durability="process",
    )


@asynccontextmanager
async def writing_lane(
    db: Path, checkpoints: Path
) -> AsyncIterator[tuple[ConversationLane, RuleBasedConcierge]]:
    """The real lane over ``db``, hydrated, and the offline concierge; shut down after."""
    lane = await open_lane(settings_for(db, checkpoints))
    try:
        await lane.hydrate()
        yield lane, RuleBasedConcierge()
    finally:
        await lane.shutdown()


@pytest.fixture
async def memory(tmp_path: Path) -> Memory:
    """A database and checkpoints written by the real lane: a private chat and a group."""
    db, checkpoints = tmp_path / "memory.db", tmp_path / "checkpoints"
    async with writing_lane(db, checkpoints) as (lane, engine):
        update = 100
        for text in PRIVATE_TALK:
            update += 1
            message = InboundMessage(
                chat_id=PRIVATE_CHAT, text=text, user_id=7, speaker="Ada", update_id=update
            )
            result = await lane.on_turn(message, engine)
            if result.needs_delivery:
                await lane.mark_delivered(result.turn, 9000 + update)
        sessions = []
        for talk in (GROUP_TALK, (("Bob", "I live in Leeds now"),)):
            if sessions:
                await lane.new_session(GROUP_CHAT)  # /new: the first session is closed
            for speaker, text in talk:
                update += 1
                message = InboundMessage(
                    chat_id=GROUP_CHAT, chat_type="group", chat_title="Trip planning",
                    text=text, user_id=len(speaker), speaker=speaker, update_id=update,
                    wants_reply=False,
                )  # fmt: skip
                result = await lane.on_turn(message, engine)
            sessions.append(result.turn.session_id)
        private = lane.session_id_for_chat(PRIVATE_CHAT)
    assert private is not None
    return Memory(tmp_path, db, checkpoints, private, sessions[0], sessions[1])


def cli(
    memory: Memory, *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m agent ARGS`` in the memory's directory; return what it did."""
    feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        cwd=memory.root, env={**memory.env, **(env or {})}, capture_output=True, text=True,
        timeout=120, check=False, **feed,
    )  # fmt: skip


def ok(run: subprocess.CompletedProcess[str]) -> str:
    """Assert a run succeeded quietly; return its stdout."""
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    return run.stdout


def one_error_line(run: subprocess.CompletedProcess[str]) -> str:
    """Assert a run failed with exit code 2 and one line on stderr, no traceback; return it."""
    assert run.returncode == 2, (run.stdout, run.stderr)
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("agent-memory: error: ")
    return lines[0]


def test_sessions_lists_every_session_with_its_checkpoint_verdict(memory):
    """`sessions` prints one row per session (closed ones as closed) and whether each
    checkpoint matches the log; filters, sort and --json agree with the table."""
    table = ok(cli(memory, "sessions")).splitlines()

    assert table[0].split() == [
        "SESSION", "CHAT", "TITLE", "STATUS", "TURNS", "ACTIVE", "CHECKPOINT", "MATCHES", "LOG",
    ]  # fmt: skip
    rows = {line.split()[0]: line for line in table[1:]}
    assert set(rows) == {memory.private, memory.group_closed, memory.group_open}
    assert " Ada " in rows[memory.private]
    assert " shutdown_clean " in rows[memory.private]
    assert "Trip planning" in rows[memory.group_closed]
    assert " closed " in rows[memory.group_closed]
    assert all(line.endswith("matches") for line in table[1:])

    records = json.loads(ok(cli(memory, "sessions", "--json")))
    by_id = {record["session_id"]: record for record in records}
    assert by_id[memory.private]["turns"] == len(PRIVATE_TALK)
    assert by_id[memory.group_closed]["status"] == "closed"
    assert {r["checkpoint"]["verdict"] for r in records} == {"matches"}

    closed = json.loads(ok(cli(memory, "sessions", "--status", "closed", "--json")))
    assert [r["session_id"] for r in closed] == [memory.group_closed]
    of_group = json.loads(ok(cli(memory, "sessions", "--chat", str(GROUP_CHAT), "--json")))
    assert {r["session_id"] for r in of_group} == {memory.group_closed, memory.group_open}
    by_turns = json.loads(ok(cli(memory, "sessions", "--sort", "turns", "--limit", "2", "--json")))
    assert [r["session_id"] for r in by_turns] == [memory.private, memory.group_closed]


def test_show_prints_the_state_and_the_context_packet(memory):
    """`show` prints the status, open loops, topics, reminders, facts and the packet the next
    reply would get; `chat:<id>` names the chat's open session; --json carries the same."""
    text = ok(cli(memory, "show", f"chat:{PRIVATE_CHAT}"))

    assert text.startswith(f"Session {memory.private}\n")
    assert "checkpoint     matches the log" in text
    assert "Open loops (2)" in text
    assert "book the hotel" in text
    assert "check the train times" in text
    assert "Reminders and jobs (1)" in text
    assert "call mom" in text
    assert "Facts: none" in text  # a private chat's facts live in its long-term memory
    assert "Long-term memory of the chat (3)" in text
    assert "Lisbon" in text
    assert "Context packet (about " in text
    assert f"Conversation {memory.private} ({len(PRIVATE_TALK)} turns)" in text
    assert "…" not in text  # piped: nothing is cut

    group = ok(cli(memory, "show", memory.group_closed))
    assert "status         closed" in group
    assert "Decisions (1)" in group
    assert "Friday at 3" in group
    # A group's facts are its members': each says who told it.
    facts = ok(cli(memory, "show", memory.group_open)).split("Facts (1)", 1)[1]
    assert re.search(r"\bBob\s+location\s+Leeds\s+1\b", facts)

    shown = json.loads(ok(cli(memory, "show", memory.private, "--json")))
    assert shown["session"]["session_id"] == memory.private
    assert {m["attribute"] for m in shown["memories"]} == {"name", "plan", "likes"}
    assert shown["checkpoint"]["verdict"] == "matches"
    assert shown["packet"]["conversation_id"] == memory.private
    assert shown["packet"]["turn_count"] == len(PRIVATE_TALK)


def test_history_prints_turns_and_filters_by_last_and_grep(memory):
    """`history` prints every turn oldest first; --last keeps the newest N, --grep the turns
    holding every word in any case; --json gives the turns themselves."""
    lines = ok(cli(memory, "history", memory.private)).splitlines()
    headers = [line for line in lines if line.startswith("#")]
    assert [h.split()[0] for h in headers] == [f"#{n}" for n in range(1, len(PRIVATE_TALK) + 1)]
    assert "  Ada: my name is Ada" in lines

    last = ok(cli(memory, "history", f"chat:{PRIVATE_CHAT}", "--last", "2"))
    assert [line.split()[0] for line in last.splitlines() if line.startswith("#")] == ["#6", "#7"]

    found = ok(cli(memory, "history", memory.private, "--grep", "ADDED", "hotel"))
    assert [line.split()[0] for line in found.splitlines() if line.startswith("#")] == ["#3"]
    assert ok(cli(memory, "history", memory.private, "--grep", "zebra")) == "no turns match\n"

    turns = json.loads(ok(cli(memory, "history", memory.private, "--last", "1", "--json")))
    assert [(t["seq"], t["user_text"], t["status"]) for t in turns] == [
        (7, "I like jazz", "delivered")
    ]


def test_recall_shows_the_bots_retriever_results_with_scores(memory):
    """`recall` searches a session with the bot's retriever: ranked items with scores in 0-1,
    the best first, the turn that said it on top."""
    items = json.loads(ok(cli(memory, "recall", memory.private, "trip", "Lisbon", "--json")))

    assert items[0]["ref"] == "turn:2"
    assert "Lisbon" in items[0]["text"]
    scores = [item["score"] for item in items]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= score <= 1 for score in scores)
    assert len(items) <= 5

    table = ok(cli(memory, "recall", memory.private, "trip", "Lisbon")).splitlines()
    assert table[0].split() == ["SCORE", "KIND", "REF", "TEXT"]
    assert table[1].split()[:3] == [f"{scores[0]:.2f}", "turn", "turn:2"]
    nothing = ok(cli(memory, "recall", memory.private, "zebra"))
    assert nothing.startswith(f"nothing in session {memory.private} matches")


def test_checkpoint_prints_the_file_and_diffs_it_against_the_log(memory):
    """`checkpoint` prints the file as it is; --diff exits 0 when its state equals the fold of
    the turn log, and 1 with a unified diff when it does not."""
    path = memory.checkpoints / f"{memory.private}.json"
    assert ok(cli(memory, "checkpoint", memory.private)) == path.read_text(encoding="utf-8")

    same = ok(cli(memory, "checkpoint", f"chat:{PRIVATE_CHAT}", "--diff"))
    assert same == (
        f"checkpoint {path.name} matches the state rebuilt from the log "
        f"({len(PRIVATE_TALK)} turns)\n"
    )

    document = json.loads(path.read_text(encoding="utf-8"))
    document["state"]["last_intent"] = "edited by hand"
    path.write_text(json.dumps(document), encoding="utf-8")
    run = cli(memory, "checkpoint", memory.private, "--diff")
    assert run.returncode == 1, run.stderr
    assert '-  "last_intent": "edited by hand",' in run.stdout.splitlines()
    assert run.stdout.startswith(f"--- {path.name} (state at turn {len(PRIVATE_TALK)}")


def test_verify_fails_on_a_corrupt_checkpoint_and_repair_rewrites_it(memory):
    """`verify` exits 0 on a consistent memory, 1 once a checkpoint is torn or orphaned; with
    --repair it rewrites the torn one from the database (atomically), deletes the orphan, and
    exits 0; a later `verify` agrees."""
    assert ok(cli(memory, "verify")).endswith("consistent\n")

    path = memory.checkpoints / f"{memory.private}.json"
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # a torn write
    orphan = memory.checkpoints / ("ses_" + "ab" * 16 + ".json")
    orphan.write_bytes(good)
    run = cli(memory, "verify")
    assert run.returncode == 1, run.stderr
    problems = {line.split()[0]: line.split()[1] for line in run.stdout.splitlines()
                if line.startswith("ses_")}  # fmt: skip
    assert problems == {memory.private: "corrupt", orphan.stem: "orphan"}
    assert "not consistent" in run.stdout
    report = json.loads(cli(memory, "verify", "--json").stdout)
    assert report["consistent"] is False
    assert {p["verdict"] for p in report["checkpoints"]["problems"]} == {"corrupt", "orphan"}

    repaired = ok(cli(memory, "verify", "--repair"))
    assert f"repaired {memory.private}: checkpoint rewritten" in repaired
    assert f"repaired {orphan.stem}: checkpoint deleted" in repaired
    assert not orphan.exists()
    snapshot = CheckpointWriter.parse(path.read_bytes(), session_id=memory.private)
    assert snapshot.state == CheckpointWriter.parse(good, session_id=memory.private).state
    assert list(memory.checkpoints.glob(".tmp-*")) == []
    assert ok(cli(memory, "verify", "--deep")).endswith("consistent\n")


def test_export_forget_import_round_trip_gives_the_same_session(memory):
    """Export as JSON, forget, import: the session, its turns, state, summary chain, memories
    and checkpoint come back as they were; importing it twice is refused."""
    exported = ok(cli(memory, "export", f"chat:{PRIVATE_CHAT}", "--format", "json"))
    archive = SessionArchive.model_validate_json(exported)
    assert len(archive.turns) == len(PRIVATE_TALK)
    (memory.root / "ada.json").write_text(exported, encoding="utf-8")
    stats_before = json.loads(ok(cli(memory, "stats", "--json")))
    checkpoint_before = CheckpointWriter.parse(
        (memory.checkpoints / f"{memory.private}.json").read_bytes()
    )

    assert ok(cli(memory, "forget", memory.private, "--yes")).startswith(
        f"forgot session {memory.private} of chat {PRIVATE_CHAT}: 7 turns"
    )
    assert not (memory.checkpoints / f"{memory.private}.json").exists()
    assert one_error_line(cli(memory, "show", memory.private)).endswith(
        f"no session {memory.private}"
    )
    forgotten = json.loads(ok(cli(memory, "stats", "--json")))
    assert forgotten["memories"] == {}
    assert forgotten["summaries"] == {}

    imported = ok(cli(memory, "import", "ada.json"))
    assert imported.startswith(f"imported session {memory.private} of chat {PRIVATE_CHAT}: 7 turns")
    again = SessionArchive.model_validate_json(ok(cli(memory, "export", memory.private)))
    assert again.session == archive.session
    assert again.turns == archive.turns
    assert json.loads(ok(cli(memory, "stats", "--json"))) | {"bytes": None} == (
        stats_before | {"bytes": None}
    )
    checkpoint = CheckpointWriter.parse(
        (memory.checkpoints / f"{memory.private}.json").read_bytes()
    )
    assert checkpoint.state == checkpoint_before.state
    # The same turns (the bot's file has them as committed, before their delivery was recorded).
    assert [t.turn_id for t in checkpoint.recent_turns] == [
        t.turn_id for t in checkpoint_before.recent_turns
    ]
    assert ok(cli(memory, "verify", "--deep")).endswith("consistent\n")

    assert "already exists" in one_error_line(cli(memory, "import", "ada.json"))


def test_import_refuses_what_cannot_be_imported(memory):
    """`import` refuses a file that is no export, and an export whose turns do not fold into
    its state under these settings, with one line and nothing written."""
    (memory.root / "garbage.json").write_text("{not json", encoding="utf-8")
    assert "garbage.json is not a session export" in one_error_line(
        cli(memory, "import", "garbage.json")
    )
    exported = ok(cli(memory, "export", memory.private))
    ok(cli(memory, "forget", memory.private, "--yes"))
    # Folded every 2 turns, the 7 turns make another rolling summary than the exporting bot's.
    other = cli(memory, "import", "-", env={"AGENT_SUMMARIZE_EVERY": "2"}, stdin=exported)
    assert "fold into another state" in one_error_line(other)
    assert one_error_line(cli(memory, "show", memory.private)).endswith(
        f"no session {memory.private}"
    )
    assert ok(cli(memory, "import", "-", stdin=exported)).startswith(
        f"imported session {memory.private}"
    )
    closed = ok(cli(memory, "export", memory.group_closed))
    ok(cli(memory, "forget", memory.group_closed, "--yes"))
    # A closed session comes back closed, beside the chat's open one.
    assert ok(cli(memory, "import", "-", stdin=closed)).startswith("imported session")
    back = SessionArchive.model_validate_json(ok(cli(memory, "export", memory.group_closed)))
    before = SessionArchive.model_validate_json(closed)
    assert back.session.closed_at is not None
    assert (back.session, back.turns) == (before.session, before.turns)


def test_export_as_markdown_is_a_readable_transcript(memory):
    """`export --format markdown` writes the state and every turn as Markdown, to a file."""
    done = ok(cli(memory, "export", memory.private, "--format", "markdown", "-o", "ada.md"))
    assert done == f"exported session {memory.private} (7 turns) to ada.md\n"
    text = (memory.root / "ada.md").read_text(encoding="utf-8")
    assert text.startswith(f"# Session {memory.private}\n")
    assert "## Open loops" in text
    assert "| loop-3-1 | todo | 3 | - | book the hotel |" in text
    assert "### #7 · " in text
    assert "**Ada:** I like jazz" in text


def test_forget_asks_for_confirmation_and_erases_nothing_without_it(memory):
    """Off a terminal, `forget` and `prune` need --yes: without it they fail with one line
    and the session is still there."""
    assert "--yes" in one_error_line(cli(memory, "forget", memory.private))
    assert "--yes" in one_error_line(cli(memory, "prune", "--older-than", "0"))
    assert (memory.checkpoints / f"{memory.private}.json").exists()
    assert len(json.loads(ok(cli(memory, "sessions", "--json")))) == 3


async def test_a_running_lane_goes_on_after_the_cli_forgets_its_session(memory):
    """`forget` while a lane holds the session: the chat's next message is answered in a new
    session that knows nothing of the erased one (not its turns, not the memories it stated)."""
    lane = await open_lane(settings_for(memory.db, memory.checkpoints))
    try:
        await lane.hydrate()
        assert lane.session_id_for_chat(PRIVATE_CHAT) == memory.private

        ok(cli(memory, "forget", memory.private, "--yes"))
        message = InboundMessage(
            chat_id=PRIVATE_CHAT, text="what's my name?", user_id=7, speaker="Ada", update_id=900
        )
        result = await lane.on_turn(message, RuleBasedConcierge())

        assert not result.duplicate
        assert result.turn.session_id != memory.private
        assert (result.turn.seq, lane.session_id_for_chat(PRIVATE_CHAT)) == (
            1, result.turn.session_id
        )  # fmt: skip
        assert result.packet is not None
        assert "Ada" not in (result.turn.assistant_text or "")
        assert not [m for m in result.packet.memories if "Ada" in m.text]
    finally:
        await lane.shutdown()
    assert ok(cli(memory, "verify")).strip()


def test_prune_lists_then_erases_inactive_sessions(memory):
    """`prune --dry-run` lists the sessions inactive that long; `prune --yes` erases them,
    checkpoints included; a longer threshold erases nothing."""
    assert ok(cli(memory, "prune", "--older-than", "30", "--yes")).startswith(
        "0 sessions inactive for 30 days or more"
    )
    listed = json.loads(ok(cli(memory, "prune", "--older-than", "0", "--dry-run", "--json")))
    assert set(listed["would_prune"]) == {memory.private, memory.group_closed, memory.group_open}

    pruned = ok(cli(memory, "prune", "--older-than", "0", "--yes"))
    assert pruned.startswith("pruned 3 sessions")
    assert ok(cli(memory, "sessions")) == "no sessions\n"
    assert list(memory.checkpoints.glob("*.json")) == []
    assert ok(cli(memory, "verify")).endswith("consistent\n")


def test_stats_counts_everything_the_memory_holds(memory):
    """`stats` gives the figures of /stats for all sessions, by status, and the sizes."""
    figures = json.loads(ok(cli(memory, "stats", "--json")))

    assert figures["sessions"] == {"shutdown_clean": 2, "closed": 1}
    assert figures["turns"] == {"delivered": len(PRIVATE_TALK), "recorded": 4}
    assert figures["state"]["open_loops"] == 2
    assert figures["state"]["reminders"] == 1
    # Bob's city, in the group; a private chat's facts are long-term memories.
    assert figures["state"]["facts"] == 1
    assert figures["summaries"] == {"extractive completed": 1}
    assert figures["memories"]["active"] == 3
    assert figures["bytes"]["checkpoint_files"] == 3
    assert figures["bytes"]["database"] == memory.db.stat().st_size

    text = ok(cli(memory, "stats"))
    assert "sessions          3 (closed 1, shutdown_clean 2)" in text
    assert f"checkpoints       {memory.checkpoints}: 3 files" in text


def test_errors_are_one_line_and_never_create_a_database(memory, tmp_path):
    """A missing database (not created), a file that is no database, an unknown session, a
    chat without an open session, a missing import file: one line on stderr, exit 2."""
    missing = tmp_path / "nowhere" / "memory.db"
    assert f"no database at {missing}" in one_error_line(cli(memory, "--db", str(missing), "stats"))
    assert not missing.exists()
    assert not missing.parent.exists()

    (tmp_path / "notes.db").write_text("these are my notes, not a database " * 10)
    assert "notes.db" in one_error_line(cli(memory, "sessions", "--db", str(tmp_path / "notes.db")))
    (tmp_path / "empty.db").touch()
    assert "not a database of this bot" in one_error_line(
        cli(memory, "sessions", "--db", str(tmp_path / "empty.db"))
    )
    assert tmp_path.joinpath("empty.db").stat().st_size == 0

    unknown = "ses_" + "0" * 32
    assert one_error_line(cli(memory, "show", unknown)).endswith(f"no session {unknown}")
    assert one_error_line(cli(memory, "history", "chat:5")).endswith("chat 5 has no open session")
    assert "nope.json: No such file or directory" in one_error_line(
        cli(memory, "import", "nope.json")
    )

    bad = cli(memory, "show", "../../etc/passwd")  # never a path: not even a session id
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert "expected a session id" in bad.stderr


def test_locations_come_from_the_environment_or_the_options(memory, tmp_path):
    """AGENT_DB_PATH and AGENT_CHECKPOINT_DIR locate the memory; --db and --checkpoints,
    before or after the command, override them."""
    elsewhere = {"AGENT_DB_PATH": str(tmp_path / "other.db"), "AGENT_CHECKPOINT_DIR": "x"}
    one_error_line(cli(memory, "sessions", env=elsewhere))
    for args in (
        ("--db", str(memory.db), "--checkpoints", str(memory.checkpoints), "sessions", "--json"),
        ("sessions", "--json", "--db", str(memory.db), "--checkpoints", str(memory.checkpoints)),
    ):
        records = json.loads(ok(cli(memory, *args, env=elsewhere)))
        assert {r["checkpoint"]["verdict"] for r in records} == {"matches"}


def test_reads_go_on_and_writes_give_up_while_another_process_holds_the_lock(memory):
    """While another process holds the write lock, reading commands work (WAL readers) and
    `forget` gives up after AGENT_DB_LOCK_TIMEOUT with one line, erasing nothing; once the
    lock is released it goes through."""
    holder_program = (
        "import sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN IMMEDIATE')\n"
        "print('locked', flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", holder_program, str(memory.db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdin is not None
        assert holder.stdout is not None
        try:
            assert holder.stdout.readline() == "locked\n"
            assert len(json.loads(ok(cli(memory, "sessions", "--json")))) == 3
            ok(cli(memory, "show", memory.private))
            ok(cli(memory, "history", memory.private))
            ok(cli(memory, "stats"))
            assert ok(cli(memory, "verify")).endswith("consistent\n")

            locked = cli(
                memory, "forget", memory.private, "--yes", env={"AGENT_DB_LOCK_TIMEOUT": "0.5"}
            )
            assert "is locked by another process" in one_error_line(locked)
            assert (memory.checkpoints / f"{memory.private}.json").exists()
        finally:
            holder.stdin.close()  # the holder exits, its transaction rolled back
    assert ok(cli(memory, "forget", memory.private, "--yes")).startswith("forgot session")


def test_commands_work_while_a_real_lane_writes_in_another_process(tmp_path):
    """While tests/lane_crash_worker.py streams turns through a real lane, every command reads
    a consistent memory (verify passes), and writes (forget, repair) take their turn at the
    lock; after the writer is killed with SIGKILL, verify --repair leaves it consistent."""
    db, checkpoints, log = tmp_path / "memory.db", tmp_path / "checkpoints", tmp_path / "ack.log"
    settings = crash_settings(db, checkpoints)
    memory = Memory(tmp_path, db, checkpoints, "", "", "")
    env = {
        "AGENT_SUMMARIZE_EVERY": str(settings.summarize_every),
        "AGENT_RECENT_TURNS": str(settings.recent_turns),
    }
    command = [
        sys.executable, str(WORKER), "--db", str(db), "--checkpoints", str(checkpoints),
        "--log", str(log), "--start-update", "1", "--chats", "3", "--new-session-rate", "0.1",
    ]  # fmt: skip
    errors = tmp_path / "worker.err"
    with (
        errors.open("w") as stderr,
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True) as worker,
    ):
        assert worker.stdout is not None
        try:
            assert worker.stdout.readline() == "opening\n"
            assert worker.stdout.readline() == "ready\n"
            while not any(r["ev"] == "ack" for r in read_log(log)):
                assert worker.poll() is None, errors.read_text()
                time.sleep(0.05)
            acks_before = len(read_log(log))
            records = json.loads(ok(cli(memory, "sessions", "--json", env=env)))
            assert records
            assert {r["checkpoint"]["verdict"] for r in records} <= {"matches", "writing"}
            for _ in range(3):
                assert ok(cli(memory, "verify", "--deep", env=env)).endswith("consistent\n")
            live = next(r["session_id"] for r in records if r["status"] != "closed")
            turns = json.loads(ok(cli(memory, "history", live, "--json", env=env)))
            assert [t["seq"] for t in turns] == list(range(1, len(turns) + 1))
            ok(cli(memory, "stats", env=env))
            closed = json.loads(
                ok(cli(memory, "sessions", "--status", "closed", "--json", env=env))
            )
            if closed:
                victim, torn = closed[0]["session_id"], closed[-1]["session_id"]
                (checkpoints / f"{torn}.json").write_text("{", encoding="utf-8")
                ok(cli(memory, "verify", "--repair", env=env))
                ok(cli(memory, "forget", victim, "--yes", env=env))
            assert worker.poll() is None, errors.read_text()
            assert len(read_log(log)) > acks_before  # the writer kept writing meanwhile
        finally:
            worker.kill()  # SIGKILL: whatever it was writing is cut short
    ok(cli(memory, "verify", "--repair", env=env))
    assert ok(cli(memory, "verify", "--deep", env=env)).endswith("consistent\n")


def test_console_scripts_and_run_bot_start_the_right_programs(tmp_path):
    """pyproject's scripts name functions that exist (agent-bot starts the bot, agent-memory
    the CLI); `python -m agent` is the CLI and `python run_bot.py` still the bot."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    assert scripts == {"agent-bot": "agent.app.launcher:main", "agent-memory": "agent.cli:main"}
    for target in scripts.values():
        module, _, name = target.partition(":")
        assert callable(getattr(import_module(module), name))

    memory_help = subprocess.run(
        [sys.executable, "-m", "agent", "--help"], capture_output=True, text=True, check=False
    )
    assert memory_help.returncode == 0
    assert memory_help.stdout.startswith("usage: agent-memory")
    for command in ("sessions", "show", "history", "recall", "checkpoint", "verify", "export",
                    "import", "forget", "prune", "stats"):  # fmt: skip
        assert f"    {command} " in memory_help.stdout
    bot_help = subprocess.run(
        [sys.executable, str(ROOT / "run_bot.py"), "--help"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bot_help.returncode == 0
    assert "--console" in bot_help.stdout


def test_memories_lists_a_chats_long_term_memory_now_with_history_and_at_a_time(memory):
    """`memories CHAT_ID` lists what the bot keeps about the chat's user (as /facts), --all
    with superseded values, --at what was true at a time; a bad time is a usage error."""
    listed = json.loads(ok(cli(memory, "memories", str(PRIVATE_CHAT), "--json")))
    assert {(m["attribute"], m["text"]) for m in listed} == {
        ("name", "Ada"),
        ("plan", "a trip to Lisbon in May"),
        ("likes", "jazz"),
    }
    assert all(m["valid_until"] is None for m in listed)
    start = min(m["valid_from"] for m in listed)
    assert (
        json.loads(ok(cli(memory, "memories", str(PRIVATE_CHAT), "--at", "2000-01-01", "--json")))
        == []
    )
    then = json.loads(ok(cli(memory, "memories", str(PRIVATE_CHAT), "--at", start, "--json")))
    assert [m["text"] for m in then] == ["Ada"]
    text = ok(cli(memory, "memories", str(PRIVATE_CHAT), "--all"))
    assert "a trip to Lisbon in May" in text
    assert (
        ok(cli(memory, "memories", str(GROUP_CHAT)))
        == f"chat {GROUP_CHAT} has no long-term memories\n"
    )
    bad = cli(memory, "memories", str(PRIVATE_CHAT), "--at", "yesterday")
    assert bad.returncode == 2
    assert "expected a time" in bad.stderr


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without any AGENT_ or TELEGRAM_ variable of the outside, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "TELEGRAM_"))}
    return {**env, "AGENT_DURABILITY": "process", **extra}


def _run(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=_clean_env(), input=stdin, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


def test_the_cli_finds_the_bots_checkpoints_from_any_directory(tmp_path):
    """The bot records its checkpoint directory in its database: `agent-memory --db PATH`
    run from another directory checks the bot's files (not ./checkpoints there), `verify
    --repair` rewrites them where the bot keeps them and writes nothing where it runs, and a
    --checkpoints naming another directory is refused for --repair with one line."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    # A new user: default paths (memory.db, checkpoints/) in the bot's own directory.
    talk = "my name is Ada\nremind me to book the hotel\n"
    assert _run(home, str(ROOT / "run_bot.py"), "--console", stdin=talk).returncode == 0
    (checkpoint,) = (home / "checkpoints").glob("ses_*.json")
    db = str(home / "memory.db")

    verified = ok(_run(elsewhere, "-m", "agent", "--db", db, "verify"))
    assert "checkpoints  1 checked: 1 matches\n" in verified
    assert verified.endswith("\nconsistent\n")
    good = checkpoint.read_bytes()
    checkpoint.write_bytes(good[:10])  # torn
    repaired = ok(_run(elsewhere, "-m", "agent", "--db", db, "verify", "--repair"))
    assert f"repaired {checkpoint.stem}: checkpoint rewritten" in repaired
    assert CheckpointWriter.parse(checkpoint.read_bytes()).turn_count == 2
    assert list(elsewhere.iterdir()) == []

    refused = _run(
        elsewhere, "-m", "agent", "--db", db, "--checkpoints", "copy", "verify", "--repair"
    )
    assert one_error_line(refused) == (
        "agent-memory: error: --repair writes only into the bot's checkpoint directory, "
        f"{home / 'checkpoints'} (recorded in the database), not {elsewhere / 'copy'}; leave "
        "out --checkpoints"
    )
    assert list(elsewhere.iterdir()) == []
    # Reading another directory (a copy) is fine: there the bot's checkpoint is missing.
    copied = _run(elsewhere, "-m", "agent", "--db", db, "--checkpoints", "copy", "verify")
    assert copied.returncode == 1
    assert f"{checkpoint.stem}  missing" in copied.stdout
    assert list(elsewhere.iterdir()) == []


def test_repair_never_creates_a_checkpoint_directory_the_bot_did_not_record(memory, tmp_path):
    """A database whose bot recorded no checkpoint directory (written before the record
    existed): --repair refuses a directory that does not exist, with one line, and creates
    none; an existing one given with --checkpoints is repaired."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"AGENT_CHECKPOINT_DIR": "checkpoints"}  # relative: not here
    run = subprocess.run(
        [sys.executable, "-m", "agent", "--db", str(memory.db), "verify", "--repair"],
        cwd=elsewhere, env={**memory.env, **env}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert one_error_line(run) == (
        f"agent-memory: error: no checkpoint directory at {elsewhere / 'checkpoints'}: --repair "
        "never creates one; pass --checkpoints DIR, the bot's AGENT_CHECKPOINT_DIR (nothing "
        "was written)"
    )
    assert list(elsewhere.iterdir()) == []
    assert ok(cli(memory, "verify", "--repair")).endswith("consistent\n")


def test_history_grep_matches_words_unless_substring_is_asked(memory):
    """`history --grep` matches words as /recall does (any case, any form: "hotels" finds
    "hotel"), so "mind" does not find "remind"; --substring matches parts of words; a grep
    of no word at all is refused with one line."""

    def seqs(*args: str) -> list[str]:
        text = ok(cli(memory, "history", memory.private, *args))
        return [line.split()[0] for line in text.splitlines() if line.startswith("#")]

    assert seqs("--grep", "mind") == []
    assert seqs("--grep", "REMIND", "Hotels") == ["#3"]
    assert seqs("--grep", "mind", "--substring") == ["#3", "#6"]
    assert seqs("--grep", "jazz") == ["#7"]
    assert seqs("--grep", "az", "--substring") == ["#7"]
    assert seqs("--grep", "az") == []
    assert "--substring" in one_error_line(cli(memory, "history", memory.private, "--grep", "!!"))


def _terminal_run(
    cwd: Path, env: dict[str, str], *args: str, stdin: bytes = b""
) -> tuple[int, str]:
    """Run ``python -m agent ARGS`` on a pseudo-terminal (stdin, stdout and stderr) of 120
    columns; return its exit code and everything the terminal showed."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", *args], cwd=cwd, env={**env, "TERM": "xterm-256color"},
        stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    if stdin:
        os.write(master, stdin)
    shown = b""
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            shown += chunk
        return proc.wait(120), shown.decode("utf-8", "replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


@pytest.fixture
async def many(tmp_path: Path) -> Memory:
    """A memory of 40 chats (one session of two turns each), written by the real lane."""
    db, checkpoints = tmp_path / "memory.db", tmp_path / "checkpoints"
    async with writing_lane(db, checkpoints) as (lane, engine):
        for chat in range(1, 41):
            for n, text in enumerate((f"my name is Person{chat}", "remind me to water plants")):
                message = InboundMessage(
                    chat_id=chat, text=text, user_id=chat, update_id=chat * 10 + n
                )
                await lane.on_turn(message, engine)
    return Memory(tmp_path, db, checkpoints, "", "", "")


_ESCAPE = "\x1b["


def test_output_is_plain_when_piped_and_rich_in_a_terminal_unless_no_color(many):
    """Piped, every command prints plain text (no escape codes, no trailing spaces); in a
    terminal the same table comes with colour and emphasis, and with NO_COLOR set it is plain
    again; --json is the same JSON everywhere."""
    for args in (("sessions",), ("show", "chat:3"), ("verify",), ("stats",),
                 ("history", "chat:3"), ("memories", "3")):  # fmt: skip
        text = ok(cli(many, *args))
        assert _ESCAPE not in text, args
        assert all(line == line.rstrip() for line in text.splitlines()), args

    code, shown = _terminal_run(many.root, many.env, "sessions")
    assert code == 0
    assert f"{_ESCAPE}1mSESSION" in shown  # the header, in bold
    assert f"{_ESCAPE}32mmatches" in shown  # a verdict, in green
    assert len([line for line in shown.splitlines() if "ses_" in line]) == 40
    code, plain = _terminal_run(many.root, {**many.env, "NO_COLOR": "1"}, "sessions")
    assert code == 0
    assert _ESCAPE not in plain
    piped = ok(cli(many, "sessions")).splitlines()
    assert [line.split()[:2] for line in plain.splitlines()] == [line.split()[:2] for line in piped]

    record = json.loads(ok(cli(many, "memories", "3", "--json")))
    code, shown = _terminal_run(many.root, many.env, "memories", "3", "--json")
    assert code == 0
    assert json.loads(shown.replace("\r\n", "\n")) == record


def test_long_work_shows_progress_in_a_terminal_and_nothing_when_piped(many, tmp_path):
    """verify --deep, export --all, import and prune over many sessions draw a progress bar
    in a terminal (gone when done); piped, stderr stays empty and stdout is the plain
    result."""
    code, shown = _terminal_run(many.root, many.env, "verify", "--deep")
    assert code == 0
    assert "folding each session's turn log" in shown
    assert "━" in shown  # the bar
    assert "40/40" in shown
    assert shown.rstrip().endswith("consistent")
    assert ok(cli(many, "verify", "--deep")).endswith("\nconsistent\n")

    out = tmp_path / "exported"
    code, shown = _terminal_run(many.root, many.env, "export", "--all", "-o", str(out))
    assert code == 0
    assert "exporting 40 sessions" in shown
    assert f"exported 40 sessions (80 turns) to {out}" in shown
    files = sorted(out.iterdir())
    assert len(files) == 40
    assert all(path.name.startswith("ses_") and path.suffix == ".json" for path in files)

    code, shown = _terminal_run(
        many.root, many.env, "prune", "--older-than", "0", "--yes"
    )
    assert code == 0
    assert "erasing 40 sessions" in shown
    assert "pruned 40 sessions" in shown
    code, shown = _terminal_run(many.root, many.env, "import", *map(str, files[:20]))
    assert code == 0
    assert "importing 20 sessions" in shown
    assert shown.count("imported session ") == 20
    imported = ok(cli(many, "import", *map(str, files[20:])))
    assert imported.count("imported session ") == 20
    assert len(json.loads(ok(cli(many, "sessions", "--json")))) == 40
    assert ok(cli(many, "verify", "--deep")).endswith("\nconsistent\n")


def test_export_of_several_sessions_needs_a_directory_and_import_checks_every_file_first(
    many, tmp_path
):
    """Several sessions export into a directory only (to stdout: one line, exit 2, nothing
    written); an import of several files checks them all before writing any: one that is no
    export, or a session that exists, refuses the whole import."""
    refused = cli(many, "export", "chat:1", "chat:2")
    assert one_error_line(refused).endswith(
        "several sessions go into a directory: pass --output DIR"
    )
    assert refused.stdout == ""
    assert "--all" in one_error_line(cli(many, "export"))
    ok(cli(many, "export", "chat:1", "chat:2", "--format", "markdown", "-o", "two"))
    assert sorted(p.suffix for p in (many.root / "two").iterdir()) == [".md", ".md"]
    ok(cli(many, "export", "chat:1", "chat:2", "-o", "json"))
    first, second = sorted((many.root / "json").iterdir())
    (many.root / "junk.json").write_text("{}")
    ok(cli(many, "forget", "chat:1", "--yes"))
    assert "junk.json is not a session export" in one_error_line(
        cli(many, "import", str(first), "junk.json")
    )
    assert "already exists" in one_error_line(cli(many, "import", str(first), str(second)))
    assert len(json.loads(ok(cli(many, "sessions", "--json")))) == 39  # nothing imported
    record = json.loads(ok(cli(many, "import", str(first), "--json")))
    assert record["turns"] == 2  # one file: the record itself, as before
