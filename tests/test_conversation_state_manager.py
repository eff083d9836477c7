"""Tests of :class:`ConversationStateManager`: one deterministic rule per turn (I6)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime, timedelta

import pytest

from agent.db import Database
from agent.memory import (
    CheckpointWriter,
    ConversationContextPacket,
    ConversationLane,
    ConversationTurn,
    InboundMessage,
    JobRef,
    OpenLoop,
    Reply,
    SessionState,
)
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_state_manager import MAX_CLOSED_LOOPS, ConversationStateManager
from agent.memory.conversation_summarizer import ExtractiveSummarizer
from agent.memory.rules.session_rules import MAX_CLARIFICATIONS, MAX_OPEN_LOOPS
from agent.memory.rules.topic_tracker import TopicTracker
from agent.memory.schemas import PendingClarification, dump_json

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

    delta = "[turns 1-1]\n#1 user: Message 1\n#1 user: With a second sentence"
    assert state.rolling_summary == state.last_summary_delta == delta
    assert state.summary_buffer == ("#2 user: Message 2. -> Answer 2.",)


# -- the rules of a turn: loops, clarifications, references, topics ----------------------------


def say(
    manager: ConversationStateManager,
    state: SessionState,
    text: str,
    answer: str | None = "ok.",
    intent: str | None = "chat",
    **fields: object,
) -> SessionState:
    """Apply the next turn of ``state``: ``text`` from the user, ``answer`` from the bot."""
    nxt = turn(state.turn_count + 1, state.session_id, user_text=text, assistant_text=answer)
    return manager.apply(state, nxt.model_copy(update={"intent": intent, **fields}))


KEPT = "I can't do that offline, so I've kept it on your list."


def talk_through(lines: Iterable[tuple[str, str | None, str | None]]) -> SessionState:
    manager = ConversationStateManager()
    state = SessionState(session_id=SID)
    for text, answer, intent in lines:
        state = say(manager, state, text, answer, intent)
    return state


def test_a_todo_loop_is_opened_then_closed_with_its_closing_turn():
    """A to-do stays open until a closer matches it; it then leaves ``open_loops`` and is kept
    in ``closed_loops`` with the seq of the turn that closed it."""
    state = talk_through(
        [
            ("remind me to book the hotel", "Added to your list: book the hotel.", "add_todo"),
            ("what a lovely day", "Sorry, I didn't understand that.", "unknown"),
        ]
    )
    assert state.open_loops == (OpenLoop(loop_id="loop-1-1", text="book the hotel", opened_turn=1),)

    state = say(
        ConversationStateManager(), state, "I booked the hotel", "Ticked off.", "close_todo"
    )

    assert state.open_loops == ()
    assert state.closed_loops == (
        OpenLoop(loop_id="loop-1-1", text="book the hotel", opened_turn=1, closed_turn=3),
    )


def test_a_commitment_opens_a_loop_until_it_is_done():
    """A promise ("I'll send you the report") opens a ``commitment`` loop until it is done."""
    manager = ConversationStateManager()
    state = say(
        manager,
        SessionState(session_id=SID),
        "I'll send you the budget spreadsheet tomorrow",
        "Noted your promise: “send you the budget spreadsheet tomorrow”.",
        "note_commitment",
    )
    (loop,) = state.open_loops
    assert (loop.kind, loop.text, loop.opened_turn) == (
        "commitment",
        "send you the budget spreadsheet tomorrow",
        1,
    )

    state = say(manager, state, "I'll be late today, sorry")  # a state, not a promise
    assert state.open_loops == (loop,)
    state = say(manager, state, "I sent the budget spreadsheet")

    assert state.open_loops == ()
    assert state.closed_loops == (loop.model_copy(update={"closed_turn": 3}),)


def test_a_request_the_bot_did_not_handle_stays_open_until_dropped():
    """A request the bot kept open (intent ``kept_open``) opens a ``request`` loop; one the
    bot handled opens nothing; "never mind" closes the newest request."""
    manager = ConversationStateManager()
    state = say(
        manager, SessionState(session_id=SID), "can you tell me my name?", "Ada.", "ask_fact"
    )
    assert state.open_loops == ()
    state = say(manager, state, "can you check the train times to Porto?", KEPT, "kept_open")
    (loop,) = state.open_loops
    assert (loop.kind, loop.text) == ("request", "check the train times to Porto")

    state = say(manager, state, "never mind", "OK.", "smalltalk")

    assert state.open_loops == ()
    assert state.closed_loops[-1] == loop.model_copy(update={"closed_turn": 3})


def test_an_unanswered_question_becomes_a_loop_closed_when_answered():
    """A question the bot kept open (intent ``kept_open``) opens a ``question`` loop; it closes
    when asked again and answered, or when a later statement covers what it asked about."""
    question = "what's the best neighbourhood for hotels in Lisbon?"
    manager = ConversationStateManager()
    state = say(manager, SessionState(session_id=SID), question, KEPT, "kept_open")
    (loop,) = state.open_loops
    assert (loop.kind, loop.text, loop.opened_turn) == ("question", question, 1)
    answered_at_once = say(manager, SessionState(session_id=SID), question, "Alfama.", "llm")
    assert answered_at_once.open_loops == ()

    state = say(manager, state, "thanks anyway", "You're welcome!", "smalltalk")
    assert state.open_loops == (loop,)
    asked_again = say(manager, state, "which Lisbon neighbourhood has the best hotels?", "Alfama.")
    told = say(manager, state, "a friend says the best hotels in Lisbon are in the Alfama area")

    for after in (asked_again, told):
        assert after.open_loops == ()
        assert after.closed_loops == (loop.model_copy(update={"closed_turn": 3}),)


def test_a_clarification_is_pending_until_the_user_answers():
    """A reply that asks the user something sets ``awaiting_clarification``; the user's next
    message answers it and the status is ``active`` again."""
    manager = ConversationStateManager()
    start = SessionState(session_id=SID)
    asked = say(manager, start, "book me a table", "Sure. Which restaurant do you mean?", "llm")

    assert asked.pending_clarifications == (
        PendingClarification(question="Which restaurant do you mean?", asked_turn=1),
    )
    assert asked.status == "awaiting_clarification"
    assert asked.last_response_type == "clarification"

    answered = say(manager, asked, "the Italian one on the corner", "Booked for 8pm.", "llm")

    assert answered.pending_clarifications == ()
    assert answered.status == "active"
    assert answered.last_response_type == "text"


@pytest.mark.parametrize(
    ("answer", "intent", "pending"),
    [
        ("Which restaurant do you mean?", "llm", True),
        ("I need one detail first.", "clarify", True),  # the intent says it asks
        ("I'm doing well! What can I do for you?", "smalltalk", False),  # an invitation
        ("echo: are you there?", "echo", False),  # the user's own question repeated
        ("Booked. Enjoy your meal!", "llm", False),
    ],
)
def test_only_a_reply_that_asks_something_is_a_clarification(answer, intent, pending):
    """A reply asks when its last sentence is a question or its intent says so; invitations
    and echoes of the user's question ask nothing."""
    state = say(ConversationStateManager(), SessionState(session_id=SID), "are you there?", answer,
                intent)  # fmt: skip

    assert bool(state.pending_clarifications) is pending
    assert state.status == ("awaiting_clarification" if pending else "active")


def test_a_bot_turn_without_a_user_message_answers_no_clarification():
    """A reminder firing (no user text) leaves the question pending: the user has not answered."""
    manager = ConversationStateManager()
    asked = say(manager, SessionState(session_id=SID), "plan my week", "Which week do you mean?")

    fired = say(manager, asked, "", "⏰ Reminder: stretch", "reminder_due", speaker="scheduler")

    assert fired.pending_clarifications == asked.pending_clarifications
    assert fired.status == "awaiting_clarification"


def test_pending_clarifications_are_bounded():
    """However many questions go unanswered in a group, at most the newest few are kept."""
    manager = ConversationStateManager()
    state = SessionState(session_id=SID, chat_type="group")
    for n in range(MAX_CLARIFICATIONS + 4):
        state = say(manager, state, "help me", f"Which one, member {n}?", speaker=f"m{n}")

    assert len(state.pending_clarifications) == MAX_CLARIFICATIONS
    assert state.pending_clarifications[-1].asked_of == f"m{MAX_CLARIFICATIONS + 3}"


def test_the_reminder_and_that_task_resolve_to_the_job_id():
    """A reminder scheduled on a turn is what "that task", "the reminder" and "it" refer to,
    in the state and in the packet; a later to-do takes "that task", the reminder keeps "the
    reminder", and a job that fired no longer resolves."""
    manager = ConversationStateManager()
    job = JobRef(job_id="job_7", kind="reminder", label="call mom")
    state = say(
        manager,
        SessionState(session_id=SID),
        "remind me in 10 minutes to call mom",
        "I'll remind you at 12:10 UTC to call your mom.",
        "set_reminder",
        action_name="schedule_reminder",
        job_refs=(job,),
    )

    for phrase in ("that task", "the task", "the reminder", "that reminder", "it", "that"):
        assert state.resolved_entities[phrase] == "job_7", phrase
    packet = ConversationContextBuilder().build(state, [], now=T0)
    assert packet.resolved_entities_map["that task"] == "job_7"
    assert packet.resolved_entities_map["the reminder"] == "job_7"

    state = say(manager, state, "remind me to book the hotel", "Added.", "add_todo")
    assert state.resolved_entities["that task"] == "loop-2-1"
    assert state.resolved_entities["the reminder"] == "job_7"

    done = job.model_copy(update={"status": "done"})
    state = say(manager, state, "", "⏰ Reminder: call mom", "reminder_due", job_refs=(done,))
    assert "the reminder" not in state.resolved_entities
    assert state.resolved_entities["that task"] == "loop-2-1"


def test_it_follows_the_topic_when_nothing_concrete_was_mentioned():
    """With no job, loop, proposal or decision, "it" points to the heaviest topic of the
    latest message."""
    state = talk_through([("I'm reading a novel about Lisbon", "Nice.", "chat")])

    assert state.resolved_entities["it"] in {"topic:novel", "topic:lisbon"}
    assert "that task" not in state.resolved_entities


def test_topics_decay_as_the_talk_moves_on():
    """A topic loses weight with every turn it is not mentioned, gains when mentioned again,
    and leaves once the talk has long moved on; the heaviest lead."""
    manager = ConversationStateManager(topics=TopicTracker(decay=0.8, max_topics=8))
    state = say(manager, SessionState(session_id=SID), "I'm planning a trip to Lisbon")
    assert {t.name: t.weight for t in state.active_topics} == {"trip": 1.0, "lisbon": 1.0}

    for _ in range(3):
        state = say(manager, state, "the garden tomatoes need water")
    weights = {t.name: t.weight for t in state.active_topics}
    assert weights["lisbon"] == pytest.approx(0.8**3, abs=1e-4)
    assert weights["garden tomato"] > weights["lisbon"]
    assert state.active_topics[0].name == "garden tomato"

    state = say(manager, state, "back to Lisbon: the flights are cheap")
    lisbon = next(t for t in state.active_topics if t.name == "lisbon")
    assert lisbon.weight == pytest.approx(0.8**4 + 1, abs=1e-3)
    assert lisbon.last_turn == 5

    for _ in range(20):
        state = say(manager, state, "ok")
    assert state.active_topics == ()


def test_topics_are_bounded_and_ties_are_deterministic():
    """At most ``max_topics`` stay; equal weights go to the latest mentioned, then by name."""
    manager = ConversationStateManager(topics=TopicTracker(max_topics=3))
    state = say(manager, SessionState(session_id=SID), "apples, pears, plums and cherries")

    assert [t.name for t in state.active_topics] == ["apple", "cherry", "pear"]


# -- I6 and bounds over long conversations -----------------------------------------------------

MIXED = [
    ("Hi, I'm Ada", "Hi Ada! What can I do for you?", "smalltalk"),
    ("I'm planning a trip to Lisbon in May", "Noted.", "state_fact"),
    ("remind me to book the hotel {n}", "Added to your list.", "add_todo"),
    ("can you check the train times to Porto {n}?", "I can't do that offline.", "kept_open"),
    ("I'll send you the budget spreadsheet {n}", "Noted your promise.", "note_commitment"),
    ("what's the best area for hotels near {n}?", "Which part of the trip do you mean?", "llm"),
    ("the first week, near the river", "Got it.", "llm"),
    ("I booked the hotel {n}", "Ticked off.", "close_todo"),
    ("remind me in 10 minutes to call mom", "I'll remind you.", "set_reminder"),
    ("is the reminder still on?", "Yes.", "list_open"),
    ("I sent the budget spreadsheet {n}", "Ticked off.", "close_todo"),
    ("never mind the trains", "OK.", "smalltalk"),
    ("topic number {n} is about gardening and tomatoes", "Nice.", "chat"),
]


def mixed_turns(count: int) -> list[ConversationTurn]:
    """A long private conversation exercising every rule (jobs scheduled and fired too)."""
    turns = []
    for seq in range(1, count + 1):
        text, answer, intent = MIXED[(seq - 1) % len(MIXED)]
        refs: tuple[JobRef, ...] = ()
        if intent == "set_reminder":
            refs = (JobRef(job_id=f"job_{seq}", kind="reminder", label="call mom"),)
        elif seq % len(MIXED) == 10 and seq > len(MIXED):
            refs = (JobRef(job_id=f"job_{seq - 1 - len(MIXED)}", status="done"),)
        turns.append(
            turn(
                seq,
                user_text=text.format(n=seq % 7),
                assistant_text=answer,
                intent=intent,
                job_refs=refs,
                action_name="schedule_reminder" if intent == "set_reminder" else None,
            )
        )
    return turns


async def test_the_rebuilt_state_equals_the_live_one_over_a_long_mixed_conversation():
    """I6: folding a long log of to-dos, promises, requests, questions, clarifications,
    reminders and topics again gives the live state, also after a JSON round trip."""
    manager = ConversationStateManager()
    turns = mixed_turns(500)
    live = SessionState(session_id=SID)
    for t in turns:
        live = manager.apply(live, t)

    rebuilt = await ConversationStateManager().rebuild(SID, as_async(turns))

    assert rebuilt == live
    assert SessionState.model_validate_json(dump_json(live)) == live
    assert dump_json(rebuilt) == dump_json(live)
    kinds = {loop.kind for loop in (*live.open_loops, *live.closed_loops)}
    assert kinds >= {"todo", "commitment", "request"}
    assert live.active_topics
    assert live.resolved_entities


def test_state_size_is_bounded_after_2000_turns():
    """Loops, closed loops, clarifications, topics and references stay bounded: the state after
    2,000 turns is no bigger than after 500."""
    manager = ConversationStateManager()
    sizes = {}
    state = SessionState(session_id=SID)
    for t in mixed_turns(2000):
        # Every turn opens something new that is never closed.
        t = t.model_copy(update={"user_text": f"{t.user_text}. I need to water plant {t.seq}"})
        state = manager.apply(state, t)
        if t.seq in (500, 2000):
            sizes[t.seq] = len(dump_json(state))

    assert len(state.open_loops) == MAX_OPEN_LOOPS
    assert len(state.closed_loops) <= MAX_CLOSED_LOOPS
    assert len(state.pending_clarifications) <= MAX_CLARIFICATIONS
    assert len(state.active_topics) <= manager.topics.max_topics
    assert len(state.resolved_entities) <= 13
    assert sizes[2000] <= sizes[500] * 1.1


# -- status across a restart ----------------------------------------------------------------------


class AskingEngine:
    """Asks which one whenever the message says "book"; otherwise confirms."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        if "book" in message.text:
            return Reply(text="Which hotel do you mean?", intent="llm")
        return Reply(text="Done.", intent="llm")


async def test_hydration_marks_resuming_and_the_next_turn_decides_the_status(
    db_path, checkpoint_dir
):
    """A session waiting for an answer is ``resuming`` after a restart with its question still
    pending; the user's next message answers it and the status is ``active`` again."""
    engine = AskingEngine()

    async def start() -> ConversationLane:
        lane = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
        await lane.hydrate()
        return lane

    lane = await start()
    first = await lane.on_turn(InboundMessage(chat_id=5, text="book the hotel"), engine)
    sid = first.turn.session_id
    session = await lane.inspector.session(sid)
    assert session is not None
    assert session.status == "awaiting_clarification"
    await lane.shutdown()

    lane = await start()
    try:
        packet = await lane.inspector.packet(5)
        assert packet is not None
        assert packet.session_status == "resuming"
        assert [c.question for c in packet.pending_clarifications] == ["Which hotel do you mean?"]

        await lane.on_turn(InboundMessage(chat_id=5, text="the one by the river"), engine)

        session = await lane.inspector.session(sid)
        assert session is not None
        assert session.status == "active"
        assert session.state.pending_clarifications == ()
        rebuilt = await lane.inspector.rebuild_state(sid)
        assert rebuilt.log_view() == session.state.log_view()
    finally:
        await lane.shutdown()


@pytest.mark.parametrize("intent", ["unknown", "reminder_unreadable"])
def test_a_turn_not_understood_moves_nothing_but_its_bookkeeping(intent):
    """A turn whose recorded intent says "not understood" opens and closes no loop (even a
    promise or "never mind" in it), states no fact, answers no clarification and tracks no
    topic: the state is what it was, but for the turn count, last intent and response type.
    The rule reads the turn as stored, so the rebuilt state agrees (I6)."""
    manager = ConversationStateManager()
    state = talk_through(
        [
            ("remind me to book the hotel", "Added to your list.", "add_todo"),
            ("what's the best area for hotels in Lisbon?", KEPT, "kept_open"),
            ("book me a table", "Which restaurant do you mean?", "llm"),
        ]
    )
    sorry = "Sorry, I didn't understand that. Try “my name is Ada”, or /help."
    for text in (
        "never mind, I'll send you the itinerary tomorrow",
        "my name is Bea and I booked the hotel",
        "can you check the trains? the gardening tomatoes are red",
    ):
        after = say(manager, state, text, sorry, intent)
        bookkeeping = {"turn_count", "last_intent", "last_response_type", "summary_buffer"}
        assert after.model_dump(exclude=bookkeeping) == state.model_dump(exclude=bookkeeping)
        assert (after.turn_count, after.last_intent, after.last_response_type) == (
            4,
            intent,
            "text",
        )
        assert after.summary_buffer[-1].startswith(f"#4 user: {text[:20]}")
        assert "understand" not in after.summary_buffer[-1]  # the error text is not summarised
