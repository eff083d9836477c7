"""The Telegram main: builds the lane, the reply engine and the ChatService, hands them to the bot.

Start-up follows DESIGN.md section 5: open the database, hydrate the lane (checkpoints checked
and rebuilt), connect to Telegram, then :meth:`~agent.telegram.bot.TelegramBot.serve` sends the
replies committed but never delivered, processes the journaled updates never processed,
re-schedules live reminders and polls (or serves the webhook). The maintenance jobs are
defined here: what they call is the lane's and the service's.

Several workers on one PostgreSQL database (:mod:`agent.app.workers`) share the chat locks,
the leader lock and the jobs table. Each worker drains what waits in the journal (a sweep every
few seconds picks up a dead worker's updates), claims the due reminders (a poll of the jobs
table beside the local timers) and retries its own backlog and checkpoints; the maintenance of
the whole database (resending replies, pruning the journal and the jobs table, consolidating
memories) runs on the leader only, so not once per worker at the same moment: each is
idempotent, so a run repeated by a new leader in the same period does no harm.

Covered by ``tests/test_telegram_bot.py``, ``tests/test_telegram_faults.py`` and
``tests/test_bot_crash.py`` (the real program against the fake Bot API).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import timedelta

from agent.app.wiring import build_lane, open_concierge, open_database, record_locations
from agent.app.workers import CHAT_LOCK_HOLDERS, Coordination, coordination_for
from agent.chat.inbound_journal import InboundJournal
from agent.chat.service import ChatService
from agent.config import Settings
from agent.db import LeaderLock
from agent.memory import ConversationLane
from agent.telegram.adapter import TelegramAdapter
from agent.telegram.bot import RepeatingJob, TelegramBot

__all__ = ["run_telegram_bot"]

_JOURNAL_MAINTENANCE_INTERVAL = 3600.0
_JOURNAL_RETENTION = timedelta(days=7)
_CONSOLIDATION_DELAY = 120.0
#: Workers sharing a database: how often each looks for journal entries left waiting (by a
#: worker that died, or a leader that polled them and died) and how long they must have
#: waited; how often each looks for due reminders in the jobs table.
_SWEEP_INTERVAL = 2.0
_SWEEP_AGE = timedelta(seconds=3)
_JOBS_POLL_INTERVAL = 1.0


async def run_telegram_bot(settings: Settings, stop: asyncio.Event) -> None:
    """Run the bot until ``stop`` is set, then shut down gracefully.

    Raises:
        ConfigError: the token is missing or rejected by Telegram, or webhook mode lacks its
            secret.
    """
    bot = TelegramBot(settings, stop)
    db = await open_database(settings)
    await record_locations(settings, db)  # where agent-memory finds the checkpoint files
    lane = build_lane(settings, db)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(lane.shutdown)
        await lane.hydrate(background=True)
        engine = await open_concierge(settings, stack)
        bot_id = await bot.connect(stack)  # getMe
        if bot_id is None:
            return
        journal = InboundJournal(db, bot_id)
        workers = await coordination_for(settings, db, bot_id)
        stack.push_async_callback(workers.close)  # after the service's shutdown (a stack)
        concurrent = settings.max_concurrent_chats
        service = ChatService(
            lane,
            engine,
            bot.sender(),
            db=db,
            scheduler=bot.scheduler(),
            journal=journal,
            # Each chat held is a connection of the locks' pool across workers.
            max_concurrent_chats=concurrent if workers.jobs is None else CHAT_LOCK_HOLDERS,
            locks=workers.locks,
            jobs=workers.jobs,
        )
        adapter = TelegramAdapter(
            bot.application, service, allowed_user_ids=settings.allowed_user_ids
        )
        service.read_entries_with(adapter.read)
        jobs = _maintenance_jobs(settings, lane, service, journal, workers)
        await bot.serve(service, adapter, journal, jobs, stack, workers.leader)


def _led(
    leader: LeaderLock, work: Callable[[], Awaitable[object]]
) -> Callable[[], Awaitable[None]]:
    """``work`` run only while this worker leads."""

    async def run() -> None:
        if leader.held:
            await work()

    return run


def _maintenance_jobs(
    settings: Settings,
    lane: ConversationLane,
    service: ChatService,
    journal: InboundJournal,
    workers: Coordination,
) -> list[RepeatingJob]:
    redeliver_after = timedelta(seconds=settings.redeliver_interval)
    leader = workers.leader

    async def heal() -> None:
        # Checkpoints and writes a disk fault left undone, retried until the disk recovers.
        await lane.rewrite_stale_checkpoints()
        if service.backlog is not None:
            await service.backlog.retry()

    jobs = [
        RepeatingJob(
            "redeliver",
            settings.redeliver_interval,
            _led(leader, lambda: service.redeliver(redeliver_after)),
        ),
        RepeatingJob("heal", settings.heal_interval, heal),  # what this worker left undone
        RepeatingJob(
            "prune-journal",
            _JOURNAL_MAINTENANCE_INTERVAL,
            _led(leader, lambda: journal.prune(older_than=_JOURNAL_RETENTION)),
            first=60,
        ),
        # Long-term memory decay, archive and merge; first run soon after start.
        RepeatingJob(
            "consolidate-memories",
            settings.memory_consolidate_hours * 3600.0,
            _led(leader, lane.consolidate_memories),
            first=_CONSOLIDATION_DELAY,
        ),
    ]
    table = workers.jobs
    if table is not None:
        jobs += [
            RepeatingJob(
                "sweep-journal", _SWEEP_INTERVAL, lambda: service.sweep(older_than=_SWEEP_AGE)
            ),
            RepeatingJob("claim-jobs", _JOBS_POLL_INTERVAL, service.claim_due),
            RepeatingJob(
                "prune-jobs",
                _JOURNAL_MAINTENANCE_INTERVAL,
                _led(leader, lambda: table.prune(older_than=_JOURNAL_RETENTION)),
                first=60,
            ),
        ]
    return jobs
