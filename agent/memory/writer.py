"""The durable writes of the memory lane, each one run inside the turn's transaction.

:func:`write_conversation_turn` appends a turn with the state it leads to;
:func:`write_if_worthy` is the promotion gate of long-term memory (PRD-014 phase 3): of what a
turn said, only candidates whose confidence passes the threshold become active memories, the
same thing said twice is one memory with more evidence, and nothing else is kept;
:func:`write_summary_version` adds the summary version a turn's fold made to the chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent.memory.conversation_store import ConversationStore
from agent.memory.memory_store import MemoryStore
from agent.memory.schemas import (
    ConversationTurn,
    Fact,
    Memory,
    MemoryCandidate,
    MemoryKind,
    SessionState,
    SummaryVersion,
)
from agent.memory.summary_store import SummaryStore

__all__ = [
    "PromotionPolicy",
    "memory_candidates",
    "write_conversation_turn",
    "write_if_worthy",
    "write_summary_version",
]


@dataclass(frozen=True, slots=True)
class PromotionPolicy:
    """How facts become memory candidates and when candidates become memories.

    A self-statement ("my name is Ada") is confident at once; a preference ("I like jazz")
    needs to be said twice (0.7, then 1 - 0.3 * 0.3 = 0.91) to pass the default threshold.
    """

    threshold: float = 0.75
    fact_confidence: float = 0.9
    goal_confidence: float = 0.8
    preference_confidence: float = 0.7


_GOAL_KEYS = frozenset({"plan"})
_PREFERENCE_PREFIXES = ("likes:", "dislikes:", "favourite:")
# How much a memory matters when the packet has room for only a few.
_IMPORTANCE: dict[str, float] = {"name": 1.0, "plan": 0.8, "location": 0.7, "job": 0.7}


def _kind(key: str) -> MemoryKind:
    if key in _GOAL_KEYS:
        return "goal"
    if key.startswith(_PREFERENCE_PREFIXES):
        return "preference"
    return "fact"


def memory_candidates(
    facts: Sequence[Fact], seq: int, policy: PromotionPolicy = PromotionPolicy()
) -> list[MemoryCandidate]:
    """Return the memory candidates of the facts a turn (``seq``) stated."""
    confidence = {
        "fact": policy.fact_confidence,
        "goal": policy.goal_confidence,
        "preference": policy.preference_confidence,
    }
    candidates = []
    for fact in facts:
        if fact.turn != seq:
            continue
        kind = _kind(fact.key)
        candidates.append(
            MemoryCandidate(
                kind=kind,
                key=fact.key,
                text=fact.value,
                confidence=confidence.get(kind, policy.fact_confidence),
                importance=_IMPORTANCE.get(fact.key, 0.5 if kind == "fact" else 0.4),
            )
        )
    return candidates


async def write_if_worthy(
    tx: Any,
    store: MemoryStore,
    chat_id: int,
    candidates: Sequence[MemoryCandidate],
    *,
    session_id: str,
    seq: int,
    now: datetime,
    policy: PromotionPolicy = PromotionPolicy(),
) -> list[Memory]:
    """Record candidates as evidence; return the chat's memories that are active after it.

    Args:
        tx: a connection inside the turn's write transaction.
        store: the memory storage.
        chat_id: whose memory (memories never cross chats).
        candidates: what the turn said.
        session_id: the turn's session (its source, for ``/forget``).
        seq: the turn's position in its session.
        now: the time of the turn.
        policy: the promotion gate.
    """
    active = []
    for candidate in candidates:
        memory = await store.upsert(
            tx,
            chat_id,
            candidate,
            session_id=session_id,
            seq=seq,
            threshold=policy.threshold,
            now=now,
        )
        if memory.status == "active":
            active.append(memory)
    return active


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


async def write_summary_version(
    tx: Any,
    store: SummaryStore,
    before: SessionState,
    after: SessionState,
    *,
    now: datetime,
) -> SummaryVersion | None:
    """Add the summary version a turn's fold made to the chain, in the turn's transaction.

    Called with the state before and after one turn, next to :func:`write_conversation_turn`:
    the chain row commits with the turn, so the latest extractive version is always the
    state's rolling summary (I6), and a crash can leave the chain neither ahead of nor behind
    the turn log.

    Args:
        tx: a connection inside the turn's write transaction.
        store: the summary chain's storage.
        before: the session state before the turn.
        after: the session state after it.
        now: the time of the turn.

    Returns:
        The new extractive version, or ``None`` if the turn did not fold.
    """
    if after.summary_version == before.summary_version:
        return None
    return await store.append_extractive(
        tx,
        after.session_id,
        version=after.summary_version,
        from_seq=min(before.summarized_through + 1, after.summarized_through),
        to_seq=after.summarized_through,
        text=after.rolling_summary,
        delta=after.last_summary_delta,
        now=now,
    )
