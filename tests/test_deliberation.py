"""Tests of group deliberation: participants, proposals with reactions, decisions (seed 000)."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime, timedelta

import pytest

from agent.memory import (
    ConversationContextPacket,
    ConversationTurn,
    InboundMessage,
    Reply,
    SessionState,
    render_packet,
)
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.group_schemas import Reaction
from agent.memory.rules.deliberation import (
    MAX_CONTRIBUTIONS,
    MAX_DECISIONS,
    MAX_PARTICIPANTS,
    MAX_PROPOSALS,
    REACTION_WINDOW,
    DeliberationTracker,
)
from agent.memory.rules.extraction import split_clauses
from agent.memory.schemas import dump_json

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2
IDS = {"Alice": 1, "Bob": 2, "Carol": 3, "Dave": 4}


def group_turn(seq: int, who: str, text: str, **fields: object) -> ConversationTurn:
    """Turn ``seq``: ``who`` says ``text`` in the group; the bot keeps it without answering."""
    values: dict[str, object] = {
        "turn_id": f"trn_{seq:032x}",
        "session_id": SID,
        "seq": seq,
        "user_text": text,
        "assistant_text": None,
        "status": "recorded",
        "speaker": who,
        "user_id": IDS.get(who, zlib.crc32(who.encode())),
        "created_at": T0 + timedelta(minutes=seq),
    }
    values.update(fields)
    return ConversationTurn.model_validate(values)


def group(lines: Iterable[tuple[str, str]], chat_type: str = "group") -> SessionState:
    """Fold a group conversation of ``(speaker, text)`` lines into a state."""
    manager = ConversationStateManager()
    state = SessionState(session_id=SID, chat_type=chat_type)
    for who, text in lines:
        state = manager.apply(state, group_turn(state.turn_count + 1, who, text))
    return state


def test_a_group_decision_with_reactions_accepts_the_proposal():
    """Three members: a proposal, a +1, a disagreement, then "we agreed on X": the decision
    is recorded with its supporters and the proposal is ``accepted`` at that turn."""
    state = group(
        [
            ("Alice", "I propose we meet on Friday at 5 to plan the launch"),
            ("Bob", "+1"),
            ("Carol", "I disagree, Friday evening is bad for me"),
            ("Alice", "ok, we agreed on Friday at 5 then"),
        ]
    )

    (proposal,) = state.proposals
    assert proposal.proposal_id == "proposal-1"
    assert (proposal.proposer, proposal.text) == (
        "Alice",
        "we meet on Friday at 5 to plan the launch",
    )
    assert proposal.reactions == (
        Reaction(participant="Bob", stance="support", turn=2),
        Reaction(participant="Carol", stance="oppose", turn=3),
    )
    assert (proposal.status, proposal.resolved_turn) == ("accepted", 4)
    (decision,) = state.decisions
    assert decision.decision_id == "decision-4"
    assert decision.outcome == "Friday at 5"
    assert decision.proposal_id == "proposal-1"
    assert decision.decided_by == "Alice"
    assert decision.supporters == ("Alice", "Bob")
    assert state.resolved_entities["the decision"] == "decision-4"
    assert state.resolved_entities["the proposal"] == "proposal-1"


def test_participants_keep_their_count_position_and_contributions():
    """Each member counts their messages; a proposal, reaction, decision or opinion is their
    latest position; proposals, decisions and opinions (not reactions) are contributions."""
    state = group(
        [
            ("Alice", "I propose we meet on Friday at 5 to plan the launch"),
            ("Bob", "+1"),
            ("Carol", "I disagree, Friday evening is bad for me"),
            ("Carol", "lol"),
            ("Bob", "I think the budget needs another review"),
            ("Alice", "ok, we agreed on Friday at 5 then"),
        ]
    )

    people = {p.name: p for p in state.participants}
    assert [p.participant_id for p in state.participants] == ["user:1", "user:2", "user:3"]
    assert {name: p.message_count for name, p in people.items()} == {
        "Alice": 2,
        "Bob": 2,
        "Carol": 2,
    }
    assert people["Carol"].last_position == (
        "opposes: we meet on Friday at 5 to plan the launch"
    )  # "lol" is no position
    assert people["Carol"].key_contributions == ()
    assert people["Bob"].last_position == "I think the budget needs another review"
    assert people["Alice"].key_contributions == (
        "proposes: we meet on Friday at 5 to plan the launch",
        "decided: Friday at 5",
    )
    assert people["Alice"].last_turn == 6


def test_a_counter_proposal_modifies_the_earlier_one_and_is_the_one_decided():
    """A proposal on the same subject marks the earlier one ``modified``; the decision then
    settles the counter-proposal."""
    state = group(
        [
            ("Alice", "I propose we meet on Friday at 5"),
            ("Carol", "no way, how about Friday at 3 instead?"),
            ("Bob", "sounds good"),
            ("Alice", "let's go with Friday at 3"),
        ]
    )

    first, counter = state.proposals
    assert (first.status, first.resolved_turn) == ("modified", 2)
    assert first.reactions == (Reaction(participant="Carol", stance="oppose", turn=2),)
    assert (counter.proposer, counter.text, counter.status) == ("Carol", "Friday at 3", "accepted")
    assert counter.reactions == (Reaction(participant="Bob", stance="support", turn=3),)
    assert state.decisions[-1].proposal_id == counter.proposal_id
    assert state.decisions[-1].supporters == ("Carol", "Bob", "Alice")


@pytest.mark.parametrize(
    ("said", "proposed"),
    [
        ("I vote Thai", "Thai"),
        ("ok I vote for the Thai place", "the Thai place"),
        ("let's do pizza then", "pizza"),
        ("we could try the new ramen bar", "the new ramen bar"),
        ("let's go to the Italian on Main St", "the Italian on Main St"),
        ("why don't we get sushi", "get sushi"),
    ],
)
def test_a_proposal_said_as_a_vote_or_a_lets_is_kept(said, proposed):
    """ "I vote Thai", "let's do pizza then": an option put to the group, kept as a proposal."""
    state = group([("Ana", "where should we go for the team dinner?"), ("Ben", said)])
    (proposal,) = state.proposals
    assert (proposal.proposer, proposal.text, proposal.status) == ("Ben", proposed, "active")


@pytest.mark.parametrize(
    "said", ["let's do it", "let's try that", "we could do something fun", "I vote yes"]
)
def test_a_lets_of_nothing_named_proposes_nothing(said):
    assert group([("Ana", "dinner on Friday?"), ("Ben", said)]).proposals == ()


@pytest.mark.parametrize("said", ["pizza it is", "agreed, pizza it is then", "deal! pizza it is"])
def test_an_option_said_settled_is_decided(said):
    state = group([("Ben", "let's do pizza"), ("Cy", "I vote for pizza"), ("Ana", said)])
    (proposal,) = state.proposals
    assert proposal.status == "accepted"
    assert proposal.reactions[0] == Reaction(participant="Cy", stance="support", turn=2)
    assert state.decisions[-1].supporters == ("Ben", "Cy", "Ana")


def test_a_decision_on_a_variant_marks_the_proposal_modified():
    """A decision that shares the proposal's subject but not its terms settles it as
    ``modified``."""
    state = group(
        [
            ("Alice", "[PROPOSAL] rent a van for the move on Saturday"),
            ("Bob", "[DECISION] rent two cars for the move"),
        ]
    )

    assert state.proposals[0].status == "modified"
    assert state.decisions[0].outcome == "rent two cars for the move"
    assert state.decisions[0].proposal_id == "proposal-1"


def test_opposition_of_most_others_rejects_a_proposal():
    """Opposed by at least two and a strict majority of the other members, a proposal is
    ``rejected``; one "-1" alone does not reject it."""
    lines = [
        ("Dave", "hi all"),
        ("Alice", "what if we move the launch to March?"),
        ("Bob", "-1"),
    ]
    assert group(lines).proposals[0].status == "active"

    state = group([*lines, ("Carol", "bad idea, March is too late")])

    (proposal,) = state.proposals
    assert (proposal.status, proposal.resolved_turn) == ("rejected", 4)
    assert state.decisions == ()


def test_a_decision_against_rejects_the_proposal():
    """A decision against a proposal ("we decided against X") is "not X" and rejects it."""
    state = group(
        [
            ("Alice", "how about a team dinner at the harbour?"),
            ("Bob", "we decided against the harbour dinner"),
        ]
    )

    assert state.proposals[0].status == "rejected"
    assert state.decisions[0].outcome == "not the harbour dinner"
    assert state.decisions[0].proposal_id == "proposal-1"


def test_a_bare_decision_settles_the_latest_proposal():
    """A bare "we agreed!" accepts the latest active proposal, whose text it takes."""
    state = group([("Alice", "shall we use Postgres for the new service?"), ("Bob", "we agreed!")])

    assert state.proposals[0].status == "accepted"
    assert state.decisions[0].outcome == "use Postgres for the new service"


def test_reactions_name_the_proposal_they_share_words_with():
    """A reaction goes to the active proposal it shares most words with, else to the latest;
    the latest reaction of a member replaces their earlier one; own proposals take none."""
    state = group(
        [
            ("Alice", "I propose a picnic in the park"),
            ("Bob", "my suggestion is a boat trip on the river"),
            ("Carol", "I agree, the picnic in the park is perfect"),
            ("Carol", "+1"),  # the latest: the boat trip
            ("Bob", "+1"),  # his own proposal is the latest: Alice's is the one he can back
            ("Carol", "not sure about the picnic anymore"),
        ]
    )

    picnic, boat = state.proposals
    assert picnic.reactions == (
        Reaction(participant="Bob", stance="support", turn=5),
        Reaction(participant="Carol", stance="neutral", turn=6),
    )
    assert boat.reactions == (Reaction(participant="Carol", stance="support", turn=4),)


def test_a_reaction_naming_a_thing_no_proposal_is_about_backs_none():
    """ "Italian works for me" backs no Thai place (it names another option); "the Thai place
    sounds good" and "tbh that works for me" (naming nothing but a filler) back it."""
    state = group(
        [
            ("Bob", "how about the Thai place on Main St"),
            ("Carol", "I'd prefer Italian tbh"),
            ("Alice", "Italian works for me"),
            ("Dave", "the Thai place sounds good"),
            ("Erin", "tbh that works for me"),
        ]
    )

    (thai,) = state.proposals
    assert thai.reactions == (
        Reaction(participant="Dave", stance="support", turn=4),
        Reaction(participant="Erin", stance="support", turn=5),
    )


def test_a_reaction_long_after_any_proposal_is_no_reaction():
    """A "+1" that names nothing refers only to a proposal of the last REACTION_WINDOW turns."""
    lines = [("Alice", "I propose a picnic in the park")]
    lines += [("Bob", f"chatting about the weather {n}") for n in range(REACTION_WINDOW)]
    lines.append(("Carol", "+1"))

    assert group(lines).proposals[0].reactions == ()


@pytest.mark.parametrize(
    ("said", "outcome"),
    [
        ("ok, Sunday it is", "Sunday"),
        ("Sunday at 9 it is!", "Sunday at 9"),
        ("settled, Sunday at 9", "Sunday at 9"),
        ("settled: Sunday", "Sunday"),
        ("deal: Sunday at 9", "Sunday at 9"),
        ("agreed: Sunday at the trailhead", "Sunday at the trailhead"),
        ("ok fine, Sunday it is", "Sunday"),
        ("yes, Sunday it is", "Sunday"),
        ("perfect, Sunday it is then", "Sunday"),
    ],
)
def test_a_decision_said_the_short_way(said, outcome):
    """ "Sunday it is", "settled, Sunday at 9": the group settled, and the proposal it names is
    accepted."""
    state = group([("Alice", "how about Saturday?"), ("Carol", "how about Sunday?"), ("Bob", said)])

    (decision,) = state.decisions
    assert decision.outcome == outcome
    assert state.proposals[1].status == "accepted"


@pytest.mark.parametrize("said", ["that's how it is", "what it is", "so it is", "agreed", "deal"])
def test_a_way_of_speaking_or_a_nod_is_no_decision(said):
    """ "that's how it is" settles nothing; "agreed" and "deal" alone back the proposal."""
    state = group([("Alice", "how about Sunday?"), ("Bob", said)])

    assert state.decisions == ()


@pytest.mark.parametrize(
    "asked",
    ["let's go with Lisbon then?", "should we go with Lisbon?", "we could go with Lisbon?",
     "shall we go with Lisbon?"],
)  # fmt: skip
def test_going_with_something_asked_is_a_proposal_and_settled_the_short_way(asked):
    """ "let's go with Lisbon then?" asks the others: a proposal, not yet a decision; "ok fine,
    Lisbon it is" then settles it."""
    state = group([("Alice", asked)])
    assert state.decisions == ()
    assert [p.text for p in state.proposals] == ["Lisbon"]

    state = group([("Alice", asked), ("Carol", "ok fine, Lisbon it is")])
    assert [d.outcome for d in state.decisions] == ["Lisbon"]
    assert state.proposals[0].status == "accepted"


def test_questions_are_not_decisions():
    """A question ("what have we decided?") records no decision."""
    state = group([("Alice", "how about pizza tonight?"), ("Bob", "what have we decided?")])

    assert state.decisions == ()
    assert state.proposals[0].status == "active"


def test_private_chats_track_no_deliberation():
    """In a private chat the same words move no participants, proposals or decisions."""
    state = group(
        [("Ada", "I propose we meet on Friday"), ("Ada", "we agreed on Friday")], "private"
    )

    assert (state.participants, state.proposals, state.decisions) == ((), (), ())


def test_supergroups_are_groups():
    """A supergroup tracks deliberation like a group."""
    state = group([("Alice", "[PROPOSAL] ship on Monday")], "supergroup")

    assert state.proposals[0].text == "ship on Monday"


def test_group_loops_and_clarifications_belong_to_their_speaker():
    """In a group a request is owned by who asked; a clarification waits for the member
    asked, not for anyone else."""
    manager = ConversationStateManager()
    state = group([("Bob", "Carol, can you book the meeting room?")])
    (loop,) = state.open_loops
    assert (loop.kind, loop.text, loop.owner) == ("request", "book the meeting room", "Bob")

    asked = group_turn(
        2, "Alice", "@bot book a table", assistant_text="For how many people?", status="answered"
    )
    state = manager.apply(state, asked)
    assert state.pending_clarifications[0].asked_of == "Alice"
    state = manager.apply(state, group_turn(3, "Carol", "I booked the meeting room"))
    assert state.status == "awaiting_clarification"  # Carol was not asked
    assert state.open_loops == ()
    assert state.closed_loops[-1].closed_turn == 3
    state = manager.apply(state, group_turn(4, "Alice", "six of us"))
    assert state.status == "active"


def test_the_packet_carries_and_renders_the_deliberation():
    """The packet holds participants, proposals, decisions and references; the rendering
    shows them and the token estimate counts them."""
    state = group(
        [
            ("Alice", "I propose we meet on Friday at 5 to plan the launch"),
            ("Bob", "+1"),
            ("Carol", "I disagree, Friday evening is bad for me"),
            ("Alice", "[PROPOSAL] a launch party on Saturday"),
            ("Bob", "ok, we agreed on Friday at 5"),
        ]
    )
    builder = ConversationContextBuilder()
    empty = builder.build(state.model_copy(update={"participants": (), "proposals": (),
                                                  "decisions": ()}), [], now=T0)  # fmt: skip

    packet = builder.build(state, [], now=T0)

    assert packet.participants == state.participants
    assert packet.proposals == state.proposals
    assert packet.decisions == state.decisions
    assert packet.resolved_entities_map == state.resolved_entities
    assert packet.token_estimate > empty.token_estimate
    rendered = render_packet(packet)
    assert "Decisions:\n- Friday at 5 (supported by Alice, Bob)" in rendered
    assert (
        '- Alice: "we meet on Friday at 5 to plan the launch" [accepted]; support: Bob; '
        "oppose: Carol" in rendered
    )
    assert '- Alice: "a launch party on Saturday" [active]' in rendered
    assert "- Carol (1 message): opposes: we meet on Friday at 5 to plan the launch" in rendered
    assert "Active topics: " in rendered
    assert '- "it", "that", "that decision", "the decision" = Friday at 5 (decision-5)' in rendered


def test_deliberation_state_is_bounded():
    """However long a group talks and however many join, participants, contributions,
    proposals, reactions and decisions stay within their limits."""
    lines = []
    for n in range(600):
        who = f"member{n % 35}"
        lines += [
            (who, f"I propose we try plan number {n} for the launch"),
            (f"member{(n + 1) % 35}", "+1"),
            (f"member{(n + 2) % 35}", "I think we should keep it simple"),
        ]
        if n % 3 == 0:
            lines.append((who, f"[DECISION] plan {n}"))

    state = group(lines)

    assert len(state.participants) == MAX_PARTICIPANTS
    assert all(len(p.key_contributions) <= MAX_CONTRIBUTIONS for p in state.participants)
    assert len(state.proposals) <= MAX_PROPOSALS
    assert all(len(p.reactions) <= MAX_PARTICIPANTS for p in state.proposals)
    assert len(state.decisions) == MAX_DECISIONS
    assert len(dump_json(state)) < 40_000


def test_the_tracker_reads_only_the_turn_and_the_state():
    """Applying the same message to the same state gives equal results (no clock, no ids)."""
    tracker = DeliberationTracker()
    message = group_turn(1, "Alice", "I propose we meet on Friday")
    clauses = split_clauses(message.user_text)

    first = tracker.apply((), (), (), message, clauses)
    second = DeliberationTracker().apply((), (), (), message, clauses)

    assert first == second
    assert first.proposal_id == "proposal-1"


# -- through the lane: I6 for a group ------------------------------------------------------------

SCRIPT = [
    ("Alice", "I propose we meet on Friday at 5 to plan the launch"),
    ("Bob", "+1"),
    ("Carol", "I disagree, Friday evening is bad for me"),
    ("Alice", "how about Friday at 3 instead?"),
    ("Bob", "sounds good"),
    ("Carol", "works for me"),
    ("Alice", "great, we agreed on Friday at 3 for the launch meeting"),
    ("Bob", "Carol, can you book the meeting room?"),
    ("Carol", "I booked the meeting room"),
    ("Dave", "@bot what did we decide?"),
    ("Bob", "I think the launch budget needs another review"),
    ("Dave", "I'll send the budget to everyone"),
    ("Carol", "what if we cut the catering?"),
    ("Alice", "-1"),
]


class GroupEngine:
    """Answers only messages addressed to it, with the offline concierge's decision list."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        if packet.decisions:
            return Reply(text=f"We decided: {packet.decisions[-1].outcome}.", intent="llm")
        return Reply(text="Nothing decided yet. Which topic?", intent="llm")


async def test_a_group_through_the_lane_rebuilds_to_the_live_state(lane):
    """I6 in a group: the state the lane keeps (and checkpoints) equals the fold of its log."""
    engine = GroupEngine()
    for n in range(3):
        for i, (who, text) in enumerate(SCRIPT):
            message = InboundMessage(
                chat_id=-100,
                text=text,
                chat_type="group",
                user_id=IDS[who],
                speaker=who,
                update_id=n * 100 + i,
                wants_reply=text.startswith("@bot"),
                received_at=T0,
            )
            await lane.on_turn(message, engine)
    sid = lane.session_id_for_chat(-100)
    assert sid is not None
    session = await lane.inspector.session(sid)
    assert session is not None

    rebuilt = await lane.inspector.rebuild_state(sid)

    assert rebuilt.chat_type == "group"
    assert rebuilt.log_view() == session.state.log_view()
    snapshot = await lane.inspector.checkpoint(sid)
    assert snapshot is not None
    assert snapshot.state.log_view() == rebuilt.log_view()
    assert [p.name for p in rebuilt.participants] == ["Alice", "Bob", "Carol", "Dave"]
    assert rebuilt.decisions
    packet = await lane.inspector.packet(-100)
    assert packet is not None
    assert packet.decisions == rebuilt.decisions


async def _aiter(turns: list[ConversationTurn]) -> AsyncIterator[ConversationTurn]:
    for t in turns:
        yield t


@pytest.mark.parametrize("chat_type", ["group", "supergroup"])
async def test_rebuild_starts_from_the_chat_type(chat_type):
    """``rebuild`` folds from a state of the session's chat type, so group rules apply."""
    turns = [group_turn(n, who, text) for n, (who, text) in enumerate(SCRIPT, start=1)]
    live = group(SCRIPT, chat_type)

    rebuilt = await ConversationStateManager().rebuild(SID, _aiter(turns), chat_type=chat_type)

    assert rebuilt == live
    assert rebuilt.proposals


def test_a_message_addressed_by_handle_moves_the_deliberation():
    """A message starting with a handle ("@helper_bot I think ...", "@Alice +1") is read
    without it: an opinion becomes the speaker's position, a vote counts."""
    state = group(
        [
            ("Alice", "I propose we meet on Friday at 5 to plan the launch"),
            ("Bob", "@Alice +1"),
            ("Carol", "@helper_bot I think Friday evening is bad for the team"),
        ]
    )

    (proposal,) = state.proposals
    assert proposal.reactions == (Reaction(participant="Bob", stance="support", turn=2),)
    people = {p.name: p for p in state.participants}
    assert people["Carol"].last_position == "I think Friday evening is bad for the team"


@pytest.mark.parametrize(
    ("said", "stance"),
    [
        ("the picnic sounds good to me", "support"),
        ("a picnic in the park works for me", "support"),
        ("I'm all for the picnic", "support"),
        ("I vote for the picnic", "support"),
        ("the park is fine by me", "support"),
        ("I'm not for the picnic", "oppose"),
        ("the picnic is a bit too far for me", "oppose"),
        ("a picnic sounds a bit too cold", "oppose"),
        ("the picnic doesn't sound good to me", "oppose"),
        ("a picnic in the park doesn't work for me", "oppose"),
    ],
)
def test_a_reaction_may_name_what_it_reacts_to_first(said, stance):
    """"the picnic sounds good to me": the reaction is inside the sentence, after what it is
    about, and goes to the proposal that names it."""
    state = group(
        [
            ("Alice", "I propose a picnic in the park"),
            ("Dave", "my suggestion is a museum visit"),
            ("Carol", said),
        ]
    )
    picnic, museum = state.proposals
    assert picnic.reactions == (Reaction(participant="Carol", stance=stance, turn=3),)
    assert museum.reactions == ()


def test_a_long_story_that_sounds_good_somewhere_is_no_reaction():
    state = group(
        [
            ("Alice", "I propose a picnic in the park"),
            ("Carol", "yesterday my neighbour told me a long story and the ending sounds good"),
        ]
    )
    assert state.proposals[0].reactions == ()


def test_what_a_member_says_about_themselves_is_theirs():
    """Each member's facts are kept apart: a member restating or correcting a fact changes
    their own, never another's of the same slot."""
    state = group(
        [
            ("Alice", "I live in Porto"),
            ("Bob", "I live in Lisbon and I'm allergic to peanuts"),
            ("Alice", "actually it's Braga, not Porto"),
            ("Carol", "I live in Faro"),
            ("Bob", "I live in Coimbra now"),
        ]
    )

    facts = {(f.speaker, f.key): f.value for f in state.facts}
    assert facts == {
        ("Alice", "location"): "Braga",
        ("Bob", "location"): "Coimbra",
        ("Bob", "allergy:peanuts"): "peanuts",
        ("Carol", "location"): "Faro",
    }


def test_a_member_s_correction_puts_right_only_their_own_to_do():
    """ "sorry, I need to buy boots" after another member's to-do is a to-do of its own: it
    puts right no one else's."""
    state = group([("Alice", "I need to book the bus"), ("Bob", "sorry, I need to buy boots")])

    assert [(lp.owner, lp.text) for lp in state.open_loops] == [
        ("Alice", "book the bus"),
        ("Bob", "buy boots"),
    ]
