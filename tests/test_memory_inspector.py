"""The memory's read door (:mod:`agent.memory.inspector`): what ``/memory``, ``/recall``,
``/history``, ``/sessions``, ``/save`` and ``/export`` show, what ``agent-memory`` reads beside
a running bot, and the checkpoint checks and repairs. Real SQLite and checkpoint files."""

from __future__ import annotations

import orjson
import pytest

from agent.errors import SessionNotFound
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage
from agent.memory.schemas import Reply

CHAT = 3131


class Noting:
    """A reply engine that confirms what it heard."""

    async def reply(self, packet, message):
        return Reply(text=f"Noted: {message.text}", intent="chat")


async def say(lane: ConversationLane, *texts: str, chat_id: int = CHAT) -> str:
    for text in texts:
        result = await lane.on_turn(InboundMessage(chat_id=chat_id, text=text), Noting())
    return result.turn.session_id


async def test_the_chat_reads_what_the_lane_holds(lane):
    """The packet, the last turns and a search show what the chat said, as the lane holds it;
    a chat that said nothing has no packet and no history."""
    await say(lane, "The kayak is yellow.", "My sister lives in Porto.", "What about lunch?")
    inspector = lane.inspector

    packet = await inspector.packet(CHAT)
    assert packet is not None
    assert [t.user_text for t in packet.recent_turns][-1] == "What about lunch?"
    assert packet.retrieved == ()
    history = await inspector.history(CHAT, 2)
    assert [t.user_text for t in history] == ["My sister lives in Porto.", "What about lunch?"]
    found = await inspector.recall(CHAT, "yellow kayak")
    assert found
    assert "kayak" in found[0].text
    context = await inspector.context(CHAT, "where is the yellow kayak?")
    assert context is not None
    assert context.token_estimate <= inspector.token_budget
    assert await inspector.packet(CHAT + 1) is None
    assert await inspector.history(CHAT + 1, 5) == []


async def test_save_report_and_export_describe_the_open_session(lane, checkpoint_dir):
    """/save says the turns are committed and the checkpoint written; /export sends the
    checkpoint the file holds; a session not open cannot be exported."""
    sid = await say(lane, "one", "two")
    inspector = lane.inspector

    report = await inspector.save_report(CHAT)
    assert report is not None
    assert (report.session_id, report.turns) == (sid, 2)
    assert report.checkpoint_written is not None
    sent = CheckpointWriter.parse(inspector.checkpoint_bytes(sid), session_id=sid)
    on_disk = await inspector.checkpoint(sid)
    assert on_disk is not None
    assert (sent.state, sent.recent_turns) == (on_disk.state, on_disk.recent_turns)
    assert inspector.checkpoint_path(sid).parent == checkpoint_dir
    assert await inspector.save_report(CHAT + 1) is None
    with pytest.raises(SessionNotFound):
        inspector.checkpoint_bytes("ses_" + "0" * 32)


async def test_sessions_are_listed_numbered_with_their_first_words(lane):
    """/sessions numbers the chat's sessions oldest first; the open one is current."""
    first = await say(lane, "Planning the trip to Lisbon")
    await lane.new_session(CHAT)
    second = await say(lane, "Now about the garden")

    listed = await lane.inspector.chat_sessions(CHAT)
    assert [(s.number, s.session_id, s.current) for s in listed] == [
        (1, first, False),
        (2, second, True),
    ]
    assert listed[0].first_words == "Planning the trip to Lisbon"
    rows = await lane.inspector.sessions(chat_id=CHAT, open_only=True)
    assert [row.session_id for row in rows] == [second]


async def test_a_closed_session_reads_from_the_database(lane):
    """What agent-memory shows of any session, open or closed: its row, turns, packet and a
    search within it, and the state its turn log folds into."""
    closed = await say(lane, "The code of the gate is 4711.", "Bring the ladder.")
    await lane.new_session(CHAT)
    inspector = lane.inspector

    session = await inspector.session(closed)
    assert session is not None
    assert session.closed_at is not None
    assert [t.seq async for t in inspector.turns(closed)] == [1, 2]
    packet = await inspector.packet_of(session)
    assert [t.user_text for t in packet.recent_turns] == [
        "The code of the gate is 4711.",
        "Bring the ladder.",
    ]
    hits = await inspector.recall_in(session, "gate code", 3)
    assert "4711" in hits[0].text
    rebuilt = await inspector.rebuild_state(closed)
    assert rebuilt.log_view() == session.state.log_view()
    assert not await inspector.state_differs(closed)


async def test_checks_find_a_damaged_checkpoint_and_repair_rewrites_it(lane):
    """A checkpoint file that was cut short is reported corrupt; repair rewrites it from the
    database and the check then matches; the database itself passes its integrity checks."""
    sid = await say(lane, "keep this safe")
    inspector = lane.inspector
    path = inspector.checkpoint_path(sid)
    path.write_bytes(path.read_bytes()[:20])

    [check] = await inspector.check_all(settle=0)
    assert (check.session_id, check.verdict) == (sid, "corrupt")
    assert await inspector.repair(sid)
    session = await inspector.session(sid)
    assert session is not None
    assert (await inspector.check(session)).verdict == "matches"
    assert await inspector.integrity_problems() == []
    assert (await inspector.statistics()).turns == {"answered": 1}


async def test_a_checkpoint_at_the_log_s_turn_with_another_state_differs(lane):
    """A checkpoint at the log's turn whose state is not the log's (its topics changed by
    hand) is reported as differing, whatever its status says; repair rewrites it."""
    sid = await say(lane, "My name is Ada.", "I live in Porto.")
    inspector = lane.inspector
    path = inspector.checkpoint_path(sid)
    snapshot = await inspector.checkpoint(sid)  # its base file and journal, read as one
    path.with_suffix(".journal").unlink(missing_ok=True)
    document = snapshot.model_dump(mode="json")
    document["state"]["status"] = "active"
    path.write_bytes(orjson.dumps(document))
    assert (await inspector.check(await inspector.session(sid))).verdict == "matches"
    assert document["state"]["active_topics"]
    document["state"]["active_topics"][0]["name"] = "lisbon"
    path.write_bytes(orjson.dumps(document))

    [check] = await inspector.check_all(settle=0)
    assert (check.session_id, check.verdict) == (sid, "differs")
    assert await inspector.repair(sid)
    assert (await inspector.check(await inspector.session(sid))).verdict == "matches"


async def test_an_exported_session_imports_back_the_same(lane):
    """Export, forget, import gives the same state, turn log and checkpoint."""
    sid = await say(lane, "My name is Ada.", "I live in Porto.")
    inspector = lane.inspector
    archive = await inspector.export(sid)
    assert archive is not None
    before = await inspector.session(sid)
    assert before is not None

    await lane.forget_session(sid)
    assert await inspector.session(sid) is None
    state = await inspector.import_archive(archive)

    assert state.log_view() == before.state.log_view()
    texts = [t.user_text async for t in inspector.turns(sid)]
    assert texts == ["My name is Ada.", "I live in Porto."]
    snapshot = await inspector.checkpoint(sid)
    assert snapshot is not None
    assert snapshot.turn_count == 2


async def test_facts_list_what_long_term_memory_keeps(lane):
    """/facts lists the memories of the chat; the packet carries them too."""
    await lane.remember(CHAT, "my passport number ends in 42")
    inspector = lane.inspector
    facts = await inspector.facts(CHAT)
    assert [m.text for m in facts] == ["my passport number ends in 42"]
    assert [m.text for m in await inspector.chat_memories(CHAT)] == [facts[0].text]
    assert await inspector.facts_as_of(CHAT, facts[0].valid_from) == facts
