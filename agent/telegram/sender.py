"""The Telegram Outbox: sends through the Bot API with Telegram's retry rules.

Sending follows :func:`~agent.telegram.retry.retry_bot_api`: a 429 waits the ``retry_after``
it names; a timeout, a dropped connection or a 5xx is retried with a doubling back-off; after
a few of those the send raises :class:`~agent.errors.DeliveryFailed` (a turn's reply stays
``answered`` and the redelivery pass resends it). A refusal (403: the user blocked the bot;
400: the chat is gone) raises :class:`~agent.errors.DeliveryRefused`: retrying cannot change
it. A text longer than Telegram's limit goes as several messages. The failures of an outage
are logged once when it starts and once when it ends
(:class:`~agent.utils.failure_streak.FailureStreak`).

Covered by ``tests/test_telegram_faults.py`` and ``tests/test_telegram_bot.py`` (the real bot
against the fake Bot API).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Message, ReplyParameters
from telegram.error import BadRequest, Forbidden

from agent.errors import DeliveryFailed, DeliveryRefused
from agent.telegram.payloads import describe, split_message
from agent.telegram.retry import retry_bot_api
from agent.utils.failure_streak import FailureStreak

__all__ = ["FORGET_PREFIX", "SEND_ATTEMPTS", "TelegramSender"]

logger = logging.getLogger(__name__)

#: Attempts of one send before it is given up for now (a reply is left to the redelivery pass).
SEND_ATTEMPTS = 5
#: Callback data of the button confirming ``/forget``: this prefix and the session id.
FORGET_PREFIX = "forget:"


def _replying(reply_to: int | None) -> ReplyParameters | None:
    # Sent even if the message it answers is gone (deleted meanwhile).
    if reply_to is None:
        return None
    return ReplyParameters(message_id=reply_to, allow_sending_without_reply=True)


class TelegramSender:
    """An :class:`~agent.chat.outbox.Outbox` over a python-telegram-bot ``Bot``.

    Args:
        bot: the application's bot.
        backoff: seconds before the first retry of a send that failed with a server or network
            error; doubled after each failure, up to 30.
    """

    def __init__(self, bot: Bot, *, backoff: float = 1.0) -> None:
        self._bot = bot
        self._backoff = backoff
        self._failures = FailureStreak(
            logger, "sending", "replies stay answered in the turn log and are resent until it works"
        )
        self._closing = asyncio.Event()

    def stop_retrying(self) -> None:
        """Give a failing send up at once from now on (the bot is stopping)."""
        self._closing.set()

    async def send_text(
        self,
        chat_id: int,
        text: str,
        *,
        reply_to: int | None = None,
        confirm_forget: str | None = None,
        attempts: int | None = None,
    ) -> int:
        """Send ``text`` split to Telegram's limit; return the last message's id.

        A ``confirm_forget`` session id puts a "Yes, forget it" button under the last piece.

        Raises:
            DeliveryFailed: the attempts ran out, or the bot is stopping while sends fail.
            DeliveryRefused: Telegram refused a piece for good.
        """
        markup = None
        if confirm_forget is not None:
            button = InlineKeyboardButton(
                "Yes, forget it", callback_data=FORGET_PREFIX + confirm_forget
            )
            markup = InlineKeyboardMarkup([[button]])
        pieces = split_message(text)
        sent: Message | None = None
        for index, piece in enumerate(pieces):
            params = _replying(reply_to) if index == 0 else None
            sent = await self._with_retries(
                functools.partial(
                    self._bot.send_message,
                    chat_id,
                    piece,
                    reply_parameters=params,
                    reply_markup=markup if index == len(pieces) - 1 else None,
                ),
                attempts=attempts or SEND_ATTEMPTS,
            )
        if sent is None:  # split_message returns one piece at least
            raise DeliveryRefused("nothing to send")
        return sent.message_id

    async def send_document(
        self, chat_id: int, filename: str, data: bytes, caption: str, *, reply_to: int | None = None
    ) -> int:
        """Send ``data`` as a file (a reply to ``reply_to``, if any); return its message id.

        Raises:
            DeliveryFailed: the attempts ran out, or the bot is stopping while sends fail.
            DeliveryRefused: Telegram refused it for good.
        """
        sent = await self._with_retries(
            lambda: self._bot.send_document(
                chat_id,
                document=data,
                filename=filename,
                caption=caption,
                reply_parameters=_replying(reply_to),
            ),
            attempts=SEND_ATTEMPTS,
        )
        return sent.message_id

    async def _with_retries(
        self, call: Callable[[], Awaitable[Message]], *, attempts: int
    ) -> Message:
        """Run a Bot API send per Telegram's rules; return the message.

        Raises:
            DeliveryFailed: after ``attempts`` network errors or 5xx (or at once when the bot
                is stopping while sending fails).
            DeliveryRefused: 403 Forbidden, 400 Bad Request.
        """
        try:
            sent = await retry_bot_api(
                call,
                failures=self._failures,
                backoff=self._backoff,
                stop=self._closing,
                attempts=attempts,
            )
        except (Forbidden, BadRequest) as exc:
            raise DeliveryRefused(describe(exc)) from exc
        if sent is None:
            if self._closing.is_set():
                raise DeliveryFailed("the bot is stopping while sending fails")
            raise DeliveryFailed(f"{attempts} attempts failed")
        return sent
