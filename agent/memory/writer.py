"""The durable writes of the memory lane, each one run inside a single transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agent.memory.conversation_store import ConversationStore
from agent.memory.schemas import ConversationTurn, SessionState

__all__ = ["write_conversation_turn"]


async def write_conversation_turn(
    tx: Any,
    store: ConversationStore,
    turn: ConversationTurn,
    state: SessionState,
    *,
    now: datetime,
) -> bool:
    """Append a turn and store the session state it leads to, in the caller's transaction.

    The turn and the state commit together, so the database never holds a state that does not
    match its turn log (I6), and the checkpoint written after the commit is never ahead of it
    (I5).

    Args:
        tx: a connection inside an open write transaction (:meth:`agent.db.Database.write`).
        store: the storage backend.
        turn: the new turn; its ``seq`` must follow the session's last one.
        state: the session state after ``turn``.
        now: the session's new last-activity time.

    Returns:
        ``False`` if the turn's Telegram update was already recorded (nothing was written, I3).
    """
    if not await store.append_turn(tx, turn):
        return False
    await store.save_state(tx, state, last_seq=turn.seq, now=now)
    return True
