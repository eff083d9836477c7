"""The memory lane: the one facade the Telegram adapter (or any other caller) talks to.

A turn moves through durable steps, each committed before the next side effect
(DESIGN.md section 3):

1. :meth:`ConversationLane.on_turn` builds the packet (the state in memory, plus what the
   retriever finds for the new message in the database), asks the reply engine, then
   commits the turn *and* the state it leads to in one transaction (group-committed with other
   chats' turns), and only then writes the session's checkpoint file. The caller sends the
   reply after ``on_turn`` returns.
2. :meth:`ConversationLane.mark_delivered` records the sent reply's Telegram message id.

Turns of one chat run strictly one after another; turns of different chats run concurrently.
:meth:`ConversationLane.hydrate` is the start-up sequence of PRD-014 section 5 and
:meth:`ConversationLane.shutdown` the stop sequence of section 6. Nothing in correctness depends
on ``shutdown`` running: a process killed at any moment loses no committed turn, and its
checkpoints are checked and rebuilt at the next start.

The lane is the write path and the lifecycle; reads, checks and repairs go through
:attr:`ConversationLane.inspector` (:mod:`agent.memory.inspector`). Its parts are in
:mod:`agent.memory.lane_parts`: the turn commit, checkpoint upkeep, the start, session
commands, edits and long-term memory commands. Tested by ``tests/test_lane.py`` and the memory
tests that run turns through it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from agent.db import AnyDatabase
from agent.errors import StorageError
from agent.memory.conversation_checkpoint import CheckpointStore
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_retriever import ConversationRetriever
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_store import ConversationStore, SqliteConversationStore
from agent.memory.inspector import MemoryInspector
from agent.memory.lane_parts.checkpoint_keeper import CheckpointKeeper
from agent.memory.lane_parts.hydration import Hydration, HydrationReport
from agent.memory.lane_parts.live_sessions import DEFAULT_RESIDENT, LiveSession
from agent.memory.lane_parts.memory_commands import MemoryCommands
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.lane_parts.session_lifecycle import SessionLifecycle, SessionSwitch
from agent.memory.lane_parts.turn_commit import TurnCommitter, TurnResult
from agent.memory.lane_parts.turn_edits import EditOutcome, TurnEditor
from agent.memory.longterm.memory_consolidator import ConsolidationReport, MemoryConsolidator
from agent.memory.longterm.memory_store import MemoryStore, SqliteMemoryStore
from agent.memory.reply_engine import ReplyEngine
from agent.memory.rules.recurrence import fired
from agent.memory.schemas import (
    ConversationTurn,
    InboundMessage,
    JobRef,
    Memory,
    Reply,
    utc_now,
)
from agent.memory.summaries.summary_store import SqliteSummaryStore, SummaryStore
from agent.memory.summaries.summary_worker import SummaryWorker
from agent.memory.writer import PromotionPolicy

__all__ = ["ConversationLane", "TurnResult"]

logger = logging.getLogger(__name__)


class ConversationLane:
    """The crash-safe conversation memory of every chat the bot talks in.

    Args:
        db: an open :class:`~agent.db.Database`; the lane closes it in :meth:`shutdown`.
        checkpoints: where the per-session checkpoint files go.
        store: the storage backend (default: SQLite).
        state_manager: the rules that move a session state by one turn.
        builder: assembles the packet handed to the reply engine.
        memory_store: the long-term memory backend (default: SQLite).
        promotion: the gate that decides what a turn adds to long-term memory.
        summary_store: the summary version chain's storage (default: SQLite).
        summary_worker: runs the optional model summarizer after turns that fold;
            its summaries reach packets as ``llm_session_summary``, never the state (I6).
        retriever: finds the older turns, summaries and memories relevant to a new message
            (default: BM25 with the default weights).
        consolidator: decays, archives and merges long-term memories (the scheduled job).
        resident_sessions: hydrated sessions kept as objects; the others are held packed
            (see :mod:`agent.memory.lane_parts.live_sessions`).
        clock: returns the current time (tests pass a fixed clock).
    """

    def __init__(
        self,
        db: AnyDatabase,
        checkpoints: CheckpointStore,
        *,
        store: ConversationStore | None = None,
        state_manager: ConversationStateManager | None = None,
        builder: ConversationContextBuilder | None = None,
        memory_store: MemoryStore | None = None,
        promotion: PromotionPolicy | None = None,
        summary_store: SummaryStore | None = None,
        summary_worker: SummaryWorker | None = None,
        retriever: ConversationRetriever | None = None,
        consolidator: MemoryConsolidator | None = None,
        resident_sessions: int = DEFAULT_RESIDENT,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        store = store or SqliteConversationStore()
        memory_store = memory_store or SqliteMemoryStore()
        chain = summary_store or SqliteSummaryStore()
        self._parts = parts = LaneParts(
            db=db,
            checkpoints=checkpoints,
            store=store,
            states=state_manager or ConversationStateManager(),
            builder=builder or ConversationContextBuilder(),
            memory_store=memory_store,
            promotion=promotion or PromotionPolicy(),
            summary_store=chain,
            summary_worker=summary_worker,
            retriever=retriever or ConversationRetriever(store, memory_store, summary_store=chain),
            consolidator=consolidator or MemoryConsolidator(memory_store),
            resident_sessions=resident_sessions,
            clock=clock,
        )
        self._db = db
        self._store = store
        self._sessions = parts.sessions
        self._keeper = CheckpointKeeper(parts)
        self._memory = MemoryCommands(parts)
        self._turns = TurnCommitter(parts, self._keeper, self._memory)
        self._lifecycle = SessionLifecycle(parts, self._keeper, self._turns.commit)
        self._editor = TurnEditor(parts, self._keeper)
        self._inspector = MemoryInspector(parts, self._keeper)
        self._start = Hydration(parts, self._keeper)
        self._hydrated = False

    @property
    def inspector(self) -> MemoryInspector:
        """The door for reading, checking and repairing what this lane remembers."""
        return self._inspector

    # -- start and stop --------------------------------------------------------------------

    async def hydrate(self, *, background: bool = False) -> HydrationReport:
        """Hydrate open sessions, rebuild stale checkpoints, find undelivered replies.

        The PRD-014 start-up sequence (:mod:`agent.memory.lane_parts.hydration`): a checkpoint
        not at the database's turn is rewritten from the database (I5), files of erased sessions
        are deleted, and the replies never delivered are reported (I4). With ``background``
        only what cannot wait is done before this returns; other sessions are hydrated by their
        first message, command, edit or due job, or by the sweep this leaves running. Nothing
        is written unless a file was repaired: a session is ``resuming`` until its next turn.

        Raises:
            RuntimeError: called twice, or after :meth:`shutdown`.
        """
        self._parts.check_open()
        if self._hydrated:
            raise RuntimeError("ConversationLane.hydrate() was already called")
        self._hydrated = True
        return await self._start.start(background=background)

    async def swept(self) -> None:
        """Wait until the start's background sweep is done (tools and tests)."""
        await self._start.swept()

    async def shutdown(self) -> None:
        """Finish the turns in flight, mark sessions ``shutdown_clean``, checkpoint, close.

        The PRD-014 stop sequence. Idempotent. The pending summary delta goes into each
        checkpoint's ``pending_summary_delta``; the state stays the fold of the log (I6)."""
        parts, store = self._parts, self._store
        if parts.closed:
            return
        await self._start.stop()
        parts.closed = True
        # 1. Flush: wait for every turn in flight; later callers see the lane closed.
        for lock in list(parts.chat_locks.values()):
            await lock.acquire()
        try:
            if parts.summary_worker is not None:  # its runs write to the database: first
                await parts.summary_worker.shutdown()
            await parts.retriever.shutdown()  # so does the semantic search's indexer
            if self._db.is_open:
                now = parts.clock()
                await self._db.write(lambda tx: store.set_status(tx, "shutdown_clean", now=now))
                await self._keeper.write_clean()
                await self._keeper.record(quiesced=True)
        finally:
            await self._db.close()
        logger.info("memory lane shut down cleanly (%d sessions)", len(self._sessions))

    async def close(self) -> None:
        """Close the database of a lane that was never hydrated (a tool's reads and repairs;
        the stop sequence, :meth:`shutdown`, belongs to the bot that hydrated them). Idempotent.

        Raises:
            RuntimeError: the lane was hydrated (use :meth:`shutdown`)."""
        if self._hydrated:
            raise RuntimeError("a hydrated ConversationLane stops with shutdown(), not close()")
        self._parts.closed = True
        await self._db.close()

    async def warm(self, chat_id: int, *, recheck: bool = False) -> None:
        """Hydrate the chat's open session if not held yet, its checkpoint checked first (I5);
        messages, edits and due jobs do it themselves, a command calls this first. ``recheck``:
        first let go of what another process wrote past (`CheckpointKeeper.drop_if_behind`)."""
        self._parts.check_open()
        async with self._parts.chat_locks[chat_id]:
            self._parts.check_open()
            if recheck and await self._keeper.drop_if_behind(chat_id):
                logger.debug("chat %s moved on in another process; hydrated again", chat_id)
            await self._keeper.open_live(chat_id)

    # -- turns -----------------------------------------------------------------------------

    async def on_turn(self, message: InboundMessage, engine: ReplyEngine) -> TurnResult:
        """Record one message and the engine's reply as a turn, durably.

        Idempotent on ``(bot_id, update_id)``: a message whose update is already a turn returns
        that turn with ``duplicate=True`` and writes nothing (I3). The reply is committed
        together with the new session state before this returns, and the checkpoint file is
        written after the commit, so a reply the user sees is always in the log (I2).

        Args:
            message: the inbound message.
            engine: asked for the reply when ``message.wants_reply``.

        Returns:
            The turn, the packet the engine saw, and whether it was a duplicate.

        Raises:
            StorageError: the turn could not be committed (nothing of it was written).
            Exception: whatever the engine raised (nothing was written).
        """
        self._parts.check_open()
        async with self._parts.chat_locks[message.chat_id]:
            self._parts.check_open()
            live, is_new = await self._turns.session_for(message)
            try:
                return await self._answer(live, is_new, message, engine)
            except StorageError:
                if is_new or not await self._turns.erased_elsewhere(live):
                    raise
            # The session was erased by another process (agent-memory forget or prune):
            # the message starts the chat's next session, as after /forget.
            live, is_new = await self._turns.session_for(message)
            return await self._answer(live, is_new, message, engine)

    async def _answer(
        self, live: LiveSession, is_new: bool, message: InboundMessage, engine: ReplyEngine
    ) -> TurnResult:
        if not message.wants_reply:  # kept without an answer: no engine, no packet
            return await self._turns.commit(live, is_new, message, Reply(), None)
        # Retrieval reads the database with the new message, before the engine runs.
        # I3: a message whose update is a turn already is found by the packet's read (or, when
        # no reply is asked for, by the commit's insert) and written again nowhere.
        packet = await self._parts.reply_read(live, message, is_new=is_new)
        if isinstance(packet, ConversationTurn):
            return TurnResult(turn=packet, packet=None, duplicate=True)
        reply = await engine.reply(packet, message)
        return await self._turns.commit(live, is_new, message, reply, packet)

    async def complete_job(self, chat_id: int, job_id: str, text: str) -> TurnResult | None:
        """Record a due job (a reminder firing) as a bot turn that closes its job ref.

        The turn carries the job ref with status ``done``, so the job leaves the session's
        active jobs in the same commit that records the message: a job fires once, even across
        a crash and restart (the reply is then delivered as any undelivered turn, I4). A
        repeating reminder's next occurrence is scheduled in that commit too.

        Args:
            chat_id: the chat whose session holds the job.
            job_id: the job's id.
            text: the message the bot sends (e.g. the reminder).

        Returns:
            The turn to deliver, or ``None`` if the job is no longer active (already fired,
            cancelled, or its session closed or erased).
        """
        self._parts.check_open()
        async with self._parts.chat_locks[chat_id]:
            self._parts.check_open()
            live = await self._keeper.open_live(chat_id)
            job = None
            if live is not None:
                job = next((j for j in live.state.active_job_refs if j.job_id == job_id), None)
            if live is None or job is None:
                return None
            if await self._turns.erased_elsewhere(live):  # its jobs went with it
                return None
            message = InboundMessage(
                chat_id=chat_id, text="", chat_type=live.session.chat_type, speaker="scheduler"
            )
            reply = Reply(
                text=text,
                intent=f"{job.kind}_due",
                action_name=f"{job.kind}_fired",
                job_refs=fired(job, self._parts.clock()),
            )
            return await self._turns.commit(live, False, message, reply, None)

    async def on_edit(self, message: InboundMessage) -> EditOutcome:
        """Apply an edited message to its turn: new text, old text kept, state folded again.

        ``message`` is the edit: ``message_id`` names the edited message, ``update_id`` the
        edit's own update (the idempotency key: a redelivered edit changes nothing, I3),
        ``text`` the message's new text and ``received_at`` when it was edited. The turn may be
        in any session of the chat, open or closed; a message that is no turn (never one, or
        erased by ``/forget``) is left alone. No reply engine runs: the turn keeps its answer.

        In one transaction: the turn's text is replaced and the replaced text added to its edit
        history; the session state becomes the fold of the turn log with the new text (I6),
        the summary versions that fold made again get their new text; the turn stops being a
        source of the long-term memories it stated (a memory it alone stated goes) and, in a
        private chat, what the new text states is promoted as a new turn's would be. Then the
        checkpoint file is rewritten.

        Re-folding reads the session's whole turn log (the state before the edited turn is kept
        nowhere): an edit costs a rebuild of its session, which edits, rare, can afford.

        Returns:
            What was done (:data:`EditOutcome`).

        Raises:
            StorageError: the edit could not be committed (nothing of it was written).
        """
        return await self._editor.on_edit(message)

    async def mark_delivered(self, turn: ConversationTurn, message_id: int) -> None:
        """Record that ``turn``'s reply was sent as Telegram message ``message_id`` (step 3)."""
        now = self._parts.clock()
        await self._db.write(
            lambda tx: self._store.mark_delivered(
                tx, turn.session_id, turn.seq, message_id=message_id, now=now
            )
        )

    async def mark_undeliverable(self, turn: ConversationTurn, reason: str) -> None:
        """Record that Telegram refused ``turn``'s reply for good (``reason``): never resent."""
        await self._db.write(
            lambda tx: self._store.mark_undeliverable(tx, turn.session_id, turn.seq, error=reason)
        )

    async def undelivered(self) -> list[tuple[int, ConversationTurn]]:
        """Return ``(chat_id, turn)`` for every answered turn not yet delivered (I4)."""
        pending = []
        for turn in await self._store.undelivered_turns(self._db.reader):
            chat_id = self._sessions.chat_id_of(turn.session_id)
            if chat_id is None:
                session = await self._store.get_session(self._db.reader, turn.session_id)
                chat_id = None if session is None else session.chat_id
            if chat_id is not None:
                pending.append((chat_id, turn))
        return pending

    async def refresh_turn(self, turn: ConversationTurn) -> ConversationTurn | None:
        """Return the turn as the database has it now (``None`` once erased)."""
        return await self._store.get_turn(self._db.reader, turn.session_id, turn.seq)

    async def rewrite_stale_checkpoints(self) -> int:
        """Rewrite every checkpoint whose last write failed; return how many were rewritten.

        A failed write (disk full, directory read-only, I/O error) leaves a session's file
        behind the turn log, or missing, until the session's next turn or the next start. A
        maintenance job calls this so that the files of quiet chats heal too, once the disk
        recovers. It stops at the first write that fails again (the disk has not recovered).
        """
        self._parts.check_open()
        return await self._keeper.rewrite_stale()

    # -- what the transports ask of the lane -----------------------------------------------

    def now(self) -> datetime:
        """Return the current time by the lane's clock."""
        return self._parts.clock()

    def session_id_for_chat(self, chat_id: int) -> str | None:
        """Return the id of the chat's open session, if it has one in memory."""
        return self._sessions.session_id_for_chat(chat_id)

    def chat_jobs(self, chat_id: int) -> tuple[JobRef, ...]:
        """Return the active jobs (reminders) of the chat's open session."""
        live = self._sessions.for_chat(chat_id)
        return () if live is None else live.state.active_job_refs

    def active_jobs(self) -> list[tuple[int, JobRef]]:
        """Return ``(chat_id, job)`` for every active job of every open session."""
        return self._sessions.active_jobs()

    # -- managing sessions -----------------------------------------------------------------

    async def new_session(self, chat_id: int) -> SessionSwitch | None:
        """Close the chat's open session; its open to-dos and reminders go on in a fresh one.

        The chat's open to-dos and commitments and its scheduled reminders belong to the chat,
        not the session: when there are any, the fresh session opens at once with a bot-side
        first turn that carries them (a ``carry`` :class:`~agent.memory.schemas.SessionControl`
        and the jobs as its job refs), committed in the transaction that closes the old
        session, so a crash loses or doubles none of them, and the fresh session's state is
        the fold of its own log (I6). Otherwise the chat's next message opens it.

        Returns:
            What was closed and carried, or ``None`` if the chat had no open session.
        """
        return await self._lifecycle.new_session(chat_id)

    async def resume_session(self, chat_id: int, session_id: str) -> SessionSwitch:
        """Make an earlier session of the chat its open one again (``/resume``).

        The open session (if any) is closed; the earlier one comes back with its state, turns
        and summaries as they were, except that the chat's open to-dos, commitments and
        reminders are those of the session just closed (a ``carry`` turn records them when
        they differ from what the earlier session had: it may list some since done or carried
        on). So resuming neither loses nor doubles them. All of it commits in one transaction.

        Args:
            chat_id: the chat.
            session_id: one of its closed sessions.

        Returns:
            What was closed, reopened and carried.

        Raises:
            SessionNotFound: the chat has no closed session with this id.
        """
        return await self._lifecycle.resume_session(chat_id, session_id)

    async def clear_session(self, chat_id: int) -> int | None:
        """Take the open session's turns so far out of its context packet (``/clear``).

        A bot-side ``clear`` turn records it (the state fold reads it, I6): the turns stay in
        the log and ``/recall`` finds them; the open to-dos, commitments and reminders stay.

        Returns:
            How many turns left the packet (0: none since the last clear), or ``None`` if the
            chat has no open session.
        """
        return await self._lifecycle.clear_session(chat_id)

    async def forget_session(self, session_id: str) -> bool:
        """Erase a session everywhere, with the long-term memories that came only from it.

        Its row, turns, summary versions, full-text index entries and checkpoint file go
        (a model summary still running for it is cancelled); so do memories that no other
        session of the chat stated. The write-ahead log is then emptied into the database
        file, whose freed pages hold zeros: no byte of the text stays on disk.

        Returns:
            Whether the session existed.
        """
        return await self._lifecycle.forget_session(session_id)

    async def prune(self, *, older_than_days: float) -> list[str]:
        """Erase every session idle for ``older_than_days``; return their ids."""
        return await self._lifecycle.prune(older_than_days=older_than_days)

    # -- long-term memory ------------------------------------------------------------------

    async def remember(self, chat_id: int, text: str, attribute: str = "note") -> Memory:
        """Keep ``text`` verbatim as a note (``/remember``; seed 003's manual promotion), or as
        ``attribute`` (``/timezone``): active at once, no session's erasure takes it.

        Raises:
            ValueError: ``text`` is empty or longer than
                :data:`~agent.memory.lane_parts.memory_commands.MAX_NOTE_CHARS`.
        """
        return await self._memory.remember(chat_id, text, attribute)

    async def confirm_memory(self, chat_id: int, memory_id: str) -> Memory | None:
        """Make an unconfirmed memory of the chat active (``/facts confirm N``).

        Returns:
            The memory, or ``None`` if the chat has no such current memory.
        """
        return await self._memory.confirm(chat_id, memory_id)

    async def forget_memories(self, chat_id: int, memory_ids: Sequence[str]) -> list[Memory]:
        """Erase memories of the chat at once, with their history, relations and what was
        said about them (``/facts forget N``, "forget that ...").

        The rows go from the tables and the full-text index (rewritten whole, as for
        ``/forget``), and the write-ahead log is emptied into the database file, whose freed
        pages hold zeros. Personal chats keep no facts in session states or checkpoints (they
        live in long-term memory only), so nothing else holds them.

        Returns:
            The current memories erased (empty if none matched).
        """
        return await self._memory.forget(chat_id, memory_ids)

    async def consolidate_memories(self) -> ConsolidationReport:
        """Decay, archive and merge long-term memories (the scheduled consolidation job).

        One write transaction (see :meth:`MemoryConsolidator.consolidate`); afterwards the
        packets of loaded chats carry the memories as they now are.
        """
        self._parts.check_open()
        return await self._memory.consolidate()
