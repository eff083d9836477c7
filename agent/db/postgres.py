"""The PostgreSQL database: psycopg 3 pools behind the same surface as :class:`~agent.db.Database`.

Selected by ``AGENT_DATABASE_URL=postgresql://...`` (:mod:`agent.app.wiring`); needs the
``postgres`` extra (``psycopg[binary,pool]``). A :class:`PostgresDatabase` holds two pools:

* an **async** pool (``psycopg_pool.AsyncConnectionPool``, autocommit connections):
  :meth:`PostgresDatabase.write` takes a connection and runs one work in one transaction
  (``BEGIN`` ... ``COMMIT``), and :attr:`PostgresDatabase.reader` runs each statement on a
  connection of its own, outside any transaction (it reads what is committed when it runs).
  Unlike SQLite there is no single writer task and no group commit: the server serialises what
  must be, so concurrent works run on concurrent connections.
* a **sync** pool (``psycopg_pool.ConnectionPool``, ``REPEATABLE READ``, read-only) for
  :meth:`PostgresDatabase.read`: the whole read runs in a worker thread on one connection, in
  one transaction, so its statements see one snapshot.

The stores' SQL keeps SQLite's ``?`` placeholders; :mod:`agent.db.postgres_adapters` translates
them and adapts rows and parameters.

A write the server aborts for a deadlock or a serialization conflict (another process wrote
the same rows at once) runs again, up to five times: a work has no side effect. What a work
raises of its own propagates as it is, and nothing of that work is committed.

**A server that goes away** (restarted, failed over, the network cut): a pooled connection
found dead before anything of a read or a write ran on it (its ``BEGIN``, a read's statement)
is dropped and the operation runs on another; while the server is down, taking a connection
waits up to ``timeout`` s (the pool reconnects with a backoff of up to 10 s). A connection lost
mid-write (its outcome unknown) or none within the timeout fails the operation with
:class:`~agent.errors.DatabaseUnwritable`: :mod:`agent.chat.storage_backlog` holds the work
(the Telegram update unconfirmed) until the server answers. An outage is logged once as an
error, its end as a warning (``tests/test_postgres_faults.py``). Other driver errors become
:class:`~agent.errors.StorageError`.

The DDL is ``agent/db/schema_postgres.sql`` (``-- migration: NNNN_name`` blocks, as
``schema.sql`` for SQLite): :func:`migrate_postgres` applies the missing ones, each in one
transaction with its ``schema_migrations`` row, under an advisory lock so that two processes
starting at once apply each migration once. Tested in ``tests/test_postgres.py`` and, store by
store, by the conformance suite (``tests/test_store_conformance.py``, ``postgres`` parameter).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from importlib import resources
from typing import Any, Self, TypeVar

import psycopg
from psycopg import IsolationLevel
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from agent.db.database import Read, Work
from agent.db.migrations import Migration, parse_migrations
from agent.db.postgres_adapters import (
    ADAPTERS,
    PoolReader,
    PostgresSnapshot,
    PostgresTransaction,
    row_factory,
)
from agent.db.transaction import Row, Transaction
from agent.errors import DatabaseUnwritable, MigrationError, StorageError

__all__ = [
    "PostgresDatabase",
    "load_postgres_schema_text",
    "migrate_postgres",
    "postgres_schema_version",
]

logger = logging.getLogger(__name__)
# psycopg_pool logs each dead connection it drops and each failed reconnection as a warning,
# dozens while a server is down; the database logs one line when an outage starts and one
# when it ends (errors of the pool itself still show).
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

T = TypeVar("T")

#: How many times a write runs when the server aborts it for a deadlock or a serialization
#: conflict (two workers writing the same rows at once) before it fails.
_WRITE_ATTEMPTS = 5
_RETRIED = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
#: What a server that went away (or cannot be reached) raises: connection failures (class 08),
#: its shutdown (57P01...), no connection from the pool within its timeout (PoolTimeout).
_LOST = psycopg.OperationalError
#: The key of the advisory lock that serialises migrations between processes ("agent" + 1).
_MIGRATION_LOCK = 0x6167656E74_01


def load_postgres_schema_text() -> str:
    """Return the text of ``agent/db/schema_postgres.sql`` (it lives in the package)."""
    return resources.files("agent.db").joinpath("schema_postgres.sql").read_text(encoding="utf-8")


async def postgres_schema_version(url: str, *, connect_timeout: int = 10) -> int:
    """Return the schema version of the PostgreSQL database at ``url`` (``0``: no migration
    ran there), without changing anything: a tool refuses a database that is not the bot's
    before opening it (opening migrates).

    Raises:
        StorageError: the server cannot be reached or read.
    """
    try:
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, connect_timeout=connect_timeout
        ) as conn:
            cursor = await conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL")
            found = await cursor.fetchone()
            if found is None or not found[0]:
                return 0
            cursor = await conn.execute("SELECT COALESCE(max(version), 0) FROM schema_migrations")
            version = await cursor.fetchone()
            return int(version[0]) if version is not None else 0
    except psycopg.Error as exc:
        raise StorageError(f"cannot read the PostgreSQL database: {exc}") from exc


async def migrate_postgres(
    conn: psycopg.AsyncConnection[Any], migrations: list[Migration] | None = None
) -> list[Migration]:
    """Apply the migrations ``conn``'s database lacks; return those this call applied.

    Each migration runs in one transaction with its ``schema_migrations`` row, after taking an
    advisory lock and reading the version again (another process may have applied it). A
    migration's statements are sent as one text, so that PostgreSQL, not SQLite's statement
    splitter, decides where each ends (function bodies in ``$$``).

    Raises:
        MigrationError: a migration failed (rolled back), or the database is newer than this
            program.
    """
    if migrations is None:
        migrations = parse_migrations(load_postgres_schema_text())
    latest = migrations[-1].version if migrations else 0
    applied: list[Migration] = []
    for migration in migrations:
        try:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                await conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                    " name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
                cursor = await conn.execute("SELECT max(version) FROM schema_migrations")
                row = await cursor.fetchone()
                current = int(row[0]) if row is not None and row[0] is not None else 0
                if current > latest:
                    raise MigrationError(
                        f"database schema version {current} is newer than this program's "
                        f"({latest}); upgrade agent before opening it"
                    )
                if migration.version <= current:
                    continue
                await conn.execute("\n".join(migration.statements).encode())
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
        except psycopg.Error as exc:
            raise MigrationError(f"migration {migration.label} failed: {exc}") from exc
        logger.info("applied PostgreSQL schema migration %s", migration.label)
        applied.append(migration)
    return applied


class PostgresDatabase:
    """One PostgreSQL database, migrated on open; the surface of :class:`~agent.db.Database`.

    Use it as an async context manager, or call :meth:`open` and :meth:`close`.

    Args:
        url: a libpq connection string or ``postgresql://`` URL.
        min_size: connections each pool keeps open.
        max_size: the most connections the async pool opens.
        timeout: seconds to wait for a connection from a pool before failing.
        migrations: the migrations to apply on open (default: ``schema_postgres.sql``'s).
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
        migrations: list[Migration] | None = None,
    ) -> None:
        self.url = url
        self._timeout = timeout
        self._migrations = migrations
        self._pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            open=False,
            kwargs={"autocommit": True, "row_factory": row_factory, "context": ADAPTERS},
            name="agent-pg",
        )
        self._read_pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=2,
            timeout=timeout,
            open=False,
            kwargs={"autocommit": False, "row_factory": row_factory, "context": ADAPTERS},
            configure=_configure_snapshot,
            name="agent-pg-read",
        )
        self._reader = PoolReader(self._pool, self._failure)
        self._open = False
        # Why the server was unreachable, while it is: logged once (see the module docstring).
        self._outage: BaseException | None = None

    async def __aenter__(self) -> Self:
        try:
            await self.open()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def is_open(self) -> bool:
        """Whether :meth:`open` has completed and :meth:`close` has not been called."""
        return self._open

    async def open(self) -> Self:
        """Open the pools and apply pending migrations. Idempotent.

        Raises:
            StorageError: the server cannot be reached.
            MigrationError: the schema could not be brought up to date.
        """
        if self._open:
            return self
        try:
            await self._pool.open(wait=True, timeout=self._timeout)
            self._read_pool.open(wait=False)  # it connects meanwhile, in threads of its own
            async with self._pool.connection() as conn:
                await migrate_postgres(conn, self._migrations)
        except BaseException as exc:
            await self.close()  # no pool left connecting behind a failed open
            if isinstance(exc, psycopg.Error):  # PoolTimeout too: the server is unreachable
                raise StorageError(f"cannot open PostgreSQL database: {exc}") from exc
            raise
        self._open = True
        return self

    async def close(self) -> None:
        """Close both pools. Idempotent."""
        self._open = False
        await self._pool.close()
        await asyncio.to_thread(self._read_pool.close)

    # -- reads ---------------------------------------------------------------------------------

    @property
    def reader(self) -> Transaction:
        """Reads of committed data: each statement on a connection of its own, autocommit."""
        if not self._open:
            raise RuntimeError("Database is not open: call `await db.open()` first")
        return self._reader

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Row]:
        """Run a read query and return all its rows.

        Raises:
            DatabaseUnwritable: the server cannot be reached.
            StorageError: the query failed.
        """
        return await self.reader.fetchall(sql, tuple(params))

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> Row | None:
        """Run a read query and return its first row, if any."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def read(self, work: Read[T]) -> T:
        """Run ``work`` with a :class:`PostgresSnapshot` in a worker thread; return its result.

        ``work`` runs in one ``REPEATABLE READ`` read-only transaction: one snapshot.

        Raises:
            StorageError: a statement of ``work`` failed.
        """
        if not self._open:
            raise RuntimeError("Database is not open: call `await db.open()` first")
        try:
            return await asyncio.to_thread(self._read_in_thread, work)
        except psycopg.Error as exc:
            raise self._failure("read", exc) from exc

    @contextlib.asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Transaction]:
        """Hold one read snapshot for several reads: a ``REPEATABLE READ`` read-only
        transaction on one connection of the async pool."""
        if not self._open:
            raise RuntimeError("Database is not open: call `await db.open()` first")
        try:
            conn = await self._begin_snapshot()
            try:
                yield PostgresTransaction(conn)
            finally:
                try:
                    await conn.execute("COMMIT")
                finally:
                    await self._pool.putconn(conn)
        except psycopg.Error as exc:
            raise self._failure("read", exc) from exc

    async def _begin_snapshot(self) -> psycopg.AsyncConnection[Any]:
        """Take a connection in a read-only ``REPEATABLE READ`` transaction (the caller puts
        it back); pooled connections the server closed meanwhile are dropped on the way."""
        stale = 0
        while True:
            conn: psycopg.AsyncConnection[Any] = await self._pool.getconn()
            try:
                await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            except _LOST:
                await self._pool.putconn(conn)
                stale += 1
                if stale >= _stale_limit(self._pool):
                    raise
            except BaseException:
                await self._pool.putconn(conn)
                raise
            else:
                return conn

    async def integrity_problems(self) -> list[str]:
        """Return the rows that break what the schema cannot declare (empty: none).

        The server keeps its own files consistent (write-ahead log, checksummed pages where the
        cluster enables them) and enforces the foreign keys; what is checked here is ours: a
        session's ``last_seq`` against its turns.
        """
        rows = await self.fetchall(
            "SELECT s.session_id, s.last_seq, COALESCE(MAX(t.seq), 0) AS top"
            " FROM conversation_sessions s"
            " LEFT JOIN conversation_turns t ON t.session_id = s.session_id"
            " GROUP BY s.session_id, s.last_seq"
            " HAVING s.last_seq < COALESCE(MAX(t.seq), 0)"
        )
        return [
            f"session {row['session_id']}: last_seq {row['last_seq']} behind its turn {row['top']}"
            for row in rows
        ]

    @property
    def location(self) -> str:
        """The server and database, as ``postgresql://user@host:port/dbname`` (no password)."""
        info = psycopg.conninfo.conninfo_to_dict(self.url)
        user = f"{info['user']}@" if info.get("user") else ""
        port = f":{info['port']}" if info.get("port") else ""
        return f"postgresql://{user}{info.get('host', '')}{port}/{info.get('dbname', '')}"

    async def bytes_on_disk(self) -> dict[str, int]:
        """Return the bytes of the bot's tables in the current schema, indexes and TOAST
        included."""
        row = await self.fetchone(
            "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        )
        return {"database": int(row["bytes"]) if row is not None else 0}

    async def purge_erased(self) -> bool:
        """Vacuum the tables that hold conversation text, so that the row versions an erasure
        left dead are removed from their pages (PostgreSQL keeps them until a vacuum). A version
        that a transaction older than the erasure may still read stays until that transaction
        ends (on a busy server, a moment); autovacuum removes it then.

        Returns:
            Whether every table was vacuumed (``False``: a table was busy or the server refused;
            autovacuum removes them later).
        """
        tables = await self.fetchall(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename = ANY(?)",
            (list(_TEXT_TABLES),),
        )
        try:
            async with self._pool.connection() as conn:
                for row in tables:
                    await conn.execute(f'VACUUM "{row["tablename"]}"')
        except psycopg.Error as exc:
            logger.warning("vacuum after an erasure failed: %s", exc)
            return False
        return True

    def _read_in_thread(self, work: Read[T]) -> T:
        stale = 0
        while True:
            try:
                with self._read_pool.connection() as conn, conn.transaction():
                    return work(PostgresSnapshot(conn))
            except _LOST as exc:
                # A pooled connection the server closed meanwhile: dropped, a read runs again.
                stale += 1
                if isinstance(exc, PoolTimeout) or stale >= _stale_limit(self._read_pool):
                    raise

    # -- writes --------------------------------------------------------------------------------

    async def write(self, work: Work[T], *, durable: bool = True) -> T:
        """Run ``work`` in one transaction and return its result after the commit.

        ``work`` must not commit, roll back or start a transaction, and must have no side
        effect outside the database. ``durable=False`` (what can be made again): the commit
        does not wait for the server's WAL flush (``synchronous_commit = off``).

        Raises:
            StorageError: the transaction failed; nothing of ``work`` was committed.
            Exception: whatever ``work`` raised; nothing of ``work`` was committed.
        """
        if not self._open:
            raise RuntimeError("Database is not open: call `await db.open()` first")
        attempt = 1
        stale = 0
        while True:
            began = False
            try:
                async with self._pool.connection() as conn, conn.transaction():
                    began = True
                    if not durable:
                        await conn.execute("SET LOCAL synchronous_commit = off")
                    result = await work(PostgresTransaction(conn))
            except _RETRIED as exc:
                # The server chose this transaction as the victim of a deadlock or a
                # serialization conflict: the work has no side effect, so it runs again.
                if attempt == _WRITE_ATTEMPTS:
                    raise StorageError(f"write failed {attempt} times: {exc}") from exc
                logger.debug("write conflict (%s), attempt %d; retrying", exc, attempt)
                attempt += 1
            except _LOST as exc:
                # Dead before BEGIN went through: nothing of the work ran, so another
                # connection may (not after no connection came within the timeout).
                stale += 1
                if began or isinstance(exc, PoolTimeout) or stale >= _stale_limit(self._pool):
                    raise self._failure("write", exc) from exc
            except psycopg.Error as exc:
                raise StorageError(f"write failed: {exc}") from exc
            else:
                self._recovered()
                return result

    # -- a server that goes away ---------------------------------------------------------------

    def _lost(self, exc: BaseException) -> None:
        if self._outage is None:
            logger.error(
                "PostgreSQL %s is unreachable (%s); what needs the database waits until it "
                "answers again",
                self.location,
                exc,
            )
        self._outage = exc

    def _recovered(self) -> None:
        if self._outage is not None:
            logger.warning("PostgreSQL %s is reachable again", self.location)
            self._outage = None

    def _failure(self, what: str, exc: psycopg.Error) -> StorageError:
        """Return the error a failed read or write raises (:class:`PoolReader`'s too):
        :class:`DatabaseUnwritable` for a server that went away (the same operation may
        succeed later)."""
        if isinstance(exc, _LOST):
            self._lost(exc)
            return DatabaseUnwritable(f"{what} failed, PostgreSQL unreachable: {exc}")
        return StorageError(f"{what} failed: {exc}")


#: The tables whose rows hold what users said (vacuumed after an erasure); those not yet
#: created on this server are skipped.
_TEXT_TABLES = tuple(
    """inbound_updates conversation_sessions conversation_turns conversation_turn_search
    turn_edits session_checkpoints conversation_summaries memories memory_sources
    memory_relations""".split()
)


def _stale_limit(pool: AsyncConnectionPool[Any] | ConnectionPool[Any]) -> int:
    """How many dead pooled connections an operation may meet: all the pool holds, and one."""
    return pool.max_size + 1


def _configure_snapshot(conn: psycopg.Connection[Any]) -> None:
    conn.isolation_level = IsolationLevel.REPEATABLE_READ
    conn.read_only = True
    conn.commit()  # setting them may not leave the connection in a transaction
