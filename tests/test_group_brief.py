"""Tests of the group member who writes now and the brief context (seed 000): through the real
lane on a SQLite file, the packet builder's budget, and the LLM concierge's prompts against a
fake chat-completions server over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent.db import Database
from agent.engines.llm import OpenAICompatConcierge
from agent.memory import (
    CheckpointWriter,
    ConversationContextPacket,
    ConversationLane,
    InboundMessage,
    Reply,
    render_packet,
)
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.group_brief import member_of, render_brief
from agent.memory.schemas import ConversationTurn, SessionState
from agent.utils.tokens import estimate_tokens
from tests.fake_llm_api import Answer, FakeLLMApi, completion

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CHAT = -4200
IDS = {"Alice": 11, "Bob": 12, "Carol": 13, "Dave": 14, "Erin": 15}
# A planning thread: a proposal settled on a variant, an opinion, two proposals left open.
THREAD = [
    ("Alice", "I propose we meet on Friday at 5 to plan the launch"),
    ("Bob", "+1"),
    ("Carol", "I disagree, Friday evening is bad for me"),
    ("Alice", "how about Friday at 3 instead?"),
    ("Bob", "sounds good"),
    ("Alice", "great, we agreed on Friday at 3 for the launch meeting"),
    ("Bob", "I think the launch budget needs another review"),
    ("Carol", "what if we cut the catering?"),
    ("Alice", "-1"),
    ("Bob", "I suggest we book the rooftop venue for the party"),
    ("Dave", "lol"),
]


class Capture:
    """An engine that keeps the packets it was given (the lane's real packets)."""

    def __init__(self) -> None:
        self.packets: list[ConversationContextPacket] = []

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        self.packets.append(packet)
        return Reply(text="ok", intent="llm")


def said(n: int, who: str, text: str, *, ask: bool = False, chat: int = CHAT) -> InboundMessage:
    """Message ``n`` of the thread: ``who`` says ``text`` in the group (to the bot: ``ask``)."""
    return InboundMessage(
        chat_id=chat,
        text=text,
        chat_type="group" if chat < 0 else "private",
        user_id=IDS[who],
        speaker=who,
        update_id=n,
        wants_reply=ask,
        received_at=T0 + timedelta(minutes=n),
    )


@pytest.fixture
async def group_lane(tmp_path: Path) -> AsyncIterator[ConversationLane]:
    """A lane on a SQLite file whose group chat has had :data:`THREAD`."""
    async with Database(tmp_path / "memory.db") as db:
        lane = ConversationLane(db, CheckpointWriter(tmp_path / "checkpoints"))
        await lane.hydrate()
        for n, (who, text) in enumerate(THREAD, start=1):
            await lane.on_turn(said(n, who, text), Capture())
        yield lane
        await lane.shutdown()


async def test_the_member_addressing_the_bot_brings_their_position_and_contributions(group_lane):
    """Bob addresses the bot: the packet carries Bob (his last position, his contributions) as
    the member writing now, the rendering says so, and the participants list names the others
    only (Bob once)."""
    engine = Capture()

    await group_lane.on_turn(said(50, "Bob", "@bot where are we?", ask=True), engine)

    (packet,) = engine.packets
    assert packet.member is not None
    assert packet.member.name == "Bob"
    assert packet.member.last_position == "proposes: we book the rooftop venue for the party"
    assert "I think the launch budget needs another review" in packet.member.key_contributions
    assert [p.name for p in packet.participants] == ["Alice", "Carol", "Dave"]
    text = render_packet(packet)
    assert "The member writing now: Bob (4 messages before this one)" in text
    assert "- their previous position: proposes: we book the rooftop venue for the party" in text
    assert "- they contributed: I think the launch budget needs another review" in text
    assert "- Bob (" not in text
    # The brief's parts are in the packet too: the decision and the proposals still open.
    assert "- Friday at 3 for the launch meeting (supported by Alice, Bob)" in text
    assert '- Carol: "we cut the catering" [active]; oppose: Alice' in text


async def test_each_member_gets_their_own_position(group_lane):
    """Carol, then Dave (who took no position), then a newcomer: each packet carries the member
    who writes, or none for someone the group has not heard yet."""
    engine = Capture()
    for n, who in enumerate(("Carol", "Dave", "Erin"), start=60):
        await group_lane.on_turn(said(n, who, "@bot hello", ask=True), engine)

    carol, dave, erin = engine.packets
    assert carol.member is not None
    assert carol.member.last_position == "proposes: we cut the catering"
    assert "their previous position: proposes: we cut the catering" in render_packet(carol)
    assert dave.member is not None
    assert (dave.member.name, dave.member.last_position) == ("Dave", "")
    assert "The member writing now: Dave (1 message before this one)" in render_packet(dave)
    assert erin.member is None
    assert "The member writing now" not in render_packet(erin)


async def test_a_private_chat_has_no_member(tmp_path):
    """In a private chat nobody is a group member: the packet carries no member and no brief."""
    async with Database(tmp_path / "memory.db") as db:
        lane = ConversationLane(db, CheckpointWriter(tmp_path / "checkpoints"))
        await lane.hydrate()
        engine = Capture()
        await lane.on_turn(said(1, "Erin", "I propose we go to Lisbon", ask=True, chat=7), engine)
        await lane.on_turn(said(2, "Erin", "what did I say?", ask=True, chat=7), engine)
        await lane.shutdown()
    assert engine.packets[-1].member is None
    assert render_brief(engine.packets[-1]) == ""


def _folded(lines: list[tuple[str, str]]) -> tuple[SessionState, list[ConversationTurn]]:
    manager = ConversationStateManager()
    state = SessionState(session_id="ses_brief", chat_type="group")
    turns = []
    for n, (who, text) in enumerate(lines, start=1):
        turn = ConversationTurn(
            turn_id=f"trn_{n}",
            session_id="ses_brief",
            seq=n,
            user_text=text,
            speaker=who,
            user_id=IDS.get(who),
            status="recorded",
            created_at=T0 + timedelta(minutes=n),
        )
        state = manager.apply(state, turn)
        turns.append(turn)
    return state, turns


@pytest.mark.parametrize("budget", [32, 48, 64, 96, 128, 200, 400, 2000])
def test_the_member_fits_the_budget_or_gives_way(budget):
    """At every budget the packet's rendered text stays within it and its estimate is exact;
    when room is short the member's contributions go first, then the member."""
    long = " and ".join(f"point {n} about the venue budget" for n in range(6))
    state, turns = _folded([*THREAD, ("Bob", f"I think {long}"), ("Bob", f"I propose {long}")])
    bob = member_of(state.participants, IDS["Bob"], "Bob")
    assert bob is not None
    assert len(bob.key_contributions) == 3

    packet = ConversationContextBuilder(token_budget=budget).build(state, turns, now=T0, member=bob)

    rendered = render_packet(packet)
    assert packet.token_estimate == estimate_tokens(rendered) <= budget
    if packet.member is None:
        assert "The member writing now" not in rendered
    else:
        assert packet.member.last_position == bob.last_position
        assert packet.member.key_contributions in ((), bob.key_contributions)
        assert all(p.name != "Bob" for p in packet.participants)
    if budget == 400:  # a quarter of it for the state: the position, not the contributions
        assert packet.member == bob.model_copy(update={"key_contributions": ()})
    if budget == 2000:
        assert packet.member == bob


def test_members_are_found_by_id_or_else_by_name():
    """A member is found by their Telegram id; a speaker without one, by name."""
    state, _ = _folded([("Alice", "I propose pizza"), ("Zed", "I think pasta is better")])

    found = member_of(state.participants, IDS["Alice"], "someone else")
    assert found is not None
    assert found.name == "Alice"
    by_name = member_of(state.participants, None, "Zed")
    assert by_name is not None
    assert by_name.last_position == "I think pasta is better"
    assert member_of(state.participants, 555, "Alice") is None
    assert member_of(state.participants, None, None) is None


def test_the_brief_is_the_member_decisions_undecided_proposals_and_last_turns():
    """``render_brief``: the member's position, each decision, each proposal still undecided
    with who is for and against, the last turns; settled proposals and other members left
    out, so it is a fraction of the full rendering."""
    state, turns = _folded(THREAD)
    carol = member_of(state.participants, IDS["Carol"], "Carol")
    packet = ConversationContextBuilder().build(state, turns, now=T0, member=carol)

    brief = render_brief(packet)

    assert brief.splitlines()[1:5] == [
        "The member writing now: Carol (2 messages before this one)",
        "- their previous position: proposes: we cut the catering",
        "In brief:",
        "- decided: Friday at 3 for the launch meeting (Alice, Bob)",
    ]
    assert '- undecided: "we cut the catering" (proposed by Carol; against: Alice)' in brief
    assert (
        '- undecided: "we book the rooftop venue for the party" (proposed by Bob; no reactions'
        " yet)" in brief
    )
    assert "Friday at 5" not in brief  # settled (modified): not undecided
    assert "Dave: lol" in brief  # the last turns
    assert len(brief) < len(render_packet(packet)) / 2


# -- the LLM concierge's prompts -----------------------------------------------------------


class Offline:
    """The LLM concierge's fallback: never asked in these tests but for its intent."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply(text="offline", intent="unknown")


async def test_the_llm_prompt_carries_the_members_position_and_the_brief(group_lane):
    """Carol asks the LLM concierge in the group: the system prompt (real HTTP, fake model)
    names her as the member writing, her previous position, the decision and the proposals
    still undecided, within the packet's budget."""
    with FakeLLMApi() as api:
        api.script(Answer(body=completion("You proposed cutting the catering; Alice is against.")))
        llm = OpenAICompatConcierge(
            api.base_url, "test-model", None, fallback=Offline(), backoff=0.01
        )
        async with llm:
            result = await group_lane.on_turn(
                said(70, "Carol", "@bot should I push my idea again?", ask=True), llm
            )
    assert result.turn.assistant_text == "You proposed cutting the catering; Alice is against."
    [request] = api.requests
    system = request.body["messages"][0]["content"]
    print(system)  # the prompt as the model reads it (pytest -s shows it)
    assert "The member writing now: Carol (2 messages before this one)" in system
    assert "- their previous position: proposes: we cut the catering" in system
    assert "- Friday at 3 for the launch meeting (supported by Alice, Bob)" in system
    assert '- Carol: "we cut the catering" [active]; oppose: Alice' in system
    assert '- Bob: "we book the rooftop venue for the party" [active]' in system
    assert result.packet is not None
    assert estimate_tokens(render_packet(result.packet)) <= 2000


async def test_after_a_timeout_the_llm_is_asked_again_with_the_brief(group_lane):
    """A model too slow for the full prompt: the retry sends the brief context alone (the
    member's position, decisions, undecided proposals, last turns) and its answer is the
    reply."""
    with FakeLLMApi() as api:
        api.script(Answer(delay=3.0), Answer(body=completion("Cutting the catering is open.")))
        llm = OpenAICompatConcierge(
            api.base_url, "test-model", None, fallback=Offline(), timeout=0.5, backoff=0.01
        )
        async with llm:
            result = await group_lane.on_turn(
                said(80, "Carol", "@bot quick: where do we stand?", ask=True), llm
            )
    assert result.turn.assistant_text == "Cutting the catering is open."
    full, quick = (r.body["messages"][0]["content"] for r in api.requests)
    assert result.packet is not None
    assert render_packet(result.packet) in full
    assert render_brief(result.packet) in quick
    assert "Time is short" in quick
    assert "- their previous position: proposes: we cut the catering" in quick
    assert '- undecided: "we cut the catering" (proposed by Carol; against: Alice)' in quick
    assert "Participants:" not in quick
    assert len(quick) < len(full)
    assert [r.body["messages"][1]["content"] for r in api.requests] == [
        "@bot quick: where do we stand?"
    ] * 2


async def test_a_private_chat_retries_with_the_full_prompt(tmp_path):
    """Without group state there is no brief: a retry after a timeout sends the same prompt."""
    async with Database(tmp_path / "memory.db") as db:
        lane = ConversationLane(db, CheckpointWriter(tmp_path / "checkpoints"))
        await lane.hydrate()
        with FakeLLMApi() as api:
            api.script(Answer(delay=3.0), Answer(body=completion("Hello Ada.")))
            llm = OpenAICompatConcierge(
                api.base_url, "test-model", None, fallback=Offline(), timeout=0.5, backoff=0.01
            )
            async with llm:
                await lane.on_turn(said(1, "Erin", "hi there", ask=True, chat=7), llm)
        await lane.shutdown()
    first, second = (r.body for r in api.requests)
    assert first == second
