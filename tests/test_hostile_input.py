"""Hostile and malformed input against the memory lane (DESIGN.md section 7, issue 6).

Over real SQLite files and real checkpoint directories: any text through ``on_turn``
(hypothesis), text that looks like SQL, FTS5 syntax or a path in every command, fifty chats that
must never see each other, and an erasure that must leave no byte of a session on disk. The
end-to-end versions, through the real bot and the fake Bot API, are in ``test_hostile_bot.py``.

Property tests share one lane per test function (hypothesis does not reset function-scoped
fixtures between examples), so each example talks in chats and with update ids of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from agent.chat.commands import COMMANDS, CommandCenter
from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.db import Database
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import (
    CheckpointWriter,
    ConversationContextPacket,
    ConversationLane,
    InboundMessage,
    Reply,
    TurnResult,
    render_packet,
)
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_summarizer import ExtractiveSummarizer
from agent.memory.lane_parts.memory_commands import MAX_NOTE_CHARS
from agent.memory.schemas import CheckpointTurn
from agent.utils.time_zones import find_zone
from tests.hostile import (
    HISTORY_ARGUMENTS,
    INJECTIONS,
    ODD_CHARACTERS,
    database_fingerprint,
    every_table_text,
    files_containing,
    texts,
    tree_fingerprint,
)

#: Chat and update ids, unique across every example of every test here.
_IDS = itertools.count(1)
#: Every command but /new, which closes the conversation by design; /forget only asks, and
#: /clear with no argument is left out (it clears by design; with any words it only answers).
#: /remember keeps a note: it changes what the chat holds.
_READ_ONLY_COMMANDS = sorted(name for name in COMMANDS if name not in {"new", "remember"})
# /facts forget N and /facts confirm N change long-term memory; any other /facts only reads.
_FACTS_ACTION = re.compile(r"\s*(?:forget|confirm)\b", re.IGNORECASE)
_BOT_ID = 777


class EchoEngine:
    """Answers with the message: hostile text reaches the assistant side of the log too."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply(text=f"echo: {message.text}", intent="echo")


@pytest.fixture
async def folding_lane(db: Database, checkpoint_dir: Path) -> AsyncIterator[ConversationLane]:
    """A lane over the ``db`` fixture that folds every three turns, so that summaries see
    hostile text too."""
    lane = ConversationLane(
        db,
        CheckpointWriter(checkpoint_dir),
        state_manager=ConversationStateManager(ExtractiveSummarizer(every_n=3, keep_raw=2)),
    )
    await lane.hydrate()
    yield lane
    await lane.shutdown()


async def _say(
    lane: ConversationLane, chat_id: int, text: str, *, engine: Any = None, **fields: Any
) -> TurnResult:
    message = InboundMessage(chat_id=chat_id, text=text, update_id=next(_IDS), **fields)
    return await lane.on_turn(message, engine or EchoEngine())


# -- any text through on_turn ------------------------------------------------------------------


@given(
    chat_type=st.sampled_from(["private", "group", "supergroup"]),
    speaker=st.none() | texts(max_size=40),
    title=st.none() | texts(max_size=40),
    turns=st.lists(st.tuples(texts(), st.booleans()), min_size=1, max_size=4),
)
async def test_any_text_reads_back_equal_and_the_checkpoint_matches_the_log(
    folding_lane: ConversationLane,
    chat_type: str,
    speaker: str | None,
    title: str | None,
    turns: list[tuple[str, bool]],
) -> None:
    """Whatever the text (any Unicode but surrogates, NUL and control characters, bidi and
    zero-width marks, FTS5 and SQL syntax, 4,096+ characters), every turn reads back from the
    log equal to what was committed, and the checkpoint file parses, equals the database's
    state and equals the state rebuilt by replaying the log (I6)."""
    lane = folding_lane
    chat_id = next(_IDS) * (1 if chat_type == "private" else -1)
    results = []
    for text, wants_reply in turns:
        message = InboundMessage(
            chat_id=chat_id,
            text=text,
            chat_type=chat_type,
            user_id=abs(chat_id),
            speaker=speaker,
            chat_title=title,
            update_id=next(_IDS),
            bot_id=_BOT_ID,
            message_id=len(results) + 1,
            wants_reply=wants_reply,
        )
        results.append(await lane.on_turn(message, EchoEngine()))

    sid = results[0].turn.session_id
    inspector = lane.inspector
    assert [r.turn.user_text for r in results] == [text for text, _ in turns]
    for result in results:
        assert await inspector.turn(sid, result.turn.seq) == result.turn
    session = await inspector.session(sid)
    snapshot = await lane.inspector.checkpoint(sid)
    assert session is not None
    assert snapshot is not None
    assert snapshot.turn_count == session.state.turn_count == len(turns)
    assert snapshot.state == session.state
    assert snapshot.state.log_view() == (await lane.inspector.rebuild_state(sid)).log_view()
    recent = await inspector.recent(sid, len(snapshot.recent_turns))
    assert snapshot.recent_turns == tuple(CheckpointTurn.of(turn) for turn in recent)


async def test_hostile_texts_survive_a_restart_with_every_checkpoint_valid(
    db_path: Path, checkpoint_dir: Path
) -> None:
    """Every injection sample, every odd character and 4,096+ character texts, in a private
    chat and a group: after a restart no checkpoint needs rebuilding and every packet is the
    same as before."""
    hostile = [*INJECTIONS, *ODD_CHARACTERS, ODD_CHARACTERS * 200, "🦊" * 4097, "\x00" * 5000]
    chats = {101: "private", -202: "group"}
    packets: dict[int, str] = {}
    db = await Database(db_path).open()
    lane = ConversationLane(db, CheckpointWriter(checkpoint_dir))
    await lane.hydrate()
    try:
        for text in hostile:
            for chat_id, chat_type in chats.items():
                await _say(lane, chat_id, text, chat_type=chat_type, speaker=text[:20])
        for chat_id in chats:
            packet = await lane.inspector.packet(chat_id)
            assert packet is not None
            packets[chat_id] = render_packet(packet)
    finally:
        await lane.shutdown()

    again = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    try:
        report = await again.hydrate()
        assert report.rebuilt == {}
        for chat_id in chats:
            packet = await again.inspector.packet(chat_id)
            assert packet is not None
            assert packet.turn_count == len(hostile)
            assert render_packet(packet) == packets[chat_id]
    finally:
        await again.shutdown()


# -- injection -----------------------------------------------------------------------------------


@given(name=st.sampled_from(_READ_ONLY_COMMANDS), args=texts(max_size=120))
async def test_any_command_argument_gets_an_answer_and_changes_nothing(
    folding_lane: ConversationLane, db: Database, checkpoint_dir: Path, name: str, args: str
) -> None:
    """Every command but /new and /remember (and /facts forget or confirm, /clear alone, a
    /timezone that names a zone), with any text as its argument, answers with a non-empty text
    and leaves every table (FTS5 shadow tables included) and every checkpoint file as they
    were; so do a retrieval for that text and a /forget confirmation naming it."""
    assume(name != "clear" or args.strip())
    assume(name != "facts" or not _FACTS_ACTION.match(args))
    assume(name != "timezone" or find_zone(args) is None)  # "/timezone Z" sets UTC, as asked
    lane = folding_lane
    chat = 1
    if lane.session_id_for_chat(chat) is None:
        for text in ("my name is Ada", "remind me to book the hotel", "what's my name?"):
            await _say(lane, chat, text, engine=RuleBasedConcierge())
    commands = CommandCenter(lane, db)
    tables, files = await database_fingerprint(db), tree_fingerprint(checkpoint_dir)

    reply = await commands.run(chat, name, args)
    packet = await lane.inspector.context(chat, args)
    if args != lane.session_id_for_chat(chat):
        refused = await commands.confirm_forget(chat, args)
        assert "nothing was erased" in refused.text

    assert reply.text.strip()
    assert packet is not None
    assert await database_fingerprint(db) == tables
    assert tree_fingerprint(checkpoint_dir) == files


@given(args=texts(max_size=1200))
async def test_remember_keeps_any_note_verbatim_or_says_why_not(
    folding_lane: ConversationLane, db: Database, args: str
) -> None:
    """/remember with any text either keeps it (blanks collapsed) as a note /facts then lists,
    or refuses it with a clear reason (empty, too long); it never fails."""
    lane = folding_lane
    reply = await CommandCenter(lane, db).run(5, "remember", args)
    note = " ".join(args.split())
    notes = {m.text for m in await lane.inspector.facts(5) if m.attribute == "note"}
    if note and len(note) <= MAX_NOTE_CHARS:
        assert note in notes
        assert reply.text.startswith("I'll remember")
    else:
        assert note not in notes
        assert reply.text.startswith(("Usage", "I can't keep that note"))


async def test_sql_fts_and_path_injections_get_clear_answers_and_touch_nothing_else(
    db_path: Path, checkpoint_dir: Path, tmp_path: Path
) -> None:
    """Text that looks like SQL, FTS5 query syntax (quotes, ``*``, NEAR, OR, AND, NOT, ``^``,
    column filters, unbalanced quotes and parentheses) or a path: in /recall it gets a search
    answer, in /history a usage line, in /export and /forget the chat's own conversation, in a
    /forget confirmation a refusal; as an ordinary message it is stored verbatim. The other
    chat, the schema and every file outside the chat's own checkpoint stay as they were."""
    chat, other = 1, 2
    async with Database(db_path) as db:
        lane = ConversationLane(db, CheckpointWriter(checkpoint_dir))
        await lane.hydrate()
        commands = CommandCenter(lane, db)
        await _say(lane, chat, "my name is Ada")
        await _say(lane, other, "my name is Bob, I live in Oslo")
        sid, other_sid = lane.session_id_for_chat(chat), lane.session_id_for_chat(other)
        assert sid is not None
        assert other_sid is not None
        other_file = lane.inspector.checkpoint_path(other_sid).read_bytes()
        schema = await db.fetchall("SELECT type, name, sql FROM sqlite_master ORDER BY name")
        neighbours = set(tmp_path.parent.iterdir())

        for text in INJECTIONS:
            tables = await database_fingerprint(db)
            recall = (await commands.run(chat, "recall", text)).text
            assert recall.startswith(("Nothing in this conversation matches", "Best matches")), text
            assert "Oslo" not in recall
            assert "Usage: /history" in (await commands.run(chat, "history", text)).text
            export = await commands.run(chat, "export", text)
            assert export.document is not None
            assert export.document[0] == f"{sid}.json"
            assert (await commands.run(chat, "forget", text)).confirm_forget == sid
            assert "nothing was erased" in (await commands.confirm_forget(chat, text)).text
            assert await database_fingerprint(db) == tables, text
            result = await _say(lane, chat, text)
            assert result.turn.user_text == text

        assert [tuple(row) for row in await db.fetchall("PRAGMA integrity_check")] == [("ok",)]
        after = await db.fetchall("SELECT type, name, sql FROM sqlite_master ORDER BY name")
        assert [tuple(r) for r in after] == [tuple(r) for r in schema]
        assert lane.inspector.checkpoint_path(other_sid).read_bytes() == other_file
        assert lane.session_id_for_chat(chat) == sid
        assert (await lane.inspector.history(chat, 100))[-1].seq == len(INJECTIONS) + 1
        await lane.shutdown()
    # No file was made or named from the text: only the database and the two checkpoints.
    assert set(tmp_path.parent.iterdir()) == neighbours
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
        "checkpoints/" + name for name in sorted((f"{sid}.json", f"{other_sid}.json"))
    ] + ["memory.db"]


@pytest.mark.parametrize(
    ("args", "shown"), HISTORY_ARGUMENTS, ids=[args[:12] for args, _ in HISTORY_ARGUMENTS]
)
async def test_history_with_any_number_or_non_number_answers_clearly(
    lane: ConversationLane, db: Database, args: str, shown: int | None
) -> None:
    """/history takes a count in the decimal digits of any script (``٣`` is three, leading
    zeros do not matter); zero, a negative, a non-number or a path gets the usage line; a count
    past 50 (10**30, 5,000 digits) gets the last 50 turns and says so."""
    chat = 1
    for n in range(55):
        await lane.on_turn(InboundMessage(chat_id=chat, text=f"message {n}"), EchoEngine())
    text = (await CommandCenter(lane, db).run(chat, "history", args)).text
    if shown is None:
        assert text.startswith("Usage: /history [n] with n from 1 to 50"), text[:80]
    else:
        assert text.startswith(f"The last {min(shown, 50)} turns"), text[:80]
        assert ("(at most 50)" in text) == (shown > 50)


# -- isolation -----------------------------------------------------------------------------------


def _marker(index: int) -> str:
    """A name no other chat's marker contains: "Zq" + three letters + "x" (same length)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "Zq" + letters[index // 26 // 26] + letters[index // 26 % 26] + letters[index % 26] + "x"


async def _private_chat(lane: ConversationLane, chat_id: int, marker: str) -> list[str]:
    engine = RuleBasedConcierge()
    said = [
        f"my name is {marker}",
        f"I'm planning a trip to {marker}ville in May",
        f"remind me to call {marker}",
        "what's my name?",
        "what do you know about me?",
        "what did we talk about?",
        "what is still open?",
    ]
    outputs = []
    for text in said:
        result = await _say(lane, chat_id, text, user_id=chat_id, speaker="Ada", engine=engine)
        outputs.append(result.turn.assistant_text or "")
    return outputs


async def _group_chat(
    lane: ConversationLane, chat_id: int, members: list[int], marker: str
) -> list[str]:
    engine = RuleBasedConcierge()
    said = [
        (0, f"my name is {marker}", False),
        (1, f"I'm planning a trip to {marker}ville in May", False),
        (2, f"I propose we meet at {marker}cafe", False),
        (1, "+1", False),
        (0, f"let's go with {marker}cafe", False),
        (2, "@memory_test_bot what did we decide?", True),
        (0, "@memory_test_bot what's my name?", True),
        (1, "@memory_test_bot what do you know about me?", True),
        (2, "@memory_test_bot what did we talk about?", True),
    ]
    outputs = []
    for member, text, addressed in said:
        result = await _say(
            lane,
            chat_id,
            text,
            chat_type="group",
            chat_title="Trip",
            user_id=members[member],
            speaker=f"Member {member}",
            wants_reply=addressed,
            engine=engine,
        )
        outputs.append(result.turn.assistant_text or "")
    return outputs


async def test_fifty_chats_never_see_each_others_memory(db_path: Path, checkpoint_dir: Path):
    """Thirty private chats and twenty groups, talking at once, each seeded with a marker of its
    own; every user of a private chat is also a member of two groups. No reply, command
    output (/memory, /history, /topics, /loops, /stats, /recall of other chats' markers,
    /export), packet, checkpoint file or database row of one chat holds another's marker."""
    privates = {1000 + i: _marker(i) for i in range(30)}
    users = list(privates)
    groups = {
        -(2000 + j): (_marker(30 + j), [users[j], users[j + 10], users[(j + 20) % 30]])
        for j in range(20)
    }
    markers = {**privates, **{chat: marker for chat, (marker, _) in groups.items()}}
    assert len(set(markers.values())) == 50

    async with Database(db_path, durability="process") as db:
        lane = ConversationLane(db, CheckpointWriter(checkpoint_dir, fsync=False))
        await lane.hydrate()
        commands = CommandCenter(lane, db)
        talks = [_private_chat(lane, chat, marker) for chat, marker in privates.items()]
        talks += [_group_chat(lane, chat, members, m) for chat, (m, members) in groups.items()]
        replies = await asyncio.gather(*talks)
        seen = {chat: list(out) for chat, out in zip(markers, replies, strict=True)}

        order = list(markers)
        for index, chat in enumerate(order):
            neighbours = [markers[order[(index + k) % 50]] for k in (1, 2, 25)]
            for name in ("memory", "topics", "loops", "stats"):
                seen[chat].append((await commands.run(chat, name)).text)
            seen[chat].append((await commands.run(chat, "history", "50")).text)
            seen[chat].append((await commands.run(chat, "recall", markers[chat])).text)
            for marker in neighbours:
                recalled = (await commands.run(chat, "recall", marker)).text
                assert recalled.startswith("Nothing in this conversation matches"), recalled
            export = await commands.run(chat, "export")
            assert export.document is not None
            seen[chat].append(export.document[1].decode())
            question = "what do you know about me? " + " ".join(neighbours)
            packet = await lane.inspector.context(chat, question)
            assert packet is not None
            seen[chat].append(render_packet(packet))
            sid = lane.session_id_for_chat(chat)
            assert sid is not None
            seen[chat].append(lane.inspector.checkpoint_path(sid).read_text())
            rows = await db.fetchall(
                "SELECT user_text, coalesce(assistant_text, '') FROM conversation_turns"
                " WHERE session_id = ?",
                (sid,),
            )
            memories = await db.fetchall("SELECT text FROM memories WHERE chat_id = ?", (chat,))
            seen[chat] += [value for row in [*rows, *memories] for value in tuple(row)]
        await lane.shutdown()

    for chat, outputs in seen.items():
        text = "\n".join(outputs).lower()
        assert markers[chat].lower() in text  # the search can find a marker
        leaked = [m for other, m in markers.items() if other != chat and m.lower() in text]
        assert leaked == [], f"chat {chat} saw {leaked}"


# -- erasure -------------------------------------------------------------------------------------

#: The erased chat's marker and its tail: FTS5 stores each term after the prefix it shares
#: with the term before it, so only the tail is sure to be in the file as a whole word.
_ERASED = "Wombatquasar"
_ERASED_NEEDLES = (b"Wombatquasar", b"wombatquasar", b"quasar")


async def test_forget_leaves_no_byte_of_the_session_anywhere_on_disk(
    db_path: Path, checkpoint_dir: Path, tmp_path: Path
) -> None:
    """After /forget (the journal's entries of the chat, then the session), no byte of what
    the chat said is left in any table or FTS5 shadow table, in the raw bytes of the database
    file or its write-ahead log (the erasure checkpoints and truncates the log itself; with
    ``secure_delete`` freed pages hold zeros, not the text), in the checkpoint directory, or
    in an export; the other chat keeps everything it had."""
    chat, other = 1, 2
    summarizer = ExtractiveSummarizer(every_n=4, keep_raw=2)
    async with Database(db_path) as db:
        lane = ConversationLane(
            db,
            CheckpointWriter(checkpoint_dir),
            state_manager=ConversationStateManager(summarizer),
        )
        await lane.hydrate()
        journal = InboundJournal(db, _BOT_ID, max_attempts=1)
        commands = CommandCenter(lane, db)
        engine = RuleBasedConcierge()
        said = [
            f"my name is {_ERASED}",
            f"I'm planning a trip to {_ERASED}ville in May",
            f"remind me to call {_ERASED}",
            f"we decided to go with {_ERASED} for the trip",
        ] + [f"{_ERASED} detail number {n}" for n in range(10)]
        for n, text in enumerate(said, start=1):
            # The adapter's path: journaled, processed (payload dropped), or given up on.
            entry = JournalEntry(update_id=n, chat_id=chat, payload=f'{{"text": "{text}"}}')
            await journal.record([entry])
            await _say(lane, chat, text, engine=engine)
            if n % 5:
                await journal.mark_done(n)
            else:
                await journal.mark_failed_attempt(n, "handler failed")
        await _say(lane, other, "my name is Bob and I live in Oslo", engine=engine)
        other_export = (await commands.run(other, "export")).document
        sid = lane.session_id_for_chat(chat)
        assert sid is not None
        # The text is everywhere the test looks (else the test could not fail).
        assert files_containing(tmp_path, *_ERASED_NEEDLES)
        tables = await every_table_text(db)
        for table in ("conversation_turns", "conversation_summaries", "memories"):
            assert _ERASED.lower() in tables[table], table

        await journal.forget_chat(chat)
        assert await lane.forget_session(sid) is True

        left = await every_table_text(db)
        assert [name for name, text in left.items() if "quasar" in text] == []
        assert files_containing(tmp_path, *_ERASED_NEEDLES) == []
        assert (await commands.run(chat, "export")).text == "Nothing to export yet."
        assert other_export is not None
        assert b"quasar" not in other_export[1]
        assert "Oslo" in (await commands.run(other, "recall", "Oslo")).text
        await lane.shutdown()
    assert files_containing(tmp_path, *_ERASED_NEEDLES) == []


async def test_erasing_one_detail_leaves_no_byte_of_it_on_disk(
    db_path: Path, checkpoint_dir: Path, tmp_path: Path
) -> None:
    """ "forget my locker code", then "yes": the messages that said it (one of them folded
    into the summary chain and the source of a memory) and the request leave no byte in any
    table or FTS5 shadow table, in the database file or its write-ahead log, in the
    checkpoint directory; the rest of the conversation stays, and a restart agrees."""
    chat = 1
    summarizer = ExtractiveSummarizer(every_n=4, keep_raw=2)
    engine = RuleBasedConcierge()
    said = [
        f"my locker code is {_ERASED}",
        f"I'm allergic to peanuts. The gym locker code is {_ERASED}ville",
        "I love jazz",
        *[f"the weather report number {n} says rain again" for n in range(9)],
    ]
    async with Database(db_path) as db:
        lane = ConversationLane(
            db, CheckpointWriter(checkpoint_dir), state_manager=ConversationStateManager(summarizer)
        )
        await lane.hydrate()
        journal = InboundJournal(db, _BOT_ID, max_attempts=1)
        for n, text in enumerate([*said, "forget my locker code", "yes"], start=1):
            if text == "forget my locker code":
                # The text is everywhere the test looks (else the test could not fail).
                assert files_containing(tmp_path, *_ERASED_NEEDLES)
                tables = await every_table_text(db)
                for table in ("conversation_turns", "conversation_summaries"):
                    assert _ERASED.lower() in tables[table], table
                assert "peanuts" in tables["memories"]
            # The adapter's path: journaled, processed (its payload dropped).
            await journal.record([JournalEntry(update_id=n, chat_id=chat, payload=text)])
            await _say(lane, chat, text, engine=engine)
            await journal.mark_done(n)
        tables = await every_table_text(db)
        assert "peanuts" not in tables["memories"]  # the memory only that message stated
        assert "jazz" in tables["memories"]
        assert "weather report number 8" in tables["conversation_turns"]
        assert [name for name, text in tables.items() if "quasar" in text] == []
        await lane.shutdown()
    assert files_containing(tmp_path, *_ERASED_NEEDLES) == []
    async with Database(db_path) as db:
        lane = ConversationLane(db, CheckpointWriter(checkpoint_dir))
        await lane.hydrate()
        reply = await _say(lane, chat, "what's my locker code?", engine=engine)
        assert "quasar" not in (reply.turn.assistant_text or "").lower()
        await lane.shutdown()
    assert files_containing(tmp_path, *_ERASED_NEEDLES) == []


async def test_a_crash_leftover_of_a_forgotten_session_is_gone_at_the_next_start(
    db_path: Path, checkpoint_dir: Path
) -> None:
    """A checkpoint temp file of the session (a write a crash cut short) and a checkpoint a
    crash left behind the erasure are both deleted when the lane starts again."""
    async with Database(db_path) as db:
        lane = ConversationLane(db, CheckpointWriter(checkpoint_dir))
        await lane.hydrate()
        await _say(lane, 1, f"my name is {_ERASED}")
        sid = lane.session_id_for_chat(1)
        assert sid is not None
        data = lane.inspector.checkpoint_path(sid).read_bytes()
        await lane.forget_session(sid)
        await lane.shutdown()
    # What a crash between the database commit and the file deletion would leave.
    (checkpoint_dir / f"{sid}.json").write_bytes(data)
    (checkpoint_dir / f".tmp-{sid}.x1y2").write_bytes(data[:100])

    again = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    report = await again.hydrate()
    await again.shutdown()
    assert report.orphans_removed == [sid]
    assert files_containing(checkpoint_dir, *_ERASED_NEEDLES) == []
