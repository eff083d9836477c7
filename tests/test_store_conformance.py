"""The store conformance suite: the contract every storage backend passes (STYLE.md habit 15).

Each test runs once per backend of the ``backend`` fixture: ``sqlite`` (real files in
``tmp_path``) and ``postgres`` (a fresh schema on the server at ``AGENT_TEST_POSTGRES_URL``,
marked ``postgres``). A
backend yields a :class:`Backend`: an open database (``write`` hands a
:class:`~agent.db.Transaction` to the work, ``read`` a :class:`~agent.db.Snapshot`, ``reader``
is a :class:`~agent.db.Transaction` for reads) and its stores. The tests go through the store
protocols and those two types only: no SQL, no driver, so that what passes here on one backend
means the same on another. Shaped like langgraph's checkpoint conformance tests (one suite, a
fixture per saver).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.db import AnyDatabase, Database, Transaction
from agent.errors import StorageError
from agent.memory.conversation_store import ConversationStore, SqliteConversationStore
from agent.memory.group_schemas import Decision, Proposal
from agent.memory.longterm.memory_store import MemoryStore, SqliteMemoryStore
from agent.memory.schemas import (
    ConversationTurn,
    Fact,
    JobRef,
    MemoryCandidate,
    OpenLoop,
    PendingClarification,
    SessionState,
)
from agent.memory.summaries.summary_store import SqliteSummaryStore, SummaryStore

T0 = datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC)


@dataclass
class Backend:
    """An open database of one backend and its stores."""

    db: AnyDatabase
    turns: ConversationStore
    memories: MemoryStore
    summaries: SummaryStore

    def journal(self, bot_id: int, clock: Callable[[], datetime] = lambda: T0) -> InboundJournal:
        return InboundJournal(self.db, bot_id=bot_id, clock=clock)

    async def write(self, work: Callable[[Transaction], Awaitable[Any]]) -> Any:
        return await self.db.write(work)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """Each backend: a fresh, migrated database and its stores, closed after the test."""
    if request.param == "postgres":
        from agent.db.postgres import PostgresDatabase  # the `postgres` extra
        from agent.memory.longterm.postgres_memory_store import PostgresMemoryStore
        from agent.memory.storage.postgres_conversation_store import PostgresConversationStore
        from agent.memory.summaries.postgres_summary_store import PostgresSummaryStore

        url = request.getfixturevalue("postgres_url")
        async with PostgresDatabase(url) as pg:
            yield Backend(
                pg, PostgresConversationStore(), PostgresMemoryStore(), PostgresSummaryStore()
            )
        return
    async with Database(tmp_path / "conformance.db") as db:
        yield Backend(db, SqliteConversationStore(), SqliteMemoryStore(), SqliteSummaryStore())


# -- helpers ---------------------------------------------------------------------------------


async def new_session(b: Backend, sid: str, chat_id: int = 1, *, now: datetime = T0) -> None:
    await b.write(
        lambda tx: b.turns.create_session(
            tx, session_id=sid, chat_id=chat_id, chat_type="private", user_id=chat_id,
            title=None, now=now,
        )
    )  # fmt: skip


def turn(sid: str, seq: int, text: str | None = None, **fields: Any) -> ConversationTurn:
    return ConversationTurn(
        turn_id=f"trn_{sid}_{seq:05d}",
        session_id=sid,
        seq=seq,
        user_text=f"user {seq}" if text is None else text,
        created_at=T0 + timedelta(seconds=seq),
        **{"assistant_text": f"bot {seq}", **fields},
    )


async def append(b: Backend, *turns: ConversationTurn) -> list[bool]:
    async def work(tx: Transaction) -> list[bool]:
        return [await b.turns.append_turn(tx, t) for t in turns]

    return await b.write(work)


def fact(text: str, key: str = "location", confidence: float = 0.9) -> MemoryCandidate:
    return MemoryCandidate(
        kind="fact", attribute=key, key=key, text=text, confidence=confidence, importance=0.7
    )


async def remember(
    b: Backend, chat_id: int, candidate: MemoryCandidate, *, source: tuple[str, int] | None,
    now: datetime = T0,
) -> Any:  # fmt: skip
    return await b.write(
        lambda tx: b.memories.record(tx, chat_id, candidate, source=source, threshold=0.5, now=now)
    )


# -- conversation store: sessions -----------------------------------------------------------


async def test_a_created_session_reads_back_open_and_empty(backend: Backend):
    """create_session returns the session it stored: open, no turns, the given chat."""
    created = await backend.write(
        lambda tx: backend.turns.create_session(
            tx, session_id="ses_a", chat_id=5, chat_type="group", user_id=9, title="Team",
            now=T0,
        )
    )  # fmt: skip
    read = await backend.turns.get_session(backend.db.reader, "ses_a")
    assert read == created
    assert (read.chat_id, read.chat_type, read.title, read.closed_at) == (5, "group", "Team", None)
    assert (read.turn_count, read.last_seq) == (0, 0)
    assert await backend.turns.get_session(backend.db.reader, "ses_missing") is None


async def test_a_chat_has_one_open_session(backend: Backend):
    """A second open session of a chat is refused (StorageError); closing frees the place,
    and reopen_session makes a closed one open again only when it is closed."""
    await new_session(backend, "ses_a", chat_id=1)
    with pytest.raises(StorageError):
        await new_session(backend, "ses_b", chat_id=1)
    reader = backend.db.reader
    assert (await backend.turns.open_session_for_chat(reader, 1)).session_id == "ses_a"
    await backend.write(lambda tx: backend.turns.close_session(tx, "ses_a", now=T0))
    assert await backend.turns.open_session_for_chat(reader, 1) is None
    await new_session(backend, "ses_b", chat_id=1)
    await backend.write(lambda tx: backend.turns.close_session(tx, "ses_b", now=T0))
    assert await backend.write(lambda tx: backend.turns.reopen_session(tx, "ses_a", now=T0))
    assert not await backend.write(lambda tx: backend.turns.reopen_session(tx, "ses_a", now=T0))
    assert (await backend.turns.open_session_for_chat(reader, 1)).session_id == "ses_a"


async def test_sessions_are_listed_most_recent_first_and_filtered(backend: Backend):
    """list_sessions: newest activity first, limit, open_only and chat_id filters;
    existing_session_ids tells which ids exist; open_session_pages yields every open one."""
    for n, sid in enumerate(["ses_a", "ses_b", "ses_c"]):
        await new_session(backend, sid, chat_id=n + 1, now=T0 + timedelta(minutes=n))
    closed_at = T0 + timedelta(minutes=5)  # closing is activity
    await backend.write(lambda tx: backend.turns.close_session(tx, "ses_b", now=closed_at))
    reader = backend.db.reader
    listed = await backend.turns.list_sessions(reader, limit=None)
    assert [s.session_id for s in listed] == ["ses_b", "ses_c", "ses_a"]
    assert [s.session_id for s in await backend.turns.list_sessions(reader, limit=1)] == ["ses_b"]
    open_only = await backend.turns.list_sessions(reader, limit=None, open_only=True)
    assert {s.session_id for s in open_only} == {"ses_a", "ses_c"}
    of_chat = await backend.turns.list_sessions(reader, limit=None, chat_id=2)
    assert [s.session_id for s in of_chat] == ["ses_b"]
    known = await backend.turns.existing_session_ids(reader, ["ses_a", "ses_x", "ses_c"])
    assert known == {"ses_a", "ses_c"}
    pages = [page async for page in backend.turns.open_session_pages(reader)]
    assert sorted(s.session_id for page in pages for s in page) == ["ses_a", "ses_c"]


async def test_save_state_stores_the_state_and_a_missing_session_is_an_error(backend: Backend):
    """save_state keeps the state and counters; set_status changes every open session once."""
    await new_session(backend, "ses_a")
    state = SessionState(session_id="ses_a", turn_count=3, rolling_summary="so far")
    await backend.write(lambda tx: backend.turns.save_state(tx, state, last_seq=3, now=T0))
    read = await backend.turns.get_session(backend.db.reader, "ses_a")
    assert (read.state.turn_count, read.state.rolling_summary, read.last_seq) == (3, "so far", 3)
    ghost = SessionState(session_id="ses_ghost")
    with pytest.raises(StorageError):
        await backend.write(lambda tx: backend.turns.save_state(tx, ghost, last_seq=0, now=T0))

    def stop(tx: Transaction) -> Awaitable[int]:
        return backend.turns.set_status(tx, "shutdown_clean", now=T0)

    assert await backend.write(stop) == 1
    assert await backend.write(stop) == 0
    assert (await backend.turns.get_session(backend.db.reader, "ses_a")).status == "shutdown_clean"


def full_state(sid: str, n: int) -> SessionState:
    """A state with every field a turn may leave alone (and some it changes) filled."""
    loops = [OpenLoop(loop_id=f"loop_{i}", text=f"book the hotel {i} for Lisbon", opened_turn=i)
             for i in range(n)]  # fmt: skip
    return SessionState(
        session_id=sid,
        open_loops=loops,
        closed_loops=[loops[0].model_copy(update={"closed_turn": n})],
        pending_clarifications=[PendingClarification(question="Which day?", asked_turn=n)],
        facts=[Fact(key="sister Mia/location", value="Porto", turn=1)],
        decisions=[Decision(decision_id="dec_1", outcome="Porto", decided_by="Ai", decided_turn=2)],
        proposals=[Proposal(proposal_id="prp_1", proposer="Bo", text="Faro?", proposed_turn=1)],
        resolved_entities={"that task": "loop_1"},
        rolling_summary=f"Ada plans {n} trips; the hotel is not booked.",
        summary_buffer=(f"user: turn {n}",),
        active_job_refs=[JobRef(job_id="job_1")],
        turn_count=n,
    )


async def test_every_field_of_a_state_reads_back_as_saved_through_every_read(backend: Backend):
    """A state saved, saved again with some of its fields changed, then emptied, reads back
    equal each time, whichever read finds the session; a session deleted and made again with
    its id starts empty (nothing of the old state is left over)."""
    await new_session(backend, "ses_a")
    reader = backend.db.reader

    async def reads() -> list[SessionState]:
        found = [
            await backend.turns.get_session(reader, "ses_a"),
            await backend.turns.open_session_for_chat(reader, 1),
            *await backend.turns.list_sessions(reader),
            *await backend.turns.open_sessions_with_jobs(reader),
            *[s for page in [p async for p in backend.turns.open_session_pages(reader)]
              for s in page],
        ]  # fmt: skip
        return [s.state for s in found if s is not None]

    first = full_state("ses_a", 12)
    changed = first.model_copy(
        update={"open_loops": first.open_loops[1:], "turn_count": 13, "summary_buffer": ("x",)}
    )
    emptied = SessionState(session_id="ses_a", turn_count=14, active_job_refs=first.active_job_refs)
    for seq, state in enumerate([first, changed, emptied, first], start=1):
        await backend.write(
            lambda tx: backend.turns.save_state(tx, state, last_seq=seq, now=T0)  # noqa: B023
        )
        assert await reads() == [state] * 5
    assert await backend.write(lambda tx: backend.turns.delete_session(tx, "ses_a"))
    await new_session(backend, "ses_a")
    assert (await backend.turns.get_session(reader, "ses_a")).state == SessionState(
        session_id="ses_a"
    )


async def test_the_checkpoint_record_lags_the_state_and_names_sessions_with_jobs(
    backend: Backend,
):
    """A written checkpoint is recorded only while the row is at its seq; a later state change
    makes it unknown again; sessions whose state holds active jobs are listed."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)

    async def unknown() -> list[str]:
        return sorted(await backend.turns.checkpoint_unknown(backend.db.reader))

    assert await unknown() == ["ses_a", "ses_b"]  # nothing recorded yet: NULL differs from 0
    first = await backend.turns.checkpoint_unknown(backend.db.reader, 1)
    assert first == ["ses_a"]  # a limit: the first by id (what a start checks at once)
    state = SessionState(session_id="ses_a", turn_count=2, active_job_refs=[JobRef(job_id="job_1")])
    await backend.write(lambda tx: backend.turns.save_state(tx, state, last_seq=2, now=T0))
    assert await unknown() == ["ses_a", "ses_b"]
    recorded = await backend.write(
        lambda tx: backend.turns.record_checkpoints(tx, [("ses_a", 1), ("ses_b", 0)])
    )
    assert recorded == 1  # ses_a is at seq 2: a checkpoint of seq 1 vouches for nothing
    assert await unknown() == ["ses_a"]
    assert await backend.write(lambda tx: backend.turns.record_checkpoints(tx, [("ses_a", 2)]))
    assert await unknown() == []
    again = await backend.write(lambda tx: backend.turns.record_checkpoints(tx, [("ses_a", 2)]))
    assert again == 0
    with_jobs = await backend.turns.open_sessions_with_jobs(backend.db.reader)
    assert [s.session_id for s in with_jobs] == ["ses_a"]
    await backend.write(lambda tx: backend.turns.save_state(tx, state, last_seq=2, now=T0))
    assert await unknown() == ["ses_a"]


async def test_checkpoint_records_reads_each_sessions_record_in_one_call(backend: Backend):
    """The recorded seq of each session asked for (``None``: unknown); a session not in the
    database is left out (what a start reads instead of committing a record it has)."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    state = SessionState(session_id="ses_a", turn_count=3)
    await backend.write(lambda tx: backend.turns.save_state(tx, state, last_seq=3, now=T0))
    await backend.write(lambda tx: backend.turns.record_checkpoints(tx, [("ses_a", 3)]))
    reader = backend.db.reader
    records = await backend.turns.checkpoint_records(reader, ["ses_a", "ses_b", "ses_gone"])
    assert records == {"ses_a": 3, "ses_b": None}
    assert await backend.turns.checkpoint_records(reader, []) == {}
    await backend.write(lambda tx: backend.turns.save_state(tx, state, last_seq=4, now=T0))
    assert await backend.turns.checkpoint_records(reader, ["ses_a"]) == {"ses_a": None}


async def test_deleting_and_pruning_sessions_take_their_turns(backend: Backend):
    """delete_session says whether it existed; prune_sessions returns the ids it deleted;
    turns go with their session."""
    await new_session(backend, "ses_old", chat_id=1)
    await new_session(backend, "ses_new", chat_id=2, now=T0 + timedelta(days=10))
    await append(backend, turn("ses_old", 1), turn("ses_new", 1))
    pruned = await backend.write(
        lambda tx: backend.turns.prune_sessions(tx, inactive_since=T0 + timedelta(days=1))
    )
    assert pruned == ["ses_old"]
    assert await backend.turns.get_turn(backend.db.reader, "ses_old", 1) is None
    assert await backend.write(lambda tx: backend.turns.delete_session(tx, "ses_new"))
    assert not await backend.write(lambda tx: backend.turns.delete_session(tx, "ses_new"))
    assert await backend.turns.list_sessions(backend.db.reader, limit=None) == []


# -- conversation store: turns --------------------------------------------------------------


async def test_turns_append_once_per_update_and_read_in_order(backend: Backend):
    """append_turn is idempotent per (bot, update): the second is False and changes nothing;
    recent_turns, iter_turns and get_turn read in seq order; turn_for_update (and
    recorded_turn, on a snapshot) find an update's turn; first_words finds the first text."""
    await new_session(backend, "ses_a")
    assert await append(backend, *(turn("ses_a", n, update_id=100 + n) for n in (1, 2, 3))) == [
        True, True, True,
    ]  # fmt: skip
    again = turn("ses_a", 4, "other", update_id=101)
    assert await append(backend, again) == [False]
    reader = backend.db.reader
    assert [t.seq for t in await backend.turns.recent_turns(reader, "ses_a", 2)] == [2, 3]
    assert [t.seq async for t in backend.turns.iter_turns(reader, "ses_a")] == [1, 2, 3]
    assert (await backend.turns.get_turn(reader, "ses_a", 2)).user_text == "user 2"
    assert (await backend.turns.turn_for_update(reader, 0, 102)).seq == 2
    assert await backend.turns.turn_for_update(reader, 0, 999) is None
    recorded = await backend.db.read(lambda snap: backend.turns.recorded_turn(snap, 0, 102))
    assert recorded == await backend.turns.get_turn(reader, "ses_a", 2)
    assert await backend.db.read(lambda snap: backend.turns.recorded_turn(snap, 0, 999)) is None
    assert await backend.turns.first_words(reader, ["ses_a", "ses_x"]) == {"ses_a": "user 1"}
    of = await backend.turns.recent_turns_of(reader, ["ses_a", "ses_x"], 2)
    assert {sid: [t.seq for t in ts] for sid, ts in of.items()} == {"ses_a": [2, 3], "ses_x": []}
    within = await backend.turns.recent_turns_within(reader, "ses_a", 1_000)
    assert [t.seq for t in within] == [1, 2, 3]
    assert await backend.turns.recent_turns_within(reader, "ses_a", 0) == []


async def test_a_duplicate_seq_is_an_error_and_rolls_back_its_work(backend: Backend):
    """Two turns with one (session, seq) are refused with StorageError; nothing of the work
    is kept."""
    await new_session(backend, "ses_a")
    await append(backend, turn("ses_a", 1))
    with pytest.raises(StorageError):
        await append(backend, turn("ses_a", 2), turn("ses_a", 1, "again"))
    assert [t.seq async for t in backend.turns.iter_turns(backend.db.reader, "ses_a")] == [1]


async def test_a_turn_of_a_message_is_found_only_in_its_chat(backend: Backend):
    """turn_for_message looks in the chat's sessions only."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    await append(backend, turn("ses_a", 1, message_id=50), turn("ses_b", 1, message_id=51))
    reader = backend.db.reader
    assert (await backend.turns.turn_for_message(reader, 0, 1, 50)).session_id == "ses_a"
    assert await backend.turns.turn_for_message(reader, 0, 2, 50) is None


async def test_delivery_is_recorded_once_and_a_refusal_is_never_resent(backend: Backend):
    """undelivered_turns lists answered turns; mark_delivered and mark_undeliverable take a
    turn off it; a second mark_delivered changes nothing."""
    await new_session(backend, "ses_a")
    await append(backend, *(turn("ses_a", n) for n in (1, 2, 3)))
    reader = backend.db.reader
    assert [t.seq for t in await backend.turns.undelivered_turns(reader)] == [1, 2, 3]
    await backend.write(
        lambda tx: backend.turns.mark_delivered(tx, "ses_a", 1, message_id=7, now=T0)
    )
    await backend.write(
        lambda tx: backend.turns.mark_delivered(tx, "ses_a", 1, message_id=8, now=T0)
    )
    await backend.write(lambda tx: backend.turns.mark_undeliverable(tx, "ses_a", 2, error="no"))
    assert [t.seq for t in await backend.turns.undelivered_turns(reader)] == [3]
    delivered = await backend.turns.get_turn(reader, "ses_a", 1)
    assert (delivered.status, delivered.reply_message_id) == ("delivered", 7)


async def test_an_edit_replaces_the_text_once_and_keeps_its_history(backend: Backend):
    """edit_turn applies an edit once per update and only over the text it replaces;
    turn_edits lists the replaced texts oldest first; edit_known tells a seen edit."""
    await new_session(backend, "ses_a")
    await append(backend, turn("ses_a", 1, "I live in Lyon"))

    def edit(text: str, previous: str, update_id: int) -> Callable[[Transaction], Awaitable[bool]]:
        return lambda tx: backend.turns.edit_turn(
            tx, "ses_a", 1, text=text, previous_text=previous, edited_at=T0, bot_id=0,
            update_id=update_id,
        )  # fmt: skip

    assert await backend.write(edit("I live in Nice", "I live in Lyon", 500))
    assert not await backend.write(edit("I live in Paris", "I live in Lyon", 501))  # stale
    assert not await backend.write(edit("I live in Rome", "I live in Nice", 500))  # known
    reader = backend.db.reader
    assert (await backend.turns.get_turn(reader, "ses_a", 1)).user_text == "I live in Nice"
    assert [e.previous_text for e in await backend.turns.turn_edits(reader, "ses_a", 1)] == [
        "I live in Lyon"
    ]
    assert await backend.turns.edit_known(reader, 0, 500)
    assert not await backend.turns.edit_known(reader, 0, 501)


# -- conversation store: retrieval reads ------------------------------------------------------


async def test_turn_search_finds_the_session_words_best_first_and_nothing_else(backend: Backend):
    """search_turn_texts: per query, the matching turns of that session only, best first,
    at most ``limit``; query syntax is searched as words; get_turn_texts reads by seq;
    word_counts counts turns of every session and grows the high-water mark."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    await append(
        backend,
        turn("ses_a", 1, "the kayak is red"),
        turn("ses_a", 2, "kayak kayak by the boathouse"),
        turn("ses_a", 3, "nothing here"),
        turn("ses_b", 1, "another kayak elsewhere"),
    )
    [kayak, none, syntax] = await backend.db.read(
        lambda snap: backend.turns.search_turn_texts(
            snap, "ses_a", ["kayak", "zeppelin", 'kayak" OR NEAR(*'], limit=5
        )
    )
    assert sorted(t.seq for t, _ in kayak) == [1, 2]
    assert [score for _, score in kayak] == sorted(score for _, score in kayak)
    assert none == []
    assert sorted(t.seq for t, _ in syntax) == [1, 2]
    [limited] = await backend.db.read(
        lambda snap: backend.turns.search_turn_texts(snap, "ses_a", ["kayak"], limit=1)
    )
    assert len(limited) == 1
    texts = await backend.db.read(
        lambda snap: backend.turns.get_turn_texts(snap, "ses_a", [3, 1, 9])
    )
    assert [(t.seq, t.user_text) for t in texts] == [(1, "the kayak is red"), (3, "nothing here")]
    counts = await backend.db.read(
        lambda snap: backend.turns.word_counts(snap, ["kayak", "zeppelin", "?"], cap=10)
    )
    assert counts.counts == {"kayak": 3, "zeppelin": 0, "?": 0}
    await append(backend, turn("ses_a", 4))
    later = await backend.db.read(lambda snap: backend.turns.word_counts(snap, [], cap=10))
    assert later.high_water > counts.high_water


async def test_purge_search_keeps_what_was_not_erased(backend: Backend):
    """purge_search after an erasure: the erased turns are found no more, the others are."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    await append(backend, turn("ses_a", 1, "secret lighthouse"), turn("ses_b", 1, "lighthouse"))

    async def erase(tx: Transaction) -> None:
        await backend.turns.delete_session(tx, "ses_a")
        await backend.turns.purge_search(tx)

    await backend.write(erase)
    counts = await backend.db.read(
        lambda snap: backend.turns.word_counts(snap, ["secret", "lighthouse"], cap=10)
    )
    assert counts.counts == {"secret": 0, "lighthouse": 1}


async def search(b: Backend, sid: str, *queries: str, limit: int = 5, **kw: Any) -> Any:
    return await b.db.read(
        lambda snap: b.turns.search_turn_texts(snap, sid, list(queries), limit, **kw)
    )


async def counts_of(b: Backend, *words: str) -> dict[str, int]:
    found = await b.db.read(lambda snap: b.turns.word_counts(snap, list(words), cap=100))
    return found.counts


async def test_turn_search_scores_are_fts5_bm25_with_the_speaker_at_half_weight(
    backend: Backend,
):
    """Every backend ranks with FTS5's bm25() over the same words: these scores are SQLite's
    (IDF over every session's turns, the turn's length with its session id, a word of the
    speaker's name weighing half one of the text); ties go to the newer turn."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    await append(
        backend,
        turn("ses_a", 1, "the kayak is red and the paddle is blue"),
        turn("ses_a", 2, "kayak kayak kayak"),
        turn("ses_a", 3, "a paddle for the kayak"),
        turn("ses_a", 4, "nothing to see", speaker="Paddle"),
        turn("ses_a", 5, "nothing to see", speaker="Paddle"),
        *[turn("ses_b", n, f"the weather on day {n}") for n in range(1, 21)],
    )
    found = await search(backend, "ses_a", "kayak", "paddle", "kayak paddle")
    assert [[(t.seq, round(score, 6)) for t, score in hits] for hits in found] == [
        [(2, -3.089551), (3, -1.860752), (1, -1.544776)],
        [(3, -1.563976), (1, -1.298395), (5, -1.0837), (4, -1.0837)],
        [(3, -3.424728), (2, -3.089551), (1, -2.84317), (5, -1.0837), (4, -1.0837)],
    ]
    # "the" is in 22 of the 25 turns: its IDF is negative, and FTS5 floors it at 1e-6.
    [the] = await search(backend, "ses_a", "the")
    assert [(t.seq, round(score * 1e6, 6)) for t, score in the] == [(1, -1.205479), (3, -1.0)]


async def test_turn_search_folds_case_and_diacritics_stems_and_keeps_snake_case_whole(
    backend: Backend,
):
    """The words searched and counted are FTS5's (Porter stems of case- and diacritic-folded
    words): "CAFÉ" finds "café", "runs" finds "running", and ``snake_case`` is one word, found
    neither by "snake" nor by "case"."""
    await new_session(backend, "ses_a")
    await append(
        backend,
        turn("ses_a", 1, "Café CRÈME near the station"),
        turn("ses_a", 2, "we keep snake_case names"),
        turn("ses_a", 3, "a snake in a suitcase"),
        turn("ses_a", 4, "she was running late"),
    )
    found = await search(backend, "ses_a", "cafe creme", "CAFÉ", "snake_case", "snake", "runs")
    assert [[t.seq for t, _ in hits] for hits in found] == [[1], [1], [2], [3], [4]]
    assert await counts_of(backend, "CAFÉ", "cafe", "snake_case", "snake", "case", "run") == {
        "CAFÉ": 1, "cafe": 1, "snake_case": 1, "snake": 1, "case": 0, "run": 1,
    }  # fmt: skip


async def test_an_edited_turn_is_found_by_its_new_text_only(backend: Backend):
    """After an edit the search finds the turn by what it says now; the replaced words are
    neither found nor counted (the edit history is not searched)."""
    await new_session(backend, "ses_a")
    await append(backend, turn("ses_a", 1, "meet me at the harbour"), turn("ses_a", 2))
    assert await backend.write(
        lambda tx: backend.turns.edit_turn(
            tx, "ses_a", 1, text="meet me at the station", previous_text="meet me at the harbour",
            edited_at=T0 + timedelta(minutes=1), bot_id=0, update_id=None,
        )
    )  # fmt: skip
    [harbour, station] = await search(backend, "ses_a", "harbour", "station")
    assert harbour == []
    assert [(t.seq, t.user_text) for t, _ in station] == [(1, "meet me at the station")]
    assert await counts_of(backend, "harbour", "station") == {"harbour": 0, "station": 1}


async def test_an_erased_session_is_no_longer_found_nor_counted(backend: Backend):
    """delete_session and prune_sessions take the turns' words out of the search and the
    counts (and the ranking statistics: the scores left are those of the turns left)."""
    await new_session(backend, "ses_a", chat_id=1, now=T0 + timedelta(days=10))
    await new_session(backend, "ses_b", chat_id=2)
    await new_session(backend, "ses_c", chat_id=3, now=T0 + timedelta(days=10))
    await append(
        backend,
        turn("ses_a", 1, "zeppelin over the lake"),
        turn("ses_b", 1, "zeppelin zeppelin"),
        turn("ses_c", 1, "a zeppelin landed"),
        *[turn("ses_c", n, f"the weather on day {n}") for n in range(2, 12)],
    )
    before = await search(backend, "ses_c", "zeppelin")
    assert await backend.write(lambda tx: backend.turns.delete_session(tx, "ses_a"))
    pruned = await backend.write(
        lambda tx: backend.turns.prune_sessions(tx, inactive_since=T0 + timedelta(days=1))
    )
    assert pruned == ["ses_b"]
    assert await search(backend, "ses_a", "zeppelin") == [[]]
    assert await search(backend, "ses_b", "zeppelin") == [[]]
    assert await counts_of(backend, "zeppelin", "lake") == {"zeppelin": 1, "lake": 0}
    after = await search(backend, "ses_c", "zeppelin")
    # Rarer now (a higher IDF) among fewer, shorter turns: the scores of the turns left.
    assert [[(t.seq, round(score, 6)) for t, score in hits] for hits in before + after] == [
        [(1, -1.198688)], [(1, -2.150504)],
    ]


async def test_help_replies_and_erasure_requests_are_not_searched(backend: Backend):
    """A help or error reply is not searched, nor any word of a request to forget a memory
    (migration 0013); the user's own words of a help turn are."""
    await new_session(backend, "ses_a")
    await append(
        backend,
        turn("ses_a", 1, "what can you do", intent="help", assistant_text="I can find a hotel"),
        turn("ses_a", 2, "forget that I like opera", intent="forget_memory",
             assistant_text="opera forgotten"),
        turn("ses_a", 3, "the hotel is booked"),
    )  # fmt: skip
    [hotel, opera, what] = await search(backend, "ses_a", "hotel", "opera", "what can you do")
    assert [t.seq for t, _ in hotel] == [3]
    assert opera == []
    assert [t.seq for t, _ in what] == [1]
    assert await counts_of(backend, "hotel", "opera", "forget") == {
        "hotel": 1, "opera": 0, "forget": 0,
    }  # fmt: skip
    texts = await backend.db.read(
        lambda snap: backend.turns.get_turn_texts(snap, "ses_a", [1, 2])
    )
    assert [(t.user_text, t.assistant_text) for t in texts] == [
        ("what can you do", None), ("", None),
    ]  # fmt: skip


async def test_older_turns_are_searched_for_rare_words_only(backend: Backend):
    """The last ``recent`` turns are searched for every word; the turns before them only for
    the words found in at most ``old_word_turns`` of them."""
    await new_session(backend, "ses_a")
    await append(
        backend,
        turn("ses_a", 1, "a zebra and the river"),
        *[turn("ses_a", n, f"the river on day {n}") for n in range(2, 31)],
    )
    [hits] = await search(backend, "ses_a", "zebra river", limit=50, recent=10, old_word_turns=2)
    assert sorted(t.seq for t, _ in hits) == [1, *range(21, 31)]
    [hits] = await search(backend, "ses_a", "river", limit=50, recent=10, old_word_turns=40)
    assert len(hits) == 30


# -- memory store ------------------------------------------------------------------------------


async def test_a_memory_is_recorded_reinforced_and_superseded_with_history(backend: Backend):
    """record adds a memory, reinforces the same value, and supersedes another value of the
    slot: the old one ends and stays in the history; as_of answers for a past moment."""
    await new_session(backend, "ses_a")
    first = await remember(backend, 1, fact("Lyon"), source=("ses_a", 1))
    assert (first.text, first.valid_until) == ("Lyon", None)
    same = await remember(backend, 1, fact("Lyon"), source=("ses_a", 2))
    assert same.memory_id == first.memory_id
    later = T0 + timedelta(days=1)
    moved = await remember(backend, 1, fact("Nice"), source=("ses_a", 3), now=later)
    assert moved.memory_id != first.memory_id
    reader = backend.db.reader
    assert [m.text for m in await backend.memories.listing(reader, 1, history=False)] == ["Nice"]
    history = await backend.memories.listing(reader, 1, history=True)
    assert sorted(m.text for m in history) == ["Lyon", "Nice"]
    assert [m.text for m in await backend.memories.as_of(reader, 1, T0)] == ["Lyon"]
    assert [m.text for m in await backend.memories.as_of(reader, 1, later)] == ["Nice"]
    current = await backend.memories.current_for_chats(reader, [1, 2], per_chat=5, past=5)
    assert current[1][0].text == "Nice"
    assert current.get(2, []) == []


async def test_memories_are_isolated_per_chat_and_searched_by_words(backend: Backend):
    """A chat's search finds its own current memories only, best first."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    await remember(backend, 1, fact("Porto"), source=("ses_a", 1))
    await remember(backend, 2, fact("Porto and Lisbon"), source=("ses_b", 1))
    [porto, nothing] = await backend.db.read(
        lambda snap: backend.memories.search(snap, 1, ["Porto", "Lisbon"], limit=5)
    )
    assert [m.chat_id for m, _ in porto] == [1]
    assert nothing == []


async def test_forgetting_memories_erases_them_and_their_sources(backend: Backend):
    """forget returns the current memories it erased, of that chat only; remove_sources drops
    a memory left with no source; touch and set_decay keep a memory current."""
    await new_session(backend, "ses_a", chat_id=1)
    kept = await remember(backend, 1, fact("jazz", key="likes:jazz"), source=("ses_a", 1))
    gone = await remember(backend, 1, fact("Lyon"), source=("ses_a", 2))
    erased = await backend.write(
        lambda tx: backend.memories.forget(tx, 2, [gone.memory_id])  # another chat's id
    )
    assert erased == []
    erased = await backend.write(lambda tx: backend.memories.forget(tx, 1, [gone.memory_id]))
    assert [m.memory_id for m in erased] == [gone.memory_id]
    await backend.write(lambda tx: backend.memories.touch(tx, [kept.memory_id], now=T0))
    await backend.write(
        lambda tx: backend.memories.set_decay(tx, [(kept.memory_id, 0.5)], archive=[], now=T0)
    )
    [unarchived] = await backend.memories.unarchived(backend.db.reader)
    assert (unarchived.memory_id, unarchived.decay) == (kept.memory_id, 0.5)
    assert await backend.write(lambda tx: backend.memories.remove_sources(tx, "ses_a", 1)) == 1
    assert await backend.memories.listing(backend.db.reader, 1, history=True) == []


def said(
    text: str, attribute: str, key: str, *, kind: str = "preference", subject: str = "user",
    confidence: float = 0.9, importance: float = 0.5, correction: bool = False,
) -> MemoryCandidate:  # fmt: skip
    return MemoryCandidate(
        kind=kind, subject=subject, attribute=attribute, key=key, text=text,
        correction=correction, confidence=confidence, importance=importance,
    )  # fmt: skip


async def test_confirm_makes_a_current_memory_of_the_chat_active(backend: Backend):
    """confirm turns a candidate active with at least the given confidence (never lower);
    confirming again keeps it active; another chat's, an unknown or a superseded id is None."""
    await new_session(backend, "ses_a")
    hedge = await remember(backend, 1, fact("Lyon", confidence=0.3), source=("ses_a", 1))
    assert hedge.status == "candidate"
    [before] = await backend.db.read(
        lambda snap: backend.memories.search(snap, 1, ["Lyon"], limit=5)
    )
    assert before == []  # search reads active memories only

    def confirm(chat_id: int, memory_id: str, confidence: float) -> Any:
        return backend.write(
            lambda tx: backend.memories.confirm(tx, chat_id, memory_id, confidence=confidence)
        )

    assert await confirm(2, hedge.memory_id, 0.8) is None
    confirmed = await confirm(1, hedge.memory_id, 0.8)
    assert (confirmed.memory_id, confirmed.status, confirmed.confidence) == (
        hedge.memory_id, "active", 0.8,
    )  # fmt: skip
    again = await confirm(1, hedge.memory_id, 0.6)
    assert (again.status, again.confidence) == ("active", 0.8)
    assert await confirm(1, "mem_missing", 0.8) is None
    [after] = await backend.db.read(
        lambda snap: backend.memories.search(snap, 1, ["Lyon"], limit=5)
    )
    assert [m.memory_id for m, _ in after] == [hedge.memory_id]
    await remember(backend, 1, fact("Nice"), source=("ses_a", 2), now=T0 + timedelta(days=1))
    assert await confirm(1, hedge.memory_id, 0.9) is None  # history, not current


async def test_a_hedge_never_overrules_and_a_correction_rewrites_the_past(backend: Backend):
    """record returns None (and changes nothing) for a value below the threshold against an
    active one; a hedge replaces a mere candidate; a correction starts where the replaced
    value started, so that value was never true."""
    await new_session(backend, "ses_a")
    lyon = await remember(backend, 1, fact("Lyon"), source=("ses_a", 1))
    assert await remember(backend, 1, fact("Nice", confidence=0.3), source=("ses_a", 2)) is None
    reader = backend.db.reader
    assert [m.text for m in await backend.memories.listing(reader, 1, history=True)] == ["Lyon"]
    later = T0 + timedelta(days=2)
    fixed = await remember(
        backend, 1, said("Paris", "location", "location", kind="fact", correction=True),
        source=("ses_a", 3), now=later,
    )  # fmt: skip
    assert (fixed.status, fixed.valid_from) == ("active", lyon.valid_from)
    assert [m.text for m in await backend.memories.as_of(reader, 1, T0)] == ["Paris"]
    await remember(backend, 1, fact("Oslo", key="job", confidence=0.3), source=("ses_a", 4))
    maybe = await remember(backend, 1, fact("Rome", key="job", confidence=0.4), source=None)
    assert maybe.status == "candidate"
    current = await backend.memories.listing(reader, 1, history=False)
    assert sorted(m.text for m in current) == ["Paris", "Rome"]


async def test_a_name_put_right_replaces_the_memory_of_another_key(backend: Backend):
    """A candidate that ``replaces`` another slot ("my sister is Hanna", then "sorry, her name
    is Anna") ends that memory where it began (it was never true) and supersedes it; one that
    replaces nothing current, or is below the threshold, ends nothing."""
    await new_session(backend, "ses_a")
    hanna = await remember(
        backend, 1, said("sister Hanna", "relative", "relative:sister hanna", kind="entity"),
        source=("ses_a", 1),
    )  # fmt: skip
    rex = await remember(
        backend, 1, said("dog Rex", "pet", "pet:dog rex", kind="entity"), source=("ses_a", 2)
    )
    anna = said("sister Anna", "relative", "relative:sister anna", kind="entity", correction=True)
    renamed = await remember(
        backend, 1, anna.model_copy(update={"replaces": "relative:sister hanna"}),
        source=("ses_a", 3), now=T0 + timedelta(minutes=1),
    )  # fmt: skip
    unsure = said("dog Max", "pet", "pet:dog max", kind="entity", confidence=0.3)
    await remember(
        backend, 1, unsure.model_copy(update={"replaces": "pet:dog rex"}), source=("ses_a", 4)
    )
    reader = backend.db.reader
    current = await backend.memories.listing(reader, 1, history=False)
    assert sorted(m.text for m in current) == ["dog Max", "dog Rex", "sister Anna"]
    ended = [m for m in await backend.memories.listing(reader, 1, history=True) if m.valid_until]
    assert [(m.memory_id, m.valid_until) for m in ended] == [(hanna.memory_id, hanna.valid_from)]
    relations = await backend.memories.relations(reader, renamed.memory_id)
    assert [(r.relation, r.other_id) for r in relations] == [("supersedes", hanna.memory_id)]
    assert rex.valid_until is None


async def test_like_and_dislike_share_a_slot_and_many_values_sit_side_by_side(
    backend: Backend,
):
    """Disliking a thing ends liking it (one slot: the later is current, the earlier is
    history); likes of two things are two current memories; dropping the dislike's last
    source makes the like current again."""
    await new_session(backend, "ses_a")
    like = await remember(backend, 1, said("jazz", "likes", "likes:jazz"), source=("ses_a", 1))
    await remember(backend, 1, said("blues", "likes", "likes:blues"), source=("ses_a", 2))
    later = T0 + timedelta(hours=1)
    dislike = await remember(
        backend, 1, said("jazz", "dislikes", "dislikes:jazz"), source=("ses_a", 3), now=later
    )
    assert dislike.memory_id != like.memory_id
    assert dislike.attribute == "dislikes"
    reader = backend.db.reader
    current = await backend.memories.listing(reader, 1, history=False)
    assert sorted((m.attribute, m.text) for m in current) == [
        ("dislikes", "jazz"), ("likes", "blues"),
    ]  # fmt: skip
    ended = [m for m in await backend.memories.listing(reader, 1, history=True) if m.valid_until]
    assert [(m.memory_id, m.valid_until) for m in ended] == [(like.memory_id, later)]
    assert await backend.write(lambda tx: backend.memories.remove_sources(tx, "ses_a", 3)) == 1
    current = await backend.memories.listing(reader, 1, history=False)
    assert sorted((m.attribute, m.text) for m in current) == [
        ("likes", "blues"), ("likes", "jazz"),
    ]  # fmt: skip


async def test_forgetting_someone_forgets_what_was_said_about_them(backend: Backend):
    """A fact about someone (``related_to`` the memory naming them) goes when they are
    forgotten; forget returns both; the user's own facts stay."""
    await new_session(backend, "ses_a")
    mia = await remember(
        backend, 1, said("sister Mia", "relative", "relative:sister mia", kind="entity"),
        source=("ses_a", 1),
    )  # fmt: skip
    lives = await remember(
        backend, 1,
        said("Porto", "location", "sister Mia/location", kind="fact", subject="sister Mia"),
        source=("ses_a", 2),
    )  # fmt: skip
    await remember(backend, 1, fact("Lyon"), source=("ses_a", 3))
    erased = await backend.write(lambda tx: backend.memories.forget(tx, 1, [mia.memory_id]))
    assert sorted(m.memory_id for m in erased) == sorted([mia.memory_id, lives.memory_id])
    left = await backend.memories.listing(backend.db.reader, 1, history=True)
    assert [m.text for m in left] == ["Lyon"]
    assert await backend.write(lambda tx: backend.memories.forget(tx, 1, [mia.memory_id])) == []


async def test_remove_sources_drops_only_the_memories_left_without_a_source(backend: Backend):
    """remove_sources counts the memories that lost the turn; one also stated by another turn
    stays; one left with none goes and the value it superseded is current again; a note with
    no source and a second call are untouched (0)."""
    await new_session(backend, "ses_a")
    await remember(backend, 1, fact("Lyon"), source=("ses_a", 1))
    later = T0 + timedelta(days=1)
    await remember(backend, 1, fact("Nice"), source=("ses_a", 2), now=later)
    await remember(backend, 1, fact("Nice"), source=("ses_a", 3), now=later)
    await remember(backend, 1, said("a note", "note", "note:a note", kind="fact"), source=None)

    def remove(seq: int) -> Any:
        return backend.write(lambda tx: backend.memories.remove_sources(tx, "ses_a", seq))

    assert await remove(99) == 0
    reader = backend.db.reader

    async def current() -> list[str]:
        return sorted(m.text for m in await backend.memories.listing(reader, 1, history=False))

    assert await remove(2) == 1
    assert await current() == ["Nice", "a note"]
    assert await remove(2) == 0
    assert await remove(3) == 1
    assert await current() == ["Lyon", "a note"]
    assert (await backend.memories.as_of(reader, 1, later))[0].text == "Lyon"


async def test_current_for_chats_ranks_active_first_then_recent_history(backend: Backend):
    """current_for_chats: per chat, the current memories (active by importance, then
    candidates) up to per_chat, then the past most recently superseded; every asked chat is a
    key; chats apart; no chats, no answer."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    low = said("hiking", "likes", "likes:hiking", importance=0.2)
    high = said("Lyon", "location", "location", kind="fact", importance=0.9)
    hedge = said("cook", "job", "job", kind="fact", importance=1.0, confidence=0.3)
    for n, candidate in enumerate([low, high, hedge], start=1):
        await remember(backend, 1, candidate, source=("ses_a", n))
    for n, town in enumerate(["Nice", "Rome"], start=4):
        moved = said(town, "location", "location", kind="fact", importance=0.9)
        await remember(backend, 1, moved, source=("ses_a", n), now=T0 + timedelta(days=n))
    await remember(backend, 2, fact("Oslo"), source=("ses_b", 1))
    reader = backend.db.reader
    found = await backend.memories.current_for_chats(reader, [1, 2, 3], per_chat=5, past=1)
    assert set(found) == {1, 2, 3}
    assert [m.text for m in found[1]] == ["Rome", "hiking", "cook", "Nice"]
    assert [m.text for m in found[2]] == ["Oslo"]
    assert found[3] == []
    few = await backend.memories.current_for_chats(reader, [1], per_chat=1, past=0)
    assert [m.text for m in few[1]] == ["Rome"]
    assert await backend.memories.current_for_chats(reader, [], per_chat=5, past=5) == {}


async def test_listing_orders_by_kind_then_age_and_hides_the_archived(backend: Backend):
    """listing: one chat's memories by kind, then oldest first; history adds the superseded;
    archived memories are not listed (nor in unarchived, nor current_for_chats)."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    await remember(backend, 1, said("jazz", "likes", "likes:jazz"), source=("ses_a", 1))
    await remember(backend, 1, fact("Lyon"), source=("ses_a", 2), now=T0 + timedelta(hours=1))
    old = await remember(
        backend, 1, said("tea", "likes", "likes:tea"), source=("ses_a", 3),
        now=T0 - timedelta(hours=1),
    )  # fmt: skip
    await remember(backend, 2, fact("Oslo"), source=("ses_b", 1))
    reader = backend.db.reader
    listed = await backend.memories.listing(reader, 1, history=False)
    assert [(m.kind, m.text) for m in listed] == [
        ("fact", "Lyon"), ("preference", "tea"), ("preference", "jazz"),
    ]  # fmt: skip
    await backend.write(
        lambda tx: backend.memories.set_decay(tx, [], archive=[old.memory_id], now=T0)
    )
    assert [m.text for m in await backend.memories.listing(reader, 1, history=True)] == [
        "Lyon", "jazz",
    ]  # fmt: skip
    assert old.memory_id not in {m.memory_id for m in await backend.memories.unarchived(reader)}
    current = await backend.memories.current_for_chats(reader, [1], per_chat=5, past=5)
    assert old.memory_id not in {m.memory_id for m in current[1]}


async def test_decay_and_archiving_are_undone_by_use_confirmation_or_repetition(
    backend: Backend,
):
    """set_decay stores decay factors and archives (archived_at); unarchived lists the current
    unarchived memories by chat then key; an unknown id is ignored; touch refreshes the decay;
    confirm and saying it again bring an archived memory back active."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    tea = await remember(backend, 2, said("tea", "likes", "likes:tea"), source=("ses_b", 1))
    jazz = await remember(backend, 1, said("jazz", "likes", "likes:jazz"), source=("ses_a", 1))
    lyon = await remember(backend, 1, fact("Lyon"), source=("ses_a", 2))
    reader = backend.db.reader
    assert [m.memory_id for m in await backend.memories.unarchived(reader)] == [
        jazz.memory_id, lyon.memory_id, tea.memory_id,
    ]  # fmt: skip
    archived_at = T0 + timedelta(days=30)
    await backend.write(
        lambda tx: backend.memories.set_decay(
            tx, [(jazz.memory_id, 0.25), ("mem_missing", 0.1)],
            archive=[lyon.memory_id, tea.memory_id], now=archived_at,
        )
    )  # fmt: skip
    [left] = await backend.memories.unarchived(reader)
    assert (left.memory_id, left.decay) == (jazz.memory_id, 0.25)
    await backend.write(lambda tx: backend.memories.touch(tx, [jazz.memory_id], now=T0))
    [touched] = await backend.memories.unarchived(reader)
    assert (touched.decay, touched.access_count) == (1.0, jazz.access_count + 1)
    back = await backend.write(
        lambda tx: backend.memories.confirm(tx, 1, lyon.memory_id, confidence=0.5)
    )
    assert (back.status, back.archived_at, back.decay) == ("active", None, 1.0)
    again = await remember(backend, 2, said("tea", "likes", "likes:tea"), source=("ses_b", 2))
    assert (again.memory_id, again.status, again.archived_at) == (tea.memory_id, "active", None)
    assert len(await backend.memories.unarchived(reader)) == 3


async def test_merge_folds_duplicates_into_the_survivor_with_their_sources(backend: Backend):
    """merge gives the survivor its new values and the duplicates' sources, and erases the
    duplicates; the merged memory goes only when every merged source is gone."""
    await new_session(backend, "ses_a")
    keep = await remember(backend, 1, said("jazz", "likes", "likes:jazz"), source=("ses_a", 1))
    dup = await remember(
        backend, 1, said("jazz music", "likes", "likes:jazz music"), source=("ses_a", 2)
    )
    survivor = keep.model_copy(update={"text": "jazz music", "confidence": 0.95})
    await backend.write(lambda tx: backend.memories.merge(tx, survivor, [dup.memory_id]))
    reader = backend.db.reader
    [merged] = await backend.memories.listing(reader, 1, history=True)
    assert (merged.memory_id, merged.text, merged.confidence) == (
        keep.memory_id, "jazz music", 0.95,
    )  # fmt: skip
    [[(hit, _)]] = await backend.db.read(
        lambda snap: backend.memories.search(snap, 1, ["music"], limit=5)
    )
    assert hit.memory_id == keep.memory_id
    assert await backend.write(lambda tx: backend.memories.remove_sources(tx, "ses_a", 1)) == 1
    assert [m.memory_id for m in await backend.memories.listing(reader, 1, history=True)] == [
        keep.memory_id
    ]
    assert await backend.write(lambda tx: backend.memories.remove_sources(tx, "ses_a", 2)) == 1
    assert await backend.memories.listing(reader, 1, history=True) == []


async def test_relations_record_what_a_memory_replaced_and_whom_it_is_about(backend: Backend):
    """record writes the relation rows, read back by relations (from and to a memory, oldest
    first): a new value ``supersedes`` the one it replaced, the other side of a like
    ``contradicts`` it, a fact about someone is ``related_to`` the memory naming them;
    forgetting either end takes the relation."""
    await new_session(backend, "ses_a")
    lyon = await remember(backend, 1, fact("Lyon"), source=("ses_a", 1))
    nice = await remember(
        backend, 1, fact("Nice"), source=("ses_a", 2), now=T0 + timedelta(minutes=1)
    )
    like = await remember(backend, 1, said("jazz", "likes", "likes:jazz"), source=("ses_a", 3))
    dislike = await remember(
        backend, 1, said("jazz", "dislikes", "dislikes:jazz"), source=("ses_a", 4),
        now=T0 + timedelta(minutes=2),
    )  # fmt: skip
    mia = await remember(
        backend, 1, said("sister Mia", "relative", "relative:sister mia", kind="entity"),
        source=("ses_a", 5), now=T0 + timedelta(minutes=3),
    )  # fmt: skip
    lives = await remember(
        backend, 1,
        said("Porto", "location", "sister Mia/location", kind="fact", subject="sister Mia"),
        source=("ses_a", 6), now=T0 + timedelta(minutes=4),
    )  # fmt: skip
    reader = backend.db.reader

    async def relations(memory_id: str) -> list[tuple[str, str, str, datetime]]:
        found = await backend.memories.relations(reader, memory_id)
        return [(r.memory_id, r.relation, r.other_id, r.created_at) for r in found]

    superseded = (nice.memory_id, "supersedes", lyon.memory_id, T0 + timedelta(minutes=1))
    assert await relations(lyon.memory_id) == [superseded]
    assert await relations(nice.memory_id) == [superseded]
    assert await relations(like.memory_id) == [
        (dislike.memory_id, "contradicts", like.memory_id, T0 + timedelta(minutes=2))
    ]
    about = (lives.memory_id, "related_to", mia.memory_id, T0 + timedelta(minutes=4))
    assert await relations(mia.memory_id) == [about]
    assert await relations(lives.memory_id) == [about]
    assert await relations("mem_missing") == []
    await backend.write(lambda tx: backend.memories.forget(tx, 1, [mia.memory_id]))
    assert await relations(mia.memory_id) == []
    assert await relations(lives.memory_id) == []
    assert await relations(nice.memory_id) == [superseded]


async def test_memory_search_ranks_by_bm25_over_every_chat(backend: Backend):
    """search ranks a chat's matches by FTS5's BM25 (k1 1.2, b 0.75; subject, attribute and
    text; the IDF of a word counts every chat's memories), best first, ``limit`` per query;
    the scores are the same on every backend."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    texts = ["red kayak", "kayak trips on the lake", "a red bike", "kayak"]
    for n, text in enumerate(texts, start=1):
        await remember(backend, 1, said(text, "likes", f"likes:{text}"), source=("ses_a", n))
    for n, text in enumerate(["blue kayak", "tea", "jazz", "chess", "opera"], start=1):
        await remember(backend, 2, said(text, "likes", f"likes:{text}"), source=("ses_b", n))
    [both, bike, none] = await backend.db.read(
        lambda snap: backend.memories.search(snap, 1, ["Red KAYAK!", "bike", "zeppelin"], limit=9)
    )
    assert [(m.text, round(score, 4)) for m, score in both] == [
        ("red kayak", -1.2873), ("a red bike", -1.0052), ("kayak", -0.2168),
        ("kayak trips on the lake", -0.1592),
    ]  # fmt: skip
    assert [m.text for m, _ in bike] == ["a red bike"]
    assert none == []
    [two] = await backend.db.read(
        lambda snap: backend.memories.search(snap, 1, ["red kayak"], limit=2)
    )
    assert [m.text for m, _ in two] == ["red kayak", "a red bike"]



async def test_memory_search_stems_words_as_fts5_does(backend: Backend):
    """The memory search reads words as FTS5's porter tokenizer does ("painted" finds
    "painting", "cafés" finds "cafe"), on every backend with the same scores, and follows a
    merge to the survivor's new text."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    paint = await remember(
        backend, 1, said("loves painting landscapes", "hobby", "hobby:paint"), source=("ses_a", 1)
    )
    cafe = said("Cafe on the harbour", "place", "place:cafe")
    await remember(backend, 1, cafe, source=("ses_a", 2))
    fence = said("painted the fence", "chore", "chore:fence")
    await remember(backend, 2, fence, source=("ses_b", 1))
    [painted, cafes, none] = await backend.db.read(
        lambda snap: backend.memories.search(
            snap, 1, ["painted landscape", "cafés", "fence"], limit=5
        )
    )
    assert [(m.text, round(score, 4)) for m, score in painted] == [
        ("loves painting landscapes", -0.5221)
    ]
    assert [m.text for m, _ in cafes] == ["Cafe on the harbour"]
    assert none == []
    survivor = paint.model_copy(update={"text": "sketching birds"})
    await backend.write(lambda tx: backend.memories.merge(tx, survivor, []))
    [old, new] = await backend.db.read(
        lambda snap: backend.memories.search(snap, 1, ["painted", "sketches"], limit=5)
    )
    assert (old, [m.text for m, _ in new]) == ([], ["sketching birds"])


# -- summary store ----------------------------------------------------------------------------


async def test_the_summary_chain_grows_one_version_at_a_time(backend: Backend):
    """append_extractive adds versions; latest, get and history read them; a model summary
    runs once at a time (begin_llm) and ends once (finish_llm); search finds deltas."""
    await new_session(backend, "ses_a")

    def version(n: int) -> Callable[[Transaction], Awaitable[Any]]:
        return lambda tx: backend.summaries.append_extractive(
            tx, "ses_a", version=n, from_seq=n * 10 - 9, to_seq=n * 10, text=f"text {n}",
            delta=f"the ferry part {n}", now=T0,
        )  # fmt: skip

    one = await backend.write(version(1))
    two = await backend.write(version(2))
    reader = backend.db.reader
    assert (await backend.summaries.latest(reader, "ses_a")).summary_id == two.summary_id
    assert (await backend.summaries.get(reader, one.summary_id)).text == "text 1"
    assert [v.version for v in await backend.summaries.history(reader, "ses_a")] == [1, 2]
    started = await backend.write(lambda tx: backend.summaries.begin_llm(tx, two, now=T0))
    assert started is not None
    assert started.status == "processing"
    assert await backend.write(lambda tx: backend.summaries.begin_llm(tx, two, now=T0)) is None

    def finish(tx: Transaction) -> Awaitable[bool]:
        return backend.summaries.finish_llm(
            tx, started.summary_id, status="completed", text="model", now=T0
        )

    assert await backend.write(finish)
    assert not await backend.write(finish)
    assert (await backend.summaries.latest_llm(reader, ["ses_a"]))["ses_a"].text == "model"
    assert await backend.write(
        lambda tx: backend.summaries.fail_processing(tx, error="x", now=T0)
    ) == 0  # fmt: skip
    [hits] = await backend.db.read(
        lambda snap: backend.summaries.search(snap, "ses_a", ["ferry"], limit=5)
    )
    assert sorted(hit.to_seq for hit in hits) == [10, 20]


def extractive(b: Backend, sid: str, n: int, delta: str = "") -> Callable[[Transaction], Any]:
    return lambda tx: b.summaries.append_extractive(
        tx, sid, version=n, from_seq=n * 10 - 9, to_seq=n * 10, text=f"text {n}",
        delta=delta or f"part {n}", now=T0,
    )  # fmt: skip


async def run_llm(b: Backend, parent: Any, *, status: str = "completed", text: str = "") -> Any:
    started = await b.write(lambda tx: b.summaries.begin_llm(tx, parent, now=T0))
    await b.write(
        lambda tx: b.summaries.finish_llm(
            tx, started.summary_id, status=status, text=text,
            error="no" if status == "failed" else None, now=T0,
        )
    )  # fmt: skip
    return started


async def test_revising_a_version_replaces_its_text_and_drops_its_model_summaries(
    backend: Backend,
):
    """revise_extractive rewrites one version's text and delta (the search follows) and
    deletes that version's model summaries only; an unknown version is False."""
    await new_session(backend, "ses_a")
    one = await backend.write(extractive(backend, "ses_a", 1, "the old ferry"))
    two = await backend.write(extractive(backend, "ses_a", 2))
    await run_llm(backend, one, text="model one")
    await run_llm(backend, two, text="model two")

    def revise(version: int) -> Callable[[Transaction], Awaitable[bool]]:
        return lambda tx: backend.summaries.revise_extractive(
            tx, "ses_a", version=version, text="new text", delta="the new tram"
        )

    assert await backend.write(revise(1))
    reader = backend.db.reader
    revised = await backend.summaries.get(reader, one.summary_id)
    assert (revised.text, revised.delta, revised.version, revised.to_seq) == (
        "new text", "the new tram", 1, 10,
    )  # fmt: skip
    kinds = [(v.version, v.summarizer) for v in await backend.summaries.history(reader, "ses_a")]
    assert kinds == [(1, "extractive"), (2, "extractive"), (2, "llm")]
    [ferry, tram] = await backend.db.read(
        lambda snap: backend.summaries.search(snap, "ses_a", ["ferry", "tram"], limit=5)
    )
    assert (ferry, [hit.to_seq for hit in tram]) == ([], [10])
    assert not await backend.write(revise(9))
    assert (await backend.summaries.latest_llm(reader, ["ses_a"]))["ses_a"].text == "model two"


async def test_one_model_summary_runs_at_a_time_per_session(backend: Backend):
    """begin_llm: None while the session has one processing (whatever the parent); another
    session may run; once it is completed or failed a new one begins; an erased session's
    parent is a StorageError."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    one = await backend.write(extractive(backend, "ses_a", 1))
    two = await backend.write(extractive(backend, "ses_a", 2))
    other = await backend.write(extractive(backend, "ses_b", 1))

    def begin(parent: Any) -> Any:
        return backend.write(lambda tx: backend.summaries.begin_llm(tx, parent, now=T0))

    first = await begin(one)
    assert (first.version, first.parent_summary_id, first.summarizer) == (1, one.summary_id, "llm")
    assert await begin(two) is None
    assert (await begin(other)).session_id == "ses_b"
    await backend.write(
        lambda tx: backend.summaries.finish_llm(
            tx, first.summary_id, status="failed", error="timeout", now=T0
        )
    )
    retried = await begin(two)
    assert retried.summary_id != first.summary_id
    await backend.write(
        lambda tx: backend.summaries.finish_llm(
            tx, retried.summary_id, status="completed", text="done", now=T0
        )
    )
    assert (await begin(two)).status == "processing"
    await backend.write(lambda tx: backend.turns.delete_session(tx, "ses_b"))
    with pytest.raises(StorageError):
        await begin(other)


async def test_latest_reads_the_newest_row_of_a_kind_and_status(backend: Backend):
    """latest: the newest completed extractive version by default, any status with None,
    the model rows with summarizer='llm'; latest_llm: the newest completed model summary of
    each session that has one (not processing, not failed)."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    one = await backend.write(extractive(backend, "ses_a", 1))
    two = await backend.write(extractive(backend, "ses_a", 2))
    reader = backend.db.reader
    assert await backend.summaries.latest(reader, "ses_missing") is None
    assert await backend.summaries.latest(reader, "ses_a", summarizer="llm") is None
    assert await backend.summaries.latest_llm(reader, ["ses_a", "ses_b"]) == {}
    assert await backend.summaries.latest_llm(reader, []) == {}
    done = await run_llm(backend, two, text="model two")
    await run_llm(backend, one, text="model one")  # an older version, completed later
    await run_llm(backend, two, status="failed")
    running = await backend.write(lambda tx: backend.summaries.begin_llm(tx, two, now=T0))
    assert (await backend.summaries.latest(reader, "ses_a")).summary_id == two.summary_id
    newest_llm = await backend.summaries.latest(reader, "ses_a", summarizer="llm")
    assert newest_llm.summary_id == done.summary_id
    any_llm = await backend.summaries.latest(reader, "ses_a", summarizer="llm", status=None)
    assert any_llm.summary_id == running.summary_id
    failed = await backend.summaries.latest(reader, "ses_a", summarizer="llm", status="failed")
    assert (failed.status, failed.error) == ("failed", "no")
    latest = await backend.summaries.latest_llm(reader, ["ses_a", "ses_b", "ses_x"])
    assert {sid: v.text for sid, v in latest.items()} == {"ses_a": "model two"}


async def test_finish_llm_ends_a_processing_row_once(backend: Backend):
    """finish_llm is False for an unknown id, a failed row (also one failed by
    fail_processing) and a completed one; 'processing' is no end (ValueError); a completed
    row keeps its text, time and generation_ms."""
    await new_session(backend, "ses_a")
    parent = await backend.write(extractive(backend, "ses_a", 1))

    def finish(summary_id: int, status: Any, **fields: Any) -> Any:
        return backend.write(
            lambda tx: backend.summaries.finish_llm(
                tx, summary_id, status=status, now=T0 + timedelta(seconds=5), **fields
            )
        )

    assert not await finish(999_999, "completed", text="x")
    assert not await finish(parent.summary_id, "completed", text="x")  # not a processing row
    failed = await run_llm(backend, parent, status="failed")
    assert not await finish(failed.summary_id, "completed", text="late")
    assert (await backend.summaries.get(backend.db.reader, failed.summary_id)).text == ""
    cut = await backend.write(lambda tx: backend.summaries.begin_llm(tx, parent, now=T0))
    with pytest.raises(ValueError, match="completed"):
        await finish(cut.summary_id, "processing")
    stop = backend.summaries.fail_processing
    assert await backend.write(lambda tx: stop(tx, error="restart", now=T0)) == 1
    assert not await finish(cut.summary_id, "completed", text="late")
    assert (await backend.summaries.get(backend.db.reader, cut.summary_id)).error == "restart"
    ok = await backend.write(lambda tx: backend.summaries.begin_llm(tx, parent, now=T0))
    assert await finish(ok.summary_id, "completed", text="model", generation_ms=120)
    assert not await finish(ok.summary_id, "failed", error="late")
    read = await backend.summaries.get(backend.db.reader, ok.summary_id)
    assert (read.status, read.text, read.generation_ms, read.error) == (
        "completed", "model", 120, None,
    )  # fmt: skip
    assert read.completed_at == T0 + timedelta(seconds=5)
    assert (await backend.summaries.get(backend.db.reader, parent.summary_id)).status == (
        "completed"
    )


async def test_summary_search_scores_are_fts5s_bm25_over_every_session(backend: Backend):
    """search scores a session's deltas with FTS5's BM25 (the IDF of a word counts every
    session's versions), the same on every backend; ``limit`` keeps the best."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    deltas = ["the ferry to the island", "ferry ferry tram", "a long walk by the sea"]
    for n, delta in enumerate(deltas, start=1):
        await backend.write(extractive(backend, "ses_a", n, delta))
    for n, delta in enumerate(["tram tram tram", "rain", "sun", "wind", "snow", "fog"], start=1):
        await backend.write(extractive(backend, "ses_b", n, delta))
    [both, walk] = await backend.db.read(
        lambda snap: backend.summaries.search(snap, "ses_a", ["Ferry, tram?", "walk"], limit=5)
    )
    scores = sorted((hit.to_seq, round(hit.bm25, 4)) for hit in both)
    assert scores == [(10, -0.8428), (20, -2.4757)]
    assert [hit.to_seq for hit in walk] == [30]
    [best] = await backend.db.read(
        lambda snap: backend.summaries.search(snap, "ses_a", ["ferry tram"], limit=1)
    )
    assert [hit.to_seq for hit in best] == [20]



async def test_summary_search_stems_words_as_fts5_does(backend: Backend):
    """The summary search reads words as FTS5's porter tokenizer does, with the same scores on
    every backend, and follows a revised delta."""
    await new_session(backend, "ses_a", chat_id=1)
    await backend.write(extractive(backend, "ses_a", 1, "we were painting the boats"))
    await backend.write(extractive(backend, "ses_a", 2, "a walk in the rain"))
    await backend.write(extractive(backend, "ses_a", 3, "sun"))
    [painted] = await backend.db.read(
        lambda snap: backend.summaries.search(snap, "ses_a", ["painted boat"], limit=5)
    )
    assert [(hit.to_seq, round(hit.bm25, 4)) for hit in painted] == [(10, -0.9147)]
    await backend.write(
        lambda tx: backend.summaries.revise_extractive(
            tx, "ses_a", version=1, text="t", delta="sailing home"
        )
    )
    [old, new] = await backend.db.read(
        lambda snap: backend.summaries.search(snap, "ses_a", ["painted", "sails"], limit=5)
    )
    assert (old, [hit.to_seq for hit in new]) == ([], [10])

async def test_erasing_a_session_takes_its_summaries_and_the_memories_it_alone_stated(
    backend: Backend,
):
    """delete_session takes the session's summary chain and the memories whose every source
    it was (a memory another session also stated stays); neither search finds them after."""
    await new_session(backend, "ses_a", chat_id=1)
    await new_session(backend, "ses_b", chat_id=2)
    await backend.write(extractive(backend, "ses_a", 1, "the secret lighthouse"))
    await backend.write(extractive(backend, "ses_b", 1, "another lighthouse"))
    await remember(backend, 1, fact("Lighthouse Road"), source=("ses_a", 1))
    shared = await remember(backend, 1, said("tea", "likes", "likes:tea"), source=("ses_a", 2))
    await backend.write(lambda tx: backend.turns.close_session(tx, "ses_a", now=T0))
    await new_session(backend, "ses_c", chat_id=1)
    await remember(backend, 1, said("tea", "likes", "likes:tea"), source=("ses_c", 1))
    await backend.write(lambda tx: backend.turns.delete_session(tx, "ses_a"))
    reader = backend.db.reader
    assert await backend.summaries.history(reader, "ses_a") == []
    assert await backend.summaries.latest(reader, "ses_a") is None
    assert [m.memory_id for m in await backend.memories.listing(reader, 1, history=True)] == [
        shared.memory_id
    ]
    [[gone], [kept]] = await backend.db.read(
        lambda snap: [
            backend.summaries.search(snap, "ses_a", ["lighthouse"], limit=5),
            backend.summaries.search(snap, "ses_b", ["lighthouse"], limit=5),
        ]
    )
    assert (gone, [hit.delta for hit in kept]) == ([], ["another lighthouse"])
    [road, tea] = await backend.db.read(
        lambda snap: backend.memories.search(snap, 1, ["lighthouse road", "tea"], limit=5)
    )
    assert (road, [m.memory_id for m, _ in tea]) == ([], [shared.memory_id])


# -- inbound journal ----------------------------------------------------------------------------


async def test_the_journal_records_once_and_keeps_bots_apart(backend: Backend):
    """record returns the new entries only; pending lists them oldest first per bot;
    mark_done takes one off; forget_chat and prune delete what they say."""
    one, two = backend.journal(bot_id=1), backend.journal(bot_id=2)
    entries = [JournalEntry(update_id=n, chat_id=10, payload="{}") for n in (2, 1)]
    assert [e.update_id for e in await one.record(entries)] == [2, 1]
    assert await one.record(entries) == []
    assert [e.update_id for e in await two.record(entries[:1])] == [2]
    assert [e.update_id for e in await one.pending()] == [1, 2]
    await one.mark_done(1)
    assert [e.update_id for e in await one.pending()] == [2]
    assert await one.last_update_id() == 2
    assert await InboundJournal.bots_of_chat(backend.db, 10) == [1, 2]
    assert await one.forget_chat(10) == 1  # the processed one; the untried stays
    assert [e.update_id for e in await two.pending()] == [2]
    await two.mark_done(2)
    later = backend.journal(bot_id=2, clock=lambda: T0 + timedelta(days=30))
    assert await later.prune(older_than=timedelta(days=7)) == 1
    assert await two.pending() == []
