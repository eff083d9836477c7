"""The Telegram main: builds the lane, the reply engine and the ChatService, hands them to the bot.

Start-up follows DESIGN.md section 5: open the database, hydrate the lane (checkpoints checked
and rebuilt), connect to Telegram, then :meth:`~agent.telegram.bot.TelegramBot.serve` sends the
replies committed but never delivered, processes the journaled updates never processed,
re-schedules live reminders and polls (or serves the webhook). The maintenance jobs are
defined here: what they call is the lane's and the service's.

Covered by ``tests/test_telegram_bot.py``, ``tests/test_telegram_faults.py`` and
``tests/test_bot_crash.py`` (the real program against the fake Bot API).
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from datetime import timedelta

from agent.app.wiring import build_lane, open_concierge, open_database
from agent.chat.inbound_journal import InboundJournal
from agent.chat.service import ChatService
from agent.config import Settings
from agent.memory import ConversationLane
from agent.telegram.adapter import TelegramAdapter
from agent.telegram.bot import RepeatingJob, TelegramBot

__all__ = ["run_telegram_bot"]

_JOURNAL_MAINTENANCE_INTERVAL = 3600.0
_JOURNAL_RETENTION = timedelta(days=7)
_CONSOLIDATION_DELAY = 120.0


async def run_telegram_bot(settings: Settings, stop: asyncio.Event) -> None:
    """Run the bot until ``stop`` is set, then shut down gracefully.

    Raises:
        ConfigError: the token is missing or rejected by Telegram, or webhook mode lacks its
            secret.
    """
    bot = TelegramBot(settings, stop)
    db = await open_database(settings)
    lane = build_lane(settings, db)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(lane.shutdown)
        await lane.hydrate(background=True)
        engine = await open_concierge(settings, stack)
        bot_id = await bot.connect(stack)  # getMe
        if bot_id is None:
            return
        journal = InboundJournal(db, bot_id)
        service = ChatService(
            lane,
            engine,
            bot.sender(),
            db=db,
            scheduler=bot.scheduler(),
            journal=journal,
            max_concurrent_chats=settings.max_concurrent_chats,
        )
        adapter = TelegramAdapter(
            bot.application, service, allowed_user_ids=settings.allowed_user_ids
        )
        service.read_entries_with(adapter.read)
        jobs = _maintenance_jobs(settings, lane, service, journal)
        await bot.serve(service, adapter, journal, jobs, stack)


def _maintenance_jobs(
    settings: Settings, lane: ConversationLane, service: ChatService, journal: InboundJournal
) -> list[RepeatingJob]:
    redeliver_after = timedelta(seconds=settings.redeliver_interval)

    async def heal() -> None:
        # Checkpoints and writes a disk fault left undone, retried until the disk recovers.
        await lane.rewrite_stale_checkpoints()
        if service.backlog is not None:
            await service.backlog.retry()

    return [
        RepeatingJob(
            "redeliver", settings.redeliver_interval, lambda: service.redeliver(redeliver_after)
        ),
        RepeatingJob("heal", settings.heal_interval, heal),
        RepeatingJob(
            "prune-journal",
            _JOURNAL_MAINTENANCE_INTERVAL,
            lambda: journal.prune(older_than=_JOURNAL_RETENTION),
            first=60,
        ),
        # Long-term memory decay, archive and merge; first run soon after start.
        RepeatingJob(
            "consolidate-memories",
            settings.memory_consolidate_hours * 3600.0,
            lane.consolidate_memories,
            first=_CONSOLIDATION_DELAY,
        ),
    ]
