"""The promotion gate of long-term memory (writer.write_if_worthy) on a real SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime

from agent.memory import (
    Fact,
    InboundMessage,
    MemoryCandidate,
    PromotionPolicy,
    SqliteMemoryStore,
    memory_candidates,
    write_if_worthy,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


async def _make_session(db, session_id: str, chat_id: int, *, closed: bool = False) -> None:
    stamp = NOW.isoformat()
    await db.write(
        lambda tx: tx.execute(
            "INSERT INTO conversation_sessions"
            " (session_id, chat_id, state, created_at, updated_at, closed_at)"
            " VALUES (?, ?, '{}', ?, ?, ?)",
            (session_id, chat_id, stamp, stamp, stamp if closed else None),
        )
    )


async def _promote(db, chat_id, candidates, *, session_id, seq):
    store = SqliteMemoryStore()
    return await db.write(
        lambda tx: write_if_worthy(
            tx, store, chat_id, candidates, session_id=session_id, seq=seq, now=NOW
        )
    )


async def _rows(db, chat_id):
    return [
        dict(row)
        for row in await db.fetchall(
            "SELECT key, text, status, access_count, confidence FROM memories WHERE chat_id = ?"
            " ORDER BY key",
            (chat_id,),
        )
    ]


def test_only_facts_of_the_turn_become_candidates_with_kinds():
    """memory_candidates takes the facts a turn stated and classifies them."""
    facts = (
        Fact(key="name", value="Ada", turn=3),
        Fact(key="plan", value="a trip to Lisbon", turn=3),
        Fact(key="likes:jazz", value="jazz", turn=3),
        Fact(key="location", value="Porto", turn=2),
    )
    candidates = memory_candidates(facts, 3)
    assert [(c.key, c.kind) for c in candidates] == [
        ("name", "fact"),
        ("plan", "goal"),
        ("likes:jazz", "preference"),
    ]
    assert candidates[0].importance > candidates[2].importance


async def test_a_confident_fact_is_promoted_at_once(db):
    """A self-statement passes the gate the first time it is said."""
    await _make_session(db, "ses_a", 1)
    active = await _promote(
        db,
        1,
        memory_candidates((Fact(key="name", value="Ada", turn=1),), 1),
        session_id="ses_a",
        seq=1,
    )
    assert [m.text for m in active] == ["Ada"]
    assert (await _rows(db, 1))[0]["status"] == "active"


async def test_a_preference_needs_to_be_said_twice(db):
    """Below the threshold a candidate is kept as evidence, not as a memory; a repeat promotes."""
    await _make_session(db, "ses_a", 1)
    candidates = memory_candidates((Fact(key="likes:jazz", value="jazz", turn=1),), 1)
    assert await _promote(db, 1, candidates, session_id="ses_a", seq=1) == []
    assert (await _rows(db, 1))[0]["status"] == "candidate"
    again = memory_candidates((Fact(key="likes:jazz", value="Jazz", turn=2),), 2)
    active = await _promote(db, 1, again, session_id="ses_a", seq=2)
    assert [m.key for m in active] == ["likes:jazz"]
    row = (await _rows(db, 1))[0]
    assert row["status"] == "active"
    assert row["access_count"] == 2
    assert abs(row["confidence"] - 0.91) < 1e-9


async def test_the_same_fact_twice_is_one_memory_and_a_new_value_replaces_it(db):
    """De-duplication is per chat and key: repeats reinforce, a changed value replaces."""
    await _make_session(db, "ses_a", 1)
    for seq, value in ((1, "Porto"), (2, "Porto"), (3, "Lisbon")):
        await _promote(
            db,
            1,
            memory_candidates((Fact(key="location", value=value, turn=seq),), seq),
            session_id="ses_a",
            seq=seq,
        )
    rows = await _rows(db, 1)
    assert len(rows) == 1
    assert rows[0]["text"] == "Lisbon"
    assert rows[0]["access_count"] == 3
    assert rows[0]["confidence"] == PromotionPolicy().fact_confidence


async def test_memories_never_cross_chats(db):
    """Two chats stating the same key keep two separate memories."""
    await _make_session(db, "ses_a", 1)
    await _make_session(db, "ses_b", 2)
    fact = MemoryCandidate(kind="fact", key="name", text="Ada", confidence=0.9, importance=1.0)
    await _promote(db, 1, [fact], session_id="ses_a", seq=1)
    store = SqliteMemoryStore()
    found = await store.active_for_chats(db.reader, [1, 2], per_chat=10)
    assert [m.text for m in found[1]] == ["Ada"]
    assert found[2] == []


async def test_deleting_a_session_removes_memories_only_it_stated(db):
    """A memory goes with its last source session; one also stated elsewhere stays."""
    await _make_session(db, "ses_a", 1, closed=True)
    await _make_session(db, "ses_b", 1)
    name = MemoryCandidate(kind="fact", key="name", text="Ada", confidence=0.9, importance=1.0)
    city = MemoryCandidate(kind="fact", key="location", text="Porto", confidence=0.9, importance=1)
    await _promote(db, 1, [name, city], session_id="ses_a", seq=1)
    await _promote(db, 1, [name], session_id="ses_b", seq=1)
    await db.write(
        lambda tx: tx.execute("DELETE FROM conversation_sessions WHERE session_id = 'ses_a'")
    )
    assert [row["key"] for row in await _rows(db, 1)] == ["name"]


async def test_new_session_keeps_long_term_facts_and_forget_removes_them(lane):
    """/new keeps what the user told about themselves; /forget of its only session erases it."""
    from agent.concierge import RuleBasedConcierge

    concierge = RuleBasedConcierge()
    first = await lane.on_turn(InboundMessage(chat_id=5, text="my name is Ada"), concierge)
    await lane.new_session(5)
    second = await lane.on_turn(InboundMessage(chat_id=5, text="what's my name?"), concierge)
    assert second.turn.session_id != first.turn.session_id
    assert "Ada" in (second.turn.assistant_text or "")
    await lane.forget_session(first.turn.session_id)
    third = await lane.on_turn(InboundMessage(chat_id=5, text="what's my name?"), concierge)
    assert "Ada" not in (third.turn.assistant_text or "")
    rows = await lane.db.fetchall("SELECT text FROM memories WHERE chat_id = 5")
    assert rows == []


async def test_group_talk_promotes_nothing(lane):
    """In a group, "my name is" speaks for one member: nothing goes to the chat's memory."""
    from agent.concierge import RuleBasedConcierge

    message = InboundMessage(chat_id=-7, chat_type="group", text="my name is Bob", user_id=3)
    await lane.on_turn(message, RuleBasedConcierge())
    assert await lane.db.fetchall("SELECT * FROM memories") == []
