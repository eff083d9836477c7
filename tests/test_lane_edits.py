"""Edited messages through the memory lane (:meth:`ConversationLane.on_edit`): real SQLite
files, real checkpoint files, the offline concierge, a real restart.

An edit replaces its turn's text, keeps the old text as the turn's edit history, and everything
derived from the turn log follows: the session state (I6), the summary chain, the full-text
index, the checkpoint and the long-term memories the turn stated.
"""

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
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage, TurnResult
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_summarizer import ExtractiveSummarizer

CHAT = 4242
GROUP = -5151
T0 = datetime(2025, 3, 1, 10, 32, 0, tzinfo=UTC)
EDIT_UPDATES = 10_000


class Chat:
    """Sends numbered messages (each its own update and message id) and edits of them."""

    def __init__(self, lane: ConversationLane, chat_id: int = CHAT) -> None:
        self.lane = lane
        self.chat_id = chat_id
        self.concierge = RuleBasedConcierge()
        self._updates = itertools.count(1)
        self._edits = itertools.count(EDIT_UPDATES)

    def _message(self, text: str, *, update_id: int, message_id: int) -> InboundMessage:
        group = self.chat_id < 0
        return InboundMessage(
            chat_id=self.chat_id,
            text=text,
            chat_type="group" if group else "private",
            user_id=7,
            speaker="Ada",
            chat_title="Team" if group else None,
            update_id=update_id,
            message_id=message_id,
            wants_reply=not group,
            received_at=T0 + timedelta(seconds=update_id),
        )

    async def say(self, text: str) -> TurnResult:
        update_id = next(self._updates)
        message = self._message(text, update_id=update_id, message_id=update_id)
        return await self.lane.on_turn(message, self.concierge)

    async def reply(self, text: str) -> str:
        result = await self.say(text)
        assert result.turn.assistant_text is not None
        return result.turn.assistant_text

    def edit_of(self, message_id: int, text: str, update_id: int | None = None) -> InboundMessage:
        uid = next(self._edits) if update_id is None else update_id
        return self._message(text, update_id=uid, message_id=message_id)

    async def edit(self, message_id: int, text: str) -> str:
        return await self.lane.on_edit(self.edit_of(message_id, text))


@asynccontextmanager
async def open_lane(
    db_path: Path, checkpoint_dir: Path, *, every: int = 10
) -> AsyncIterator[tuple[ConversationLane, Database]]:
    """A hydrated lane (summary folds every ``every`` turns) and its database, shut down at
    the end."""
    states = ConversationStateManager(ExtractiveSummarizer(every_n=every, keep_raw=3))
    db = await Database(db_path).open()
    lane = ConversationLane(db, CheckpointWriter(checkpoint_dir), state_manager=states)
    try:
        await lane.hydrate()
        yield lane, db
    finally:
        await lane.shutdown()


async def assert_state_is_the_fold_of_the_log(lane: ConversationLane, session_id: str) -> None:
    """I6 after an edit: the state rebuilt from the (edited) turn log equals the sessions row,
    the checkpoint file and the lane's state; the chain's latest version is its summary."""
    rebuilt = await lane.inspector.rebuild_state(session_id)
    session = await lane.inspector.session(session_id)
    snapshot = await lane.inspector.checkpoint(session_id)
    assert session is not None
    assert snapshot is not None
    assert rebuilt.log_view() == session.state.log_view() == snapshot.state.log_view()
    try:  # the lane's own state, as it would write it to the checkpoint now
        data = lane.inspector.checkpoint_bytes(session_id)
        held = CheckpointWriter.parse(data, session_id=session_id)
    except SessionNotFound:
        held = None  # a closed session: the lane holds nothing of it
    if held is not None:
        assert held.state.log_view() == rebuilt.log_view()
    check = await lane.inspector.check(session)
    assert check.verdict == "matches", check.detail
    if rebuilt.summary_version:
        chain = await lane.inspector.summary_history(session_id)
        latest = [v for v in chain if v.summarizer == "extractive" and v.status == "completed"][-1]
        assert latest.version == rebuilt.summary_version
        assert latest.text == rebuilt.rolling_summary


async def memory_texts(db: Database, chat_id: int = CHAT) -> list[str]:
    rows = await db.fetchall("SELECT text FROM memories WHERE chat_id = ?", (chat_id,))
    return sorted(row[0] for row in rows)


async def test_an_edited_name_is_the_name_the_bot_knows(db_path: Path, checkpoint_dir: Path):
    """A message "my name is Ada" edited to "my name is Grace": the bot answers Grace, before
    and after a restart, and no memory row holds Ada any more."""
    async with open_lane(db_path, checkpoint_dir) as (lane, db):
        chat = Chat(lane)
        await chat.say("my name is Ada")
        await chat.say("I live in Lisbon")
        assert "Ada" in await chat.reply("what's my name?")
        assert await chat.edit(1, "my name is Grace") == "edited"
        answer = await chat.reply("what's my name?")
        assert "Grace" in answer
        assert "Ada" not in answer
        texts = await memory_texts(db)
        assert "Grace" in texts
        assert not [text for text in texts if "Ada" in text]
        sid = lane.session_id_for_chat(CHAT)
        assert sid is not None
        await assert_state_is_the_fold_of_the_log(lane, sid)

    async with open_lane(db_path, checkpoint_dir) as (lane, db):
        chat = Chat(lane)
        chat._updates = itertools.count(100)
        assert "Grace" in await chat.reply("what's my name?")


async def test_a_name_edited_away_is_forgotten(lane: ConversationLane, db):
    """A message that stated a name, edited into one that states none: the memory it alone
    stated is gone, and the bot no longer claims to know the name."""
    chat = Chat(lane)
    await chat.say("my name is Ada")
    assert await memory_texts(db) == ["Ada"]
    assert await chat.edit(1, "good morning") == "edited"
    assert await memory_texts(db) == []
    assert "Ada" not in await chat.reply("what's my name?")


async def test_an_edit_keeps_the_old_text_as_history_and_search_finds_the_new(
    lane: ConversationLane,
):
    """The turn's text is the new one, its edit history the old ones in order; /recall and the
    full-text index find the new words, not the replaced ones; the bot does not answer again."""
    chat = Chat(lane)
    first = await chat.say("let us meet at the harbour on friday")
    await chat.say("bring the blue umbrella")
    assert await chat.edit(1, "let us meet at the lighthouse on friday") == "edited"
    assert await chat.edit(1, "let us meet at the lighthouse on saturday") == "edited"
    turn = await lane.inspector.turn(first.turn.session_id, 1)
    assert turn is not None
    assert turn.user_text == "let us meet at the lighthouse on saturday"
    assert turn.assistant_text == first.turn.assistant_text  # the answer stays as it was
    history = await lane.inspector.edit_history(first.turn.session_id, 1)
    assert [edit.previous_text for edit in history] == [
        "let us meet at the harbour on friday",
        "let us meet at the lighthouse on friday",
    ]
    assert [edit.update_id for edit in history] == [EDIT_UPDATES, EDIT_UPDATES + 1]
    assert await lane.inspector.recall(CHAT, "harbour") == []
    found = await lane.inspector.recall(CHAT, "lighthouse")
    assert found
    assert "lighthouse" in found[0].text
    assert "saturday" in found[0].text
    history_rows = await lane.inspector.history(CHAT, 10)
    assert history_rows[0].user_text == turn.user_text
    await assert_state_is_the_fold_of_the_log(lane, first.turn.session_id)


async def test_the_state_follows_an_edit_of_a_todo(lane: ConversationLane):
    """A to-do the user edits is the edited to-do in the state's open loops (the state is the
    fold of the edited log), and the packet the next message gets says so."""
    chat = Chat(lane)
    await chat.say("todo: buy oat milk")
    await chat.say("what's the weather like?")
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    assert any("oat milk" in loop.text for loop in packet.open_loops)
    assert await chat.edit(1, "todo: buy almond milk") == "edited"
    packet = await lane.inspector.packet(CHAT)
    assert packet is not None
    loops = [loop.text for loop in packet.open_loops]
    assert any("almond milk" in text for text in loops)
    assert not any("oat" in text for text in loops)
    sid = lane.session_id_for_chat(CHAT)
    assert sid is not None
    await assert_state_is_the_fold_of_the_log(lane, sid)


async def test_an_edit_inside_a_summarised_range_rewrites_the_summary_chain(
    db_path: Path, checkpoint_dir: Path
):
    """An edit of a turn the rolling summary already covers changes the summary versions folded
    at or after it (same versions and ranges, new text), never the ones before; the state's
    summary is the chain's latest text (I6) and the old words are gone from both."""
    async with open_lane(db_path, checkpoint_dir, every=4) as (lane, _):
        chat = Chat(lane)
        for n in range(1, 13):
            word = "zeppelin" if n == 5 else f"note{n}"
            await chat.say(f"remind me to paint the {word} green, item {n}")
        sid = lane.session_id_for_chat(CHAT)
        assert sid is not None
        before = await lane.inspector.summary_history(sid)
        assert [v.version for v in before] == [1, 2, 3]
        assert "zeppelin" in before[-1].text
        assert await chat.edit(5, "remind me to paint the airship green, item 5") == "edited"
        after = await lane.inspector.summary_history(sid)
        assert [(v.version, v.from_seq, v.to_seq) for v in after] == [
            (v.version, v.from_seq, v.to_seq) for v in before
        ]
        assert after[0] == before[0]  # folded before turn 5: untouched
        assert all("zeppelin" not in v.text and "zeppelin" not in v.delta for v in after)
        assert "airship" in after[-1].text
        await assert_state_is_the_fold_of_the_log(lane, sid)


async def test_redelivered_identical_and_unknown_edits_change_nothing(lane: ConversationLane, db):
    """An edit delivered twice is applied once (keyed by the edit's update, I3); an edit that
    leaves the text as it was, or of a message that is no turn (sent before the bot ran, or a
    command), writes nothing and never creates a turn."""
    chat = Chat(lane)
    await chat.say("my favourite colour is teal")
    edit = chat.edit_of(1, "my favourite colour is red")
    assert await lane.on_edit(edit) == "edited"
    assert await lane.on_edit(edit) == "duplicate"
    assert await chat.edit(1, "my favourite colour is red") == "unchanged"
    assert await chat.edit(99, "a message the bot never saw") == "unknown"
    sid = lane.session_id_for_chat(CHAT)
    assert sid is not None
    assert len(await lane.inspector.edit_history(sid, 1)) == 1
    (turns,) = await db.fetchone("SELECT COUNT(*) FROM conversation_turns") or (0,)
    assert turns == 1
    await assert_state_is_the_fold_of_the_log(lane, sid)


async def test_an_edit_after_forget_is_ignored(lane: ConversationLane, db):
    """A message erased by /forget stays erased: its edit finds no turn and writes nothing;
    and erasing a session takes its turns' edit histories with it."""
    chat = Chat(lane)
    await chat.say("my name is Ada")
    assert await chat.edit(1, "my name is Grace") == "edited"
    sid = lane.session_id_for_chat(CHAT)
    assert sid is not None
    assert await lane.forget_session(sid)
    assert await db.fetchall("SELECT * FROM turn_edits") == []
    assert await chat.edit(1, "my name is Hedy") == "unknown"
    assert await db.fetchall("SELECT * FROM conversation_turns") == []
    assert await db.fetchall("SELECT * FROM turn_edits") == []
    assert await memory_texts(db) == []


async def test_an_edit_in_a_closed_session_corrects_memory_and_that_session(
    lane: ConversationLane, db,
):
    """After /new, an edit of a message of the closed session still corrects the long-term
    memory it stated, and the closed session's state and checkpoint follow its edited log."""
    chat = Chat(lane)
    await chat.say("my name is Ada")
    old = lane.session_id_for_chat(CHAT)
    assert old is not None
    await lane.new_session(CHAT)
    await chat.say("hello again")
    assert await chat.edit(1, "my name is Grace") == "edited"
    assert "Grace" in await chat.reply("what's my name?")
    assert await memory_texts(db) == ["Grace"]
    await assert_state_is_the_fold_of_the_log(lane, old)


async def test_an_edit_in_a_group_updates_the_turn_but_no_memory(lane: ConversationLane, db):
    """In a group, an edit updates the member's turn and the group's state quietly; long-term
    memory (private talk only) gets nothing from it."""
    chat = Chat(lane, GROUP)
    await chat.say("I propose we ship on monday")
    await chat.say("sounds good")
    assert await chat.edit(1, "I propose we ship on tuesday") == "edited"
    sid = lane.session_id_for_chat(GROUP)
    assert sid is not None
    turn = await lane.inspector.turn(sid, 1)
    assert turn is not None
    assert turn.user_text == "I propose we ship on tuesday"
    assert await memory_texts(db, GROUP) == []
    await assert_state_is_the_fold_of_the_log(lane, sid)


async def test_an_edit_keeps_a_memory_another_turn_also_stated(lane: ConversationLane, db):
    """A memory stays while a turn still states it: editing one of two turns that said "I live
    in Porto" into something else leaves the memory, sourced from the other turn."""
    chat = Chat(lane)
    await chat.say("I live in Porto")
    await chat.say("I live in Porto")
    assert await chat.edit(1, "the weather is lovely") == "edited"
    assert "Porto" in await memory_texts(db)
    rows = await db.fetchall("SELECT seq FROM memory_sources")
    assert [row[0] for row in rows] == [2]


@pytest.mark.parametrize("seq", [1, 3])
async def test_an_edit_survives_a_restart_with_the_checkpoint_matching(
    db_path: Path, checkpoint_dir: Path, seq: int
):
    """After an edit and a restart, hydrate finds every checkpoint matching the log (nothing
    rebuilt), and the recent turns the packets carry have the edited text."""
    async with open_lane(db_path, checkpoint_dir) as (lane, _):
        chat = Chat(lane)
        for text in ("todo: call the plumber", "I like jazz", "my dog is called Rex"):
            await chat.say(text)
        assert await chat.edit(seq, "todo: call the electrician") == "edited"
    lane = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    try:
        report = await lane.hydrate()
        assert report.rebuilt == {}
        packet = await lane.inspector.packet(CHAT)
        assert packet is not None
        assert "todo: call the electrician" in [t.user_text for t in packet.recent_turns]
        sid = lane.session_id_for_chat(CHAT)
        assert sid is not None
        await assert_state_is_the_fold_of_the_log(lane, sid)
    finally:
        await lane.shutdown()
