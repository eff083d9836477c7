"""The offline concierge end to end through a real ConversationLane: real SQLite files, real
checkpoint files, a real restart. What the concierge acknowledges is what the memory keeps."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent.db import Database
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage, TurnResult
from agent.memory.conversation_context_builder import render_packet

CHAT = 4242
T0 = datetime(2025, 3, 1, 10, 32, 0, tzinfo=UTC)


class Conversation:
    """Sends numbered messages (each its own update, for I3) to a lane."""

    def __init__(self, lane: ConversationLane, first_update: int = 1) -> None:
        self.lane = lane
        self.concierge = RuleBasedConcierge()
        self._updates = itertools.count(first_update)

    async def say(self, text: str, at: datetime | None = None) -> TurnResult:
        update_id = next(self._updates)
        message = InboundMessage(
            chat_id=CHAT,
            text=text,
            user_id=7,
            speaker="Ada",
            update_id=update_id,
            message_id=update_id,
            received_at=at or T0 + timedelta(seconds=update_id),
        )
        result = await self.lane.on_turn(message, self.concierge)
        assert not result.duplicate
        return result

    async def reply(self, text: str, at: datetime | None = None) -> str:
        result = await self.say(text, at)
        assert result.turn.assistant_text is not None
        return result.turn.assistant_text


async def open_lane(db_path: Path, checkpoint_dir: Path) -> ConversationLane:
    lane = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    await lane.hydrate()
    return lane


async def assert_log_rebuilds_the_live_state(lane: ConversationLane) -> None:
    """The state rebuilt from the turn log equals the committed one and the checkpoint's (I6)."""
    sid = lane.session_id_for_chat(CHAT)
    assert sid is not None
    rebuilt = await lane.inspector.rebuild_state(sid)
    session = await lane.inspector.session(sid)
    snapshot = await lane.inspector.checkpoint(sid)
    assert session is not None
    assert snapshot is not None
    assert rebuilt.log_view() == session.state.log_view() == snapshot.state.log_view()
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    assert (packet.facts, packet.open_loops, packet.active_job_refs) == (
        rebuilt.facts,
        rebuilt.open_loops,
        rebuilt.active_job_refs,
    )


async def test_a_name_told_once_is_answered_twenty_turns_later(lane):
    """A name told once, then twenty unrelated turns (two summary folds): the name is known."""
    chat = Conversation(lane)
    assert await chat.reply("my name is Ada") == "Nice to meet you, Ada."
    for n in range(20):
        await chat.say(f"Unrelated message number {n} about the weather.")

    assert await chat.reply("what's my name?") == "Your name is Ada."
    await assert_log_rebuilds_the_live_state(lane)


async def test_a_todo_is_opened_and_closed_in_memory(lane):
    """A to-do becomes an open loop of the session; saying it is done removes it."""
    chat = Conversation(lane)
    added = await chat.reply("remind me to book the hotel")
    assert added.startswith("Added to your list: book the hotel.")
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    assert [loop.text for loop in packet.open_loops] == ["book the hotel"]

    closing = await chat.say("I booked the hotel")
    assert closing.turn.assistant_text == "Great, I've ticked off: book the hotel."
    assert closing.turn.intent == "close_todo"
    assert closing.packet is not None
    assert [loop.text for loop in closing.packet.open_loops] == ["book the hotel"]  # before
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    assert packet.open_loops == ()  # after


async def test_a_reminder_is_a_job_ref_of_the_turn_and_of_the_next_packet(lane):
    """The reminder's job ref is recorded on the turn and is active in the next packet."""
    chat = Conversation(lane)
    result = await chat.say("remind me in 10 minutes to call mom", at=T0)

    assert result.turn.assistant_text == "I'll remind you at 10:42 UTC to call mom."
    assert result.turn.action_name == "schedule_reminder"
    (job,) = result.turn.job_refs
    assert (job.kind, job.label, job.due_at, job.status) == (
        "reminder",
        "call mom",
        T0 + timedelta(minutes=10),
        "scheduled",
    )
    next_turn = await chat.say("what is still open?", at=T0 + timedelta(minutes=1))
    assert next_turn.packet is not None
    assert next_turn.packet.active_job_refs == (job,)
    assert "• call mom, at 10:42 UTC" in (next_turn.turn.assistant_text or "")


async def test_a_fired_reminder_leaves_the_open_list(lane):
    """When the scheduler completes the job, it is no longer listed as open."""
    chat = Conversation(lane)
    (job,) = (await chat.say("remind me in 1 minute to stretch", at=T0)).turn.job_refs
    fired = await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: stretch")
    assert fired is not None

    reply = await chat.reply("what's on my list?", at=T0 + timedelta(minutes=2))
    assert reply == "Nothing is open: your list is empty and no reminders are set."
    recap = await chat.reply("what did we talk about?", at=T0 + timedelta(minutes=3))
    assert "• me: ⏰ Reminder: stretch" in recap


async def test_a_restart_keeps_facts_todos_and_reminders(db_path, checkpoint_dir):
    """After shutdown and a new lane on the same files, the concierge still knows the name,
    the plan, the open to-do and the pending reminder; the log still rebuilds the state (I6)."""
    lane = await open_lane(db_path, checkpoint_dir)
    chat = Conversation(lane)
    try:
        await chat.say("Hi, I'm Ada")
        await chat.say("I'm planning a trip to Lisbon in May")
        await chat.say("remind me to book the hotel")
        await chat.say("I need to renew my passport")
        await chat.say("I renewed my passport")
        reminder = await chat.say("remind me at 18:30 to pack", at=T0)
        for n in range(12):
            await chat.say(f"small talk {n}")
        await assert_log_rebuilds_the_live_state(lane)
    finally:
        await lane.shutdown()

    lane = await open_lane(db_path, checkpoint_dir)
    try:
        packet = await lane.inspector.packet(CHAT)
        assert packet is not None
        assert packet.session_status == "resuming"
        # A private chat's facts live in its long-term memory, which the packet carries.
        assert packet.facts == ()
        assert [(m.attribute, m.text) for m in packet.memories] == [
            ("name", "Ada"),
            ("plan", "a trip to Lisbon in May"),
        ]
        assert [loop.text for loop in packet.open_loops] == ["book the hotel"]
        assert packet.active_job_refs == reminder.turn.job_refs
        await assert_log_rebuilds_the_live_state(lane)

        chat = Conversation(lane, first_update=1000)
        assert await chat.reply("what's my name?") == "Your name is Ada."
        about = await chat.reply("what do you know about me?")
        assert "You're planning a trip to Lisbon in May." in about
        still_open = await chat.reply("what is still open?", at=T0 + timedelta(hours=1))
        assert still_open.startswith(
            "Your list:\n1. book the hotel\n\nReminders:\n• pack, at 18:30"
        )
        assert await chat.reply("done 1") == "Great, I've ticked off: book the hotel."
        await assert_log_rebuilds_the_live_state(lane)
    finally:
        await lane.shutdown()


async def test_a_relative_date_is_kept_at_the_messages_time_not_the_commits(lane):
    """A message replayed late (the inbound journal after a crash: the lane's clock is today,
    the message was sent on Saturday 1 March 2025) keeps "tomorrow" as the day after it was
    sent. The long-term memory, the packet an LLM reads and the answers carry that date."""
    chat = Conversation(lane)
    assert await chat.reply("I have a test tomorrow", at=T0) == (
        "Noted: your test is tomorrow, Sun 2 Mar."
    )
    kept = [m.text for m in await lane.inspector.facts(CHAT) if m.attribute == "event"]
    assert kept == ["test is on Sun 2 Mar"]
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    assert "test is on Sun 2 Mar" in render_packet(packet)
    assert await chat.reply("when is my test?", at=T0 + timedelta(days=1)) == (
        "Your test is today."
    )
    assert await chat.reply("when is my test?", at=T0 + timedelta(days=3)) == (
        "Your test was on Sun 2 Mar."
    )


async def test_a_relative_date_is_read_in_the_users_time_zone(lane):
    """At 16:00 UTC on Saturday it is 01:00 on Sunday in Tokyo: after /timezone Asia/Tokyo,
    "tomorrow" is Monday."""
    await lane.remember(CHAT, "Asia/Tokyo", attribute="timezone")
    chat = Conversation(lane)
    late = T0.replace(hour=16)
    assert await chat.reply("my dentist appointment is tomorrow at 9am", at=late) == (
        "Noted: your dentist appointment is tomorrow, Mon 3 Mar at 09:00."
    )
    kept = [m.text for m in await lane.inspector.facts(CHAT) if m.attribute == "event"]
    assert kept == ["dentist appointment is on Mon 3 Mar at 09:00"]
