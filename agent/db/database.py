"""The SQLite database: connections, PRAGMAs, and the one way to write.

A :class:`Database` holds three connections to one file in WAL mode:

* the **writer**, used only by a single writer task, connected by the first write (or at the
  open, to migrate a schema that is behind). Callers hand it work with
  :meth:`Database.write`; the task runs every piece of work that is waiting in *one*
  ``BEGIN IMMEDIATE`` ... ``COMMIT`` and resolves the callers after the commit. Many chats'
  turns therefore share one fsync (group commit): durability does not cap throughput
  (DESIGN.md section 3). A work that fails takes its transaction down: the writer rolls it
  back, fails that work alone, and runs the others again in the next transaction (work has no
  side effect, so a rerun is safe). A savepoint around every work would cost two more round
  trips to the connection's thread per work: 14.6 round trips on the writer per turn of the
  bot instead of 8.0 (under the load of ``bench/throughput.py``).
* the **reader**, ``query_only``, for reads of committed data that never wait for writes;
* the **searcher**, ``query_only`` too, a plain ``sqlite3`` connection in a thread of its own
  made by the first read, for reads of many statements that depend on each other (retrieval):
  :meth:`Database.read` hands the whole read to that thread at once, where each statement on
  the reader is a round trip to aiosqlite's thread (a packet's retrieval: 2.7 ms against 1.8).

When another process (the inspection CLI, a backup) holds the write lock, ``BEGIN IMMEDIATE``
is retried with exponential backoff until ``lock_timeout`` runs out, then
:class:`~agent.errors.DatabaseLocked` is raised. When the disk refuses writes (full, read-only,
I/O errors) the writes fail with :class:`~agent.errors.DatabaseUnwritable`; the log gets one
error line when that starts and one line when writes commit again, not one per write.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

import aiosqlite

from agent.db.migrations import Migration, migrate, schema_is_current
from agent.db.sqlite_erasure import vacuum
from agent.db.sqlite_faults import is_busy, read_only_hint, storage_error, translate_write_error
from agent.db.sqlite_files import configure, file_sizes, make_private
from agent.db.transaction import Row, Snapshot, SqliteSnapshot, SqliteTransaction, Transaction
from agent.db.write_queue import Pending, settle
from agent.errors import DatabaseLocked, DatabaseUnwritable, StorageError

__all__ = ["Database", "Durability", "Read", "Work"]

logger = logging.getLogger(__name__)

#: ``full``: fsync on every commit, survives power loss. ``process``: fsync only when the WAL
#: is checkpointed (``synchronous=NORMAL``), survives a crash of the process, not of the machine.
Durability = Literal["full", "process"]
T = TypeVar("T")
#: A piece of write work: called with the write transaction, open.
Work = Callable[[Transaction], Awaitable[T]]
#: A read of several statements: called with a snapshot, in the searcher's thread.
Read = Callable[[Snapshot], T]

_SYNCHRONOUS: dict[str, str] = {"full": "FULL", "process": "NORMAL"}


class Database:
    """One SQLite database file, opened with the project's PRAGMAs and migrated.

    Use it as an async context manager, or call :meth:`open` and :meth:`close`::

        async with Database(path) as db:
            await db.write(lambda tx: tx.execute("INSERT ..."))
            rows = await db.fetchall("SELECT ...")

    Args:
        path: the database file; its directory is created if missing.
        durability: ``full`` (default) or ``process``; see :data:`Durability`.
        busy_timeout_ms: how long SQLite itself waits for a lock before reporting busy.
        lock_timeout: seconds a write keeps retrying a lock held by another process.
        migrations: the migrations to apply on open (default: those of ``schema.sql``).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        durability: Durability = "full",
        busy_timeout_ms: int = 1000,
        lock_timeout: float = 30.0,
        migrations: list[Migration] | None = None,
    ) -> None:
        if durability not in _SYNCHRONOUS:
            raise ValueError(f"durability must be 'full' or 'process', not {durability!r}")
        self.path = Path(path)
        self.durability: Durability = durability
        self._busy_timeout_ms = busy_timeout_ms
        self._lock_timeout = lock_timeout
        self._migrations = migrations
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._reader_tx: SqliteTransaction | None = None
        # Made by the first read, in the searcher's thread (the only one that touches it).
        self._searcher: sqlite3.Connection | None = None
        self._search_thread: ThreadPoolExecutor | None = None
        self._searched = False
        self._version_at_open = 0
        self._queue: list[Pending] = []
        self._wakeup = asyncio.Event()
        self._writer_task: asyncio.Task[None] | None = None
        self._closing = False
        # Why writes are being refused (disk full, read-only...), while they are: logged once.
        self._refusal: StorageError | None = None

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
        return self._writer_task is not None and not self._closing

    async def open(self) -> Self:
        """Connect, set the PRAGMAs, apply pending migrations and start the writer task.

        Idempotent: a second call on an open database does nothing.

        Raises:
            StorageError: the file cannot be opened as a database.
            MigrationError: the schema could not be brought up to date.
        """
        if self._writer_task is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            make_private(self.path)
            self._reader_tx = SqliteTransaction(await self._connect_all())
        except BaseException as exc:
            # A connection left open keeps its non-daemon thread: the process would hang at exit.
            await self.close()
            if isinstance(exc, sqlite3.Error):
                hint = read_only_hint(self.path)
                raise StorageError(f"cannot open database {self.path}: {exc}{hint}") from exc
            raise
        self._closing = False
        self._writer_task = asyncio.create_task(self._run_writer(), name="agent-db-writer")
        return self

    async def _connect_all(self) -> aiosqlite.Connection:
        """Connect the reader, and the writer only if the schema is behind (it migrates);
        return the reader. Otherwise the first write connects the writer
        (:meth:`_writer_connection`): a start or a command that only reads connects one
        (issue 20: a connection is most of an open, its schema parsed; two connecting at once
        took longer than one after the other, contending for the file's locks)."""
        self._search_thread = ThreadPoolExecutor(1, thread_name_prefix="agent-db-searcher")
        self._searched = False
        self._reader = await self._connect(query_only=True, version=True)
        if not schema_is_current(self._version_at_open, self._migrations):
            await migrate(await self._writer_connection(), self._migrations)
        return self._reader

    async def _writer_connection(self) -> aiosqlite.Connection:
        # Only the open (before the writer task starts) and the writer task call this.
        if self._writer is None:
            self._writer = await self._connect(query_only=False)
        return self._writer

    async def _connect(self, *, query_only: bool, version: bool = False) -> aiosqlite.Connection:
        # One hop to the connection's new thread: connect, switch to WAL, set the PRAGMAs (and
        # read the schema's version). A failure is raised once the thread has stopped (it must
        # not outlive the loop).
        failed: list[Exception] = []
        connector = functools.partial(self._open_connection, query_only, failed, version)
        conn = await aiosqlite.Connection(connector, iter_chunk_size=64)
        if failed:
            await conn.close()
            raise failed[0]
        return conn

    def _open_connection(
        self, query_only: bool, failed: list[Exception] | None = None, version: bool = False
    ) -> sqlite3.Connection:
        # Runs in the thread of the connection.
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            configure(
                conn,
                query_only=query_only,
                synchronous=_SYNCHRONOUS[self.durability],
                busy_timeout_ms=int(self._busy_timeout_ms),
                lock_timeout=self._lock_timeout,
            )
            if version:
                self._version_at_open = conn.execute("PRAGMA user_version").fetchone()[0]
        except Exception as exc:  # a file that is no database fails here
            if failed is None:
                conn.close()
                raise
            failed.append(exc)
        return conn

    async def close(self) -> None:
        """Finish the writes already handed over, then close the connections. Idempotent."""
        self._closing = True
        self._wakeup.set()
        if self._writer_task is not None:
            await self._writer_task
            self._writer_task = None
        for conn in (self._reader, self._writer):
            if conn is not None:
                await conn.close()
        self._reader = self._writer = None
        self._reader_tx = None
        thread, self._search_thread = self._search_thread, None
        if thread is not None:
            if self._searched:  # after the reads already handed over (one thread, in order)
                await asyncio.get_running_loop().run_in_executor(thread, self._close_searcher)
            thread.shutdown()

    # -- reads ---------------------------------------------------------------------------------

    @property
    def reader(self) -> Transaction:
        """The read-only connection: each statement sees the data committed when it runs."""
        if self._reader_tx is None:
            raise RuntimeError("Database is not open: call `await db.open()` first")
        return self._reader_tx

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Row]:
        """Run a read query on the reader connection and return all its rows."""
        try:
            return await self.reader.fetchall(sql, tuple(params))
        except sqlite3.Error as exc:
            raise StorageError(f"read failed: {exc}") from exc

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> Row | None:
        """Run a read query on the reader connection and return its first row, if any."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    @contextlib.asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Transaction]:
        """Hold one read snapshot on :attr:`reader` for several reads (BEGIN ... COMMIT)."""
        reader = self.reader
        await reader.execute("BEGIN")
        try:
            yield reader
        finally:
            await reader.execute("COMMIT")

    async def integrity_problems(self) -> list[str]:
        """Return what SQLite's integrity and foreign-key checks report (empty: none)."""
        problems = []
        for pragma in ("integrity_check", "foreign_key_check"):
            rows = await self.fetchall(f"PRAGMA {pragma}")
            problems += [
                f"{pragma}: {' '.join(str(value) for value in row)}"
                for row in rows
                if tuple(row) != ("ok",)
            ]
        return problems

    async def read(self, work: Read[T]) -> T:
        """Run ``work`` with a :class:`Snapshot` of the searcher, in its thread; return its result.

        For reads of several statements that depend on each other (a packet's retrieval): all
        of them cost one hand-over to a thread, where on :attr:`reader` each statement costs
        one. ``work`` runs in one read transaction, so its statements see one snapshot of the
        committed data. It must only read, and must not keep the connection.

        Raises:
            StorageError: a statement of ``work`` failed.
        """
        thread = self._search_thread
        if thread is None:
            raise RuntimeError("Database is not open: call `await db.open()` first")
        self._searched = True
        try:
            return await asyncio.get_running_loop().run_in_executor(thread, self._search, work)
        except sqlite3.Error as exc:
            raise StorageError(f"read failed: {exc}") from exc

    def _search(self, work: Read[T]) -> T:
        # In the searcher's thread. A start that reads no snapshot never connects it.
        if self._searcher is None:
            self._searcher = self._open_connection(True)
        self._searcher.execute("BEGIN")
        try:
            return work(SqliteSnapshot(self._searcher))
        finally:
            self._searcher.execute("COMMIT")  # it only read: ends the snapshot

    def _close_searcher(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self.path)

    async def bytes_on_disk(self) -> dict[str, int]:
        """Return the sizes of the database file, its write-ahead log and its shared-memory
        index (``0`` for a side file that does not exist)."""
        return await asyncio.to_thread(file_sizes, self.path)

    async def purge_erased(self) -> bool:
        """Rebuild the file from what is live, then copy the write-ahead log into it and empty it.

        Erasure needs both: the file keeps what a delete freed (:mod:`agent.db.sqlite_erasure`),
        and the log keeps the pages as they were before. The copy runs on the reader.

        Returns:
            Whether both were done (``False``: another process held the file past the busy
            timeout, or the disk refused; the next erasure's purge does it).
        """
        if self._reader is None:
            raise RuntimeError("Database is not open: call `await db.open()` first")
        try:
            await asyncio.to_thread(vacuum, self.path, self._lock_timeout)
            rows = await self._reader.execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
        except (StorageError, sqlite3.Error) as exc:
            logger.warning("clean-up after an erasure of %s failed: %s", self.path, exc)
            return False
        return next(iter(rows), (1,))[0] == 0

    # -- writes --------------------------------------------------------------------------------

    async def write(self, work: Work[T], *, durable: bool = True) -> T:
        """Run ``work`` inside a write transaction and return its result after the commit.

        Work handed over by concurrent callers is committed together. ``work`` must not commit,
        roll back or start a transaction, and must not produce side effects outside the
        database: those belong after this call returns (STYLE.md, "side effects after COMMIT").
        ``durable=False`` (what can be made again, e.g. a turn's vector): a batch of such work
        alone is committed without an fsync, whatever the durability (a later commit's fsync
        covers it; a power loss may lose it, a crash of the process does not).

        Raises:
            DatabaseLocked: another process held the write lock past ``lock_timeout``.
            DatabaseUnwritable: the disk refused the write (full, read-only, I/O error);
                nothing of ``work`` was committed.
            StorageError: the transaction failed; nothing of ``work`` was committed.
            Exception: whatever ``work`` raised; nothing of ``work`` was committed.
        """
        if not self.is_open:
            raise RuntimeError("Database is not open: call `await db.open()` first")
        pending = Pending(work, durable)
        self._queue.append(pending)
        self._wakeup.set()
        return await pending.future  # type: ignore[no-any-return]

    async def _run_writer(self) -> None:
        while True:
            # Once closing, nobody sets the event again: drain the queue without waiting, or a
            # close() that came before the writer took the last batch would hang forever.
            if not self._closing:
                await self._wakeup.wait()
            self._wakeup.clear()
            batch, self._queue = self._queue, []
            if batch:
                try:
                    await self._commit_batch(batch)
                except Exception as exc:
                    # A failure of the transaction machinery itself: nobody may wait forever.
                    logger.exception("write batch of %d failed", len(batch))
                    if self._writer is not None:
                        await self._rollback(self._writer)
                    for pending in batch:
                        settle(pending.future, exc=StorageError(f"write failed: {exc}"))
            elif self._closing:
                return

    async def _commit_batch(self, batch: list[Pending]) -> None:
        try:
            conn = await self._writer_connection()
        except sqlite3.Error as exc:
            hint = read_only_hint(self.path)
            message = f"cannot open database {self.path} for writing{hint}"
            self._refuse(batch, storage_error(message, exc))
            return
        # Nothing that must survive a power loss: no fsync at this commit (SQLite takes the
        # setting outside a transaction only).
        if self.durability == "process" or any(pending.durable for pending in batch):
            await self._commit(conn, batch)
            return
        await conn.execute(f"PRAGMA synchronous = {_SYNCHRONOUS['process']}")
        try:
            await self._commit(conn, batch)
        finally:
            await conn.execute(f"PRAGMA synchronous = {_SYNCHRONOUS['full']}")

    async def _commit(self, conn: aiosqlite.Connection, batch: list[Pending]) -> None:
        try:
            await self._begin(conn)
        except StorageError as exc:
            self._refuse(batch, exc)
            return
        done: list[tuple[Pending, Any]] = []
        tx = SqliteTransaction(conn)
        for index, pending in enumerate(batch):
            if pending.future.done():  # the caller was cancelled before its turn came
                continue
            try:
                result = await pending.work(tx)
            except Exception as exc:
                # Whatever the work did is in the transaction (and SQLite may have rolled it all
                # back already, on SQLITE_FULL or an I/O error): undo it all, fail this work
                # alone, and run the others first in the next transaction.
                error = translate_write_error(exc)
                self._note_refusal(error)
                await self._rollback(conn)
                settle(pending.future, exc=error)
                self._queue[:0] = [undone for undone, _ in done] + batch[index + 1 :]
                self._wakeup.set()
                return
            done.append((pending, result))
        try:
            await conn.execute("COMMIT")
        except sqlite3.Error as exc:
            error = storage_error("commit failed", exc)
            if not self._note_refusal(error):
                logger.exception("commit of %d writes failed; rolled back", len(done))
            await self._rollback(conn)
            for pending, _ in done:
                settle(pending.future, exc=error)
            return
        if self._refusal is not None:
            logger.warning("database %s accepts writes again", self.path)
            self._refusal = None
        for pending, result in done:
            settle(pending.future, result=result)

    def _refuse(self, batch: list[Pending], error: StorageError) -> None:
        """Fail every work of ``batch`` with ``error``, none of it begun."""
        self._note_refusal(error)
        for pending in batch:
            settle(pending.future, exc=error)

    def _note_refusal(self, error: BaseException) -> bool:
        """Log the first of a run of refused writes; return whether ``error`` is one."""
        if not isinstance(error, DatabaseUnwritable | DatabaseLocked):
            return False
        if self._refusal is None:
            # One line for the operator; the callers log each refused write at debug level.
            logger.error(
                "database %s refuses writes (%s); what needs a write waits until it accepts "
                "them again",
                self.path,
                error,
            )
        self._refusal = error
        return True

    async def _begin(self, conn: aiosqlite.Connection) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._lock_timeout
        delay = 0.01
        while True:
            try:
                await conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                remaining = deadline - loop.time()
                if not is_busy(exc):
                    raise storage_error("cannot start a write transaction", exc) from exc
                if remaining <= 0:
                    raise DatabaseLocked(
                        f"database {self.path} is locked by another process; gave up after "
                        f"{self._lock_timeout:g}s"
                    ) from exc
                logger.debug("database locked, retrying in %.3fs", delay)
                await asyncio.sleep(min(delay, remaining))
                delay = min(delay * 2, 1.0)
            else:
                return

    async def _rollback(self, conn: aiosqlite.Connection) -> None:
        if conn.in_transaction:
            try:
                await conn.execute("ROLLBACK")
            except sqlite3.Error:
                logger.exception("rollback failed")
