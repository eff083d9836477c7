"""The Telegram adapter: python-telegram-bot's handlers, updates in, ChatService calls out.

Flow of one update (DESIGN.md section 3): the poller (or the webhook) journals it, and
:class:`~agent.chat.service.ChatService` queues the journal entry in its chat's order; in that
order the service calls :meth:`TelegramAdapter.read`, which reads the update back and runs the
first handler below whose filters match it (python-telegram-bot's ``check_update`` /
``handle_update``, the way ``Application.process_update`` does, but so that what the handler
raises comes back to the service: the journal bookkeeping follows from it). A handler turns the
update into a call of the service (a message, an edit, a command, a confirmed ``/forget``); the
service sends through :class:`~agent.telegram.sender.TelegramSender`. No memory logic here, and
no sending rules: only who may talk, and what an update means.

Covered by ``tests/test_telegram_bot.py``, ``tests/test_hostile_bot.py`` and
``tests/test_telegram_sessions.py`` (the real PTB Application against the fake Bot API).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from telegram import BotCommand, Update
from telegram.ext import (
    Application,
    BaseHandler,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from agent.chat.commands import COMMANDS
from agent.chat.inbound_journal import JournalEntry
from agent.chat.service import ChatService
from agent.chat.storage_backlog import APOLOGY, REFUSALS
from agent.errors import UnreadableUpdate
from agent.telegram.payloads import edit_from_update, inbound_from_update, update_from_entry
from agent.telegram.sender import FORGET_PREFIX

__all__ = ["TelegramAdapter"]

logger = logging.getLogger(__name__)

_REFUSAL = "Sorry, this bot is private and cannot talk with you."
#: Strangers remembered as refused (each gets one refusal); past this the memory starts over.
_REFUSALS_REMEMBERED = 10_000
_NO_TEXT = "I can only read text (or captions) for now. Write me a message!"


class TelegramAdapter:
    """python-telegram-bot's handlers over a :class:`~agent.chat.service.ChatService`.

    Args:
        application: built without an ``Updater`` (updates come through the journal).
        service: the chat service the handlers call (its outbox is a ``TelegramSender``).
        allowed_user_ids: users allowed to talk to the bot; empty: everyone.
    """

    def __init__(
        self,
        application: Application,  # type: ignore[type-arg]
        service: ChatService,
        *,
        allowed_user_ids: frozenset[int] = frozenset(),
    ) -> None:
        self.application = application
        self.service = service
        self._allowed = allowed_user_ids
        self._refused_users: set[int] = set()
        # In order: the first whose filters match an update handles it. First of all the
        # edits: a command handler would take an edited command (PTB's default filters include
        # edits), and an edit never runs a command.
        self._handlers: list[BaseHandler[Update, Any, None]] = [
            MessageHandler(filters.UpdateType.EDITED_MESSAGE, self._on_edit),
            CommandHandler(list(COMMANDS), self._on_command),
            CallbackQueryHandler(self._on_forget_confirmed, pattern=f"^{FORGET_PREFIX}"),
            MessageHandler(filters.UpdateType.MESSAGE & filters.COMMAND, self._on_unknown_command),
            MessageHandler(
                filters.UpdateType.MESSAGE & (filters.TEXT | filters.CAPTION), self._on_message
            ),
            MessageHandler(filters.UpdateType.MESSAGE & filters.ChatType.PRIVATE, self._on_no_text),
        ]

    async def register_commands(self) -> None:
        """Publish the command list (setMyCommands)."""
        await self.application.bot.set_my_commands(
            [BotCommand(name, text) for name, text in COMMANDS.items()]
        )

    async def read(self, entry: JournalEntry) -> None:
        """Read a journaled update back and run its handler (none matches: nothing to do).

        Raises:
            UnreadableUpdate: the payload is no update python-telegram-bot can read.
            DatabaseUnwritable, DatabaseLocked: the database refused the handler's writes (the
                user was told once that the answer waits).
            Exception: whatever else the handler raised.
        """
        try:
            update = update_from_entry(entry, self.application.bot)
        except ValueError as exc:
            raise UnreadableUpdate(f"update {entry.update_id}: {exc}") from exc
        try:
            await self._route(update)
        except REFUSALS:
            await self._apologise(update)
            raise

    async def _route(self, update: Update) -> None:
        app = self.application
        for handler in self._handlers:
            check = handler.check_update(update)
            if check is None or check is False:
                continue
            context = app.context_types.context.from_update(update, app)
            await context.refresh_data()
            await handler.handle_update(update, app, check, context)
            return

    # -- handlers ----------------------------------------------------------------------------

    def _is_allowed(self, update: Update) -> bool:
        if not self._allowed:
            return True
        user = update.effective_user
        return user is not None and user.id in self._allowed

    async def _refuse(self, update: Update) -> None:
        # One refusal per stranger until a restart, then silence: a flood of their messages
        # must not become a flood of sends that eats the bot's rate limit. Only the user id is
        # kept, in memory; nothing of theirs is stored.
        user, chat = update.effective_user, update.effective_chat
        logger.debug("ignored a user not on the allow-list")
        if user is None or chat is None or chat.type != "private":
            return  # in a group the bot stays silent
        if user.id in self._refused_users:
            return
        if len(self._refused_users) >= _REFUSALS_REMEMBERED:
            self._refused_users.clear()
        self._refused_users.add(user.id)
        logger.info("refused a user not on the allow-list")
        await self.service.notify(chat.id, _REFUSAL)

    async def _on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not self._is_allowed(update):
            await self._refuse(update)
            return
        bot = context.bot
        message = inbound_from_update(update, bot_id=bot.id, bot_username=bot.username)
        if message is not None:
            await self.service.answer(message)

    async def _on_edit(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        # An edit updates its turn quietly: no reply, no refusal (a stranger was refused once
        # already, at their message).
        if not self._is_allowed(update):
            return
        edit = edit_from_update(update, bot_id=context.bot.id)
        if edit is not None:
            await self.service.edit(edit)

    async def _on_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not self._is_allowed(update):
            await self._refuse(update)
            return
        message = update.message
        if message is None or message.text is None:
            return
        name = message.text.split()[0][1:].split("@")[0]
        args = " ".join(context.args or [])
        await self.service.command(message.chat_id, name, args, reply_to=message.message_id)

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
            await self.service.command(message.chat_id, name, reply_to=message.message_id)

    async def _on_no_text(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if update.effective_chat is not None and self._is_allowed(update):
            await self.service.notify(update.effective_chat.id, _NO_TEXT)

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
        # Erases the conversation and the chat's journal entries; a stale or forged button
        # erases nothing.
        await query.answer()
        await self.service.confirm_forget(chat_id, query.data[len(FORGET_PREFIX) :])

    # -- apologies -----------------------------------------------------------------------------

    async def apologise(self, entries: Sequence[JournalEntry]) -> None:
        """Tell the users of updates the journal could not store that their answer waits.

        Telegram keeps such updates (they were not confirmed) and the poller fetches them
        again; each one gets its apology once.
        """
        for entry in entries:
            try:
                update = update_from_entry(entry, self.application.bot)
            except ValueError:
                continue
            await self._apologise(update)

    async def _apologise(self, update: Update) -> None:
        bot = self.application.bot
        message = inbound_from_update(update, bot_id=bot.id, bot_username=bot.username)
        backlog = self.service.backlog
        if (
            message is not None
            and message.wants_reply
            and self._is_allowed(update)
            and backlog is not None
            and backlog.first_apology(update.update_id)
        ):
            await self.service.notify(message.chat_id, APOLOGY)
