"""The lane's parts: its collaborators and what it holds in memory, shared by its modules.

:class:`LaneParts` is built once by :class:`~agent.memory.lane.ConversationLane` and handed to the
modules the lane is split into (:mod:`agent.memory.lane_parts.checkpoint_keeper`,
:mod:`agent.memory.lane_parts.hydration`, :mod:`agent.memory.lane_parts.session_lifecycle`,
:mod:`agent.memory.lane_parts.turn_edits`, :mod:`agent.memory.lane_parts.memory_commands` and the
read door :mod:`agent.memory.inspector`). It never leaves ``agent/memory/``: code outside talks to
the lane and reads through :class:`~agent.memory.inspector.MemoryInspector`.

Besides the collaborators it holds the few things every part needs alike: the open sessions
(:class:`~agent.memory.lane_parts.live_sessions.LiveSessions`), each chat's long-term memories at
hand, one lock per chat (turns of one chat run one after another), the clock, and how a packet is
built from a live session. Tested by ``tests/test_lane_parts.py`` and ``tests/test_lane.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from weakref import WeakValueDictionary

from agent.db import AnyDatabase, Snapshot
from agent.memory.conversation_checkpoint import CheckpointStore
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_retriever import ConversationRetriever
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_store import ConversationStore
from agent.memory.group_brief import member_of
from agent.memory.group_schemas import Participant
from agent.memory.lane_parts.live_sessions import LiveSession, LiveSessions
from agent.memory.longterm.chat_memories import ChatMemories
from agent.memory.longterm.memory_consolidator import MemoryConsolidator
from agent.memory.longterm.memory_store import MemoryStore
from agent.memory.schemas import (
    ConversationContextPacket,
    ConversationTurn,
    InboundMessage,
    RetrievedItem,
)
from agent.memory.summaries.summary_store import SummaryStore
from agent.memory.summaries.summary_worker import SummaryWorker
from agent.memory.writer import PromotionPolicy

__all__ = ["ChatLocks", "LaneParts"]

# The lane's parts log as the lane: operators and tests follow one logger name.
logger = logging.getLogger("agent.memory.lane")

# Long-term memories of a chat kept at hand for its packets: current, and recently superseded.
_MEMORIES_PER_CHAT = 20
_PAST_MEMORIES_PER_CHAT = 8


class ChatLocks(WeakValueDictionary[int, asyncio.Lock]):
    """One lock per chat, made when asked for and kept while anyone holds or awaits it.

    ``locks[chat_id]`` returns the chat's lock, a new one if nobody holds or awaits it. A lock
    nobody refers to is neither held nor awaited, so it can go: the background sweep takes
    the lock of every chat once (100,000 locks took 16 MB, kept for good in a plain dict).
    """

    def __getitem__(self, chat_id: int) -> asyncio.Lock:
        lock = self.get(chat_id)
        if lock is None:
            lock = asyncio.Lock()
            self[chat_id] = lock
        return lock


class LaneParts:
    """The lane's collaborators and in-memory sessions (see the module docstring).

    Args:
        db: the open database; the lane closes it.
        checkpoints: the checkpoint directory's writer.
        store: the conversation storage backend.
        states: the rules that move a session state by one turn.
        builder: assembles packets.
        memory_store: the long-term memory backend.
        promotion: the gate that decides what a turn adds to long-term memory.
        summary_store: the summary version chain's storage.
        summary_worker: the optional model summarizer's runner.
        retriever: finds older turns, summaries and memories for a message.
        consolidator: decays, archives and merges long-term memories.
        resident_sessions: hydrated sessions kept as objects (the rest are packed).
        clock: returns the current time.
    """

    def __init__(
        self,
        *,
        db: AnyDatabase,
        checkpoints: CheckpointStore,
        store: ConversationStore,
        states: ConversationStateManager,
        builder: ConversationContextBuilder,
        memory_store: MemoryStore,
        promotion: PromotionPolicy,
        summary_store: SummaryStore,
        summary_worker: SummaryWorker | None,
        retriever: ConversationRetriever,
        consolidator: MemoryConsolidator,
        resident_sessions: int,
        clock: Callable[[], datetime],
    ) -> None:
        self.db = db
        self.checkpoints = checkpoints
        self.store = store
        self.states = states
        self.builder = builder
        self.memory_store = memory_store
        self.promotion = promotion
        self.summary_store = summary_store
        self.summary_worker = summary_worker
        self.retriever = retriever
        self.consolidator = consolidator
        self.clock = clock
        # Long-term memories per chat, most important first (what packets carry).
        self.memories = ChatMemories(
            memory_store,
            per_chat=_MEMORIES_PER_CHAT,
            past=_PAST_MEMORIES_PER_CHAT,
            chats=resident_sessions,
        )
        self.chat_locks = ChatLocks()
        self.sessions = LiveSessions(
            recent_turns=builder.recent_turns, busy=self._busy, resident=resident_sessions
        )
        self.closed = False

    def _busy(self, chat_id: int) -> bool:
        lock = self.chat_locks.get(chat_id)
        return lock is not None and lock.locked()

    def check_open(self) -> None:
        """Refuse work once the lane is shut down.

        Raises:
            RuntimeError: the lane is shut down.
        """
        if self.closed:
            raise RuntimeError("ConversationLane is shut down; create a new one to continue")

    def forget_live(self, session_id: str) -> None:
        """Let go of a session held in memory (closed or erased), and of its model summary."""
        if self.summary_worker is not None:
            self.summary_worker.forget(session_id)
        self.sessions.discard(session_id)

    async def purge_erased(self) -> None:
        """After an erasure, make the erased rows unreadable on disk as well (SQLite: empty the
        write-ahead log, which keeps pages as they were before the delete; PostgreSQL: vacuum
        the dead row versions)."""
        if not await self.db.purge_erased():
            logger.warning("erased text stays on disk until the database's next clean-up")

    async def packet_for(
        self, live: LiveSession, text: str, *, is_new: bool
    ) -> ConversationContextPacket:
        """Return the packet a message ``text`` gets in ``live``, retrieval included."""
        return await self.db.read(await self._packet_read(live, text, is_new=is_new))

    async def reply_read(
        self, live: LiveSession, message: InboundMessage, *, is_new: bool
    ) -> ConversationContextPacket | ConversationTurn:
        """Return the packet ``message`` gets in ``live`` (:meth:`packet_for`; in a group it
        carries the member who sent it, :mod:`agent.memory.group_brief`), or the turn its
        Telegram update already became (redelivered, or answered by another worker
        meanwhile): then no reply may be asked for (I3)."""
        packet = await self._packet_read(live, message.text, is_new=is_new, sender=message)
        update = message.update_id

        def read(snapshot: Snapshot) -> ConversationContextPacket | ConversationTurn:
            # The update's lookup rides on the packet's hand-over to the searcher's thread.
            known = None
            if update is not None:
                known = self.store.recorded_turn(snapshot, message.bot_id, update)
            return known if known is not None else packet(snapshot)

        return await self.db.read(read)

    async def _packet_read(
        self, live: LiveSession, text: str, *, is_new: bool, sender: InboundMessage | None = None
    ) -> Callable[[Snapshot], ConversationContextPacket]:
        """Return the read of the packet ``text`` gets in ``live``, for the searcher's thread:
        the retrieval, then fitting the packet to its budget (pure CPU over values the chat's
        lock holds still), in one hand-over, while the event loop serves the other chats."""
        # The raw turns the packet carries anyway are no candidates; a session not committed
        # yet has no turns to search, but its chat may have memories. The message's vector
        # (the optional semantic search) is encoded in a thread meanwhile, used if ready after
        # the lexical searches (RetrievalPolicy.vector_wait).
        speaker = None if sender is None else sender.speaker
        vector = None if is_new else await self.retriever.query_vector(text, speaker)
        retrieve = partial(
            self.retriever.for_packet,
            chat_id=live.session.chat_id,
            session_id=None if is_new else live.session.session_id,
            text=text,
            now=self.clock(),
            state=live.state,
            recent_turns=self.builder.recent_turns,
            token_budget=self.builder.token_budget,
            query_vector=vector,
        )
        member = None
        if sender is not None:
            member = member_of(live.state.participants, sender.user_id, sender.speaker)
        build = await self._builder_of(live, member)
        return lambda snapshot: build(retrieve(snapshot))

    async def packet(self, live: LiveSession) -> ConversationContextPacket:
        """Return the packet of ``live`` without retrieved items (what ``/context`` shows)."""
        build = await self._builder_of(live, None)
        return build(())

    async def _builder_of(
        self, live: LiveSession, member: Participant | None
    ) -> Callable[[Sequence[RetrievedItem]], ConversationContextPacket]:
        """Return the build of the packet of ``live``, given its retrieved items."""
        memories = await self.memories.of(self.db.reader, live.session.chat_id)
        cleared = live.state.cleared_through
        # /clear: the turns up to it stay in the log, not in the packet (the state says where).
        recent = [turn for turn in live.recent if turn.seq > cleared]
        # The model's summary rides along, not in the state (I6), when the budget has room.
        worker = self.summary_worker
        session_id = live.session.session_id
        llm_summary = "" if worker is None else worker.latest_text(session_id, after_seq=cleared)
        state, now, builder = live.state, self.clock(), self.builder

        def build(retrieved: Sequence[RetrievedItem]) -> ConversationContextPacket:
            return builder.build(
                state,
                recent,
                now=now,
                memories=memories,
                retrieved=retrieved,
                llm_summary=llm_summary,
                member=member,
            )

        return build
