"""Tests of agent/db/migrations.py: parsing schema.sql and applying named migrations."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from datetime import datetime
from pathlib import Path

import aiosqlite
import pytest

from agent.db import Database, Migration, load_schema_text, migrate, parse_migrations
from agent.db.migrations import schema_is_current
from agent.errors import MigrationError
from agent.memory import ConversationTurn
from agent.memory.conversation_store import SqliteConversationStore

REAL = parse_migrations(load_schema_text())
LATEST = len(REAL)
NOW = datetime.fromisoformat("2024-05-01T12:00:00+00:00")


def _with_extra(sql: str, name: str = "add_notes") -> list[Migration]:
    """The real migrations plus one more, written the way a new one is added to schema.sql."""
    text = f"{load_schema_text()}\n-- migration: {LATEST + 1:04d}_{name}\n{sql}\n"
    return parse_migrations(text)


GOOD_EXTRA = _with_extra(
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, body TEXT NOT NULL);\n"
    "ALTER TABLE conversation_sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;"
)
# The bad statement comes last, so the CREATE TABLE before it has run and must be undone.
BAD_EXTRA = _with_extra(
    "CREATE TABLE notes (id INTEGER PRIMARY KEY);\nINSERT INTO no_such_table VALUES (1);",
    name="broken",
)


def _bookkeeping(path: Path) -> tuple[int, list[tuple[int, str]], set[str]]:
    """Read user_version, the schema_migrations rows and the table names from disk."""
    with sqlite3.connect(path) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        rows = []
        if "schema_migrations" in tables:
            rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")
            rows = [tuple(row) for row in rows]
    return version, rows, tables


def _rows_of(migrations: list[Migration]) -> list[tuple[int, str]]:
    return [(m.version, m.name) for m in migrations]


def test_schema_sql_parses_into_consecutive_named_migrations():
    """schema.sql yields migrations numbered 1, 2, 3, ..., each with complete statements."""
    assert LATEST >= 1
    assert [m.version for m in REAL] == list(range(1, LATEST + 1))
    assert REAL[0].label == "0001_initial"
    assert len({m.name for m in REAL}) == LATEST
    for migration in REAL:
        assert re.fullmatch(r"\d{4}_\w+", migration.label)
        assert migration.statements
        for statement in migration.statements:
            assert sqlite3.complete_statement(statement)
            assert not statement.startswith("--")


def test_parser_skips_comments_and_keeps_multiline_statements():
    """Comment lines between statements are dropped; a statement may span lines and hold
    comments; the marker's number and name become version and name."""
    text = (
        "-- header comment\n"
        "-- migration: 0001_first\n"
        "-- about table a\n"
        "CREATE TABLE a (\n"
        "    x INTEGER -- inline\n"
        ");\n"
        "CREATE INDEX a_x ON a (x);\n"
        "-- migration: 0002_second_one\n"
        "INSERT INTO a VALUES (1);\n"
    )
    first, second = parse_migrations(text)
    assert first == Migration(
        1, "first", ("CREATE TABLE a (\n    x INTEGER -- inline\n);", "CREATE INDEX a_x ON a (x);")
    )
    assert second == Migration(2, "second_one", ("INSERT INTO a VALUES (1);",))
    assert second.label == "0002_second_one"
    assert parse_migrations("-- nothing but a comment\n") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "-- migration: 0001_a\nCREATE TABLE a (x);\n"
            "-- migration: 0003_c\nCREATE TABLE c (x);\n",
            "0003_c is out of sequence: expected version 2",
            id="gap",
        ),
        pytest.param(
            "-- migration: 0002_b\nCREATE TABLE b (x);\n",
            "0002_b is out of sequence: expected version 1",
            id="not-from-1",
        ),
        pytest.param(
            "-- migration: 0001_a\nCREATE TABLE a (x);\n"
            "-- migration: 0001_b\nCREATE TABLE b (x);\n",
            "0001_b is out of sequence: expected version 2",
            id="duplicate",
        ),
        pytest.param(
            "CREATE TABLE early (x);\n-- migration: 0001_a\nCREATE TABLE a (x);\n",
            "SQL before its first '-- migration:' line",
            id="sql-before-marker",
        ),
        pytest.param(
            "-- migration: 0001_a\nCREATE TABLE a (x)\n",
            "incomplete SQL statement",
            id="incomplete-at-end",
        ),
        pytest.param(
            "-- migration: 0001_a\nCREATE TABLE a (x)\n-- migration: 0002_b\nCREATE TABLE b (x);\n",
            "incomplete SQL statement",
            id="incomplete-before-next-marker",
        ),
    ],
)
def test_malformed_schema_text_raises_migration_error(text, message):
    """Out-of-sequence versions, SQL before the first marker and unfinished statements are
    refused with a MigrationError that says what is wrong."""
    with pytest.raises(MigrationError, match=re.escape(message)):
        parse_migrations(text)


async def test_fresh_database_gets_every_migration_and_its_record(db_path):
    """A new file ends at user_version == latest with one schema_migrations row per migration."""
    async with Database(db_path):
        pass
    version, rows, tables = _bookkeeping(db_path)
    assert version == LATEST
    assert rows == _rows_of(REAL)
    assert {"schema_migrations", "conversation_sessions", "conversation_turns"} <= tables
    with sqlite3.connect(db_path) as conn:
        stamps = [stamp for (stamp,) in conn.execute("SELECT applied_at FROM schema_migrations")]
    assert all(datetime.fromisoformat(stamp).tzinfo is not None for stamp in stamps)


async def test_migrate_stops_at_target_and_resumes_from_there(db_path):
    """migrate(target=N-1) applies up to N-1 only; a later migrate() applies just N."""
    async with aiosqlite.connect(db_path, isolation_level=None) as conn:
        applied = await migrate(conn, GOOD_EXTRA, target=LATEST)
        assert applied == REAL
        assert _bookkeeping(db_path)[:2] == (LATEST, _rows_of(REAL))
        applied = await migrate(conn, GOOD_EXTRA)
        assert applied == GOOD_EXTRA[-1:]
    assert _bookkeeping(db_path)[:2] == (LATEST + 1, _rows_of(GOOD_EXTRA))


async def test_migrating_from_the_previous_version_keeps_the_data(db_path):
    """Upgrading a database in use to version N keeps its rows, adds the new table and column,
    and records N in user_version and schema_migrations."""
    store = SqliteConversationStore()
    turn = ConversationTurn(
        turn_id="trn_1", session_id="ses_1", seq=1, user_text="hello", created_at=NOW
    )

    async def seed(tx):
        await store.create_session(
            tx, session_id="ses_1", chat_id=7, chat_type="private", user_id=1, title=None, now=NOW
        )
        assert await store.append_turn(tx, turn)

    async with Database(db_path) as db:
        await db.write(seed)
        before = await store.get_session(db.reader, "ses_1")
    assert _bookkeeping(db_path)[0] == LATEST

    async with Database(db_path, migrations=GOOD_EXTRA) as db:
        assert await store.get_session(db.reader, "ses_1") == before
        assert await store.recent_turns(db.reader, "ses_1", 10) == [turn]
        row = await db.fetchone("SELECT pinned FROM conversation_sessions")
        assert row["pinned"] == 0
        await db.write(
            lambda tx: tx.execute("INSERT INTO notes (session_id, body) VALUES ('ses_1', 'n')")
        )
        notes = await db.fetchall("SELECT session_id, body FROM notes")
        assert [tuple(note) for note in notes] == [("ses_1", "n")]

    version, rows, tables = _bookkeeping(db_path)
    assert version == LATEST + 1
    assert rows == [*_rows_of(REAL), (LATEST + 1, "add_notes")]
    assert "notes" in tables


@pytest.mark.parametrize("start", ["fresh", "previous-version"])
async def test_failing_migration_rolls_back_table_and_bookkeeping(db_path, start):
    """A migration that fails leaves neither its table, nor its schema_migrations row, nor a
    changed user_version; the migrations before it stay applied."""
    if start == "previous-version":
        async with Database(db_path):
            pass

    with pytest.raises(
        MigrationError,
        match=rf"migration {LATEST + 1:04d}_broken failed: .*"
        r"no such table: no_such_table",
    ):
        async with Database(db_path, migrations=BAD_EXTRA):
            pass

    version, rows, tables = _bookkeeping(db_path)
    assert version == LATEST
    assert rows == _rows_of(REAL)
    assert "notes" not in tables
    async with Database(db_path) as db:  # still usable by the current program
        assert await db.fetchall("SELECT * FROM conversation_sessions") == []


async def test_database_newer_than_the_program_is_refused(db_path):
    """A file migrated by a newer release raises MigrationError telling to upgrade, and is left
    untouched."""
    with sqlite3.connect(db_path) as conn:
        conn.execute(f"PRAGMA user_version = {LATEST + 5}")

    with pytest.raises(
        MigrationError,
        match=rf"version {LATEST + 5} is newer than this program's \({LATEST}\); upgrade agent",
    ):
        async with Database(db_path):
            pass

    version, rows, tables = _bookkeeping(db_path)
    assert (version, rows, tables) == (LATEST + 5, [], set())


async def test_migrating_twice_applies_nothing_the_second_time(db_path):
    """Once up to date, migrate() applies nothing and leaves the records as they were."""
    async with Database(db_path):
        pass
    with sqlite3.connect(db_path) as conn:
        before = conn.execute("SELECT * FROM schema_migrations").fetchall()

    async with aiosqlite.connect(db_path, isolation_level=None) as conn:
        assert await migrate(conn) == []
    async with Database(db_path):
        pass

    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT * FROM schema_migrations").fetchall() == before
    assert _bookkeeping(db_path)[0] == LATEST


async def test_two_databases_opening_one_new_file_at_once_both_succeed(tmp_path):
    """Two Database objects opening (and migrating) the same new file concurrently both open,
    and every migration is applied exactly once."""
    for attempt in range(20):  # the race is timing-dependent: try it many times
        path = tmp_path / f"race{attempt}.db"
        databases = [Database(path), Database(path)]
        try:
            results = await asyncio.gather(
                *(database.open() for database in databases), return_exceptions=True
            )
        finally:
            for database in databases:
                await database.close()
        assert results == databases
        assert _bookkeeping(path)[:2] == (LATEST, _rows_of(REAL))


async def test_an_up_to_date_database_opens_without_a_write_and_a_behind_one_is_migrated(
    db_path,
):
    """What a start checks (issue 20): ``schema_is_current`` says whether a version has every
    migration of schema.sql (or of a list); an up-to-date file opens without a commit, one a
    migration behind gets it on open."""
    assert schema_is_current(LATEST)
    assert not schema_is_current(LATEST - 1)
    assert not schema_is_current(LATEST + 1)
    assert schema_is_current(LATEST + 1, GOOD_EXTRA)
    assert schema_is_current(0, [])
    async with Database(db_path, migrations=REAL[:-1]):
        pass
    assert _bookkeeping(db_path)[0] == LATEST - 1
    with sqlite3.connect(db_path) as watcher:  # sees every commit of another connection
        before = watcher.execute("PRAGMA data_version").fetchone()
        async with Database(db_path):
            pass
        migrated = watcher.execute("PRAGMA data_version").fetchone()
        assert migrated != before
        async with Database(db_path):
            pass
        assert watcher.execute("PRAGMA data_version").fetchone() == migrated
    assert _bookkeeping(db_path)[:2] == (LATEST, _rows_of(REAL))
