"""Tests of agent/memory/rules/session_rules.py: the per-turn rules the state and the
concierge share, called directly (the state manager's tests cover them through the fold)."""

from __future__ import annotations

from datetime import UTC, datetime

from agent.memory.rules.extraction import split_clauses
from agent.memory.rules.session_rules import (
    MAX_CLARIFICATIONS,
    loop_owner,
    merge_facts,
    update_clarifications,
    update_dialogue_loops,
    update_open_loops,
)
from agent.memory.schemas import ConversationTurn, Fact, OpenLoop, PendingClarification

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2
KEPT = "I can't answer that yet; I've kept your question open."


def turn(seq: int, user_text: str, assistant_text: str = "OK.", **fields: object):
    values: dict[str, object] = {
        "turn_id": f"trn_{seq:032x}",
        "session_id": SID,
        "seq": seq,
        "user_text": user_text,
        "assistant_text": assistant_text,
        "intent": "chat",
        "created_at": T0,
    }
    values.update(fields)
    return ConversationTurn.model_validate(values)


def fact(key: str, value: str, turn: int = 1) -> Fact:
    return Fact(key=key, value=value, turn=turn)


def test_merge_facts_replaces_a_restated_slot_and_keeps_the_newest_last():
    """A fact of a slot already held replaces it and moves to the end; the limit drops the
    oldest."""
    old = (fact("name", "Ada"), fact("location", "Lisbon"))
    merged = merge_facts(old, [fact("name", "Mia", turn=2)])
    assert [(f.key, f.value) for f in merged] == [("location", "Lisbon"), ("name", "Mia")]
    assert merge_facts(old, [], limit=1) == (old[1],)
    assert merge_facts(old, [], limit=0) == ()


def test_update_open_loops_closes_first_then_opens():
    """Closing comes first: "I booked the hotel and I need to book the flight" closes one to-do
    and opens one with the id of the turn; a restated to-do is reported as already open."""
    hotel = OpenLoop(loop_id="loop-1-1", text="book the hotel", opened_turn=1)
    update = update_open_loops([hotel], "I booked the hotel and I need to book the flight", seq=4)
    assert update.closed == (hotel.model_copy(update={"closed_turn": 4}),)
    (flight,) = update.opened
    assert (flight.loop_id, flight.opened_turn) == ("loop-4-1", 4)
    assert update.loops == (flight,)

    again = update_open_loops(update.loops, f"todo: {flight.text}", seq=5)
    assert again.opened == ()
    assert again.already_open == (flight,)


def test_update_dialogue_loops_opens_a_kept_question_and_closes_it_when_covered():
    """A question the bot kept open becomes a ``question`` loop of its owner; a statement
    covering its subject words closes it."""
    question = "what's the best neighbourhood for hotels in Lisbon?"
    asked = turn(1, question, KEPT, intent="kept_open")
    loops, closed = update_dialogue_loops((), asked, split_clauses(question), owner="Ada")
    (loop,) = loops
    assert (loop.kind, loop.owner, loop.loop_id, closed) == ("question", "Ada", "loop-1-1", ())

    said = "a friend says the best hotels in Lisbon are in the Alfama area"
    loops, closed = update_dialogue_loops(loops, turn(2, said), split_clauses(said))
    assert loops == ()
    assert closed == (loop.model_copy(update={"closed_turn": 2}),)


def test_update_clarifications_waits_for_the_person_asked():
    """The reply's question waits for whoever was asked; their next message answers it, the
    others' do not; the list is bounded."""
    pending, asked = update_clarifications(
        (), turn(1, "book a table", "For how many people?"), owner="Ada"
    )
    assert asked == PendingClarification(
        question="For how many people?", asked_turn=1, asked_of="Ada"
    )
    assert pending == (asked,)
    still, _ = update_clarifications(pending, turn(2, "hello", "Hi."), owner="Ben")
    assert still == pending
    answered, _ = update_clarifications(pending, turn(3, "four", "Done."), owner="Ada")
    assert answered == ()

    many = tuple(
        PendingClarification(question=f"q{n}?", asked_turn=n, asked_of="Ada") for n in range(9)
    )
    kept, _ = update_clarifications(many, turn(10, "", ""), owner="Ada")
    assert kept == many[-MAX_CLARIFICATIONS:]


def test_loop_owner_is_the_speaker_in_a_group_only():
    """In a group, loops belong to the speaker (or ``user <id>``); in a private chat to nobody."""
    said = turn(1, "I'll send the report", speaker="Ada", user_id=7)
    assert loop_owner(said, "group") == "Ada"
    assert loop_owner(turn(1, "hi", user_id=7), "supergroup") == "user 7"
    assert loop_owner(said, "private") is None
