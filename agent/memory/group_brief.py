"""The group member who writes now, and a group's deliberation in brief (seed 000).

When a member of a group addresses the bot, the lane finds them among the session's
participants (:func:`member_of`) and the packet carries them as
:attr:`~agent.memory.schemas.ConversationContextPacket.member`: their previous position and key
contributions, as the deliberation rules (:mod:`agent.memory.rules.deliberation`) keep them.
The packet renders them with :func:`member_lines`, first of the group's state, and leaves them
out of its participants list (each thing once); the builder pays for them within the state's
share of the budget through :func:`fit_member` (the contributions go first when room is short).

:func:`render_brief` is the brief context (seed 000's ``getBriefContext``): the member's
position, what the group decided and the proposals still undecided, then the last turns: a few
lines a model can answer from when it must decide quickly (the LLM concierge sends it alone
after a full prompt timed out).

Covered by ``tests/test_group_brief.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent.memory.group_schemas import Decision, Participant, Proposal
from agent.memory.packet_lines import TURNS_HEADER, title, turn_lines
from agent.memory.rules.deliberation import participant_key
from agent.memory.schemas import ConversationContextPacket

__all__ = [
    "BRIEF_HEADER",
    "brief_lines",
    "fit_member",
    "member_lines",
    "member_of",
    "render_brief",
    "stances",
    "undecided",
]

#: The header of the brief's decisions and undecided proposals.
BRIEF_HEADER = "In brief:"


def member_of(
    participants: Sequence[Participant], user_id: int | None, speaker: str | None
) -> Participant | None:
    """Return the participant who sends a message (by Telegram id, else by name), if known.

    Args:
        participants: a group session's participants.
        user_id: the sender's Telegram id.
        speaker: the sender's name.
    """
    key = participant_key(user_id, speaker)
    return next((p for p in participants if p.participant_id == key), None)


def member_lines(member: Participant | None) -> list[str]:
    """Render the member who writes now: their previous position and key contributions.

    A contribution that is their position already is not said twice; a member with neither
    renders as their header alone (the model still learns who writes).
    """
    if member is None:
        return []
    count = f"{member.message_count} message{'' if member.message_count == 1 else 's'}"
    lines = [f"The member writing now: {member.name} ({count} before this one)"]
    if member.last_position:
        lines.append(f"- their previous position: {member.last_position}")
    lines.extend(
        f"- they contributed: {said}"
        for said in member.key_contributions
        if said != member.last_position
    )
    return lines


def fit_member(member: Participant | None, take: Callable[[int], bool]) -> Participant | None:
    """Return ``member`` as much of them as ``take`` has room for, or ``None``.

    Args:
        member: the member writing now.
        take: takes the characters of rendered text asked for if they fit, and says whether
            they did (each line costs its length and a newline).

    Returns:
        The member whole, else without their contributions, else ``None``.
    """
    if member is None:
        return None
    for carried in (member, member.model_copy(update={"key_contributions": ()})):
        if take(sum(len(line) + 1 for line in member_lines(carried))):
            return carried
    return None


def undecided(proposals: Sequence[Proposal]) -> tuple[Proposal, ...]:
    """The proposals still under discussion (``active``), oldest first."""
    return tuple(p for p in proposals if p.status == "active")


def _decided_line(decision: Decision) -> str:
    by = ", ".join(decision.supporters) or decision.decided_by
    return f"- decided: {decision.outcome} ({by})"


def stances(proposal: Proposal) -> str:
    """Who is for, against and unsure about a proposal: ``for: Bob; against: Carol``, or
    ``no reactions yet``."""
    said = []
    for stance, word in (("support", "for"), ("oppose", "against"), ("neutral", "unsure")):
        who = [r.participant for r in proposal.reactions if r.stance == stance]
        if who:
            said.append(f"{word}: {', '.join(who)}")
    return "; ".join(said) or "no reactions yet"


def _undecided_line(proposal: Proposal) -> str:
    return f'- undecided: "{proposal.text}" (proposed by {proposal.proposer}; {stances(proposal)})'


def brief_lines(decisions: Sequence[Decision], proposals: Sequence[Proposal]) -> list[str]:
    """Render what a group decided and the proposals still undecided, under one header."""
    lines = [_decided_line(d) for d in decisions]
    lines.extend(_undecided_line(p) for p in undecided(proposals))
    return [BRIEF_HEADER, *lines] if lines else []


def render_brief(packet: ConversationContextPacket) -> str:
    """Render the brief context of a group packet; empty when it has no group state.

    The title, the member writing now, the decisions and undecided proposals, and the last
    turns verbatim: a few lines of what the full rendering carries, for a quick answer.
    """
    group = member_lines(packet.member) + brief_lines(packet.decisions, packet.proposals)
    if not group:
        return ""
    parts = [title(packet.conversation_id, packet.turn_count), *group]
    if packet.recent_turns:
        parts.append(TURNS_HEADER)
        for turn in packet.recent_turns:
            parts.extend(turn_lines(turn))
    return "\n".join(parts)
