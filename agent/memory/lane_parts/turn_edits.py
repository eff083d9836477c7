"""Edited messages: the turn takes the new text and the session state is folded again (I6).

:class:`TurnEditor` applies an edit to the turn it names, in any session of the chat, open or
closed (see :meth:`agent.memory.lane.ConversationLane.on_edit`), and erases what turns of a held
session said ("forget my locker code", confirmed: :meth:`TurnEditor.erase_turns`, an edit to
nothing). Re-folding reads the session's whole turn log (the state before the edited turn is
kept nowhere): an edit costs a rebuild of its session, which edits and erasures, rare, can
afford. Tested by ``tests/test_lane_edits.py`` and ``tests/test_turn_erasure.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Literal

from agent.db import Transaction
from agent.errors import CheckpointError
from agent.memory.lane_parts.checkpoint_keeper import CheckpointKeeper
from agent.memory.lane_parts.live_sessions import LiveSession
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.rules.dialogue_acts import UNRETRIEVED_REPLY_INTENTS
from agent.memory.rules.session_rules import PERSONAL_CHAT_TYPES
from agent.memory.schemas import (
    ConversationSession,
    ConversationTurn,
    InboundMessage,
    SessionState,
)
from agent.memory.writer import memory_candidates, write_if_worthy

__all__ = ["EditOutcome", "TurnEditor", "refold"]

# The lane's parts log as the lane: operators and tests follow one logger name.
logger = logging.getLogger("agent.memory.lane")

#: What :meth:`ConversationLane.on_edit` did with an edited message: ``edited`` (the turn
#: has the new text and the state follows), ``unchanged`` (same text: nothing to do),
#: ``unknown`` (the message is no turn: never one, or erased), ``duplicate`` (the edit's
#: update was applied already, I3).
EditOutcome = Literal["edited", "unchanged", "unknown", "duplicate"]

# Statuses that record the process's lifecycle, not the fold: an edit leaves them as they are.
_LIFECYCLE = frozenset({"resuming", "paused", "shutdown_clean"})


class TurnEditor:
    """Applies edited messages to their turns.

    Args:
        parts: the lane's parts.
        keeper: rewrites the session's checkpoint after the commit.
    """

    def __init__(self, parts: LaneParts, keeper: CheckpointKeeper) -> None:
        self._parts = parts
        self._keeper = keeper

    async def on_edit(self, message: InboundMessage) -> EditOutcome:
        """See :meth:`agent.memory.lane.ConversationLane.on_edit`."""
        parts = self._parts
        parts.check_open()
        if message.message_id is None:
            return "unknown"
        async with parts.chat_locks[message.chat_id]:
            parts.check_open()
            await self._keeper.open_live(message.chat_id)  # hydrated first, as for a message
            store, reader = parts.store, parts.db.reader
            if message.update_id is not None and await store.edit_known(
                reader, message.bot_id, message.update_id
            ):
                return "duplicate"
            turn = await store.turn_for_message(
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
        parts = self._parts
        store, sid = parts.store, turn.session_id
        session = await store.get_session(parts.db.reader, sid)
        if session is None:
            return "unknown"
        live = parts.sessions.get(sid)
        current = live.state if live is not None else session.state
        edited = turn.model_copy(update={"user_text": message.text})
        state, folds = await refold(parts, session, {edited.seq: edited})
        if current.status in _LIFECYCLE:
            state = state.model_copy(update={"status": current.status})
        candidates = (
            memory_candidates(edited, parts.promotion)
            if session.chat_type in PERSONAL_CHAT_TYPES
            and turn.intent not in UNRETRIEVED_REPLY_INTENTS
            else []
        )
        now = parts.clock()

        async def commit(tx: Transaction) -> EditOutcome:
            # The session may have moved on in another process (erased, or written to).
            row = await store.get_session(tx, sid)
            if row is None or row.turn_count != state.turn_count:
                return "unknown"
            if not await store.edit_turn(
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
            await store.save_state(tx, state, last_seq=state.turn_count, now=now)
            await self._revise_chain(tx, sid, folds)
            # What the message said before is no evidence any more; what it says now is.
            await parts.memory_store.remove_sources(tx, sid, turn.seq)
            if candidates:
                await write_if_worthy(
                    tx,
                    parts.memory_store,
                    session.chat_id,
                    candidates,
                    session_id=sid,
                    seq=turn.seq,
                    now=now,
                    policy=parts.promotion,
                )
            return "edited"

        outcome = await parts.db.write(commit)
        if outcome != "edited":
            return outcome
        logger.debug("turn %s of session %s edited", turn.seq, sid)
        parts.memories.drop(session.chat_id)  # reloaded, corrected, at the next packet
        if live is None:
            # A closed session (or one not loaded): its file is written from the database.
            try:
                await self._keeper.audit().repair(parts.db, sid)
            except CheckpointError as exc:
                logger.warning("checkpoint of session %s not rewritten after an edit: %s", sid, exc)
            return outcome
        await self._hold(live, state, {edited.seq: edited}, folds)
        return outcome

    async def erase_turns(self, live: LiveSession, seqs: Sequence[int]) -> int:
        """Erase what the turns ``seqs`` of ``live`` said, everywhere it is kept.

        Their user text and reply become empty (and the text their edits kept): the turn log,
        the full-text index and the sentence vectors (their update triggers), the state and
        every summary version folded again from the log without them (I6), the model summaries
        of those versions, the long-term memories they alone stated; after the commit, the
        checkpoint, the held session, and the free pages and write-ahead log
        (:meth:`~agent.memory.lane_parts.parts.LaneParts.purge_erased`). Runs under the
        chat's lock (the caller's), before the turn that asked is recorded.

        Args:
            live: the held session.
            seqs: seqs of its committed turns (others are ignored).

        Returns:
            How many turns were erased.
        """
        parts = self._parts
        sid = live.session.session_id
        wanted = {seq for seq in seqs if 1 <= seq <= live.state.turn_count}
        erased: dict[int, ConversationTurn] = {}
        async for turn in parts.store.iter_turns(parts.db.reader, sid):
            if turn.seq in wanted:
                empty = "" if turn.assistant_text is not None else None
                erased[turn.seq] = turn.model_copy(
                    update={"user_text": "", "assistant_text": empty}
                )
        if not erased:
            return 0
        state, folds = await refold(parts, live.session, erased)
        state = state.model_copy(update={"status": live.state.status})
        now = parts.clock()

        async def commit(tx: Transaction) -> int:
            count = 0
            for seq in sorted(erased):
                count += await parts.store.erase_turn_text(tx, sid, seq)
                # What the message stated is no evidence any more: a memory only it stated
                # goes, and the value it had replaced is current again.
                await parts.memory_store.remove_sources(tx, sid, seq)
            await parts.store.save_state(tx, state, last_seq=state.turn_count, now=now)
            await self._revise_chain(tx, sid, folds)
            await parts.retriever.purge(tx)  # the indexes rewritten whole: no tombstone left
            return count

        count = await parts.db.write(commit)
        logger.debug("%d turns of session %s erased", count, sid)
        parts.memories.drop(live.session.chat_id)  # reloaded without them at the next packet
        await self._hold(live, state, erased, folds)
        await parts.purge_erased()
        return count

    async def _revise_chain(self, tx: Transaction, sid: str, folds: Sequence[SessionState]) -> None:
        for fold in folds:  # I6: the chain's texts are those of the fold of the log
            await self._parts.summary_store.revise_extractive(
                tx,
                sid,
                version=fold.summary_version,
                text=fold.rolling_summary,
                delta=fold.last_summary_delta,
            )

    async def _hold(
        self,
        live: LiveSession,
        state: SessionState,
        replaced: Mapping[int, ConversationTurn],
        folds: Sequence[SessionState],
    ) -> None:
        # After the commit: the held session, its checkpoint, its model summaries.
        live.state = state
        for index, kept in enumerate(live.recent):
            if kept.seq in replaced:
                live.recent[index] = replaced[kept.seq]
        await self._keeper.save(live)
        worker = self._parts.summary_worker
        if worker is not None and folds:
            # The model summaries of the versions folded again were of the old text.
            sid = live.session.session_id
            worker.forget(sid)
            worker.schedule(sid)


async def refold(
    parts: LaneParts, session: ConversationSession, replaced: Mapping[int, ConversationTurn]
) -> tuple[SessionState, list[SessionState]]:
    """Fold a session's turn log with the ``replaced`` turns (by seq) in place of its own.

    Returns:
        The state after the last turn, and the state after each fold of the summary made at
        or after the first replaced turn (those whose chain rows change).
    """
    first = min(replaced)
    state = SessionState(session_id=session.session_id, chat_type=session.chat_type)
    folds: list[SessionState] = []
    async for turn in parts.store.iter_turns(parts.db.reader, session.session_id):
        after = parts.states.apply(state, replaced.get(turn.seq, turn))
        if turn.seq >= first and after.summary_version != state.summary_version:
            folds.append(after)
        state = after
    return state, folds
