"""Erasing what some turns said: "forget my locker code", confirmed, erases those messages.

:class:`TurnEraser` empties the user text and the reply of the turns it is given, in one
transaction: the turn log (and the text their edits kept), the full-text index and the sentence
vectors (their update triggers), the session state and every summary version folded again from
the log without them (I6: the state is the fold of the log as it now is), the model summaries of
those versions, the long-term memories the turns alone stated (and the facts read from them);
then, after the commit, the checkpoint file, the held session, and the database's free pages and
write-ahead log (:meth:`~agent.memory.lane_parts.parts.LaneParts.purge_erased`). The rest of the
conversation stays. The same re-folding as an edited message's (:func:`~agent.memory.
lane_parts.turn_edits.refold`): an erasure costs a rebuild of its session, which erasures, rare,
can afford. Tested by ``tests/test_turn_erasure.py`` and ``tests/test_hostile_input.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from agent.db import Transaction
from agent.memory.lane_parts.checkpoint_keeper import CheckpointKeeper
from agent.memory.lane_parts.live_sessions import LiveSession
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.lane_parts.turn_edits import refold

__all__ = ["TurnEraser"]

# The lane's parts log as the lane: operators and tests follow one logger name.
logger = logging.getLogger("agent.memory.lane")


class TurnEraser:
    """Erases the text of turns of a held session.

    Args:
        parts: the lane's parts.
        keeper: rewrites the session's checkpoint after the commit.
    """

    def __init__(self, parts: LaneParts, keeper: CheckpointKeeper) -> None:
        self._parts = parts
        self._keeper = keeper

    async def erase(self, live: LiveSession, seqs: Sequence[int]) -> int:
        """Erase what the turns ``seqs`` of ``live`` said, everywhere it is kept.

        Runs under the chat's lock (the caller's), before the turn that asked is recorded.

        Args:
            live: the held session.
            seqs: seqs of its committed turns (others are ignored).

        Returns:
            How many turns were erased.
        """
        parts = self._parts
        sid = live.session.session_id
        wanted = {seq for seq in seqs if 1 <= seq <= live.state.turn_count}
        if not wanted:
            return 0
        turns = {}
        async for turn in parts.store.iter_turns(parts.db.reader, sid):
            if turn.seq in wanted:
                empty = "" if turn.assistant_text is not None else None
                turns[turn.seq] = turn.model_copy(update={"user_text": "", "assistant_text": empty})
        if not turns:
            return 0
        state, folds = await refold(parts, live.session, turns)
        state = state.model_copy(update={"status": live.state.status})
        now = parts.clock()

        async def commit(tx: Transaction) -> int:
            erased = 0
            for seq in sorted(turns):
                erased += await parts.store.erase_turn_text(tx, sid, seq)
                # What the message stated is no evidence any more: a memory only it stated
                # goes, and the value it had replaced is current again.
                await parts.memory_store.remove_sources(tx, sid, seq)
            await parts.store.save_state(tx, state, last_seq=state.turn_count, now=now)
            for fold in folds:  # I6: the chain's texts are those of the fold of the log
                await parts.summary_store.revise_extractive(
                    tx,
                    sid,
                    version=fold.summary_version,
                    text=fold.rolling_summary,
                    delta=fold.last_summary_delta,
                )
            # The indexes rewritten whole: no tombstone keeps the erased words.
            await parts.retriever.purge(tx)
            return erased

        erased = await parts.db.write(commit)
        logger.debug("%d turns of session %s erased", erased, sid)
        live.state = state
        for index, kept in enumerate(live.recent):
            if kept.seq in turns:
                live.recent[index] = turns[kept.seq]
        await self._keeper.save(live)
        parts.memories.drop(live.session.chat_id)  # reloaded without them at the next packet
        worker = parts.summary_worker
        if worker is not None and folds:
            # The model summaries of the versions folded again were of the erased text.
            worker.forget(sid)
            worker.schedule(sid)
        await parts.purge_erased()
        return erased
