"""Retrieval (conversation_retriever.py) and the packet it fills, over real SQLite files.

Turns are bulk-inserted through the store in one transaction where a test needs thousands;
everything else goes through the lane. Only the clock and the reply engine are ours to fake.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agent.chat.commands import CommandCenter
from agent.db import Database, load_schema_text, parse_migrations
from agent.db.search import SEARCH_INDEXES
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import (
    CheckpointWriter,
    ConversationContextPacket,
    ConversationLane,
    ConversationTurn,
    InboundMessage,
    Reply,
    RetrievedItem,
    SessionState,
    render_packet,
)
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_retriever import (
    ConversationRetriever,
    RetrievalPolicy,
    RetrievalWeights,
)
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_store import SqliteConversationStore
from agent.memory.conversation_summarizer import ExtractiveSummarizer
from agent.memory.longterm.memory_store import SqliteMemoryStore
from agent.memory.packet_lines import split_day
from agent.memory.rules.dialogue_acts import HELP_OR_ERROR_INTENTS
from agent.memory.schemas import Fact, MemoryCandidate, Topic
from agent.memory.storage.turn_search import turn_search_sql
from agent.memory.writer import write_if_worthy
from agent.utils import ids
from tests.clock import T0, Clock
from tests.hostile import every_table_text

CHAT = 4242
FILLER_WORDS = (
    "weather garden coffee train meeting budget lunch report music movie football recipe"
    " holiday laptop printer email dentist bicycle groceries weekend car"
).split()


class RecordingEngine:
    """Answers with a fixed text and keeps the packets it was given."""

    def __init__(self) -> None:
        self.packets: list[ConversationContextPacket] = []

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        self.packets.append(packet)
        return Reply(text="noted")


def filler(n: int) -> str:
    """A deterministic, varied message with no rare word in it."""
    words = [FILLER_WORDS[(n * k + k) % len(FILLER_WORDS)] for k in (1, 3, 7)]
    return f"Message {n}: we talked about the {words[0]}, the {words[1]} and the {words[2]}."


async def retrieve(
    db: Database,
    retriever: ConversationRetriever | None = None,
    *,
    chat_id: int = CHAT,
    now: datetime = T0,
    **query: Any,
) -> list[RetrievedItem]:
    """What ``retriever`` finds, read as the lane reads it: in the searcher's thread."""
    search = (retriever or ConversationRetriever()).retrieve
    return await db.read(partial(search, chat_id=chat_id, now=now, **query))


async def bulk_session(
    db: Database,
    texts: list[str],
    *,
    chat_id: int = CHAT,
    chat_type: str = "private",
    speakers: tuple[str, ...] = ("Ada",),
) -> str:
    """Create a session holding ``texts`` as turns 1..n (one transaction); return its id."""
    store = SqliteConversationStore()
    sid = ids.session_id()

    async def work(tx: Any) -> None:
        await store.create_session(
            tx,
            session_id=sid,
            chat_id=chat_id,
            chat_type=chat_type,
            user_id=None,
            title=None,
            now=T0,
        )
        for seq, text in enumerate(texts, start=1):
            await store.append_turn(
                tx,
                ConversationTurn(
                    turn_id=ids.turn_id(),
                    session_id=sid,
                    seq=seq,
                    user_text=text,
                    created_at=T0 + timedelta(minutes=seq),
                    status="recorded",
                    speaker=speakers[seq % len(speakers)],
                ),
            )
        state = SessionState(session_id=sid, turn_count=len(texts))
        await store.save_state(tx, state, last_seq=len(texts), now=T0)

    await db.write(work)
    return sid


@asynccontextmanager
async def running_lane(
    db_path: Path, checkpoint_dir: Path, **options: Any
) -> AsyncIterator[tuple[ConversationLane, Database]]:
    """A lane started as the process starts it (open, hydrate), shut down afterwards, with
    its database (for the tests that read raw rows)."""
    db = await Database(db_path).open()
    lane = ConversationLane(db, CheckpointWriter(checkpoint_dir), **options)
    try:
        await lane.hydrate()
        yield lane, db
    finally:
        await lane.shutdown()


async def test_retrieval_finds_a_fact_stated_5000_turns_ago(db_path, checkpoint_dir):
    """A fact stated 5,000 turns back is retrieved into the packet of a question about it."""
    fact = "I parked the car on level 7 of the Zanzibar garage."
    texts = [fact, *(filler(n) for n in range(2, 5002))]
    async with Database(db_path) as db:
        await bulk_session(db, texts)
    clock = Clock(T0 + timedelta(days=5))
    async with running_lane(db_path, checkpoint_dir, clock=clock) as (lane, _):
        packet = await lane.inspector.context(CHAT, "Where did I park the car?")

    assert packet is not None
    assert packet.turn_count == 5001
    assert packet.retrieved[0].ref == "turn:1"
    assert packet.retrieved[0].text.endswith(fact)
    assert fact in render_packet(packet)
    # Never the whole transcript: a bounded handful of turns out of 5,001.
    assert len(packet.retrieved) + len(packet.recent_turns) < 200
    assert packet.token_estimate <= lane.inspector.token_budget


async def test_on_turn_retrieves_with_the_new_message_before_the_engine_runs(lane):
    """The packet the engine gets carries the older turn that matches the new message."""
    engine = RecordingEngine()
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="My kayak is the yellow one."), engine)
    for n in range(2, 12):
        await lane.on_turn(InboundMessage(chat_id=CHAT, text=filler(n)), engine)
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="Which kayak was mine?"), engine)

    asked = engine.packets[-1]
    assert [item.ref for item in asked.retrieved][:1] == ["turn:1"]
    # The last raw turns are in the packet verbatim and never retrieved a second time.
    raw = {f"turn:{turn.seq}" for turn in asked.recent_turns}
    assert raw
    assert raw.isdisjoint(item.ref for item in asked.retrieved)


@pytest.mark.parametrize(
    "words",
    [
        '"',
        '"unbalanced quote',
        "*",
        "kayak*",
        "NEAR(kayak yellow)",
        "kayak OR",
        "OR AND NOT",
        "user_text: kayak",
        "{speaker}: Ada",
        "^kayak",
        "(",
        "-kayak",
        "kayak NEAR/2 yellow",
        "'; DROP TABLE conversation_turns; --",
    ],
)
async def test_fts_syntax_in_the_query_is_harmless(lane, db, words):
    """FTS5 syntax in a query (quotes, *, NEAR, OR, column filters) is harmless plain words."""
    engine = RecordingEngine()
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="My kayak is the yellow one."), engine)
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="my name is Ada"), engine)

    items = await lane.inspector.recall(CHAT, words)
    packet = await lane.inspector.context(CHAT, words)

    assert packet is not None
    if "kayak" in words:
        assert "turn:1" in [item.ref for item in items]
    rows = await db.fetchall("SELECT count(*) FROM conversation_turns")
    assert rows[0][0] == 2


async def test_scores_order_by_relevance_recency_and_importance_as_configured(db):
    """Each weight alone orders candidates by its signal: relevance, recency, importance."""
    texts = [
        "The canoe trip was fun.",  # 1: states a fact (below)
        "A canoe, a canoe, the canoe again: canoe canoe.",  # 2: the most relevant
        "The canoe is in the shed.",  # 3: the newest
        filler(4),
        filler(5),
    ]
    sid = await bulk_session(db, texts)
    state = SessionState(
        session_id=sid, turn_count=5, facts=(Fact(key="likes:canoe", value="canoe", turn=1),)
    )

    async def order(**weights: float) -> list[str]:
        every = {"message": 0.0, "topics": 0.0, "recency": 0.0, "importance": 0.0}
        policy = RetrievalPolicy(
            weights=RetrievalWeights(**{**every, "open_loop": 0.0, **weights}),
            neighbour_span=0,
        )
        items = await retrieve(
            db, ConversationRetriever(policy=policy), session_id=sid, text="canoe", state=state
        )
        return [item.ref for item in items]

    assert (await order(message=1.0))[0] == "turn:2"
    assert await order(recency=1.0) == ["turn:3", "turn:2", "turn:1"]
    assert (await order(importance=1.0))[0] == "turn:1"
    # Scores are in [0, 1] and best first.
    items = await retrieve(db, session_id=sid, text="canoe", state=state)
    scores = [item.score for item in items]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= score <= 1.0 for score in scores)


async def test_a_message_with_nothing_to_search_for_retrieves_by_the_active_topics(db):
    """The session's turns are searched for the message's own words; a message with none
    ("and then?") is searched for the conversation's active topics instead, so the engine
    still gets the older talk the conversation is about. So is one whose words were never
    said."""
    texts = [
        "We should repaint the lighthouse before winter.",  # 1: the topic
        "The ferry timetable changed on Monday.",  # 2: what the message asks about
        *(filler(n) for n in range(3, 9)),
    ]
    sid = await bulk_session(db, texts)
    state = SessionState(
        session_id=sid, turn_count=len(texts), active_topics=(Topic(name="lighthouse"),)
    )
    retriever = ConversationRetriever()

    async def refs(text: str) -> list[str]:
        items = await retrieve(db, retriever, session_id=sid, text=text, state=state)
        return [item.ref for item in items]

    assert (await refs("and then?"))[:1] == ["turn:1"]
    assert (await refs("what about the zeppelin?"))[:1] == ["turn:1"]  # said in no turn
    assert (await refs("what about the ferry?"))[:1] == ["turn:2"]


async def test_a_word_asked_about_before_it_was_said_is_found(lane):
    """Retrieval keeps word counts between packets and does not count a word in no turn
    again after every turn: a word first said after a packet asked about it is still found
    once it is older than the raw turns."""
    engine = RecordingEngine()
    for text in (
        "Have you ever seen a zeppelin?",
        "Yes! A zeppelin flew over the harbour this morning.",
        *(filler(n) for n in range(5)),
    ):
        await lane.on_turn(InboundMessage(chat_id=CHAT, text=text), engine)
    packet = await lane.inspector.context(CHAT, "Where did the zeppelin fly?")
    assert packet is not None
    assert any("zeppelin flew over the harbour" in item.text for item in packet.retrieved)


async def test_summaries_are_candidates_where_the_turns_found_do_not_fill_the_set(db):
    """A summary delta repeats turns in short: it is retrieved when fewer turns match than the
    candidates asked for, and left out when the turns fill them."""
    texts = [f"The lighthouse needs paint, part {n}." for n in range(1, 9)]
    texts += ["We booked the ferry to the island.", *(filler(n) for n in range(6))]
    sid = await bulk_session(db, texts)

    async def add_summary(tx: Any) -> None:
        await tx.execute(
            "INSERT INTO conversation_summaries (session_id, version, from_seq, to_seq,"
            " summarizer, status, text, delta, created_at) VALUES (?, 1, 1, 10, 'extractive',"
            " 'completed', '', 'The lighthouse needs paint; the ferry to the island is booked.',"
            " ?)",
            (sid, T0.isoformat()),
        )

    await db.write(add_summary)
    retriever = ConversationRetriever(policy=RetrievalPolicy(candidates=5, max_candidates=5))
    state = SessionState(session_id=sid, turn_count=len(texts))

    async def kinds(text: str) -> set[str]:
        items = await retrieve(db, retriever, session_id=sid, text=text, state=state)
        return {item.kind for item in items}

    assert await kinds("when is the ferry to the island?") == {"turn", "summary"}  # 1 turn
    assert await kinds("what about the lighthouse paint?") == {"turn"}  # 8 turns


async def test_a_long_message_is_searched_by_its_rarest_words(db):
    """Ranking reads the documents of every word it ranks by, so a long message is searched by
    its 8 rarest words that were said: the rare word finds its turn, and the most common words
    stay out of the search."""
    # The first filler word is in every turn, the next in fewer, ..., the twelfth in two.
    texts = [f"{' '.join(FILLER_WORDS[: 1 + n % 12])} today." for n in range(30)]
    texts += ["The zeppelin landed on the hill.", *["Nothing new."] * 4]
    sid = await bulk_session(db, texts)
    state = SessionState(session_id=sid, turn_count=len(texts))
    searches: list[str] = []
    await db.read(lambda conn: conn.connection.set_trace_callback(searches.append))
    text = " ".join(FILLER_WORDS[:12]) + " zeppelin"
    items = await retrieve(db, session_id=sid, text=text, state=state)
    await db.read(lambda conn: conn.connection.set_trace_callback(None))

    assert "turn:31" in [item.ref for item in items]
    (search,) = [sql for sql in searches if "SELECT hit.query" in sql]
    ranked = {word for word in [*FILLER_WORDS[:12], "zeppelin"] if f'"{word}"' in search}
    assert ranked == {"zeppelin", *FILLER_WORDS[5:12]}


async def test_the_reply_after_a_hit_and_the_named_speaker_rank_high(db):
    """The reply after a hit inherits its relevance; the named speaker's turns count more."""
    texts = [
        filler(1),
        "Bob: What did you plant in the garden?",  # 2: the words of the question
        "Tomatoes and basil, mostly.",  # 3: the answer, no shared word
        filler(4),
        filler(5),
        filler(6),
    ]
    sid = await bulk_session(db, texts, chat_type="group", speakers=("Bob", "Cleo"))
    items = await retrieve(db, session_id=sid, text="What did Cleo plant?")
    refs = [item.ref for item in items]
    assert refs[:2] == ["turn:2", "turn:3"] or refs[:2] == ["turn:3", "turn:2"]


async def test_packet_stays_within_budget_with_retrieved_items(db_path, checkpoint_dir):
    """Under a small budget the packet holds last and retrieved turns, never over budget."""
    texts = [f"{filler(n)} The lighthouse had {n} steps." for n in range(1, 400)]
    async with Database(db_path) as db:
        await bulk_session(db, texts)
    builder = ConversationContextBuilder(token_budget=300, recent_turns=3)
    async with running_lane(db_path, checkpoint_dir, builder=builder) as (lane, _):
        packet = await lane.inspector.context(CHAT, "How many steps did the lighthouse have?")

    assert packet is not None
    assert packet.retrieved
    assert packet.token_estimate <= 300
    assert [turn.seq for turn in packet.recent_turns] == [397, 398, 399]
    assert all(item.kind == "turn" and item.seq < 397 for item in packet.retrieved)
    rendered = render_packet(packet)
    assert "Relevant earlier in this conversation:" in rendered
    # Each retrieved turn is there, under the day it was said (its own line, once).
    for item in packet.retrieved:
        day, line = split_day(item.text)
        assert day is not None
        assert f"\n{day}\n" in rendered
        assert line in rendered


async def test_recall_uses_the_retriever(lane, db):
    """/recall lists what the retriever returns, with its scores, memories included."""
    engine = RecordingEngine()
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="my name is Ada"), engine)
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="The kayak is yellow."), engine)
    for n in range(3, 8):
        await lane.on_turn(InboundMessage(chat_id=CHAT, text=filler(n)), engine)

    reply = await CommandCenter(lane, db).run(CHAT, "recall", "yellow kayak name")
    items = await lane.inspector.recall(CHAT, "yellow kayak name")
    direct = await retrieve(
        db,
        ConversationRetriever(),  # the lane's: default store, memories and weights
        session_id=lane.session_id_for_chat(CHAT),
        text="yellow kayak name",
        now=lane.now(),
        state=SessionState(session_id=lane.session_id_for_chat(CHAT) or "", turn_count=7),
    )

    assert [item.ref for item in items] == [item.ref for item in direct][: len(items)]
    assert reply.text.startswith("Best matches (score 0-1):")
    assert "The kayak is yellow." in reply.text
    assert "remembered: name: Ada" in reply.text
    assert f"[{items[0].score:.2f}]" in reply.text


async def test_memories_decay_and_get_archived_by_consolidation(db_path, checkpoint_dir):
    """Consolidation decays memories and archives weak ones, which retrieval then skips."""
    clock = Clock()
    async with running_lane(db_path, checkpoint_dir, clock=clock) as (lane, db):
        engine = RecordingEngine()
        await lane.on_turn(InboundMessage(chat_id=CHAT, text="my name is Ada"), engine)
        await lane.on_turn(InboundMessage(chat_id=CHAT, text="I like jazz"), engine)
        await lane.on_turn(InboundMessage(chat_id=CHAT, text="I like jazz"), engine)
        assert {item.ref for item in await lane.inspector.recall(CHAT, "jazz")} & {
            m.memory_id for m in (await lane.inspector.packet(CHAT) or _empty()).memories
        }
        fresh = await lane.consolidate_memories()
        assert fresh.archived == []

        clock.now = T0 + timedelta(days=60)
        report = await lane.consolidate_memories()
        rows = {
            row["key"]: dict(row)
            for row in await db.fetchall(
                "SELECT key, status, decay, access_count FROM memories"
            )
        }
        # Two half-lives: 0.25, plus 0.1 per access (stated, or retrieved into a packet).
        # name: 1.0 * (0.25 + 0.1 * n) >= 0.35 stays; likes:jazz, stated twice and retrieved
        # into the second statement's packet: 0.4 * (0.25 + 0.3) goes.
        name, jazz = rows["name"], rows["likes:jazz"]
        assert name["status"] == "active"
        assert name["decay"] == pytest.approx(0.25 + 0.1 * name["access_count"])
        assert jazz["access_count"] == 3
        assert jazz["decay"] == pytest.approx(0.55)
        assert jazz["status"] == "archived"
        assert report.archived
        assert report.decayed == 2
        recalled = await lane.inspector.recall(CHAT, "jazz")
        assert [item.ref for item in recalled if item.kind == "memory"] == []
        packet = await lane.inspector.packet(CHAT) or _empty()
        assert "jazz" not in [m.key for m in packet.memories]


def _empty() -> ConversationContextPacket:
    return ConversationContextPacket(
        conversation_id="none", session_status="active", context_compiled_at=T0
    )


async def test_retrieving_a_memory_counts_as_an_access(db_path, checkpoint_dir):
    """A memory retrieved into the packet of a turn gets one more access and a fresh decay."""
    clock = Clock()
    async with running_lane(db_path, checkpoint_dir, clock=clock) as (lane, db):
        engine = RecordingEngine()
        await lane.on_turn(InboundMessage(chat_id=CHAT, text="my name is Ada"), engine)
        clock.now = T0 + timedelta(days=10)
        await lane.on_turn(InboundMessage(chat_id=CHAT, text="what is my name?"), engine)
        row = (await db.fetchall("SELECT access_count, last_accessed_at FROM memories"))[0]

    assert [item.kind for item in engine.packets[-1].retrieved].count("memory") == 1
    assert row["access_count"] == 2
    assert datetime.fromisoformat(row["last_accessed_at"]) == clock.now


async def test_forget_leaves_no_trace_of_the_session(db_path, checkpoint_dir):
    """/forget leaves no trace in turns, FTS tables (shadows too), summaries or memories."""
    word = "xylophonequartz"
    summarizer = ExtractiveSummarizer(every_n=5, keep_raw=3)
    async with running_lane(
        db_path, checkpoint_dir, state_manager=ConversationStateManager(summarizer)
    ) as (lane, db):
        engine = RecordingEngine()
        other = CHAT + 1
        await lane.on_turn(InboundMessage(chat_id=other, text="Unrelated words stay."), engine)
        await lane.on_turn(InboundMessage(chat_id=CHAT, text=f"my name is {word}"), engine)
        await lane.on_turn(
            InboundMessage(chat_id=CHAT, text=f"We decided to go with {word} for the trip."),
            engine,
        )
        for n in range(3, 13):
            await lane.on_turn(InboundMessage(chat_id=CHAT, text=filler(n)), engine)
        sid = lane.session_id_for_chat(CHAT)
        assert sid is not None
        before = await every_table_text(db)
        vocab = await _fts_terms(db, word)

        await lane.forget_session(sid)
        after = await every_table_text(db)
        vocab_after = await _fts_terms(db, word)
        others = await lane.inspector.recall(other, "unrelated words")

    # The text was everywhere the test looks (otherwise the test could not fail)...
    for table in ("conversation_turns", "conversation_summaries", "memories"):
        assert word in before[table], table
    assert vocab == {"conversation_turns_fts", "conversation_summaries_fts", "memories_fts"}
    # ...and is nowhere now, in no table and no full-text index.
    assert [name for name, text in after.items() if word in text] == []
    assert vocab_after == set()
    assert all(name in after for name in (f"{t}_data" for t in SEARCH_INDEXES))
    assert [item.ref for item in others] == ["turn:1"]  # other chats keep theirs


async def _fts_terms(db: Database, word: str) -> set[str]:
    """The full-text indexes whose vocabulary holds ``word`` (read through fts5vocab)."""
    found = set()
    for table in SEARCH_INDEXES:
        rows = await db.fetchall(
            f"SELECT count(*) FROM {table}"  # noqa: S608 (our table names)
            f" WHERE {table} MATCH ?",
            (f'"{word}"',),
        )
        if rows[0][0]:
            found.add(table)
    return found


async def test_memory_index_follows_updates_and_stays_per_chat(db):
    """The memories index follows a changed text, and one chat never sees another's."""
    store = SqliteMemoryStore()
    sid_a = await bulk_session(db, ["hello"], chat_id=1)
    sid_b = await bulk_session(db, ["hello"], chat_id=-1)

    async def promote(chat_id: int, sid: str, text: str) -> None:
        candidate = MemoryCandidate(
            kind="fact",
            attribute="location",
            key="location",
            text=text,
            confidence=0.9,
            importance=0.7,
        )
        await db.write(
            lambda tx: write_if_worthy(
                tx, store, chat_id, [candidate], session_id=sid, seq=1, now=T0
            )
        )

    await promote(1, sid_a, "Lisbon")
    await promote(-1, sid_b, "Lisbon")
    await promote(1, sid_a, "Porto")

    porto, lisbon = await db.read(
        partial(store.search, chat_id=1, queries=["Porto", "Lisbon"], limit=5)
    )
    assert [m.text for m, _ in porto] == ["Porto"]
    assert lisbon == []
    (other_chat,) = await db.read(partial(store.search, chat_id=-1, queries=["Lisbon"], limit=5))
    assert [m.chat_id for m, _ in other_chat] == [-1]


async def test_turn_search_ranks_inside_fts_then_reads_turns_by_key(db):
    """The turn search ranks inside FTS5 (row id range + LIMIT) and reads turns by key, no scan."""
    sid = await bulk_session(db, ["kayak"])
    rows = await db.fetchall(
        "EXPLAIN QUERY PLAN " + turn_search_sql([0, 0]),
        (
            *('{speaker user_text assistant_text} : ("kayak")', 1 << 32, (2 << 32) - 1, 40) * 2,
            sid,
            1 << 32,
            40,
        ),
    )
    plan = " | ".join(row["detail"] for row in rows)
    assert "VIRTUAL TABLE INDEX" in plan
    assert "SCAN conversation_turns " not in plan
    assert "SEARCH conversation_turns USING INDEX" in plan


async def test_every_write_merges_the_search_indexes_and_finds_the_same(lane, db):
    """Every statement that writes an indexed row adds a segment to that full-text index, and a
    search looks up each word in every segment. FTS5 alone merged only after 64 pages of writes;
    each write now merges a few pages too (migration 0010): after 120 turns, each its own commit,
    the turn index keeps about one segment per level, /recall finds every turn it should, and
    FTS5's integrity check passes."""
    engine = RecordingEngine()
    for n in range(120):
        text = filler(n) + (" My kayak is yellow." if n % 17 == 0 else "")
        await lane.on_turn(InboundMessage(chat_id=CHAT, text=text), engine)

    async def segments(table: str) -> int:
        sql = f"SELECT count(DISTINCT segid) FROM {table}_idx"  # noqa: S608 (constants)
        row = await db.fetchone(sql)
        return row[0] if row else 0

    # Without the merges (FTS5 alone): 15 turn segments and 12 summary segments here.
    assert await segments("conversation_turns_fts") <= 5
    assert await segments("conversation_summaries_fts") <= 5
    found = await lane.inspector.recall(CHAT, "yellow kayak", limit=10)
    assert {f"turn:{n + 1}" for n in range(0, 120, 17)} <= {item.ref for item in found}
    for table in SEARCH_INDEXES:
        await db.write(
            lambda tx, table=table: tx.execute(
                f"INSERT INTO {table} ({table}) VALUES ('integrity-check')"  # noqa: S608
            )
        )


async def test_migration_0006_indexes_what_the_database_already_holds(db_path):
    """Migrating a 0005 database to 0006 indexes its existing turns, summaries and memories."""
    migrations = parse_migrations(load_schema_text())
    assert [m.label for m in migrations][5] == "0006_retrieval"
    store = SqliteConversationStore()
    stamp = T0.isoformat()

    async def seed(tx: Any) -> None:
        await store.create_session(
            tx, session_id="ses_old", chat_id=CHAT, chat_type="private", user_id=None,
            title=None, now=T0,
        )  # fmt: skip
        # A turn as a 0005 database holds it (the store writes the columns of today's schema).
        await tx.execute(
            "INSERT INTO conversation_turns (turn_id, session_id, seq, user_text, created_at,"
            " status) VALUES ('trn_old', 'ses_old', 1, 'The Zanzibar trip.', ?, 'recorded')",
            (stamp,),
        )
        await tx.execute(
            "INSERT INTO conversation_summaries (session_id, version, from_seq, to_seq,"
            " summarizer, status, text, delta, created_at) VALUES ('ses_old', 1, 1, 1,"
            " 'extractive', 'completed', 'x', 'We planned the Zanzibar trip.', ?)",
            (stamp,),
        )
        await tx.execute(
            "INSERT INTO memories (memory_id, chat_id, kind, key, text, confidence, importance,"
            " status, created_at, updated_at, last_accessed_at) VALUES ('mem_old', ?, 'goal',"
            " 'plan', 'a trip to Zanzibar', 0.9, 0.8, 'active', ?, ?, ?)",
            (CHAT, stamp, stamp, stamp),
        )

    async with Database(db_path, migrations=migrations[:5]) as db:
        await db.write(seed)
    async with Database(db_path) as db:
        items = await retrieve(db, session_id="ses_old", text="zanzibar")
        search = partial(SqliteMemoryStore().search, chat_id=CHAT, queries=["zanzibar"], limit=5)
        memory = (await db.read(search))[0][0][0]

    assert sorted(item.ref for item in items) == ["mem_old", "summary:1", "turn:1"]
    assert (memory.decay, memory.archived_at) == (1.0, None)


async def test_memory_command_shows_what_retrieval_adds_for_the_last_message(lane, db):
    """/memory shows the packet for the chat's last message, retrieved items included."""
    engine = RecordingEngine()
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="The kayak is yellow."), engine)
    for n in range(2, 9):
        await lane.on_turn(InboundMessage(chat_id=CHAT, text=filler(n)), engine)
    await lane.on_turn(InboundMessage(chat_id=CHAT, text="Where is the kayak?"), engine)

    reply = await CommandCenter(lane, db).run(CHAT, "memory")

    assert "Relevant earlier in this conversation:" in reply.text
    assert "\nuser: The kayak is yellow.\n" in reply.text  # turn 1, retrieved
    assert "tokens" in reply.text


async def test_help_and_error_replies_are_never_recalled_retrieved_or_summarised(lane, db):
    """A reply that is help or an error text ("I didn't understand", the help list, an
    unreadable reminder time) is not conversation: /recall never finds it, a packet never
    retrieves it and no summary holds it; the user's own words of such a turn stay findable."""
    concierge = RuleBasedConcierge()
    said = [
        "I'm planning a trip to Lisbon in May",
        "help",  # the help text names "book the hotel" and "call mom"
        "purple monkey dishwasher",
        "what can you do?",
        "remind me at 6 to call mom",
        "the zebra crossing blorp",
        *(filler(n) for n in range(7, 16)),
        "remind me to book the hotel",
        "can you tell me about the hotel?",
    ]
    for text in said:
        await lane.on_turn(InboundMessage(chat_id=CHAT, text=text), concierge)
    help_text = "keep your to-do list"
    unknown_text = "I didn't understand"
    mom_text = "I couldn't read the time"

    recall = (await CommandCenter(lane, db).run(CHAT, "recall", "hotel call mom zebra")).text
    assert "zebra crossing blorp" in recall  # the user's words of a turn not understood
    for words in ("hotel", "call mom", "understand", "offline concierge", "zebra", "help"):
        items = await lane.inspector.recall(CHAT, words, 20)
        packet = await lane.inspector.context(CHAT, words)
        assert packet is not None
        for text in [*(i.text for i in items), *(i.text for i in packet.retrieved), recall]:
            for reply in (help_text, unknown_text, mom_text):
                assert reply not in text, (words, text)

    packet = await lane.inspector.context(CHAT, "hotel")
    assert packet is not None
    assert packet.rolling_session_summary  # folded after turn 10
    summaries = [packet.rolling_session_summary, *packet.recent_turn_summaries]
    chain = (await every_table_text(db))["conversation_summaries"]
    for text in [*summaries, chain]:
        for reply in (help_text, unknown_text, mom_text, "offline concierge"):
            assert reply.lower() not in text.lower(), text
    assert "[open question]" not in packet.rolling_session_summary  # "what can you do?" answered


class IntentEngine:
    """Answers every message with a reply naming a rare word, under a fixed intent."""

    def __init__(self, intent: str) -> None:
        self.intent = intent

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply(text="Try the quokka command.", intent=self.intent)


@pytest.mark.parametrize("intent", [*sorted(HELP_OR_ERROR_INTENTS), "llm", None])
async def test_the_turn_index_leaves_out_exactly_the_help_and_error_replies(lane, intent):
    """The turn index (schema.sql) and the retrieval read skip the reply of every intent of
    HELP_OR_ERROR_INTENTS, and only those: a conversational reply is found by its words."""
    await lane.on_turn(
        InboundMessage(chat_id=CHAT, text="tell me about wombats"), IntentEngine(intent)
    )

    found = await lane.inspector.recall(CHAT, "quokka")
    by_user_words = await lane.inspector.recall(CHAT, "wombats")

    assert (found == []) is (intent in HELP_OR_ERROR_INTENTS)
    assert [item.seq for item in by_user_words] == [1]
    assert ("quokka" in by_user_words[0].text) is (intent not in HELP_OR_ERROR_INTENTS)
