"""The turn search on PostgreSQL (agent/memory/storage/postgres_turn_search.py) against SQLite's:
FTS5's tokens (agent.db.search.index_tokens), the index row of a turn, a 200-turn conversation
whose searches and word counts agree on both backends, and the same with concurrent writers
(tests marked ``postgres``; the tokens and rows need no server). The contract itself is the
conformance suite's (``tests/test_store_conformance.py``).
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.db import Database, Snapshot, Transaction, load_schema_text
from agent.db.search import FTS5_TOKENIZER, index_tokens
from agent.memory.conversation_store import ConversationStore, SqliteConversationStore
from agent.memory.schemas import ConversationTurn
from agent.memory.storage.postgres_turn_search import turn_index_row

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)


def test_the_tokens_are_those_of_the_sqlite_turn_index():
    """index_tokens runs the tokenizer the SQLite turn index declares: Porter stems of case-
    and diacritic-folded words, ``snake_case`` whole; ``None`` and ``""`` have none; each
    thread has its own tokenizer."""
    declared = re.findall(
        r"conversation_turns_fts USING fts5 \(.*?tokenize = (.*?)\n", load_schema_text(), re.S
    )
    assert declared[-1] == f'"{FTS5_TOKENIZER}"'
    assert index_tokens(["Running to the CAFÉ", None, "", "snake_case naïve"]) == [
        ["run", "to", "the", "cafe"], [], [], ["snake_cas", "naiv"],
    ]  # fmt: skip
    elsewhere: list[list[list[str]]] = []
    worker = threading.Thread(target=lambda: elsewhere.append(index_tokens(["Ponies"])))
    worker.start()
    worker.join()
    assert elsewhere == [[["poni"]]]


def test_a_turn_row_weighs_the_speaker_apart_and_leaves_out_what_0013_leaves_out():
    """The index row: each word with its occurrences (A: text and reply, B: speaker), the
    length with the session id's tokens; an erasure request indexes nothing, a help reply
    only the user's words; occurrences stop at PostgreSQL's 256 and an overlong word is
    left out (it counts in the length)."""
    assert turn_index_row("ses_1", "Ada Ada", "ada said hi", "hi", None) == (
        "'ada':1A,2B,3B 'said':1A 'hi':1A,2A", 7,
    )  # fmt: skip
    assert turn_index_row("ses_1", None, "forget my opera", "done", "forget_memory") == ("", 1)
    assert turn_index_row("ses_1", None, "what now", "a hotel", "help") == (
        "'what':1A 'now':1A", 3,
    )  # fmt: skip
    words, length = turn_index_row("ses_1", None, "ha " * 300 + "x" * 3000, None, None)
    assert words == "'ha':" + ",".join(f"{n}A" for n in range(1, 257))
    assert length == 302


# -- a realistic conversation on both backends -------------------------------------------------

TOPICS = {
    "travel": "train Lisbon ticket platform delayed hotel booking luggage passport airport",
    "food": "lasagna recipe oven tomatoes basil dinner baking bread flour kitchen",
    "music": "guitar lessons chords concert tickets piano rehearsal band singer",
    "work": "deadline report meeting manager spreadsheet budget quarterly review",
    "family": "sister birthday nephew grandmother visit cake present garden",
    "health": "running knee physiotherapy doctor appointment stretching marathon",
}
FILLER = "well so I think that it was really quite nice and then we also maybe".split()
PEOPLE = ["Ada", "Ben", "Chloé", None]


def conversation(session_id: str, turns: int, seed: int) -> list[ConversationTurn]:
    """A group chat drifting between topics: each turn a few topic words among filler."""
    rng = random.Random(seed)
    topics = list(TOPICS)
    topic = rng.choice(topics)
    made = []
    for seq in range(1, turns + 1):
        if rng.random() < 0.15:
            topic = rng.choice(topics)
        words = rng.sample(TOPICS[topic].split(), 3) + rng.sample(FILLER, rng.randint(3, 9))
        rng.shuffle(words)
        made.append(
            ConversationTurn(
                turn_id=f"trn_{session_id}_{seq}",
                session_id=session_id,
                seq=seq,
                user_text=" ".join(words).capitalize(),
                assistant_text=rng.choice([None, f"Noted about the {rng.choice(words)}."]),
                speaker=rng.choice(PEOPLE),
                created_at=T0 + timedelta(minutes=seq),
            )
        )
    return made


QUERIES = [
    "when is the train to Lisbon",
    "what was the lasagna recipe",
    "guitar lessons with the band",
    "the quarterly budget review",
    "Ada's sister birthday",
    "how is the knee after running",
    "Chloé and the piano concert",
    "passport at the airport",
    "bread flour",
    "doctor appointment",
]


async def fill(db: Any, store: ConversationStore) -> None:
    async def work(tx: Transaction) -> None:
        for sid, chat_id, turns, seed in (("ses_main", 1, 200, 18), ("ses_other", 2, 60, 7)):
            await store.create_session(
                tx, session_id=sid, chat_id=chat_id, chat_type="group", user_id=None, title=None,
                now=T0,
            )  # fmt: skip
            for made in conversation(sid, turns, seed):
                assert await store.append_turn(tx, made)

    await db.write(work)


def searches(store: ConversationStore, **kw: Any) -> Callable[[Snapshot], Any]:
    def read(snap: Snapshot) -> Any:
        found = store.search_turn_texts(snap, "ses_main", QUERIES, 10, **kw)
        words = sorted({word for text in QUERIES for word in text.lower().split()})
        return found, store.word_counts(snap, words, cap=1000).counts

    return read


@pytest.mark.postgres
@pytest.mark.parametrize("ranges", [{}, {"recent": 50, "old_word_turns": 20}])
async def test_a_long_conversation_is_searched_alike_on_both_backends(
    tmp_path: Path, postgres_url: str, ranges: dict[str, int]
):
    """200 turns of a group chat (and another chat's 60): every query's best three turns are
    the same on PostgreSQL as on SQLite, in the same order with the same scores, and every
    word is counted in as many turns; with the recent/older split too."""
    from agent.db.postgres import PostgresDatabase
    from agent.memory.storage.postgres_conversation_store import PostgresConversationStore

    sqlite_store, postgres_store = SqliteConversationStore(), PostgresConversationStore()
    async with Database(tmp_path / "search.db") as lite, PostgresDatabase(postgres_url) as pg:
        await fill(lite, sqlite_store)
        await fill(pg, postgres_store)
        expected, expected_counts = await lite.read(searches(sqlite_store, **ranges))
        found, counts = await pg.read(searches(postgres_store, **ranges))
    assert counts == expected_counts
    assert sum(expected_counts.values()) > 100
    for query, want, got in zip(QUERIES, expected, found, strict=True):
        assert len(want) >= 3, query
        assert {t.seq for t, _ in got[:3]} == {t.seq for t, _ in want[:3]}, query
        assert [t for t, _ in got] == [t for t, _ in want], query
        assert [score for _, score in got] == pytest.approx([score for _, score in want]), query


@pytest.mark.postgres
async def test_concurrent_writers_keep_the_ranking_statistics(tmp_path: Path, postgres_url: str):
    """Eight chats appending at once, one turn per transaction (the totals' shards taken in
    any order), then one erased: the scores are still SQLite's for the same turns."""
    from agent.db.postgres import PostgresDatabase
    from agent.memory.storage.postgres_conversation_store import PostgresConversationStore

    chats = {f"ses_{n}": conversation(f"ses_{n}", 25, seed=n) for n in range(8)}

    async def chat(db: Any, store: ConversationStore, sid: str, number: int) -> None:
        await db.write(
            lambda tx: store.create_session(
                tx, session_id=sid, chat_id=number, chat_type="group", user_id=None, title=None,
                now=T0,
            )
        )  # fmt: skip
        for made in chats[sid]:
            await db.write(lambda tx, made=made: store.append_turn(tx, made))

    async def run(db: Any, store: ConversationStore) -> Any:
        await asyncio.gather(*(chat(db, store, sid, n) for n, sid in enumerate(chats, 1)))
        await db.write(lambda tx: store.delete_session(tx, "ses_3"))
        return await db.read(
            lambda snap: store.search_turn_texts(snap, "ses_0", QUERIES, 5, recent=10)
        )

    sqlite_store, postgres_store = SqliteConversationStore(), PostgresConversationStore()
    async with Database(tmp_path / "search.db") as lite, PostgresDatabase(postgres_url) as pg:
        expected = await run(lite, sqlite_store)
        found = await run(pg, postgres_store)
    assert any(expected)
    assert [[(t.seq, score) for t, score in hits] for hits in found] == [
        [(t.seq, pytest.approx(score)) for t, score in hits] for hits in expected
    ]


@pytest.mark.postgres
async def test_a_word_of_most_turns_takes_its_share_from_the_statistics(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
):
    """Past COUNTED_ROWS a token's turns are not counted one by one (0.36 s for a word of
    most messages over 100,000 sessions) but taken from what ANALYZE keeps of the column:
    where it sampled every row the share is exact and so are the scores; before any ANALYZE
    the cap stands in, and the searches still find turns."""
    from agent.db import bm25
    from agent.db.postgres import PostgresDatabase
    from agent.memory.storage.postgres_conversation_store import PostgresConversationStore

    monkeypatch.setattr(bm25, "COUNTED_ROWS", 3)  # most query words are in more of the turns
    sqlite_store, capped = SqliteConversationStore(), PostgresConversationStore()
    async with Database(tmp_path / "search.db") as lite, PostgresDatabase(postgres_url) as pg:
        await fill(lite, sqlite_store)
        await fill(pg, capped)
        unanalyzed, _ = await pg.read(searches(capped))  # no statistics: the cap stands in
        await pg.write(lambda tx: tx.execute("ANALYZE conversation_turn_search"))
        expected, _ = await lite.read(searches(sqlite_store))
        found, _ = await pg.read(searches(capped))
    for query, want, got in zip(QUERIES, expected, found, strict=True):
        assert [t for t, _ in got] == [t for t, _ in want], query
        assert [score for _, score in got] == pytest.approx([score for _, score in want]), query
    assert all(hits for hits in unanalyzed)
    scores = [[score for _, score in hits] for hits in unanalyzed]
    assert scores != [[score for _, score in hits] for hits in expected]  # the cap, not counts
