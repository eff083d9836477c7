"""Locks across the workers of a bot on PostgreSQL: session-level advisory locks.

:class:`PostgresChatLocks` (a :class:`~agent.db.locks.ChatLocks`) and :class:`PostgresLeaderLock`
(a :class:`~agent.db.locks.LeaderLock`) hold each lock on a database connection of their own,
outside any transaction (``pg_advisory_lock`` is a *session* lock), and never on a connection of
:class:`~agent.db.postgres.PostgresDatabase`'s pool: a lock outlives the transactions of the work
it orders (a turn's commit, then the send, then the delivery record). When the holding process
dies, even by SIGKILL, its connection closes and the server releases every lock of that session
at once; a waiting worker gets it without any timeout of ours.

A key is a signed 64-bit number made from a scope and an id (:func:`advisory_key`): advisory
locks are per database, so the scope (the bot's id, say) keeps the chats of two bots on one
database apart. Two chats whose keys collide (a chance of 2**-64) only wait for each other.

What the locks cannot do: a connection lost while its process lives (the network, a server
restart) releases the lock while the holder still works. :class:`PostgresLeaderLock` notices
within its ``check_interval`` (:meth:`PostgresLeaderLock.wait_lost`); a chat's work keeps its
database guards (one turn per update, one row per ``seq``) so that two holders at once cannot
write a turn twice. A host that vanishes without closing its sockets is noticed by the server's
TCP keepalive (``tcp_keepalives_idle``; set it to a few seconds on such networks).

Tested in ``tests/test_locks.py`` against the real server, with holders killed by SIGKILL.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Self

import psycopg
from psycopg_pool import AsyncConnectionPool

from agent.db.locks import LocalChatLocks
from agent.errors import DatabaseUnwritable, StorageError

__all__ = ["PostgresChatLocks", "PostgresLeaderLock", "advisory_key"]

logger = logging.getLogger(__name__)


def advisory_key(scope: str, value: int) -> int:
    """Return the advisory lock key (a signed 64-bit number) of ``value`` within ``scope``.

    Stable across processes and Python versions (a hash of the text, not ``hash()``).
    """
    digest = hashlib.blake2b(f"{scope}:{value}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def _unlock_all(conn: psycopg.AsyncConnection[Any]) -> None:
    # The pool's reset: a connection never goes back to the pool with a lock of a past holder.
    await conn.execute("SELECT pg_advisory_unlock_all()")


def _lock_failure(chat_id: int, exc: psycopg.Error) -> StorageError:
    """The error of a chat lock not had: a refusal when the server cannot be reached."""
    if isinstance(exc, psycopg.OperationalError):
        return DatabaseUnwritable(f"cannot lock chat {chat_id}, PostgreSQL unreachable: {exc}")
    return StorageError(f"cannot lock chat {chat_id}: {exc}")


class PostgresChatLocks:
    """:class:`~agent.db.locks.ChatLocks` across processes: ``pg_advisory_lock`` per chat.

    A hold first takes the chat's in-process lock (so the tasks of one worker queue in memory,
    not on connections), then a connection of its own pool and the chat's advisory lock on it;
    it unlocks and hands the connection back when the ``async with`` ends. A wait cut short
    (cancelled) closes its connection: a lock the server grants at that moment goes with it.

    Use it as an async context manager, or call :meth:`open` and :meth:`close`.

    Args:
        url: the database's libpq connection string or ``postgresql://`` URL.
        scope: what keeps these chats apart from another bot's on the same database (its id).
        max_holders: connections of the pool, so the chats this worker holds at once; the
            ``max_holders + 1``-th waits for one to be handed back.
        timeout: seconds to wait for a connection before :class:`~agent.errors.StorageError`.
    """

    def __init__(
        self, url: str, scope: str, *, max_holders: int = 16, timeout: float = 60.0
    ) -> None:
        self.scope = scope
        self._timeout = timeout
        self._local = LocalChatLocks()
        self._pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max_holders,
            timeout=timeout,
            open=False,
            kwargs={"autocommit": True},
            reset=_unlock_all,
            name="agent-pg-chat-locks",
        )

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def open(self) -> Self:
        """Open the pool.

        Raises:
            StorageError: the server cannot be reached.
        """
        try:
            await self._pool.open(wait=True, timeout=self._timeout)
        except psycopg.Error as exc:  # psycopg_pool.PoolTimeout too
            raise StorageError(f"cannot open the chat locks' connections: {exc}") from exc
        return self

    async def close(self) -> None:
        """Close the pool (a lock still held is released with its connection). Idempotent."""
        await self._pool.close()

    @asynccontextmanager
    async def hold(self, chat_id: int) -> AsyncIterator[None]:
        """Wait until no worker holds ``chat_id``, and hold it for the ``async with``.

        Raises:
            StorageError: no connection could be had, or the lock could not be asked for.
        """
        key = advisory_key(self.scope, chat_id)
        async with self._local.hold(chat_id):
            conn = await self._lock(key, chat_id)
            try:
                yield
            finally:
                await self._unlock(conn, key, chat_id)

    async def _lock(self, key: int, chat_id: int) -> psycopg.AsyncConnection[Any]:
        """Take a connection holding the chat's lock. A pooled connection the server closed
        meanwhile (restarted) is dropped and another asked, up to once per connection the
        pool holds and once more; a server that cannot be reached is
        :class:`~agent.errors.DatabaseUnwritable` (the chat's work waits, as for a refused
        write)."""
        for attempt in range(1, self._pool.max_size + 2):
            try:
                conn: psycopg.AsyncConnection[Any] = await self._pool.getconn()
            except psycopg.Error as exc:  # psycopg_pool.PoolTimeout too
                raise _lock_failure(chat_id, exc) from exc
            try:
                await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            except BaseException as exc:
                # Cancelled, or the statement failed: the server may still grant the lock;
                # closing the session releases whatever it holds (the pool drops it).
                await conn.close()
                await self._pool.putconn(conn)
                if isinstance(exc, psycopg.OperationalError) and attempt <= self._pool.max_size:
                    continue  # a dead connection: the lock was not granted on it
                if isinstance(exc, psycopg.Error):
                    raise _lock_failure(chat_id, exc) from exc
                raise
            return conn
        raise AssertionError("unreachable")  # the last attempt returns or raises

    async def _unlock(self, conn: psycopg.AsyncConnection[Any], key: int, chat_id: int) -> None:
        try:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except psycopg.Error as exc:
            # The session is gone, and the lock with it (perhaps while the work ran): the work
            # is done, and the database's own guards kept it from being written twice.
            logger.warning("the lock of chat %s was lost with its connection (%s)", chat_id, exc)
            await conn.close()
        except BaseException:
            await conn.close()  # cancelled while unlocking: closing releases the lock
            raise
        finally:
            await self._pool.putconn(conn)


class PostgresLeaderLock:
    """:class:`~agent.db.locks.LeaderLock` across processes: ``pg_try_advisory_lock`` on a
    connection held for as long as this worker leads.

    A worker that does not lead tries again every ``retry`` seconds on the same connection (a
    connection that fails is opened again at the next try); the leader checks its connection
    every ``check_interval`` seconds (:meth:`wait_lost`). A statement that takes longer than
    ``statement_timeout`` seconds counts as a broken connection: a server out of reach may
    already have ended the session, and given the lock to another worker.

    Args:
        url: the database's libpq connection string or ``postgresql://`` URL.
        scope: what keeps this bot's leader apart from another bot's on the same database.
        retry: seconds between two tries of a worker that does not lead.
        check_interval: seconds between two checks that the leader's connection is alive.
        statement_timeout: seconds a try or a check may take.

    Attributes:
        key: the advisory lock's key (``pg_locks`` shows it as ``classid``, ``objid``: its
            high and low 32 bits), for an operator looking for the leader's session.
    """

    def __init__(
        self,
        url: str,
        scope: str,
        *,
        retry: float = 1.0,
        check_interval: float = 1.0,
        statement_timeout: float = 5.0,
    ) -> None:
        self.scope = scope
        self.key = advisory_key(f"leader:{scope}", 0)
        self._url = url
        self._retry = retry
        self._check_interval = check_interval
        self._statement_timeout = statement_timeout
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._held = False

    @property
    def held(self) -> bool:
        """Whether this worker holds the lock (as far as the last statement knew)."""
        return self._held

    async def acquire(self) -> None:
        """Wait until this worker leads: try, then try again every ``retry`` seconds."""
        failing = False  # an outage is logged once, at its start and at its end
        while not self._held:
            try:
                leads = await self._run("SELECT pg_try_advisory_lock(%s)", (self.key,))
            except (psycopg.Error, TimeoutError) as exc:
                log = logger.debug if failing else logger.warning
                log("cannot try the leader lock (%s); trying again every %g s", exc, self._retry)
                failing = True
                await self.release()
            else:
                if failing:
                    logger.info("the leader lock can be tried again")
                    failing = False
                if leads:
                    self._held = True
                    logger.info("this worker leads (lock %s)", self.scope)
                    return
            await asyncio.sleep(self._retry)

    async def wait_lost(self) -> None:
        """Return when the lock's connection stops answering (at once if not held)."""
        while self._held:
            try:
                await self._run("SELECT true", ())
            except (psycopg.Error, TimeoutError) as exc:
                logger.warning("the leader lock was lost with its connection (%s)", exc)
                await self.release()
                return
            await asyncio.sleep(self._check_interval)

    async def release(self) -> None:
        """Stop leading: close the lock's connection, which releases the lock. Idempotent."""
        conn, self._conn, self._held = self._conn, None, False
        if conn is not None:
            await conn.close()

    async def _run(self, sql: str, params: tuple[Any, ...]) -> bool:
        async with asyncio.timeout(self._statement_timeout):
            if self._conn is None:
                self._conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
            cursor = await self._conn.execute(sql, params)
            row = await cursor.fetchone()
        return row is not None and bool(row[0])
