"""Long-term memory upkeep (memory_consolidator.py): decay, archive, merge, on real SQLite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from agent.memory import Memory
from agent.memory.longterm.memory_consolidator import DecayPolicy, MemoryConsolidator, decay_factor
from agent.memory.longterm.memory_store import SqliteMemoryStore
from agent.memory.schemas import MemoryCandidate
from agent.memory.writer import write_if_worthy

NOW = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
CHAT = 77


def memory(**changes: object) -> Memory:
    base = Memory(
        memory_id="mem_1",
        chat_id=CHAT,
        kind="fact",
        attribute="name",
        key="name",
        text="Ada",
        valid_from=NOW,
        confidence=0.9,
        importance=1.0,
        access_count=1,
        status="active",
        created_at=NOW,
        updated_at=NOW,
        last_accessed_at=NOW,
    )
    return base.model_copy(update=changes)


async def make_session(db, session_id: str, *, closed: bool = False) -> None:
    stamp = NOW.isoformat()
    await db.write(
        lambda tx: tx.execute(
            "INSERT INTO conversation_sessions (session_id, chat_id, state, created_at,"
            " updated_at, closed_at) VALUES (?, ?, '{}', ?, ?, ?)",
            (session_id, CHAT, stamp, stamp, stamp if closed else None),
        )
    )


async def promote(db, candidate: MemoryCandidate, *, session_id: str, seq: int, now: datetime):
    store = SqliteMemoryStore()
    return await db.write(
        lambda tx: write_if_worthy(
            tx, store, CHAT, [candidate], session_id=session_id, seq=seq, now=now
        )
    )


async def rows(db) -> list[dict]:
    found = await db.fetchall(
        "SELECT memory_id, key, text, status, access_count, confidence, decay FROM memories"
        " ORDER BY key"
    )
    return [dict(row) for row in found]


def test_decay_halves_per_half_life_and_accesses_boost_it():
    """decay = min(1, 0.5 ** (days / half-life) + min(0.1 * accesses, 0.5)) (seed 003)."""
    policy = DecayPolicy(half_life_days=30)
    assert decay_factor(memory(), NOW, policy) == 1.0
    assert decay_factor(memory(), NOW + timedelta(days=30), policy) == pytest.approx(0.6)
    assert decay_factor(memory(), NOW + timedelta(days=90), policy) == pytest.approx(0.225)
    boosted = memory(access_count=9)  # the boost is capped at 0.5
    assert decay_factor(boosted, NOW + timedelta(days=90), policy) == pytest.approx(0.625)
    # Time is measured from the last access, not from the creation.
    later = memory(last_accessed_at=NOW + timedelta(days=60))
    assert decay_factor(later, NOW + timedelta(days=90), policy) == pytest.approx(0.6)


async def test_promotion_deduplicates_and_consolidation_decays(db):
    """A fact said twice is one memory; with an injected clock it decays, then is archived."""
    await make_session(db, "ses_a")
    likes = MemoryCandidate(
        kind="preference",
        attribute="likes",
        key="likes:jazz",
        text="jazz",
        confidence=0.8,
        importance=0.4,
    )
    await promote(db, likes, session_id="ses_a", seq=1, now=NOW)
    await promote(db, likes, session_id="ses_a", seq=5, now=NOW)
    (row,) = await rows(db)
    assert (row["status"], row["access_count"]) == ("active", 2)
    assert row["confidence"] == pytest.approx(1 - 0.2 * 0.2)

    consolidator = MemoryConsolidator()
    soon = await db.write(lambda tx: consolidator.consolidate(tx, now=NOW + timedelta(days=20)))
    (row,) = await rows(db)
    assert soon.archived == []  # 0.4 * (0.5^(2/3) + 0.2) = 0.33: not below 0.3, and too young
    assert row["decay"] == pytest.approx(0.5 ** (20 / 30) + 0.2)

    late = await db.write(lambda tx: consolidator.consolidate(tx, now=NOW + timedelta(days=45)))
    (row,) = await rows(db)
    assert late.archived == [row["memory_id"]]
    assert row["status"] == "archived"
    assert row["decay"] == pytest.approx(0.5**1.5 + 0.2)

    # Said again, it comes back from the archive, fresh.
    await promote(db, likes, session_id="ses_a", seq=9, now=NOW + timedelta(days=46))
    (row,) = await rows(db)
    assert (row["status"], row["decay"], row["access_count"]) == ("active", 1.0, 3)


async def test_consolidation_merges_near_identical_memories_with_their_sources(db):
    """Near-identical memories of a chat merge into one that keeps the evidence and sources."""
    await make_session(db, "ses_a", closed=True)  # an earlier session of the chat (/new)
    await make_session(db, "ses_b")
    first = MemoryCandidate(
        kind="preference", attribute="likes", key="likes:the beatles", text="the Beatles",
        confidence=0.8, importance=0.4,
    )  # fmt: skip
    second = first.model_copy(update={"key": "likes:beatles", "text": "Beatles"})
    other = first.model_copy(
        update={"attribute": "dislikes", "key": "dislikes:the stones", "text": "the Stones"}
    )
    await promote(db, first, session_id="ses_a", seq=1, now=NOW)
    await promote(db, second, session_id="ses_b", seq=2, now=NOW + timedelta(hours=1))
    await promote(db, other, session_id="ses_b", seq=3, now=NOW)

    report = await db.write(
        lambda tx: MemoryConsolidator().consolidate(tx, now=NOW + timedelta(days=1))
    )

    merged = await rows(db)
    assert [(m["key"], m["text"], m["access_count"]) for m in merged] == [
        ("likes:the beatles", "Beatles", 2),
        ("likes:the stones", "the Stones", 1),  # a dislike (its slot is the like's): apart
    ]
    assert merged[0]["confidence"] == pytest.approx(1 - 0.2 * 0.2)
    assert len(report.merged) == 1
    sources = await db.fetchall(
        "SELECT session_id, seq FROM memory_sources WHERE memory_id = ? ORDER BY seq",
        (merged[0]["memory_id"],),
    )
    assert [tuple(row) for row in sources] == [("ses_a", 1), ("ses_b", 2)]
    # The index follows the merge: the survivor's text is found, the removed row is not.
    search = partial(SqliteMemoryStore().search, chat_id=CHAT, queries=["beatles"], limit=5)
    hits = (await db.read(search))[0]
    assert sorted(m.key for m, _ in hits) == ["likes:the beatles"]


async def test_a_young_memory_is_never_archived(db):
    """Below the threshold but younger than archive_after_days: kept, only decayed."""
    await make_session(db, "ses_a")
    weak = MemoryCandidate(
        kind="fact", attribute="hobby", key="hobby", text="chess", confidence=0.9, importance=0.1
    )
    await promote(db, weak, session_id="ses_a", seq=1, now=NOW)
    policy = DecayPolicy(archive_after_days=30)
    report = await db.write(
        lambda tx: MemoryConsolidator(policy=policy).consolidate(tx, now=NOW + timedelta(days=10))
    )
    assert report.archived == []
    assert (await rows(db))[0]["status"] == "active"
