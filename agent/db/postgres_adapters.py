"""The psycopg adapters of :mod:`agent.db.postgres`: placeholders, rows, transactions, snapshots.

**Placeholders: the stores write one SQL.** The stores' statements use SQLite's ``?``
placeholders; the adapters here (:class:`PostgresTransaction`, :class:`PostgresSnapshot`)
translate them to psycopg's ``%s`` outside string literals, quoted identifiers and comments,
and double every literal ``%`` (psycopg reads ``%`` as the start of a placeholder anywhere),
once per distinct statement (cached: :func:`to_psycopg`). Named parameters (``:name``) are not
translated: the stores use positional ones only, and a mapping is refused (``TypeError``).
The schema has no binary column: a ``bytes`` parameter is JSON the stores made with orjson, and
goes to the server as text (:class:`_BytesAsText`), as SQLite stores it in its ``TEXT`` columns.
Where the dialects differ for real (full-text search, ``PRAGMA``, ``strftime``) a store has a
PostgreSQL variant of its own; what both dialects share (``ON CONFLICT ... DO NOTHING``,
``RETURNING``, ``CASE``) stays one statement.

Tested in ``tests/test_postgres.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg.adapt import AdaptersMap, Dumper
from psycopg.rows import RowMaker
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from agent.db.transaction import Params, Row
from agent.errors import StorageError

__all__ = [
    "ADAPTERS",
    "PoolReader",
    "PostgresRow",
    "PostgresSnapshot",
    "PostgresTransaction",
    "row_factory",
    "to_psycopg",
]


class _BytesAsText(Dumper):
    """Sends a ``bytes`` parameter (orjson's UTF-8 JSON) as ``text``, not ``bytea``."""

    oid = psycopg.adapters.types["text"].oid

    def dump(self, obj: Any) -> bytes:
        """Return the bytes as they are: they are the text's UTF-8 already."""
        return bytes(obj)


#: psycopg's adapters with ``bytes`` sent as text.
ADAPTERS = AdaptersMap(psycopg.adapters)
ADAPTERS.register_dumper(bytes, _BytesAsText)


@functools.lru_cache(maxsize=1024)
def to_psycopg(sql: str) -> str:
    """Return ``sql`` with SQLite's ``?`` placeholders as psycopg's ``%s`` and ``%`` as ``%%``.

    A ``?`` inside a string literal (``'...'``), a quoted identifier (``"..."``) or a comment
    (``-- ...``) is left alone; every ``%`` is doubled, in literals too (psycopg parses the
    whole text for placeholders).
    """
    out: list[str] = []
    quote: str | None = None  # the quote character of the literal we are in
    comment = False
    for index, char in enumerate(sql):
        if char == "%":
            out.append("%%")
            continue
        if comment:
            comment = char != "\n"
        elif quote is not None:
            if char == quote:
                quote = None  # a doubled quote closes and reopens: same result
        elif char in "'\"":
            quote = char
        elif char == "-" and sql.startswith("--", index):
            comment = True
        elif char == "?":
            out.append("%s")
            continue
        out.append(char)
    return "".join(out)


def _positional(params: Params) -> Sequence[Any]:
    if isinstance(params, Sequence) and not isinstance(params, str | bytes):
        return params
    raise TypeError("the PostgreSQL adapters take positional parameters only (`?`)")


class PostgresRow:
    """One row of a result, read by column name or by position, like ``sqlite3.Row``."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: Sequence[Any]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, key: int | str, /) -> Any:
        """Return the value of a column, by name or position."""
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __iter__(self) -> Iterator[Any]:
        """Yield the values in column order."""
        return iter(self._values)

    def __len__(self) -> int:
        """Return the number of columns."""
        return len(self._values)

    def keys(self) -> list[str]:
        """Return the column names, in order."""
        return list(self._index)

    def __repr__(self) -> str:
        return f"PostgresRow({dict(zip(self._index, self._values, strict=True))!r})"


def row_factory(cursor: Any) -> RowMaker[PostgresRow]:
    names = [column.name for column in cursor.description or ()]
    index = {name: position for position, name in enumerate(names)}

    def make(values: Sequence[Any]) -> PostgresRow:
        return PostgresRow(index, values)

    return make


class PostgresTransaction:
    """A :class:`~agent.db.Transaction` over a psycopg ``AsyncConnection`` in a transaction."""

    __slots__ = ("connection",)

    def __init__(self, connection: psycopg.AsyncConnection[Any]) -> None:
        self.connection = connection

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; return how many rows it changed (``-1``: not a change)."""
        cursor = await self.connection.execute(to_psycopg(sql), _positional(params))
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        """Run one statement once per parameter set; return how many rows they changed."""
        async with self.connection.cursor() as cursor:
            await cursor.executemany(to_psycopg(sql), [_positional(row) for row in rows])
            return cursor.rowcount

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement; return all its rows."""
        cursor = await self.connection.execute(to_psycopg(sql), _positional(params))
        return list(await cursor.fetchall()) if cursor.description else []

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Run one statement; return its first row, or ``None``."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None


class PoolReader:
    """The :attr:`PostgresDatabase.reader`: each statement on a pooled autocommit connection.

    A read meets a connection the server closed meanwhile (restarted): the pool drops it and
    the read runs again on another, up to once per connection the pool holds and once more.
    A driver error that remains is raised as what ``failure`` makes of it (a
    :class:`~agent.errors.StorageError`).
    """

    __slots__ = ("_failure", "_pool")

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        failure: Callable[[str, psycopg.Error], StorageError],
    ) -> None:
        self._pool = pool
        self._failure = failure

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement on its own; return how many rows it changed (a write of its
        own: not run again after a lost connection, whose outcome is unknown)."""
        try:
            async with self._pool.connection() as conn:
                return await PostgresTransaction(conn).execute(sql, params)
        except psycopg.Error as exc:
            raise self._failure("write", exc) from exc

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        """Run one statement once per parameter set; return how many rows they changed."""
        try:
            async with self._pool.connection() as conn:
                return await PostgresTransaction(conn).executemany(sql, rows)
        except psycopg.Error as exc:
            raise self._failure("write", exc) from exc

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement on its own; return all its rows."""
        stale = 0
        while True:
            try:
                async with self._pool.connection() as conn:
                    return await PostgresTransaction(conn).fetchall(sql, params)
            except psycopg.OperationalError as exc:
                stale += 1  # a dead connection: another runs it (none within the timeout: fail)
                if isinstance(exc, PoolTimeout) or stale > self._pool.max_size:
                    raise self._failure("read", exc) from exc
            except psycopg.Error as exc:
                raise self._failure("read", exc) from exc

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Run one statement on its own; return its first row, or ``None``."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None


class PostgresSnapshot:
    """A :class:`~agent.db.Snapshot` over a sync psycopg ``Connection``, in its thread."""

    __slots__ = ("connection",)

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self.connection = connection

    def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one query; return all its rows."""
        cursor = self.connection.execute(to_psycopg(sql), _positional(params))
        return list(cursor.fetchall()) if cursor.description else []

    def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Run one query; return its first row, or ``None``."""
        rows = self.fetchall(sql, params)
        return rows[0] if rows else None
