"""Tests of the summary version chain: the table, the writer, the lane and the model worker.

The chain is checked against a real SQLite file and the real lane; the optional LLM summarizer
talks real HTTP to a local fake OpenAI-compatible server (tests/fake_llm_api.py).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from agent.app.wiring import open_lane as runtime_lane
from agent.config import Settings
from agent.db import Database
from agent.engines.llm_summarizer import OpenAICompatSummarizer
from agent.errors import StorageError
from agent.memory import (
    CheckpointWriter,
    ConversationContextPacket,
    ConversationLane,
    ConversationTurn,
    InboundMessage,
    Reply,
    SessionState,
)
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_store import SqliteConversationStore
from agent.memory.conversation_summarizer import ExtractiveSummarizer
from agent.memory.schemas import SummaryVersion
from agent.memory.summaries.summary_store import SqliteSummaryStore
from agent.memory.summaries.summary_worker import SummaryWorker
from agent.memory.writer import write_conversation_turn, write_summary_version
from tests.fake_llm_api import Answer, FakeLLMApi, completion

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
CHAT = 4242
MARKER = "zanzibarquokka"


class NotedEngine:
    """Answers every message the same way (a fixed reply keeps runs byte-identical)."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply(text="Noted.", intent="chat")


def text_of(n: int) -> str:
    """Message n of a long chat: decisions, facts, questions and plain talk in turn."""
    lines = [
        "We should compare hosting offers for the shop. The shop needs a new server.",
        "I live in Porto. The shop opens in June.",
        "Who pays for the domain renewal?",
        "The server migration takes a weekend. Backups run every night.",
        "Let's go with the cheaper hosting offer",
        "The newsletter goes out on Mondays. Mondays are busy for the shop.",
        f"I like espresso. The {MARKER} mascot needs a name.",
        "thanks",
    ]
    return f"{lines[n % len(lines)]} Note {n}."


def message(n: int) -> InboundMessage:
    return InboundMessage(chat_id=CHAT, text=text_of(n), update_id=n, received_at=T0)


class Parts(NamedTuple):
    """What a test's lane was built from: its database, chain store and model worker."""

    db: Database
    summaries: SqliteSummaryStore
    worker: SummaryWorker | None


@asynccontextmanager
async def open_lane(
    tmp_path: Path,
    *,
    every_n: int = 10,
    retention: int = 100,
    model: OpenAICompatSummarizer | None = None,
    name: str = "memory",
) -> AsyncIterator[tuple[ConversationLane, Parts]]:
    """A lane over a real file (durability ``process``: quick), hydrated, shut down after;
    with the parts the test built it from (to read raw rows and drive the chain's store)."""
    db = await Database(tmp_path / f"{name}.db", durability="process").open()
    store = SqliteSummaryStore(retention=retention)
    worker = None if model is None else SummaryWorker(db, model, store=store, clock=lambda: T0)
    lane = ConversationLane(
        db,
        CheckpointWriter(tmp_path / f"{name}-checkpoints", fsync=False),
        state_manager=ConversationStateManager(ExtractiveSummarizer(every_n=every_n, keep_raw=3)),
        builder=ConversationContextBuilder(token_budget=2000, recent_turns=3),
        summary_store=store,
        summary_worker=worker,
        clock=lambda: T0,
    )
    await lane.hydrate()
    try:
        yield lane, Parts(db, store, worker)
    finally:
        await lane.shutdown()


async def talk(lane: ConversationLane, start: int, stop: int) -> str:
    """Send messages ``start .. stop - 1``; return the session id."""
    engine = NotedEngine()
    for n in range(start, stop):
        await lane.on_turn(message(n), engine)
    sid = lane.session_id_for_chat(CHAT)
    assert sid is not None
    return sid


async def rows(db: Database, sid: str) -> list[dict[str, Any]]:
    found = await db.fetchall(
        "SELECT * FROM conversation_summaries WHERE session_id = ? ORDER BY summary_id", (sid,)
    )
    return [dict(row) for row in found]


def extractive(chain: list[SummaryVersion]) -> list[SummaryVersion]:
    return [entry for entry in chain if entry.summarizer == "extractive"]


async def assert_chain_matches_state(lane: ConversationLane, sid: str) -> SummaryVersion:
    """I6 for the chain: the latest extractive version is the state's summary, and the state
    is the one the turn log rebuilds."""
    session = await lane.inspector.session(sid)
    assert session is not None
    chain = await lane.inspector.summary_history(sid)
    latest = [e for e in extractive(chain) if e.status == "completed"][-1]
    state = session.state
    assert latest.text == state.rolling_summary
    assert (latest.version, latest.to_seq) == (state.summary_version, state.summarized_through)
    rebuilt = await lane.inspector.rebuild_state(sid)
    assert rebuilt.log_view() == state.log_view()
    return latest


# -- the extractive chain ----------------------------------------------------------------------


async def write_log(db: Database, count: int, *, retention: int) -> str:
    """Fold ``count`` turns and write them with their chain, as the lane's commit does (the
    turn, its state, its summary version), in one transaction; return the session id."""
    manager = ConversationStateManager(ExtractiveSummarizer())
    store, chain = SqliteConversationStore(), SqliteSummaryStore(retention=retention)
    sid = "ses_" + "ab" * 16
    state = SessionState(session_id=sid)

    async def work(tx: Any) -> None:
        nonlocal state
        await store.create_session(
            tx, session_id=sid, chat_id=CHAT, chat_type="private", user_id=None, title=None, now=T0
        )
        for n in range(1, count + 1):
            turn = ConversationTurn(
                turn_id=f"trn_{n:032x}",
                session_id=sid,
                seq=n,
                user_text=text_of(n),
                assistant_text="Noted.",
                created_at=T0,
            )
            after = manager.apply(state, turn)
            await write_conversation_turn(tx, store, turn, after, now=T0)
            await write_summary_version(tx, chain, state, after, now=T0)
            state = after

    await db.write(work)
    return sid


def assert_linked(chain: list[SummaryVersion]) -> None:
    """Each version names the turns its delta adds (right after its parent's) and its parent."""
    for older, newer in itertools.pairwise(chain):
        assert newer.version == older.version + 1
        assert newer.parent_summary_id == older.summary_id
        assert newer.from_seq == older.to_seq + 1
        assert newer.delta.splitlines()[0] == f"[turns {newer.from_seq}-{newer.to_seq}]"
        assert newer.text.endswith(newer.delta)


def content(chain: list[SummaryVersion]) -> list[bytes]:
    return [repr((e.version, e.from_seq, e.to_seq, e.text, e.delta)).encode("utf-8") for e in chain]


async def test_chain_over_1000_turns_is_bounded_and_deterministic(tmp_path):
    """Over 1,000 turns the chain keeps the newest ``retention`` versions, each within the
    summary's bound and naming its turn range and its parent; two runs of the same turns give
    byte-identical chains, and keeping every version changes none of them."""
    chains = {}
    for name, retention in (("first", 20), ("second", 20), ("all", 0)):
        async with Database(tmp_path / f"{name}.db", durability="process") as db:
            sid = await write_log(db, 1000, retention=retention)
            chains[name] = await SqliteSummaryStore().history(db.reader, sid)
            (count,) = await db.fetchone("SELECT COUNT(*) FROM conversation_summaries") or (0,)
            oldest_parent = await SqliteSummaryStore().get(
                db.reader, chains[name][0].parent_summary_id or 0
            )
        assert count == len(chains[name])
        assert_linked(chains[name])
        assert all(len(entry.text) <= 2000 for entry in chains[name])
        assert all(e.summarizer == "extractive" and e.status == "completed" for e in chains[name])
        if retention:
            # The oldest kept version still names its parent, which retention pruned.
            assert chains[name][0].parent_summary_id is not None
            assert oldest_parent is None

    first, second, every = chains["first"], chains["second"], chains["all"]
    assert [e.version for e in first] == list(range(81, 101))
    assert (first[-1].from_seq, first[-1].to_seq) == (988, 997)
    assert content(first) == content(second)
    assert len(every) == 100
    assert (every[0].from_seq, every[0].parent_summary_id) == (1, None)
    assert content(every[-20:]) == content(first)


async def test_the_lane_writes_the_chain_with_its_turns(tmp_path):
    """Through the lane, every fold adds one version, linked to the one before; the newest is
    the state's summary (and the log's rebuild); the versions are the ones the same turns fold
    to anywhere."""
    async with open_lane(tmp_path, retention=10) as (lane, _):
        sid = await talk(lane, 1, 301)
        chain = await lane.inspector.summary_history(sid)
        latest = await assert_chain_matches_state(lane, sid)
    async with Database(tmp_path / "reference.db", durability="process") as db:
        reference = await SqliteSummaryStore().history(
            db.reader, await write_log(db, 300, retention=10)
        )

    assert [e.version for e in chain] == list(range(21, 31))
    assert_linked(chain)
    assert chain[-1] == latest
    assert content(chain) == content(reference)


async def test_decisions_facts_and_questions_survive_in_the_chain(tmp_path):
    """What the first turns decided, stated and left open is still in the newest version
    after 300 turns; their plain talk is compressed away."""
    async with open_lane(tmp_path) as (lane, _):
        engine = NotedEngine()
        opening = [
            "We agreed to open a second shop in Braga",
            "My name is Ada",
            "Where do we find a cheap van?",
            "The old espresso machine leaks water on the counter.",
        ]
        for n, said in enumerate(opening, start=1):
            answer = None if said.endswith("?") else "Noted."
            await lane.on_turn(
                InboundMessage(chat_id=CHAT, text=said, update_id=n, received_at=T0),
                _Fixed(answer),
            )
        for n in range(5, 301):
            await lane.on_turn(
                InboundMessage(
                    chat_id=CHAT, text=f"Inventory line {n} lists {n} boxes of beans.", update_id=n
                ),
                engine,
            )
        sid = lane.session_id_for_chat(CHAT)
        assert sid is not None
        latest = await assert_chain_matches_state(lane, sid)

    assert "#1 user [decision]: We agreed to open a second shop in Braga" in latest.text
    assert "#2 user [fact]: name: Ada" in latest.text
    assert "#3 user [open question]: Where do we find a cheap van?" in latest.text
    assert "espresso machine" not in latest.text
    assert latest.text.startswith("[digest of turns 1-")


class _Fixed:
    """Answers with a fixed text (``None``: stays silent)."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply(text=self.text)


async def test_the_chain_row_commits_with_its_turn(tmp_path, monkeypatch):
    """If writing the summary version fails, the turn that folded is not committed either:
    the chain is never behind the log; the same message then commits both."""
    async with open_lane(tmp_path) as (lane, parts):
        sid = await talk(lane, 1, 10)
        calls = 0
        real = SqliteSummaryStore.append_extractive

        async def fail_once(self: SqliteSummaryStore, *args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise StorageError("disk full (injected)")
            return await real(self, *args, **kwargs)

        monkeypatch.setattr(SqliteSummaryStore, "append_extractive", fail_once)

        with pytest.raises(StorageError, match="injected"):
            await lane.on_turn(message(10), NotedEngine())
        session = await lane.inspector.session(sid)
        assert session is not None
        assert session.turn_count == 9
        assert await rows(parts.db, sid) == []

        result = await lane.on_turn(message(10), NotedEngine())
        assert result.turn.seq == 10
        latest = await assert_chain_matches_state(lane, sid)
        assert (latest.version, latest.from_seq, latest.to_seq) == (1, 1, 7)


class _Killed(BaseException):
    """Stands for the process dying: nothing after it runs."""


async def test_a_crash_between_commit_and_checkpoint_cannot_desync(tmp_path, monkeypatch):
    """Killed after the folding turn's commit, before its checkpoint: at the next start the
    checkpoint is rebuilt, and the chain already has the version, equal to the state."""
    db_path = tmp_path / "memory.db"
    checkpoints = tmp_path / "checkpoints"
    db = await Database(db_path, durability="process").open()
    lane = ConversationLane(db, CheckpointWriter(checkpoints, fsync=False))
    await lane.hydrate()
    sid = await talk(lane, 1, 10)

    async def die(self: CheckpointWriter, snapshot: Any, **options: Any) -> Any:
        raise _Killed

    monkeypatch.setattr(CheckpointWriter, "write", die)
    with pytest.raises(_Killed):
        await lane.on_turn(message(10), NotedEngine())  # turn 10 folds
    await db.close()  # no shutdown: the process is gone
    monkeypatch.undo()

    db = await Database(db_path, durability="process").open()
    restarted = ConversationLane(db, CheckpointWriter(checkpoints, fsync=False))
    try:
        report = await restarted.hydrate()
        assert report.rebuilt[sid].startswith("is behind the log")
        latest = await assert_chain_matches_state(restarted, sid)
        assert (latest.version, latest.to_seq) == (1, 7)
        snapshot = await restarted.inspector.checkpoint(sid)
        assert snapshot is not None
        assert snapshot.state.rolling_summary == latest.text
    finally:
        await restarted.shutdown()


async def test_forget_and_prune_remove_the_chain(tmp_path):
    """``/forget`` deletes a session's summary versions with it (model ones too): no table of
    the database file holds the session's words any more; pruning does the same."""
    with FakeLLMApi(f"The {MARKER} mascot was discussed.") as api:
        model = OpenAICompatSummarizer(api.base_url, "fake-model", None)
        async with open_lane(tmp_path, model=model) as (lane, parts):
            sid = await talk(lane, 1, 25)
            assert parts.worker is not None
            await lane.inspector.wait_summaries()
            kinds = {row["summarizer"] for row in await rows(parts.db, sid)}
            assert kinds == {"extractive", "llm"}

            assert await lane.forget_session(sid)

            assert await rows(parts.db, sid) == []
            tables = await parts.db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
            for (table,) in tables:
                for row in await parts.db.fetchall(f'SELECT * FROM "{table}"'):  # noqa: S608
                    texts = [value for value in row if isinstance(value, str)]
                    assert not any(MARKER in text for text in texts), table

            other = await talk(lane, 100, 125)
            assert await rows(parts.db, other)
            assert await lane.prune(older_than_days=-1) == [other]
            assert await rows(parts.db, other) == []


# -- the model summarizer ----------------------------------------------------------------------


async def fold_with_model(
    tmp_path: Path, model: OpenAICompatSummarizer
) -> tuple[list[SummaryVersion], ConversationContextPacket | None, SummaryVersion]:
    """Say turns 1..4 in a lane with ``model`` (turn 4 folds turns 1..1), wait for the model run;
    return the session's summary chain, the chat's packet and the checked latest version."""
    async with open_lane(tmp_path, every_n=4, model=model) as (lane, parts):
        sid = await talk(lane, 1, 5)
        assert parts.worker is not None
        await lane.inspector.wait_summaries()
        chain = await lane.inspector.summary_history(sid)
        packet = await lane.inspector.packet(CHAT)
        latest = await assert_chain_matches_state(lane, sid)
    return chain, packet, latest


async def test_llm_summary_completes_under_the_chain(tmp_path):
    """A fold starts a model run: a ``processing`` row for the new extractive version, then
    ``completed`` with the model's text; the packet offers it beside the extractive summary,
    and the state (and its rebuild) stay extractive."""
    with FakeLLMApi("Ada runs a shop in Porto and chose cheap hosting.") as api:
        model = OpenAICompatSummarizer(api.base_url, "fake-model", "sk-test-key")
        chain, packet, latest = await fold_with_model(tmp_path, model)

    assert [(e.summarizer, e.status) for e in chain] == [
        ("extractive", "completed"),
        ("llm", "completed"),
    ]
    base, llm = chain
    assert base == latest
    assert llm.parent_summary_id == base.summary_id
    assert (llm.version, llm.from_seq, llm.to_seq) == (base.version, base.from_seq, base.to_seq)
    assert llm.text == "Ada runs a shop in Porto and chose cheap hosting."
    assert llm.generation_ms is not None
    assert llm.completed_at is not None
    assert packet is not None
    assert packet.llm_session_summary == llm.text
    assert packet.rolling_session_summary == base.text  # the extractive one stays
    (request,) = api.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-key"
    assert request.body["model"] == "fake-model"
    prompt = request.body["messages"][1]["content"]
    assert base.text in prompt
    assert f"#1 user: {text_of(1)}" in prompt


@pytest.mark.parametrize(
    "answer",
    [Answer(status=500), Answer(body=b"not json"), Answer(body=completion("   "))],
    ids=["http-500", "malformed", "empty"],
)
async def test_llm_failure_marks_failed_and_the_extractive_summary_stays(tmp_path, answer):
    """A model run that fails is marked ``failed`` with the error; the extractive version stays
    the latest summary and the packet offers no model summary."""
    with FakeLLMApi() as api:
        api.script(answer)
        model = OpenAICompatSummarizer(api.base_url, "fake-model", None)
        chain, packet, latest = await fold_with_model(tmp_path, model)

    assert [(e.summarizer, e.status) for e in chain] == [
        ("extractive", "completed"),
        ("llm", "failed"),
    ]
    failed = chain[1]
    assert failed.error
    assert failed.text == ""
    assert failed.completed_at is not None
    assert latest == chain[0]
    assert packet is not None
    assert packet.llm_session_summary == ""
    assert packet.rolling_session_summary == latest.text


async def test_llm_summaries_never_run_twice_at_once_for_a_session(tmp_path):
    """While a model run is in progress, a second one for the session is refused by the
    database (another process) and deferred in this process: it runs after the first, for the
    newest version, and the model is never asked twice at the same time."""
    with FakeLLMApi("second") as api:
        api.script(Answer(body=completion("first"), delay=3))
        model = OpenAICompatSummarizer(api.base_url, "fake-model", None)
        async with open_lane(tmp_path, every_n=4, model=model) as (lane, parts):
            worker = parts.worker
            assert worker is not None
            sid = await talk(lane, 1, 5)  # version 1: its run waits 3 s for the model
            while not api.requests:
                await asyncio.sleep(0.01)
            await talk(lane, 5, 13)  # versions 2 and 3 while version 1 runs
            await asyncio.sleep(0.1)
            in_progress = await parts.db.fetchall(
                "SELECT version FROM conversation_summaries WHERE status = 'processing'"
            )
            assert [row["version"] for row in in_progress] == [1]
            assert len(api.requests) == 1
            # Another process (another worker on the same file) cannot start one now.
            newest = await parts.summaries.latest(parts.db.reader, sid)
            assert newest is not None
            refused = await parts.db.write(
                lambda tx: parts.summaries.begin_llm(tx, newest, now=T0)
            )
            assert refused is None

            await worker.wait_idle()
            chain = await lane.inspector.summary_history(sid)

    llm = [(e.version, e.status, e.text) for e in chain if e.summarizer == "llm"]
    assert llm == [(1, "completed", "first"), (3, "completed", "second")]
    assert len(api.requests) == 2
    assert "(turns 1-1)" in api.requests[0].body["messages"][1]["content"]
    assert "(turns 6-9)" in api.requests[1].body["messages"][1]["content"]


async def test_a_run_cut_short_by_a_restart_is_marked_failed(tmp_path):
    """A model run still ``processing`` when the process died is ``failed`` after the next
    start, so the session can summarise again."""
    with FakeLLMApi() as api:
        model = OpenAICompatSummarizer(api.base_url, "fake-model", None)
        async with open_lane(tmp_path, every_n=4) as (lane, parts):
            sid = await talk(lane, 1, 5)
            base = await parts.summaries.latest(parts.db.reader, sid)
            assert base is not None
            started = await parts.db.write(lambda tx: parts.summaries.begin_llm(tx, base, now=T0))
            assert started is not None
        async with open_lane(tmp_path, every_n=4, model=model) as (lane, parts):
            entry = await parts.summaries.get(parts.db.reader, started.summary_id)
            assert parts.worker is not None
            await talk(lane, 5, 9)  # the next version runs normally
            await lane.inspector.wait_summaries()
            chain = await lane.inspector.summary_history(sid)

    assert entry is not None
    assert (entry.status, entry.error) == (
        "failed",
        "interrupted: the process stopped during the run",
    )
    assert [(e.version, e.status) for e in chain if e.summarizer == "llm"] == [
        (1, "failed"),
        (2, "completed"),
    ]


async def test_shutdown_cancels_a_run_in_progress_and_marks_it_failed(tmp_path):
    """Stopping the bot does not wait for a slow model: the run is cancelled and ``failed``."""
    with FakeLLMApi() as api:
        api.script(Answer(delay=30))
        model = OpenAICompatSummarizer(api.base_url, "fake-model", None, timeout=60)
        async with open_lane(tmp_path, every_n=4, model=model) as (lane, _):
            sid = await talk(lane, 1, 5)
            while not api.requests:
                await asyncio.sleep(0.01)
            began = time.monotonic()
        took = time.monotonic() - began
        async with Database(tmp_path / "memory.db") as db:
            found = await db.fetchall(
                "SELECT status, error FROM conversation_summaries"
                " WHERE session_id = ? AND summarizer = 'llm'",
                (sid,),
            )

    assert took < 5
    assert [tuple(row) for row in found] == [
        ("failed", "cancelled: the bot stopped or the session closed")
    ]


async def test_the_settings_turn_the_llm_summarizer_on(tmp_path):
    """With ``AGENT_LLM_SUMMARIZER`` and the LLM endpoint set, the lane the runtime builds runs
    model summaries (capped at ``AGENT_SUMMARY_MAX_CHARS``), keeps ``AGENT_SUMMARY_RETENTION``
    versions; without the flag it runs none."""
    with FakeLLMApi("m" * 500) as api:
        base = {
            "_env_file": None,
            "durability": "process",
            "summarize_every": 4,
            "summary_max_chars": 300,
            "summary_retention": 2,
            "llm_base_url": api.base_url,
            "llm_model": "fake-model",
        }
        for flag in (False, True):
            settings = Settings(
                **base,  # type: ignore[arg-type]
                db_path=tmp_path / f"memory-{flag}.db",
                checkpoint_dir=tmp_path / f"checkpoints-{flag}",
                llm_summarizer=flag,
            )
            lane = await runtime_lane(settings)
            try:
                await lane.hydrate()
                sid = await talk(lane, 1, 17)
                await lane.inspector.wait_summaries()  # none run without the flag
                chain = await lane.inspector.summary_history(sid)
            finally:
                await lane.shutdown()
            assert [e.version for e in extractive(chain)] == [3, 4]
            assert all(len(e.text) <= 300 for e in chain)
            llm = [e for e in chain if e.summarizer == "llm"]
            if flag:
                # Versions 1-2 were pruned with their model rows; 3 may have been skipped
                # for 4 if a run was still going (requests coalesce).
                assert [e.version for e in llm][-1:] == [4]
                assert {(e.version, e.status) for e in llm} <= {(3, "completed"), (4, "completed")}
                assert all(len(e.text) == 300 for e in llm)  # cut to the bound
            else:
                assert llm == []
