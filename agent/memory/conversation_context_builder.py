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

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
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
    if decisions:
        lines.append("Decisions:")
        for d in decisions:
            by = f" (supported by {', '.join(d.supporters)})" if d.supporters else ""
            lines.append(f"- {d.outcome}{by}")
    if proposals:
        lines.append("Proposals:")
        for p in proposals:
            stances = [
                f"{stance}: {', '.join(r.participant for r in p.reactions if r.stance == stance)}"
                for stance in ("support", "oppose", "neutral")
                if any(r.stance == stance for r in p.reactions)
            ]
            said = f"; {'; '.join(stances)}" if stances else ""
            lines.append(f'- {p.proposer}: "{p.text}" [{p.status}]{said}')
    if participants:
        lines.append("Participants:")
        for person in participants:
            position = f": {person.last_position}" if person.last_position else ""
            count = f"{person.message_count} message{'' if person.message_count == 1 else 's'}"
            lines.append(f"- {person.name} ({count}){position}")
    if topics:
        lines.append("Active topics: " + ", ".join(topic.name for topic in topics))
    if entities:
        labels: dict[str, str] = {lp.loop_id: lp.text for lp in loops}
        labels.update({job.job_id: job.label or job.kind for job in jobs})
        labels.update({p.proposal_id: p.text for p in proposals})
        labels.update({d.decision_id: d.outcome for d in decisions})
        by_target: dict[str, list[str]] = {}
        for phrase, target in sorted(entities.items()):
            by_target.setdefault(target, []).append(f'"{phrase}"')
        lines.append("What the references point to:")
        for target, phrases in sorted(by_target.items()):
            label = labels.get(target, target.removeprefix("topic:"))
            lines.append(f"- {', '.join(phrases)} = {label} ({target})")
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


def _known_state_tokens(known: _KnownState, loops: Sequence[OpenLoop]) -> int:
    tokens = sum(estimate_tokens(ref.label or ref.job_id) for ref in known.jobs)
    tokens += sum(estimate_tokens(f"{fact.key}: {fact.value}") for fact in known.facts)
    return tokens + sum(
        estimate_tokens(line)
        for line in _state_lines(
            topics=known.topics,
            entities=known.entities,
            decisions=known.decisions,
            proposals=known.proposals,
            participants=known.participants,
            loops=loops,
            jobs=known.jobs,
        )
    )


def _fit_state(state: SessionState, room: int) -> _KnownState:
    """Choose the state a packet carries within ``room`` tokens, kind by kind.

    Jobs first, then facts, decisions, proposals (newest first), participants, topics (in the
    state's order) and references; each kind takes what still fits, in its order.
    """
    known = _KnownState()
    kinds: list[tuple[str, Sequence[Any], bool]] = [
        ("jobs", state.active_job_refs, True),
        ("facts", state.facts, True),
        ("decisions", state.decisions, True),
        ("proposals", state.proposals, True),
        ("participants", state.participants, False),
        ("topics", state.active_topics, False),
    ]
    for name, items, newest_first in kinds:
        taken: list[Any] = []
        for item in reversed(items) if newest_first else items:
            trial = [item, *taken] if newest_first else [*taken, item]
            # mypy cannot tie `name` to its field; each is a tuple of exactly these items.
            candidate = replace(known, **{name: tuple(trial)})  # type: ignore[arg-type]
            cost = _known_state_tokens(candidate, state.open_loops)
            if cost <= room:
                taken, known = trial, replace(candidate, tokens=cost)
    for phrase, target in sorted(state.resolved_entities.items()):
        candidate = replace(known, entities={**known.entities, phrase: target})
        cost = _known_state_tokens(candidate, state.open_loops)
        if cost <= room:
            known = replace(candidate, tokens=cost)
    return known


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
