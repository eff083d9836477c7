"""How a bot's processes share the work, chosen by the database's backend (issue 18, section 3).

:func:`coordination_for` returns a :class:`Coordination`:

* SQLite (one process owns the file): chat locks within the process
  (:class:`~agent.db.LocalChatLocks`), a leader that always leads (:class:`~agent.db.SoleLeader`)
  and no jobs table: the process's own timers fire the reminders, as they always did;
* PostgreSQL (any number of workers on one database): chat locks and the leader lock as
  advisory locks of the server (:mod:`agent.db.postgres_locks`, scoped by the bot's id) and the
  jobs table (:class:`~agent.chat.job_table.PostgresJobTable`, claims stamped with
  ``AGENT_WORKER_ID``). With it the chat service works as one of several workers.

Tested by ``tests/test_workers.py`` (real bot processes on the real PostgreSQL server).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.chat.job_table import JobTable
from agent.config import Settings
from agent.db import AnyDatabase, ChatLocks, Database, LeaderLock, LocalChatLocks, SoleLeader

__all__ = ["CHAT_LOCK_HOLDERS", "Coordination", "coordination_for"]

#: Chats one worker holds at once on PostgreSQL (a connection each; the chat service handles
#: no more chats at the same moment).
CHAT_LOCK_HOLDERS = 16


@dataclass(frozen=True, slots=True)
class Coordination:
    """The locks and the jobs table of one worker.

    Attributes:
        locks: one holder per chat across the bot's workers.
        leader: the one worker that polls and runs the maintenance of the whole database.
        jobs: the jobs table shared by the workers; ``None``: the bot is one process.
    """

    locks: ChatLocks
    leader: LeaderLock
    jobs: JobTable | None

    async def close(self) -> None:
        """Stop leading and let go of the locks' connections."""
        await self.leader.release()
        await self.locks.close()


async def coordination_for(settings: Settings, db: AnyDatabase, bot_id: int) -> Coordination:
    """Return the coordination of ``db``'s backend for the bot ``bot_id``.

    Raises:
        StorageError: the chat locks' connections cannot be opened.
    """
    if isinstance(db, Database) or settings.database_url is None:
        return Coordination(LocalChatLocks(), SoleLeader(), None)
    # The `postgres` extra: open_database made a PostgresDatabase, so it is installed.
    from agent.chat.job_table import PostgresJobTable
    from agent.db.postgres_locks import PostgresChatLocks, PostgresLeaderLock

    url = settings.database_url.get_secret_value()
    scope = str(bot_id)
    locks = await PostgresChatLocks(url, scope, max_holders=CHAT_LOCK_HOLDERS).open()
    return Coordination(
        locks, PostgresLeaderLock(url, scope), PostgresJobTable(db, settings.worker_id)
    )
