"""Tests of :class:`ConversationStateManager`: one deterministic rule per turn (I6)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime, timedelta

import pytest

from agent.memory import (
    ConversationStateManager,
    ConversationTurn,
    ExtractiveSummarizer,
    JobRef,
    SessionState,
)
from agent.memory.schemas import dump_json

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2
OTHER_SID = "ses_" + "fedcba9876543210" * 2


def turn(seq: int, session_id: str = SID, **fields: object) -> ConversationTurn:
    values: dict[str, object] = {
        "turn_id": f"trn_{seq:032x}",
        "session_id": session_id,
        "seq": seq,
        "user_text": f"Message {seq}. With a second sentence.",
        "assistant_text": f"Answer {seq}. More.",
        "intent": "chat",
        "created_at": T0 + timedelta(minutes=seq),
    }
    values.update(fields)
    return ConversationTurn.model_validate(values)


def fold(manager: ConversationStateManager, turns: Iterable[ConversationTurn]) -> SessionState:
    state = SessionState(session_id=SID)
    for t in turns:
        state = manager.apply(state, t)
    return state


async def as_async(turns: Iterable[ConversationTurn]) -> AsyncIterator[ConversationTurn]:
    for t in turns:
        yield t


def test_apply_moves_the_state_by_one_turn():
    """``apply`` counts the turn and records its intent and kind of response."""
    manager = ConversationStateManager()
    start = SessionState(session_id=SID, status="resuming")

    state = manager.apply(start, turn(1, intent="greet"))

    assert state.turn_count == 1
    assert state.status == "active"
    assert state.last_intent == "greet"
    assert state.last_response_type == "text"
    assert state.summary_buffer == ("#1 user: Message 1. -> Answer 1.",)
    assert start.turn_count == 0  # the input state is left as it was


@pytest.mark.parametrize(
    ("fields", "response_type"),
    [
        ({}, "text"),
        ({"action_name": "schedule_reminder"}, "action"),
        ({"assistant_text": None, "status": "recorded"}, "none"),
        ({"assistant_text": "", "status": "recorded"}, "none"),
    ],
)
def test_last_response_type_follows_the_answer(fields, response_type):
    """No answer is ``none``, an answer with an action is ``action``, else ``text``."""
    state = ConversationStateManager().apply(SessionState(session_id=SID), turn(1, **fields))

    assert state.last_response_type == response_type


def test_apply_is_deterministic():
    """Same state and turn in, equal state out, byte for byte, from any manager instance."""
    turns = [turn(seq) for seq in range(1, 26)]

    first = fold(ConversationStateManager(), turns)
    second = fold(ConversationStateManager(), turns)

    assert first == second
    assert dump_json(first) == dump_json(second)
    manager = ConversationStateManager()
    state = fold(manager, turns[:-1])
    assert manager.apply(state, turns[-1]) == manager.apply(state, turns[-1])


def test_apply_rejects_a_turn_of_another_session():
    """A turn of another session is a ValueError naming the session."""
    manager = ConversationStateManager()

    with pytest.raises(ValueError, match=f"is not of session {SID}"):
        manager.apply(SessionState(session_id=SID), turn(1, session_id=OTHER_SID))


@pytest.mark.parametrize("seq", [1, 2, 4, 10])
def test_apply_rejects_a_non_consecutive_seq(seq):
    """Only the turn right after the last one applies: no gaps, no repeats."""
    manager = ConversationStateManager()
    state = fold(manager, [turn(1), turn(2)])

    with pytest.raises(ValueError, match=f"has seq {seq}; session {SID} expects 3"):
        manager.apply(state, turn(seq))


def test_job_refs_accumulate_without_duplicates():
    """Scheduled job refs join the active list once each, in the order first seen."""
    manager = ConversationStateManager()
    reminder = JobRef(job_id="reminder:1", kind="reminder", label="call mum")
    backup = JobRef(job_id="job:2", label="nightly backup")
    later = JobRef(job_id="reminder:3", kind="reminder", label="water plants")

    state = fold(
        manager,
        [
            turn(1, job_refs=(reminder, backup)),
            turn(2),
            turn(3, job_refs=(reminder, later, later)),
        ],
    )

    assert [ref.job_id for ref in state.active_job_refs] == ["reminder:1", "job:2", "reminder:3"]
    assert state.active_job_refs == (reminder, backup, later)


def test_job_ref_done_or_cancelled_leaves_the_active_list():
    """A job ref reported ``done`` or ``cancelled`` is removed; unknown ones change nothing."""
    manager = ConversationStateManager()
    one = JobRef(job_id="reminder:1")
    two = JobRef(job_id="reminder:2")
    three = JobRef(job_id="reminder:3")

    state = fold(
        manager,
        [
            turn(1, job_refs=(one, two, three)),
            turn(2, job_refs=(one.model_copy(update={"status": "done"}),)),
            turn(3, job_refs=(JobRef(job_id="never:seen", status="cancelled"),)),
            turn(4, job_refs=(three.model_copy(update={"status": "cancelled"}),)),
        ],
    )

    assert state.active_job_refs == (two,)


async def test_rebuild_over_the_turns_equals_stepwise_apply():
    """Folding a whole log with ``rebuild`` gives the state that live ``apply`` calls gave."""
    manager = ConversationStateManager(ExtractiveSummarizer(every_n=10, keep_raw=3))
    turns = [
        turn(seq, job_refs=(JobRef(job_id=f"job:{seq}"),) if seq % 7 == 0 else ())
        for seq in range(1, 38)
    ]
    live = SessionState(session_id=SID)
    for t in turns:
        live = manager.apply(live, t)

    rebuilt = await manager.rebuild(SID, as_async(turns))

    assert rebuilt == live
    assert rebuilt.turn_count == 37
    assert rebuilt.rolling_summary != ""
    assert len(rebuilt.active_job_refs) == 5


async def test_rebuild_of_an_empty_log_is_the_initial_state():
    """A session with no turns rebuilds to a fresh state."""
    assert await ConversationStateManager().rebuild(SID, as_async([])) == SessionState(
        session_id=SID
    )


async def test_rebuild_refuses_a_log_with_a_gap():
    """A log with a missing turn cannot be folded: the rebuild raises instead of guessing."""
    with pytest.raises(ValueError, match="expects 2"):
        await ConversationStateManager().rebuild(SID, as_async([turn(1), turn(3)]))


def test_the_summarizer_is_pluggable():
    """The manager folds summaries with the summarizer it was given."""
    manager = ConversationStateManager(ExtractiveSummarizer(every_n=2, keep_raw=1))

    state = fold(manager, [turn(1), turn(2)])

    assert state.rolling_summary == "#1 user: Message 1. -> Answer 1."
    assert state.last_summary_delta == "#1 user: Message 1. -> Answer 1."
    assert state.summary_buffer == ("#2 user: Message 2. -> Answer 2.",)
