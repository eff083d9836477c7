"""A bot worker's part on PostgreSQL, in a process of its own, to be killed with SIGKILL.

Used by ``tests/test_locks.py`` and ``tests/test_job_table.py``
(``python -m tests.pg_worker MODE URL ...``); each mode prints one line when it has what it
holds, then sleeps until it is killed:

* ``chat-lock URL SCOPE CHAT``: holds the chat's lock (:class:`PostgresChatLocks`), prints
  ``held``;
* ``leader URL SCOPE``: waits to lead (:class:`PostgresLeaderLock`, retrying every second),
  prints ``leader <pid>``;
* ``claim URL WORKER LEASE_SECONDS LIMIT``: claims due jobs (:class:`PostgresJobTable`) and
  prints their ids as a JSON list, and never fires them.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta

from agent.chat.job_table import PostgresJobTable
from agent.db.postgres import PostgresDatabase
from agent.db.postgres_locks import PostgresChatLocks, PostgresLeaderLock


async def _chat_lock(url: str, scope: str, chat_id: str) -> None:
    async with PostgresChatLocks(url, scope) as locks, locks.hold(int(chat_id)):
        print("held", flush=True)
        await asyncio.Event().wait()


async def _leader(url: str, scope: str) -> None:
    leader = PostgresLeaderLock(url, scope)
    await leader.acquire()
    print(f"leader {os.getpid()}", flush=True)
    await leader.wait_lost()


async def _claim(url: str, worker: str, lease: str, limit: str) -> None:
    async with PostgresDatabase(url) as db:
        jobs = PostgresJobTable(db, worker, lease=timedelta(seconds=float(lease)))
        claimed = await jobs.claim(limit=int(limit))
        print(json.dumps([job.job_id for job in claimed]), flush=True)
        await asyncio.Event().wait()


def main(argv: list[str]) -> None:
    """Run the mode ``argv[0]`` with the rest of ``argv`` as its arguments."""
    modes = {"chat-lock": _chat_lock, "leader": _leader, "claim": _claim}
    asyncio.run(modes[argv[0]](*argv[1:]))


if __name__ == "__main__":
    main(sys.argv[1:])
