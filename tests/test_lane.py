"""The lane as its callers see it (:mod:`agent.memory.lane`): a message in, a committed turn
out, the reply marked delivered, jobs that fire once, and a lane that refuses work once it is
shut down. Real SQLite, real checkpoint files, the echo engine of ``conftest.py``."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from agent.db import Database
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage, JobRef
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_summarizer import ExtractiveSummarizer
from agent.memory.schemas import Reply

CHAT = 4242


class ReminderEngine:
    """Answers every message by scheduling one reminder (what the concierge does for "remind
    me ...")."""

    async def reply(self, packet, message):
        job = JobRef(job_id="job_1", kind="reminder", due_at=message.received_at, label="tea")
        return Reply(text="I'll remind you.", intent="reminder_set", job_refs=(job,))


async def test_a_message_becomes_a_committed_turn_whose_reply_is_then_delivered(lane, engine):
    """on_turn commits the turn with its reply before it returns (so the caller can send it);
    mark_delivered takes it off the list of replies to send again after a restart (I4)."""
    result = await lane.on_turn(InboundMessage(chat_id=CHAT, text="hello", update_id=1), engine)

    assert result.turn.assistant_text == "echo #1: hello"
    assert result.needs_delivery
    assert [turn.turn_id for _, turn in await lane.undelivered()] == [result.turn.turn_id]
    await lane.mark_delivered(result.turn, 901)
    assert await lane.undelivered() == []
    refreshed = await lane.refresh_turn(result.turn)
    assert refreshed is not None
    assert (refreshed.status, refreshed.reply_message_id) == ("delivered", 901)


class CountingEngine:
    """Counts the replies it was asked for."""

    def __init__(self) -> None:
        self.asked = 0

    async def reply(self, packet, message):
        self.asked += 1
        return Reply(text="noted", intent="chat")


@pytest.mark.parametrize("wants_reply", [True, False])
async def test_the_same_update_twice_is_one_turn(lane, wants_reply):
    """A redelivered update returns the first turn as a duplicate, writes nothing and asks
    for no second reply (I3), in a new session as in one with turns; a group message kept
    without a reply likewise."""
    counting = CountingEngine()
    message = InboundMessage(chat_id=CHAT, text="once", update_id=7, wants_reply=wants_reply)
    first = await lane.on_turn(message, counting)
    again = await lane.on_turn(message, counting)
    later = await lane.on_turn(InboundMessage(chat_id=CHAT, text="twice", update_id=8), counting)
    redelivered = await lane.on_turn(message, counting)

    assert (again.duplicate, again.turn) == (True, first.turn)
    assert (redelivered.duplicate, redelivered.turn) == (True, first.turn)
    assert not later.duplicate
    assert counting.asked == 1 + wants_reply
    assert [t.user_text for t in await lane.inspector.history(CHAT, 10)] == ["once", "twice"]


async def test_an_undeliverable_reply_is_never_sent_again(lane, engine):
    """A reply Telegram refused for good leaves the list of replies to send."""
    result = await lane.on_turn(InboundMessage(chat_id=CHAT, text="hi", update_id=2), engine)
    await lane.mark_undeliverable(result.turn, "chat not found")
    assert await lane.undelivered() == []


async def test_a_reminder_fires_once(lane):
    """A due job becomes one bot turn that closes it: firing it again finds nothing to do."""
    message = InboundMessage(chat_id=CHAT, text="remind me", update_id=3)
    await lane.on_turn(message, ReminderEngine())
    assert [job.job_id for _, job in lane.active_jobs()] == ["job_1"]
    assert [job.job_id for job in lane.chat_jobs(CHAT)] == ["job_1"]

    fired = await lane.complete_job(CHAT, "job_1", "Time for tea.")
    assert fired is not None
    assert fired.turn.assistant_text == "Time for tea."
    assert lane.active_jobs() == []
    assert await lane.complete_job(CHAT, "job_1", "Time for tea.") is None


async def test_one_chat_s_slow_state_rules_leave_the_other_chats_served(db, checkpoint_dir, engine):
    """The state rules of a turn run off the event loop (issue 20): while one chat's summary
    fold is stuck, another chat's message is answered and committed."""
    entered, release = threading.Event(), threading.Event()

    class StuckOnALongStory(ExtractiveSummarizer):
        def fold(self, state, turn):
            if turn.user_text == "let me tell you a long story":
                entered.set()
                release.wait(5)
            return super().fold(state, turn)

    states = ConversationStateManager(StuckOnALongStory())
    lane = ConversationLane(db, CheckpointWriter(checkpoint_dir), state_manager=states)
    await lane.hydrate()
    try:
        story = InboundMessage(chat_id=1, text="let me tell you a long story", update_id=1)
        slow = asyncio.create_task(lane.on_turn(story, engine))
        assert await asyncio.to_thread(entered.wait, 5)
        other = await lane.on_turn(InboundMessage(chat_id=2, text="hi", update_id=2), engine)

        assert other.turn.assistant_text == "echo #1: hi"
        assert not slow.done()  # still folding: the other chat did not wait for it
        release.set()
        assert (await slow).turn.seq == 1
    finally:
        release.set()
        await lane.shutdown()


async def test_a_shut_down_lane_refuses_turns_and_hydrates_once(db_path: Path, checkpoint_dir):
    """hydrate runs once per lane; after shutdown every turn is refused with a fix-it error,
    and the next lane on the same files starts where this one stopped."""
    lane = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    await lane.hydrate()
    with pytest.raises(RuntimeError, match="already called"):
        await lane.hydrate()

    class Echo:
        async def reply(self, packet, message):
            return Reply(text=message.text)

    await lane.on_turn(InboundMessage(chat_id=CHAT, text="before", update_id=1), Echo())
    await lane.shutdown()
    await lane.shutdown()  # idempotent
    with pytest.raises(RuntimeError, match="shut down"):
        await lane.on_turn(InboundMessage(chat_id=CHAT, text="after"), Echo())

    again = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    report = await again.hydrate()
    try:
        assert (report.sessions, report.rebuilt) == (1, {})
        assert again.session_id_for_chat(CHAT) is not None
    finally:
        await again.shutdown()


async def test_close_is_for_lanes_that_were_never_hydrated(db_path: Path, checkpoint_dir):
    """A tool's lane (never hydrated) closes its database with close(); a hydrated lane must
    stop with shutdown(), which marks sessions and writes their checkpoints."""
    tool = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    await tool.close()
    bot = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    await bot.hydrate()
    try:
        with pytest.raises(RuntimeError, match="shutdown"):
            await bot.close()
    finally:
        await bot.shutdown()
