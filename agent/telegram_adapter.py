"""The Telegram adapter: updates in, lane and concierge calls, replies out. No memory logic.

Flow of one update (DESIGN.md section 3):

1. the poller (or the webhook) journals it durably, then Telegram may consider it delivered;
2. the chat's ordered queue (:class:`~agent.chat_dispatcher.ChatDispatcher`) hands it to
   python-telegram-bot's ``Application.process_update``, which runs one of the handlers below;
3. a message handler calls :meth:`ConversationLane.on_turn` (the reply is committed there),
   sends the reply, and records its message id (:meth:`ConversationLane.mark_delivered`);
4. the journal entry is marked done.

At start-up, replies committed but never sent are sent first, then journaled updates that were
never processed are processed, then polling starts (I4).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from telegram import (
    BotCommand,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    ReplyParameters,
    Update,
)
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from agent.chat_dispatcher import ChatDispatcher
from agent.commands import COMMANDS, CommandCenter, CommandReply
from agent.concierge import Concierge
from agent.logging_setup import bind
from agent.memory import ConversationLane, ConversationTurn, JobRef
from agent.memory.inbound_journal import InboundJournal, JournalEntry
from agent.reminders import Reminders
from agent.telegram_payloads import (
    inbound_from_update,
    retry_after_seconds,
    split_message,
    update_from_entry,
)

__all__ = ["TelegramAdapter"]

logger = logging.getLogger(__name__)

_SEND_ATTEMPTS = 5
_FORGET_PREFIX = "forget:"
_REFUSAL = "Sorry, this bot is private and cannot talk with you."
_NO_TEXT = "I can only read text (or captions) for now. Write me a message!"
#: Undelivered replies older than this are retried by the maintenance job.
_REDELIVER_AFTER = timedelta(seconds=30)


@dataclass(frozen=True, slots=True)
class _Redeliver:
    turn: ConversationTurn


@dataclass(frozen=True, slots=True)
class _DueJob:
    job: JobRef


_Work = JournalEntry | _Redeliver | _DueJob


class TelegramAdapter:
    """Connects one python-telegram-bot ``Application`` to the memory lane and the concierge.

    Args:
        application: built without an ``Updater`` (the adapter fetches updates itself).
        lane: the memory lane, already hydrated.
        concierge: the reply engine.
        journal: the inbound journal of this bot.
        allowed_user_ids: users allowed to talk to the bot; empty: everyone.
    """

    def __init__(
        self,
        application: Application,  # type: ignore[type-arg]
        lane: ConversationLane,
        concierge: Concierge,
        journal: InboundJournal,
        *,
        allowed_user_ids: frozenset[int] = frozenset(),
    ) -> None:
        self.application = application
        self.lane = lane
        self.concierge = concierge
        self.journal = journal
        self.commands = CommandCenter(lane)
        self.dispatcher: ChatDispatcher[int, _Work] = ChatDispatcher(self._handle)
        self.reminders: Reminders | None = None
        self._allowed = allowed_user_ids
        self._failed: set[int] = set()
        self._install_handlers()

    # -- wiring ----------------------------------------------------------------------------

    def _install_handlers(self) -> None:
        app = self.application
        app.add_handler(CommandHandler(list(COMMANDS), self._on_command))
        app.add_handler(
            CallbackQueryHandler(self._on_forget_confirmed, pattern=f"^{_FORGET_PREFIX}")
        )
        app.add_handler(
            MessageHandler(filters.UpdateType.MESSAGE & filters.COMMAND, self._on_unknown_command)
        )
        app.add_handler(
            MessageHandler(
                filters.UpdateType.MESSAGE & (filters.TEXT | filters.CAPTION), self._on_message
            )
        )
        app.add_handler(
            MessageHandler(filters.UpdateType.MESSAGE & filters.ChatType.PRIVATE, self._on_no_text)
        )
        app.add_error_handler(self._on_error)

    async def register_commands(self) -> None:
        """Publish the command list (setMyCommands)."""
        await self.application.bot.set_my_commands(
            [BotCommand(name, text) for name, text in COMMANDS.items()]
        )

    def submit(self, entry: JournalEntry) -> None:
        """Queue a journaled update behind its chat's earlier work."""
        self.dispatcher.submit(entry.chat_id or 0, entry)

    async def recover(self) -> tuple[int, int]:
        """Send replies never delivered, then queue updates never processed (I4).

        Returns:
            How many replies and how many updates were queued.
        """
        undelivered = await self.lane.undelivered()
        for chat_id, turn in undelivered:
            self.dispatcher.submit(chat_id, _Redeliver(turn))
        pending = await self.journal.pending()
        for entry in pending:
            self.submit(entry)
        if undelivered or pending:
            logger.info(
                "recovering %d undelivered replies and %d unprocessed updates",
                len(undelivered),
                len(pending),
            )
        return len(undelivered), len(pending)

    async def redeliver_stale(self) -> None:
        """Queue again replies that stayed undelivered (Telegram was down); a maintenance job."""
        cutoff = self.lane.now() - _REDELIVER_AFTER
        for chat_id, turn in await self.lane.undelivered():
            if turn.created_at < cutoff:
                self.dispatcher.submit(chat_id, _Redeliver(turn))

    async def job_due(self, chat_id: int, job: JobRef) -> None:
        """Queue a due reminder behind its chat's earlier work."""
        self.dispatcher.submit(chat_id, _DueJob(job))

    # -- processing --------------------------------------------------------------------------

    async def _handle(self, chat_id: int, work: _Work) -> None:
        if isinstance(work, JournalEntry):
            await self._process_entry(work)
        elif isinstance(work, _Redeliver):
            current = await self.lane.refresh_turn(work.turn)
            if current is not None and current.status == "answered":
                await self._deliver(chat_id, current)
        else:
            with bind(chat_id=chat_id, job_id=work.job.job_id):
                label = work.job.label or "(no text)"
                result = await self.lane.complete_job(
                    chat_id, work.job.job_id, f"⏰ Reminder: {label}"
                )
                if result is not None:
                    await self._deliver(chat_id, result.turn)

    async def _process_entry(self, entry: JournalEntry) -> None:
        with bind(update_id=entry.update_id, chat_id=entry.chat_id):
            try:
                update = update_from_entry(entry, self.application.bot)
            except ValueError:
                logger.exception("journal entry %s is unreadable; skipped", entry.update_id)
                await self.journal.mark_failed_attempt(entry.update_id, "unreadable payload")
                return
            await self.application.process_update(update)
            if entry.update_id in self._failed:
                self._failed.discard(entry.update_id)
                if await self.journal.mark_failed_attempt(entry.update_id, "handler failed"):
                    logger.error(
                        "update %s failed %d times; given up",
                        entry.update_id,
                        self.journal.max_attempts,
                    )
                return
            await self.journal.mark_done(entry.update_id)

    # -- handlers ----------------------------------------------------------------------------

    def _is_allowed(self, update: Update) -> bool:
        if not self._allowed:
            return True
        user = update.effective_user
        return user is not None and user.id in self._allowed

    async def _refuse(self, update: Update) -> None:
        logger.info("refused a user not on the allow-list")
        if update.effective_chat is not None and update.effective_chat.type == "private":
            await self._send(update.effective_chat.id, _REFUSAL)

    async def _on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not self._is_allowed(update):
            await self._refuse(update)
            return
        bot = context.bot
        message = inbound_from_update(update, bot_id=bot.id, bot_username=bot.username)
        if message is None:
            return
        result = await self.lane.on_turn(message, self.concierge)
        if not result.duplicate and self.reminders is not None:
            self.reminders.schedule_from_turn(message.chat_id, result.turn)
        if result.needs_delivery:
            await self._deliver(message.chat_id, result.turn)

    async def _on_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not self._is_allowed(update):
            await self._refuse(update)
            return
        message = update.message
        if message is None or message.text is None:
            return
        name = message.text.split()[0][1:].split("@")[0]
        args = " ".join(context.args or [])
        reply = await self.commands.run(message.chat_id, name, args)
        await self._send_command_reply(message, reply)

    async def _on_unknown_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.message
        if message is None or message.text is None or not self._is_allowed(update):
            return
        word = message.text.split()[0]
        if (
            "@" in word
            and context.bot.username
            and not word.lower().endswith("@" + context.bot.username.lower())
        ):
            return  # a command for another bot in a group
        if message.chat.type == "private" or "@" in word:
            name = word[1:].split("@")[0][:32]
            reply = await self.commands.run(message.chat_id, name)
            await self._send_command_reply(message, reply)

    async def _on_no_text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if update.effective_chat is not None and self._is_allowed(update):
            await self._send(update.effective_chat.id, _NO_TEXT)

    async def _on_forget_confirmed(
        self, update: Update, context: ContextTypes.DEFAULT_TYPE
    ) -> None:
        query = update.callback_query
        if query is None or query.data is None or query.message is None:
            return
        if not self._is_allowed(update):
            await query.answer(_REFUSAL)
            return
        chat_id = query.message.chat.id
        reply = await self.commands.confirm_forget(chat_id, query.data[len(_FORGET_PREFIX) :])
        await self.journal.forget_chat(chat_id)
        await query.answer()
        await self._send(chat_id, reply.text)

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        if isinstance(update, Update):
            self._failed.add(update.update_id)
        logger.error("handling an update failed", exc_info=context.error)

    # -- sending -----------------------------------------------------------------------------

    async def _send_command_reply(self, message: Message, reply: CommandReply) -> None:
        chat_id = message.chat_id
        if reply.document is not None:
            name, data = reply.document
            await self._with_retries(
                lambda: self.application.bot.send_document(
                    chat_id, document=data, filename=name, caption=reply.text
                )
            )
            return
        markup = None
        if reply.confirm_forget is not None:
            markup = InlineKeyboardMarkup(
                [
                    [
                        InlineKeyboardButton(
                            "Yes, forget it", callback_data=_FORGET_PREFIX + reply.confirm_forget
                        )
                    ]
                ]
            )
        await self._send(chat_id, reply.text, markup=markup)

    async def _deliver(self, chat_id: int, turn: ConversationTurn) -> None:
        """Send a turn's reply, then record its message id (step 3); on failure leave it due."""
        reply_to = turn.message_id if turn.message_id is not None else None
        sent = await self._send(chat_id, turn.assistant_text or "", reply_to=reply_to)
        if sent is not None:
            await self.lane.mark_delivered(turn, sent.message_id)

    async def _send(
        self,
        chat_id: int,
        text: str,
        *,
        reply_to: int | None = None,
        markup: InlineKeyboardMarkup | None = None,
    ) -> Message | None:
        """Send ``text`` split to Telegram's limit; return the last message (``None``: failed)."""
        last: Message | None = None
        pieces = split_message(text)
        for index, piece in enumerate(pieces):
            params = (
                ReplyParameters(message_id=reply_to, allow_sending_without_reply=True)
                if reply_to is not None and index == 0
                else None
            )
            sent = await self._with_retries(
                functools.partial(
                    self.application.bot.send_message,
                    chat_id,
                    piece,
                    reply_parameters=params,
                    reply_markup=markup if index == len(pieces) - 1 else None,
                )
            )
            if sent is None:
                return None
            last = sent
        return last

    async def _with_retries(self, call: Callable[[], Awaitable[Message]]) -> Message | None:
        """Run a Bot API send, retrying per Telegram's rules; ``None`` when it cannot succeed.

        429 waits the ``retry_after`` Telegram asks for; network errors and 5xx back off
        exponentially; a refusal (blocked by the user, bad request) is final.
        """
        delay = 1.0
        for attempt in range(1, _SEND_ATTEMPTS + 1):
            try:
                return await call()
            except RetryAfter as exc:
                wait = retry_after_seconds(exc)
                logger.warning("Telegram asks to wait %.0fs before sending", wait)
                await asyncio.sleep(wait)
            except (Forbidden, BadRequest) as exc:
                logger.error("Telegram refused the message for good: %s", exc)
                return None
            except NetworkError as exc:
                if attempt == _SEND_ATTEMPTS:
                    logger.error("sending failed %d times (%s); will retry later", attempt, exc)
                    return None
                logger.warning("sending failed (%s); retrying in %.0fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
        return None
