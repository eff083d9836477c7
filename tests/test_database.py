"""Tests of agent/db/database.py: PRAGMAs, the one writer, group commit, locks and lifecycle."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from agent.db import Database, Snapshot
from agent.errors import DatabaseLocked, StorageError


def _insert(name: str):
    """Return a piece of write work that inserts ``name`` and returns its rowid."""

    async def work(tx):
        [(rowid,)] = await tx.fetchall(
            "INSERT INTO items (name) VALUES (?) RETURNING id", (name,)
        )
        return rowid

    return work


async def _create_items(db: Database) -> None:
    await db.write(
        lambda tx: tx.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
    )


async def _trace_writer(db: Database) -> list[str]:
    """Record every statement the writer connection runs (including failed attempts)."""
    statements: list[str] = []
    assert db._writer is not None
    await db._writer.set_trace_callback(statements.append)
    return statements


def _names_on_disk(path: Path) -> set[str]:
    """Read the committed rows through an independent connection."""
    with sqlite3.connect(path) as conn:
        return {name for (name,) in conn.execute("SELECT name FROM items")}


def _begins(statements: list[str]) -> int:
    return sum(statement == "BEGIN IMMEDIATE" for statement in statements)


@pytest.fixture
async def items_db(db: Database) -> Database:
    """The migrated ``db`` fixture plus a scratch ``items`` table."""
    await _create_items(db)
    return db


@pytest.mark.parametrize(("durability", "synchronous"), [("full", 2), ("process", 1)])
async def test_every_connection_gets_the_project_pragmas(db_path, durability, synchronous):
    """Writer and reader run in WAL with foreign keys, the durability's synchronous level and
    the configured busy timeout; the searcher (reads only) waits as long for a lock."""
    async with Database(db_path, durability=durability, busy_timeout_ms=1234) as db:
        pragmas = ("journal_mode", "foreign_keys", "synchronous", "busy_timeout")

        async def read_pragmas(conn):
            return [tuple(next(iter(await conn.fetchall(f"PRAGMA {p}")))) for p in pragmas]

        writer = await db.write(read_pragmas)
        reader = await read_pragmas(db.reader)
        searcher = await db.read(lambda conn: tuple(conn.fetchone("PRAGMA busy_timeout")))
    expected = [("wal",), (1,), (synchronous,), (1234,)]
    assert writer == expected
    assert reader == expected
    assert searcher == (1234,)


async def test_temporary_tables_stay_in_memory_on_every_connection(db_path):
    """A sort or an FTS5 merge builds its temporary b-trees in memory, not in files of /var/tmp
    (they were most of the bytes a turn wrote: issue 20)."""
    async with Database(db_path) as db:
        writer = await db.write(lambda tx: tx.fetchall("PRAGMA temp_store"))
        reader = await db.reader.fetchall("PRAGMA temp_store")
        searcher = await db.read(lambda conn: tuple(conn.fetchone("PRAGMA temp_store")))
    assert [tuple(row) for row in (*writer, *reader)] == [(2,), (2,)]  # 2: MEMORY
    assert searcher == (2,)


async def test_a_new_file_has_1_kib_pages_and_an_old_one_keeps_its_own(db_path, tmp_path):
    """A new database file gets 1 KiB pages (a turn's log frames are a third of the bytes:
    issue 20); a file made with 4 KiB pages keeps them. Either copies its write-ahead log back
    once it holds 4 MB, as SQLite's default does with 4 KiB pages."""
    old = tmp_path / "old.db"
    with sqlite3.connect(old) as conn:  # a file of an earlier version: 4 KiB pages
        conn.execute("CREATE TABLE kept (x)")
    for path, page_size in ((db_path, 1024), (old, 4096)):
        async with Database(path) as db:
            sizes = await db.write(lambda tx: tx.fetchall("PRAGMA page_size"))
            pages = await db.write(lambda tx: tx.fetchall("PRAGMA wal_autocheckpoint"))
        assert [tuple(row) for row in (*sizes, *pages)] == [(page_size,), (4_096_000 // page_size,)]


def test_unknown_durability_is_rejected(db_path):
    """A durability other than 'full' or 'process' is refused before anything is opened."""
    with pytest.raises(ValueError, match="durability must be 'full' or 'process'"):
        Database(db_path, durability="fast")  # type: ignore[arg-type]
    assert not db_path.exists()


async def test_foreign_keys_are_enforced_on_writes(db):
    """A turn whose session does not exist is refused (foreign_keys=ON on the writer)."""

    async def orphan_turn(tx):
        await tx.execute(
            "INSERT INTO conversation_turns (turn_id, session_id, seq, user_text, created_at,"
            " status) VALUES ('trn_1', 'ses_missing', 1, 'hi', '2024-01-01', 'answered')"
        )

    with pytest.raises(StorageError, match="FOREIGN KEY constraint failed"):
        await db.write(orphan_turn)
    assert await db.fetchall("SELECT * FROM conversation_turns") == []


async def test_a_write_that_can_be_made_again_commits_without_an_fsync(items_db, db_path):
    """``durable=False`` work alone (a turn's vector) commits with ``synchronous`` relaxed
    around that transaction only; the next durable commit is ``FULL`` again; work of both
    kinds in one batch commits as durable. All of it is committed and seen by another
    connection."""
    statements = await _trace_writer(items_db)
    await items_db.write(_insert("vector"), durable=False)
    await items_db.write(_insert("next"))
    assert [s.split(" (")[0] for s in statements] == [
        "PRAGMA synchronous = NORMAL",
        "BEGIN IMMEDIATE",
        "INSERT INTO items",
        "COMMIT",
        "PRAGMA synchronous = FULL",  # before the next transaction
        "BEGIN IMMEDIATE",
        "INSERT INTO items",
        "COMMIT",
    ]
    statements.clear()
    await asyncio.gather(
        items_db.write(_insert("durable")), items_db.write(_insert("again"), durable=False)
    )
    assert _begins(statements) == 1  # one batch
    assert not any(s.startswith("PRAGMA synchronous") for s in statements)
    level = await items_db.write(lambda tx: tx.fetchall("PRAGMA synchronous"))
    assert tuple(level[0]) == (2,)  # FULL
    assert _names_on_disk(db_path) == {"vector", "next", "durable", "again"}


async def test_write_returns_the_result_after_commit_and_readers_see_it(items_db, db_path):
    """The work's result comes back only once committed: invisible to others during the work,
    visible to the reader and to another connection afterwards."""
    seen_during_work: list[object] = []

    async def work(tx):
        [(rowid,)] = await tx.fetchall("INSERT INTO items (name) VALUES ('ada') RETURNING id")
        seen_during_work.append(await items_db.fetchone("SELECT name FROM items"))
        seen_during_work.append(_names_on_disk(db_path))
        return ("rowid", rowid)

    result = await items_db.write(work)

    assert result == ("rowid", 1)
    assert seen_during_work == [None, set()]
    row = await items_db.fetchone("SELECT id, name FROM items")
    assert tuple(row) == (1, "ada")
    assert _names_on_disk(db_path) == {"ada"}


async def test_concurrent_writes_are_all_committed_in_grouped_transactions(items_db, db_path):
    """200 concurrent writes all commit, each caller gets its own result, and they share
    transactions (group commit: far fewer BEGINs than writes)."""
    statements = await _trace_writer(items_db)
    names = [f"n{i:03d}" for i in range(200)]

    rowids = await asyncio.gather(*(items_db.write(_insert(name)) for name in names))

    rows = await items_db.fetchall("SELECT id, name FROM items")
    assert {row["id"]: row["name"] for row in rows} == dict(zip(rowids, names, strict=True))
    assert _names_on_disk(db_path) == set(names)
    begins = _begins(statements)
    # All 200 are handed over before the writer task runs, so they share one transaction;
    # allow a second one in case the writer wakes in between.
    assert 1 <= begins <= 2
    assert statements.count("COMMIT") == begins


async def test_a_failing_work_is_rolled_back_alone(items_db, db_path):
    """A work that raises loses its own rows; the other works of the same batch commit, in the
    next transaction (each failure rolls its transaction back, and the others run again)."""
    statements = await _trace_writer(items_db)
    boom = ValueError("boom")

    async def insert_then_raise(tx):
        await tx.execute("INSERT INTO items (name) VALUES ('doomed')")
        raise boom

    results = await asyncio.gather(
        items_db.write(_insert("first")),
        items_db.write(insert_then_raise),
        items_db.write(_insert("first")),  # UNIQUE violation: a database error
        items_db.write(_insert("last")),
        return_exceptions=True,
    )

    assert _begins(statements) == 3  # two failures, two rollbacks, then one commit
    assert statements.count("ROLLBACK") == 2
    assert results[1] is boom  # the work's own exception reaches its caller unchanged
    assert isinstance(results[2], StorageError)
    assert isinstance(results[2].__cause__, sqlite3.IntegrityError)
    assert isinstance(results[0], int)
    assert isinstance(results[3], int)
    assert _names_on_disk(db_path) == {"first", "last"}


async def test_a_batch_runs_no_statement_of_its_own_per_work(items_db):
    """Group commit costs two statements per batch (BEGIN, COMMIT), none per work: every
    statement is a round trip to the connection's thread, one at a time in the writer."""
    statements = await _trace_writer(items_db)

    await asyncio.gather(*(items_db.write(_insert(f"n{i}")) for i in range(10)))

    assert statements[0] == "BEGIN IMMEDIATE"
    assert statements[-1] == "COMMIT"
    assert len(statements) == 10 + 2


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    """Take the database's write lock from a second, plain connection (another process)."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO items (name) VALUES ('from-other')")
    return other


async def test_write_retries_a_locked_database_with_backoff_until_released(db_path):
    """While another connection holds the write lock, write() waits and retries with growing
    delays, then succeeds once the lock is released."""
    async with Database(db_path, busy_timeout_ms=20, lock_timeout=10) as db:
        await _create_items(db)
        statements = await _trace_writer(db)
        other = _hold_write_lock(db_path)
        release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
        release.start()
        try:
            started = time.monotonic()
            rowid = await db.write(_insert("mine"))
            waited = time.monotonic() - started
        finally:
            release.join()
            other.close()
    assert rowid == 2
    assert waited >= 0.45
    assert _names_on_disk(db_path) == {"from-other", "mine"}
    attempts = _begins(statements)
    # It retried (more than one attempt), and with backoff: a fixed 10 ms retry would have
    # made about 25 attempts in 0.5 s.
    assert 2 <= attempts <= 12


async def test_write_raises_database_locked_when_the_lock_is_never_released(db_path):
    """With lock_timeout=0.5 and the lock held throughout, write() raises DatabaseLocked naming
    the file and the timeout; nothing is written and the database works once released."""
    async with Database(db_path, busy_timeout_ms=20, lock_timeout=0.5) as db:
        await _create_items(db)
        other = _hold_write_lock(db_path)
        try:
            started = time.monotonic()
            with pytest.raises(
                DatabaseLocked, match=r"is locked by another process; gave up after 0\.5s"
            ) as caught:
                await db.write(_insert("mine"))
            waited = time.monotonic() - started
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert str(db_path) in str(caught.value)
        assert 0.45 <= waited < 3
        assert _names_on_disk(db_path) == set()
        await db.write(_insert("after"))
    assert _names_on_disk(db_path) == {"after"}


async def _close_within(db: Database, seconds: float) -> None:
    """Close ``db``, failing (and cleaning up) instead of hanging if close() never returns."""
    try:
        async with asyncio.timeout(seconds):
            await db.close()
    except TimeoutError:
        task = db._writer_task
        assert task is not None
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        db._writer_task = None
        await db.close()
        pytest.fail(f"close() did not return within {seconds}s")


async def test_close_commits_writes_handed_over_before_the_writer_ran(db_path):
    """close() called right after writes were handed over (before the writer task took them)
    commits them all, resolves their callers and returns."""
    db = await Database(db_path).open()
    await _create_items(db)
    names = [f"n{i}" for i in range(20)]
    tasks = [asyncio.create_task(db.write(_insert(name))) for name in names]
    await asyncio.sleep(0)  # every task has queued its work; the writer has not run yet

    await _close_within(db, 5)

    assert all(task.done() for task in tasks)
    assert sorted(task.result() for task in tasks) == list(range(1, 21))
    assert _names_on_disk(db_path) == set(names)


async def test_close_waits_for_a_batch_in_progress_and_is_idempotent(db_path):
    """close() waits for a transaction already running, and a second close() is a no-op."""
    db = await Database(db_path).open()
    await _create_items(db)
    started = asyncio.Event()

    async def slow(tx):
        started.set()
        await asyncio.sleep(0.1)
        return await _insert("slow")(tx)

    task = asyncio.create_task(db.write(slow))
    await started.wait()

    await _close_within(db, 5)
    await _close_within(db, 5)

    assert task.done()
    assert task.result() == 1
    assert not db.is_open
    assert _names_on_disk(db_path) == {"slow"}


async def test_open_is_idempotent(db_path):
    """A second open() on an open database keeps the same connections."""
    async with Database(db_path) as db:
        writer, reader = db._writer, db.reader
        assert await db.open() is db
        assert (db._writer, db.reader) == (writer, reader)
        assert db.is_open


async def test_write_on_a_closed_database_raises_runtime_error_with_a_fix(db_path):
    """Writing to a database never opened or already closed is misuse: RuntimeError saying to
    call open() first."""
    fix = r"Database is not open: call `await db\.open\(\)` first"
    never_opened = Database(db_path)
    with pytest.raises(RuntimeError, match=fix):
        await never_opened.write(_insert("x"))

    db = await Database(db_path).open()
    await db.close()
    with pytest.raises(RuntimeError, match=fix):
        await db.write(_insert("x"))
    with pytest.raises(RuntimeError, match=fix):
        db.reader  # noqa: B018 - the property access is the call under test


async def test_reader_connection_is_query_only(items_db):
    """The reader cannot write: SQLite refuses, and fetchall translates it to StorageError."""
    await items_db.write(_insert("kept"))
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        await items_db.reader.execute("INSERT INTO items (name) VALUES ('sneaky')")
    with pytest.raises(StorageError, match="read failed"):
        await items_db.fetchall("DELETE FROM items RETURNING name")
    rows = await items_db.fetchall("SELECT name FROM items")
    assert [row["name"] for row in rows] == ["kept"]


async def test_read_runs_the_whole_work_in_the_searchers_thread_on_one_snapshot(items_db, db_path):
    """read() hands the work to the searcher's own thread at once and returns its result; the
    work's statements see one snapshot: a row committed meanwhile by another connection shows
    only in the next read."""
    await items_db.write(_insert("ada"))

    def work(conn: Snapshot) -> tuple[str, list[str], list[str]]:
        before = [row["name"] for row in conn.fetchall("SELECT name FROM items ORDER BY name")]
        with sqlite3.connect(db_path) as other:  # commits on leaving the block
            other.execute("INSERT INTO items (name) VALUES ('bob')")
        after = [row["name"] for row in conn.fetchall("SELECT name FROM items ORDER BY name")]
        return threading.current_thread().name, before, after

    thread, before, after = await items_db.read(work)

    assert thread.startswith("agent-db-searcher")
    assert before == after == ["ada"]
    count = await items_db.read(lambda conn: conn.fetchone("SELECT count(*) FROM items"))
    assert tuple(count) == (2,)


async def test_a_failed_read_raises_storage_error_and_the_searcher_reads_on(items_db):
    """A statement that fails (or writes: the searcher is query-only) raises StorageError; the
    snapshot is ended all the same, so the next read sees what was committed since."""
    with pytest.raises(StorageError, match="read failed: no such table: nowhere"):
        await items_db.read(lambda conn: conn.fetchall("SELECT * FROM nowhere"))
    with pytest.raises(StorageError, match="read failed: attempt to write a readonly database"):
        await items_db.read(lambda conn: conn.fetchall("INSERT INTO items (name) VALUES ('x')"))
    await items_db.write(_insert("kept"))
    rows = await items_db.read(lambda conn: conn.fetchall("SELECT name FROM items"))
    assert [row["name"] for row in rows] == ["kept"]


async def test_read_on_a_closed_database_raises_runtime_error_with_a_fix(db_path):
    """Like write(): a read of a database never opened or already closed says to open it."""
    fix = r"Database is not open: call `await db\.open\(\)` first"
    with pytest.raises(RuntimeError, match=fix):
        await Database(db_path).read(lambda conn: None)
    db = await Database(db_path).open()
    await db.close()
    with pytest.raises(RuntimeError, match=fix):
        await db.read(lambda conn: None)
    assert not [t for t in threading.enumerate() if t.name.startswith("agent-db-searcher")]


async def test_the_database_and_its_log_files_are_readable_by_their_owner_only(tmp_path):
    """Conversations are private: a new database, its -wal and -shm files are 0600; a file
    other users could read (0644, as before) loses their permissions when it is opened."""
    path = tmp_path / "memory.db"
    async with Database(path) as db:
        await db.write(lambda tx: tx.execute("CREATE TABLE t (x)"))
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            assert name.stat().st_mode & 0o777 == 0o600, name
    path.chmod(0o644)
    async with Database(path):
        assert path.stat().st_mode & 0o777 == 0o600


def _searcher_threads() -> int:
    return sum(thread.name.startswith("agent-db-searcher") for thread in threading.enumerate())


async def test_the_searcher_connects_at_the_first_read_only(db_path):
    """A database that never reads a snapshot (a CLI command, a start) does not connect the
    searcher (issue 20); the first :meth:`Database.read` connects the searcher, the close
    ends its thread."""
    before = _searcher_threads()
    db = await Database(db_path).open()
    try:
        assert _searcher_threads() == before
        await _create_items(db)
        await db.write(_insert("a"))
        rows = await db.read(lambda conn: conn.fetchall("SELECT name FROM items"))
        names = [row["name"] for row in rows]
        assert names == ["a"]
        assert _searcher_threads() == before + 1
    finally:
        await db.close()
    assert _searcher_threads() == before


def _connection_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.endswith("(_connection_worker_thread)")}


def _ended(threads: set[threading.Thread]) -> bool:
    for thread in threads:  # aiosqlite's thread ends just after its close returns
        thread.join(timeout=10)
    return not any(thread.is_alive() for thread in threads)


async def test_the_writer_connects_at_the_first_write_only(db_path):
    """A database whose schema is current opens one connection, the reader: a CLI command or
    a start that only reads never connects the writer (issue 20, bar 5). The first write
    connects it; the close ends both threads. A new file (its schema behind) connects the
    writer at the open, to migrate it."""
    before = _connection_threads()  # other tests' threads may still be ending: not counted
    async with Database(db_path) as new:
        migrating = _connection_threads() - before
        assert len(migrating) == 2  # migrated at the open
        await _create_items(new)
    assert _ended(migrating)
    db = await Database(db_path).open()
    try:
        opened = _connection_threads() - before
        assert len(opened) == 1
        assert await db.fetchall("SELECT name FROM items") == []
        assert _connection_threads() - before == opened
        assert await db.write(_insert("a")) == 1
        written = _connection_threads() - before
        assert len(written) == 2
        assert opened < written
        assert _names_on_disk(db_path) == {"a"}
    finally:
        await db.close()
    assert _ended(written)


async def test_a_writer_that_cannot_connect_fails_the_write_with_the_file_named(db_path):
    """The writer connects at the first write: a file that is no longer a database by then
    fails that write with a StorageError naming the file and the cause, writes nothing, and
    the next write connects again once the file is whole."""
    async with Database(db_path) as db:
        await _create_items(db)
    whole = db_path.read_bytes()
    db = await Database(db_path).open()
    try:
        db_path.write_bytes(b"not a database " * 100)
        with pytest.raises(StorageError, match=f"cannot open database {db_path} for writing: "
                           "file is not a database"):
            await db.write(_insert("a"))
        db_path.write_bytes(whole)
        await db.write(_insert("b"))
    finally:
        await db.close()
    assert _names_on_disk(db_path) == {"b"}
