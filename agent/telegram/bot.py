"""The running Telegram bot: its Application, connection, intake, jobs and shutdown order.

:class:`TelegramBot` is what the Telegram main (``agent/app/telegram_main.py``) drives; the main
builds the lane, the reply engine and the :class:`~agent.chat.service.ChatService` and hands
them here. Start-up follows DESIGN.md section 5: connect to Telegram (:meth:`TelegramBot.connect`,
getMe), then :meth:`TelegramBot.serve` starts the Application, publishes the commands, runs
the service's recovery (replies never delivered, journaled updates never processed, live
reminders), schedules the maintenance jobs, starts polling (or the webhook) and serves until
``stop``. Shutdown stops the intake first, lets every chat finish its queue, then the lane's
shutdown sequence runs (the main's exit stack).

Polling is the leader's (:class:`~agent.db.LeaderLock`): with several workers on PostgreSQL
one polls, and when its lock is lost (it died, its connection broke) another takes over within
the lock's retry interval; one process (SQLite) always leads. In webhook mode every worker
serves the webhook and the leader lock only says who runs the maintenance of the database.

A start during a Telegram outage waits for Telegram (its first calls are retried with back-off)
instead of exiting: the replies owed since the last run (I4) need a running bot. The warning
names the Bot API's URL (never the token) and is repeated while the outage lasts
(:class:`~agent.utils.failure_streak.FailureStreak`).

Covered by ``tests/test_telegram_bot.py``, ``tests/test_telegram_faults.py`` and
``tests/test_bot_crash.py`` (the real program against the fake Bot API).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from telegram import Update
from telegram.error import InvalidToken
from telegram.ext import Application, ApplicationBuilder, CallbackContext, JobQueue

from agent.chat.inbound_journal import InboundJournal
from agent.chat.service import ChatService
from agent.chat.storage_backlog import REFUSALS
from agent.config import Settings
from agent.db import LeaderLock
from agent.errors import ConfigError
from agent.telegram.adapter import TelegramAdapter
from agent.telegram.job_queue import JobQueueScheduler
from agent.telegram.poller import UpdatePoller
from agent.telegram.retry import retry_bot_api
from agent.telegram.sender import TelegramSender
from agent.telegram.webhook import WebhookServer
from agent.utils.failure_streak import FailureStreak

__all__ = ["CONNECTION_POOL_SIZE", "RepeatingJob", "TelegramBot", "schedule"]

logger = logging.getLogger(__name__)

#: Connections for sends. httpcore walks every pooled connection twice per request (a syscall
#: each), which took up to a quarter of the event loop's time at 100 busy chats with PTB's
#: default of 256 (bench/throughput.py, py-spy); 16 still carry more than Telegram's 30
#: messages/s at 0.3 s per request.
CONNECTION_POOL_SIZE = 16


@dataclass(frozen=True, slots=True)
class RepeatingJob:
    """Maintenance work run on the bot's job queue every ``interval`` seconds.

    Attributes:
        name: the job's name in the queue (and the log).
        interval: seconds between runs.
        work: one run.
        first: seconds before the first run (``None``: one interval).
    """

    name: str
    interval: float
    work: Callable[[], Awaitable[object]]
    first: float | None = None


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


@contextmanager
def _token_checked() -> Iterator[None]:
    """Translate Telegram's rejection of the token into a :class:`ConfigError`."""
    try:
        yield
    except InvalidToken as exc:
        raise ConfigError(
            "Telegram rejected TELEGRAM_BOT_TOKEN; copy the token @BotFather gave you"
        ) from exc


class TelegramBot:
    """One bot's python-telegram-bot ``Application`` and what runs on it.

    Args:
        settings: the bot's settings (token, Bot API URLs, timeouts, webhook or polling).
        stop: set to stop; every wait for Telegram ends when it is set.

    Raises:
        ConfigError: the token is missing, or webhook mode lacks its secret.
    """

    def __init__(self, settings: Settings, stop: asyncio.Event) -> None:
        self.application = _build_application(settings)
        if settings.webhook_url and settings.webhook_secret is None:
            raise ConfigError(
                "AGENT_WEBHOOK_SECRET must be set in webhook mode (AGENT_WEBHOOK_URL)"
            )
        self._settings = settings
        self._stop = stop

    async def connect(self, stack: AsyncExitStack) -> int | None:
        """Initialise the Application (getMe, retried until Telegram answers); its shutdown
        goes on ``stack``. Return the bot's user id, or ``None`` if ``stop`` came first.

        Raises:
            ConfigError: Telegram rejected the token.
        """
        stack.push_async_callback(self.application.shutdown)
        with _token_checked():
            if not await self._until_answered(self.application.initialize):
                return None
        bot_id: int = self.application.bot.id
        return bot_id

    def sender(self) -> TelegramSender:
        """The Outbox of this bot (Telegram's retry rules, the settings' back-off)."""
        return TelegramSender(self.application.bot, backoff=self._settings.telegram_backoff)

    def scheduler(self) -> JobQueueScheduler:
        """The reminders' scheduler: the Application's job queue.

        Raises:
            ConfigError: python-telegram-bot was installed without its job queue.
        """
        job_queue = self.application.job_queue
        if job_queue is None:
            raise ConfigError("the job queue is missing: install python-telegram-bot[job-queue]")
        return JobQueueScheduler(job_queue)

    async def serve(
        self,
        service: ChatService,
        adapter: TelegramAdapter,
        journal: InboundJournal,
        jobs: Sequence[RepeatingJob],
        stack: AsyncExitStack,
        leader: LeaderLock,
    ) -> None:
        """Start, recover, schedule ``jobs``, take updates until ``stop`` is set (polling
        while this worker leads); what must stop goes on ``stack`` in the order it unwinds.

        Raises:
            ConfigError: Telegram rejected the token (e.g. revoked while polling).
        """
        with _token_checked():
            if not await self._start(service, adapter, jobs, stack):
                return
            intake = await self._start_intake(service, adapter, journal, stack, leader)
            if intake is None:
                return
            logger.info("bot @%s is up", self.application.bot.username)
            stopped = asyncio.create_task(self._stop.wait())
            done, _ = await asyncio.wait({stopped, intake}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if intake in done:
                intake.result()  # a fatal polling error (e.g. the token was revoked)
            logger.info("shutting down")
            intake.cancel()
            await asyncio.gather(intake, return_exceptions=True)

    async def _start(
        self,
        service: ChatService,
        adapter: TelegramAdapter,
        jobs: Sequence[RepeatingJob],
        stack: AsyncExitStack,
    ) -> bool:
        """Start the Application, publish the commands, recover, schedule ``jobs``; ``False``
        if ``stop`` came before Telegram answered."""
        application = self.application
        job_queue = application.job_queue
        if job_queue is None:
            raise ConfigError("the job queue is missing: install python-telegram-bot[job-queue]")
        await application.start()
        stack.push_async_callback(application.stop)
        stack.push_async_callback(service.shutdown)
        # Unwound before the chats drain: a reminder falling due now would find the dispatcher
        # closed. It stays active in its session and fires at the next start, once.
        stack.push_async_callback(job_queue.stop)
        if not await self._until_answered(adapter.register_commands):
            return False
        await service.recover()
        for job in jobs:
            schedule(job_queue, job)
        return True

    async def _until_answered(self, call: Callable[[], Awaitable[object]]) -> bool:
        """Run a start-up Bot API call until Telegram answers it; ``False`` if ``stop`` came
        first.

        Raises:
            telegram.error.TelegramError: a failure retrying cannot help (e.g. InvalidToken).
        """

        async def attempt() -> bool:
            await call()
            return True

        where = _without_secrets(self._settings.telegram_base_url)
        failures = FailureStreak(
            logger, f"reaching Telegram at {where}", "retrying until it answers"
        )
        answered = await retry_bot_api(
            attempt, failures=failures, backoff=self._settings.telegram_backoff, stop=self._stop
        )
        if answered is None:
            logger.info("stopped before Telegram answered")
        return answered is not None

    async def _start_intake(
        self,
        service: ChatService,
        adapter: TelegramAdapter,
        journal: InboundJournal,
        stack: AsyncExitStack,
        leader: LeaderLock,
    ) -> asyncio.Task[Any] | None:
        """Start polling (while leading) or the webhook; return a task that ends only on a
        fatal error.

        Returns ``None`` when ``stop`` is set before Telegram answers.
        """
        settings, bot = self._settings, self.application.bot
        if settings.webhook_url and settings.webhook_secret is not None:
            secret = settings.webhook_secret.get_secret_value()
            server = WebhookServer(
                url=settings.webhook_url,
                listen=settings.webhook_listen,
                port=settings.webhook_port,
                secret=secret,
                bot=bot,
                journal=journal,
                on_entry=service.submit,
                # Journaled already by a worker that died before its 200: drain it here.
                on_known=service.submit if service.shared else None,
            )
            await server.start()
            stack.push_async_callback(server.stop)
            set_webhook = functools.partial(
                bot.set_webhook,
                settings.webhook_url,
                secret_token=secret,
                allowed_updates=list(Update.ALL_TYPES),
            )
            if not await self._until_answered(set_webhook):
                return None
            return asyncio.create_task(_lead(leader, None), name="webhook-intake")
        if not await self._until_answered(bot.delete_webhook):
            return None
        poller = UpdatePoller(
            bot,
            journal,
            service.submit,
            poll_timeout=settings.poll_timeout,
            backoff=settings.telegram_backoff,
            on_refused=adapter.apologise,
        )
        return asyncio.create_task(_lead(leader, poller.run), name="polling-intake")


def _without_secrets(url: str) -> str:
    """The Bot API's URL as a log line may show it: no user, password, query or token."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    # The token follows the base URL (…/bot<token>/getMe); a "{token}" template holds its place.
    path = parts.path.split("{", 1)[0]
    return urlunsplit((parts.scheme, host, path, "", ""))


async def _lead(
    leader: LeaderLock, work: Callable[[], Coroutine[Any, Any, None]] | None
) -> None:
    """Lead whenever this worker can: take the leader lock, run ``work`` (polling) until the
    lock is lost, and again; returns or raises only as ``work`` does."""
    while True:
        await leader.acquire()
        lost = asyncio.create_task(leader.wait_lost())
        running: asyncio.Task[None] | None = None
        if work is not None:
            running = asyncio.create_task(work())
        try:
            done, _ = await asyncio.wait(
                {lost} if running is None else {lost, running},
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            for task in (lost, running):
                if task is not None and not task.done():
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
        if running is not None and running in done:
            running.result()  # a fatal error (e.g. the token was revoked)
            return
        logger.warning("this worker no longer leads; it waits to lead again")


def schedule(job_queue: JobQueue, job: RepeatingJob) -> None:  # type: ignore[type-arg]
    """Run ``job`` on ``job_queue`` every ``job.interval`` seconds; a run due while the last
    one goes on (the database is slow or away) is skipped quietly, not warned about by
    APScheduler at every interval."""
    job_queue.run_repeating(
        functools.partial(_run_job, job.work, asyncio.Lock()),
        interval=job.interval,
        first=job.first,
        name=job.name,
        job_kwargs={"max_instances": 2},  # the second returns at once
    )


async def _run_job(
    work: Callable[[], Awaitable[object]],
    running: asyncio.Lock,
    _: CallbackContext,  # type: ignore[type-arg]
) -> None:
    """One run of a repeating job; none while its previous run (holding ``running``) goes on."""
    if running.locked():
        return
    async with running:
        try:
            await work()
        except REFUSALS as exc:
            # The database refuses for a while (logged once where it happens): the job runs
            # again at its next interval.
            name = getattr(work, "__name__", work)
            logger.debug("job %s waits for the database: %s", name, exc)
