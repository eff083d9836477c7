"""The storage seam: what a store is handed to run its statements, whatever the backend.

A store method never sees a driver's connection. It is handed one of two objects of ours:

* a :class:`Transaction` (async): the write transaction :meth:`Database.write
  <agent.db.database.Database.write>` hands its work (inside ``BEGIN IMMEDIATE``; the work never
  commits), or the database's reader (:attr:`Database.reader
  <agent.db.database.Database.reader>`), where each statement reads committed data on its own;
* a :class:`Snapshot` (sync): a read of several statements that depend on each other (a
  packet's retrieval), run in a thread of its own on one snapshot of the committed data
  (:meth:`Database.read <agent.db.database.Database.read>`): a statement costs no hand-over to
  another thread.

Both speak SQL text with parameters and return :class:`Row` objects, read by column name or by
position. The SQL itself belongs to the backend's stores (``Sqlite*``, later ``Postgres*``):
a PostgreSQL backend implements both protocols over psycopg 3 (an ``AsyncConnection`` in a
transaction, a ``Connection`` in a thread of its own with ``REPEATABLE READ``) and passes the
same store conformance suite (``tests/test_store_conformance.py``). :class:`SqliteTransaction`
and :class:`SqliteSnapshot` are the SQLite implementations, over aiosqlite and over the
searcher's thread-bound ``sqlite3`` connection; no other module outside ``agent/db`` and the
``Sqlite*`` stores touches the drivers. Tested in ``tests/test_database.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

import aiosqlite

__all__ = [
    "AnyDatabase",
    "Params",
    "Row",
    "Snapshot",
    "SqliteSnapshot",
    "SqliteTransaction",
    "Transaction",
]

_T = TypeVar("_T")

#: The parameters of one statement: positional, or by name.
Params = Sequence[Any] | Mapping[str, Any]


class Row(Protocol):
    """**Protocol:** one row of a result, read by column name (``row["seq"]``) or by position
    (``row[0]``), unpacked in column order. ``sqlite3.Row`` is one; a PostgreSQL backend
    returns one through its row factory."""

    def __getitem__(self, key: int | str, /) -> Any:
        """Return the value of a column, by name or position."""
        ...

    def __iter__(self) -> Iterator[Any]:
        """Yield the values in column order."""
        ...

    def __len__(self) -> int:
        """Return the number of columns."""
        ...


class Transaction(Protocol):
    """**Protocol:** the connection a store's async methods run their statements on.

    Handed by :meth:`Database.write <agent.db.database.Database.write>` to each work, inside
    the write transaction (the work must not commit, roll back or begin), and given as
    :attr:`Database.reader <agent.db.database.Database.reader>` to reads. Errors of the
    driver propagate as they are: the database and the ``Sqlite*`` stores translate them.
    """

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; return how many rows it changed (``-1``: not a change)."""
        ...

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        """Run one statement once per parameter set; return how many rows they changed."""
        ...

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement (a query, or a change with ``RETURNING``); return all its rows."""
        ...

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Run one statement; return its first row, or ``None``."""
        ...


class Snapshot(Protocol):
    """**Protocol:** the read-only connection of one read (:meth:`Database.read
    <agent.db.database.Database.read>`), synchronous, in the thread that runs the read.

    Every statement sees the same snapshot of the committed data. Used by retrieval's
    searches (turns, summaries, memories, word counts); it must not be kept after the read.
    """

    def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one query; return all its rows."""
        ...

    def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Run one query; return its first row, or ``None``."""
        ...


class AnyDatabase(Protocol):
    """**Protocol:** an open database of either backend, as the stores' callers use it.

    :class:`agent.db.Database` (SQLite) and :class:`agent.db.postgres.PostgresDatabase` are
    both one; everything above ``agent/db`` (the lane, the journal, the chat service, the CLI)
    takes this, so that a backend is chosen once, where the application is wired.
    """

    @property
    def is_open(self) -> bool:
        """Whether the database is open."""
        ...

    async def close(self) -> None:
        """Close the database. Idempotent."""
        ...

    def snapshot(self) -> AbstractAsyncContextManager[Transaction]:
        """Hold one read snapshot for several reads (``async with db.snapshot() as reader``)."""
        ...

    async def integrity_problems(self) -> list[str]:
        """Return what the backend's own checks of its data report (empty: none)."""
        ...

    async def purge_erased(self) -> bool:
        """Make erased rows unreadable on disk too; return whether that is done now."""
        ...

    @property
    def location(self) -> str:
        """Where the data is, for people: a file path, or a server and database (no password)."""
        ...

    async def bytes_on_disk(self) -> dict[str, int]:
        """Return the bytes the data takes, by part (``database`` first; SQLite adds its
        write-ahead log and shared-memory index)."""
        ...

    @property
    def reader(self) -> Transaction:
        """Reads of committed data, each statement on its own."""
        ...

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Row]:
        """Run a read query on the reader and return all its rows."""
        ...

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> Row | None:
        """Run a read query on the reader and return its first row, if any."""
        ...

    async def read(self, work: Callable[[Snapshot], _T]) -> _T:
        """Run ``work`` on one snapshot, in a thread of its own; return its result."""
        ...

    async def write(
        self, work: Callable[[Transaction], Awaitable[_T]], *, durable: bool = True
    ) -> _T:
        """Run ``work`` in one write transaction; return its result after the commit
        (``durable=False``: without waiting for the disk, for what can be made again)."""
        ...


class SqliteTransaction:
    """A :class:`Transaction` over an aiosqlite connection (the writer's or the reader's).

    Attributes:
        connection: the aiosqlite connection (``sqlite3.Row`` rows; it stays the database's),
            for SQLite-only diagnostics (a trace callback in a test); stores go through the
            four methods.
    """

    __slots__ = ("connection",)

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self.connection = connection

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; return how many rows it changed (``-1``: not a change)."""
        # The cursor is not closed: closing it costs one more round trip to the thread.
        cursor = await self.connection.execute(sql, params)
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        """Run one statement once per parameter set; return how many rows they changed."""
        cursor = await self.connection.executemany(sql, rows)
        return cursor.rowcount

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement; return all its rows."""
        return list(await self.connection.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Run one statement; return its first row, or ``None``."""
        rows = await self.connection.execute_fetchall(sql, params)
        return next(iter(rows), None)


class SqliteSnapshot:
    """A :class:`Snapshot` over the searcher's ``sqlite3`` connection, in its thread.

    Attributes:
        connection: the ``sqlite3`` connection, for SQLite-only diagnostics (a trace callback
            in a test); stores go through :meth:`fetchall` and :meth:`fetchone`.
    """

    __slots__ = ("connection",)

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one query; return all its rows."""
        rows: list[Row] = self.connection.execute(sql, params).fetchall()
        return rows

    def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Run one query; return its first row, or ``None``."""
        row: Row | None = self.connection.execute(sql, params).fetchone()
        return row
