"""Tests of agent/engines/rule_based.py: the offline concierge's rules and replies.

Realistic packets are built the way the lane builds them (turns applied with
ConversationStateManager, packets made by ConversationContextBuilder, what a personal chat says
about itself promoted to long-term memory in a real SQLite file and carried by the packet).
Time comes from ``message.received_at`` only.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import agent.engines.rule_based
from agent.engines.rule_based import RuleBasedConcierge
from agent.engines.rule_reading import singular_question
from agent.memory import (
    ConversationContextPacket,
    ConversationTurn,
    InboundMessage,
    JobRef,
    Reply,
    ReplyEngine,
    SessionState,
)
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_summarizer import ExtractiveSummarizer
from agent.memory.longterm.memory_store import SqliteMemoryStore
from agent.memory.rules.dialogue_acts import NOT_UNDERSTOOD_INTENTS
from agent.memory.rules.pronouns import said_before
from agent.memory.schemas import PendingClarification
from agent.memory.writer import memory_candidates, write_if_worthy

T0 = datetime(2025, 3, 1, 10, 32, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2
INTENTS = {
    "state_fact",
    "ask_fact",
    "list_facts",
    "add_todo",
    "close_todo",
    "set_reminder",
    "list_open",
    "recap",
    "list_decisions",
    "smalltalk",
    "help",
    "unknown",
    "reminder_unreadable",
    "ask_reminder_time",
    "note_commitment",
    "close_question",
    "kept_open",
    "deliberation",
    "recall",
    "cancel_reminder",
    "tell_time",
    "forget_memory",
}


class Chat:
    """A conversation with the concierge, its state moved the way the lane moves it."""

    def __init__(self, db, concierge: RuleBasedConcierge | None = None) -> None:
        counter = itertools.count(1)
        self.db = db
        self.store = SqliteMemoryStore()
        self.memories = ()
        self.concierge = concierge or RuleBasedConcierge(job_ids=lambda: f"job_{next(counter)}")
        self.manager = ConversationStateManager(ExtractiveSummarizer(every_n=10, keep_raw=3))
        self.builder = ConversationContextBuilder()
        self.state = SessionState(session_id=SID)
        self.turns: list[ConversationTurn] = []
        self.now = T0

    def packet(self) -> ConversationContextPacket:
        return self.builder.build(self.state, self.turns, now=self.now, memories=self.memories)

    async def say(self, text: str, *, at: datetime | None = None) -> Reply:
        """Send one message; its reply and the state it leads to are recorded as a turn."""
        self.now = at or self.now + timedelta(minutes=1)
        message = InboundMessage(chat_id=1, text=text, received_at=self.now)
        reply = await self.concierge.reply(self.packet(), message)
        assert reply.intent in INTENTS, reply
        turn = ConversationTurn(
            turn_id=f"trn_{len(self.turns) + 1:032x}",
            session_id=SID,
            seq=self.state.turn_count + 1,
            user_text=text,
            assistant_text=reply.text,
            intent=reply.intent,
            action_name=reply.action_name,
            job_refs=reply.job_refs,
            created_at=self.now,
        )
        self.state = self.manager.apply(self.state, turn)
        self.turns.append(turn)
        # Long-term memory, as the lane keeps it for a personal chat.
        previous = said_before(self.turns[:-1])
        candidates = memory_candidates(turn, memories=self.memories, previous=previous)
        if candidates:
            await self.db.write(
                lambda tx: write_if_worthy(
                    tx, self.store, 1, candidates, session_id=None, seq=turn.seq, now=self.now
                )
            )
            found = await self.store.current_for_chats(self.db.reader, [1], per_chat=20, past=8)
            self.memories = tuple(found[1])
        return reply


@pytest.fixture
def chat(db) -> Chat:
    return Chat(db)


# -- the protocol ----------------------------------------------------------------------------


def test_the_rule_based_concierge_is_a_reply_engine():
    """There is one reply-engine protocol (ReplyEngine, the lane's); the offline concierge
    implements it with the same signature."""
    assert inspect.iscoroutinefunction(RuleBasedConcierge.reply)
    assert inspect.signature(RuleBasedConcierge.reply) == inspect.signature(ReplyEngine.reply)
    assert ReplyEngine.__doc__.startswith("**Protocol:**")
    assert not hasattr(agent.engines.rule_based, "Concierge")


def test_the_concierge_never_imports_the_database_or_telegram():
    """The concierge sees a packet, never the database (DESIGN.md section 2)."""
    tree = ast.parse(Path(agent.engines.rule_based.__file__).read_text(encoding="utf-8"))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not {m for m in imported if m.startswith(("agent.db", "telegram", "httpx", "sqlite"))}


# -- facts -----------------------------------------------------------------------------------


async def test_a_stated_name_is_acknowledged(chat):
    """A stated name gets "Nice to meet you, Ada." with intent state_fact."""
    reply = await chat.say("my name is Ada")
    assert reply == Reply(text="Nice to meet you, Ada.", intent="state_fact")


async def test_a_stated_plan_is_acknowledged_in_the_second_person(chat):
    """A plan is repeated back in the second person."""
    reply = await chat.say("I'm planning a trip to Lisbon in May with my sister")
    assert reply.text == "Noted: you're planning a trip to Lisbon in May with your sister."


async def test_several_facts_are_acknowledged_together(chat):
    """A message with a name and two more facts gets one acknowledgement."""
    reply = await chat.say("I'm Ada. I live in Lisbon and I like jazz")
    assert reply.text == "Nice to meet you, Ada. Noted: you live in Lisbon and you like jazz."


async def test_a_new_name_replaces_the_old_one(chat):
    """Restating the same name is recognised; a different one replaces it."""
    await chat.say("my name is Ada")
    assert (await chat.say("I'm Ada")).text == "I know, Ada: you told me before."
    assert (await chat.say("call me Addy")).text == "Got it: I'll call you Addy from now on."
    assert (await chat.say("what's my name?")).text == "Your name is Addy."


async def test_the_name_is_answered_after_twenty_unrelated_turns(chat):
    """A name told once is answered twenty turns (and two summary folds) later."""
    await chat.say("my name is Ada")
    for n in range(20):
        await chat.say(f"the weather report number {n} says rain")
    assert len(chat.packet().recent_turns) == 3  # the first turn is long out of the window
    reply = await chat.say("What's my name?")
    assert reply.text == "Your name is Ada."
    assert reply.intent == "ask_fact"


async def test_an_unknown_name_is_admitted(chat):
    """Asked a name it was never told, it says so and how to tell it."""
    reply = await chat.say("who am I?")
    assert reply.text == "I don't know your name yet. Tell me with “my name is …”."
    assert reply.intent == "ask_fact"


async def test_a_fact_in_the_current_message_answers_its_own_question(chat):
    """The packet is the state before the message, so the message itself is read too."""
    reply = await chat.say("I'm Ada. What do you know about me?")
    assert reply.text == (
        "Nice to meet you, Ada.\n\nHere's what I know about you:\n• Your name is Ada."
    )
    assert reply.intent == "list_facts"


async def test_what_do_you_know_about_me_lists_every_fact(chat):
    """Every fact is listed, one sentence each, in the order told."""
    await chat.say("my name is Ada")
    await chat.say("I'm planning a trip to Lisbon in May")
    await chat.say("my favourite colour is blue")
    reply = await chat.say("what do you know about me?")
    assert reply.text == (
        "Here's what I know about you:\n"
        "• Your name is Ada.\n"
        "• You're planning a trip to Lisbon in May.\n"
        "• Your favourite colour is blue."
    )


async def test_someone_named_in_a_fact_about_them_is_not_listed_twice(chat):
    """"my partner Sam is a vet": one line, which names Sam; a pet named alone keeps its own."""
    await chat.say("my partner Sam is a vet")
    await chat.say("we've got a dog, Biscuit")
    reply = await chat.say("what do you know about me?")
    assert reply.text == (
        "Here's what I know about you:\n"
        "• Your dog is called Biscuit.\n"
        "• Your partner Sam works as a vet."
    )


async def test_knowing_nothing_is_said_plainly(chat):
    """With no facts it says it knows nothing yet and how to tell it."""
    reply = await chat.say("what do you know about me?")
    assert reply.text.startswith("I don't know anything about you yet.")


@pytest.mark.parametrize(
    ("told", "asked", "answer"),
    [
        ("I live in Lisbon", "where do I live?", "You live in Lisbon."),
        ("I'm planning a trip to Lisbon in May", "what am I planning?",
         "You're planning a trip to Lisbon in May."),
        ("my favourite colour is blue", "what's my favourite colour?",
         "Your favourite colour is blue."),
        ("my favourite colour is blue", "what's my favourite food?",
         "You haven't told me your favourite food yet."),
        ("I work as a nurse", "what do I do for a living?", "You work as a nurse."),
        ("my birthday is 3 May", "when is my birthday?", "Your birthday is 3 May."),
        ("I like jazz. I like tea", "what do I like?", "You like jazz. You like tea."),
        ("I like jazz", "how old am I?", "You haven't told me your age yet."),
    ],
)  # fmt: skip
async def test_a_question_about_one_fact_is_answered_from_it(chat, told, asked, answer):
    """A question about one slot answers from that slot, or says it was not told."""
    await chat.say(told)
    reply = await chat.say(asked)
    assert (reply.text, reply.intent) == (answer, "ask_fact")


# -- to-dos ----------------------------------------------------------------------------------


async def test_a_todo_is_confirmed_and_recorded(chat):
    """A to-do is confirmed ("Added to your list: ..."), and the next packet has its loop; said
    as "remind me to ..." without a time, the reply says how to have a reminder too."""
    reply = await chat.say("I need to book the hotel")
    assert reply == Reply(
        text="Added to your list: book the hotel.", intent="add_todo", action_name="add_todo"
    )
    reply = await chat.say("remind me to book the flight")
    assert reply.text == (
        "Added to your list: book the flight.\n\nSay when if you want a reminder too, e.g. "
        "“remind me tomorrow at 9am to …”."
    )
    assert [loop.text for loop in chat.packet().open_loops] == ["book the hotel", "book the flight"]


async def test_closing_a_todo_ticks_it_off_and_it_leaves_the_packet(chat):
    """Saying it is done ("I booked the hotel") closes the loop "book the hotel"."""
    await chat.say("remind me to book the hotel")
    reply = await chat.say("I booked the hotel!")
    assert reply == Reply(
        text="Great, I've ticked off: book the hotel.",
        intent="close_todo",
        action_name="close_todo",
    )
    assert chat.packet().open_loops == ()


async def test_done_n_closes_the_nth_item_of_the_list(chat):
    """Done with a number closes that item as numbered by "what's on my list?"."""
    await chat.say("I need to call my mum and I have to buy milk")
    listing = await chat.say("what's on my list?")
    assert "1. call your mum\n2. buy milk" in listing.text
    assert (await chat.say("done 2")).text == "Great, I've ticked off: buy milk."
    assert [loop.text for loop in chat.packet().open_loops] == ["call my mum"]


async def test_a_todo_already_listed_or_unknown_changes_nothing(chat):
    """Restating a to-do or closing one not on the list is said, and is no action."""
    await chat.say("todo: book the hotel")
    again = await chat.say("remind me to book the hotel")
    missing = await chat.say("done: walk the dog")
    assert again == Reply(text="That's already on your list: book the hotel.", intent="add_todo")
    assert missing.text.startswith("I couldn't find “walk the dog” on your list.")
    assert missing.action_name is None
    assert len(chat.packet().open_loops) == 1


async def test_what_is_still_open_lists_loops_clarifications_and_reminders(chat):
    """The open list has the to-dos (numbered), the pending questions and the reminders."""
    await chat.say("remind me to book the hotel")
    await chat.say("remind me in 10 minutes to call mom", at=T0)
    chat.state = chat.state.model_copy(
        update={"pending_clarifications": (PendingClarification(question="Which hotel?",
                                                                asked_turn=2),)}
    )  # fmt: skip
    reply = await chat.say("what is still open?", at=T0 + timedelta(minutes=1))
    assert reply.intent == "list_open"
    assert reply.text == (
        "Your list:\n1. book the hotel\n\n"
        "Waiting for your answer:\n• Which hotel?\n\n"
        "Reminders:\n• call mom, at 10:42 UTC\n\n"
        "Tell me when one is done, e.g. “done 1”."
    )


async def test_nothing_open_is_said_plainly(chat):
    """With nothing open it says so."""
    reply = await chat.say("what's on my list?")
    assert reply.text == "Nothing is open: your list is empty and no reminders are set."


# -- reminders -------------------------------------------------------------------------------


async def test_a_reminder_request_returns_a_job_ref_due_after_the_delay(chat):
    """A reminder asked at 10:32 for "in 10 minutes" is a job due at 10:42 UTC."""
    reply = await chat.say("remind me in 10 minutes to call mom", at=T0)
    assert reply == Reply(
        text="I'll remind you at 10:42 UTC to call mom.",
        intent="set_reminder",
        action_name="schedule_reminder",
        job_refs=(
            JobRef(
                job_id="job_1",
                kind="reminder",
                label="call mom",
                due_at=T0 + timedelta(minutes=10),
                status="scheduled",
            ),
        ),
    )
    assert chat.packet().active_job_refs == reply.job_refs
    assert chat.packet().open_loops == ()  # a timed reminder is no to-do


async def test_the_default_job_ids_are_unique_and_prefixed(db):
    """Without a factory the reminder ids come from agent.utils.ids.job_id()."""
    chat = Chat(db, RuleBasedConcierge())
    first = await chat.say("remind me in 1 hour to stretch")
    second = await chat.say("remind me in 1 hour to stretch")
    ids = [first.job_refs[0].job_id, second.job_refs[0].job_id]
    assert all(job_id.startswith("job_") for job_id in ids)
    assert ids[0] != ids[1]


@pytest.mark.parametrize(
    ("text", "at", "said"),
    [
        ("in 30 seconds remind me to stretch", T0 + timedelta(seconds=5),
         "I'll remind you at 10:32:35 UTC to stretch."),
        ("remind me at 9:00 to water my plants", T0,
         "I'll remind you tomorrow at 09:00 UTC to water your plants."),
        ("remind me in 3 days about the dentist", T0,
         "I'll remind you on 4 March at 10:32 UTC about the dentist."),
        ("remind me in an hour", T0, "I'll remind you at 11:32 UTC."),
    ],
)  # fmt: skip
async def test_the_reminder_time_is_said_plainly_in_utc(chat, text, at, said):
    """Seconds only when under a minute away; "tomorrow" or the date when not today."""
    reply = await chat.say(text, at=at)
    assert reply.text == said


async def test_an_unreadable_reminder_time_is_explained_and_schedules_nothing(chat):
    """A time it cannot read ("in 0 minutes"; "at 6", morning or evening, is asked:
    tests/test_rule_reminder_hour.py) gets, in at most 200 characters, a form it understands
    and a pointer to /help; the turn is marked not understood."""
    reply = await chat.say("remind me in 0 minutes to cook")
    assert reply.job_refs == ()
    assert reply.action_name is None
    assert reply.intent == "reminder_unreadable"
    assert "remind me in 10 minutes to call mom" in reply.text
    assert "/help" in reply.text
    assert len(reply.text) <= 200


async def test_now_is_the_message_time_never_the_clock(chat):
    """A message received in 2001 gets a reminder due in 2001."""
    old = datetime(2001, 1, 1, 8, 0, tzinfo=UTC)
    reply = await chat.say("remind me in 5 minutes to x", at=old)
    assert reply.job_refs[0].due_at == old + timedelta(minutes=5)


# -- recap, small talk, help, not understood ----------------------------------------------------


async def test_recap_tells_the_summary_and_the_last_turns(chat):
    """A recap draws on the rolling summary, the summarised turns and the raw ones, in order."""
    await chat.say("my name is Ada")
    await chat.say("my mom's birthday is on 12 December")
    for n in range(10):
        await chat.say(f"I'll check the weather report number {n}")
    packet = chat.packet()
    assert packet.rolling_session_summary  # folded after turn 10
    reply = await chat.say("what did we talk about?")
    assert reply.intent == "recap"
    said, _, topics = reply.text.partition("\n\nTopics: ")
    assert "weather report" in topics  # the active topics close the recap
    lines = said.splitlines()
    assert lines[0] == "Here's what we talked about:"
    assert lines[1] == "• you told me: name: Ada"  # the summary keeps the fact
    assert lines[2] == "• you told me: mom's birthday: 12 December"  # said, not a key
    assert lines[-1] == (
        "• you: I'll check the weather report number 9 → Noted your promise: “check the weather"
        " report number 9”."
    )
    assert len(lines) == 13


async def test_a_long_recap_keeps_the_newest_exchanges(chat):
    """Beyond twelve exchanges the recap says how many it shows and keeps the newest."""
    for n in range(30):
        await chat.say(f"I'll write note {n}")
    said, _, topics = (await chat.say("recap please")).text.partition("\n\nTopics: ")
    lines = said.splitlines()
    assert lines[0].startswith("Here's what we talked about (the last 12 of ")
    assert lines[-1].startswith("• you: I'll write note 29 → ")
    assert topics == "write note."


async def test_a_recap_of_nothing_says_so(chat):
    """At the first turn there is nothing to recap."""
    reply = await chat.say("what did we talk about?")
    assert reply.text == "This is the start of our conversation: nothing to recap yet."


@pytest.mark.parametrize(
    ("text", "intent", "start"),
    [
        ("hello", "smalltalk", "Hi! What can I do for you?"),
        ("thanks!", "smalltalk", "You're welcome!"),
        ("how are you?", "smalltalk", "I'm doing well"),
        ("bye", "smalltalk", "Bye! I'll remember all this next time."),
        ("help", "help", "I'm your offline concierge"),
        ("/start", "help", "I'm your offline concierge"),
        ("what can you do?", "help", "I'm your offline concierge"),
        ("/frobnicate now", "unknown", "I don't know the command /frobnicate. Send /help"),
        ("the weather is nice", "unknown", "Sorry, I didn't understand that"),
        ("", "unknown", "I can only read text for now."),
        ("\u200b\u200f", "unknown", "I can only read text for now."),
    ],
)
async def test_small_talk_help_and_what_it_does_not_understand(chat, text, intent, start):
    """Greetings, thanks, help; anything else is admitted honestly, never guessed."""
    reply = await chat.say(text)
    assert reply.intent == intent
    assert reply.text.startswith(start)


@pytest.mark.parametrize(
    "text",
    ["purple monkey dishwasher", "the weather is nice", "", "/frobnicate " + "x" * 4000,
     "/" + "y" * 4000, "remind me in 0 minutes to cook", "ok so the thing with the stuff"],
)  # fmt: skip
async def test_not_understanding_is_short_with_one_example_and_a_pointer_to_help(chat, text):
    """What it does not understand gets at most 200 characters: an example and /help."""
    reply = await chat.say(text)
    assert reply.intent in {"unknown", "reminder_unreadable"}
    assert len(reply.text) <= 200
    assert "/help" in reply.text
    assert reply.text.count("“") <= 1  # one example, not the capability list


async def test_a_greeting_uses_the_name_and_points_at_what_is_open(chat):
    """A returning user is greeted by name and told how much is still open."""
    await chat.say("my name is Ada")
    await chat.say("todo: book the hotel")
    reply = await chat.say("Good morning!")
    assert reply.text == (
        "Hi Ada! Good to see you again. 1 item is still open: ask “what is still open?” to see "
        "them."
    )


# -- determinism and bad input --------------------------------------------------------------------


async def test_the_same_packet_and_message_give_the_same_reply(db):
    """The reply is a function of the packet and the message (job ids aside)."""
    chat = Chat(db)
    for text in ("my name is Ada", "remind me to book the hotel", "I live in Lisbon"):
        await chat.say(text)
    packet = chat.packet()
    message = InboundMessage(chat_id=1, text="what is still open? who am I?", received_at=T0)
    engine = RuleBasedConcierge(job_ids=lambda: "job_fixed")
    assert await engine.reply(packet, message) == await engine.reply(packet, message)


@pytest.mark.parametrize(
    "text",
    [
        "remind me to " + "x" * 4083,
        "what do you know about me? " * 150,
        "🙂" * 4096,
        "I need to " * 409,
        "مرحبا، اسمي أدا",
        "ok, " * 1024 + "x",  # nods: "ok, cool, got it"
        "oh and " * 585 + "cancel the x one",  # words before a request
        "sorry, " * 585 + "her name is Anna",  # a correction's opening
        "I meant " + "Max, " * 800 + "not Rex",
        "no, it's on " + "Wednesday at 3pm " * 240,
        "is it ok if I eat " + "kiwi " * 800 + "?",  # a food asked of
        "I have two kids, " + "Ana who is 7, " * 290 + "and Bo",  # several named, with ages
        "I left " + "x, " * 1300 + "I'm at Acme",  # a workplace after leaving one
        "actually " * 455 + "my sister's name is Anna",  # a rename said later
        "remind me at " + "half past " * 400 + "five",  # a clock time in words
        "ok " * 800 + "cancel that",  # the reminder just set
    ],
    ids="long-todo repeated-question emoji repeated-opener rtl nods fillers corrections values"
    " times food named workplace rename spoken-clock cancel-that".split(),
)
async def test_long_or_strange_text_gets_a_bounded_reply_quickly(chat, text):
    """A 4096-character message is answered in well under a second, within Telegram's limit."""
    await chat.say("my name is Ada")
    start = time.perf_counter()
    reply = await chat.say(text[:4096])
    assert time.perf_counter() - start < 1.0
    assert reply.text
    assert len(reply.text) <= 4000


# -- group decisions and promises ----------------------------------------------------------------


def _group_packet(lines: list[tuple[str, str]]) -> ConversationContextPacket:
    """The packet of a group chat after ``(speaker, text)`` messages the bot only recorded."""
    manager = ConversationStateManager()
    state = SessionState(session_id=SID, chat_type="group")
    for seq, (who, text) in enumerate(lines, start=1):
        turn = ConversationTurn(
            turn_id=f"trn_{seq:032x}",
            session_id=SID,
            seq=seq,
            user_text=text,
            speaker=who,
            user_id=len(who),
            status="recorded",
            created_at=T0,
        )
        state = manager.apply(state, turn)
    return ConversationContextBuilder().build(state, [], now=T0)


async def test_what_did_we_decide_lists_decisions_and_open_proposals():
    """In a group "what did we decide?" lists the decisions with their supporters and the
    proposals still under discussion with their tally."""
    packet = _group_packet(
        [
            ("Alice", "I propose we meet on Friday at 5"),
            ("Bob", "+1"),
            ("Carol", "I disagree"),
            ("Alice", "we agreed on Friday at 5"),
            ("Carol", "what if we order pizza for the meeting?"),
            ("Bob", "-1"),
        ]
    )
    message = InboundMessage(chat_id=-1, text="@bot what did we decide?", received_at=T0)

    reply = await RuleBasedConcierge().reply(packet, message)

    assert reply.intent == "list_decisions"
    assert reply.text == (
        "What was decided:\n• Friday at 5 (Alice, Bob)\n\n"
        "Still under discussion:\n• Carol: we order pizza for the meeting (0 for, 1 against)"
    )


async def test_what_did_we_decide_with_nothing_decided_says_so(chat):
    """With no decision yet, the answer says how to record one."""
    reply = await chat.say("what have we agreed so far?")

    assert reply.intent == "list_decisions"
    assert reply.text.startswith("Nothing has been decided yet.")


async def test_the_open_list_marks_promises_and_unanswered_asks(chat):
    """The open list numbers every loop and says which are promises or unanswered asks."""
    await chat.say("remind me to book the hotel")
    await chat.say("I'll send you the budget")
    await chat.say("can you check the train times to Porto?")

    reply = await chat.say("what is still open?")

    assert reply.intent == "list_open"
    assert reply.text.startswith(
        "Your list:\n1. book the hotel\n2. send you the budget (you promised)\n"
        "3. check the train times to Porto (asked)"
    )


# -- honest understanding: a message not understood changes nothing ----------------------------

# What the state holds that a message could move (everything but the turn's bookkeeping).
MOVABLE = (
    "facts", "open_loops", "closed_loops", "pending_clarifications", "active_topics",
    "active_job_refs", "resolved_entities", "participants", "proposals", "decisions",
    "summary_items",
)  # fmt: skip


def movable(state: SessionState) -> dict[str, object]:
    return state.model_dump(include=set(MOVABLE))


async def busy_chat(db) -> Chat:
    """A chat with a fact, a to-do, a promise, an open question and a pending clarification."""
    chat = Chat(db)
    await chat.say("my name is Ada")
    await chat.say("remind me to book the hotel")
    await chat.say("I'll send you the itinerary tomorrow")
    await chat.say("when does the museum open on sundays?")
    asked = ConversationTurn(
        turn_id=f"trn_{99:032x}",
        session_id=SID,
        seq=chat.state.turn_count + 1,
        user_text="book me a table",
        assistant_text="Which restaurant do you mean?",
        intent="llm",
        created_at=chat.now,
    )
    chat.state = chat.manager.apply(chat.state, asked)
    chat.turns.append(asked)
    assert chat.state.pending_clarifications
    assert {lp.kind for lp in chat.state.open_loops} == {"todo", "commitment", "question"}
    return chat


@pytest.mark.parametrize(
    "text",
    [
        "purple monkey dishwasher",
        "the weather is nice",
        "ok so the thing with the stuff",
        "I'll be late, the trains are a mess",  # a state, not a promise
        "blorp",
        "remind me in 0 minutes to cook",  # a reminder whose time it cannot read
        "/frobnicate now",
        "\u200b",
        "lol",
    ],
)
async def test_a_message_not_understood_changes_no_state_and_gets_a_short_reply(db, text):
    """ "I didn't understand" opens and closes no loop, answers no clarification, states no
    fact, moves no topic, and is at most 200 characters with an example and /help."""
    chat = await busy_chat(db)
    before = chat.state

    reply = await chat.say(text)

    assert reply.intent in NOT_UNDERSTOOD_INTENTS
    assert len(reply.text) <= 200
    assert "/help" in reply.text
    assert movable(chat.state) == movable(before)
    assert chat.state.status == "awaiting_clarification"
    assert chat.state.turn_count == before.turn_count + 1


# Messages of every kind, for the rule that binds them all.
EVERY_KIND = [
    "never mind", "forget it", "I'll send you the itinerary tomorrow", "I promise to call Bob",
    "let me check the flight times", "can you check the train times to Porto?",
    "when does the museum open on sundays?", "what's my name?", "I booked the hotel",
    "I sent the itinerary", "done 1", "my name is Bea", "I live in Porto", "hello",
    "thanks", "what is still open?", "help", "the sky is purple", "what?", "nvm",
    "scratch that", "the museum opens at ten on sundays, a friend says", "blah blah",
    "remind me in 5 minutes to stretch", "remind me in 0 minutes to cook", "I'll be late",
]  # fmt: skip


@pytest.mark.parametrize("text", EVERY_KIND)
async def test_the_reply_never_says_it_did_not_understand_while_the_state_changes(db, text):
    """Whatever the message, a reply that says it did not understand leaves the state as it
    was, and a message that moved the state is answered as understood."""
    chat = await busy_chat(db)
    before = chat.state

    reply = await chat.say(text)

    said_not_understood = "didn't understand" in reply.text or "couldn't read" in reply.text
    assert said_not_understood is (reply.intent in NOT_UNDERSTOOD_INTENTS)
    if said_not_understood:
        assert movable(chat.state) == movable(before)
    else:  # understood: at least the pending clarification is answered
        assert chat.state.pending_clarifications == ()


@pytest.mark.parametrize("text", ["never mind", "forget it", "nvm", "scratch that"])
async def test_never_mind_drops_the_newest_open_question_and_says_which(db, text):
    """A dismissal is understood: it drops the newest open question or request, names it,
    and answers the pending clarification."""
    chat = await busy_chat(db)

    reply = await chat.say(text)

    assert reply.intent == "close_question"
    assert "“when does the museum open on sundays?”" in reply.text
    assert [lp.kind for lp in chat.state.open_loops] == ["todo", "commitment"]
    assert chat.state.pending_clarifications == ()
    assert chat.state.status == "active"


async def test_never_mind_with_only_a_clarification_pending_answers_it(db):
    """With only a clarification pending, "never mind" is understood: it closes it."""
    chat = Chat(db)
    asked = ConversationTurn(
        turn_id=f"trn_{1:032x}",
        session_id=SID,
        seq=1,
        user_text="book me a table",
        assistant_text="Which restaurant do you mean?",
        intent="llm",
        created_at=chat.now,
    )
    chat.state = chat.manager.apply(chat.state, asked)
    chat.turns.append(asked)

    reply = await chat.say("never mind")

    assert reply == Reply(text="OK, never mind.", intent="smalltalk")
    assert chat.state.pending_clarifications == ()
    assert chat.state.status == "active"


@pytest.mark.parametrize(
    ("text", "promise"),
    [
        ("I'll send you the budget on Friday", "send you the budget on Friday"),
        ("I promise to call Bob tonight", "call Bob tonight"),
        ("let me check the ferry times", "check the ferry times"),
        ("ok. I will definitely book the table", "book the table"),
    ],
)
async def test_a_promise_is_acknowledged_and_kept_as_a_loop(chat, text, promise):
    """A promise is understood: the reply names it and the state keeps it as a commitment."""
    reply = await chat.say(text)

    assert reply.intent == "note_commitment"
    assert f"Noted your promise: “{promise}”." in reply.text
    assert [(lp.kind, lp.text) for lp in chat.state.open_loops] == [("commitment", promise)]
    again = await chat.say(text)
    assert again.text == "You promised that already: it's on your list."
    assert len(chat.state.open_loops) == 1


@pytest.mark.parametrize(
    ("text", "kind", "kept"),
    [
        ("when does the ferry to Porto leave?", "question", "when does the ferry to Porto leave?"),
        ("which museum has the best tiles?", "question", "which museum has the best tiles?"),
        ("can you check the ferry times?", "request", "check the ferry times"),
        ("could you book a table for two?", "request", "book a table for two"),
    ],
)
async def test_what_it_cannot_answer_is_said_and_kept_open(chat, text, kind, kept):
    """A question it cannot answer or a request it cannot do is understood as such: the reply
    says so and names what it keeps open, and the state keeps exactly that."""
    reply = await chat.say(text)

    assert reply.intent == "kept_open"
    assert f"so I've kept it on your list: “{kept}”" in reply.text
    assert [(lp.kind, lp.text) for lp in chat.state.open_loops] == [(kind, kept)]
    assert chat.state.pending_clarifications == ()  # the reply asks nothing back
    again = await chat.say(text)
    assert again.intent == "kept_open"
    assert "stays on your list" in again.text
    assert len(chat.state.open_loops) == 1


async def test_a_statement_that_answers_an_open_question_is_understood(db):
    """A later statement covering an open question closes it, and the reply says so."""
    chat = Chat(db)
    await chat.say("what's the best neighbourhood for hotels in Lisbon?")
    reply = await chat.say("a friend says the best hotels in Lisbon are in the Alfama area")

    assert reply.intent == "close_question"
    assert reply.text.startswith("OK, that's off your list:")
    assert chat.state.open_loops == ()


async def test_a_group_decision_addressed_to_the_bot_is_understood_and_recorded():
    """In a group, a decision, proposal or vote said to the bot is acknowledged and recorded."""
    concierge = RuleBasedConcierge()
    manager = ConversationStateManager()
    state = SessionState(session_id=SID, chat_type="group")
    for seq, text in enumerate(["I propose we use Postgres", "+1", "let's go with Postgres"], 1):
        message = InboundMessage(
            chat_id=-1, text=text, chat_type="group", user_id=seq, speaker=f"P{seq}"
        )
        packet = ConversationContextBuilder().build(state, [], now=T0)
        reply = await concierge.reply(packet, message)
        assert reply.intent == "deliberation", text
        state = manager.apply(
            state,
            ConversationTurn(
                turn_id=f"trn_{seq:032x}",
                session_id=SID,
                seq=seq,
                user_text=text,
                assistant_text=reply.text,
                intent=reply.intent,
                created_at=T0,
                user_id=seq,
                speaker=f"P{seq}",
            ),
        )
    assert [d.outcome for d in state.decisions] == ["Postgres"]


@pytest.mark.parametrize(
    ("asked", "as_own"),
    [
        ("where do we live?", "where do I live?"),
        ("how old is our son?", "how old is my son?"),
        ("are we going to Rome in May?", "am I going to Rome in May?"),
        ("what do you know about us", "what do you know about me"),
        ("we're vegetarian", "we're vegetarian"),  # no question: as it is
        ("our flight is on Friday", "our flight is on Friday"),
        ("what did we talk about?", "what did we talk about?"),  # we: the user and the bot
        ("what have we decided so far?", "what have we decided so far?"),
        ("where were we?", "where were we?"),
        ("do you remember our previous chat?", "do you remember our previous chat?"),
        ("what was our last conversation about?", "what was our last conversation about?"),
    ],
)
def test_a_household_question_is_asked_as_the_users_own(asked, as_own):
    assert singular_question(asked) == as_own
