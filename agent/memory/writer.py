"""The durable writes of the memory lane, each one run inside the turn's transaction.

:func:`write_conversation_turn` appends a turn with the state it leads to;
:func:`write_if_worthy` is the promotion gate of long-term memory (PRD-014 phase 3): of what a
turn said, candidates whose confidence passes the threshold become active memories, the others
wait as unconfirmed candidates, and the same thing said twice is one memory with more evidence;
:func:`write_summary_version` adds the summary version a turn's fold made to the chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agent.db import Transaction
from agent.memory.conversation_store import ConversationStore, EncodedState
from agent.memory.longterm.memory_slots import attribute_of, memory_facts, parse_key
from agent.memory.longterm.memory_store import MemoryStore
from agent.memory.rules.event_moves import moves_routine
from agent.memory.rules.extraction import normalize_text
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.rules.plan_endings import ends_plan
from agent.memory.rules.pronouns import (
    opens_with_name,
    opens_with_pronoun,
    resolve_name,
    resolve_pronoun,
)
from agent.memory.rules.value_corrections import names_values, puts_right, read_said
from agent.memory.schemas import (
    ConversationTurn,
    Fact,
    Memory,
    MemoryCandidate,
    SessionState,
    SummaryVersion,
)
from agent.memory.summaries.summary_store import SummaryStore
from agent.utils.time_zones import zone_of

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

    What the user says plainly about themselves ("my name is Ada", "I like jazz") passes the
    gate at once: it is what a person expects a bot to keep, and the concierge says it noted
    it. A hedge ("I think I like jazz", "maybe I'll move to Porto") stays a *candidate*: it is
    listed as unconfirmed in ``/facts``, never overrules an active memory, and becomes active
    when said plainly or confirmed (``/facts confirm N``).
    """

    threshold: float = 0.75
    stated_confidence: float = 0.9
    hedged_confidence: float = 0.5

    def confidence(self, fact: Fact) -> float:
        """Return the confidence a fact earns by how it was said."""
        return self.hedged_confidence if fact.mode == "hedged" else self.stated_confidence

    def keeps(self, fact: Fact) -> bool:
        """Whether the fact becomes an active memory as soon as it is said."""
        return self.confidence(fact) >= self.threshold


def memory_candidates(
    turn: ConversationTurn,
    policy: PromotionPolicy = PromotionPolicy(),
    *,
    memories: Sequence[Memory] = (),
    previous: Sequence[str] = (),
    said_at: datetime | None = None,
) -> list[MemoryCandidate]:
    """Return the memory candidates of the facts a turn's message states, or of the one it
    corrects by naming the wrong value among the chat's ``memories`` ("actually it's Bath, not
    Bristol").

    A message that opens with "he", "she" or "they" states them of the one the ``previous``
    messages named, newest first; one that opens with a name ("Rex is 5"), of the one of the
    ``memories`` by that name (:mod:`agent.memory.rules.pronouns`). The memories are read as
    facts only for such a message: most turns need not pay for it.

    A name, like or plan put right in the next message ("sorry, her name is Anna") names the
    memory it replaces (:func:`~agent.memory.rules.value_corrections.read_said`).

    A relative date is kept as the date it names ("test is tomorrow": "test is on Fri 27
    Nov"), read at ``said_at`` (the message's time; the turn's by default) in the zone the
    ``memories`` keep (UTC without one).
    """
    candidates = []
    # Read as the concierge reads it ("hes 2": "he's 2"). "her birthday is ..." after "a present
    # for Asha": the people known, when a pronoun asks.
    text = normalize_text(turn.user_text)
    named = memory_facts(memories) if memories and opens_with_pronoun(text) else ()
    text = resolve_pronoun(text, previous, named)
    wanted = memories and (
        opens_with_name(text)
        or names_values(text)
        or puts_right(text)
        or ends_plan(text)
        or moves_routine(text)
        or any(_read_against_memories(fact) for fact in extract_facts(text, turn=turn.seq))
    )
    known = memory_facts(memories) if wanted else ()
    text = resolve_name(text, known)
    zone = zone_of(next((m.text for m in memories if m.attribute == "timezone"), None))
    said = read_said(
        text,
        known,
        next(iter(previous), None),
        turn=turn.seq,
        said_at=said_at or turn.created_at,
        zone=zone,
    )
    for fact in said.facts:
        parts = parse_key(fact.key)
        attribute = attribute_of(parts.attribute)
        candidates.append(
            MemoryCandidate(
                kind=attribute.kind,
                subject=parts.subject,
                attribute=parts.attribute,
                key=fact.key,
                text=fact.value,
                confidence=policy.confidence(fact),
                importance=attribute.importance,
                correction=fact.mode == "corrected",
                replaces=said.replaced.get(fact.key),
            )
        )
    return candidates


def _read_against_memories(fact: Fact) -> bool:
    """"I don't live in Berlin anymore": what it ends is read against the memories; so is an
    event said again ("my flight got moved to Sunday" keeps the time the flight had)."""
    attribute = parse_key(fact.key).attribute
    return attribute.startswith("ex_") or attribute == "event"


async def write_if_worthy(
    tx: Transaction,
    store: MemoryStore,
    chat_id: int,
    candidates: Sequence[MemoryCandidate],
    *,
    session_id: str | None,
    seq: int,
    now: datetime,
    policy: PromotionPolicy = PromotionPolicy(),
) -> list[Memory]:
    """Record candidates as evidence; return the memories they made or reinforced.

    Args:
        tx: a connection inside the turn's write transaction.
        store: the memory storage.
        chat_id: whose memory (memories never cross chats).
        candidates: what the turn said.
        session_id: the turn's session (its source, for ``/forget``); ``None`` for a note the
            user asked for (``/remember``), which no session erasure takes away.
        seq: the turn's position in its session.
        now: the time of the turn.
        policy: the promotion gate.
    """
    written = []
    for candidate in candidates:
        memory = await store.record(
            tx,
            chat_id,
            candidate,
            source=None if session_id is None else (session_id, seq),
            threshold=policy.threshold,
            now=now,
        )
        if memory is not None:
            written.append(memory)
    return written


async def write_conversation_turn(
    tx: Transaction,
    store: ConversationStore,
    turn: ConversationTurn,
    state: SessionState,
    *,
    now: datetime,
    encoded: EncodedState | None = None,
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
        encoded: ``state`` as :func:`~agent.memory.conversation_store.encode_state` made it.

    Returns:
        ``False`` if the turn's Telegram update was already recorded (nothing was written, I3).
    """
    if not await store.append_turn(tx, turn):
        return False
    await store.save_state(tx, state, last_seq=turn.seq, now=now, encoded=encoded)
    return True


async def write_summary_version(
    tx: Transaction,
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
