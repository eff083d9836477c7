"""Tests of the offline concierge's group questions: "what did I say about X?" and "what is still
undecided?", in many phrasings, through the real lane on a SQLite file, and end to end: the real
bot (``run_bot.py``) in a group of the fake Bot API over real HTTP."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.db import Database
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import (
    CheckpointWriter,
    ConversationLane,
    InboundMessage,
    TurnResult,
    render_packet,
)
from tests.bot_harness import BOT_USERNAME, FakeChats
from tests.fake_bot_api import FakeBotApi
from tests.test_group_brief import IDS, THREAD

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
GROUP = -5100


class Group:
    """A group chat on a real lane, answered by the offline concierge."""

    def __init__(self, lane: ConversationLane, chat_id: int = GROUP) -> None:
        self.lane = lane
        self.chat_id = chat_id
        self.engine = RuleBasedConcierge()
        self.n = 0

    async def say(self, who: str, text: str, *, ask: bool = False) -> TurnResult:
        """``who`` writes ``text``; to the bot when ``ask``."""
        self.n += 1
        message = InboundMessage(
            chat_id=self.chat_id,
            text=text,
            chat_type="group" if self.chat_id < 0 else "private",
            user_id=IDS[who],
            speaker=who,
            update_id=self.n,
            wants_reply=ask,
            received_at=T0 + timedelta(minutes=self.n),
        )
        return await self.lane.on_turn(message, self.engine)

    async def ask(self, who: str, text: str) -> tuple[str, str]:
        """``who`` asks the bot ``text``; return the reply's intent and text."""
        turn = (await self.say(who, text, ask=True)).turn
        return turn.intent or "", turn.assistant_text or ""


@pytest.fixture
async def lane(tmp_path: Path) -> AsyncIterator[ConversationLane]:
    async with Database(tmp_path / "memory.db") as db:
        memory_lane = ConversationLane(db, CheckpointWriter(tmp_path / "checkpoints"))
        await memory_lane.hydrate()
        yield memory_lane
        await memory_lane.shutdown()


@pytest.fixture
async def group(lane: ConversationLane) -> Group:
    chat = Group(lane)
    for who, text in THREAD:
        await chat.say(who, text)
    return chat


@pytest.mark.parametrize(
    "question",
    [
        "@bot what did I say about the budget?",
        "what have I said regarding the budget so far?",
        "remind me what I said about the budget",
        "did I say anything about the budget?",
        "what was my take on the budget?",
        "hey, what's my position on the budget?",
        "What did I mention about budgets earlier?",
    ],
)
async def test_what_did_i_say_about_a_topic(group, question):
    """A member asks what they said about a topic: their words on it, not the others', not
    their words on other topics."""
    intent, said = await group.ask("Bob", question)

    assert intent == "own_words"
    assert "I think the launch budget needs another review" in said
    assert "catering" not in said
    assert "rooftop" not in said


@pytest.mark.parametrize(
    "question",
    [
        "what was my position?",
        "@bot where do I stand?",
        "what did I propose?",
        "what have I said so far?",
        "my previous position?",
        "what were my suggestions?",
    ],
)
async def test_what_did_i_say_without_a_topic(group, question):
    """Without a topic: the member's previous position and what else they said, not another
    member's words."""
    intent, said = await group.ask("Carol", question)

    assert intent == "own_words"
    assert said.startswith("Your previous position: proposes: we cut the catering.")
    assert "I disagree, Friday evening is bad for me" in said
    assert "budget" not in said
    assert "rooftop" not in said


@pytest.mark.parametrize(
    "question",
    [
        "what did Bob say about the budget?",
        "@bot what has Bob said about budgets?",
        "what's Bob's view on the budget?",
        "What did bob say about the budget?",
    ],
)
async def test_what_another_member_said_about_a_topic(group, question):
    """Asked by name by another member: Bob's words on the topic, said of Bob ("Bob said"),
    not the asker's, not Bob's words on other topics."""
    intent, said = await group.ask("Dave", question)

    assert intent == "own_words"
    topic = "budgets" if "budgets" in question else "the budget"  # as the question says it
    assert said == f"About {topic}, Bob said:\n• I think the launch budget needs another review"


async def test_another_members_position_without_a_topic_and_a_stranger(group):
    """ "where does Carol stand?": her position and her words, named; a name no member has is
    not answered from anyone's words."""
    intent, said = await group.ask("Alice", "where does Carol stand?")
    assert intent == "own_words"
    assert said.startswith("Carol's previous position: proposes: we cut the catering.")
    assert "What Carol said last:" in said
    assert "I disagree, Friday evening is bad for me" in said

    intent, said = await group.ask("Alice", "what did Zed say?")
    assert intent != "own_words"


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("@bot is anyone allergic to anything?", "Dave is allergic to shellfish."),
        ("who's allergic to shellfish?", "Dave is allergic to shellfish."),
        ("who is allergic to nuts?", "No one here has told me of an allergy to nuts."),
        ("any dietary requirements?",
         "Dave is allergic to shellfish. Erin is vegetarian. Bob is lactose intolerant."),
        ("does anyone have allergies?",
         "Dave is allergic to shellfish. Erin is vegetarian. Bob is lactose intolerant."),
        ("is anyone vegetarian?", "Erin is vegetarian."),
        ("is anyone vegan?", "No one here has told me they're vegan."),
    ],
)  # fmt: skip
async def test_what_the_members_need_of_food_is_answered_by_name(lane, question, answer):
    """Planning a dinner: the allergies and diets each member told of themselves, named (the
    asker's own facts are not all the group's)."""
    chat = Group(lane)
    await chat.say("Dave", "I'm allergic to shellfish btw")
    await chat.say("Erin", "I'm vegetarian")
    await chat.say("Bob", "I'm lactose intolerant")

    intent, said = await chat.ask("Carol", question)

    assert (intent, said) == ("ask_fact", answer)


async def test_words_said_long_ago_are_found(group):
    """A member's words from before forty turns of others' chatter (in no verbatim turn of the
    packet any more) are still found, with the day they were said."""
    await group.say("Erin", "the cabin by the lake has space for twelve people")
    for n in range(40):
        await group.say("Alice" if n % 2 else "Dave", f"chatter number {n} about nothing much")

    intent, said = await group.ask("Erin", "what did I say about the cabin?")

    assert intent == "own_words"
    assert re.search(
        r"“the cabin by the lake has space for twelve people” \(\d+ \w{3} \d{4}\)", said
    )


async def test_nothing_said_on_the_topic_is_said_honestly(group):
    """A topic the member never spoke of, or one only others spoke of: "nothing from you
    about it", with their position; a newcomer has nothing at all."""
    _, pizza = await group.ask("Bob", "did I say anything about pizza?")
    assert pizza == (
        "I have nothing from you about pizza. Your previous position: proposes: we book the "
        "rooftop venue for the party."
    )
    _, budget = await group.ask("Carol", "what did I say about the budget?")
    assert budget.startswith("I have nothing from you about the budget.")
    intent, newcomer = await group.ask("Erin", "what did I say about the venue?")
    assert (intent, newcomer) == (
        "own_words",
        "I have nothing from you in this group yet: no position, no proposal.",
    )


async def test_the_question_itself_is_not_what_they_said(group):
    """Asking twice does not list the first question among the member's words."""
    await group.ask("Dave", "what did I say?")
    _, said = await group.ask("Dave", "what have I said so far?")

    assert "what did I say" not in said
    assert re.fullmatch(r"What you said last:\n• “lol” \(\d+ \w{3} \d{4}\)", said)


async def test_words_said_to_the_bot_count_without_its_handle(group):
    """What a member told the bot counts as theirs, quoted without the bot's handle; an
    opinion told to the bot is their position."""
    await group.ask("Bob", "@helper_bot the venue deposit is 300 euros")
    intent, _ = await group.ask("Bob", "@helper_bot I think the deposit should stay that low")
    assert intent == "deliberation"
    for n in range(3):
        await group.say("Alice", f"unrelated message {n}")

    intent, said = await group.ask("Bob", "what did I say about the deposit?")

    assert intent == "own_words"
    assert said.startswith(
        "Your previous position: I think the deposit should stay that low.\n\n"
        "About the deposit, you said:\n• “the venue deposit is 300 euros” ("
    )
    assert "@helper_bot" not in said


@pytest.mark.parametrize(
    "question",
    [
        "what is still undecided?",
        "@bot what haven't we decided yet?",
        "what's left to decide?",
        "what do we still need to agree on?",
        "which proposals are still open?",
        "anything still up in the air?",
        "what remains to be decided?",
        "what's still on the table?",
        "what still needs a decision?",
        "what are we still discussing?",
        "open proposals?",
    ],
)
async def test_what_is_still_undecided(group, question):
    """The proposals still open, who made them and who is for and against; not the settled
    ones."""
    intent, said = await group.ask("Dave", question)

    assert intent == "list_undecided"
    assert said.startswith("Still undecided:\n")
    assert "• we cut the catering, proposed by Carol (against: Alice)" in said
    assert "• we book the rooftop venue for the party, proposed by Bob (no reactions yet)" in said
    assert "Friday" not in said
    assert said.endswith("1 decision so far: ask “what did we decide?”.")


async def test_reactions_show_up_and_a_decision_closes_a_proposal(group):
    """A vote on an open proposal shows in the answer; once decided, it is no longer
    undecided; with nothing open, the answer says so."""
    await group.say("Carol", "+1 on the rooftop venue")
    _, said = await group.ask("Dave", "what is still undecided?")
    assert "• we book the rooftop venue for the party, proposed by Bob (for: Carol)" in said

    await group.say("Bob", "let's go with the rooftop venue for the party")
    await group.say("Alice", "we decided against cutting the catering")
    _, said = await group.ask("Dave", "what is still undecided?")
    assert said == (
        "Nothing is waiting for a decision: no proposal is open. 3 decisions so far (ask “what"
        " did we decide?”). Propose something with “I propose …”."
    )


OFFSITE = [
    ("Alice", "for the offsite I suggest Porto"),
    ("Bob", "Porto is too far for me, how about Bristol?"),
    ("Carol", "I'd prefer somewhere by the sea"),
    ("Alice", "Bristol works for me too"),
]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("who is against Porto?", "Bob is against Porto (proposed by Alice; against: Bob)."),
        ("who opposed Porto?", "Bob is against Porto (proposed by Alice; against: Bob)."),
        ("who supports Bristol?", "Bob and Alice are for Bristol (proposed by Bob; for: Alice)."),
        ("who's in favour of Porto?", "Alice is for Porto (proposed by Alice; against: Bob)."),
        ("who is against Bristol?", "Nobody is against Bristol (proposed by Bob; for: Alice)."),
    ],
)
async def test_who_is_for_or_against_an_option(lane, question, answer):
    """ "Porto is too far for me, how about Bristol?" is against Porto and proposes Bristol;
    "who is against Porto?" names the members by their reactions (a proposer is for theirs)."""
    chat = Group(lane)
    for who, text in OFFSITE:
        await chat.say(who, text)
    assert await chat.ask("Carol", question) == ("list_undecided", answer)


@pytest.mark.parametrize(
    "question", ["what's everyone's position?", "where does everyone stand?",
                 "what does everyone think?"],
)  # fmt: skip
async def test_everyones_position_is_each_members_latest_the_asker_too(lane, question):
    chat = Group(lane)
    for who, text in OFFSITE:
        await chat.say(who, text)
    assert await chat.ask("Bob", question) == (
        "list_undecided",
        "Where everyone stands (their latest position):\n• Bob: proposes: Bristol\n"
        "• Carol: I'd prefer somewhere by the sea\n• Alice: supports: Bristol",
    )


@pytest.mark.parametrize(
    ("asked", "label"),
    [
        ("remind us on Friday at 9am to book the venue", "book the venue"),
        ("remind everyone tomorrow at 6pm to send the invites", "send the invites"),
        ("set a reminder for us on Friday at noon to buy the cake", "buy the cake"),
    ],
)
async def test_a_group_asks_for_a_reminder_for_all_of_them(lane, asked, label):
    chat = Group(lane)
    await chat.say("Alice", "we need to book the venue by Friday")
    result = await chat.say("Bob", asked, ask=True)
    assert (result.turn.assistant_text or "").startswith("I'll remind you ")
    (job,) = result.turn.job_refs
    assert (job.label, job.status) == (label, "scheduled")
    intent, said = await chat.ask("Carol", "who's doing what?")
    assert intent == "list_open"
    assert "1. Alice: book the venue by Friday" in said
    assert label in said.split("Reminders:")[1]


async def test_other_group_questions_keep_their_answers(group):
    """ "What did we decide?", "what is still open?" and "what did we talk about?" keep
    their own answers in a group."""
    assert (await group.ask("Bob", "what did we decide?"))[0] == "list_decisions"
    assert (await group.ask("Bob", "what is still open?"))[0] == "list_open"
    assert (await group.ask("Bob", "what did we talk about?"))[0] == "recap"


async def test_each_member_is_answered_from_what_they_said_themselves(lane):
    """In a group, what a member says about themselves is theirs: Alice asking about her
    allergy is never told Bob's, and a member restating a fact replaces only their own."""
    chat = Group(lane)
    await chat.say("Alice", "my name is Alice and I live in Porto")
    await chat.say("Bob", "I live in Lisbon, I'm allergic to peanuts")
    await chat.say("Carol", "my name is Carol")
    await chat.say("Alice", "I love jazz")

    _, where = await chat.ask("Bob", "@bot where do I live?")
    assert "Lisbon" in where
    assert "Porto" not in where
    _, where = await chat.ask("Alice", "@bot where do I live?")
    assert "Porto" in where
    assert "Lisbon" not in where
    _, allergy = await chat.ask("Alice", "@bot what am I allergic to?")
    assert "peanut" not in allergy
    _, known = await chat.ask("Alice", "@bot what do you know about me?")
    assert "Alice" in known
    assert "jazz" in known
    assert not {"Lisbon", "peanut", "Carol"} & set(re.findall(r"\w+", known))
    _, name = await chat.ask("Carol", "@bot what's my name?")
    assert "Carol" in name
    assert "Alice" not in name

    packet = (await chat.say("Bob", "@bot hi", ask=True)).packet
    assert packet is not None
    rendered = render_packet(packet)
    assert "- Alice: location: Porto" in rendered
    assert "- Bob: location: Lisbon" in rendered
    assert "- Bob: allergy: peanuts" in rendered


async def test_a_member_asking_about_another_is_quoted_their_words(lane):
    """ "@bot what is Bob allergic to?" is answered with what Bob said, named and dated: the
    bot's handle is no word of the question."""
    chat = Group(lane)
    await chat.say("Alice", "I propose we go hiking on Saturday")
    await chat.say("Bob", "I'm allergic to bees btw, so no meadows please")
    await chat.say("Carol", "I can't on Saturday")

    _, said = await chat.ask("Alice", "@bot what is Bob allergic to?")

    assert "Bob said" in said
    assert "allergic to bees" in said


@pytest.mark.parametrize(
    "asked",
    ["@bot what's on the list?", "@bot what is on our list?", "@bot what's on our to-do list?",
     "@bot what do we still have to do?", "@bot what's left to do?"],
)  # fmt: skip
async def test_the_group_s_list_is_asked_for_in_the_group_s_words(lane, asked):
    """ "what's on the list?", "what do we still have to do?": the group's list, asked as a
    group asks."""
    chat = Group(lane)
    await chat.say("Bob", "@bot remind me to book the flights", ask=True)

    _, listed = await chat.ask("Carol", asked)

    assert "1. Bob: book the flights" in listed


async def test_a_group_s_list_names_whose_each_item_is(lane):
    """In a group the list is the group's: each item says who it belongs to, in their words
    (Bob's "my boots" is not "your boots" to Alice), under its number for "done 1"."""
    chat = Group(lane)
    await chat.say("Bob", "I need to buy my new boots before Sunday")
    await chat.say("Alice", "I have to book the bus")
    await chat.say("Carol", "I'll bring the sandwiches")

    _, listed = await chat.ask("Alice", "@bot what's on my list?")

    assert "The group's list:" in listed
    assert "1. Bob: buy my new boots before Sunday" in listed
    assert "2. Alice: book the bus" in listed
    assert "3. Carol: bring the sandwiches (promised)" in listed
    assert "your new boots" not in listed


async def test_a_member_erases_their_own_words_in_a_group_and_no_one_else_s(lane):
    """A group keeps what a member said in its conversation only: "@bot forget that I'm
    allergic to bees" finds the asker's own messages that said it (never another member's),
    asks, and only the asker's "yes" erases them; what they stated goes from the group's state
    (the fold of its log, I6), what others said stays."""
    chat = Group(lane)
    await chat.say("Bob", "I'm allergic to bees")
    await chat.say("Alice", "I'm allergic to bees too, funnily enough")
    await chat.say("Carol", "ok noted")

    _, asked = await chat.ask("Bob", "@bot forget that I'm allergic to bees")
    assert asked.startswith(
        "I found 1 message of yours saying you're allergic to bees: “I'm allergic to bees” ("
    )
    assert asked.endswith("). Erase it (yes or no)?")
    _, other = await chat.ask("Alice", "@bot yes")
    assert "erased" not in other.casefold()
    _, done = await chat.ask("Bob", "@bot yes")
    assert done == "Done: I erased 1 message, and your request to erase it."

    said = [(t.speaker, t.user_text) for t in await chat.lane.inspector.history(GROUP, 50)]
    assert ("Bob", "I'm allergic to bees") not in said
    assert ("Alice", "I'm allergic to bees too, funnily enough") in said
    _, bob = await chat.ask("Bob", "@bot what am I allergic to?")
    assert "bees" not in bob
    _, alice = await chat.ask("Alice", "@bot what am I allergic to?")
    assert "bees" in alice


async def test_forgetting_what_a_member_never_said_in_a_group_erases_nothing(lane):
    """Asked to forget what they never said here, a member is told so, and of /forget."""
    chat = Group(lane)
    await chat.say("Alice", "I'm allergic to bees")

    _, said = await chat.ask("Bob", "@bot forget that I'm allergic to bees")

    assert said.startswith("I found nothing you said here saying you're allergic to bees")
    assert "/forget" in said


async def test_a_group_item_is_ticked_off_through_the_bot_s_handle(lane):
    """ "@bot done 2" is "done 2": the handle says who is spoken to, not what is done."""
    chat = Group(lane)
    await chat.say("Bob", "I need to buy my new boots before Sunday")
    await chat.say("Alice", "I have to book the bus")

    _, done = await chat.ask("Alice", "@bot done 2")
    _, listed = await chat.ask("Carol", "@bot what is still open?")

    assert "book the bus" in done
    assert "book the bus" not in listed
    assert "Bob: buy my new boots" in listed


async def test_in_a_private_chat_the_group_questions_are_left_to_other_rules(lane):
    """In a private chat there is no group: these rules stay silent."""
    chat = Group(lane, chat_id=IDS["Bob"])
    await chat.say("Bob", "I think the budget is too small", ask=True)

    assert (await chat.ask("Bob", "what did I say about the budget?"))[0] != "own_words"
    assert (await chat.ask("Bob", "what is still undecided?"))[0] != "list_undecided"


# -- end to end: the real bot in a group ---------------------------------------------------------


def test_a_group_asks_the_bot_end_to_end(
    api: FakeBotApi, chats: FakeChats, polling_bot: Any
) -> None:
    """Four members plan in a Telegram group (messages to each other, not to the bot); then
    each asks the bot, by mention, what they said and what is still undecided. The transcript
    is printed (pytest -s shows it)."""
    bot = polling_bot()
    chat = -7300
    members = {name: 700 + n for n, name in enumerate(("Ana", "Ben", "Cleo", "Dan"))}
    lines: list[str] = []

    def send(who: str, text: str) -> None:
        chats.send(chat, text, user_id=members[who], first_name=who, chat_type="group",
                   chat_title="Offsite")  # fmt: skip
        lines.append(f"{who}: {text}")

    def ask(who: str, text: str) -> str:
        said = f"@{BOT_USERNAME} {text}"
        answer = chats.ask(chat, said, user_id=members[who], first_name=who, chat_type="group",
                           chat_title="Offsite").text or ""  # fmt: skip
        lines.extend([f"{who}: {said}", f"bot: {answer}"])
        return answer

    send("Ana", "I propose we hold the offsite in Sintra in June")
    send("Ben", "sounds good")
    send("Cleo", "I think June is too busy for the sales team")
    send("Dan", "how about a boat trip on the Tagus?")
    send("Ana", "-1, boats make me seasick")
    send("Cleo", "we agreed on Sintra then")
    send("Ben", "what if we rent bikes for the second day?")
    send("Cleo", "I'd rather keep the budget for a good dinner")

    ask("Ben", "I propose we invite the Porto team too")
    cleo_budget = ask("Cleo", "what did I say about the budget?")
    ben_position = ask("Ben", "what's my position?")
    undecided = ask("Dan", "what is still undecided?")
    dan_boats = ask("Dan", "did I say anything about boats?")
    still_open = ask("Ana", "what haven't we decided yet?")
    bot.stop()
    print("\n".join(lines))

    assert "June" not in cleo_budget
    assert "I'd rather keep the budget for a good dinner" in cleo_budget
    assert ben_position.startswith("Your previous position: proposes: we invite the Porto team")
    assert "• proposes: we rent bikes for the second day" in ben_position
    assert "“sounds good”" in ben_position
    assert undecided.startswith("Still undecided:")
    assert "we rent bikes for the second day, proposed by Ben (no reactions yet)" in undecided
    assert "boat trip" in undecided
    assert "Sintra" not in undecided.split("\n\n")[0]
    assert "boat trip on the Tagus" in dan_boats
    assert still_open == undecided


@pytest.mark.parametrize(
    ("said", "item"),
    [
        ("we also need to book a table for 6", "book a table for 6"),
        ("we still have to pick the dates", "pick the dates"),
        ("we should send the invites by Friday", "send the invites by Friday"),
    ],
)
async def test_what_we_need_to_do_is_on_the_group_s_list(lane, said, item):
    chat = Group(lane)
    await chat.say("Erin", said)

    _, listed = await chat.ask("Carol", "@bot what's left to do?")

    assert f"1. Erin: {item}" in listed


async def test_who_wanted_something_quotes_the_member_who_said_it(lane):
    chat = Group(lane)
    await chat.say("Dave", "we need to choose a restaurant for Friday")
    await chat.say("Bob", "I'd rather go for pizza tbh")
    await chat.say("Erin", "how about the Thai place on Main Street?")

    _, said = await chat.ask("Carol", "@bot who wanted pizza?")

    assert "Bob said: I'd rather go for pizza tbh" in said


async def test_an_empty_list_is_said_to_be_the_group_s(lane):
    chat = Group(lane)
    await chat.say("Erin", "morning all")

    _, listed = await chat.ask("Carol", "@bot what's left to do?")

    assert listed == "Nothing is open: the group's list is empty and no reminders are set."


async def test_a_launch_party_debated_in_everyday_words(lane):
    """ "what about X instead?" proposes, "X gets my vote" backs it, "we're going with X"
    decides; "where do we stand?", "which options are on the table?", "who proposed X?" and
    "what was my objection?" are answered from the deliberation."""
    chat = Group(lane)
    await chat.say("Alice", "ok team, where should we hold the launch party?")
    await chat.say("Bob", "I suggest the rooftop bar downtown")
    await chat.say("Carol", "what about the museum hall instead?")
    await chat.say("Dave", "rooftop gets my vote")
    await chat.say("Erin", "I'm against the rooftop, it might rain")

    _, standing = await chat.ask("Bob", "@bot where do we stand?")
    assert "the rooftop bar downtown, proposed by Bob (for: Dave; against: Erin)" in standing
    assert "the museum hall, proposed by Carol" in standing
    _, options = await chat.ask("Dave", "@bot which options are on the table?")
    assert "the rooftop bar downtown" in options
    assert "the museum hall" in options
    _, proposer = await chat.ask("Dave", "@bot who proposed the rooftop?")
    assert proposer.startswith("Bob proposed the rooftop bar downtown")
    _, objection = await chat.ask("Erin", "@bot what was my objection?")
    assert "opposes: the rooftop bar downtown" in objection
    _, mine = await chat.ask("Carol", "@bot what have I said so far?")
    assert "the museum hall" in mine

    await chat.say("Bob", "ok we're going with the museum hall")
    _, decided = await chat.ask("Carol", "@bot what did we decide?")
    assert "the museum hall" in decided
    assert "Still under discussion" not in decided.split("the museum hall")[0]
