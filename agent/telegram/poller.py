"""Long polling that confirms to Telegram only what the inbound journal holds (invariant I1).

Telegram forgets an update once ``getUpdates`` is called with a higher ``offset``.
python-telegram-bot's stock ``Updater`` raises the offset on its next call whether or not the
handlers ran, so a crash can lose a fetched batch. This loop journals every fetched batch in one
durable commit *before* it asks for the next offset; the journal then feeds the chats' queues.
A failed ``getUpdates`` is retried by Telegram's one retry policy
(:func:`~agent.telegram.retry.retry_bot_api`), for which a 409 Conflict (another instance
polling) and a 400 are waited out too: polling never gives up, but on a rejected token.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from telegram import Bot, Update
from telegram.error import BadRequest, Conflict, EndPointNotFound, InvalidToken, TelegramError

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.chat.storage_backlog import REFUSALS
from agent.config import TELEGRAM_MAX_BACKOFF
from agent.telegram.payloads import entry_from_json, entry_from_update
from agent.telegram.retry import retry_bot_api
from agent.utils.failure_streak import FailureStreak

__all__ = ["UpdatePoller"]

logger = logging.getLogger(__name__)


class UpdatePoller:
    """Fetches updates, journals them, then hands the new ones to ``on_entry``.

    Args:
        bot: an initialised bot.
        journal: the inbound journal of that bot.
        on_entry: called (synchronously) with each newly journaled update, in order.
        poll_timeout: seconds of each long poll.
        allowed_updates: the update types to ask for (default: every type).
        backoff: seconds before the first retry of a failed poll; doubled after each failure
            (up to 30), reset by a success. A 429 waits what Telegram asks for instead.
        on_refused: awaited with a batch the journal could not store (the database refuses
            writes); the batch is not confirmed, and is fetched again after a pause.
    """

    def __init__(
        self,
        bot: Bot,
        journal: InboundJournal,
        on_entry: Callable[[JournalEntry], None],
        *,
        poll_timeout: int = 30,
        allowed_updates: list[str] | None = None,
        backoff: float = 1.0,
        on_refused: Callable[[Sequence[JournalEntry]], Awaitable[None]] | None = None,
    ) -> None:
        self._bot = bot
        self._journal = journal
        self._on_entry = on_entry
        self._poll_timeout = poll_timeout
        self._allowed_updates = allowed_updates or list(Update.ALL_TYPES)
        self._first_backoff = backoff
        self._on_refused = on_refused
        self._failures = FailureStreak(
            logger, "polling", "retrying with back-off; new messages wait at Telegram"
        )

    async def _last_journaled(self) -> int | None:
        """Return the last journaled update id, waiting while the database refuses (a server
        restarting: logged where it happens); polling without it could confirm too much."""
        wait = self._first_backoff
        while True:
            try:
                return await self._journal.last_update_id()
            except REFUSALS:
                await asyncio.sleep(wait)
                wait = min(wait * 2, TELEGRAM_MAX_BACKOFF)

    async def run(self) -> None:
        """Poll until cancelled.

        Raises:
            InvalidToken, Forbidden: the token is wrong or revoked (no point retrying).
        """
        last = await self._last_journaled()
        # Everything up to the last journaled update may be confirmed: it is durable.
        offset = None if last is None else last + 1
        as_json = False  # the last batch held an update python-telegram-bot cannot read
        storage_wait = self._first_backoff  # grows while the journal refuses batches
        while True:
            try:
                # The offset does not move while a call fails: nothing is lost or repeated.
                entries = await retry_bot_api(
                    functools.partial(self._fetch, offset, as_json=as_json),
                    failures=self._failures,
                    backoff=self._first_backoff,
                    transient=(Conflict, BadRequest),
                )
            except TelegramError:
                raise  # InvalidToken, Forbidden: the token is wrong or revoked
            except Exception:
                # python-telegram-bot's parser failed on an update of the batch (a field of a
                # shape it does not know). Polling on would fail on it forever: fetch the batch
                # again as Telegram's JSON and journal it as it is; processing then records the
                # unreadable update as failed, and every other chat goes on.
                logger.error("Telegram sent an update that cannot be read; journaling it as is")
                as_json = True
                continue
            as_json = False
            if not entries:  # None only with a stop, which this loop never sets
                continue
            # I1: durable before the next getUpdates (with the higher offset) confirms them.
            try:
                fresh = await self._journal.record(entries)
            except REFUSALS:
                # Not journaled, so not confirmed: Telegram keeps the batch for the next poll,
                # after a pause (the database logs why it refuses writes).
                if self._on_refused is not None:
                    await self._on_refused(entries)
                await asyncio.sleep(storage_wait)
                storage_wait = min(storage_wait * 2, TELEGRAM_MAX_BACKOFF)
                continue
            storage_wait = self._first_backoff
            for entry in fresh:
                self._on_entry(entry)
            offset = entries[-1].update_id + 1
            logger.debug("journaled %d updates (%d new)", len(entries), len(fresh))

    async def _fetch(self, offset: int | None, *, as_json: bool) -> list[JournalEntry]:
        """Return the next batch as journal entries (one ``getUpdates`` call)."""
        if as_json:
            return await self._fetch_json(offset)
        updates = await self._bot.get_updates(
            offset=offset, timeout=self._poll_timeout, allowed_updates=self._allowed_updates
        )
        return [entry_from_update(update) for update in updates]

    async def _fetch_json(self, offset: int | None) -> list[JournalEntry]:
        """Return the next batch as journal entries of Telegram's own JSON, unparsed."""
        params: dict[str, Any] = {"timeout": 0, "allowed_updates": self._allowed_updates}
        if offset is not None:
            params["offset"] = offset
        # "getupdates": Bot API method names are case-insensitive, and do_api_request warns
        # when it is given the name of a method the Bot class has.
        try:
            batch = await self._bot.do_api_request("getupdates", api_kwargs=params)
        except EndPointNotFound as exc:
            # What do_api_request makes of a rejected token (401/404) once the bot is running.
            raise InvalidToken("Telegram rejected the token") from exc
        return [
            entry_from_json(data, self._bot)
            for data in (batch if isinstance(batch, list) else [])
            if isinstance(data, dict) and isinstance(data.get("update_id"), int)
        ]
