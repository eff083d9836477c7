"""How each part of a context packet reads as text: section headers and one line per item.

:func:`~agent.memory.conversation_context_builder.render_packet` writes a packet with these,
and :class:`~agent.memory.conversation_context_builder.ConversationContextBuilder` costs each
part as they spell it while it fills the budget (so the estimate is the rendered text's).
Covered by ``tests/test_conversation_context_builder.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, datetime
from functools import lru_cache
from typing import Any

from agent.memory.group_schemas import Decision, Participant, Proposal
from agent.memory.longterm.memory_schemas import Memory
from agent.memory.longterm.memory_slots import render_memory
from agent.memory.schemas import (
    ConversationTurn,
    Fact,
    JobRef,
    OpenLoop,
    PendingClarification,
    RetrievedItem,
    Topic,
)
from agent.memory.storage.turn_search import TurnText

__all__ = [
    "CLARIFICATIONS_HEADER",
    "COMPRESSED_HEADER",
    "EARLIER_HEADER",
    "LISTED",
    "LLM_SUMMARY_HEADER",
    "LOOPS_HEADER",
    "REFERENCES_HEADER",
    "RELEVANT_MEMORIES_HEADER",
    "REMEMBERED_HEADER",
    "SUMMARY_HEADER",
    "TOPICS_HEADER",
    "TURNS_HEADER",
    "clarification_line",
    "decision_line",
    "earlier_line",
    "earlier_line_floor",
    "entity_line",
    "entity_lines",
    "fact_line",
    "job_line",
    "line_seq",
    "listed_lines",
    "loop_line",
    "memory_line",
    "participant_line",
    "proposal_line",
    "reference_labels",
    "render_turn",
    "retrieved_lines",
    "split_day",
    "state_lines",
    "title",
    "topic_lines",
    "turn_day",
    "turn_lines",
]

# The headers render_packet writes above each section (paid by a section's first line).
LOOPS_HEADER = "Open loops:"
CLARIFICATIONS_HEADER = "Waiting for the user to answer:"
# Long-term memories: said in this conversation or an earlier one, kept until changed or erased.
REMEMBERED_HEADER = "What I remember about the user:"
RELEVANT_MEMORIES_HEADER = "Relevant memories:"
EARLIER_HEADER = "Relevant earlier in this conversation:"
SUMMARY_HEADER = "Summary of earlier conversation:"
LLM_SUMMARY_HEADER = "The same, as a model summarised it:"
COMPRESSED_HEADER = "Recent turns, compressed:"
TURNS_HEADER = "Last turns, verbatim:"
TOPICS_HEADER = "Active topics: "
REFERENCES_HEADER = "What the references point to:"


def title(conversation_id: str, turn_count: int) -> str:
    """The packet's first line: the conversation and its number of turns."""
    return f"Conversation {conversation_id} ({turn_count} turns)"


_LOOP_KINDS = {"commitment": " (promised)", "request": " (asked for)", "question": " (unanswered)"}


def loop_line(loop: OpenLoop) -> str:
    """An open loop, with its owner in a group and its kind."""
    owner = f"{loop.owner}: " if loop.owner else ""
    return f"- {owner}{loop.text}{_LOOP_KINDS.get(loop.kind, '')}"


def clarification_line(clarification: PendingClarification) -> str:
    """A question the bot waits for the user to answer."""
    return f"- {clarification.question}"


def job_line(job: JobRef) -> str:
    """A scheduled job, by its label."""
    return f"- {job.label or job.job_id}"


def fact_line(fact: Fact) -> str:
    """A fact someone told about themselves: ``key: value``, after the member's name in a group
    (``Ada: location: Porto``), and ``likes: Jazz`` for a key that holds its value already, in
    any case (``likes:jazz``: the value is not said twice); a detail by what it is called
    (``blood type: O negative``)."""
    who = f"{fact.speaker}: " if fact.speaker else ""
    kind, colon, rest = fact.key.partition(":")
    if colon and rest.casefold() == fact.value.casefold():
        return f"- {who}{kind}: {fact.value}"
    if kind == "detail":  # what it is called says what it is: "blood type: O negative"
        return f"- {who}{rest}: {fact.value}"
    return f"- {who}{fact.key}: {fact.value}"


def memory_line(memory: Memory) -> str:
    """A long-term memory of the chat."""
    return f"- {render_memory(memory)}"


def turn_lines(turn: ConversationTurn) -> list[str]:
    """A raw turn: what the speaker said and, if any, the reply."""
    lines = [f"{turn.speaker or 'user'}: {turn.user_text}"]
    if turn.assistant_text:
        lines.append(f"assistant: {turn.assistant_text}")
    return lines


def decision_line(decision: Decision) -> str:
    """A group's decision and who supported it."""
    by = f" (supported by {', '.join(decision.supporters)})" if decision.supporters else ""
    return f"- {decision.outcome}{by}"


def proposal_line(proposal: Proposal) -> str:
    """A group's proposal, its status and the stances taken on it."""
    stances = [
        f"{stance}: {', '.join(r.participant for r in proposal.reactions if r.stance == stance)}"
        for stance in ("support", "oppose", "neutral")
        if any(r.stance == stance for r in proposal.reactions)
    ]
    said = f"; {'; '.join(stances)}" if stances else ""
    return f'- {proposal.proposer}: "{proposal.text}" [{proposal.status}]{said}'


def participant_line(person: Participant) -> str:
    """A group member, their message count and latest position."""
    position = f": {person.last_position}" if person.last_position else ""
    count = f"{person.message_count} message{'' if person.message_count == 1 else 's'}"
    return f"- {person.name} ({count}){position}"


def topic_lines(topics: Sequence[Topic]) -> list[str]:
    """The active topics on one line (none if there are none)."""
    return [TOPICS_HEADER + ", ".join(topic.name for topic in topics)] if topics else []


def entity_line(phrases: Sequence[str], target: str, labels: dict[str, str]) -> str:
    """What some references point to."""
    label = labels.get(target, target.removeprefix("topic:"))
    quoted = ", ".join(f'"{phrase}"' for phrase in phrases)
    return f"- {quoted} = {label} ({target})"


def entity_lines(entities: dict[str, str], labels: dict[str, str]) -> list[str]:
    """What the resolved references point to, under their header."""
    if not entities:
        return []
    by_target: dict[str, list[str]] = {}
    for phrase, target in sorted(entities.items()):
        by_target.setdefault(target, []).append(phrase)
    lines = [REFERENCES_HEADER]
    lines.extend(entity_line(by_target[target], target, labels) for target in sorted(by_target))
    return lines


def reference_labels(
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
LISTED: dict[str, tuple[str, Callable[[Any], str]]] = {
    "jobs": ("Scheduled jobs:", job_line),
    # A personal chat's facts are long-term memories: a session's are its members'.
    "facts": ("What members told about themselves:", fact_line),
    "decisions": ("Decisions:", decision_line),
    "proposals": ("Proposals:", proposal_line),
    "participants": ("Participants:", participant_line),
}


def listed_lines(name: str, items: Sequence[Any]) -> list[str]:
    """Render one kind of :data:`LISTED`: its header and a line per item (none if empty)."""
    if not items:
        return []
    header, line = LISTED[name]
    return [header, *(line(item) for item in items)]


def state_lines(
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
    lines = listed_lines("decisions", decisions)
    lines += listed_lines("proposals", proposals)
    lines += listed_lines("participants", participants)
    lines += topic_lines(topics)
    lines += entity_lines(entities, reference_labels(loops, jobs, proposals, decisions))
    return lines


def turn_day(moment: datetime) -> str:
    """The day a turn was said, as its line shows it: ``8 May 2023``."""
    return f"{moment.day} {_month(moment.year, moment.month)}"


@lru_cache(maxsize=1024)
def _month(year: int, month: int) -> str:
    # Cached: strftime costs more than the rest of a rendered turn, and turns share months.
    return f"{date(year, month, 1):%b %Y}"


def render_turn(turn: ConversationTurn | TurnText) -> str:
    """Return a turn as a retrieved item shows it: ``#12 Ada (8 May 2023): ...``."""
    text = f"#{turn.seq} {turn.speaker or 'user'} ({turn_day(turn.created_at)}): {turn.user_text}"
    if turn.assistant_text:
        text += f"\n  bot: {turn.assistant_text}"
    return text


# A retrieved turn as render_turn writes it: "#12 Ada (8 May 2023): ..." (the speaker may hold
# anything but the date in brackets before the colon).
_DATED_TURN = re.compile(r"#\d+ (.*?) \((\d{1,2} \w{3} \d{4})\): ", re.DOTALL)
_LINE_SEQ = re.compile(r"#(\d+) ")


def earlier_line(item: RetrievedItem) -> tuple[str | None, str]:
    """A retrieved turn or summary as the packet shows it: the day it was said (a line of
    its own, ``On 8 May 2023:``, above that day's turns) and the line without it
    (``Ada: ...``); a summary has no day."""
    return split_day(item.text) if item.kind == "turn" else (None, item.text)


def earlier_line_floor(item: RetrievedItem) -> int:
    """The fewest characters :func:`earlier_line`'s line of ``item`` can have, read without
    splitting it: a turn's line drops from its text at most its seq (``#12 ``: up to its first
    space) and its day (`` (8 May 2023)``, 14 characters at most) and adds ``: ``. A packet
    passes over the items that cannot fit in what is left with it."""
    text = item.text
    if item.kind != "turn":
        return len(text)
    return len(text) - max(text.find(" "), 0) - 15


# A packet carries dozens of retrieved turns, and the next packets of a chat many of the same:
# cached for several packets' worth of texts (a turn is at most 4,096 characters, so a few MB
# at worst).
@lru_cache(maxsize=1024)
def split_day(text: str) -> tuple[str | None, str]:
    """Split a retrieved turn's text (``#12 Ada (8 May 2023): ...``) into the line of its day
    and its line without the day nor the seq (``Ada: ...``: the packet lists the turns in
    conversation order, and the seq costs a token or two of every line; bench/memory_quality.py
    found more evidence without it at every budget); a text without a day is its own line."""
    match = _DATED_TURN.match(text)
    if match is None:
        return None, text
    return f"On {match.group(2)}:", f"{match.group(1)}: {text[match.end() :]}"


def line_seq(line: str) -> int | None:
    """The seq of the turn a summary or compressed line starts with (``#12 Ada: ...``)."""
    match = _LINE_SEQ.match(line)
    return None if match is None else int(match.group(1))


def retrieved_lines(items: Sequence[RetrievedItem]) -> list[str]:
    """Render retrieved items: memories, then summaries and older turns in conversation order,
    the turns under the day they were said."""
    lines: list[str] = []
    memories = [item for item in items if item.kind == "memory"]
    if memories:
        lines.append(RELEVANT_MEMORIES_HEADER)
        lines.extend(f"- {item.text}" for item in memories)
    earlier = sorted(
        (item for item in items if item.kind != "memory"),
        key=lambda item: (item.kind != "summary", item.seq or 0, item.ref),
    )
    if earlier:
        lines.append(EARLIER_HEADER)
    day: str | None = None
    for item in earlier:
        said_on, line = earlier_line(item)
        if said_on is not None and said_on != day:
            lines.append(said_on)
            day = said_on
        lines.append(line)
    return lines
