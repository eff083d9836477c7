"""A session's state kept in two places on SQLite (schema.sql migration 0019, issue 20 bar 2):
its large fields each in a row of ``conversation_session_parts`` rewritten only when it
changes, the rest in the session row (``agent/memory/storage/session_table.py``). What a turn
writes, and a database of the schema before that migration read and written after it."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import orjson

from agent.db import Database, Transaction, load_schema_text, parse_migrations
from agent.db.transaction import SqliteTransaction
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import (
    CheckpointWriter,
    ConversationLane,
    ConversationTurn,
    InboundMessage,
    SessionState,
)
from agent.memory.conversation_store import SqliteConversationStore, encode_state
from agent.memory.schemas import (
    Fact,
    JobRef,
    OpenLoop,
    PendingClarification,
    dump_json,
)

store = SqliteConversationStore()
T0 = datetime(2025, 6, 1, 8, 0, tzinfo=UTC)
BEFORE_PARTS = parse_migrations(load_schema_text())[:18]  # up to 0018_turn_vectors


def _state(loops: int, turn_count: int) -> SessionState:
    """A state of ``loops`` open loops (about 100 bytes of JSON each) and a bit of the rest."""
    return SessionState(
        session_id="ses_a",
        open_loops=[
            OpenLoop(
                loop_id=f"loop_{i:03d}", text=f"call the plumber about leak {i}", opened_turn=i
            )
            for i in range(loops)
        ],
        pending_clarifications=[PendingClarification(question="Which flat?", asked_turn=3)],
        facts=[Fact(key="home", value="Leeds", turn=2)],
        resolved_entities={"that task": "loop_001"},
        rolling_summary="Ada has a leak in the kitchen and a plumber to call. " * 8,
        summary_buffer=(f"user: turn {turn_count}",),
        active_job_refs=[JobRef(job_id="job_1")],
        turn_count=turn_count,
    )


async def _new_session(tx: Transaction) -> None:
    await store.create_session(
        tx, session_id="ses_a", chat_id=1, chat_type="private", user_id=1, title=None, now=T0
    )


def _empty_the_log(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _log_size(path: Path) -> int:
    return Path(f"{path}-wal").stat().st_size


async def test_a_turn_writes_the_fields_of_the_state_it_changed_not_the_whole_state(
    db_path: Path,
):
    """With 100 open loops the state is 12 KB of JSON; a save that changes the counters and
    the summary buffer writes a few pages, and one that closes a loop writes the loops too."""
    state = _state(100, 1)
    async with Database(db_path) as db:
        await db.write(_new_session)
        await db.write(lambda tx: store.save_state(tx, state, last_seq=1, now=T0))
        whole = len(dump_json(state))
        assert whole > 12_000

        _empty_the_log(db_path)
        counters = _state(100, 2)
        await db.write(lambda tx: store.save_state(tx, counters, last_seq=2, now=T0))
        assert _log_size(db_path) < whole / 3

        _empty_the_log(db_path)
        closed = counters.model_copy(
            update={"open_loops": counters.open_loops[1:], "turn_count": 3}
        )
        await db.write(lambda tx: store.save_state(tx, closed, last_seq=3, now=T0))
        loops = len(dump_json({"open_loops": closed.model_dump(mode="json")["open_loops"]}))
        assert _log_size(db_path) > loops

        read = await store.get_session(db.reader, "ses_a")
        assert read is not None
        assert read.state == closed


async def test_a_state_encoded_against_the_one_before_writes_only_its_changed_parts(
    db_path: Path,
):
    """``encode_state(state, before)`` (what a turn makes in its worker thread) leaves out the
    parts equal to ``before``'s: a save that changes none of them runs no statement on the
    parts, one that empties a part writes it empty; every read gives the whole state."""
    first = _state(3, 1)
    async with Database(db_path) as db:
        await db.write(_new_session)
        await db.write(lambda tx: store.save_state(tx, first, last_seq=1, now=T0))
        counters = _state(3, 2)
        encoded = encode_state(counters, first)
        assert encoded.parts == ()
        statements: list[str] = []

        async def save(tx: SqliteTransaction) -> None:
            await tx.connection.set_trace_callback(statements.append)
            try:
                await store.save_state(tx, counters, last_seq=2, now=T0, encoded=encoded)
            finally:
                await tx.connection.set_trace_callback(None)

        await db.write(save)  # type: ignore[arg-type]
        assert any(sql.startswith("UPDATE conversation_sessions") for sql in statements)
        assert not [sql for sql in statements if "conversation_session_parts" in sql]
        emptied = counters.model_copy(update={"open_loops": (), "turn_count": 3})
        encoded = encode_state(emptied, counters)
        assert [(name, held) for name, _, held in encoded.parts] == [("open_loops", False)]
        await db.write(
            lambda tx: store.save_state(tx, emptied, last_seq=3, now=T0, encoded=encoded)
        )

        read = await store.get_session(db.reader, "ses_a")
        assert read is not None
        assert read.state == emptied


async def test_a_database_made_before_the_parts_keeps_its_states_turns_and_search(
    db_path: Path,
):
    """A file at migration 0018 whose row holds the whole state (and the rolling_summary
    copy) and whose turns are indexed: after the upgrade the state reads back as it was, the
    turn index is intact, a save moves the large fields to their rows, and erasing the
    session takes everything of it."""
    state = _state(20, 7)
    turns = [
        ConversationTurn(
            turn_id=f"trn_{seq}", session_id="ses_a", seq=seq, created_at=T0, status="delivered",
            user_text=f"the kitchen tap leaks again {seq}", assistant_text="I noted it.",
        )
        for seq in range(1, 8)
    ]  # fmt: skip

    async def old_turn(tx):
        await _new_session(tx)
        for turn in turns:
            await store.append_turn(tx, turn)
        # What save_state wrote before migration 0019: the whole state and its summary copy.
        await tx.execute(
            "UPDATE conversation_sessions SET state = ?, rolling_summary = ?, turn_count = 7,"
            " last_seq = 7 WHERE session_id = 'ses_a'",
            (dump_json(state), state.rolling_summary),
        )

    async with Database(db_path, migrations=BEFORE_PARTS) as db:
        await db.write(old_turn)

    async with Database(db_path) as db:
        read = await store.get_session(db.reader, "ses_a")
        assert read is not None
        assert (read.state, read.last_seq) == (state, 7)
        columns = {
            row["name"] for row in await db.fetchall("PRAGMA table_info(conversation_sessions)")
        }
        assert "rolling_summary" not in columns
        assert "state" in columns
        await db.write(
            lambda tx: tx.execute(
                "INSERT INTO conversation_turns_fts (conversation_turns_fts)"
                " VALUES ('integrity-check')"
            )
        )
        found = await db.read(lambda conn: store.search_turn_texts(conn, "ses_a", ["kitchen"]))
        assert len(found[0]) == 5

        later = _state(19, 8)
        await db.write(lambda tx: store.save_state(tx, later, last_seq=8, now=T0))
        read = await store.get_session(db.reader, "ses_a")
        assert read is not None
        assert read.state == later
        row = await db.fetchone("SELECT state FROM conversation_sessions")
        assert row is not None
        assert "open_loops" not in orjson.loads(row["state"])

        assert await db.write(lambda tx: store.delete_session(tx, "ses_a"))
        left = await db.fetchone(
            "SELECT (SELECT count(*) FROM conversation_session_parts)"
            " + (SELECT count(*) FROM conversation_turns)"
            " + (SELECT count(*) FROM conversation_turns_fts"
            "    WHERE conversation_turns_fts MATCH 'kitchen')"
        )
        assert left is not None
        assert left[0] == 0


async def test_a_session_has_a_part_row_only_for_the_fields_it_ever_held(db_path: Path):
    """A field never set (no loops, no summary yet) has no row: a new or quiet session costs
    its row alone; a field that empties keeps its row, empty; each state reads back."""

    async def saved(state: SessionState) -> dict[str, str]:
        await db.write(lambda tx: store.save_state(tx, state, last_seq=state.turn_count, now=T0))
        read = await store.get_session(db.reader, "ses_a")
        assert read is not None
        assert read.state == state
        rows = await db.fetchall(
            "SELECT name, value FROM conversation_session_parts WHERE session_id = 'ses_a'"
        )
        return {row["name"]: row["value"] for row in rows}

    async with Database(db_path) as db:
        await db.write(_new_session)
        assert await saved(SessionState(session_id="ses_a", turn_count=1)) == {}
        full = _state(3, 2)
        assert sorted(await saved(full)) == [
            "facts",
            "open_loops",
            "pending_clarifications",
            "resolved_entities",
            "rolling_summary",
        ]
        quieter = full.model_copy(
            update={"open_loops": (), "facts": (), "resolved_entities": {}, "turn_count": 3}
        )
        parts = await saved(quieter)
        assert (parts["open_loops"], parts["facts"], parts["resolved_entities"]) == (
            "[]",
            "[]",
            "{}",
        )
        assert sorted(parts) == sorted(await saved(full))


async def test_a_session_saved_before_the_parts_keeps_them_through_a_turn_that_changes_none(
    db_path: Path, tmp_path: Path
):
    """A row saved before migration 0019 holds its whole state in its JSON and no part rows.
    A lane started on it saves the whole state at its first turn, so a turn that changes none
    of the parts (the lane's later turns leave those out) keeps its open loops."""
    checkpoints, concierge = CheckpointWriter(tmp_path / "checkpoints"), RuleBasedConcierge()
    async with Database(db_path) as db:
        lane = ConversationLane(db, checkpoints)
        await lane.hydrate()
        for n, text in enumerate(["I live in Leeds", "I need to call the plumber"], start=1):
            await lane.on_turn(InboundMessage(chat_id=1, text=text, update_id=n), concierge)
        sid = lane.session_id_for_chat(1)
        session = await store.get_session(db.reader, sid)
        assert session is not None
        held = session.state
        assert held.open_loops
        await lane.shutdown()
    with sqlite3.connect(db_path) as conn:  # as a save before migration 0019 left it
        conn.execute("DELETE FROM conversation_session_parts")
        conn.execute("UPDATE conversation_sessions SET state = ?", (dump_json(held).decode(),))
    async with Database(db_path) as db:
        lane = ConversationLane(db, checkpoints)
        await lane.hydrate()
        for n, text in enumerate(["ok", "ok then"], start=3):
            await lane.on_turn(InboundMessage(chat_id=1, text=text, update_id=n), concierge)
        session = await store.get_session(db.reader, sid)
        assert session is not None
        assert session.state.open_loops == held.open_loops
        await lane.shutdown()

