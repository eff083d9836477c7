"""The Outbox: how :class:`~agent.chat.service.ChatService` sends, whatever the transport.

A transport implements it: :class:`~agent.telegram.sender.TelegramSender` sends through the Bot
API (with Telegram's retry rules), ``agent.console`` prints to the terminal. A send returns the
message id the transport gave the message, which the turn log records as the delivery (I4); it
raises :class:`~agent.errors.DeliveryFailed` when the message may go through later and
:class:`~agent.errors.DeliveryRefused` when it never will.

Covered by ``tests/test_chat_service.py`` (a recording outbox), ``tests/test_telegram_faults.py``
(the Telegram one) and ``tests/test_console_sessions.py`` (the terminal one).
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Outbox"]


class Outbox(Protocol):
    """**Protocol:** sends messages to chats for :class:`~agent.chat.service.ChatService`.

    Called from a chat's ordered queue: a turn's reply, a command's answer, a due reminder, a
    notice; never two sends of one chat at the same time.
    """

    async def send_text(
        self,
        chat_id: int,
        text: str,
        *,
        reply_to: int | None = None,
        confirm_forget: str | None = None,
        attempts: int | None = None,
    ) -> int:
        """Send ``text`` (split as the transport needs) and return the id of its last message.

        Args:
            chat_id: the chat.
            text: the message.
            reply_to: the id of the message this one answers, if any.
            confirm_forget: the session id the user is asked to confirm erasing: the transport
                offers its way of confirming (a button, ``/forget yes``).
            attempts: the most transient failures before giving up for now (``None``: the
                transport's own rule).

        Raises:
            DeliveryFailed: not sent for now; sending it again later may work.
            DeliveryRefused: refused for good.
        """
        ...

    async def send_document(
        self, chat_id: int, filename: str, data: bytes, caption: str, *, reply_to: int | None = None
    ) -> int:
        """Send ``data`` as a file named ``filename``, with ``caption``, as a reply to the message
        ``reply_to`` if any; return its message id.

        Raises:
            DeliveryFailed: not sent for now.
            DeliveryRefused: refused for good.
        """
        ...

    def stop_retrying(self) -> None:
        """From now on, give a failing send up at once: the service is shutting down, and what
        is not sent stays due for the next start (I4)."""
        ...
