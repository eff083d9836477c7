"""The turn service every transport uses: messages and commands in, replies out through an Outbox.

Flow of one message (DESIGN.md section 3), whatever the transport:

1. the transport hands it in: Telegram journals the update first (the poller or the webhook,
   I1) and :meth:`ChatService.submit` queues the journal entry; the console calls
   :meth:`ChatService.on_message` and waits for it;
2. the chat's ordered queue (:class:`~agent.chat.dispatcher.ChatDispatcher`) runs it: a command
   through :class:`~agent.chat.commands.CommandCenter`, a message through
   :meth:`ConversationLane.on_turn` (the reply is committed there, with the reply engine's
   answer), an edit through :meth:`ConversationLane.on_edit`;
3. the reply goes out through the :class:`~agent.chat.outbox.Outbox` and its message id is
   recorded (:meth:`ConversationLane.mark_delivered`); refused for good, the refusal is
   recorded instead and the reply is never resent;
4. the journal entry is marked done (or, when the handler failed, its attempt is counted).

A start (:meth:`ChatService.recover`) queues the replies committed but never sent (I4), the
journaled updates never processed (I1) and schedules the active reminders; a maintenance job
(:meth:`ChatService.redeliver`) resends the replies the outbox could not send yet. What the
database refuses to write waits in a :class:`~agent.chat.storage_backlog.StorageBacklog`.

All of a chat's work runs under ``locks.hold(chat_id)`` (:class:`~agent.db.ChatLocks`). Given
the jobs table (:class:`~agent.chat.job_table.JobTable`), the service is one of a bot's workers
on one PostgreSQL database (issue 18 section 3): a chat's work first lets the lane refresh the
chat (``lane.warm(chat_id, recheck=True)``); a journaled update queues a drain of its chat
(:class:`~agent.chat.journal_drain.JournalDrain`), :meth:`ChatService.sweep` the drains of
chats whose entries wait (a dead worker's; all at start); a reminder is a row, added by the
turn that sets it (and at start, idempotently), claimed by one worker
(:meth:`ChatService.claim_due`), fired under the chat's lock, then marked done.

Tested by ``tests/test_chat_service.py`` (a real lane and engine, a recording outbox).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar, cast

from agent.chat.commands import CommandCenter, CommandReply
from agent.chat.dispatcher import ChatDispatcher
from agent.chat.erasure import forget_everywhere
from agent.chat.inbound_journal import HANDLING_FAILED, InboundJournal, JournalEntry
from agent.chat.job_table import JobTable
from agent.chat.journal_drain import JournalDrain
from agent.chat.outbox import Outbox
from agent.chat.reminder_message import reminder_text
from agent.chat.reminders import JobScheduler, Reminders
from agent.chat.storage_backlog import REFUSALS, StorageBacklog
from agent.db import AnyDatabase, ChatLocks, LocalChatLocks
from agent.errors import DeliveryError, DeliveryFailed, DeliveryRefused, UnreadableUpdate
from agent.memory import ConversationLane, ConversationTurn, InboundMessage, JobRef, ReplyEngine
from agent.utils.logging_setup import bind

__all__ = ["ChatService", "EntryReader"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Reads a journaled update back and runs its handler (the transport's); raises
#: :class:`~agent.errors.UnreadableUpdate` when the payload cannot be read.
EntryReader = Callable[[JournalEntry], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class _Redeliver:
    turn: ConversationTurn
    attempts: int | None


@dataclass(frozen=True, slots=True)
class _DueJob:
    job: JobRef
    claimed: bool = False  # claimed in the jobs table: marked done there once fired


@dataclass(frozen=True, slots=True)
class _Drain:
    """Process the chat's pending journal entries (a worker among several)."""


@dataclass(frozen=True, slots=True)
class _Queued:
    """Work a caller waits for: its result (or exception) goes to ``done``."""

    work: Callable[[], Awaitable[object]]
    done: asyncio.Future[object]


_Work = JournalEntry | _Redeliver | _DueJob | _Queued | _Drain


class ChatService:
    """Runs the chats of one transport over the memory lane, the reply engine and an outbox.

    Args:
        lane: the memory lane, already hydrated.
        engine: the reply engine.
        outbox: sends to the transport's chats.
        db: the lane's database (erase-everywhere reaches the inbound journals of every bot).
        scheduler: runs the reminders' timers.
        journal: the inbound journal of a transport that journals its updates (Telegram);
            ``None`` (the console): the database's refusals reach the caller.
        max_concurrent_chats: chats handled at the same moment; past this, the chats with work
            waiting take turns, one item each (:class:`~agent.chat.dispatcher.ChatDispatcher`).
        locks: held around each piece of a chat's work (default: within this process).
        jobs: the jobs table the bot's workers share; given, the service is one of several
            workers (see the module docstring).
    """

    def __init__(
        self,
        lane: ConversationLane,
        engine: ReplyEngine,
        outbox: Outbox,
        *,
        db: AnyDatabase,
        scheduler: JobScheduler,
        journal: InboundJournal | None = None,
        max_concurrent_chats: int = 256,
        locks: ChatLocks | None = None,
        jobs: JobTable | None = None,
    ) -> None:
        self.lane = lane
        self.engine = engine
        self.outbox = outbox
        self.journal = journal
        self._db = db
        self.commands = CommandCenter(lane, db)
        self.reminders = Reminders(lane, scheduler, self.job_due, jobs=jobs)
        self.dispatcher: ChatDispatcher[int, _Work] = ChatDispatcher(
            self._handle, max_concurrent=max_concurrent_chats
        )
        #: What the database refused to write, retried by a maintenance job (with a journal).
        self.backlog = None if journal is None else StorageBacklog(journal, self.submit)
        self._read: EntryReader | None = None
        self._locks: ChatLocks = locks or LocalChatLocks()
        self._jobs = jobs
        # Chats with a drain queued that has not read the journal yet: one is enough.
        self._drains: set[int] = set()
        self._drain = (
            None if journal is None else JournalDrain(journal, self._locks, self._process_read)
        )

    # -- intake --------------------------------------------------------------------------------

    def read_entries_with(self, reader: EntryReader) -> None:
        """Set how journaled updates are read back and handled (the transport's adapter)."""
        self._read = reader

    def submit(self, entry: JournalEntry) -> None:
        """Queue a journaled update behind its chat's earlier work (a worker among several:
        a drain of its chat, which processes it unless another worker did).

        Raises:
            RuntimeError: no reader was set (:meth:`read_entries_with`), or the service is
                shut down.
        """
        if self._read is None or self.journal is None:
            raise RuntimeError("ChatService has no journal reader; call read_entries_with first")
        if self._jobs is None:
            self.dispatcher.submit(entry.chat_id or 0, entry)
        else:
            self._queue_drain(entry.chat_id or 0)

    @property
    def shared(self) -> bool:
        """Whether this service is one of several workers on one database."""
        return self._jobs is not None

    async def on_message(self, message: InboundMessage) -> None:
        """Handle a message, or a command (its text starts with ``/``), in its chat's order,
        and wait until it is answered (a transport without a journal: the console).

        Raises:
            Exception: whatever handling it raised (e.g. the database refused the turn).
        """
        await self.in_order(message.chat_id, lambda: self._message_or_command(message))

    async def in_order(self, chat_id: int, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` behind the chat's earlier work and return its result."""
        done: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.dispatcher.submit(chat_id, _Queued(work, done))
        return cast(T, await done)

    async def job_due(self, chat_id: int, job: JobRef) -> None:
        """Queue a due reminder behind its chat's earlier work (the reminders' callback); a
        worker among several claims the due jobs of the table instead (:meth:`claim_due`)."""
        if self._jobs is None:
            self.dispatcher.submit(chat_id, _DueJob(job))
        else:
            await self.claim_due()

    async def claim_due(self) -> int:
        """Claim the jobs of the table that are due (each goes to one worker) and queue them
        in their chats' order; return how many (``0`` without a jobs table)."""
        jobs = self._jobs
        if jobs is None:
            return 0
        await jobs.renew()  # the claims still queued or firing here stay this worker's
        due = await jobs.next_due()
        if due is None or due > self.lane.now():
            return 0
        claimed = [job for job in await jobs.claim() if job.chat_id is not None]
        for job in claimed:
            ref = JobRef.model_validate_json(job.payload)
            self.dispatcher.submit(job.chat_id or 0, _DueJob(ref, claimed=True))
        return len(claimed)

    async def sweep(self, *, older_than: timedelta) -> int:
        """Queue a drain of every chat with journal entries pending for longer than
        ``older_than`` (a worker among several: those of a worker that died, or all of them
        at start); return how many chats."""
        if self.journal is None or self._jobs is None:
            return 0
        chats = await self.journal.pending_chats(older_than=older_than)
        for chat_id in chats:
            self._queue_drain(chat_id)
        return len(chats)

    def _queue_drain(self, chat_id: int) -> None:
        if chat_id not in self._drains:
            self.dispatcher.submit(chat_id, _Drain())
            self._drains.add(chat_id)

    # -- start-up and upkeep -------------------------------------------------------------------

    async def recover(self, *, chat_id: int | None = None) -> tuple[int, int]:
        """Queue the replies never delivered (I4) and the journaled updates never processed
        (I1), then schedule the active reminders.

        Args:
            chat_id: only this chat's replies (the console's own chat); ``None``: every chat.

        Returns:
            How many replies and how many updates were queued.
        """
        undelivered = [
            (chat, turn)
            for chat, turn in await self.lane.undelivered()
            if chat_id is None or chat == chat_id
        ]
        for chat, turn in undelivered:
            self.dispatcher.submit(chat, _Redeliver(turn, None))
        if self.shared:
            pending = await self.sweep(older_than=timedelta(0))
        else:
            entries = [] if self.journal is None else await self.journal.pending()
            for entry in entries:
                self.submit(entry)
            pending = len(entries)
        if undelivered or pending:
            logger.info(
                "recovering %d undelivered replies and %d %s",
                len(undelivered),
                pending,
                "chats of unprocessed updates" if self.shared else "unprocessed updates",
            )
        await self.reminders.schedule_active()
        return len(undelivered), pending

    async def redeliver(self, older_than: timedelta) -> None:
        """Queue again the replies older than ``older_than`` that the outbox has not sent yet
        (it failed, or was down); a maintenance job. One attempt each: the pass repeats."""
        cutoff = self.lane.now() - older_than
        stale = [(c, t) for c, t in await self.lane.undelivered() if t.created_at < cutoff]
        for chat_id, turn in stale:
            self.dispatcher.submit(chat_id, _Redeliver(turn, 1))
        if stale:
            logger.debug("resending %d replies the outbox has not sent", len(stale))

    async def forget_everywhere(self, session_id: str) -> int | None:
        """Erase a conversation and what the bots received of it
        (:func:`~agent.chat.erasure.forget_everywhere`); ``None``: no such session."""
        return await forget_everywhere(self.lane, self._db, session_id)

    async def join(self) -> None:
        """Wait until every queued item has been handled."""
        await self.dispatcher.join()

    async def shutdown(self) -> None:
        """Stop accepting work and finish what is queued, without waiting for a failing
        outbox: a reply it does not take at once stays answered, for the next start (I4)."""
        self.outbox.stop_retrying()
        await self.dispatcher.shutdown()

    # -- what runs in a chat's order ------------------------------------------------------------

    async def answer(self, message: InboundMessage) -> None:
        """Commit the message's turn with the engine's reply, schedule the reminders it set,
        and send the reply (call it in the chat's order)."""
        result = await self.lane.on_turn(message, self.engine)
        if not result.duplicate:
            await self.reminders.schedule_from_turn(message.chat_id, result.turn)
        if result.needs_delivery:
            await self._deliver(message.chat_id, result.turn)

    async def edit(self, edit: InboundMessage) -> None:
        """Apply an edited message to its turn; no reply (call it in the chat's order)."""
        await self.lane.on_edit(edit)

    async def command(
        self, chat_id: int, name: str, args: str = "", *, reply_to: int | None = None
    ) -> None:
        """Run ``/name args`` and send its answer, a reply to the command's message ``reply_to``
        (call it in the chat's order)."""
        await self.lane.warm(chat_id)
        await self._send_reply(chat_id, await self.commands.run(chat_id, name, args), reply_to)

    async def confirm_forget(self, chat_id: int, session_id: str) -> None:
        """Erase the conversation the user confirmed erasing, if it is still the chat's, and
        say so (call it in the chat's order)."""
        await self.lane.warm(chat_id)
        reply = await self.commands.confirm_forget(chat_id, session_id)
        await self.notify(chat_id, reply.text)

    async def notify(self, chat_id: int, text: str, *, confirm_forget: str | None = None) -> None:
        """Send a message that is no turn's reply (a notice); one that is not sent is only
        logged: nothing resends it."""
        await self._send_reply(chat_id, CommandReply(text, confirm_forget=confirm_forget), None)

    async def _message_or_command(self, message: InboundMessage) -> None:
        if message.text.startswith("/"):
            name, _, args = message.text[1:].partition(" ")
            await self.command(message.chat_id, name, args, reply_to=message.message_id)
        else:
            await self.answer(message)

    async def _send_reply(self, chat_id: int, reply: CommandReply, reply_to: int | None) -> None:
        # A command's answer replies to the command's message; it is no turn's reply: one that
        # is not sent is only logged.
        text, document, forget = reply.text, reply.document, reply.confirm_forget
        try:
            if document is None:
                await self.outbox.send_text(chat_id, text, reply_to=reply_to, confirm_forget=forget)
            else:
                await self.outbox.send_document(chat_id, *document, text, reply_to=reply_to)
        except DeliveryError as exc:
            self._dropped(chat_id, exc)

    @staticmethod
    def _dropped(chat_id: int, exc: DeliveryError) -> None:
        reason = exc.reason
        logger.warning("a message to chat %s was dropped (%s); it is no turn's reply, so it"
                       " is not resent", chat_id, reason)

    # -- the queue's handler ----------------------------------------------------------------------

    async def _handle(self, chat_id: int, work: _Work) -> None:
        try:
            async with self._locks.hold(chat_id):
                # From here on the journal is read: what is journaled next needs a new drain.
                self._drains.discard(chat_id)
                if self._jobs is not None:
                    # Another worker may have served the chat since this one last did.
                    await self.lane.warm(chat_id, recheck=True)
                await self._handle_held(chat_id, work)
        except Exception as exc:
            # The lock or the refresh failed (the database): a caller waiting gets it too.
            self._drains.discard(chat_id)
            if isinstance(work, _Queued) and not work.done.done():
                work.done.set_exception(exc)
            raise
        finally:
            if isinstance(work, _DueJob) and work.claimed and self._jobs is not None:
                self._jobs.let_go(work.job.job_id)  # completed, or left to its lease's end

    async def _handle_held(self, chat_id: int, work: _Work) -> None:
        if isinstance(work, _Drain):
            if self._drain is None:
                raise RuntimeError("ChatService has no journal")
            await self._drain.drain_held(chat_id)
        elif isinstance(work, JournalEntry):
            await self._process_read(work)
        elif isinstance(work, _Queued):
            await self._run_queued(work)
        elif isinstance(work, _Redeliver):
            with bind(chat_id=chat_id, session_id=work.turn.session_id):
                current = await self.lane.refresh_turn(work.turn)
                if current is not None and current.status == "answered":
                    await self._deliver(chat_id, current, attempts=work.attempts)
        else:
            await self._fire(chat_id, work.job, claimed=work.claimed)

    @staticmethod
    async def _run_queued(queued: _Queued) -> None:
        try:
            result: Any = await queued.work()
        except Exception as exc:
            if not queued.done.done():
                queued.done.set_exception(exc)
            return
        if not queued.done.done():
            queued.done.set_result(result)

    async def _fire(self, chat_id: int, job: JobRef, *, claimed: bool = False) -> None:
        with bind(chat_id=chat_id, job_id=job.job_id):
            try:
                text = reminder_text(job, self.lane.now())
                result = await self.lane.complete_job(chat_id, job.job_id, text)
            except REFUSALS as exc:
                if claimed:  # claimable again once the claim's lease ends
                    logger.debug("the database refused the reminder's turn: %s", exc)
                    return
                if self.backlog is None:
                    raise
                # Not recorded, so not fired: it fires when the database takes writes.
                logger.debug("the database refused the reminder's turn: %s", exc)
                self.backlog.defer(("reminder", job.job_id), lambda: self.job_due(chat_id, job))
                return
            if claimed and self._jobs is not None:
                # Fired now, or before (no longer active in the session): done either way.
                await self._jobs.complete(job.job_id)
            if result is not None:
                await self.reminders.schedule_from_turn(chat_id, result.turn)  # a series' next
                await self._deliver(chat_id, result.turn)

    async def _process_read(self, entry: JournalEntry) -> None:
        journal, backlog, read = self.journal, self.backlog, self._read
        if journal is None or backlog is None or read is None:
            raise RuntimeError("ChatService has no journal reader; call read_entries_with")
        await self._process_entry(entry, read, journal, backlog)

    async def _process_entry(
        self,
        entry: JournalEntry,
        read: EntryReader,
        journal: InboundJournal,
        backlog: StorageBacklog,
    ) -> None:
        with bind(update_id=entry.update_id, chat_id=entry.chat_id):
            try:
                await read(entry)
            except UnreadableUpdate:
                logger.exception("journal entry %s is unreadable; skipped", entry.update_id)
                await journal.mark_failed_attempt(entry.update_id, "unreadable payload")
                return
            except REFUSALS as exc:
                # The disk under the database is at fault, not the update (the database logs
                # it once): it stays pending, to be handled again (I1).
                logger.debug("the database refused the update's writes: %s", exc)
                backlog.hold(entry.update_id)
                return
            except Exception:
                logger.exception("handling an update failed")
                if await journal.mark_failed_attempt(entry.update_id, "handler failed"):
                    logger.error("update %s given up after %d attempts", entry.update_id,
                                 journal.max_attempts)
                if entry.chat_id is not None:  # silence would read as ignored
                    await self.notify(entry.chat_id, HANDLING_FAILED)
                return
            try:
                await journal.mark_done(entry.update_id)
            except REFUSALS:
                # Handled, not yet marked: mark it later rather than handle it twice.
                update_id = entry.update_id
                backlog.defer(("done", update_id), lambda: journal.mark_done(update_id))
            backlog.handled(entry.update_id)

    # -- delivery ---------------------------------------------------------------------------------

    async def _deliver(
        self, chat_id: int, turn: ConversationTurn, *, attempts: int | None = None
    ) -> None:
        """Send a turn's reply, then record its message id (step 3); not sent yet, leave it
        due; refused for good, record why."""
        delivered = ("delivered", turn.session_id, turn.seq)
        if self.backlog is not None and self.backlog.is_deferred(delivered):
            return  # sent already; the database refused to record it, the backlog will
        try:
            message_id = await self.outbox.send_text(
                chat_id, turn.assistant_text or "", reply_to=turn.message_id, attempts=attempts
            )
        except DeliveryRefused as exc:
            logger.error(
                "the reply of turn %s was refused for good (%s); it stays in the turn log, "
                "marked undeliverable, and is not resent",
                turn.seq,
                exc.reason,
            )
            await self.lane.mark_undeliverable(turn, exc.reason)
            return
        except DeliveryFailed as exc:
            logger.debug("reply of turn %s not sent yet (%s)", turn.seq, exc.reason)
            return
        try:
            await self.lane.mark_delivered(turn, message_id)
        except REFUSALS:
            if self.backlog is None:
                raise
            # Sent, not recorded: record it later rather than send it twice (I4).
            self.backlog.defer(delivered, lambda: self.lane.mark_delivered(turn, message_id))
