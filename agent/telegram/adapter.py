"""The Telegram adapter: updates in, lane and concierge calls, replies out. No memory logic.

Flow of one update (DESIGN.md section 3):

1. the poller (or the webhook) journals it durably, then Telegram may consider it delivered;
2. the chat's ordered queue (:class:`~agent.chat.dispatcher.ChatDispatcher`) hands it to
   python-telegram-bot's ``Application.process_update``, which runs one of the handlers below;
3. a message handler calls :meth:`ConversationLane.on_turn` (the reply is committed there),
   sends the reply, and records its message id (:meth:`ConversationLane.mark_delivered`);
   an edited message goes to :meth:`ConversationLane.on_edit` instead, and gets no reply;
4. the journal entry is marked done.

At start-up, replies committed but never sent are sent first, then journaled updates that were
never processed are processed, then polling starts (I4).

Sending follows Telegram's rules (:func:`~agent.telegram.retry.retry_bot_api`): a 429 waits
the ``retry_after`` it names; a timeout, a dropped connection or a 5xx is retried with a
doubling back-off; after a few of those the reply stays ``answered`` in the turn log and a
periodic pass (:meth:`TelegramAdapter.redeliver_stale`) resends it until Telegram takes it. A
refusal (403: the user blocked the bot; 400: the chat is gone) is final: the turn keeps
Telegram's reason and is never resent. The failures of an outage are logged once when it starts
and once when it ends (:class:`~agent.utils.failure_streak.FailureStreak`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
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
from telegram.error import BadRequest, Forbidden
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from agent.app.logging_setup import bind
from agent.chat.commands import COMMANDS, CommandCenter, CommandReply
from agent.chat.dispatcher import ChatDispatcher
from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.chat.reminders import Reminders
from agent.chat.storage_backlog import APOLOGY, REFUSALS, StorageBacklog
from agent.memory import ConversationLane, ConversationTurn, JobRef, ReplyEngine
from agent.telegram.payloads import (
    describe,
    edit_from_update,
    inbound_from_update,
    split_message,
    update_from_entry,
)
from agent.telegram.retry import retry_bot_api
from agent.utils.failure_streak import FailureStreak

__all__ = ["TelegramAdapter"]

logger = logging.getLogger(__name__)

#: Attempts of one send before its reply is left to the redelivery pass.
_SEND_ATTEMPTS = 5
_FORGET_PREFIX = "forget:"
_REFUSAL = "Sorry, this bot is private and cannot talk with you."
#: Strangers remembered as refused (each gets one refusal); past this the memory starts over.
_REFUSALS_REMEMBERED = 10_000
_NO_TEXT = "I can only read text (or captions) for now. Write me a message!"


@dataclass(frozen=True, slots=True)
class _Redeliver:
    turn: ConversationTurn
    attempts: int


@dataclass(frozen=True, slots=True)
class _NotSent:
    """Why a message was not sent; ``final``: Telegram refused it for good."""

    reason: str
    final: bool = False


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
        backoff: seconds before the first retry of a send that failed with a server or network
            error; doubled after each failure, up to 30.
        max_concurrent_chats: chats handled at the same moment; past this, the chats with work
            waiting take turns, one item each (:class:`~agent.chat.dispatcher.ChatDispatcher`).
    """

    def __init__(
        self,
        application: Application,  # type: ignore[type-arg]
        lane: ConversationLane,
        concierge: ReplyEngine,
        journal: InboundJournal,
        *,
        allowed_user_ids: frozenset[int] = frozenset(),
        backoff: float = 1.0,
        max_concurrent_chats: int = 256,
    ) -> None:
        self.application = application
        self.lane = lane
        self.concierge = concierge
        self.journal = journal
        self.commands = CommandCenter(lane, journal.db)
        self.dispatcher: ChatDispatcher[int, _Work] = ChatDispatcher(
            self._handle, max_concurrent=max_concurrent_chats
        )
        self.reminders: Reminders | None = None
        self._allowed = allowed_user_ids
        self._backoff = backoff
        self._failed: set[int] = set()
        self._refused_users: set[int] = set()
        # Updates whose writes the database refused while they were being handled.
        self._refused: set[int] = set()
        #: What the database refused to write, retried by a maintenance job.
        self.backlog = StorageBacklog(journal, self.submit)
        self._sending = FailureStreak(
            logger, "sending", "replies stay answered in the turn log and are resent until it works"
        )
        self._closing = asyncio.Event()
        self._install_handlers()

    # -- wiring ----------------------------------------------------------------------------

    def _install_handlers(self) -> None:
        app = self.application
        # First: a command handler would take an edited command (PTB's default filters
        # include edits), and an edit never runs a command.
        app.add_handler(MessageHandler(filters.UpdateType.EDITED_MESSAGE, self._on_edit))
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
            self.dispatcher.submit(chat_id, _Redeliver(turn, _SEND_ATTEMPTS))
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

    async def redeliver_stale(self, older_than: timedelta) -> None:
        """Queue again the replies older than ``older_than`` that Telegram has not taken yet
        (it failed, or was down); a maintenance job. One attempt each (after a 429, one more
        once its ``retry_after`` has passed): the pass repeats."""
        cutoff = self.lane.now() - older_than
        stale = [(c, t) for c, t in await self.lane.undelivered() if t.created_at < cutoff]
        for chat_id, turn in stale:
            self.dispatcher.submit(chat_id, _Redeliver(turn, 1))
        if stale:
            logger.debug("resending %d replies Telegram has not taken", len(stale))

    async def shutdown(self) -> None:
        """Stop accepting work and finish what is queued, without waiting for a failing
        Telegram: a reply it does not take at once stays answered, for the next start (I4)."""
        self._closing.set()
        await self.dispatcher.shutdown()

    async def job_due(self, chat_id: int, job: JobRef) -> None:
        """Queue a due reminder behind its chat's earlier work."""
        self.dispatcher.submit(chat_id, _DueJob(job))

    # -- processing --------------------------------------------------------------------------

    async def _handle(self, chat_id: int, work: _Work) -> None:
        if isinstance(work, JournalEntry):
            await self._process_entry(work)
        elif isinstance(work, _Redeliver):
            with bind(chat_id=chat_id, session_id=work.turn.session_id):
                current = await self.lane.refresh_turn(work.turn)
                if current is not None and current.status == "answered":
                    await self._deliver(chat_id, current, attempts=work.attempts)
        else:
            with bind(chat_id=chat_id, job_id=work.job.job_id):
                label = work.job.label or "(no text)"
                try:
                    result = await self.lane.complete_job(
                        chat_id, work.job.job_id, f"⏰ Reminder: {label}"
                    )
                except REFUSALS as exc:
                    # Not recorded, so not fired: it fires when the database takes writes.
                    logger.debug("the database refused the reminder's turn: %s", exc)
                    job = work.job
                    self.backlog.defer(("reminder", job.job_id), lambda: self.job_due(chat_id, job))
                    return
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
            if entry.update_id in self._refused:
                # The database refused its turn: it stays pending, to be handled again (I1).
                self._refused.discard(entry.update_id)
                self.backlog.hold(entry.update_id)
                return
            if entry.update_id in self._failed:
                self._failed.discard(entry.update_id)
                if await self.journal.mark_failed_attempt(entry.update_id, "handler failed"):
                    logger.error(
                        "update %s failed %d times; given up",
                        entry.update_id,
                        self.journal.max_attempts,
                    )
                return
            try:
                await self.journal.mark_done(entry.update_id)
            except REFUSALS:
                # Handled, not yet marked: mark it later rather than handle it twice.
                update_id = entry.update_id
                self.backlog.defer(("done", update_id), lambda: self.journal.mark_done(update_id))
            self.backlog.handled(entry.update_id)

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
        await self._notify(chat.id, _REFUSAL)

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

    async def _on_edit(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        # An edit updates its turn quietly: no reply, no refusal (a stranger was refused once
        # already, at their message).
        if not self._is_allowed(update):
            return
        edit = edit_from_update(update, bot_id=context.bot.id)
        if edit is not None:
            await self.lane.on_edit(edit)

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
            await self._notify(update.effective_chat.id, _NO_TEXT)

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
        session_id = query.data[len(_FORGET_PREFIX) :]
        # Erases the conversation and the chat's journal entries; a stale or forged button
        # erases nothing.
        reply = await self.commands.confirm_forget(chat_id, session_id)
        await query.answer()
        await self._notify(chat_id, reply.text)

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
        if (
            message is not None
            and message.wants_reply
            and self._is_allowed(update)
            and self.backlog.first_apology(update.update_id)
        ):
            await self._notify(message.chat_id, APOLOGY)

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        if isinstance(context.error, REFUSALS):
            # The disk under the database is at fault, not the update (the database logs it
            # once): the update is handled again later, and its user hears why meanwhile.
            logger.debug("the database refused the update's writes: %s", context.error)
            if isinstance(update, Update):
                self._refused.add(update.update_id)
                await self._apologise(update)
            return
        if isinstance(update, Update):
            self._failed.add(update.update_id)
        logger.error("handling an update failed", exc_info=context.error)

    # -- sending -----------------------------------------------------------------------------

    async def _send_command_reply(self, message: Message, reply: CommandReply) -> None:
        chat_id = message.chat_id
        if reply.document is not None:
            name, data = reply.document
            sent = await self._with_retries(
                lambda: self.application.bot.send_document(
                    chat_id, document=data, filename=name, caption=reply.text
                )
            )
            self._check_sent(chat_id, sent)
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
        await self._notify(chat_id, reply.text, markup=markup)

    async def _deliver(
        self, chat_id: int, turn: ConversationTurn, *, attempts: int = _SEND_ATTEMPTS
    ) -> None:
        """Send a turn's reply, then record its message id (step 3); on failure leave it due,
        or, refused for good, record why."""
        delivered = ("delivered", turn.session_id, turn.seq)
        if self.backlog.is_deferred(delivered):
            return  # sent already; the database refused to record it, the backlog will
        reply_to = turn.message_id if turn.message_id is not None else None
        sent = await self._send(
            chat_id, turn.assistant_text or "", reply_to=reply_to, attempts=attempts
        )
        if not isinstance(sent, _NotSent):
            message_id = sent.message_id
            try:
                await self.lane.mark_delivered(turn, message_id)
            except REFUSALS:
                # Sent, not recorded: record it later rather than send it twice (I4).
                self.backlog.defer(delivered, lambda: self.lane.mark_delivered(turn, message_id))
        elif sent.final:
            await self._record_refusal(turn, sent.reason)
        else:
            logger.debug("reply of turn %s not sent yet (%s)", turn.seq, sent.reason)

    async def _record_refusal(self, turn: ConversationTurn, reason: str) -> None:
        """Keep Telegram's reason on the turn, so that it is never resent (it stays answered)."""
        logger.error(
            "Telegram refused the reply of turn %s for good (%s); it stays in the turn log, "
            "marked undeliverable, and is not resent",
            turn.seq,
            reason,
        )
        await self.lane.mark_undeliverable(turn, reason)

    async def _notify(
        self, chat_id: int, text: str, *, markup: InlineKeyboardMarkup | None = None
    ) -> None:
        """Send a message that is no turn's reply (a command's answer, a notice)."""
        self._check_sent(chat_id, await self._send(chat_id, text, markup=markup))

    @staticmethod
    def _check_sent(chat_id: int, sent: Message | _NotSent) -> None:
        """Say so when a message that is no turn's reply was not sent: nothing resends it."""
        if isinstance(sent, _NotSent):
            logger.warning(
                "a message to chat %s was dropped (%s); it is no turn's reply, so it is not resent",
                chat_id,
                sent.reason,
            )

    async def _send(
        self,
        chat_id: int,
        text: str,
        *,
        reply_to: int | None = None,
        markup: InlineKeyboardMarkup | None = None,
        attempts: int = _SEND_ATTEMPTS,
    ) -> Message | _NotSent:
        """Send ``text`` split to Telegram's limit; return the last message, or why not."""
        last: Message | _NotSent = _NotSent("nothing to send", final=True)
        pieces = split_message(text)
        for index, piece in enumerate(pieces):
            params = (
                ReplyParameters(message_id=reply_to, allow_sending_without_reply=True)
                if reply_to is not None and index == 0
                else None
            )
            last = await self._with_retries(
                functools.partial(
                    self.application.bot.send_message,
                    chat_id,
                    piece,
                    reply_parameters=params,
                    reply_markup=markup if index == len(pieces) - 1 else None,
                ),
                attempts=attempts,
            )
            if isinstance(last, _NotSent):
                break
        return last

    async def _with_retries(
        self, call: Callable[[], Awaitable[Message]], *, attempts: int = _SEND_ATTEMPTS
    ) -> Message | _NotSent:
        """Run a Bot API send per Telegram's rules (:func:`~agent.telegram.retry.retry_bot_api`);
        return the message, or why not.

        After ``attempts`` network errors or 5xx (or at once when the bot is stopping while
        sending fails) the send is given up for now. A refusal (403 Forbidden, 400 Bad
        Request) is final: retrying cannot change it.
        """
        try:
            sent = await retry_bot_api(
                call,
                failures=self._sending,
                backoff=self._backoff,
                stop=self._closing,
                attempts=attempts,
            )
        except (Forbidden, BadRequest) as exc:
            return _NotSent(describe(exc), final=True)
        if sent is None:
            if self._closing.is_set():
                return _NotSent("the bot is stopping while sending fails")
            return _NotSent(f"{attempts} attempts failed")
        return sent
