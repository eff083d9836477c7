"""The promotion gate of long-term memory (writer.write_if_worthy) on a real SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime

from agent.memory import ConversationTurn, InboundMessage
from agent.memory.longterm.memory_store import SqliteMemoryStore
from agent.memory.schemas import MemoryCandidate
from agent.memory.writer import PromotionPolicy, memory_candidates, write_if_worthy

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


def _turn(text: str, seq: int = 1) -> ConversationTurn:
    return ConversationTurn(
        turn_id=f"trn_{seq:032x}", session_id="ses_a", seq=seq, user_text=text, created_at=NOW
    )


def _candidates(text: str, seq: int = 1) -> list[MemoryCandidate]:
    return memory_candidates(_turn(text, seq))


def test_the_facts_of_a_turn_become_typed_candidates():
    """memory_candidates reads the turn's text and types each fact (seed 003's kinds), with
    its subject and attribute."""
    candidates = _candidates(
        "My name is Ada. I'm planning a trip to Lisbon and I like jazz. My sister Mia lives in"
        " Porto"
    )
    assert [(c.kind, c.subject, c.attribute, c.text) for c in candidates] == [
        ("fact", "user", "name", "Ada"),
        ("goal", "user", "plan", "a trip to Lisbon"),
        ("preference", "user", "likes", "jazz"),
        ("entity", "user", "relative", "sister Mia"),
        ("fact", "sister Mia", "location", "Porto"),
    ]
    assert candidates[0].importance > candidates[2].importance
    assert {c.confidence for c in candidates} == {PromotionPolicy().stated_confidence}


async def test_a_plain_statement_is_promoted_at_once(db):
    """A self-statement, even a preference, passes the gate the first time it is said."""
    await _make_session(db, "ses_a", 1)
    active = await _promote(db, 1, _candidates("I like jazz"), session_id="ses_a", seq=1)
    assert [m.text for m in active] == ["jazz"]
    assert (await _rows(db, 1))[0]["status"] == "active"


async def test_a_hedge_stays_a_candidate_until_said_plainly(db):
    """A hedged statement is kept as an unconfirmed candidate; hedging again does not confirm
    it, saying it plainly does (and reinforces the same row)."""
    await _make_session(db, "ses_a", 1)
    await _promote(db, 1, _candidates("I think I like jazz", 1), session_id="ses_a", seq=1)
    await _promote(db, 1, _candidates("maybe I like Jazz", 2), session_id="ses_a", seq=2)
    assert (await _rows(db, 1))[0]["status"] == "candidate"
    await _promote(db, 1, _candidates("I like jazz", 3), session_id="ses_a", seq=3)
    rows = await _rows(db, 1)
    assert len(rows) == 1
    assert rows[0]["status"] == "active"
    assert rows[0]["access_count"] == 3


async def test_a_hedge_never_overrules_an_active_memory(db):
    """ "I think I live in Rome" does not replace a home said plainly."""
    await _make_session(db, "ses_a", 1)
    await _promote(db, 1, _candidates("I live in Porto", 1), session_id="ses_a", seq=1)
    kept = await _promote(
        db, 1, _candidates("I think I live in Rome", 2), session_id="ses_a", seq=2
    )
    assert kept == []
    assert [(r["text"], r["status"]) for r in await _rows(db, 1)] == [("Porto", "active")]


async def test_the_same_fact_twice_is_one_memory_and_a_new_value_supersedes_it(db):
    """Repeats reinforce the current memory; a changed one-value attribute adds a new current
    row and ends the old one, which stays as history."""
    await _make_session(db, "ses_a", 1)
    for seq, value in ((1, "Porto"), (2, "Porto"), (3, "Lisbon")):
        await _promote(db, 1, _candidates(f"I live in {value}", seq), session_id="ses_a", seq=seq)
    rows = await db.fetchall(
        "SELECT text, access_count, valid_until IS NULL AS current FROM memories ORDER BY rowid"
    )
    assert [tuple(r) for r in rows] == [("Porto", 2, 0), ("Lisbon", 1, 1)]


async def test_memories_never_cross_chats(db):
    """Two chats stating the same key keep two separate memories."""
    await _make_session(db, "ses_a", 1)
    await _make_session(db, "ses_b", 2)
    await _promote(db, 1, _candidates("my name is Ada"), session_id="ses_a", seq=1)
    store = SqliteMemoryStore()
    found = await store.current_for_chats(db.reader, [1, 2], per_chat=10, past=5)
    assert [m.text for m in found[1]] == ["Ada"]
    assert found[2] == []


async def test_deleting_a_session_removes_memories_only_it_stated(db):
    """A memory goes with its last source session; one also stated elsewhere stays."""
    await _make_session(db, "ses_a", 1, closed=True)
    await _make_session(db, "ses_b", 1)
    await _promote(db, 1, _candidates("my name is Ada. I live in Porto"), session_id="ses_a", seq=1)
    await _promote(db, 1, _candidates("my name is Ada"), session_id="ses_b", seq=1)
    await db.write(
        lambda tx: tx.execute("DELETE FROM conversation_sessions WHERE session_id = 'ses_a'")
    )
    assert [row["key"] for row in await _rows(db, 1)] == ["name"]


async def test_new_session_keeps_long_term_facts_and_forget_removes_them(lane, db):
    """/new keeps what the user told about themselves; /forget of its only session erases it."""
    from agent.engines.rule_based import RuleBasedConcierge

    concierge = RuleBasedConcierge()
    first = await lane.on_turn(InboundMessage(chat_id=5, text="my name is Ada"), concierge)
    await lane.new_session(5)
    second = await lane.on_turn(InboundMessage(chat_id=5, text="what's my name?"), concierge)
    assert second.turn.session_id != first.turn.session_id
    assert "Ada" in (second.turn.assistant_text or "")
    await lane.forget_session(first.turn.session_id)
    third = await lane.on_turn(InboundMessage(chat_id=5, text="what's my name?"), concierge)
    assert "Ada" not in (third.turn.assistant_text or "")
    rows = await db.fetchall("SELECT text FROM memories WHERE chat_id = 5")
    assert rows == []


async def test_group_talk_promotes_nothing(lane, db):
    """In a group, "my name is" speaks for one member: nothing goes to the chat's memory."""
    from agent.engines.rule_based import RuleBasedConcierge

    message = InboundMessage(chat_id=-7, chat_type="group", text="my name is Bob", user_id=3)
    await lane.on_turn(message, RuleBasedConcierge())
    assert await db.fetchall("SELECT * FROM memories") == []
