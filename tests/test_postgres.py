"""The PostgreSQL database (agent/db/postgres.py): placeholders, rows, migrations, writes,
reads and snapshots, against a real server (tests marked ``postgres``; the placeholder
translation needs none)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("psycopg", reason="postgres: the `postgres` extra is not installed")

from agent.db import Snapshot, Transaction
from agent.db.migrations import Migration
from agent.db.postgres import PostgresDatabase, to_psycopg
from agent.errors import MigrationError, StorageError

MIGRATIONS = [
    Migration(1, "things", ("CREATE TABLE things (id BIGINT PRIMARY KEY, name TEXT NOT NULL);",)),
    Migration(
        2,
        "touch",
        (
            "CREATE FUNCTION touch() RETURNS trigger AS $$ BEGIN NEW.name := lower(NEW.name);"
            " RETURN NEW; END; $$ LANGUAGE plpgsql;",
            "CREATE TRIGGER things_touch BEFORE INSERT ON things"
            " FOR EACH ROW EXECUTE FUNCTION touch();",
        ),
    ),
]


@pytest.mark.parametrize(
    ("sqlite", "psycopg"),
    [
        ("SELECT ? , ?", "SELECT %s , %s"),
        ("SELECT '?', \"a?\" FROM t WHERE x = ?", "SELECT '?', \"a?\" FROM t WHERE x = %s"),
        ("SELECT 'it''s ?' || ?", "SELECT 'it''s ?' || %s"),
        ("SELECT x -- why?\n FROM t WHERE y LIKE '%a' AND z = ?",
         "SELECT x -- why?\n FROM t WHERE y LIKE '%%a' AND z = %s"),
        ("SELECT 5 % ?", "SELECT 5 %% %s"),
    ],
)  # fmt: skip
def test_question_marks_become_psycopg_placeholders_outside_literals(sqlite, psycopg):
    """``?`` outside literals, quoted names and comments becomes ``%s``; every ``%`` doubles."""
    assert to_psycopg(sqlite) == psycopg


@pytest.mark.postgres
async def test_migrations_apply_once_and_are_recorded(postgres_url):
    """Opening applies the migrations in order (a plpgsql body in ``$$`` included) and records
    them; a second open, and two opening at once, apply nothing again; a newer database is
    refused."""
    async with PostgresDatabase(postgres_url, migrations=MIGRATIONS[:1]) as db:
        await db.write(lambda tx: tx.execute("INSERT INTO things VALUES (?, ?)", (1, "A")))
    both = [PostgresDatabase(postgres_url, migrations=MIGRATIONS) for _ in range(2)]
    await asyncio.gather(*(db.open() for db in both))
    try:
        db = both[0]
        await db.write(lambda tx: tx.execute("INSERT INTO things VALUES (?, ?)", (2, "B")))
        rows = await db.fetchall("SELECT id, name FROM things ORDER BY id")
        assert [tuple(row) for row in rows] == [(1, "A"), (2, "b")]  # the trigger, once
        applied = await db.fetchall("SELECT version, name FROM schema_migrations ORDER BY 1")
        assert [(row["version"], row["name"]) for row in applied] == [(1, "things"), (2, "touch")]
    finally:
        for db in both:
            await db.close()
    with pytest.raises(MigrationError, match="newer"):
        await PostgresDatabase(postgres_url, migrations=MIGRATIONS[:1]).__aenter__()


@pytest.mark.postgres
async def test_a_write_commits_all_of_its_work_or_nothing(postgres_url):
    """A work's statements commit together; a work that raises leaves nothing, its error
    propagates as it is; a statement the server refuses is a StorageError; ``bytes`` (JSON)
    go as text; rows read by name and position."""
    async with PostgresDatabase(postgres_url, migrations=MIGRATIONS[:1]) as db:

        async def two(tx: Transaction) -> int:
            await tx.execute("INSERT INTO things VALUES (?, ?)", (1, "one"))
            return await tx.executemany("INSERT INTO things VALUES (?, ?)", [(2, "x"), (3, "y")])

        assert await db.write(two) == 2

        async def broken(tx: Transaction) -> None:
            await tx.execute("INSERT INTO things VALUES (?, ?)", (4, "four"))
            raise ValueError("the work's own error")

        with pytest.raises(ValueError, match="own error"):
            await db.write(broken)
        with pytest.raises(StorageError):
            await db.write(lambda tx: tx.execute("INSERT INTO things VALUES (?, ?)", (1, "dup")))
        row = await db.fetchone("SELECT count(*) AS n FROM things")
        assert row is not None
        assert (row["n"], row[0], len(row)) == (3, 3, 1)
        changed = await db.write(
            lambda tx: tx.fetchall("UPDATE things SET name = 'z' WHERE id > ? RETURNING id", (1,))
        )
        assert sorted(r[0] for r in changed) == [2, 3]
        await db.write(lambda tx: tx.execute("INSERT INTO things VALUES (?, ?)", (9, b'{"a":1}')))
        named = await db.fetchone("SELECT name FROM things WHERE id = ?", (9,))
        assert named is not None
        assert named["name"] == '{"a":1}'  # orjson's bytes are stored as text, not bytea
        with pytest.raises(TypeError, match="positional"):
            await db.reader.fetchall("SELECT :a", {"a": 1})


@pytest.mark.postgres
async def test_a_read_sees_one_snapshot_in_its_thread(postgres_url):
    """``read`` runs its statements in one REPEATABLE READ transaction: a write committed
    between two of them is not seen; the reader sees it at once."""
    async with PostgresDatabase(postgres_url, migrations=MIGRATIONS[:1]) as db:
        await db.write(lambda tx: tx.execute("INSERT INTO things VALUES (1, 'one')"))
        loop = asyncio.get_running_loop()

        def count_twice(snapshot: Snapshot) -> tuple[int, int]:
            first = snapshot.fetchone("SELECT count(*) FROM things")
            asyncio.run_coroutine_threadsafe(
                db.write(lambda tx: tx.execute("INSERT INTO things VALUES (2, 'two')")), loop
            ).result(timeout=10)
            second = snapshot.fetchall("SELECT count(*) FROM things")
            assert first is not None
            return first[0], second[0][0]

        assert await db.read(count_twice) == (1, 1)
        row = await db.reader.fetchone("SELECT count(*) FROM things")
        assert row is not None
        assert row[0] == 2
        with pytest.raises(StorageError):
            await db.read(lambda snapshot: snapshot.fetchall("INSERT INTO things VALUES (3, 'x')"))
