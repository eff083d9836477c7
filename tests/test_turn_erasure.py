"""Tests of erasing turns (``TurnEditor.erase_turns``, agent/memory/lane_parts/turn_edits.py)
through the lane and the offline concierge, on both backends: "forget my locker code",
confirmed, erases the messages that said it (turn log, index, state and summaries, the
memories they alone stated, the checkpoint), and nothing else; "no" erases nothing. The bytes
left on disk are looked for by ``tests/test_hostile_input.py``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from agent.app.wiring import open_lane
from agent.config import load_settings
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import ConversationLane, InboundMessage, render_packet

CHAT = 77
START = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
DETAIL = "Lockerzebra4411"
# Said in passing, among other things; the second message also states an allergy (a memory
# it alone is the source of).
TALK = [
    "hi",
    f"my locker code is {DETAIL}",
    "I love jazz",
    f"I'm allergic to peanuts. The gym locker code is {DETAIL}",
    *[f"the weather report number {n} says rain again" for n in range(12)],
]


@asynccontextmanager
async def _lane(tmp_path: Path, database_url: str | None) -> AsyncIterator[ConversationLane]:
    settings = load_settings(env_file=None).model_copy(
        update={
            "db_path": tmp_path / "memory.db",
            "database_url": SecretStr(database_url) if database_url else None,
            "checkpoint_dir": tmp_path / "checkpoints",
        }
    )
    lane = await open_lane(settings, clock=lambda: START)
    try:
        await lane.hydrate()
        yield lane
    finally:
        await lane.shutdown()


class _Chat:
    def __init__(self, lane: ConversationLane, first_update: int = 1) -> None:
        self.lane = lane
        self.engine = RuleBasedConcierge()
        self.update = first_update

    async def say(self, text: str) -> str:
        self.update += 1
        result = await self.lane.on_turn(
            InboundMessage(
                chat_id=CHAT,
                text=text,
                user_id=5,
                update_id=self.update,
                message_id=self.update,
                received_at=START + timedelta(minutes=self.update),
            ),
            self.engine,
        )
        return result.turn.assistant_text or ""


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    if request.param == "sqlite":
        return None
    return str(request.getfixturevalue("postgres_url"))


async def _everything_said(lane: ConversationLane) -> str:
    """The turn log, the packet, the summary chain, the memories and the checkpoint, as text."""
    sid = lane.session_id_for_chat(CHAT)
    assert sid is not None
    said = [f"{t.user_text}\n{t.assistant_text}" async for t in lane.inspector.turns(sid)]
    packet = await lane.inspector.context(CHAT, f"what is my locker code {DETAIL}?")
    assert packet is not None
    said.append(render_packet(packet))
    said += [v.text for v in await lane.inspector.summary_history(sid)]
    said += [m.text for m in await lane.inspector.facts(CHAT, history=True)]
    said += [item.text for item in await lane.inspector.recall(CHAT, DETAIL)]
    said.append(lane.inspector.checkpoint_bytes(sid).decode())
    return "\n".join(said)


async def test_a_detail_said_in_passing_is_erased_on_yes(tmp_path, database_url):
    """The messages that said it are found and quoted, and on "yes" their text is gone from
    every place the memory keeps it, as is the request; the memory only they stated goes;
    what else was said stays; the state is the fold of the log as it now is (I6)."""
    async with _lane(tmp_path, database_url) as lane:
        chat = _Chat(lane)
        for line in TALK:
            await chat.say(line)
        assert DETAIL in await _everything_said(lane)  # else the test could not fail

        asked = await chat.say("forget my locker code")
        assert asked == (
            f"Done, I've forgotten: your gym locker code is {DETAIL}; your locker code is "
            f"{DETAIL}. I also found 2 messages about your locker code: “my locker code is "
            f"{DETAIL}” (25 Nov), “I'm allergic to peanuts. The gym locker code is {DETAIL}” "
            "(25 Nov). Erase them too (yes or no)?"
        )
        assert await chat.say("yes") == "Done: I erased 2 messages, and your request to erase them."

        assert DETAIL.lower() not in (await _everything_said(lane)).lower()
        assert "haven't told me" in await chat.say("what's my locker code?")
        assert "peanuts" not in await chat.say("what am I allergic to?")
        assert await chat.say("do I like jazz?") == "Yes, you like jazz."
        sid = lane.session_id_for_chat(CHAT)
        assert sid is not None
        session = await lane.inspector.session(sid)
        assert session is not None
        rebuilt = await lane.inspector.rebuild_state(sid)
        assert rebuilt.log_view() == session.state.log_view()

    # A restart reads the same: nothing of the detail came back from a file.
    async with _lane(tmp_path, database_url) as lane:
        assert DETAIL.lower() not in (await _everything_said(lane)).lower()
        assert await _Chat(lane, first_update=100).say("do I like jazz?") == "Yes, you like jazz."


async def test_no_erases_nothing(tmp_path, database_url):
    async with _lane(tmp_path, database_url) as lane:
        chat = _Chat(lane)
        for line in TALK[:3]:
            await chat.say(line)
        assert (await chat.say("erase the locker code I gave you")).startswith(
            f"Done, I've forgotten: your locker code is {DETAIL}. I also found 1 message about "
            f"the locker code: “my locker code is {DETAIL}” (25 Nov)."
        )
        assert await chat.say("no") == "OK, I erased nothing."
        assert DETAIL in await _everything_said(lane)  # the message stays, the fact went
        assert "haven't told me" in await chat.say("what's my locker code?")


async def test_a_fact_told_in_an_earlier_conversation_says_where_its_message_is(tmp_path):
    """After /new the message that said it is not in this conversation: the memory goes, and
    the reply says where the message is kept and how to erase it, not that all is gone."""
    async with _lane(tmp_path, None) as lane:
        chat = _Chat(lane)
        await chat.say(f"my locker code is {DETAIL}")
        await lane.new_session(CHAT)
        said = await chat.say("forget my locker code")
        assert said.startswith(f"Done, I've forgotten: your locker code is {DETAIL}.")
        assert "earlier conversation" in said
        assert "/sessions" in said
        assert "haven't told me" in await chat.say("what's my locker code?")


async def test_a_note_kept_with_remember_is_forgotten_without_a_message_to_look_for(tmp_path):
    """A /remember note was said by no message: forgetting it points to no conversation."""
    async with _lane(tmp_path, None) as lane:
        chat = _Chat(lane)
        await chat.say("hello")
        await lane.remember(CHAT, "the spare key is under the blue pot")  # /remember's work
        said = await chat.say("forget the spare key")
        assert said == "Done, I've forgotten: the spare key is under the blue pot."


@pytest.mark.parametrize(
    ("request_text", "topic"),
    [
        ("forget that my code is 4411", "saying your code is 4411"),
        ("please delete what I said about my ex", "about your ex"),
        ("erase the wifi password I gave you", "about the wifi password"),
    ],
)
async def test_nothing_found_is_said_plainly(tmp_path, request_text, topic):
    async with _lane(tmp_path, None) as lane:
        chat = _Chat(lane)
        await chat.say("I love jazz")
        assert await chat.say(request_text) == (
            f"I found nothing you told me {topic}, so I erased nothing. "
            "/facts lists what I remember."
        )


async def test_a_request_that_says_the_detail_goes_too(tmp_path):
    """ "forget that my code is 4411" says the detail itself: on yes, that message goes with
    the ones it found, and so does the question that quoted them."""
    async with _lane(tmp_path, None) as lane:
        chat = _Chat(lane)
        await chat.say(f"the code of my bike lock is {DETAIL}")
        assert (await chat.say(f"forget that my code is {DETAIL}")).startswith(
            f"I found 1 message saying your code is {DETAIL}:"
        )
        assert await chat.say("yep") == "Done: I erased 1 message, and your request to erase it."
        assert DETAIL.lower() not in (await _everything_said(lane)).lower()
