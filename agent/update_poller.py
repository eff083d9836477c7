"""Long polling that confirms to Telegram only what the inbound journal holds (invariant I1).

Telegram forgets an update once ``getUpdates`` is called with a higher ``offset``.
python-telegram-bot's stock ``Updater`` raises the offset on its next call whether or not the
handlers ran, so a crash can lose a fetched batch. This loop journals every fetched batch in one
durable commit *before* it asks for the next offset; the journal then feeds the chats' queues.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from telegram import Bot, Update
from telegram.error import Conflict, Forbidden, InvalidToken, NetworkError, RetryAfter

from agent.memory.inbound_journal import InboundJournal, JournalEntry
from agent.telegram_payloads import entry_from_update, retry_after_seconds

__all__ = ["UpdatePoller"]

logger = logging.getLogger(__name__)

_MAX_BACKOFF = 30.0


class UpdatePoller:
    """Fetches updates, journals them, then hands the new ones to ``on_entry``.

    Args:
        bot: an initialised bot.
        journal: the inbound journal of that bot.
        on_entry: called (synchronously) with each newly journaled update, in order.
        poll_timeout: seconds of each long poll.
        allowed_updates: the update types to ask for (default: every type).
    """

    def __init__(
        self,
        bot: Bot,
        journal: InboundJournal,
        on_entry: Callable[[JournalEntry], None],
        *,
        poll_timeout: int = 30,
        allowed_updates: list[str] | None = None,
    ) -> None:
        self._bot = bot
        self._journal = journal
        self._on_entry = on_entry
        self._poll_timeout = poll_timeout
        self._allowed_updates = allowed_updates or list(Update.ALL_TYPES)

    async def run(self) -> None:
        """Poll until cancelled.

        Raises:
            InvalidToken, Forbidden: the token is wrong or revoked (no point retrying).
        """
        last = await self._journal.last_update_id()
        # Everything up to the last journaled update may be confirmed: it is durable.
        offset = None if last is None else last + 1
        backoff = 1.0
        while True:
            try:
                updates = await self._bot.get_updates(
                    offset=offset,
                    timeout=self._poll_timeout,
                    allowed_updates=self._allowed_updates,
                )
            except (InvalidToken, Forbidden):
                raise
            except RetryAfter as exc:
                delay = retry_after_seconds(exc)
                logger.warning("Telegram asks to wait %.0fs before polling again", delay)
                await asyncio.sleep(delay)
                continue
            except Conflict:
                logger.error("another instance of this bot is polling; retrying in %.0fs", backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
                continue
            except NetworkError as exc:
                logger.warning("polling failed (%s); retrying in %.0fs", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
                continue
            backoff = 1.0
            if not updates:
                continue
            # I1: durable before the next getUpdates (with the higher offset) confirms them.
            fresh = await self._journal.record([entry_from_update(u) for u in updates])
            for entry in fresh:
                self._on_entry(entry)
            offset = updates[-1].update_id + 1
            logger.debug("journaled %d updates (%d new)", len(updates), len(fresh))
