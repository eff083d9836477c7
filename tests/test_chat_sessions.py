"""A chat's sessions through a real ConversationLane on real SQLite and checkpoint files: what
``/new``, ``/resume``, ``/clear`` and ``/forget`` do to the chat's open to-dos and reminders,
to the context packet, and that every state stays the fold of its own turn log (I6)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent.db import Database
from agent.engines.rule_based import RuleBasedConcierge
from agent.errors import SessionNotFound
from agent.memory import (
    CheckpointWriter,
    ConversationLane,
    InboundMessage,
    TurnResult,
    render_packet,
)

CHAT = 5151
SLIDES = "send you the slides tomorrow"
OTHER_CHAT = 5252
T0 = datetime(2025, 3, 1, 10, 0, 0, tzinfo=UTC)


class Chat:
    """Sends numbered messages of one chat (each its own update) through the offline concierge."""

    def __init__(self, lane: ConversationLane, chat_id: int = CHAT, first_update: int = 1):
        self.lane = lane
        self.chat_id = chat_id
        self.concierge = RuleBasedConcierge()
        self._updates = itertools.count(first_update)

    async def say(self, text: str) -> TurnResult:
        update_id = next(self._updates)
        message = InboundMessage(
            chat_id=self.chat_id,
            text=text,
            user_id=7,
            speaker="Ada",
            update_id=update_id,
            received_at=T0 + timedelta(seconds=update_id),
        )
        return await self.lane.on_turn(message, self.concierge)


@asynccontextmanager
async def running(db_path: Path, checkpoint_dir: Path) -> AsyncIterator[ConversationLane]:
    lane = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    try:
        await lane.hydrate()
        yield lane
    finally:
        await lane.shutdown()


async def assert_state_is_the_fold_of_its_log(lane: ConversationLane, session_id: str) -> None:
    """I6 for one session: live state, database row and checkpoint all equal the log's fold."""
    rebuilt = await lane.inspector.rebuild_state(session_id)
    session = await lane.inspector.session(session_id)
    assert session is not None
    assert session.state.log_view() == rebuilt.log_view()
    check = await lane.inspector.check(session)
    assert check.verdict == "matches", check.detail


def open_items(packet_text: str) -> list[str]:
    return [line for line in packet_text.splitlines() if line.startswith("- ")]


async def test_new_carries_open_todos_commitments_and_reminders_into_the_fresh_session(
    db_path, checkpoint_dir
):
    """/new opens the fresh session at once with the chat's open to-dos, commitments and
    reminders (a bot-side first turn records them); the fresh state is the fold of its log,
    and after a restart they are still there, once."""
    async with running(db_path, checkpoint_dir) as lane:
        chat = Chat(lane)
        await chat.say("remind me to book the hotel")
        await chat.say("I'll send you the slides tomorrow")
        reminder = await chat.say("remind me in 10 minutes to call mom")
        (job,) = reminder.turn.job_refs
        old = lane.session_id_for_chat(CHAT)

        switch = await lane.new_session(CHAT)

        assert switch is not None
        assert switch.closed == old
        assert switch.opened is not None
        assert switch.opened == lane.session_id_for_chat(CHAT) != old
        assert sorted(lp.text for lp in switch.loops) == ["book the hotel", SLIDES]
        assert [j.job_id for j in switch.jobs] == [job.job_id]
        packet = await lane.inspector.packet(CHAT)
        assert packet is not None
        assert {lp.text for lp in packet.open_loops} == {"book the hotel", SLIDES}
        assert [j.label for j in packet.active_job_refs] == ["call mom"]
        assert lane.active_jobs() == [(CHAT, job)]
        await assert_state_is_the_fold_of_its_log(lane, switch.opened)
        # The fresh session goes on as any other: the carried to-do can be closed.
        reply = await chat.say("I booked the hotel")
        assert "book the hotel" in (reply.turn.assistant_text or "")
        await assert_state_is_the_fold_of_its_log(lane, switch.opened)

    async with running(db_path, checkpoint_dir) as lane:
        assert lane.session_id_for_chat(CHAT) == switch.opened
        assert lane.active_jobs() == [(CHAT, job)]
        packet = await lane.inspector.packet(CHAT)
        assert packet is not None
        assert [lp.text for lp in packet.open_loops] == [SLIDES]


async def test_new_with_nothing_open_only_closes(db_path, checkpoint_dir):
    """With no open to-do or reminder, /new closes the session and the next message opens
    the fresh one (no empty carry turn)."""
    async with running(db_path, checkpoint_dir) as lane:
        chat = Chat(lane)
        await chat.say("my name is Ada")
        switch = await lane.new_session(CHAT)
        assert switch is not None
        assert switch.opened is None
        assert lane.session_id_for_chat(CHAT) is None
        first = await chat.say("hello")
        assert first.turn.seq == 1
        assert first.turn.session_id != switch.closed


async def test_a_reminder_carried_by_new_fires_exactly_once_across_a_restart(
    db_path, checkpoint_dir
):
    """A reminder set before /new fires in the fresh session, once: firing closes it in the
    log, so neither a second firing nor the next start brings it back."""
    async with running(db_path, checkpoint_dir) as lane:
        chat = Chat(lane)
        job = (await chat.say("remind me in 10 minutes to call mom")).turn.job_refs[0]
        switch = await lane.new_session(CHAT)
        assert switch is not None

        fired = await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: call mom")

        assert fired is not None
        assert fired.turn.session_id == switch.opened
        assert fired.turn.status == "answered"  # to deliver (I4 if the process dies now)
        assert await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: call mom") is None
        assert lane.active_jobs() == []
        await assert_state_is_the_fold_of_its_log(lane, fired.turn.session_id)

    async with running(db_path, checkpoint_dir) as lane:
        assert lane.active_jobs() == []
        assert await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: call mom") is None


async def test_resume_brings_the_earlier_session_back_with_the_chats_open_items(
    db_path, checkpoint_dir
):
    """/resume reopens an earlier session with its turns, facts and summary as they were;
    the chat's open to-dos and reminders are those of the session it leaves: one done since
    does not come back, one opened since is not lost, none is doubled."""
    async with running(db_path, checkpoint_dir) as lane:
        chat = Chat(lane)
        await chat.say("I'm planning a trip to Lisbon in May")
        await chat.say("remind me to book the hotel")
        first = lane.session_id_for_chat(CHAT)
        assert first is not None
        switch = await lane.new_session(CHAT)
        assert switch is not None
        assert switch.opened is not None
        second = switch.opened
        await chat.say("I booked the hotel")
        await chat.say("remind me to buy milk")
        milk = (await chat.say("remind me in 10 minutes to water the plants")).turn.job_refs[0]

        back = await lane.resume_session(CHAT, first)

        assert back.closed == second
        assert back.opened == first == lane.session_id_for_chat(CHAT)
        packet = await lane.inspector.packet(CHAT)
        assert packet is not None
        assert [lp.text for lp in packet.open_loops] == ["buy milk"]
        assert [j.job_id for j in packet.active_job_refs] == [milk.job_id]
        assert lane.active_jobs() == [(CHAT, milk)]
        history = await lane.inspector.history(CHAT, 10)
        assert history[0].user_text == "I'm planning a trip to Lisbon in May"
        assert "Lisbon" in render_packet(packet)
        await assert_state_is_the_fold_of_its_log(lane, first)

        # Back again: the to-do is there once, the reminder still once.
        again = await lane.resume_session(CHAT, second)
        assert again.opened == second
        packet = await lane.inspector.packet(CHAT)
        assert packet is not None
        assert [lp.text for lp in packet.open_loops] == ["buy milk"]
        assert lane.active_jobs() == [(CHAT, milk)]
        await assert_state_is_the_fold_of_its_log(lane, second)

    async with running(db_path, checkpoint_dir) as lane:
        assert lane.session_id_for_chat(CHAT) == second
        assert lane.active_jobs() == [(CHAT, milk)]
        fired = await lane.complete_job(CHAT, milk.job_id, "⏰ Reminder: water the plants")
        assert fired is not None
        assert fired.turn.session_id == second


async def test_resume_refuses_the_open_session_and_sessions_of_other_chats(db_path, checkpoint_dir):
    """Only a closed session of the same chat can be resumed; nothing changes otherwise."""
    async with running(db_path, checkpoint_dir) as lane:
        await Chat(lane).say("hello")
        await Chat(lane, OTHER_CHAT, first_update=100).say("hello from elsewhere")
        mine = lane.session_id_for_chat(CHAT)
        theirs = lane.session_id_for_chat(OTHER_CHAT)
        assert mine is not None
        assert theirs is not None
        with pytest.raises(SessionNotFound):
            await lane.resume_session(CHAT, mine)
        await lane.new_session(OTHER_CHAT)
        with pytest.raises(SessionNotFound):
            await lane.resume_session(CHAT, theirs)
        assert lane.session_id_for_chat(CHAT) == mine
        assert [s.current for s in await lane.inspector.chat_sessions(OTHER_CHAT)] == [False]


async def test_chat_sessions_are_numbered_oldest_first_with_their_first_words(
    db_path, checkpoint_dir
):
    """The listing /sessions shows: the chat's sessions only, oldest first, with turn counts,
    the first thing said and which one is open."""
    async with running(db_path, checkpoint_dir) as lane:
        chat = Chat(lane)
        await chat.say("my name is Ada")
        await chat.say("how are you?")
        await lane.new_session(CHAT)
        await chat.say("let's plan the trip")
        await Chat(lane, OTHER_CHAT, first_update=100).say("not mine")

        listing = await lane.inspector.chat_sessions(CHAT)

        assert [(s.number, s.turns, s.first_words, s.current) for s in listing] == [
            (1, 2, "my name is Ada", False),
            (2, 1, "let's plan the trip", True),
        ]
        assert await lane.inspector.chat_sessions(999) == []


async def test_clear_takes_earlier_turns_out_of_the_packet_and_recall_still_finds_them(
    db_path, checkpoint_dir
):
    """/clear: the turns before it leave the packet (raw turns, retrieved turns, summaries,
    topics), the open to-dos and reminders stay, /recall still finds the old turns, and the
    state is the fold of the log, also after a restart."""
    async with running(db_path, checkpoint_dir) as lane:
        chat = Chat(lane)
        await chat.say("I love hiking in the Alps with my dog Rex")
        await chat.say("remind me to book the hotel")
        job = (await chat.say("remind me in 10 minutes to call mom")).turn.job_refs[0]
        for n in range(10):  # enough turns for a rolling summary
            await chat.say(f"the glacier walk number {n} was long and beautiful")
        before = await lane.inspector.packet(CHAT)
        assert before is not None
        assert before.rolling_session_summary

        assert await lane.clear_session(CHAT) == 13
        assert await lane.clear_session(CHAT) == 0  # nothing new since

        packet = await lane.inspector.context(CHAT, "tell me about the glacier hiking")
        assert packet is not None
        assert packet.recent_turns == ()
        assert packet.rolling_session_summary == ""
        assert packet.recent_turn_summaries == ()
        assert packet.active_topics == ()
        assert [r for r in packet.retrieved if r.kind != "memory"] == []
        assert [lp.text for lp in packet.open_loops] == ["book the hotel"]
        assert [j.job_id for j in packet.active_job_refs] == [job.job_id]
        assert "glacier" not in render_packet(packet)
        found = await lane.inspector.recall(CHAT, "glacier")
        assert any(item.kind == "turn" and "glacier" in item.text for item in found)
        sid = lane.session_id_for_chat(CHAT)
        assert sid is not None
        chain = await lane.inspector.summary_history(sid)
        assert chain[-1].text == ""  # the chain's latest version is the state's summary
        await assert_state_is_the_fold_of_its_log(lane, sid)

        after = await chat.say("what is still open?")
        assert after.packet is not None
        assert [t.seq for t in after.packet.recent_turns] == []
        assert "hotel" in (after.turn.assistant_text or "")

    async with running(db_path, checkpoint_dir) as lane:
        packet = await lane.inspector.context(CHAT, "glacier walk")
        assert packet is not None
        assert [t.user_text for t in packet.recent_turns] == ["what is still open?"]
        assert "glacier" not in render_packet(packet)
        await assert_state_is_the_fold_of_its_log(lane, sid)


async def test_forget_cancels_the_reminders_of_the_session(db_path, checkpoint_dir):
    """Erasing the open session cancels its reminders: they never fire, now or after a
    restart, even once the chat has a new session."""
    async with running(db_path, checkpoint_dir) as lane:
        chat = Chat(lane)
        job = (await chat.say("remind me in 10 minutes to call mom")).turn.job_refs[0]
        sid = lane.session_id_for_chat(CHAT)
        assert sid is not None
        assert lane.chat_jobs(CHAT) == (job,)

        assert await lane.forget_session(sid)
        await chat.say("hello again")

        assert lane.chat_jobs(CHAT) == ()
        assert await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: call mom") is None

    async with running(db_path, checkpoint_dir) as lane:
        assert lane.active_jobs() == []


async def test_save_report_gives_the_last_commit_and_checkpoint(db_path, checkpoint_dir):
    """What /save reports: the last turn's commit time and the checkpoint file's write time;
    a chat with no open session has nothing to report."""
    async with running(db_path, checkpoint_dir) as lane:
        assert await lane.inspector.save_report(CHAT) is None
        result = await Chat(lane).say("hello")
        report = await lane.inspector.save_report(CHAT)
        assert report is not None
        assert report.turns == 1
        assert report.last_commit == result.turn.created_at
        assert report.checkpoint_written is not None
        assert report.checkpoint_written >= result.turn.created_at
