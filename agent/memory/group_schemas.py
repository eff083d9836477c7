"""The contracts of a group chat's deliberation: participants, proposals, reactions, decisions.

Part of the session state (:class:`~agent.memory.schemas.SessionState`) and of the context
packet in group chats; moved forward by :class:`~agent.memory.rules.deliberation.
DeliberationTracker`. Covered by ``tests/test_deliberation.py``.
"""

from __future__ import annotations

from typing import Literal

from agent.memory.schema_base import Value

__all__ = ["Decision", "Participant", "Proposal", "ProposalStatus", "Reaction", "Stance"]

#: A participant's reaction to a group proposal.
Stance = Literal["support", "oppose", "neutral"]
#: ``modified``: settled on a variant of it (a counter-proposal, or a decision on a variant).
ProposalStatus = Literal["active", "accepted", "rejected", "modified"]


class Reaction(Value):
    """One participant's stance on a proposal; a later reaction of theirs replaces it."""

    participant: str
    stance: Stance
    turn: int


class Proposal(Value):
    """A proposal made in a group chat, with the other participants' reactions (seed 000).

    ``status`` starts ``active``. A decision matching it makes it ``accepted``; a decision on a
    variant of it, or a counter-proposal, makes it ``modified``; a decision against it, or the
    opposition of most other participants, makes it ``rejected``; ``resolved_turn`` is the seq
    of the turn that settled it.
    """

    proposal_id: str
    proposer: str
    text: str
    proposed_turn: int
    status: ProposalStatus = "active"
    reactions: tuple[Reaction, ...] = ()
    resolved_turn: int | None = None


class Decision(Value):
    """Something a group settled ("we agreed on Friday at 3", ``[DECISION] ...``).

    ``supporters`` are the participant who announced it and those who supported the proposal
    it settles (``proposal_id``), in order of first support.
    """

    decision_id: str
    outcome: str
    topic: str = ""
    decided_by: str
    decided_turn: int
    supporters: tuple[str, ...] = ()
    proposal_id: str | None = None


class Participant(Value):
    """One member of a group chat as the conversation shows them (seed 000's agent state).

    ``participant_id`` is ``user:<telegram id>`` or, without an id, ``name:<speaker>``;
    ``last_position`` is their latest stance (a proposal, a reaction, a decision or a statement
    of opinion); ``key_contributions`` their latest proposals, decisions and opinions.
    """

    participant_id: str
    name: str
    message_count: int = 0
    last_position: str = ""
    key_contributions: tuple[str, ...] = ()
    last_turn: int = 0
