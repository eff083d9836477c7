"""BM25 as FTS5 computes it (agent/db/bm25.py), FTS5's tokens in a tsvector, and the statistics
PostgreSQL keeps for it (``search_totals``, migrations 0004 and 0005 of schema_postgres.sql)
against a real server."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from agent.db import Snapshot, Transaction
from agent.db.bm25 import (
    MAX_OCCURRENCES,
    IndexStatistics,
    best,
    bm25,
    capped_count,
    frequencies,
    index_statistics,
    search_rows,
    searchable,
    tsquery,
    tsvector,
    word_tokens,
)
from agent.memory.schemas import MemoryCandidate

T0 = datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC)


def test_idf_is_fts5s_with_its_floor():
    """log((N - n + 0.5) / (n + 0.5)); a word in half the rows or more weighs 1e-6, not less."""
    statistics = IndexStatistics(rows=10, average_length=4.0, hits={"rare": 1, "common": 6})
    assert statistics.idf("rare") == pytest.approx(math.log(9.5 / 1.5))
    assert statistics.idf("common") == 1e-6
    assert statistics.idf("absent") == pytest.approx(math.log(10.5 / 0.5))


def test_bm25_is_the_negated_sum_over_the_query_words():
    """Each word found adds idf * f (k1 + 1) / (f + k1 (1 - b + b D / avgdl)); a word the row
    lacks adds nothing; lower is better."""
    statistics = IndexStatistics(rows=10, average_length=4.0, hits={"red": 2, "kayak": 3})
    counts = {"red": 2.0, "boat": 1.0}
    norm = 1.2 * (1 - 0.75 + 0.75 * 6 / 4.0)
    expected = -statistics.idf("red") * (2 * 2.2) / (2 + norm)
    assert bm25(statistics, ["red", "kayak"], counts, 6) == pytest.approx(expected)
    assert bm25(statistics, ["kayak"], counts, 6) == 0.0
    empty = IndexStatistics(rows=0, average_length=0.0, hits={})
    assert bm25(empty, ["red"], counts, 6) < 0
    # A phrase twice in the query (two words with one stem) counts twice, as in FTS5.
    assert bm25(statistics, ["red", "red"], counts, 6) == pytest.approx(2 * expected)


def test_best_keeps_the_matching_rows_best_first_ties_in_order_up_to_the_limit():
    """Rows without a query word are no candidates; equal scores keep the given (rowid)
    order; ``limit`` cuts after the ranking; a limit below 1 gives nothing."""
    statistics = IndexStatistics(rows=4, average_length=3.0, hits={"red": 3})
    rows = [
        ("a", {"red": 1.0}, 3),
        ("b", {"blue": 1.0}, 3),
        ("c", {"red": 2.0}, 3),
        ("d", {"red": 1.0}, 3),
    ]
    assert [item for item, _ in best(statistics, ["red"], rows, 9)] == ["c", "a", "d"]
    assert [item for item, _ in best(statistics, ["red"], rows, 2)] == ["c", "a"]
    assert best(statistics, ["red"], rows, 0) == []


def test_words_become_fts5s_tokens_quoted_in_a_tsquery():
    """A word is the tokens FTS5's tokenizer makes of it (Porter stems, folded case and
    diacritics, snake_case one token); a token too long for a lexeme is dropped; tsquery quotes
    each token once and ORs them."""
    assert word_tokens(["Painting", "cafés", "snake_case", "a" * 3000]) == [
        ["paint"], ["cafe"], ["snake_cas"], []
    ]  # fmt: skip
    assert not searchable("a" * 3000)
    assert tsquery(["paint", "o'k", "paint"]) == "'paint' | 'o''k'"


def test_a_tsvector_numbers_each_occurrence_with_its_weight_class():
    """Each occurrence of a token is a position labelled with its column's weight class, in
    the order of the columns, at most MAX_OCCURRENCES; frequencies weighs them back from a
    tsvector's text (an unlabelled position is class D, which weighs 0 unless given)."""
    literal = tsvector([("A", ["kayak", "red", "kayak"]), ("B", ["kayak", "ada"])])
    assert literal == "'kayak':1A,2A,3B 'red':1A 'ada':1B"
    found = "'kayak':1A,2A,3B 'ada':1B 'it''s':1A,2"
    assert frequencies(found, {"A": 1.0, "B": 0.5}) == {"kayak": 2.5, "ada": 0.5, "it's": 1.0}
    assert frequencies(None, {"A": 1.0}) == {}
    many = tsvector([("A", ["x"] * (MAX_OCCURRENCES + 10))])
    assert many.count(",") == MAX_OCCURRENCES - 1


@pytest.mark.postgres
async def test_search_totals_follow_inserts_updates_and_deletes(postgres_url):
    """search_totals holds each searched table's rows and tokens (the scope's one token and
    the words) through inserts, text changes, cascades and trigger deletes; a change that
    keeps the length leaves them; index_statistics reads them with each word's rows."""
    pytest.importorskip("psycopg", reason="postgres: the `postgres` extra is not installed")
    from agent.db.postgres import PostgresDatabase
    from agent.memory.longterm.postgres_memory_store import PostgresMemoryStore
    from agent.memory.storage.postgres_session_table import PostgresSessionTable
    from agent.memory.summaries.postgres_summary_store import PostgresSummaryStore

    memories, summaries, sessions = (
        PostgresMemoryStore(),
        PostgresSummaryStore(),
        PostgresSessionTable(),
    )

    def fact(text: str, key: str) -> MemoryCandidate:
        return MemoryCandidate(
            kind="fact", attribute=key, key=key, text=text, confidence=0.9, importance=0.5
        )

    async def fill(tx: Transaction) -> None:
        for sid, chat in (("ses_a", 1), ("ses_b", 2)):
            await sessions.create_session(
                tx, session_id=sid, chat_id=chat, chat_type="private", user_id=chat,
                title=None, now=T0,
            )  # fmt: skip
        await summaries.append_extractive(
            tx, "ses_a", version=1, from_seq=1, to_seq=10, text="t", delta="the red kayak",
            now=T0,
        )  # fmt: skip
        await memories.record(
            tx, 1, fact("Red Kayak", "boat"), source=("ses_a", 1), threshold=0.5, now=T0
        )
        await memories.record(
            tx, 2, fact("Porto", "location"), source=("ses_b", 1), threshold=0.5, now=T0
        )

    async with PostgresDatabase(postgres_url) as db:
        await db.write(fill)

        async def totals() -> dict[str, tuple[int, int]]:
            rows = await db.reader.fetchall(
                "SELECT index_name, row_count, token_count FROM search_totals"
            )
            return {row[0]: (row[1], row[2]) for row in rows}

        # 1 + 3 words; memories: 1 + "user boat red kayak" (5) and 1 + "user location porto".
        assert await totals() == {"conversation_summaries": (1, 4), "memories": (2, 9)}
        [[red_rows, porto_rows, none_rows]] = await db.read(
            lambda snap: [
                [index_statistics(snap, "memories", [w]).hits[w] for w in ("red", "porto", "x")]
            ]
        )
        assert (red_rows, porto_rows, none_rows) == (1, 1, 0)
        await db.write(
            lambda tx: summaries.revise_extractive(
                tx, "ses_a", version=1, text="t", delta="a longer red kayak trip"
            )
        )
        await db.write(lambda tx: tx.execute("UPDATE memories SET decay = 0.5 WHERE chat_id = 1"))
        assert await totals() == {"conversation_summaries": (1, 6), "memories": (2, 9)}
        await db.write(lambda tx: sessions.delete_session(tx, "ses_a"))  # cascade, trigger
        assert await totals() == {"conversation_summaries": (0, 0), "memories": (1, 4)}
        statistics = await db.read(lambda snap: index_statistics(snap, "memories", ["porto"]))
        assert statistics == IndexStatistics(rows=1, average_length=4.0, hits={"porto": 1})

        def unknown(snap: Snapshot) -> IndexStatistics:
            return index_statistics(snap, "conversation_turns", ["x"])

        with pytest.raises(ValueError, match="searched tables"):
            await db.read(unknown)

        def unknown_search(snap: Snapshot) -> object:
            scope = ("session_id", "ses_b")
            return search_rows(snap, "conversation_turns", "seq", "seq", scope, ["x"], 5)

        with pytest.raises(ValueError, match="searched tables"):
            await db.read(unknown_search)


@pytest.mark.postgres
async def test_a_word_of_most_memories_takes_its_share_from_the_statistics(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
):
    """A token of more rows than COUNTED_ROWS is counted only up to it (a word of every
    summary made a cold chat's first packet count 100,000 rows) and then estimated from what
    ANALYZE keeps of the column: exact where it sampled every row; the cap before any ANALYZE.
    A rarer token is counted exactly."""
    pytest.importorskip("psycopg", reason="postgres: the `postgres` extra is not installed")
    from agent.db import bm25 as ranking
    from agent.db.postgres import PostgresDatabase
    from agent.memory.longterm.postgres_memory_store import PostgresMemoryStore
    from agent.memory.storage.postgres_session_table import PostgresSessionTable

    memories, sessions = PostgresMemoryStore(), PostgresSessionTable()
    monkeypatch.setattr(ranking, "COUNTED_ROWS", 4)

    async def fill(tx: Transaction) -> None:
        for chat in range(1, 13):
            await sessions.create_session(
                tx, session_id=f"ses_{chat}", chat_id=chat, chat_type="private", user_id=chat,
                title=None, now=T0,
            )  # fmt: skip
            town = "porto" if chat <= 2 else f"town{chat}"
            for key, text in (("boat", f"kayak number {chat}"), ("location", town)):
                candidate = MemoryCandidate(
                    kind="fact", attribute=key, key=key, text=text, confidence=0.9,
                    importance=0.5,
                )  # fmt: skip
                await memories.record(
                    tx, chat, candidate, source=(f"ses_{chat}", 1), threshold=0.5, now=T0
                )

    def hits(snap: Snapshot) -> dict[str, int]:
        return index_statistics(snap, "memories", ["kayak", "porto", "absent"]).hits

    async with PostgresDatabase(postgres_url) as db:
        await db.write(fill)
        before = await db.read(hits)
        await db.write(lambda tx: tx.execute("ANALYZE memories"))
        after = await db.read(hits)
    assert before == {"kayak": 4, "porto": 2, "absent": 0}
    assert after == {"kayak": 12, "porto": 2, "absent": 0}
    with pytest.raises(ValueError, match="no counted search index"):
        capped_count("conversation_turns")
