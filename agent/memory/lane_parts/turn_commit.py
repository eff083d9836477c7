"""The commit of one turn: the turn, its session state, summary version and memories, at once.

:class:`TurnCommitter` is the heart of :meth:`agent.memory.lane.ConversationLane.on_turn` and of
every bot-side turn (a reminder firing, a ``/new`` carrying the chat's open items, a
``/clear``): it builds the turn, folds the state (I6), commits turn, state, summary version,
promoted and erased long-term memories in one transaction (I2, I3), and only then updates the
held session and writes its checkpoint (side effects after COMMIT). Tested by
``tests/test_turn_commit.py`` and the lane's tests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent.db import Transaction
from agent.errors import StorageError
from agent.memory.conversation_store import EncodedState, encode_state
from agent.memory.lane_parts.checkpoint_keeper import CheckpointKeeper
from agent.memory.lane_parts.live_sessions import LiveSession
from agent.memory.lane_parts.memory_commands import MemoryCommands
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.lane_parts.turn_edits import TurnEditor
from agent.memory.longterm.memory_schemas import MemoryCandidate
from agent.memory.rules.dialogue_acts import UNRETRIEVED_REPLY_INTENTS
from agent.memory.rules.pronouns import said_before
from agent.memory.rules.session_rules import PERSONAL_CHAT_TYPES
from agent.memory.schemas import (
    ConversationContextPacket,
    ConversationSession,
    ConversationTurn,
    InboundMessage,
    Memory,
    Reply,
    SessionControl,
    SessionState,
)
from agent.memory.writer import (
    memory_candidates,
    write_conversation_turn,
    write_if_worthy,
    write_summary_version,
)
from agent.utils import ids

__all__ = ["TurnCommitter", "TurnResult"]

# The lane's parts log as the lane: operators and tests follow one logger name.
logger = logging.getLogger("agent.memory.lane")


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


# What a turn's worker thread makes of it: the turn, its state, encoded, its memory candidates.
_Read = tuple[ConversationTurn, SessionState, EncodedState, list[MemoryCandidate]]

#: Work run first in a turn's transaction (a session command closes or switches sessions).
Prelude = Callable[[Transaction], Awaitable[object]]


async def _known_turn(
    tx: Transaction, parts: LaneParts, message: InboundMessage
) -> ConversationTurn:
    """The turn an update already became (its insert changed nothing, I3).

    Raises:
        StorageError: there is none (the insert failed to add a turn for another reason).
    """
    known = None
    if message.update_id is not None:
        known = await parts.store.turn_for_update(tx, message.bot_id, message.update_id)
    if known is None:
        raise StorageError(f"the turn of update {message.update_id} was neither added nor found")
    return known


class TurnCommitter:
    """Commits turns of held sessions (see the module docstring).

    Args:
        parts: the lane's parts.
        keeper: writes the checkpoint after each commit.
        memory: erases the memories a reply asks to forget, in the turn's transaction.

    The turns a reply asks to erase (:attr:`Reply.erase_turns`) are erased first, in a
    transaction of their own (:meth:`~agent.memory.lane_parts.turn_edits.TurnEditor.erase_turns`).
    """

    def __init__(self, parts: LaneParts, keeper: CheckpointKeeper, memory: MemoryCommands) -> None:
        self._parts = parts
        self._keeper = keeper
        self._memory = memory
        self._editor = TurnEditor(parts, keeper)

    async def commit(
        self,
        live: LiveSession,
        is_new: bool,
        message: InboundMessage,
        reply: Reply,
        packet: ConversationContextPacket | None,
        *,
        control: SessionControl | None = None,
        prelude: Prelude | None = None,
    ) -> TurnResult:
        # Runs under the chat's lock: commit the turn and its state, then the checkpoint.
        # A session command's turn (control) records its reply without delivering it (the
        # command answered), and ``prelude`` runs first in its transaction (closing and
        # reopening sessions commit with the turn that carries the chat's open items).
        parts = self._parts
        if reply.erase_turns:  # "forget my locker code", confirmed: those turns go first
            await self._editor.erase_turns(live, reply.erase_turns)
        before = live.state
        session = live.session
        # Long-term memory is per chat and read from private talk only: in a group, "my name
        # is" speaks for one member, not for the chat. A turn answered with help or an error
        # text ("I didn't understand") promotes nothing: the reply said nothing was noted; nor
        # does a request to forget ("forget that my sister lives in Porto"), which erases.
        personal = session.chat_type in PERSONAL_CHAT_TYPES
        saved = live.saved

        def read_turn() -> _Read:
            # The turn, the state rules, the state's JSON and the memory candidates are pure
            # CPU over values nothing else changes meanwhile (the chat's lock is held): run in
            # a worker thread, they leave the event loop to the other chats (issue 20, bar 1).
            turn = ConversationTurn(
                turn_id=ids.turn_id(),
                session_id=session.session_id,
                seq=before.turn_count + 1,
                user_text=message.text,
                assistant_text=reply.text or None,
                intent=reply.intent,
                action_name=reply.action_name,
                job_refs=reply.job_refs,
                created_at=parts.clock(),
                status="answered" if reply.text and control is None else "recorded",
                bot_id=message.bot_id,
                update_id=message.update_id,
                user_id=message.user_id,
                speaker=message.speaker,
                message_id=message.message_id,
                control=control,
            )
            state = parts.states.apply(before, turn)
            # The parts it did not change are left out, once the database holds them as rows.
            encoded = encode_state(state, before if saved else None)
            if not personal or turn.intent in UNRETRIEVED_REPLY_INTENTS:
                return turn, state, encoded, []
            # "actually it's Bath, not Bristol" corrects a memory the packet carried; "his
            # name is Leo" speaks of the one the message before named.
            memories = packet.memories if packet is not None else ()
            earlier = said_before(packet.recent_turns) if packet is not None else []
            return (
                turn,
                state,
                encoded,
                memory_candidates(
                    turn,
                    parts.promotion,
                    memories=memories,
                    previous=earlier,
                    said_at=message.received_at,
                ),
            )

        turn, state, encoded, candidates = await asyncio.to_thread(read_turn)
        now = turn.created_at
        forget = reply.forget_memories if personal else ()
        promoted: list[Memory] = []
        erased: list[Memory] = []
        # Seed 003: a memory retrieved into the packet the engine answered with was accessed.
        accessed = [i.ref for i in packet.retrieved if i.kind == "memory"] if packet else []

        async def commit(tx: Transaction) -> ConversationTurn | None:
            # I3, authoritative inside the transaction: the update may have become a turn
            # (through another path) since the packet's read looked. The turn's insert finds it
            # (it changes nothing, and nothing else is written); a prelude or a new session,
            # which write before the insert, look first.
            if message.update_id is not None and (prelude is not None or is_new):
                known = await parts.store.turn_for_update(tx, message.bot_id, message.update_id)
                if known is not None:
                    return known
            if prelude is not None:
                await prelude(tx)
            if is_new:
                await parts.store.create_session(
                    tx,
                    session_id=session.session_id,
                    chat_id=session.chat_id,
                    chat_type=session.chat_type,
                    user_id=session.user_id,
                    title=session.title,
                    now=now,
                )
            written = await write_conversation_turn(
                tx, parts.store, turn, state, now=now, encoded=encoded
            )
            if not written:
                return await _known_turn(tx, parts, message)
            # The summary version the fold made commits with its turn (I6: never apart).
            await write_summary_version(tx, parts.summary_store, before, state, now=now)
            if candidates:
                promoted[:] = await write_if_worthy(
                    tx,
                    parts.memory_store,
                    session.chat_id,
                    candidates,
                    session_id=session.session_id,
                    seq=turn.seq,
                    now=now,
                    policy=parts.promotion,
                )
            if forget:  # erased at once, in the transaction of the turn that asked
                erased[:] = await self._memory.erase(tx, session.chat_id, forget)
            if accessed:
                await parts.memory_store.touch(tx, accessed, now=now)
            return None

        known = await parts.db.write(commit)
        if known is not None:
            return TurnResult(turn=known, packet=None, duplicate=True)
        if is_new:
            parts.sessions.add(live)
        if promoted or erased:  # superseded, added or erased: read the chat's memories again
            await parts.memories.load(parts.db.reader, [session.chat_id])
        if erased:
            await parts.purge_erased()
        live.state, live.saved = state, True
        live.recent.append(turn)
        await self._keeper.save(live)
        folded = state.summary_version != before.summary_version
        # A /clear's version is empty and summarises nothing the packet shows.
        if parts.summary_worker is not None and folded and control is None:
            parts.summary_worker.schedule(session.session_id)  # after the commit, never inside
        parts.retriever.turn_committed(session.session_id)  # its vector, in the background
        return TurnResult(turn=turn, packet=packet)

    async def session_for(self, message: InboundMessage) -> tuple[LiveSession, bool]:
        """Return the chat's open session, held, or a new one not committed yet (``True``)."""
        parts = self._parts
        live = await self._keeper.open_live(message.chat_id)
        if live is not None:
            return live, False
        now = parts.clock()
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
        return parts.sessions.new(session), True

    async def erased_elsewhere(self, live: LiveSession) -> bool:
        """Whether a live session is gone from the database; if so, let go of it."""
        parts = self._parts
        sid = live.session.session_id
        if await parts.store.existing_session_ids(parts.db.reader, [sid]):
            return False
        logger.warning(
            "session %s of chat %s was erased by another process; the chat starts a new one",
            sid,
            live.session.chat_id,
        )
        parts.forget_live(sid)
        parts.memories.drop(live.session.chat_id)  # those only it stated went with it
        return True
