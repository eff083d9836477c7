"""Group deliberation: who said what, proposals with reactions, and decisions (seed 000).

In a group chat every message moves the deliberation by rules, never by a model:

- its speaker's :class:`Participant` counts it; a proposal, reaction, decision or opinion ("I
  think we should...") becomes their ``last_position`` and (but a reaction) one of their
  ``key_contributions``;
- a **proposal** ("I propose ...", "how about ...", "what if we ...", "let's consider ...",
  ``[PROPOSAL]``) opens an ``active`` :class:`Proposal`; a counter-proposal on the same subject
  (sharing at least half the words of the smaller) marks the earlier one ``modified``;
- a **reaction** ("+1", "agree", "sounds good"; "I disagree", "no way", "-1"; "not sure")
  from someone other than the proposer records their stance on the active proposal it names
  (the one sharing most words with it) or, naming none, on the latest one of the last
  :data:`REACTION_WINDOW` turns (one said after a thing no active proposal is about, "Italian
  works for me", records none); one stance per participant, the latest wins. A proposal
  opposed by at least two and by a strict majority of the other participants is ``rejected``;
- a **decision** ("we agreed on ...", "let's go with ...", "we decided ...", "final decision:
  ...", ``[DECISION]``) records a :class:`Decision`; the active proposal it settles becomes
  ``accepted`` (the same words, one holding the other or sharing half of them) or ``modified``
  (a variant: some words shared). "We decided against ...", "let's not ...", ``[REJECTED]``
  record a decision against the proposal and reject it. A decision that says nothing
  ("we agreed!") settles the latest active proposal.

A message addressed to someone ("@helper_bot I think ...", "@ana +1") is read without the
handle it starts with.

Everything is bounded (participants, their contributions, proposals, reactions, decisions) and
a pure function of the state and the turn (I6): ids are made from the turn's seq.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from agent.memory.group_schemas import Decision, Participant, Proposal, Reaction, Stance
from agent.memory.rules.extraction import Clause, clean_value, content_stems, normalize_text
from agent.memory.rules.reactions import FILLERS, read_reaction, said_after
from agent.memory.rules.topic_tracker import key_phrases
from agent.memory.schemas import ConversationTurn
from agent.utils.text import TOPIC_STOP_WORDS

__all__ = [
    "MAX_CONTRIBUTIONS",
    "MAX_DECISIONS",
    "MAX_PARTICIPANTS",
    "MAX_PROPOSALS",
    "REACTION_WINDOW",
    "DeliberationTracker",
    "DeliberationUpdate",
    "is_deliberation_move",
    "participant_key",
]

#: The most participants a session keeps (the least recently heard leaves first).
MAX_PARTICIPANTS = 20
#: The most key contributions kept per participant (the newest).
MAX_CONTRIBUTIONS = 3
#: The most proposals kept (settled ones leave before active ones, oldest first).
MAX_PROPOSALS = 10
#: The most decisions kept (the newest).
MAX_DECISIONS = 10
#: A reaction or an empty decision naming no proposal refers to one made this many turns ago.
REACTION_WINDOW = 20
_MAX_REACTIONS = MAX_PARTICIPANTS
_TEXT_CHARS = 160
_F = re.IGNORECASE

_REJECTIONS = tuple(
    re.compile(pattern, _F)
    for pattern in (
        r"\bwe(?:'ve|\s+have)?\s+(?:all\s+)?(?:agreed|decided)\s+(?:against|not\s+to)\s+(?P<v>.*)",
        rf"^{FILLERS}let'?s\s+(?:not|drop|scrap|skip|forget(?:\s+about)?)\s+(?P<v>.*)",
        r"\[rejected\]\s*[:-]?\s*(?P<v>.*)",
    )
)
_DECISIONS = tuple(
    re.compile(pattern, _F)
    for pattern in (
        r"\bwe(?:'ve|\s+have)?\s+(?:all\s+|just\s+|finally\s+)?(?:agreed|decided|concluded"
        r"|settled)(?:\s+(?:on|upon|to|that))?\s*[:,-]?\s*(?P<v>.*)",
        r"\bconsensus\s+(?:is|was|reached)(?:\s+(?:on|that))?\s*[:,-]?\s*(?P<v>.*)",
        r"\b(?:let'?s|we(?:'ll|\s+will))\s+go\s+with\s+(?P<v>.*)",
        r"\bwe(?:'re|\s+are)\s+(?:going|gonna\s+go)\s+with\s+(?P<v>.*)",
        r"\bfinal\s+(?:decision|answer)\s*(?:is\b|:|-)?\s*(?P<v>.*)",
        r"\[(?:decision|consensus)\]\s*[:-]?\s*(?P<v>.*)",
        r"\b(?:it'?s|it\s+is|that'?s)\s+(?:decided|settled)\s*[:,-]?\s*(?P<v>.*)",
        r"^decided\s*[:-]\s*(?P<v>.*)",
        rf"^{FILLERS}(?:(?:settled|deal|agreed)\s*[:-]|settled\s*,)\s*(?P<v>.+)",  # "deal: X"
        # "Sunday it is", "agreed, pizza it is then"
        rf"^{FILLERS}(?:(?:agreed|deal|done)[,!.\s]+)?(?P<v>(?!(?:that|this|it|what|how|which"
        r"|who|there|here)\b)[^,.!?]{1,40}?)\s+it\s+is(?:\s+then)?\s*[.!]*$",
    )
)
_PROPOSALS = tuple(
    re.compile(pattern, _F)
    for pattern in (
        r"\bi\s+(?:propose|suggest)\s+(?:that\s+)?(?P<v>.+)",
        r"\bmy\s+(?:suggestion|proposal)\s+(?:is\s+)?[:-]?\s*(?:that\s+|to\s+)?(?P<v>.+)",
        r"\bwhat\s+if\s+(?P<v>we\s+.+)",
        r"\bhow\s+about\s+(?P<v>.+)",
        # "what about the museum hall instead?" (not "what about you?").
        r"^what\s+about\s+(?P<v>(?!(?:you|me|him|her|them|us|it|that|this|now|then)\b).+)",
        r"\bwhy\s+don'?t\s+we\s+(?P<v>.+)",
        r"\blet'?s\s+consider\s+(?P<v>.+)",
        # "let's go with Lisbon then?": going with it, asked of the others.
        r"\b(?:let'?s|should\s+we|shall\s+we|we\s+could)\s+go\s+with\s+(?P<v>.+)",
        r"\bshall\s+we\s+(?P<v>.+)",
        # "I vote Thai", "I vote for the pizza place" (not "I vote yes": a reaction).
        rf"^{FILLERS}i\s+vote\s+(?:for\s+)?(?!(?:yes|no|against|it|that|this)\b)(?P<v>.+)",
        # "let's do pizza then", "we could try the new Thai place", "let's go to Lisbon": an
        # option named short, the clause's end (not "let's go to a class, it'll be fun!")
        r"\b(?:let'?s|we\s+could)\s+(?:do|try|have|get|book|go\s+(?:to|for))\s+(?!(?:it|that"
        r"|this|something|anything|some|more|what|whatever|lunch\s+sometime|to|together|started"
        r"|going|back|ready|busy)\b)(?P<v>[^,;:!?]{1,40}?)\s*[.!?]*$",
        r"\[proposal\]\s*[:-]?\s*(?P<v>.+)",
    )
)
# Every decision, rejection and proposal pattern holds one of these words: one search tells
# whether a clause is worth the patterns.
_CUES = re.compile(
    r"agreed|decided|conclu|settled|consensus|go\s+with|going\s+with|final|\[|propos|suggest"
    r"|what\s+if|what\s+about"
    r"|how\s+about|don'?t\s+we|consider|shall\s+we|let'?s|deal|it\s+is|vote|we\s+could",
    _F,
)
_OPINION = re.compile(
    r"^(?:i\s+(?:think|believe|feel|guess|reckon|prefer)|in\s+my\s+(?:opinion|view)|imo\b"
    r"|i'?d\s+(?:rather|prefer)|we\s+(?:should|shouldn'?t|need\s+to|must|could))\b",
    _F,
)
_TRAILING = re.compile(r"\s+(?:instead|then|maybe|perhaps)$", _F)
_NOISE_STEMS = content_stems(" ".join(sorted(TOPIC_STOP_WORDS))) | frozenset({"we", "us", "our"})
_STANCE_WORDS = {"support": "supports", "oppose": "opposes", "neutral": "is undecided on"}
# A message addressed to someone starts with their handle: "@helper_bot I think ...".


@lru_cache(maxsize=4096)  # pure; proposals are compared again on every message
def _stems(text: str) -> frozenset[str]:
    """The words that tell what a proposal or decision is about (digits count: "at 3")."""
    return content_stems(text) - _NOISE_STEMS


def _cut(value: str) -> str:
    return _TRAILING.sub("", clean_value(value, 200))


def _share_half(a: frozenset[str], b: frozenset[str]) -> bool:
    common = len(a & b)
    return common > 0 and 2 * common >= min(len(a), len(b))


def _matches(said: frozenset[str], proposal: frozenset[str]) -> bool:
    common = len(said & proposal)
    if not common:
        return False
    return said <= proposal or proposal <= said or 2 * common >= len(said | proposal)


@dataclass(frozen=True, slots=True)
class _Move:
    """What one message does in the deliberation."""

    reaction: Stance | None = None
    decision: str | None = None
    rejection: str | None = None
    proposal: str | None = None
    opinion: str | None = None


def _names_another(text: str, proposals: Sequence[Proposal]) -> bool:
    """Whether a reaction said after what it reacts to ("Italian works for me") names a thing
    no active proposal is about: it is no stance on the latest one then (the Thai place)."""
    said = said_after(text)
    if not said:
        return False
    named = _stems(said)
    active = [_stems(p.text) for p in proposals if p.status == "active"]
    return bool(named) and not any(named & wanted for wanted in active)


def _first(patterns: Sequence[re.Pattern[str]], clause: Clause) -> str | None:
    for pattern in patterns:
        match = pattern.search(clause.text)
        if match is not None:
            return _cut(match.group("v"))
    return None


def _read_move(text: str, clauses: Sequence[Clause]) -> _Move:
    decision = rejection = proposal = opinion = None
    for clause in clauses:
        if _CUES.search(clause.text) is None:
            if opinion is None and not clause.question and _OPINION.match(clause.text):
                opinion = clean_value(clause.text, _TEXT_CHARS)
            continue
        if not clause.question and decision is None and rejection is None:
            rejection = _first(_REJECTIONS, clause)
            if rejection is None:
                decision = _first(_DECISIONS, clause)
            if decision is not None or rejection is not None:
                continue
        if proposal is None:
            found = _first(_PROPOSALS, clause)
            if found and _stems(found):
                proposal = found
                continue
        if opinion is None and not clause.question and _OPINION.match(clause.text):
            opinion = clean_value(clause.text, _TEXT_CHARS)
    return _Move(read_reaction(text, clauses), decision, rejection, proposal, opinion)


def is_deliberation_move(text: str, clauses: Sequence[Clause]) -> bool:
    """Tell whether a group message proposes, reacts, decides or states a position: a move
    :meth:`DeliberationTracker.apply` records (the offline concierge acknowledges it).

    Args:
        text: the message.
        clauses: ``text`` cut into clauses.
    """
    move = _read_move(normalize_text(text), clauses)
    return any((move.reaction, move.decision, move.rejection, move.proposal, move.opinion))


@dataclass(frozen=True, slots=True)
class DeliberationUpdate:
    """The deliberation state after one group message, and what the message touched.

    Attributes:
        participants: every participant kept, in order of first message.
        proposals: the proposals kept, oldest first.
        decisions: the decisions kept, oldest first.
        proposal_id: the proposal the message opened or reacted to, if any.
        decision_id: the decision it recorded, if any.
    """

    participants: tuple[Participant, ...]
    proposals: tuple[Proposal, ...]
    decisions: tuple[Decision, ...]
    proposal_id: str | None = None
    decision_id: str | None = None


def participant_key(user_id: int | None, speaker: str | None) -> str | None:
    """The :attr:`~agent.memory.group_schemas.Participant.participant_id` of a group member:
    ``user:<telegram id>``, else ``name:<speaker>``; ``None`` for a message of neither."""
    if user_id is not None:
        return f"user:{user_id}"
    return f"name:{speaker}" if speaker else None


def _speaker(turn: ConversationTurn) -> tuple[str, str] | None:
    pid = participant_key(turn.user_id, turn.speaker)
    if pid is None:
        return None
    return pid, turn.speaker or f"user {turn.user_id}"


def _topic(text: str) -> str:
    phrases = key_phrases(text)
    return max(phrases, key=lambda p: len(p.split()), default="")


class DeliberationTracker:
    """Moves a group's participants, proposals and decisions forward by one message."""

    def apply(
        self,
        participants: Sequence[Participant],
        proposals: Sequence[Proposal],
        decisions: Sequence[Decision],
        turn: ConversationTurn,
        clauses: Sequence[Clause],
    ) -> DeliberationUpdate:
        """Return the deliberation after ``turn`` (a message of a group chat).

        Args:
            participants: the participants before the turn.
            proposals: the proposals before it.
            decisions: the decisions before it.
            turn: the message; its speaker is ``turn.speaker`` / ``turn.user_id``.
            clauses: ``turn.user_text`` cut into clauses (read once by the caller).
        """
        who = _speaker(turn)
        text = normalize_text(turn.user_text)
        if who is None or not text:
            return DeliberationUpdate(tuple(participants), tuple(proposals), tuple(decisions))
        pid, name = who
        seq = turn.seq
        move = _read_move(text, clauses)
        people = {p.participant_id: p for p in participants}
        person = people.get(pid) or Participant(participant_id=pid, name=name)
        person = person.model_copy(
            update={"name": name, "message_count": person.message_count + 1, "last_turn": seq}
        )
        people[pid] = person
        props = list(proposals)
        decided = list(decisions)
        touched: str | None = None
        decision_id: str | None = None
        position: str | None = None
        contribution: str | None = None
        proposed = move.proposal

        if move.reaction is not None and not _names_another(text, props):
            index = self._reaction_target(props, name, _stems(text), seq)
            if index is not None:
                props[index] = self._react(props[index], name, move.reaction, seq, people)
                touched = props[index].proposal_id
                position = f"{_STANCE_WORDS[move.reaction]}: {props[index].text}"
                about = _stems(props[index].text)
                if move.reaction == "support" and proposed and _matches(_stems(proposed), about):
                    proposed = None  # "I vote for the picnic": a vote for it, not it again
        settled = move.decision if move.decision is not None else move.rejection
        if settled is not None:
            record = self._decide(props, name, settled, seq, rejected=move.rejection is not None)
            if record is not None:
                decided.append(record)
                decision_id = record.decision_id
                touched = record.proposal_id or touched
                verb = "decided against" if move.rejection is not None else "decided"
                position = contribution = f"{verb}: {record.outcome}"
        if proposed is not None:
            proposal = Proposal(
                proposal_id=f"proposal-{seq}", proposer=name, text=proposed, proposed_turn=seq
            )
            said = _stems(proposal.text)
            for i, other in enumerate(props):
                if other.status == "active" and _share_half(said, _stems(other.text)):
                    props[i] = other.model_copy(update={"status": "modified", "resolved_turn": seq})
            props.append(proposal)
            touched = proposal.proposal_id
            position = contribution = f"proposes: {proposal.text}"
        if position is None and move.opinion is not None:
            position = contribution = move.opinion
        if position is not None:
            update: dict[str, object] = {"last_position": clean_value(position, _TEXT_CHARS)}
            if contribution is not None:
                kept = (*person.key_contributions, clean_value(contribution, _TEXT_CHARS))
                update["key_contributions"] = kept[-MAX_CONTRIBUTIONS:]
            people[pid] = people[pid].model_copy(update=update)
        return DeliberationUpdate(
            participants=_bounded_people(people),
            proposals=_bounded_proposals(props),
            decisions=tuple(decided[-MAX_DECISIONS:]),
            proposal_id=touched,
            decision_id=decision_id,
        )

    @staticmethod
    def _reaction_target(
        proposals: Sequence[Proposal], reactor: str, said: frozenset[str], seq: int
    ) -> int | None:
        best: tuple[int, int] | None = None  # (shared words, index)
        latest: int | None = None
        for i, proposal in enumerate(proposals):
            if proposal.status != "active" or proposal.proposer == reactor:
                continue
            if seq - proposal.proposed_turn <= REACTION_WINDOW:
                latest = i
            shared = len(said & _stems(proposal.text))
            if shared and (best is None or shared >= best[0]):
                best = (shared, i)
        return best[1] if best is not None else latest

    @staticmethod
    def _react(
        proposal: Proposal,
        reactor: str,
        stance: Stance,
        seq: int,
        people: dict[str, Participant],
    ) -> Proposal:
        reactions = [r for r in proposal.reactions if r.participant != reactor]
        reactions.append(Reaction(participant=reactor, stance=stance, turn=seq))
        reactions = reactions[-_MAX_REACTIONS:]
        update: dict[str, object] = {"reactions": tuple(reactions)}
        opposed = sum(1 for r in reactions if r.stance == "oppose")
        others = sum(1 for p in people.values() if p.name != proposal.proposer)
        if opposed >= 2 and 2 * opposed > others:
            update.update(status="rejected", resolved_turn=seq)
        return proposal.model_copy(update=update)

    @staticmethod
    def _decide(
        proposals: list[Proposal], by: str, outcome: str, seq: int, *, rejected: bool
    ) -> Decision | None:
        said = _stems(outcome)
        best: tuple[bool, int, int] | None = None  # (matches, shared words, index)
        latest: int | None = None
        for i, proposal in enumerate(proposals):
            if proposal.status != "active":
                continue
            if seq - proposal.proposed_turn <= REACTION_WINDOW:
                latest = i
            wanted = _stems(proposal.text)
            shared = len(said & wanted)
            if not shared:
                continue
            key = (_matches(said, wanted), shared, i)
            if best is None or key >= best:
                best = key
        index = best[2] if best is not None else (latest if not said else None)
        if index is None and not outcome:
            return None
        proposal_id: str | None = None
        supporters = [by]
        if index is not None:
            proposal = proposals[index]
            status = "rejected" if rejected else "accepted"
            if not rejected and best is not None and not best[0]:
                status = "modified"
            proposals[index] = proposal.model_copy(update={"status": status, "resolved_turn": seq})
            proposal_id = proposal.proposal_id
            outcome = outcome or proposal.text
            if not rejected:
                backers = [r.participant for r in proposal.reactions if r.stance == "support"]
                supporters = [proposal.proposer, *backers, by]
        text = f"not {outcome}" if rejected else outcome
        return Decision(
            decision_id=f"decision-{seq}",
            outcome=clean_value(text, 200),
            topic=_topic(outcome),
            decided_by=by,
            decided_turn=seq,
            supporters=tuple(dict.fromkeys(supporters)),
            proposal_id=proposal_id,
        )


def _bounded_people(people: dict[str, Participant]) -> tuple[Participant, ...]:
    kept = list(people.values())
    if len(kept) > MAX_PARTICIPANTS:
        # The least recently heard leave; ties (impossible: one speaker per turn) by id.
        gone = sorted(kept, key=lambda p: (p.last_turn, p.participant_id))
        leaving = {p.participant_id for p in gone[: len(kept) - MAX_PARTICIPANTS]}
        kept = [p for p in kept if p.participant_id not in leaving]
    return tuple(kept)


def _bounded_proposals(proposals: list[Proposal]) -> tuple[Proposal, ...]:
    excess = len(proposals) - MAX_PROPOSALS
    if excess <= 0:
        return tuple(proposals)
    settled = [p.proposal_id for p in proposals if p.status != "active"]
    active = [p.proposal_id for p in proposals if p.status == "active"]
    leaving = set((settled + active)[:excess])
    return tuple(p for p in proposals if p.proposal_id not in leaving)
