"""The commit of one turn (:mod:`agent.memory.lane_parts.turn_commit`): the turn, its state, the
summary version and the long-term memories it states commit together; private talk is remembered,
group talk is not; a reply that asks to forget erases in the turn that asked; and a failed
commit leaves nothing behind. Real SQLite, real checkpoint files."""

from __future__ import annotations

import pytest

from agent.db import Database
from agent.errors import StorageError
from agent.memory import ConversationLane, InboundMessage, Reply
from agent.memory.conversation_checkpoint import CheckpointWriter
from agent.memory.conversation_store import SqliteConversationStore

CHAT = 8181


class Forgetting:
    """Answers by asking the lane to forget every memory the packet carries."""

    async def reply(self, packet, message):
        ids = tuple(m.memory_id for m in packet.memories)
        return Reply(text="Forgotten.", intent="forget", forget_memories=ids)


async def test_private_talk_is_remembered_and_group_talk_is_not(lane, engine):
    """"My name is Ada" said in a private chat becomes a memory of that chat; said in a group
    it stays in the group's turn log only."""
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="my name is Ada"), engine)
    group = InboundMessage(chat_id=-CHAT, text="my name is Bob", chat_type="group", speaker="Bob")
    await lane.on_turn(group, engine)

    assert [m.text for m in await lane.inspector.facts(CHAT)] == ["Ada"]
    assert await lane.inspector.facts(-CHAT) == []
    assert [t.user_text for t in await lane.inspector.history(-CHAT, 5)] == ["my name is Bob"]


async def test_a_reply_that_asks_to_forget_erases_in_its_own_turn(lane, engine):
    """The memories a reply asks to forget are gone once on_turn returns."""
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="my name is Ada"), engine)
    assert await lane.inspector.facts(CHAT)
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="forget my name"), Forgetting())
    assert await lane.inspector.facts(CHAT, history=True) == []


async def test_a_commit_that_fails_leaves_nothing_and_the_chat_goes_on(
    lane, engine, monkeypatch: pytest.MonkeyPatch
):
    """A storage failure inside the commit raises StorageError and writes nothing: no turn,
    no session for a chat's first message; the next message opens it as if nothing happened."""

    async def broken(self, tx, turn):
        raise StorageError("injected: the disk refused the turn")

    with monkeypatch.context() as patch:  # inside the transaction, after the session row
        patch.setattr(SqliteConversationStore, "append_turn", broken)
        with pytest.raises(StorageError):
            await lane.on_turn(InboundMessage(chat_id=CHAT, text="lost"), engine)
    assert lane.session_id_for_chat(CHAT) is None
    assert await lane.inspector.open_session(CHAT) is None
    result = await lane.on_turn(InboundMessage(chat_id=CHAT, text="kept"), engine)
    assert result.turn.seq == 1
    assert [t.user_text for t in await lane.inspector.history(CHAT, 5)] == ["kept"]


async def test_an_update_another_worker_recorded_meanwhile_is_a_duplicate(
    lane, engine, db_path, tmp_path
):
    """Another worker on the same database records the same update while this one's engine
    is still answering it: this one's commit returns that turn as a duplicate and writes
    nothing, so the update is one turn (I3), whichever worker's check saw it first."""
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="hello", update_id=1), engine)
    message = InboundMessage(chat_id=CHAT, text="the same update twice", update_id=2)
    async with Database(db_path) as other_db:
        other = ConversationLane(other_db, CheckpointWriter(tmp_path / "other-checkpoints"))
        await other.hydrate()
        recorded = []

        class OtherWorkerFirst:
            async def reply(self, packet, inbound):
                recorded.append(await other.on_turn(inbound, engine))
                return Reply(text="a reply nobody sees")

        try:
            result = await lane.on_turn(message, OtherWorkerFirst())
        finally:
            await other.shutdown()
    assert result.duplicate
    assert result.turn.turn_id == recorded[0].turn.turn_id
    history = await lane.inspector.history(CHAT, 5)
    assert [(t.seq, t.user_text) for t in history] == [(1, "hello"), (2, "the same update twice")]
    assert history[-1].turn_id == recorded[0].turn.turn_id
    assert history[-1].assistant_text != "a reply nobody sees"
