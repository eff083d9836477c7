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
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal, Protocol

from agent.db import Database
from agent.errors import CheckpointError, SessionNotFound, StorageError
from agent.memory.conversation_checkpoint import CheckpointWriter
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_retriever import ConversationRetriever
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_store import (
    ConversationStore,
    SqliteConversationStore,
    TurnEdit,
)
from agent.memory.live_sessions import DEFAULT_RESIDENT, LiveSession, LiveSessions
from agent.memory.longterm.chat_memories import ChatMemories
from agent.memory.longterm.memory_consolidator import ConsolidationReport, MemoryConsolidator
from agent.memory.longterm.memory_slots import USER, attribute_of, fact_key
from agent.memory.longterm.memory_store import MemoryStore, SqliteMemoryStore
from agent.memory.ops.checkpoint_audit import CheckpointAudit
from agent.memory.rules.dialogue_acts import UNRETRIEVED_REPLY_INTENTS
from agent.memory.rules.session_rules import CARRIED_LOOP_KINDS, PERSONAL_CHAT_TYPES
from agent.memory.schemas import (
    CheckpointTurn,
    ConversationCheckpointSnapshot,
    ConversationContextPacket,
    ConversationSession,
    ConversationTurn,
    InboundMessage,
    JobRef,
    Memory,
    MemoryCandidate,
    OpenLoop,
    Reply,
    RetrievedItem,
    SessionControl,
    SessionState,
    SummaryVersion,
    dump_json,
    utc_now,
)
from agent.memory.summary_store import SqliteSummaryStore, SummaryStore
from agent.memory.summary_worker import SummaryWorker
from agent.memory.writer import (
    PromotionPolicy,
    memory_candidates,
    write_conversation_turn,
    write_if_worthy,
    write_summary_version,
)
from agent.utils import ids

__all__ = [
    "MAX_NOTE_CHARS",
    "ChatSession",
    "ConversationLane",
    "EditOutcome",
    "HydrationReport",
    "ReplyEngine",
    "SaveReport",
    "SessionSwitch",
    "TurnResult",
]

logger = logging.getLogger(__name__)

# Checkpoint files written at once at start and stop (each is a thread doing an fsync).
_CHECKPOINT_CONCURRENCY = 16
# Long-term memories of a chat kept at hand for its packets: current, and recently superseded.
_MEMORIES_PER_CHAT = 20
_PAST_MEMORIES_PER_CHAT = 8
#: The longest note ``/remember`` keeps.
MAX_NOTE_CHARS = 1000
# Statuses that record the process's lifecycle, not the fold: an edit leaves them as they are.
_LIFECYCLE = frozenset({"resuming", "paused", "shutdown_clean"})

#: What :meth:`ConversationLane.on_edit` did with an edited message: ``edited`` (the turn
#: has the new text and the state follows), ``unchanged`` (same text: nothing to do),
#: ``unknown`` (the message is no turn: never one, or erased), ``duplicate`` (the edit's
#: update was applied already, I3).
EditOutcome = Literal["edited", "unchanged", "unknown", "duplicate"]


class ReplyEngine(Protocol):
    """**Protocol:** the engine that answers a message: the rule-based concierge, or a model.

    Called by :meth:`ConversationLane.on_turn` (so by the Telegram adapter and the terminal
    mode) once for every message that wants a reply, with the session's packet as it stood
    *before* the message. The reply's text, intent, action name, job refs and the memories it
    asks to forget are recorded with the turn. It sees the packet, never the database.
    """

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        """Return the reply to ``message``; ``Reply(text=None)`` to stay silent."""
        ...


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What :meth:`ConversationLane.on_turn` did with a message.

    Attributes:
        turn: the committed turn (for a duplicate: the turn recorded the first time).
        packet: the packet the reply engine saw; ``None`` when no engine was asked (a
            duplicate, or a message kept without an answer).
        duplicate: the message's update was already a turn, nothing new was written (I3).
    """

    turn: ConversationTurn
    packet: ConversationContextPacket | None
    duplicate: bool = False

    @property
    def needs_delivery(self) -> bool:
        """Whether the turn has a reply that has not been sent yet."""
        return self.turn.status == "answered"


@dataclass(slots=True)
class HydrationReport:
    """What :meth:`ConversationLane.hydrate` found and repaired.

    Attributes:
        sessions: open sessions hydrated.
        rebuilt: session id -> why its checkpoint was rebuilt from the database.
        orphans_removed: checkpoint files of sessions no longer in the database, deleted.
        undelivered: turns answered but never delivered, to be sent now (I4).
    """

    sessions: int = 0
    rebuilt: dict[str, str] = field(default_factory=dict)
    orphans_removed: list[str] = field(default_factory=list)
    undelivered: list[ConversationTurn] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SessionSwitch:
    """What :meth:`ConversationLane.new_session` or :meth:`ConversationLane.resume_session` did.

    Attributes:
        closed: the session closed (``None``: the chat had none open).
        opened: the session open now (``None``: the chat's next message opens a fresh one).
        loops: the open to-dos and commitments carried into ``opened``.
        jobs: the scheduled reminders carried into ``opened``.
    """

    closed: str | None
    opened: str | None = None
    loops: tuple[OpenLoop, ...] = ()
    jobs: tuple[JobRef, ...] = ()


@dataclass(frozen=True, slots=True)
class ChatSession:
    """One session of a chat as ``/sessions`` lists it.

    Attributes:
        number: its place among the chat's sessions, oldest first, from 1.
        session_id: its id.
        started: when it was opened.
        last_active: its last turn (or when it was closed).
        turns: how many turns it has.
        first_words: its first user message ("" if none).
        current: whether it is the chat's open session.
    """

    number: int
    session_id: str
    started: datetime
    last_active: datetime
    turns: int
    first_words: str
    current: bool


@dataclass(frozen=True, slots=True)
class SaveReport:
    """Where a chat's open session stands on disk (``/save``).

    Attributes:
        session_id: the session.
        turns: the turns committed.
        last_commit: when the last of them was committed (``None``: none yet).
        checkpoint_written: when its checkpoint file was last written (``None``: not written).
    """

    session_id: str
    turns: int
    last_commit: datetime | None
    checkpoint_written: datetime | None


def _chat_items(state: SessionState) -> tuple[tuple[OpenLoop, ...], tuple[JobRef, ...]]:
    """Return what of a session belongs to its chat: open to-dos and commitments, and jobs."""
    loops = tuple(lp for lp in state.open_loops if lp.kind in CARRIED_LOOP_KINDS)
    return loops, state.active_job_refs


def _same_items(state: SessionState, loops: Sequence[OpenLoop], jobs: Sequence[JobRef]) -> bool:
    """Whether a session already has exactly these to-dos, commitments and jobs."""
    mine, my_jobs = _chat_items(state)

    def said(items: Sequence[OpenLoop]) -> list[tuple[str, str, str | None]]:
        return [(lp.kind, lp.text, lp.owner) for lp in items]

    return said(mine) == said(loops) and tuple(my_jobs) == tuple(jobs)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _carry_text(loops: Sequence[OpenLoop], jobs: Sequence[JobRef]) -> str:
    parts = [_plural(len(loops), "open to-do")] if loops else []
    parts += [_plural(len(jobs), "reminder")] if jobs else []
    return "Carried into this conversation: " + (" and ".join(parts) or "nothing open") + "."


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
            (see :mod:`agent.memory.live_sessions`).
        clock: returns the current time (tests pass a fixed clock).
    """

    def __init__(
        self,
        db: Database,
        checkpoints: CheckpointWriter,
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
        self.db = db
        self.checkpoints = checkpoints
        self.store: ConversationStore = store or SqliteConversationStore()
        self.states = state_manager or ConversationStateManager()
        self.builder = builder or ConversationContextBuilder()
        self.memory_store: MemoryStore = memory_store or SqliteMemoryStore()
        self.promotion = promotion or PromotionPolicy()
        self.summary_store: SummaryStore = summary_store or SqliteSummaryStore()
        self.summary_worker = summary_worker
        self.retriever = retriever or ConversationRetriever(
            self.store, self.memory_store, summary_store=self.summary_store
        )
        self.consolidator = consolidator or MemoryConsolidator(self.memory_store)
        self._clock = clock
        # Long-term memories per chat, most important first (what packets carry).
        self._memories = ChatMemories(
            self.memory_store,
            per_chat=_MEMORIES_PER_CHAT,
            past=_PAST_MEMORIES_PER_CHAT,
            chats=resident_sessions,
        )
        self._chat_locks: defaultdict[int, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._sessions = LiveSessions(
            recent_turns=self.builder.recent_turns,
            busy=self._busy,
            resident=resident_sessions,
        )
        self._hydrated = False
        self._closed = False
        # Why checkpoint writes fail, while they do (logged once, not once per turn).
        self._checkpoint_failure: str | None = None

    # -- start -----------------------------------------------------------------------------

    async def hydrate(self) -> HydrationReport:
        """Load every open session, check its checkpoint, and mark it ``resuming``.

        The PRD-014 start-up sequence: the state and last turns of each open session come from
        the database (through indexes: the cost does not depend on the history's length); a
        checkpoint that is missing, unreadable, of an unknown version, or not at the database's
        turn is rewritten from the database with a warning (I5). Checkpoint files of sessions
        the database no longer has are deleted (an erasure a crash interrupted). Sessions are
        read a page at a time and all but the most recently active are held packed
        (:mod:`agent.memory.live_sessions`); a chat's long-term memories are read at its first
        packet.

        Raises:
            RuntimeError: called twice, or after :meth:`shutdown`.
        """
        self._check_open()
        if self._hydrated:
            raise RuntimeError("ConversationLane.hydrate() was already called")
        self._hydrated = True
        report = HydrationReport()
        try:
            self.checkpoints.make_private()
        except OSError as exc:  # I5: the log has every turn; the files are rewritten later
            logger.error("checkpoint directory %s unusable: %s", self.checkpoints.directory, exc)
        self.checkpoints.remove_temp_files()
        now = self._clock()
        await self.db.write(lambda tx: self.store.set_status(tx, "resuming", now=now))
        if self.summary_worker is not None:
            await self.summary_worker.initialize()
        stale: list[str] = []
        # A page of sessions at a time: a bot with many chats never holds all as objects.
        async for sessions in self.store.open_session_pages(self.db.reader):
            page = [session.session_id for session in sessions]
            if self.summary_worker is not None:
                await self.summary_worker.initialize(page)
            recent = await self.store.recent_turns_of(
                self.db.reader, page, self.builder.recent_turns
            )
            for session in sessions:
                live = self._sessions.new(session, recent[session.session_id])
                problem = await self._checkpoint_problem(live)
                self._sessions.add(live)
                report.sessions += 1
                if problem is None:
                    continue
                logger.warning(
                    "checkpoint of session %s %s; rebuilt from the turn log",
                    session.session_id,
                    problem,
                )
                report.rebuilt[session.session_id] = problem
                stale.append(session.session_id)
        await _bounded_gather(self._rewrite_checkpoint(sid) for sid in stale)
        report.orphans_removed = await self._remove_orphan_checkpoints()
        report.undelivered = await self.store.undelivered_turns(self.db.reader)
        logger.info(
            "hydrated %d sessions (%d checkpoints rebuilt, %d undelivered replies)",
            report.sessions,
            len(report.rebuilt),
            len(report.undelivered),
        )
        return report

    def _busy(self, chat_id: int) -> bool:
        lock = self._chat_locks.get(chat_id)
        return lock is not None and lock.locked()

    async def _checkpoint_problem(self, live: LiveSession) -> str | None:
        # At hydration the session row holds the state the lane starts from (live.state).
        check = await CheckpointAudit(
            self.checkpoints, self.store, recent_turns=self.builder.recent_turns
        ).check(live.session)
        if check.verdict != "matches" or check.snapshot is None:
            return check.detail
        live.checkpoint_status = check.snapshot.state.status
        return None

    async def _remove_orphan_checkpoints(self) -> list[str]:
        on_disk = self.checkpoints.session_ids()
        if not on_disk:
            return []
        known = await self.store.existing_session_ids(self.db.reader, on_disk)
        orphans = [sid for sid in on_disk if sid not in known]
        for sid in orphans:
            logger.warning("checkpoint of session %s has no session in the database; deleted", sid)
            await self.checkpoints.delete(sid)
        return orphans

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
        self._check_open()
        async with self._chat_locks[message.chat_id]:
            self._check_open()
            if message.update_id is not None:
                known = await self.store.turn_for_update(
                    self.db.reader, message.bot_id, message.update_id
                )
                if known is not None:
                    return TurnResult(turn=known, packet=None, duplicate=True)
            live, is_new = await self._session_for(message)
            try:
                return await self._answer(live, is_new, message, engine)
            except StorageError:
                if is_new or not await self._erased_elsewhere(live):
                    raise
            # The session was erased by another process (agent-memory forget or prune):
            # the message starts the chat's next session, as after /forget.
            live, is_new = await self._session_for(message)
            return await self._answer(live, is_new, message, engine)

    async def _answer(
        self, live: LiveSession, is_new: bool, message: InboundMessage, engine: ReplyEngine
    ) -> TurnResult:
        if not message.wants_reply:  # kept without an answer: no engine, no packet
            return await self._commit_turn(live, is_new, message, Reply(), None)
        # Retrieval reads the database with the new message, before the engine runs.
        packet = await self._packet_for(live, message.text, is_new=is_new)
        reply = await engine.reply(packet, message)
        return await self._commit_turn(live, is_new, message, reply, packet)

    async def _erased_elsewhere(self, live: LiveSession) -> bool:
        """Whether a live session is gone from the database; if so, let go of it."""
        sid = live.session.session_id
        if await self.store.existing_session_ids(self.db.reader, [sid]):
            return False
        logger.warning(
            "session %s of chat %s was erased by another process; the chat starts a new one",
            sid,
            live.session.chat_id,
        )
        self._forget_live(sid)
        self._memories.drop(live.session.chat_id)  # those only it stated went with it
        return True

    async def complete_job(self, chat_id: int, job_id: str, text: str) -> TurnResult | None:
        """Record a due job (a reminder firing) as a bot turn that closes its job ref.

        The turn carries the job ref with status ``done``, so the job leaves the session's
        active jobs in the same commit that records the message: a job fires once, even across
        a crash and restart (the reply is then delivered as any undelivered turn, I4).

        Args:
            chat_id: the chat whose session holds the job.
            job_id: the job's id.
            text: the message the bot sends (e.g. the reminder).

        Returns:
            The turn to deliver, or ``None`` if the job is no longer active (already fired,
            cancelled, or its session closed or erased).
        """
        self._check_open()
        async with self._chat_locks[chat_id]:
            self._check_open()
            live = self._sessions.for_chat(chat_id)
            job = None
            if live is not None:
                job = next((j for j in live.state.active_job_refs if j.job_id == job_id), None)
            if live is None or job is None:
                return None
            if await self._erased_elsewhere(live):  # its jobs went with it
                return None
            message = InboundMessage(
                chat_id=chat_id, text="", chat_type=live.session.chat_type, speaker="scheduler"
            )
            reply = Reply(
                text=text,
                intent=f"{job.kind}_due",
                action_name=f"{job.kind}_fired",
                job_refs=(job.model_copy(update={"status": "done"}),),
            )
            return await self._commit_turn(live, False, message, reply, None)

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
        self._check_open()
        if message.message_id is None:
            return "unknown"
        async with self._chat_locks[message.chat_id]:
            self._check_open()
            reader = self.db.reader
            if message.update_id is not None and await self.store.edit_known(
                reader, message.bot_id, message.update_id
            ):
                return "duplicate"
            turn = await self.store.turn_for_message(
                reader, message.bot_id, message.chat_id, message.message_id
            )
            if turn is None:
                logger.debug("edit of message %s, which is no turn: ignored", message.message_id)
                return "unknown"
            if turn.user_text == message.text:
                logger.debug("edit of turn %s leaves its text as it was", turn.seq)
                return "unchanged"
            return await self._commit_edit(turn, message)

    async def _commit_edit(self, turn: ConversationTurn, message: InboundMessage) -> EditOutcome:
        # Runs under the chat's lock: no turn of the chat is committed meanwhile.
        sid = turn.session_id
        session = await self.store.get_session(self.db.reader, sid)
        if session is None:
            return "unknown"
        live = self._sessions.get(sid)
        current = live.state if live is not None else session.state
        edited = turn.model_copy(update={"user_text": message.text})
        state, folds = await self._refold(session, edited)
        if current.status in _LIFECYCLE:
            state = state.model_copy(update={"status": current.status})
        candidates = (
            memory_candidates(edited, self.promotion)
            if session.chat_type in PERSONAL_CHAT_TYPES
            and turn.intent not in UNRETRIEVED_REPLY_INTENTS
            else []
        )
        now = self._clock()

        async def commit(tx: Any) -> EditOutcome:
            # The session may have moved on in another process (erased, or written to).
            row = await self.store.get_session(tx, sid)
            if row is None or row.turn_count != state.turn_count:
                return "unknown"
            if not await self.store.edit_turn(
                tx,
                sid,
                turn.seq,
                text=message.text,
                previous_text=turn.user_text,
                edited_at=message.received_at,
                bot_id=message.bot_id,
                update_id=message.update_id,
            ):
                return "duplicate"
            await self.store.save_state(tx, state, last_seq=state.turn_count, now=now)
            for fold in folds:  # I6: the chain's texts are those of the fold of the log
                await self.summary_store.revise_extractive(
                    tx,
                    sid,
                    version=fold.summary_version,
                    text=fold.rolling_summary,
                    delta=fold.last_summary_delta,
                )
            # What the message said before is no evidence any more; what it says now is.
            await self.memory_store.remove_sources(tx, sid, turn.seq)
            if candidates:
                await write_if_worthy(
                    tx,
                    self.memory_store,
                    session.chat_id,
                    candidates,
                    session_id=sid,
                    seq=turn.seq,
                    now=now,
                    policy=self.promotion,
                )
            return "edited"

        outcome = await self.db.write(commit)
        if outcome != "edited":
            return outcome
        logger.debug("turn %s of session %s edited", turn.seq, sid)
        self._memories.drop(session.chat_id)  # reloaded, corrected, at the next packet
        if live is None:
            # A closed session (or one not loaded): its file is written from the database.
            audit = CheckpointAudit(
                self.checkpoints, self.store, recent_turns=self.builder.recent_turns
            )
            try:
                await audit.repair(self.db, sid)
            except CheckpointError as exc:
                logger.warning("checkpoint of session %s not rewritten after an edit: %s", sid, exc)
            return outcome
        live.state = state
        for index, kept in enumerate(live.recent):
            if kept.seq == turn.seq:
                live.recent[index] = edited
        await self._save_checkpoint(live)
        if self.summary_worker is not None and folds:
            # The model summaries of the versions folded again were of the old text.
            self.summary_worker.forget(sid)
            self.summary_worker.schedule(sid)
        return outcome

    async def _refold(
        self, session: ConversationSession, edited: ConversationTurn
    ) -> tuple[SessionState, list[SessionState]]:
        """Fold a session's turn log with ``edited`` in place of its turn.

        Returns:
            The state after the last turn, and the state after each fold of the summary made
            at or after the edited turn (those whose chain rows change).
        """
        state = SessionState(session_id=session.session_id, chat_type=session.chat_type)
        folds: list[SessionState] = []
        async for turn in self.store.iter_turns(self.db.reader, session.session_id):
            after = self.states.apply(state, edited if turn.seq == edited.seq else turn)
            if turn.seq >= edited.seq and after.summary_version != state.summary_version:
                folds.append(after)
            state = after
        return state, folds

    async def edit_history(self, session_id: str, seq: int) -> list[TurnEdit]:
        """Return the texts a turn's message had before its edits, oldest first."""
        return await self.store.turn_edits(self.db.reader, session_id, seq)

    async def _commit_turn(
        self,
        live: LiveSession,
        is_new: bool,
        message: InboundMessage,
        reply: Reply,
        packet: ConversationContextPacket | None,
        *,
        control: SessionControl | None = None,
        prelude: Callable[[Any], Awaitable[object]] | None = None,
    ) -> TurnResult:
        # Runs under the chat's lock: commit the turn and its state, then the checkpoint.
        # A session command's turn (control) records its reply without delivering it (the
        # command answered), and ``prelude`` runs first in its transaction (closing and
        # reopening sessions commit with the turn that carries the chat's open items).
        now = self._clock()
        turn = ConversationTurn(
            turn_id=ids.turn_id(),
            session_id=live.session.session_id,
            seq=live.state.turn_count + 1,
            user_text=message.text,
            assistant_text=reply.text or None,
            intent=reply.intent,
            action_name=reply.action_name,
            job_refs=reply.job_refs,
            created_at=now,
            status="answered" if reply.text and control is None else "recorded",
            bot_id=message.bot_id,
            update_id=message.update_id,
            user_id=message.user_id,
            speaker=message.speaker,
            message_id=message.message_id,
            control=control,
        )
        before = live.state
        state = self.states.apply(before, turn)
        session = live.session
        # Long-term memory is per chat and read from private talk only: in a group, "my name
        # is" speaks for one member, not for the chat. A turn answered with help or an error
        # text ("I didn't understand") promotes nothing: the reply said nothing was noted; nor
        # does a request to forget ("forget that my sister lives in Porto"), which erases.
        personal = session.chat_type in PERSONAL_CHAT_TYPES
        candidates = (
            memory_candidates(turn, self.promotion)
            if personal and turn.intent not in UNRETRIEVED_REPLY_INTENTS
            else []
        )
        forget = reply.forget_memories if personal else ()
        promoted: list[Memory] = []
        erased: list[Memory] = []
        # Seed 003: a memory retrieved into the packet the engine answered with was accessed.
        accessed = [i.ref for i in packet.retrieved if i.kind == "memory"] if packet else []

        async def commit(tx: Any) -> ConversationTurn | None:
            # I3, authoritative inside the transaction: the update may have become a turn
            # (through another path) since the check in on_turn.
            if message.update_id is not None:
                known = await self.store.turn_for_update(tx, message.bot_id, message.update_id)
                if known is not None:
                    return known
            if prelude is not None:
                await prelude(tx)
            if is_new:
                await self.store.create_session(
                    tx,
                    session_id=session.session_id,
                    chat_id=session.chat_id,
                    chat_type=session.chat_type,
                    user_id=session.user_id,
                    title=session.title,
                    now=now,
                )
            await write_conversation_turn(tx, self.store, turn, state, now=now)
            # The summary version the fold made commits with its turn (I6: never apart).
            await write_summary_version(tx, self.summary_store, before, state, now=now)
            if candidates:
                promoted[:] = await write_if_worthy(
                    tx,
                    self.memory_store,
                    session.chat_id,
                    candidates,
                    session_id=session.session_id,
                    seq=turn.seq,
                    now=now,
                    policy=self.promotion,
                )
            if forget:  # erased at once, in the transaction of the turn that asked
                erased[:] = await self._erase_memories(tx, session.chat_id, forget)
            if accessed:
                await self.memory_store.touch(tx, accessed, now=now)
            return None

        known = await self.db.write(commit)
        if known is not None:
            return TurnResult(turn=known, packet=None, duplicate=True)
        if is_new:
            self._sessions.add(live)
        if promoted or erased:  # superseded, added or erased: read the chat's memories again
            await self._memories.load(self.db.reader, [session.chat_id])
        if erased:
            await self._truncate_wal()
        live.state = state
        live.recent.append(turn)
        await self._save_checkpoint(live)
        folded = state.summary_version != before.summary_version
        # A /clear's version is empty and summarises nothing the packet shows.
        if self.summary_worker is not None and folded and control is None:
            self.summary_worker.schedule(session.session_id)  # after the commit, never inside
        return TurnResult(turn=turn, packet=packet)

    async def _session_for(self, message: InboundMessage) -> tuple[LiveSession, bool]:
        live = self._sessions.for_chat(message.chat_id)
        if live is not None:
            return live, False
        session = await self.store.open_session_for_chat(self.db.reader, message.chat_id)
        if session is not None:
            recent = await self.store.recent_turns(
                self.db.reader, session.session_id, self.builder.recent_turns
            )
            live = self._sessions.new(session, recent)
            self._sessions.add(live)
            return live, False
        now = self._clock()
        sid = ids.session_id()
        session = ConversationSession(
            session_id=sid,
            chat_id=message.chat_id,
            chat_type=message.chat_type,
            user_id=message.user_id,
            title=message.chat_title or message.speaker,
            created_at=now,
            updated_at=now,
            state=SessionState(session_id=sid, chat_type=message.chat_type),
        )
        # A new session enters memory only once its first turn is committed (on_turn): if the
        # engine or the commit fails, the chat's next message must not find a session that the
        # database does not have.
        return self._sessions.new(session), True

    async def mark_delivered(self, turn: ConversationTurn, message_id: int) -> None:
        """Record that ``turn``'s reply was sent as Telegram message ``message_id`` (step 3)."""
        now = self._clock()
        await self.db.write(
            lambda tx: self.store.mark_delivered(
                tx, turn.session_id, turn.seq, message_id=message_id, now=now
            )
        )

    async def mark_undeliverable(self, turn: ConversationTurn, reason: str) -> None:
        """Record that Telegram refused ``turn``'s reply for good (``reason``): never resent."""
        await self.db.write(
            lambda tx: self.store.mark_undeliverable(tx, turn.session_id, turn.seq, error=reason)
        )

    def _snapshot(
        self, live: LiveSession, pending_summary_delta: str = ""
    ) -> ConversationCheckpointSnapshot:
        state = live.state
        return ConversationCheckpointSnapshot(
            session_id=state.session_id,
            chat_id=live.session.chat_id,
            state=state,
            recent_turns=tuple(CheckpointTurn.of(turn) for turn in live.recent),
            pending_summary_delta=pending_summary_delta,
            written_at=self._clock(),
        )

    async def _save_checkpoint(self, live: LiveSession, pending_summary_delta: str = "") -> None:
        state = live.state
        snapshot = self._snapshot(live, pending_summary_delta)
        try:
            await self.checkpoints.write(snapshot)
        except CheckpointError as exc:
            # I5: the turn log stays the source of truth; rewrite_stale_checkpoints, the
            # session's next turn or the next start rewrites the file.
            live.checkpoint_status = None
            if self._checkpoint_failure is None:  # one line per outage, not one per turn
                logger.error(
                    "checkpoint of session %s not written, the turn log has the turn: %s "
                    "(checkpoints are rewritten once they can be)",
                    state.session_id,
                    exc,
                )
            else:
                logger.debug("checkpoint of session %s not written: %s", state.session_id, exc)
            self._checkpoint_failure = str(exc)
        else:
            live.checkpoint_status = state.status
            if self._checkpoint_failure is not None:
                logger.warning(
                    "checkpoints are written again (they failed with: %s)", self._checkpoint_failure
                )
                self._checkpoint_failure = None

    async def rewrite_stale_checkpoints(self) -> int:
        """Rewrite every checkpoint whose last write failed; return how many were rewritten.

        A failed write (disk full, directory read-only, I/O error) leaves a session's file
        behind the turn log, or missing, until the session's next turn or the next start. A
        maintenance job calls this so that the files of quiet chats heal too, once the disk
        recovers. It stops at the first write that fails again (the disk has not recovered).
        """
        self._check_open()
        rewritten = 0
        for sid in self._sessions.unwritten():
            written = await self._rewrite_checkpoint(sid)
            if written is False:
                break
            if written:
                rewritten += 1
        return rewritten

    async def _rewrite_checkpoint(self, session_id: str) -> bool | None:
        # Whether the file of a session whose checkpoint is not written got written; None if
        # there was nothing to do. Under the chat's lock: the session stays an object meanwhile.
        chat_id = self._sessions.chat_id_of(session_id)
        if chat_id is None:
            return None
        async with self._chat_locks[chat_id]:
            self._check_open()
            # A turn of the chat may have written it, or closed the session, meanwhile.
            live = self._sessions.get(session_id)
            if live is None or live.checkpoint_status is not None:
                return None
            await self._save_checkpoint(live)
            return live.checkpoint_status is not None

    # -- reading ---------------------------------------------------------------------------

    async def packet(self, chat_id: int) -> ConversationContextPacket | None:
        """Return the chat's packet from what the lane holds, without retrieval.

        The state, last turns, memories and summaries, as a turn's packet has them but with no
        retrieved items (those depend on the next message: see :meth:`context`). ``None`` for
        an unknown chat.
        """
        live = self._sessions.for_chat(chat_id)
        return None if live is None else await self._packet(live)

    async def context(
        self, chat_id: int, text: str | None = None
    ) -> ConversationContextPacket | None:
        """Return the packet a message ``text`` would get now, retrieval included.

        Without ``text`` (``/memory``: the next message is not known yet) the retrieval query
        is the chat's last message, and the active topics as always. Nothing is written.

        Returns:
            The packet, or ``None`` for a chat with no open session.
        """
        live = self._sessions.for_chat(chat_id)
        if live is None:
            return None
        if text is None:
            text = live.recent[-1].user_text if live.recent else ""
        return await self._packet_for(live, text, is_new=False)

    async def recall(self, chat_id: int, words: str, limit: int = 5) -> list[RetrievedItem]:
        """Search the chat's open session and memories for ``words``, best first (``/recall``).

        The same retriever and scores as a turn's packet, over every turn of the session
        (the latest included) and the chat's long-term memories.
        """
        live = self._sessions.for_chat(chat_id)
        if live is None or limit < 1:
            return []
        recall = partial(
            self.retriever.recall,
            chat_id=chat_id,
            session_id=live.session.session_id,
            words=words,
            now=self._clock(),
            state=live.state,
        )
        return (await self.db.read(recall))[:limit]

    async def _packet_for(
        self, live: LiveSession, text: str, *, is_new: bool
    ) -> ConversationContextPacket:
        # The raw turns the packet carries anyway are no candidates; a session not committed
        # yet has no turns to search, but its chat may have memories.
        # One hand-over to the searcher's thread for every statement (Database.read).
        retrieve = partial(
            self.retriever.for_packet,
            chat_id=live.session.chat_id,
            session_id=None if is_new else live.session.session_id,
            text=text,
            now=self._clock(),
            state=live.state,
            recent_turns=self.builder.recent_turns,
            token_budget=self.builder.token_budget,
        )
        return await self._packet(live, await self.db.read(retrieve))

    async def _packet(
        self, live: LiveSession, retrieved: Sequence[RetrievedItem] = ()
    ) -> ConversationContextPacket:
        memories = await self.chat_memories(live.session.chat_id)
        cleared = live.state.cleared_through
        # /clear: the turns up to it stay in the log, not in the packet (the state says where).
        recent = [turn for turn in live.recent if turn.seq > cleared]
        # The model's summary rides along, not in the state (I6), when the budget has room.
        worker = self.summary_worker
        session_id = live.session.session_id
        llm_summary = "" if worker is None else worker.latest_text(session_id, after_seq=cleared)
        return self.builder.build(
            live.state,
            recent,
            now=self._clock(),
            memories=memories,
            retrieved=retrieved,
            llm_summary=llm_summary,
        )

    def now(self) -> datetime:
        """Return the current time by the lane's clock."""
        return self._clock()

    def session_id_for_chat(self, chat_id: int) -> str | None:
        """Return the id of the chat's open session, if it has one in memory."""
        return self._sessions.session_id_for_chat(chat_id)

    def checkpoint_bytes(self, session_id: str) -> bytes:
        """Return the checkpoint JSON of an open session, as its file holds it (for exports).

        Raises:
            SessionNotFound: the session is not open in this lane.
        """
        live = self._sessions.get(session_id)
        if live is None:
            raise SessionNotFound(f"session {session_id} is not open")
        return dump_json(self._snapshot(live), indent=True)

    def active_jobs(self) -> list[tuple[int, JobRef]]:
        """Return ``(chat_id, job)`` for every active job of every open session."""
        return self._sessions.active_jobs()

    async def history(self, chat_id: int, limit: int) -> list[ConversationTurn]:
        """Return the last ``limit`` turns of the chat's open session, oldest first."""
        sid = self._sessions.session_id_for_chat(chat_id)
        if sid is None or limit < 1:
            return []
        return await self.store.recent_turns(self.db.reader, sid, limit)

    async def undelivered(self) -> list[tuple[int, ConversationTurn]]:
        """Return ``(chat_id, turn)`` for every answered turn not yet delivered (I4)."""
        pending = []
        for turn in await self.store.undelivered_turns(self.db.reader):
            chat_id = self._sessions.chat_id_of(turn.session_id)
            if chat_id is None:
                session = await self.store.get_session(self.db.reader, turn.session_id)
                chat_id = None if session is None else session.chat_id
            if chat_id is not None:
                pending.append((chat_id, turn))
        return pending

    async def refresh_turn(self, turn: ConversationTurn) -> ConversationTurn | None:
        """Return the turn as the database has it now (``None`` once erased)."""
        return await self.store.get_turn(self.db.reader, turn.session_id, turn.seq)

    async def summary_history(
        self, session_id: str, *, limit: int | None = None
    ) -> list[SummaryVersion]:
        """Return a session's summary version chain, oldest first (for audits and tools).

        Args:
            session_id: the session.
            limit: only the newest this many versions.
        """
        return await self.summary_store.history(self.db.reader, session_id, limit=limit)

    async def rebuild_state(self, session_id: str) -> SessionState:
        """Fold a session's whole turn log into its state (I6; reads every turn).

        Raises:
            SessionNotFound: no such session.
        """
        session = await self.store.get_session(self.db.reader, session_id)
        if session is None:
            raise SessionNotFound(f"no session {session_id}")
        return await self.states.rebuild(
            session_id,
            self.store.iter_turns(self.db.reader, session_id),
            chat_type=session.chat_type,
        )

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
        self._check_open()
        async with self._chat_locks[chat_id]:
            self._check_open()
            live = await self._open_live(chat_id)
            if live is None:
                return None
            old = live.session.session_id
            loops, jobs = _chat_items(live.state)
            now = self._clock()
            if not loops and not jobs:
                await self.db.write(lambda tx: self.store.close_session(tx, old, now=now))
                self._forget_live(old)
                return SessionSwitch(closed=old)
            sid = ids.session_id()
            fresh = self._sessions.new(
                live.session.model_copy(
                    update={
                        "session_id": sid,
                        "created_at": now,
                        "updated_at": now,
                        "closed_at": None,
                        "turn_count": 0,
                        "last_seq": 0,
                        "status": "active",
                        "state": SessionState(session_id=sid, chat_type=live.session.chat_type),
                    }
                )
            )
            await self._carry(fresh, True, old, loops, jobs, now=now)
            self._forget_live(old)
            return SessionSwitch(closed=old, opened=sid, loops=loops, jobs=jobs)

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
        self._check_open()
        async with self._chat_locks[chat_id]:
            self._check_open()
            target = await self.store.get_session(self.db.reader, session_id)
            if target is None or target.chat_id != chat_id or target.closed_at is None:
                raise SessionNotFound(f"chat {chat_id} has no closed session {session_id}")
            current = await self._open_live(chat_id)
            old = None if current is None else current.session.session_id
            loops, jobs = ((), ()) if current is None else _chat_items(current.state)
            recent = await self.store.recent_turns(
                self.db.reader, session_id, self.builder.recent_turns
            )
            live = self._sessions.new(target.model_copy(update={"closed_at": None}), recent)
            now = self._clock()

            async def switch(tx: Any) -> None:
                if old is not None:
                    await self.store.close_session(tx, old, now=now)
                if not await self.store.reopen_session(tx, session_id, now=now):
                    raise SessionNotFound(f"session {session_id} was reopened meanwhile")

            if _same_items(live.state, loops, jobs):
                await self.db.write(switch)
                self._sessions.add(live)
                await self._save_checkpoint(live)
            else:
                await self._carry(live, False, old, loops, jobs, now=now, prelude=switch)
            if old is not None:
                self._forget_live(old)
            if self.summary_worker is not None:
                await self.summary_worker.initialize([session_id])
            return SessionSwitch(closed=old, opened=session_id, loops=loops, jobs=jobs)

    async def _carry(
        self,
        live: LiveSession,
        is_new: bool,
        carried_from: str | None,
        loops: tuple[OpenLoop, ...],
        jobs: tuple[JobRef, ...],
        *,
        now: datetime,
        prelude: Callable[[Any], Awaitable[object]] | None = None,
    ) -> None:
        # Under the chat's lock: the carry turn, after ``prelude`` (or closing the session the
        # items come from) in its transaction; then the session is the chat's.
        session = live.session

        async def close(tx: Any) -> None:
            if carried_from is not None:
                await self.store.close_session(tx, carried_from, now=now)

        message = InboundMessage(
            chat_id=session.chat_id,
            text="",
            chat_type=session.chat_type,
            user_id=session.user_id,
        )
        reply = Reply(text=_carry_text(loops, jobs), intent="session_carried", job_refs=jobs)
        control = SessionControl(kind="carry", carried_from=carried_from, loops=loops)
        await self._commit_turn(
            live, is_new, message, reply, None, control=control, prelude=prelude or close
        )
        self._sessions.add(live)

    async def clear_session(self, chat_id: int) -> int | None:
        """Take the open session's turns so far out of its context packet (``/clear``).

        A bot-side ``clear`` turn records it (the state fold reads it, I6): the turns stay in
        the log and ``/recall`` finds them; the open to-dos, commitments and reminders stay.

        Returns:
            How many turns left the packet (0: none since the last clear), or ``None`` if the
            chat has no open session.
        """
        self._check_open()
        async with self._chat_locks[chat_id]:
            self._check_open()
            live = await self._open_live(chat_id)
            if live is None:
                return None
            cleared = live.state.turn_count - live.state.cleared_through
            if cleared == 0:
                return 0
            message = InboundMessage(
                chat_id=chat_id, text="", chat_type=live.session.chat_type, user_id=None
            )
            reply = Reply(
                text="Cleared: the earlier turns stay on file; /recall finds them.",
                intent="session_cleared",
            )
            await self._commit_turn(
                live, False, message, reply, None, control=SessionControl(kind="clear")
            )
            return cleared

    async def chat_sessions(self, chat_id: int) -> list[ChatSession]:
        """Return the chat's sessions, oldest first, numbered from 1 (``/sessions``)."""
        rows = await self.store.list_sessions(self.db.reader, limit=None, chat_id=chat_id)
        rows.sort(key=lambda row: (row.created_at, row.session_id))
        words = await self.store.first_words(self.db.reader, [row.session_id for row in rows])
        return [
            ChatSession(
                number=number,
                session_id=row.session_id,
                started=row.created_at,
                last_active=row.updated_at,
                turns=row.turn_count,
                first_words=words.get(row.session_id, ""),
                current=row.closed_at is None,
            )
            for number, row in enumerate(rows, start=1)
        ]

    def chat_jobs(self, chat_id: int) -> tuple[JobRef, ...]:
        """Return the active jobs (reminders) of the chat's open session."""
        live = self._sessions.for_chat(chat_id)
        return () if live is None else live.state.active_job_refs

    async def save_report(self, chat_id: int) -> SaveReport | None:
        """Say when the chat's open session was last committed and checkpointed (``/save``).

        Every turn is committed before its reply is sent and its checkpoint written right
        after; a checkpoint whose write failed is written again now. ``None``: no open session.
        """
        self._check_open()
        sid = self._sessions.session_id_for_chat(chat_id)
        if sid is None:
            return None
        await self._rewrite_checkpoint(sid)
        live = self._sessions.get(sid)
        if live is None:
            return None
        try:
            snapshot = await self.checkpoints.load(sid)
        except CheckpointError:
            snapshot = None
        return SaveReport(
            session_id=sid,
            turns=live.state.turn_count,
            last_commit=live.recent[-1].created_at if live.recent else None,
            checkpoint_written=None if snapshot is None else snapshot.written_at,
        )

    async def _open_live(self, chat_id: int) -> LiveSession | None:
        # The chat's open session, held (it may have been opened by another process).
        live = self._sessions.for_chat(chat_id)
        if live is not None:
            return live
        session = await self.store.open_session_for_chat(self.db.reader, chat_id)
        if session is None:
            return None
        recent = await self.store.recent_turns(
            self.db.reader, session.session_id, self.builder.recent_turns
        )
        live = self._sessions.new(session, recent)
        self._sessions.add(live)
        return live

    async def session(self, session_id: str) -> ConversationSession | None:
        """The session row of ``session_id`` (open or closed), or ``None``."""
        return await self.store.get_session(self.db.reader, session_id)

    async def forget_session(self, session_id: str) -> bool:
        """Erase a session everywhere, with the long-term memories that came only from it.

        Its row, turns, summary versions, full-text index entries and checkpoint file go
        (a model summary still running for it is cancelled); so do memories that no other
        session of the chat stated. The write-ahead log is then emptied into the database
        file, whose freed pages hold zeros: no byte of the text stays on disk.

        Returns:
            Whether the session existed.
        """
        session = await self.store.get_session(self.db.reader, session_id)

        async def erase(tx: Any) -> bool:
            deleted = await self.store.delete_session(tx, session_id)
            if deleted:
                # The full-text indexes keep tombstones next to erased text until merged.
                await self.retriever.purge(tx)
            return deleted

        deleted = await self.db.write(erase)
        await self.checkpoints.delete(session_id)
        self._forget_live(session_id)
        if session is not None:
            # Memories that came only from this session went with it.
            self._memories.drop(session.chat_id)
        await self._truncate_wal()
        return deleted

    async def prune(self, *, older_than_days: float) -> list[str]:
        """Erase every session with no activity for ``older_than_days``; return their ids."""
        cutoff = self._clock() - timedelta(days=older_than_days)

        async def erase(tx: Any) -> list[str]:
            pruned = await self.store.prune_sessions(tx, inactive_since=cutoff)
            if pruned:
                await self.retriever.purge(tx)
            return pruned

        pruned = await self.db.write(erase)
        for sid in pruned:
            await self.checkpoints.delete(sid)
            self._forget_live(sid)
        if pruned:
            await self._memories.reload(self.db.reader)
            await self._truncate_wal()
        return pruned

    async def _truncate_wal(self) -> None:
        # The write-ahead log keeps the pages as they were before an erasure until SQLite
        # reuses them; the erased text must not wait there (secure_delete zeroes the rest).
        if not await self.db.truncate_wal():
            logger.warning("the write-ahead log keeps erased text until its next checkpoint")

    async def consolidate_memories(self) -> ConsolidationReport:
        """Decay, archive and merge long-term memories (the scheduled consolidation job).

        One write transaction (see :meth:`MemoryConsolidator.consolidate`); afterwards the
        packets of loaded chats carry the memories as they now are.
        """
        self._check_open()
        now = self._clock()
        report = await self.db.write(lambda tx: self.consolidator.consolidate(tx, now=now))
        if report.archived or report.merged or report.decayed:
            await self._memories.reload(self.db.reader)
        return report

    # -- long-term memory ------------------------------------------------------------------

    async def chat_memories(self, chat_id: int) -> tuple[Memory, ...]:
        """Return the long-term memories the chat's packets carry: the most important current
        ones, then the most recently superseded."""
        return await self._memories.of(self.db.reader, chat_id)

    async def facts(self, chat_id: int, *, history: bool = False) -> list[Memory]:
        """Return what the chat's long-term memory keeps (``/facts``), by kind then age.

        Args:
            chat_id: the chat.
            history: include the values that were superseded (``valid_until`` set).
        """
        return await self.memory_store.listing(self.db.reader, chat_id, history=history)

    async def facts_as_of(self, chat_id: int, moment: datetime) -> list[Memory]:
        """Return the chat's memories that were true at ``moment``."""
        return await self.memory_store.as_of(self.db.reader, chat_id, moment)

    async def remember(self, chat_id: int, text: str) -> Memory:
        """Keep ``text`` verbatim as a note the user stated (``/remember``; seed 003's manual
        promotion): active at once, and no session's erasure takes it (only ``/facts
        forget``).

        Raises:
            ValueError: ``text`` is empty or longer than :data:`MAX_NOTE_CHARS`.
        """
        note = " ".join(text.split())
        if not note or len(note) > MAX_NOTE_CHARS:
            raise ValueError(f"a note holds 1 to {MAX_NOTE_CHARS} characters, this one {len(note)}")
        candidate = MemoryCandidate(
            kind=attribute_of("note").kind,
            attribute="note",
            key=fact_key(USER, "note", note),
            text=note,
            origin="noted",
            confidence=1.0,
            importance=attribute_of("note").importance,
        )
        now = self._clock()
        threshold = self.promotion.threshold

        async def record(tx: Any) -> Memory:
            memory = await self.memory_store.record(
                tx, chat_id, candidate, source=None, threshold=threshold, now=now
            )
            assert memory is not None  # noqa: S101 (confidence 1.0 always passes the gate)
            return memory

        memory = await self.db.write(record)
        await self._memories.load(self.db.reader, [chat_id])
        return memory

    async def confirm_memory(self, chat_id: int, memory_id: str) -> Memory | None:
        """Make an unconfirmed memory of the chat active (``/facts confirm N``).

        Returns:
            The memory, or ``None`` if the chat has no such current memory.
        """
        threshold = self.promotion.threshold
        memory = await self.db.write(
            lambda tx: self.memory_store.confirm(tx, chat_id, memory_id, confidence=threshold)
        )
        if memory is not None:
            await self._memories.load(self.db.reader, [chat_id])
        return memory

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

        erased = await self.db.write(lambda tx: self._erase_memories(tx, chat_id, memory_ids))
        if erased:
            self._memories.drop(chat_id)
            await self._truncate_wal()
        return erased

    async def _erase_memories(
        self, tx: Any, chat_id: int, memory_ids: Sequence[str]
    ) -> list[Memory]:
        # The rows, then the full-text indexes rewritten whole: no tombstone keeps the text.
        erased = await self.memory_store.forget(tx, chat_id, memory_ids)
        if erased:
            await self.retriever.purge(tx)
        return erased

    def _forget_live(self, session_id: str) -> None:
        if self.summary_worker is not None:
            self.summary_worker.forget(session_id)
        self._sessions.discard(session_id)

    # -- stop ------------------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Finish the turns in flight, mark sessions ``shutdown_clean``, checkpoint, close.

        The PRD-014 stop sequence. Idempotent. The pending summary delta (the turns not yet
        folded into the rolling summary) goes into each checkpoint's
        ``pending_summary_delta``; the state itself stays the fold of the turn log (I6).
        """
        if self._closed:
            return
        self._closed = True
        # 1. Flush: wait for every turn in flight; later callers see the lane closed.
        for lock in list(self._chat_locks.values()):
            await lock.acquire()
        try:
            if self.summary_worker is not None:
                await self.summary_worker.shutdown()  # its runs write to the database: first
            if self.db.is_open:
                now = self._clock()
                await self.db.write(lambda tx: self.store.set_status(tx, "shutdown_clean", now=now))
                await _bounded_gather(self._clean_checkpoints())
        finally:
            await self.db.close()
        logger.info("memory lane shut down cleanly (%d sessions)", len(self._sessions))

    def _clean_checkpoints(self) -> Iterator[Awaitable[None]]:
        # One session unpacked at a time (the writes are consumed as they are made).
        for live in self._sessions.each():
            live.state = live.state.model_copy(update={"status": "shutdown_clean"})
            if live.checkpoint_status != "shutdown_clean":
                yield self._save_checkpoint(live, self._pending_delta(live))

    def _pending_delta(self, live: LiveSession) -> str:
        # The delta of the turns not yet folded into the rolling summary, less the raw ones.
        return self.states.summarizer.pending_delta(live.state)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("ConversationLane is shut down; create a new one to continue")


async def _bounded_gather(coroutines: Iterable[Awaitable[object]]) -> None:
    # A few workers take the coroutines one by one: no more are made than are running.
    pending = iter(coroutines)

    async def worker() -> None:
        for coroutine in pending:
            await coroutine

    await asyncio.gather(*(worker() for _ in range(_CHECKPOINT_CONCURRENCY)))
