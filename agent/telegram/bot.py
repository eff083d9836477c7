"""The running Telegram bot: start-up sequence, update intake, maintenance jobs, shutdown.

Start-up follows DESIGN.md section 5: open the database, hydrate the lane (checkpoints checked
and rebuilt), connect to Telegram, send replies that were committed but never delivered,
process journaled updates that were never processed, re-schedule live reminders, then start
polling (or the webhook). Shutdown stops the intake first, lets every chat finish its queue,
then runs the lane's shutdown sequence.

A start during a Telegram outage waits for Telegram (its first calls are retried with back-off)
instead of exiting: the replies owed since the last run (I4) need a running bot.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any

from telegram import Update
from telegram.error import InvalidToken
from telegram.ext import Application, ApplicationBuilder, CallbackContext

from agent.app.wiring import build_lane, open_concierge, open_database
from agent.chat.inbound_journal import InboundJournal
from agent.chat.reminders import Reminders
from agent.config import Settings
from agent.errors import ConfigError
from agent.telegram.adapter import TelegramAdapter
from agent.telegram.job_queue import JobQueueScheduler
from agent.telegram.poller import UpdatePoller
from agent.telegram.retry import retry_bot_api
from agent.telegram.webhook import WebhookServer
from agent.utils.failure_streak import FailureStreak

__all__ = ["CONNECTION_POOL_SIZE", "run_telegram_bot"]

logger = logging.getLogger(__name__)

_JOURNAL_MAINTENANCE_INTERVAL = 3600.0
_JOURNAL_RETENTION = timedelta(days=7)
_CONSOLIDATION_DELAY = 120.0
#: Connections for sends. httpcore walks every pooled connection twice per request (a syscall
#: each), which took up to a quarter of the event loop's time at 100 busy chats with PTB's
#: default of 256 (bench/throughput.py, py-spy); 16 still carry more than Telegram's 30
#: messages/s at 0.3 s per request.
CONNECTION_POOL_SIZE = 16


def _build_application(settings: Settings) -> Application:  # type: ignore[type-arg]
    if settings.telegram_bot_token is None:
        raise ConfigError(
            "TELEGRAM_BOT_TOKEN is not set: create a bot with @BotFather and set it "
            "(or run `python run_bot.py --console` to chat in the terminal)"
        )
    timeout = settings.telegram_timeout  # PTB adds a long poll's wait to its read timeout
    return (
        ApplicationBuilder()
        .token(settings.telegram_bot_token.get_secret_value())
        .base_url(settings.telegram_base_url)
        .base_file_url(settings.telegram_base_file_url)
        .connection_pool_size(CONNECTION_POOL_SIZE)
        .pool_timeout(timeout)  # a burst of sends queues for a connection; not a failure
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .write_timeout(timeout)
        .get_updates_connect_timeout(timeout)
        .get_updates_read_timeout(timeout)
        .get_updates_write_timeout(timeout)
        .updater(None)  # we fetch updates ourselves, through the journal (I1)
        .build()
    )


async def run_telegram_bot(settings: Settings, stop: asyncio.Event) -> None:
    """Run the bot until ``stop`` is set, then shut down gracefully.

    Raises:
        ConfigError: the token is missing or rejected by Telegram, or webhook mode lacks its
            secret.
    """
    try:
        await _serve(settings, stop)
    except InvalidToken as exc:
        raise ConfigError(
            "Telegram rejected TELEGRAM_BOT_TOKEN; copy the token @BotFather gave you"
        ) from exc


async def _serve(settings: Settings, stop: asyncio.Event) -> None:
    """Start, serve until ``stop`` is set, shut down (the body of :func:`run_telegram_bot`)."""
    application = _build_application(settings)
    if settings.webhook_url and settings.webhook_secret is None:
        raise ConfigError("AGENT_WEBHOOK_SECRET must be set in webhook mode (AGENT_WEBHOOK_URL)")
    db = await open_database(settings)
    lane = build_lane(settings, db)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(lane.shutdown)
        await lane.hydrate()
        concierge = await open_concierge(settings, stack)
        stack.push_async_callback(application.shutdown)
        if not await _until_answered(application.initialize, settings, stop):  # getMe
            return
        bot = application.bot
        journal = InboundJournal(db, bot.id)
        adapter = TelegramAdapter(
            application,
            lane,
            concierge,
            journal,
            allowed_user_ids=settings.allowed_user_ids,
            backoff=settings.telegram_backoff,
            max_concurrent_chats=settings.max_concurrent_chats,
        )
        job_queue = application.job_queue
        if job_queue is None:
            raise ConfigError("the job queue is missing: install python-telegram-bot[job-queue]")
        adapter.reminders = Reminders(lane, JobQueueScheduler(job_queue), adapter.job_due)
        await application.start()
        stack.push_async_callback(application.stop)
        stack.push_async_callback(adapter.shutdown)
        # Unwound before the chats drain: a reminder falling due now would find the dispatcher
        # closed. It stays active in its session and fires at the next start, once.
        stack.push_async_callback(job_queue.stop)
        if not await _until_answered(adapter.register_commands, settings, stop):
            return
        await adapter.recover()
        adapter.reminders.schedule_active()

        redeliver_after = timedelta(seconds=settings.redeliver_interval)

        async def redeliver(_: CallbackContext) -> None:  # type: ignore[type-arg]
            await adapter.redeliver_stale(redeliver_after)

        async def prune_journal(_: CallbackContext) -> None:  # type: ignore[type-arg]
            await journal.prune(older_than=_JOURNAL_RETENTION)

        async def consolidate_memories(_: CallbackContext) -> None:  # type: ignore[type-arg]
            await lane.consolidate_memories()

        async def heal(_: CallbackContext) -> None:  # type: ignore[type-arg]
            await lane.rewrite_stale_checkpoints()
            await adapter.backlog.retry()

        job_queue.run_repeating(redeliver, interval=settings.redeliver_interval, name="redeliver")
        # Checkpoints and writes a disk fault left undone, retried until the disk recovers.
        job_queue.run_repeating(heal, interval=settings.heal_interval, name="heal")
        job_queue.run_repeating(
            prune_journal, interval=_JOURNAL_MAINTENANCE_INTERVAL, first=60, name="prune-journal"
        )
        # Long-term memory decay, archive and merge (seed 003); first run soon after start.
        job_queue.run_repeating(
            consolidate_memories,
            interval=settings.memory_consolidate_hours * 3600.0,
            first=_CONSOLIDATION_DELAY,
            name="consolidate-memories",
        )
        intake = await _start_intake(settings, adapter, journal, stack, stop)
        if intake is None:
            return
        logger.info("bot @%s is up", bot.username)
        stopped = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({stopped, intake}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if intake in done:
            intake.result()  # a fatal polling error (e.g. the token was revoked)
        logger.info("shutting down")
        intake.cancel()
        await asyncio.gather(intake, return_exceptions=True)


async def _until_answered(
    call: Callable[[], Awaitable[object]], settings: Settings, stop: asyncio.Event
) -> bool:
    """Run a start-up Bot API call until Telegram answers it; ``False`` if ``stop`` came first.

    Raises:
        telegram.error.TelegramError: a failure retrying cannot help (e.g. InvalidToken).
    """

    async def attempt() -> bool:
        await call()
        return True

    failures = FailureStreak(logger, "reaching Telegram", "retrying until it answers")
    answered = await retry_bot_api(
        attempt, failures=failures, backoff=settings.telegram_backoff, stop=stop
    )
    if answered is None:
        logger.info("stopped before Telegram answered")
    return answered is not None


async def _start_intake(
    settings: Settings,
    adapter: TelegramAdapter,
    journal: InboundJournal,
    stack: AsyncExitStack,
    stop: asyncio.Event,
) -> asyncio.Task[Any] | None:
    """Start polling or the webhook; return a task that ends only on a fatal error.

    Returns ``None`` when ``stop`` is set before Telegram answers.
    """
    bot = adapter.application.bot
    if settings.webhook_url and settings.webhook_secret is not None:
        secret = settings.webhook_secret.get_secret_value()
        server = WebhookServer(
            url=settings.webhook_url,
            listen=settings.webhook_listen,
            port=settings.webhook_port,
            secret=secret,
            bot=bot,
            journal=journal,
            on_entry=adapter.submit,
        )
        await server.start()
        stack.push_async_callback(server.stop)
        set_webhook = functools.partial(
            bot.set_webhook,
            settings.webhook_url,
            secret_token=secret,
            allowed_updates=list(Update.ALL_TYPES),
        )
        if not await _until_answered(set_webhook, settings, stop):
            return None
        return asyncio.create_task(asyncio.Event().wait(), name="webhook-intake")
    if not await _until_answered(bot.delete_webhook, settings, stop):
        return None
    poller = UpdatePoller(
        bot,
        journal,
        adapter.submit,
        poll_timeout=settings.poll_timeout,
        backoff=settings.telegram_backoff,
        on_refused=adapter.apologise,
    )
    return asyncio.create_task(poller.run(), name="polling-intake")
