"""The PostgreSQL database (agent/db/postgres.py, agent/db/postgres_adapters.py): placeholders,
rows, migrations, writes, reads, snapshots, integrity and purging, against a real server (tests
marked ``postgres``; the placeholder translation needs none)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("psycopg", reason="postgres: the `postgres` extra is not installed")

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.db import Snapshot, Transaction
from agent.db.migrations import Migration, parse_migrations
from agent.db.postgres import PostgresDatabase, load_postgres_schema_text
from agent.db.postgres_adapters import to_psycopg
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
    go as text; rows read by name and position; work that can be made again commits without
    waiting for the server's flush (``durable=False``)."""
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
        await db.write(lambda tx: tx.execute("INSERT INTO things VALUES (?, ?)", (8, "v")),
                       durable=False)  # fmt: skip
        assert await db.fetchone("SELECT name FROM things WHERE id = ?", (8,)) is not None
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


@pytest.mark.postgres
async def test_the_package_schema_is_applied_and_recorded(postgres_url):
    """Opening with the default migrations applies every block of schema_postgres.sql, each
    recorded by name; a second open applies nothing."""
    expected = [(m.version, m.name) for m in parse_migrations(load_postgres_schema_text())]
    assert expected[:2] == [(1, "inbound_updates"), (2, "sessions_turns")]
    for _ in range(2):
        async with PostgresDatabase(postgres_url) as db:
            rows = await db.fetchall("SELECT version, name FROM schema_migrations ORDER BY 1")
            assert [(row[0], row[1]) for row in rows] == expected


@pytest.mark.postgres
async def test_two_processes_journal_one_update_once(postgres_url):
    """Two databases (as two worker processes would have) record the same updates at once, in
    opposite orders: each update is new to exactly one of them (ON CONFLICT DO NOTHING on
    (bot_id, update_id)), and neither waits for the other in a cycle."""
    entries = [JournalEntry(update_id=n, chat_id=n % 3, payload="{}") for n in range(1, 41)]
    async with PostgresDatabase(postgres_url) as one, PostgresDatabase(postgres_url) as two:
        journals = [InboundJournal(one, bot_id=7), InboundJournal(two, bot_id=7)]
        fresh = await asyncio.gather(
            journals[0].record(entries), journals[1].record(entries[::-1])
        )
        ids = [entry.update_id for batch in fresh for entry in batch]
        assert sorted(ids) == list(range(1, 41))
        assert len(await journals[0].pending(limit=100)) == 40


@pytest.mark.postgres
async def test_a_write_chosen_as_a_deadlock_victim_runs_again(postgres_url):
    """Two writes that lock two rows in opposite orders deadlock; the server aborts one, which
    runs again (the server may pick a victim again on a loaded machine): both commit, each
    once."""
    async with PostgresDatabase(postgres_url, migrations=MIGRATIONS[:1]) as db:
        await db.write(lambda tx: tx.execute("INSERT INTO things VALUES (1, 'a'), (2, 'b')"))
        both_locked_one = asyncio.Barrier(2)
        runs = [0, 0]

        def crossing(index: int, first: int, second: int):
            async def work(tx: Transaction) -> None:
                runs[index] += 1
                await tx.execute("UPDATE things SET name = name || ? WHERE id = ?", ("x", first))
                if runs[index] == 1:
                    await both_locked_one.wait()
                await tx.execute("UPDATE things SET name = name || ? WHERE id = ?", ("y", second))

            return work

        await asyncio.gather(db.write(crossing(0, 1, 2)), db.write(crossing(1, 2, 1)))
        assert max(runs) >= 2  # a victim ran again
        rows = await db.fetchall("SELECT name FROM things ORDER BY id")
        # Each row got one "x" and one "y" (in the order the works committed): each work once.
        assert sorted("".join(sorted(row[0])) for row in rows) == ["axy", "bxy"]


async def test_an_unreachable_server_is_a_storage_error():
    """Opening a database whose server does not answer fails with StorageError, in time."""
    db = PostgresDatabase("postgresql://agent:agent@127.0.0.1:9/none", timeout=0.5)
    with pytest.raises(StorageError, match="cannot open"):
        await db.__aenter__()
    assert not db.is_open


@pytest.mark.postgres
async def test_a_snapshot_reads_one_view_while_others_commit(postgres_url):
    """Reads inside ``snapshot()`` do not see what commits meanwhile; after it, they do."""
    async with PostgresDatabase(postgres_url, migrations=MIGRATIONS[:1]) as db:
        await db.write(lambda tx: tx.execute("INSERT INTO things VALUES (1, 'a')"))
        async with db.snapshot() as reader:
            before = await reader.fetchall("SELECT count(*) AS n FROM things")
            await db.write(lambda tx: tx.execute("INSERT INTO things VALUES (2, 'b')"))
            during = await reader.fetchall("SELECT count(*) AS n FROM things")
        after = await db.fetchall("SELECT count(*) AS n FROM things")
    assert [before[0]["n"], during[0]["n"], after[0]["n"]] == [1, 1, 2]


@pytest.mark.postgres
async def test_integrity_problems_name_a_session_behind_its_turns(postgres_url):
    """A session whose ``last_seq`` is behind its turns is reported; a sound one is not."""
    async with PostgresDatabase(postgres_url) as db:
        await db.write(
            lambda tx: tx.execute(
                "INSERT INTO conversation_sessions (session_id, chat_id, state, created_at,"
                " updated_at) VALUES ('ses_1', 1, '{}', 't', 't')"
            )
        )
        assert await db.integrity_problems() == []
        await db.write(
            lambda tx: tx.execute(
                "INSERT INTO conversation_turns (turn_id, session_id, seq, user_text,"
                " created_at, status) VALUES ('trn_1', 'ses_1', 1, 'hi', 't', 'recorded')"
            )
        )
        assert await db.integrity_problems() == ["session ses_1: last_seq 0 behind its turn 1"]


@pytest.mark.postgres
async def test_purge_erased_removes_deleted_text_from_the_table_pages(postgres_url):
    """After a delete, the old row version still holds the text in its page; ``purge_erased``
    (a vacuum) removes it (every page read with ``pageinspect``, as someone with the disk
    could)."""
    erased = "the cabin code is 7731-erase-me"

    async def text_in_pages(db: PostgresDatabase) -> int:
        row = await db.fetchone(
            "SELECT count(*) AS n FROM generate_series(0, pg_relation_size('conversation_turns')"
            " / current_setting('block_size')::int - 1) AS page,"
            " heap_page_items(get_raw_page('conversation_turns', page::int))"
            " WHERE t_data IS NOT NULL AND position(convert_to(?, 'UTF8') IN t_data) > 0",
            (erased,),
        )
        assert row is not None
        return int(row["n"])

    async with PostgresDatabase(postgres_url) as db:
        await db.write(lambda tx: tx.execute("CREATE EXTENSION IF NOT EXISTS pageinspect"))
        await db.write(
            lambda tx: tx.execute(
                "INSERT INTO conversation_sessions (session_id, chat_id, state, created_at,"
                " updated_at, last_seq) VALUES ('ses_1', 1, '{}', 't', 't', 1)"
            )
        )
        await db.write(
            lambda tx: tx.execute(
                "INSERT INTO conversation_turns (turn_id, session_id, seq, user_text,"
                " created_at, status) VALUES ('trn_1', 'ses_1', 1, ?, 't', 'recorded')",
                (erased,),
            )
        )
        await db.write(lambda tx: tx.execute("DELETE FROM conversation_sessions"))
        assert await text_in_pages(db) == 1  # dead, but on the page
        # A vacuum keeps what a transaction older than the delete may still see: on a server
        # other connections use, that is a moment's wait: the purge is repeated until they end.
        for _ in range(40):
            assert await db.purge_erased()
            if await text_in_pages(db) == 0:
                break
            await asyncio.sleep(0.25)
        assert await text_in_pages(db) == 0
