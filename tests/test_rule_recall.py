"""Questions no rule answers, answered from the packet through a real lane: the line said in
passing is quoted with its day, or the concierge says honestly that it was not told."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.engines.rule_based import RuleBasedConcierge
from agent.engines.rule_recall import RECALL_THRESHOLD, recollect
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage, TurnResult
from tests.clock import Clock
from tests.test_rule_based_lane import CHAT, Conversation

T0 = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
LATER = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)

SMALL_TALK = [
    "the weather was lovely this morning",
    "I had pasta for lunch",
    "the train was late again",
    "we watched a film about sharks",
    "my neighbour is painting his fence",
    "the cat knocked over a plant",
    "traffic on the bridge was awful",
    "I finally fixed the bike chain",
] * 3


class DatedConversation(Conversation):
    """A conversation whose turns are recorded at the times the messages are sent."""

    def __init__(self, lane: ConversationLane, clock: Clock) -> None:
        super().__init__(lane)
        self.clock = clock

    async def say(self, text: str, at: datetime | None = None) -> TurnResult:
        self.clock.now = at or self.clock.now + timedelta(minutes=1)
        return await super().say(text, self.clock.now)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
async def lane(db, checkpoint_dir, clock):
    """The lane of the conftest, on the test's clock: a turn's day is the day it is sent."""
    memory_lane = ConversationLane(db, CheckpointWriter(checkpoint_dir), clock=clock)
    await memory_lane.hydrate()
    yield memory_lane
    await memory_lane.shutdown()


async def told(lane, clock, lines: list[str]) -> Conversation:
    chat = DatedConversation(lane, clock)
    for n, line in enumerate(lines):
        await chat.say(line, T0 + timedelta(minutes=n))
    return chat


@pytest.mark.parametrize(
    "question",
    [
        "what's the wifi password at the cabin?",
        "what was the cabin wifi password again?",
        "do you remember the wifi password?",
        "wifi password?",
    ],
)
async def test_a_detail_said_in_passing_is_quoted_with_its_day(lane, clock, question):
    chat = await told(lane, clock, ["the wifi password at the cabin is pinecone42", *SMALL_TALK])
    result = await chat.say(question, LATER)
    assert result.turn.assistant_text == (
        "On 25 Nov you told me: the wifi password at the cabin is pinecone42"
    )
    assert result.turn.intent == "recall"


async def test_a_line_said_today_is_said_to_be_from_earlier_today(lane, clock):
    chat = await told(lane, clock, ["the gate code for the garage is 7741", "ok"])
    said = await chat.reply("what's the garage gate code?", T0 + timedelta(hours=2))
    assert said == "Earlier today you told me: the gate code for the garage is 7741"


@pytest.mark.parametrize(
    "question",
    ["what's my passport number?", "when is my dentist appointment?", "where did I park the car?"],
)
async def test_what_was_never_told_is_admitted(lane, clock, question):
    chat = await told(lane, clock, ["the wifi password at the cabin is pinecone42", *SMALL_TALK])
    result = await chat.say(question, LATER)
    assert (result.turn.assistant_text or "").startswith("You haven't told me that")
    assert result.turn.intent == "recall"


@pytest.mark.parametrize(
    ("question", "name", "about"),
    [
        ("when is Omar's wedding?", "Omar", "my best friend Omar is buying a new car in June"),
        ("what's Lena's phone number?", "Lena", "my sister Lena moved to Vienna last spring"),
        ("what's Biscuit's favourite toy?", "Biscuit", "we adopted a puppy called Biscuit"),
    ],
)
async def test_a_question_about_someone_named_says_what_was_said_of_them(
    lane, clock, question, name, about
):
    """No line covers the question, but one says something of the one it names: the reply
    admits the gap and quotes that line, rather than keep the question as a to-do."""
    chat = await told(lane, clock, [about, *SMALL_TALK])
    result = await chat.say(question, LATER)
    assert result.turn.assistant_text == (
        f"You haven't told me that. About {name}, on 25 Nov you told me: {about}"
    )
    assert result.turn.intent == "recall"
    assert question not in await chat.reply("what is still open?", LATER)


@pytest.mark.parametrize(
    "question",
    [
        "what's the capital of Mongolia?",
        "can you tell me a joke?",
        "could you give me a pancake recipe?",
        "what should I cook tonight?",
        "what should I get my mum for her birthday?",
        "should I take an umbrella?",
    ],
)
async def test_a_question_about_the_world_is_still_kept_open(lane, clock, question):
    """Asked by "me" ("tell me a joke"), it is still not about the user: no "you haven't told
    me"."""
    chat = await told(lane, clock, SMALL_TALK[:3])
    said = await chat.reply(question, LATER)
    assert said.startswith(("I can't answer that offline", "I can't do that offline"))


async def test_a_rule_with_no_fact_gives_way_to_what_was_said(lane, clock):
    """ "When is my birthday?" finds no birthday fact, but the line that says it is quoted."""
    lines = ["we always celebrate my birthday at the lake on June 3rd", *SMALL_TALK]
    chat = await told(lane, clock, lines)
    said = await chat.reply("when is my birthday?", LATER)
    assert said == "On 25 Nov you told me: we always celebrate my birthday at the lake on June 3rd"


async def test_a_line_whose_fact_was_forgotten_or_replaced_is_not_quoted(lane, clock):
    """What the user had forgotten, or said again differently, is not brought back by a quote
    of the line that first said it."""
    chat = await told(
        lane, clock, ["the boat's mooring number is B-17", "my sister Mia lives in Porto"]
    )
    assert (await chat.reply("forget that my sister lives in Porto", LATER)).startswith("Done")
    said = await chat.reply("where does Mia live?", LATER + timedelta(minutes=1))
    assert "Porto" not in said
    await chat.say("I live in Lisbon", LATER + timedelta(minutes=2))
    await chat.say("actually I live in Braga", LATER + timedelta(minutes=3))
    said = await chat.reply("what city do I live in these days?", LATER + timedelta(minutes=4))
    assert "Lisbon" not in said


async def test_in_a_group_the_speaker_named_is_the_one_quoted(lane, clock):
    concierge = RuleBasedConcierge()
    lines = [
        ("Ana", "I booked the venue by the river for Saturday"),
        ("Bo", "Ana told me the venue is great"),
        ("Bo", "I will bring the speakers for the party"),
    ]
    for n, (who, text) in enumerate(lines):
        await lane.on_turn(
            InboundMessage(chat_id=CHAT, chat_type="group", text=text, speaker=who,
                           user_id=n % 2 + 1, update_id=n + 1, received_at=T0),
            concierge,
        )  # fmt: skip
    packet = await lane.inspector.context(CHAT, "what venue did Ana book?")
    assert packet is not None
    found = recollect(packet, "what venue did Ana book?", personal=False)
    assert found is not None
    assert found.speaker == "Ana"
    assert found.score >= RECALL_THRESHOLD


@pytest.mark.parametrize(
    "question",
    [
        "what did we talk about last time?",
        "what did we discuss in our last conversation?",
        "what were we talking about in our previous session?",
        "do you remember our previous chat?",
    ],
)
async def test_last_time_is_answered_from_what_earlier_conversations_left(
    lane, clock, question
):
    """After /new, "what did we talk about last time?" is not this conversation's recap: it says
    what earlier conversations left in memory and where the earlier conversation is kept."""
    chat = await told(lane, clock, ["my sister Lena lives in Vienna", "I'm allergic to cats"])
    await lane.new_session(CHAT)
    await chat.say("hello", LATER)
    said = await chat.reply(question, LATER + timedelta(minutes=1))
    assert "Your sister Lena lives in Vienna." in said
    assert "You're allergic to cats." in said
    assert "/sessions" in said
    assert "hello" not in said


async def test_last_time_with_nothing_remembered_says_so(lane, clock):
    chat = await told(lane, clock, ["the weather was lovely"])
    await lane.new_session(CHAT)
    said = await chat.reply("what did we talk about last time?", LATER)
    assert said.startswith("I remember nothing about you from earlier conversations")
    assert "/sessions" in said


async def test_before_in_the_same_conversation_is_its_recap(lane, clock):
    chat = await told(lane, clock, ["I'm planning a trip to Rome"])
    said = await chat.reply("what were we talking about before?", LATER)
    assert said.startswith("Here's what we talked about")
    assert "Rome" in said


@pytest.mark.parametrize("question", ["summarise our chat", "what have we talked about?"])
async def test_a_recap_tells_every_turn_once_in_order_wherever_the_packet_carries_it(
    lane, clock, question
):
    """A turn the packet retrieves is not repeated among its compressed lines: the recap takes
    it from there, so no turn of the conversation is left out of it (round 13 found "I live in
    Hull" missing from the recap of a seven-message chat)."""
    said = [
        "I'm Tess", "I live in Hull", "I love jazz", "I need to call the bank",
        "my dog is called Pip", "I'm going to Rome in May", "what's the weather like?",
    ]  # fmt: skip
    chat = await told(lane, clock, said)
    recap, _, _ = (await chat.reply(question, LATER)).partition("\n\nTopics: ")
    lines = recap.splitlines()
    assert lines[0] == "Here's what we talked about:"
    assert [line.split(": ", 1)[1].split(" → ")[0] for line in lines[1:]] == said
