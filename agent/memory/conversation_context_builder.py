"""Assembles the :class:`ConversationContextPacket` the reply engine gets.

The packet is built from what the lane holds in memory (the session state and the last raw
turns) and what the retriever found for the new message (a bounded set of older turns, summary
deltas and memories), never from the whole transcript, so building it does not grow with the
history. It is filled by priority under a token budget: open loops and clarifications first
(with the rest of the state within ``state_share`` of the budget), then the last raw turns, then
the retrieved items by score, then the chat's other long-term memories, then the summaries of
older turns, and last a model's summary if one fits. The budget counts the text the reply
engine receives: :func:`render_packet`'s, headers and newlines included. Each part is costed as
that text spells it while the packet is filled (no trial renders), so the packet's
``token_estimate`` is the estimate of its rendered text and never exceeds the budget; when not
even the open loops and clarifications all fit, the newest of them that fit are carried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from agent.memory.group_brief import fit_member, member_lines
from agent.memory.group_schemas import Decision, Participant, Proposal
from agent.memory.longterm.memory_schemas import Memory
from agent.memory.packet_lines import (
    CLARIFICATIONS_HEADER,
    COMPRESSED_HEADER,
    EARLIER_HEADER,
    LISTED,
    LLM_SUMMARY_HEADER,
    LOOPS_HEADER,
    REFERENCES_HEADER,
    RELEVANT_MEMORIES_HEADER,
    REMEMBERED_HEADER,
    SUMMARY_HEADER,
    TOPICS_HEADER,
    TURNS_HEADER,
    clarification_line,
    earlier_line,
    earlier_line_floor,
    entity_line,
    line_seq,
    listed_lines,
    loop_line,
    memory_line,
    reference_labels,
    retrieved_lines,
    state_lines,
    title,
    turn_lines,
)
from agent.memory.schemas import (
    ConversationContextPacket,
    ConversationTurn,
    Fact,
    JobRef,
    OpenLoop,
    RetrievedItem,
    SessionState,
    Topic,
)
from agent.utils.tokens import CHARS_PER_TOKEN, tokens_for_chars

__all__ = ["ConversationContextBuilder", "render_packet"]


_T = TypeVar("_T")


def _chars(lines: Sequence[str]) -> int:
    """What ``lines`` add to the rendered text: each line and its newline."""
    return sum(len(line) + 1 for line in lines)


@dataclass(slots=True)
class _Room:
    """The characters of rendered text a packet may still take, counted as it is filled.

    :func:`render_packet` joins the packet's lines with newlines, so a line costs its length
    plus one, and a section's header is paid once, by the section's first line. The text of
    lines costing ``used`` in all is ``used - 1`` characters long: the estimate of the text
    the engine receives is known exactly without rendering it.
    """

    limit: int
    used: int = 0
    opened: set[str] = field(default_factory=set)

    def take(self, chars: int) -> bool:
        """Take ``chars`` if they fit; return whether they did."""
        if self.used + chars > self.limit:
            return False
        self.used += chars
        return True

    def take_line(self, header: str, line: str, subheader: str | None = None) -> bool:
        """Take ``line`` under ``header`` (the header too, if its section is new) and under
        ``subheader`` within it (a day of retrieved turns: paid once too) if it fits.

        A ``line`` may hold newlines (a turn and its answer): it costs its length plus one.
        """
        opened = self.opened
        cost = len(line) + 1
        if header not in opened:
            cost += len(header) + 1
        if subheader is not None and subheader not in opened:
            cost += len(subheader) + 1
        if self.used + cost > self.limit:
            return False
        self.used += cost
        opened.add(header)
        if subheader is not None:
            opened.add(subheader)
        return True


def _take(
    room: _Room,
    header: str,
    line: Callable[[_T], str],
    items: Sequence[_T],
    *,
    newest_first: bool = True,
) -> tuple[_T, ...]:
    """Take the items whose lines fit in ``room`` (first fit), the newest first or in order.

    Returns:
        The items taken, in their order in ``items``.
    """
    order = range(len(items) - 1, -1, -1) if newest_first else range(len(items))
    taken = [n for n in order if room.take_line(header, line(items[n]))]
    return tuple(items[n] for n in sorted(taken))


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
    chars: int = 0


def _fit_state(state: SessionState, loops: Sequence[OpenLoop], room: _Room) -> _KnownState:
    """Choose the state a packet carries within ``room``, kind by kind.

    Jobs first, then facts, decisions, proposals (newest first), participants, topics (in the
    state's order) and references; each kind takes what still fits, in its order, costed as
    :func:`render_packet` writes it (a kind's header is paid by its first item; a topic adds
    its name to the one topics line, a reference its phrase to its target's line). The
    references' labels depend on what else was taken, ``loops`` (the open loops the packet
    carries) included.
    """
    jobs = _take(room, *LISTED["jobs"], state.active_job_refs)
    facts = _take(room, *LISTED["facts"], state.facts)
    decisions = _take(room, *LISTED["decisions"], state.decisions)
    proposals = _take(room, *LISTED["proposals"], state.proposals)
    participants = _take(room, *LISTED["participants"], state.participants, newest_first=False)
    topics: list[Topic] = []
    for topic in state.active_topics:
        # The first topic opens the line ("Active topics: a"); each next one adds ", b".
        if room.take(len(topic.name) + (len(TOPICS_HEADER) + 1 if not topics else 2)):
            topics.append(topic)
    labels = reference_labels(loops, jobs, proposals, decisions)
    entities: dict[str, str] = {}
    for phrase, target in sorted(state.resolved_entities.items()):
        if target in entities.values():  # one more phrase on its target's line: ', "it"'
            fits = room.take(len(phrase) + 4)
        else:
            fits = room.take_line(REFERENCES_HEADER, entity_line((phrase,), target, labels))
        if fits:
            entities[phrase] = target
    return _KnownState(
        jobs=jobs,
        facts=facts,
        decisions=decisions,
        proposals=proposals,
        participants=participants,
        topics=tuple(topics),
        entities=entities,
        chars=room.used,
    )


# The smallest budget: room for the title line every packet starts with (about 60 characters
# for our session ids) and a little more.
_MIN_TOKEN_BUDGET = 32


class ConversationContextBuilder:
    """Builds packets under a token budget.

    Args:
        token_budget: the most tokens a packet may hold, counted on the text
            :func:`render_packet` makes of it (what a reply engine receives): its
            ``token_estimate`` is that text's estimate and never exceeds the budget. At least
            32 (the title line is always there).
        recent_turns: how many of the latest raw turns the packet carries verbatim.
        state_share: the share of the budget priority 1 may take for the state beyond the open
            loops and clarifications (jobs, facts, decisions, participants, topics...): the
            newest of each kind first, the rest left out of the packet.

    Raises:
        ValueError: a setting out of range.
    """

    def __init__(
        self, *, token_budget: int = 2000, recent_turns: int = 3, state_share: float = 0.25
    ) -> None:
        if token_budget < _MIN_TOKEN_BUDGET or recent_turns < 0:
            raise ValueError(
                f"token_budget must be at least {_MIN_TOKEN_BUDGET} and recent_turns not negative"
            )
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
        llm_summary: str = "",
        member: Participant | None = None,
    ) -> ConversationContextPacket:
        """Return the packet for the next turn of a session.

        Every part is costed as :func:`render_packet` writes it (its line, its newline, its
        section's header once), while the packet is filled: nothing is rendered twice.

        Args:
            state: the session's current state.
            recent: its latest turns, oldest first (only the last ``recent_turns`` are used).
            now: the compile time recorded on the packet.
            memories: the chat's long-term memories, most important first.
            retrieved: what the retriever found for the new message, best first (see
                :class:`~agent.memory.conversation_retriever.ConversationRetriever`).
            llm_summary: a model's summary of the session, carried last, when it fits (see
                :attr:`ConversationContextPacket.llm_session_summary`).
            member: in a group, the participant who writes now: carried first of the state
                (see :mod:`agent.memory.group_brief`).
        """
        # The rendered text is at most token_budget * 4 characters: its lines cost one more.
        room = _Room(self.token_budget * CHARS_PER_TOKEN + 1)
        # The title is always there (the minimum budget leaves room for it and more).
        room.used = _chars([title(state.session_id, state.turn_count)])
        # Priority 1: what is still open (the newest first if not all fits); then what the
        # state knows (jobs, facts, decisions, proposals, participants, topics, references)
        # while priority 1 stays within ``state_share`` of the budget, so a long group chat's
        # state cannot crowd out the turns.
        asked = _take(room, CLARIFICATIONS_HEADER, clarification_line, state.pending_clarifications)
        loops = _take(room, LOOPS_HEADER, loop_line, state.open_loops)
        share = int(self.token_budget * self.state_share) * CHARS_PER_TOKEN
        state_room = _Room(max(share - room.used, 0))
        # A group member writing to the bot: their position first; not listed twice.
        member = fit_member(member, state_room.take)
        if member is not None:
            others = tuple(
                p for p in state.participants if p.participant_id != member.participant_id
            )
            state = state.model_copy(update={"participants": others})
        known_state = _fit_state(state, loops, state_room)
        room.used += known_state.chars
        # Priority 2: the last raw turns, newest first, as long as they fit.
        turns: list[ConversationTurn] = []
        newest = list(recent)[-self.recent_turns :] if self.recent_turns else []
        for turn in reversed(newest):
            if not room.take_line(TURNS_HEADER, "\n".join(turn_lines(turn))):
                break
            turns.append(turn)
        turns.reverse()
        # Priority 3: retrieved items, best first; one that does not fit leaves room for the
        # next (first fit), and nothing already carried verbatim comes twice. A retrieved
        # memory the chat's list has also goes into ``memories`` (what engines read, and what
        # render_packet shows it as), once.
        known = {memory.memory_id: memory for memory in memories}
        carried = {f"turn:{turn.seq}" for turn in turns}
        chosen: list[RetrievedItem] = []
        kept: list[Memory] = []
        for item in retrieved:
            if item.ref in carried:
                continue
            memory = known.get(item.ref) if item.kind == "memory" else None
            if memory is not None:
                fits = room.take_line(REMEMBERED_HEADER, memory_line(memory))
            elif item.kind == "memory":
                fits = room.take_line(RELEVANT_MEMORIES_HEADER, f"- {item.text}")
            elif earlier_line_floor(item) >= room.limit - room.used:
                continue  # cannot fit, whatever its line (it costs one more, its newline)
            else:
                said_on, line = earlier_line(item)
                fits = room.take_line(EARLIER_HEADER, line, said_on)
            if not fits:
                continue
            carried.add(item.ref)
            chosen.append(item)
            if memory is not None:
                kept.append(memory)
        # Then the chat's long-term memories not retrieved, most important first.
        for memory in memories:
            if memory.memory_id in carried:
                continue
            if not room.take_line(REMEMBERED_HEADER, memory_line(memory)):
                break
            kept.append(memory)
        # Priority 4: the compressed lines of turns not yet in the rolling summary, newest
        # first. The buffer ends with the latest turn, so its last lines are the raw turns.
        # A turn the packet carries verbatim is not repeated in short, here or in priority 5.
        verbatim = {turn.seq for turn in turns} | {i.seq for i in chosen if i.kind == "turn"}
        unsummarized = state.summary_buffer[: max(len(state.summary_buffer) - len(turns), 0)]
        lines: list[str] = []
        for line in reversed(unsummarized):
            if line_seq(line) in verbatim:
                continue
            if not room.take_line(COMPRESSED_HEADER, line):
                break
            lines.append(line)
        lines.reverse()
        # Priority 5: the rolling summary, its newest lines first (blank lines left out).
        summary_lines: list[str] = []
        for line in reversed(state.rolling_summary.splitlines()):
            if not line or line_seq(line) in verbatim:
                continue
            if not room.take_line(SUMMARY_HEADER, line):
                break
            summary_lines.append(line)
        summary_lines.reverse()
        # Last, a model's summary (not state: I6), whole or not at all.
        if not (llm_summary and room.take_line(LLM_SUMMARY_HEADER, llm_summary)):
            llm_summary = ""
        return ConversationContextPacket(
            conversation_id=state.session_id,
            session_status=state.status,
            recent_turns=tuple(turns),
            recent_turn_summaries=tuple(lines),
            rolling_session_summary="\n".join(summary_lines),
            llm_session_summary=llm_summary,
            active_topics=known_state.topics,
            active_job_refs=known_state.jobs,
            pending_clarifications=asked,
            open_loops=loops,
            facts=known_state.facts,
            memories=tuple(kept),
            retrieved=tuple(chosen),
            resolved_entities_map=known_state.entities,
            participants=known_state.participants,
            proposals=known_state.proposals,
            decisions=known_state.decisions,
            member=member,
            last_response_type=state.last_response_type,
            turn_count=state.turn_count,
            context_compiled_at=now,
            token_estimate=tokens_for_chars(room.used - 1),
        )


def render_packet(packet: ConversationContextPacket) -> str:
    """Render a packet as plain text: for a model's system prompt and for ``/memory``.

    A packet the builder made renders to a text whose estimate is its ``token_estimate``.
    """
    parts: list[str] = [title(packet.conversation_id, packet.turn_count)]
    if packet.open_loops:
        parts.append(LOOPS_HEADER)
        parts.extend(loop_line(loop) for loop in packet.open_loops)
    if packet.pending_clarifications:
        parts.append(CLARIFICATIONS_HEADER)
        parts.extend(clarification_line(c) for c in packet.pending_clarifications)
    parts.extend(member_lines(packet.member))
    parts.extend(
        state_lines(
            topics=packet.active_topics,
            entities=packet.resolved_entities_map,
            decisions=packet.decisions,
            proposals=packet.proposals,
            participants=packet.participants,
            loops=packet.open_loops,
            jobs=packet.active_job_refs,
        )
    )
    parts.extend(listed_lines("facts", packet.facts))
    if packet.memories:
        parts.append(REMEMBERED_HEADER)
        parts.extend(memory_line(memory) for memory in packet.memories)
    shown = {memory.memory_id for memory in packet.memories}
    parts.extend(retrieved_lines([i for i in packet.retrieved if i.ref not in shown]))
    parts.extend(listed_lines("jobs", packet.active_job_refs))
    if packet.rolling_session_summary:
        parts.append(SUMMARY_HEADER)
        parts.append(packet.rolling_session_summary)
    if packet.llm_session_summary:
        parts.append(LLM_SUMMARY_HEADER)
        parts.append(packet.llm_session_summary)
    if packet.recent_turn_summaries:
        parts.append(COMPRESSED_HEADER)
        parts.extend(packet.recent_turn_summaries)
    if packet.recent_turns:
        parts.append(TURNS_HEADER)
        for turn in packet.recent_turns:
            parts.extend(turn_lines(turn))
    return "\n".join(parts)
