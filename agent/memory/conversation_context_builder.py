"""Assembles the :class:`ConversationContextPacket` the reply engine gets.

The packet is built from what the lane already holds in memory (the session state and the last
raw turns), never from the whole transcript, so building it costs the same for a session of ten
turns and of a hundred thousand. It is filled by priority under a token budget: open loops and
clarifications first, then the last raw turns, then long-term memories, then the summaries of
older turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agent.memory.schemas import (
    ConversationContextPacket,
    ConversationTurn,
    Memory,
    SessionState,
)
from agent.utils.tokens import estimate_tokens

__all__ = ["ConversationContextBuilder", "render_packet"]


def _turn_tokens(turn: ConversationTurn) -> int:
    return estimate_tokens(turn.user_text) + estimate_tokens(turn.assistant_text)


class ConversationContextBuilder:
    """Builds packets under a token budget.

    Args:
        token_budget: the most tokens a packet may hold (its ``token_estimate`` never exceeds it
            unless the open loops and clarifications alone do).
        recent_turns: how many of the latest raw turns the packet carries verbatim.
    """

    def __init__(self, *, token_budget: int = 2000, recent_turns: int = 3) -> None:
        if token_budget < 1 or recent_turns < 0:
            raise ValueError("token_budget must be positive and recent_turns not negative")
        self.token_budget = token_budget
        self.recent_turns = recent_turns

    def build(
        self,
        state: SessionState,
        recent: Sequence[ConversationTurn],
        *,
        now: datetime,
        memories: Sequence[Memory] = (),
    ) -> ConversationContextPacket:
        """Return the packet for the next turn of a session.

        Args:
            state: the session's current state.
            recent: its latest turns, oldest first (only the last ``recent_turns`` are used).
            now: the compile time recorded on the packet.
            memories: the chat's long-term memories, most important first.
        """
        # Priority 1: what is still open is always carried.
        used = sum(estimate_tokens(loop.text) for loop in state.open_loops)
        used += sum(estimate_tokens(c.question) for c in state.pending_clarifications)
        used += sum(estimate_tokens(ref.label or ref.job_id) for ref in state.active_job_refs)
        used += sum(estimate_tokens(f"{fact.key}: {fact.value}") for fact in state.facts)
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
        # Priority 3: long-term memories, most important first.
        kept: list[Memory] = []
        for memory in memories:
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
            active_topics=state.active_topics,
            active_job_refs=state.active_job_refs,
            pending_clarifications=state.pending_clarifications,
            open_loops=state.open_loops,
            facts=state.facts,
            memories=tuple(kept),
            last_response_type=state.last_response_type,
            turn_count=state.turn_count,
            context_compiled_at=now,
            token_estimate=used,
        )


def render_packet(packet: ConversationContextPacket) -> str:
    """Render a packet as plain text: for a model's system prompt and for ``/memory``."""
    parts: list[str] = [f"Conversation {packet.conversation_id} ({packet.turn_count} turns)"]
    if packet.open_loops:
        parts.append("Open loops:")
        parts.extend(f"- {loop.text}" for loop in packet.open_loops)
    if packet.pending_clarifications:
        parts.append("Waiting for the user to answer:")
        parts.extend(f"- {c.question}" for c in packet.pending_clarifications)
    if packet.facts:
        parts.append("What the user told about themselves:")
        parts.extend(f"- {fact.key}: {fact.value}" for fact in packet.facts)
    if packet.memories:
        parts.append("Remembered from earlier conversations:")
        parts.extend(f"- {memory.key}: {memory.text}" for memory in packet.memories)
    if packet.active_job_refs:
        parts.append("Scheduled jobs:")
        parts.extend(f"- {ref.label or ref.job_id}" for ref in packet.active_job_refs)
    if packet.rolling_session_summary:
        parts.append("Summary of earlier conversation:")
        parts.append(packet.rolling_session_summary)
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
