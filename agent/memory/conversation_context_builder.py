"""Assembles the :class:`ConversationContextPacket` the reply engine gets.

The packet is built from what the lane holds in memory (the session state and the last raw
turns) and what the retriever found for the new message (a bounded set of older turns, summary
deltas and memories), never from the whole transcript, so building it does not grow with the
history. It is filled by priority under a token budget: open loops and clarifications first
(with the rest of the state within ``state_share`` of the budget), then the last raw turns, then
the retrieved items by score, then the chat's other long-term memories, then the summaries of
older turns. Its ``token_estimate`` never exceeds the budget unless the open loops and
clarifications alone do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agent.memory.schemas import (
    ConversationContextPacket,
    ConversationTurn,
    Decision,
    Fact,
    JobRef,
    Memory,
    OpenLoop,
    Participant,
    Proposal,
    RetrievedItem,
    SessionState,
    Topic,
)
from agent.utils.tokens import estimate_tokens

__all__ = ["ConversationContextBuilder", "render_packet"]


def _turn_tokens(turn: ConversationTurn) -> int:
    return estimate_tokens(turn.user_text) + estimate_tokens(turn.assistant_text)


_LOOP_KINDS = {"commitment": " (promised)", "request": " (asked for)", "question": " (unanswered)"}


def _loop_line(loop: OpenLoop) -> str:
    owner = f"{loop.owner}: " if loop.owner else ""
    return f"- {owner}{loop.text}{_LOOP_KINDS.get(loop.kind, '')}"


def _decision_line(decision: Decision) -> str:
    by = f" (supported by {', '.join(decision.supporters)})" if decision.supporters else ""
    return f"- {decision.outcome}{by}"


def _proposal_line(proposal: Proposal) -> str:
    stances = [
        f"{stance}: {', '.join(r.participant for r in proposal.reactions if r.stance == stance)}"
        for stance in ("support", "oppose", "neutral")
        if any(r.stance == stance for r in proposal.reactions)
    ]
    said = f"; {'; '.join(stances)}" if stances else ""
    return f'- {proposal.proposer}: "{proposal.text}" [{proposal.status}]{said}'


def _participant_line(person: Participant) -> str:
    position = f": {person.last_position}" if person.last_position else ""
    count = f"{person.message_count} message{'' if person.message_count == 1 else 's'}"
    return f"- {person.name} ({count}){position}"


def _topic_lines(topics: Sequence[Topic]) -> list[str]:
    return ["Active topics: " + ", ".join(topic.name for topic in topics)] if topics else []


def _entity_lines(entities: dict[str, str], labels: dict[str, str]) -> list[str]:
    if not entities:
        return []
    by_target: dict[str, list[str]] = {}
    for phrase, target in sorted(entities.items()):
        by_target.setdefault(target, []).append(f'"{phrase}"')
    lines = ["What the references point to:"]
    for target, phrases in sorted(by_target.items()):
        label = labels.get(target, target.removeprefix("topic:"))
        lines.append(f"- {', '.join(phrases)} = {label} ({target})")
    return lines


def _labels(
    loops: Sequence[OpenLoop],
    jobs: Sequence[JobRef],
    proposals: Sequence[Proposal],
    decisions: Sequence[Decision],
) -> dict[str, str]:
    """What each id a reference may point to is called in the packet."""
    labels: dict[str, str] = {lp.loop_id: lp.text for lp in loops}
    labels.update({job.job_id: job.label or job.kind for job in jobs})
    labels.update({p.proposal_id: p.text for p in proposals})
    labels.update({d.decision_id: d.outcome for d in decisions})
    return labels


#: The kinds of state a packet carries one line each, with the header above their lines.
_LISTED: dict[str, tuple[str, Callable[[Any], str]]] = {
    "decisions": ("Decisions:", _decision_line),
    "proposals": ("Proposals:", _proposal_line),
    "participants": ("Participants:", _participant_line),
}


def _state_lines(
    *,
    topics: Sequence[Topic],
    entities: dict[str, str],
    decisions: Sequence[Decision],
    proposals: Sequence[Proposal],
    participants: Sequence[Participant],
    loops: Sequence[OpenLoop],
    jobs: Sequence[JobRef],
) -> list[str]:
    """Render topics, references and a group's deliberation (bounded: costed at priority 1)."""
    lines: list[str] = []
    for name, items in (
        ("decisions", decisions),
        ("proposals", proposals),
        ("participants", participants),
    ):
        if items:
            header, line = _LISTED[name]
            lines.append(header)
            lines.extend(line(item) for item in items)
    lines.extend(_topic_lines(topics))
    lines.extend(_entity_lines(entities, _labels(loops, jobs, proposals, decisions)))
    return lines


@dataclass(frozen=True, slots=True)
class _KnownState:
    """The part of a session state a packet carries beyond its open loops, and its cost."""

    jobs: tuple[JobRef, ...] = ()
    facts: tuple[Fact, ...] = ()
    decisions: tuple[Decision, ...] = ()
    proposals: tuple[Proposal, ...] = ()
    participants: tuple[Participant, ...] = ()
    topics: tuple[Topic, ...] = ()
    entities: dict[str, str] = field(default_factory=dict)
    tokens: int = 0


def _item_tokens(name: str, item: Any) -> int:
    """What one item of a kind whose cost is the sum of its items' adds (its line)."""
    if name == "jobs":
        return estimate_tokens(item.label or item.job_id)
    if name == "facts":
        return estimate_tokens(f"{item.key}: {item.value}")
    return estimate_tokens(_LISTED[name][1](item))


def _lines_tokens(lines: list[str]) -> int:
    return sum(estimate_tokens(line) for line in lines)


def _fit_state(state: SessionState, room: int) -> _KnownState:
    """Choose the state a packet carries within ``room`` tokens, kind by kind.

    Jobs first, then facts, decisions, proposals (newest first), participants, topics (in the
    state's order) and references; each kind takes what still fits, in its order. The cost is
    the sum of each kind's lines (as :func:`render_packet` writes them), so a trial costs the
    one kind it changes: an item's line, plus the kind's header with its first item (the
    topics share one line and the references depend on what else was taken: those two are
    costed whole).
    """
    chosen: dict[str, tuple[Any, ...]] = {}
    used = 0
    kinds: list[tuple[str, Sequence[Any], bool]] = [
        ("jobs", state.active_job_refs, True),
        ("facts", state.facts, True),
        ("decisions", state.decisions, True),
        ("proposals", state.proposals, True),
        ("participants", state.participants, False),
    ]
    for name, items, newest_first in kinds:
        taken: list[Any] = []
        header = estimate_tokens(_LISTED[name][0]) if name in _LISTED else 0
        for item in reversed(items) if newest_first else items:
            cost = _item_tokens(name, item) + (0 if taken else header)
            if used + cost <= room:
                used += cost
                taken.append(item)
        chosen[name] = tuple(reversed(taken)) if newest_first else tuple(taken)
    topics: tuple[Topic, ...] = ()
    for topic in state.active_topics:
        cost = _lines_tokens(_topic_lines((*topics, topic))) - _lines_tokens(_topic_lines(topics))
        if used + cost <= room:
            used += cost
            topics = (*topics, topic)
    labels = _labels(state.open_loops, chosen["jobs"], chosen["proposals"], chosen["decisions"])
    entities: dict[str, str] = {}
    for phrase, target in sorted(state.resolved_entities.items()):
        trial = {**entities, phrase: target}
        cost = _lines_tokens(_entity_lines(trial, labels))
        cost -= _lines_tokens(_entity_lines(entities, labels))
        if used + cost <= room:
            used += cost
            entities = trial
    return _KnownState(
        jobs=chosen["jobs"],
        facts=chosen["facts"],
        decisions=chosen["decisions"],
        proposals=chosen["proposals"],
        participants=chosen["participants"],
        topics=topics,
        entities=entities,
        tokens=used,
    )


class ConversationContextBuilder:
    """Builds packets under a token budget.

    Args:
        token_budget: the most tokens a packet may hold (its ``token_estimate`` never exceeds it
            unless the open loops and clarifications alone do).
        recent_turns: how many of the latest raw turns the packet carries verbatim.
        state_share: the share of the budget priority 1 may take for the state beyond the open
            loops and clarifications (jobs, facts, decisions, participants, topics...): the
            newest of each kind first, the rest left out of the packet.
    """

    def __init__(
        self, *, token_budget: int = 2000, recent_turns: int = 3, state_share: float = 0.25
    ) -> None:
        if token_budget < 1 or recent_turns < 0:
            raise ValueError("token_budget must be positive and recent_turns not negative")
        if not 0 <= state_share <= 1:
            raise ValueError("state_share must be between 0 and 1")
        self.token_budget = token_budget
        self.recent_turns = recent_turns
        self.state_share = state_share

    def build(
        self,
        state: SessionState,
        recent: Sequence[ConversationTurn],
        *,
        now: datetime,
        memories: Sequence[Memory] = (),
        retrieved: Sequence[RetrievedItem] = (),
    ) -> ConversationContextPacket:
        """Return the packet for the next turn of a session.

        Args:
            state: the session's current state.
            recent: its latest turns, oldest first (only the last ``recent_turns`` are used).
            now: the compile time recorded on the packet.
            memories: the chat's long-term memories, most important first.
            retrieved: what the retriever found for the new message, best first (see
                :class:`~agent.memory.conversation_retriever.ConversationRetriever`).
        """
        # Priority 1: what is still open is always carried; then what the state knows (jobs,
        # facts, decisions, proposals, participants, topics, references) while priority 1 stays
        # within ``state_share`` of the budget, so a long group chat's state cannot crowd out
        # the turns.
        used = sum(estimate_tokens(loop.text) for loop in state.open_loops)
        used += sum(estimate_tokens(c.question) for c in state.pending_clarifications)
        known_state = _fit_state(state, max(int(self.token_budget * self.state_share) - used, 0))
        used += known_state.tokens
        # Priority 2: the last raw turns, newest first, as long as they fit.
        turns: list[ConversationTurn] = []
        newest = list(recent)[-self.recent_turns :] if self.recent_turns else []
        for turn in reversed(newest):
            cost = _turn_tokens(turn)
            if used + cost > self.token_budget:
                break
            used += cost
            turns.append(turn)
        turns.reverse()
        # Priority 3: retrieved items, best first; one that does not fit leaves room for the
        # next (first fit), and nothing already carried verbatim comes twice. A retrieved
        # memory the chat's list has also goes into ``memories`` (what engines read), once.
        known = {memory.memory_id: memory for memory in memories}
        carried = {f"turn:{turn.seq}" for turn in turns}
        chosen: list[RetrievedItem] = []
        kept: list[Memory] = []
        for item in retrieved:
            cost = estimate_tokens(item.text)
            if item.ref in carried or used + cost > self.token_budget:
                continue
            used += cost
            carried.add(item.ref)
            chosen.append(item)
            if item.kind == "memory" and item.ref in known:
                kept.append(known[item.ref])
        # Then the chat's long-term memories not retrieved, most important first.
        for memory in memories:
            if memory.memory_id in carried:
                continue
            cost = estimate_tokens(f"{memory.key}: {memory.text}")
            if used + cost > self.token_budget:
                break
            used += cost
            kept.append(memory)
        # Priority 4: the compressed lines of turns not yet in the rolling summary, newest
        # first. The buffer ends with the latest turn, so its last lines are the raw turns.
        unsummarized = state.summary_buffer[: max(len(state.summary_buffer) - len(turns), 0)]
        lines: list[str] = []
        for line in reversed(unsummarized):
            cost = estimate_tokens(line)
            if used + cost > self.token_budget:
                break
            used += cost
            lines.append(line)
        lines.reverse()
        # Priority 5: the rolling summary, its newest lines first.
        summary_lines: list[str] = []
        for line in reversed(state.rolling_summary.splitlines()):
            cost = estimate_tokens(line)
            if used + cost > self.token_budget:
                break
            used += cost
            summary_lines.append(line)
        summary_lines.reverse()
        return ConversationContextPacket(
            conversation_id=state.session_id,
            session_status=state.status,
            recent_turns=tuple(turns),
            recent_turn_summaries=tuple(lines),
            rolling_session_summary="\n".join(summary_lines),
            active_topics=known_state.topics,
            active_job_refs=known_state.jobs,
            pending_clarifications=state.pending_clarifications,
            open_loops=state.open_loops,
            facts=known_state.facts,
            memories=tuple(kept),
            retrieved=tuple(chosen),
            resolved_entities_map=known_state.entities,
            participants=known_state.participants,
            proposals=known_state.proposals,
            decisions=known_state.decisions,
            last_response_type=state.last_response_type,
            turn_count=state.turn_count,
            context_compiled_at=now,
            token_estimate=used,
        )


def _retrieved_lines(items: Sequence[RetrievedItem]) -> list[str]:
    """Render retrieved items: memories, then older turns and summaries in conversation order."""
    lines: list[str] = []
    memories = [item for item in items if item.kind == "memory"]
    if memories:
        lines.append("Relevant memories:")
        lines.extend(f"- {item.text}" for item in memories)
    earlier = sorted(
        (item for item in items if item.kind != "memory"),
        key=lambda item: (item.seq or 0, item.kind != "summary", item.ref),
    )
    if earlier:
        lines.append("Relevant earlier in this conversation:")
        lines.extend(item.text for item in earlier)
    return lines


def render_packet(packet: ConversationContextPacket) -> str:
    """Render a packet as plain text: for a model's system prompt and for ``/memory``."""
    parts: list[str] = [f"Conversation {packet.conversation_id} ({packet.turn_count} turns)"]
    if packet.open_loops:
        parts.append("Open loops:")
        parts.extend(_loop_line(loop) for loop in packet.open_loops)
    if packet.pending_clarifications:
        parts.append("Waiting for the user to answer:")
        parts.extend(f"- {c.question}" for c in packet.pending_clarifications)
    parts.extend(
        _state_lines(
            topics=packet.active_topics,
            entities=packet.resolved_entities_map,
            decisions=packet.decisions,
            proposals=packet.proposals,
            participants=packet.participants,
            loops=packet.open_loops,
            jobs=packet.active_job_refs,
        )
    )
    if packet.facts:
        parts.append("What the user told about themselves:")
        parts.extend(f"- {fact.key}: {fact.value}" for fact in packet.facts)
    if packet.memories:
        parts.append("Remembered from earlier conversations:")
        parts.extend(f"- {memory.key}: {memory.text}" for memory in packet.memories)
    shown = {memory.memory_id for memory in packet.memories}
    parts.extend(_retrieved_lines([i for i in packet.retrieved if i.ref not in shown]))
    if packet.active_job_refs:
        parts.append("Scheduled jobs:")
        parts.extend(f"- {ref.label or ref.job_id}" for ref in packet.active_job_refs)
    if packet.rolling_session_summary:
        parts.append("Summary of earlier conversation:")
        parts.append(packet.rolling_session_summary)
    if packet.llm_session_summary:
        parts.append("The same, as a model summarised it:")
        parts.append(packet.llm_session_summary)
    if packet.recent_turn_summaries:
        parts.append("Recent turns, compressed:")
        parts.extend(packet.recent_turn_summaries)
    if packet.recent_turns:
        parts.append("Last turns, verbatim:")
        for turn in packet.recent_turns:
            parts.append(f"{turn.speaker or 'user'}: {turn.user_text}")
            if turn.assistant_text:
                parts.append(f"assistant: {turn.assistant_text}")
    return "\n".join(parts)
