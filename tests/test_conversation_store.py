"""Tests of SqliteConversationStore: sessions and the append-only turn log on a real file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from functools import partial

import pytest

from agent.db import Database
from agent.errors import StorageError
from agent.memory import ConversationTurn, SessionState
from agent.memory.conversation_store import SqliteConversationStore

store = SqliteConversationStore()
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


async def _new_session(db: Database, session_id: str, chat_id: int = 1, *, now=T0, **fields):
    fields.setdefault("chat_type", "private")
    fields.setdefault("user_id", None)
    fields.setdefault("title", None)
    return await db.write(
        lambda tx: store.create_session(
            tx, session_id=session_id, chat_id=chat_id, now=now, **fields
        )
    )


def _turn(session_id: str, seq: int, *, user_text: str | None = None, **fields):
    return ConversationTurn(
        turn_id=f"trn_{session_id}_{seq:05d}",
        session_id=session_id,
        seq=seq,
        user_text=f"user {seq}" if user_text is None else user_text,
        created_at=T0 + timedelta(seconds=seq),
        **fields,
    )


async def _append(db: Database, *turns: ConversationTurn) -> list[bool]:
    async def work(tx):
        return [await store.append_turn(tx, turn) for turn in turns]

    return await db.write(work)


async def _turn_count(db: Database, session_id: str | None = None) -> int:
    if session_id is None:
        row = await db.fetchone("SELECT count(*) FROM conversation_turns")
    else:
        row = await db.fetchone(
            "SELECT count(*) FROM conversation_turns WHERE session_id = ?", (session_id,)
        )
    assert row is not None
    return int(row[0])


def _seqs(turns) -> list[int]:
    return [turn.seq for turn in turns]


def _ids(sessions) -> list[str]:
    return [session.session_id for session in sessions]


# -- sessions --------------------------------------------------------------------------------


async def test_created_session_is_loaded_by_id_and_as_its_chats_open_session(db):
    """A new session comes back equal from get_session and open_session_for_chat; unknown
    ids and other chats give None."""
    created = await _new_session(db, "ses_a", 42, chat_type="group", user_id=7, title="Team")

    assert created.state == SessionState(session_id="ses_a")
    assert (created.status, created.turn_count, created.closed_at) == ("active", 0, None)
    assert await store.get_session(db.reader, "ses_a") == created
    assert await store.open_session_for_chat(db.reader, 42) == created
    assert await store.open_session_for_chat(db.reader, 43) is None
    assert await store.get_session(db.reader, "ses_missing") is None


async def test_a_chat_has_at_most_one_open_session(db):
    """A second open session for a chat is refused until the first is closed; the closed one
    stays loadable by id."""
    await _new_session(db, "ses_a", 42)
    with pytest.raises(StorageError, match="create_session failed for chat 42"):
        await _new_session(db, "ses_b", 42)
    assert await store.get_session(db.reader, "ses_b") is None

    closed_at = T0 + timedelta(hours=1)
    await db.write(lambda tx: store.close_session(tx, "ses_a", now=closed_at))
    assert await store.open_session_for_chat(db.reader, 42) is None
    closed = await store.get_session(db.reader, "ses_a")
    assert closed is not None
    assert (closed.closed_at, closed.updated_at) == (closed_at, closed_at)

    reopened = await _new_session(db, "ses_b", 42, now=closed_at)
    assert await store.open_session_for_chat(db.reader, 42) == reopened


async def test_existing_session_ids_returns_only_known_ids(db):
    """existing_session_ids answers which of the given ids exist, ignoring unknown ones."""
    await _new_session(db, "ses_a", 1)
    await _new_session(db, "ses_b", 2)

    found = await store.existing_session_ids(
        db.reader, ["ses_a", "ses_missing", "ses_b", "ses_a", "x' OR 1=1 --"]
    )
    assert found == {"ses_a", "ses_b"}
    assert await store.existing_session_ids(db.reader, []) == set()


async def test_list_sessions_orders_by_activity_and_applies_filters_and_limit(db):
    """list_sessions is most recently active first; open_only, status, chat_id and limit
    narrow it, and limit=None returns all."""
    await _new_session(db, "ses_a", 1, now=T0 + timedelta(minutes=1))
    await db.write(lambda tx: store.close_session(tx, "ses_a", now=T0 + timedelta(minutes=2)))
    await _new_session(db, "ses_b", 1, now=T0)
    await _new_session(db, "ses_c", 2, now=T0)
    await db.write(
        lambda tx: store.save_state(
            tx,
            SessionState(session_id="ses_c", status="paused"),
            last_seq=0,
            now=T0 + timedelta(minutes=3),
        )
    )
    await _new_session(db, "ses_d", 3, now=T0 + timedelta(minutes=4))
    # updated_at: d (4 min) > c (3 min) > a (2 min, closed) > b (0 min)

    async def listed(**filters):
        return _ids(await store.list_sessions(db.reader, **filters))

    assert await listed() == ["ses_d", "ses_c", "ses_a", "ses_b"]
    assert await listed(limit=2) == ["ses_d", "ses_c"]
    assert await listed(limit=None) == ["ses_d", "ses_c", "ses_a", "ses_b"]
    assert await listed(open_only=True) == ["ses_d", "ses_c", "ses_b"]
    assert await listed(status="paused") == ["ses_c"]
    assert await listed(status="active", open_only=True) == ["ses_d", "ses_b"]
    assert await listed(chat_id=1) == ["ses_a", "ses_b"]
    assert await listed(chat_id=1, open_only=True) == ["ses_b"]
    assert await listed(chat_id=99) == []
    paused = (await store.list_sessions(db.reader, status="paused"))[0]
    assert paused.state.status == "paused"


async def test_delete_session_cascades_to_its_turns_only(db):
    """Deleting a session removes its turns (foreign key cascade) and nothing of other
    sessions; deleting it again reports False."""
    await _new_session(db, "ses_a", 1)
    await _new_session(db, "ses_b", 2)
    await _append(db, *(_turn("ses_a", seq) for seq in (1, 2, 3)))
    await _append(db, *(_turn("ses_b", seq) for seq in (1, 2)))

    assert await db.write(lambda tx: store.delete_session(tx, "ses_a")) is True

    assert await store.get_session(db.reader, "ses_a") is None
    assert await _turn_count(db, "ses_a") == 0
    assert _seqs(await store.recent_turns(db.reader, "ses_b", 10)) == [1, 2]
    assert await db.write(lambda tx: store.delete_session(tx, "ses_a")) is False
    assert await db.write(lambda tx: store.delete_session(tx, "ses_missing")) is False


async def test_prune_sessions_deletes_only_sessions_inactive_since_the_cutoff(db):
    """Sessions whose last activity is strictly before the cutoff are deleted with their turns
    and their ids returned; the cutoff's timezone does not matter."""
    cutoff = T0 + timedelta(hours=2)
    await _new_session(db, "ses_old1", 1, now=T0)
    await _new_session(db, "ses_old2", 2, now=T0 + timedelta(hours=1))
    await _new_session(db, "ses_edge", 3, now=cutoff)
    await _new_session(db, "ses_new", 4, now=T0 + timedelta(hours=3))
    # Created long ago but active recently: it is not inactive.
    await _new_session(db, "ses_busy", 5, now=T0)
    await db.write(
        lambda tx: store.save_state(
            tx, SessionState(session_id="ses_busy"), last_seq=0, now=T0 + timedelta(hours=5)
        )
    )
    await _append(db, _turn("ses_old1", 1), _turn("ses_new", 1))

    local_cutoff = cutoff.astimezone(timezone(timedelta(hours=2)))
    pruned = await db.write(lambda tx: store.prune_sessions(tx, inactive_since=local_cutoff))

    assert pruned == ["ses_old1", "ses_old2"]
    left = _ids(await store.list_sessions(db.reader, limit=None))
    assert sorted(left) == ["ses_busy", "ses_edge", "ses_new"]
    assert await _turn_count(db) == 1
    assert await db.write(lambda tx: store.prune_sessions(tx, inactive_since=cutoff)) == []


async def test_set_status_changes_open_sessions_and_their_state_json(db):
    """set_status updates only open sessions not already in that status, column and state JSON
    alike, and returns how many changed."""
    await _new_session(db, "ses_open", 1)
    await _new_session(db, "ses_paused", 2)
    await db.write(
        lambda tx: store.save_state(
            tx, SessionState(session_id="ses_paused", status="paused"), last_seq=0, now=T0
        )
    )
    await _new_session(db, "ses_closed", 3)
    await db.write(lambda tx: store.close_session(tx, "ses_closed", now=T0))

    changed = await db.write(lambda tx: store.set_status(tx, "shutdown_clean", now=T0))

    assert changed == 2
    rows = await db.fetchall(
        "SELECT session_id, status, state FROM conversation_sessions ORDER BY session_id"
    )
    on_disk = {
        row["session_id"]: (row["status"], SessionState.model_validate_json(row["state"]).status)
        for row in rows
    }
    assert on_disk == {
        "ses_closed": ("active", "active"),
        "ses_open": ("shutdown_clean", "shutdown_clean"),
        "ses_paused": ("shutdown_clean", "shutdown_clean"),
    }
    session = await store.get_session(db.reader, "ses_open")
    assert session is not None
    assert session.state == SessionState(session_id="ses_open", status="shutdown_clean")
    assert await db.write(lambda tx: store.set_status(tx, "shutdown_clean", now=T0)) == 0
    assert await db.write(lambda tx: store.set_status(tx, "resuming", now=T0)) == 2


# -- turns -----------------------------------------------------------------------------------


async def test_append_turn_round_trips_every_field(db):
    """A turn read back equals the turn appended, whatever timezone its times were in."""
    await _new_session(db, "ses_a", 1)
    plus_two = timezone(timedelta(hours=2))
    turn = ConversationTurn(
        turn_id="trn_full",
        session_id="ses_a",
        seq=1,
        user_text="remind me 🌍 مرحبا\u200b",
        assistant_text="ok",
        intent="remind",
        action_name="schedule",
        created_at=datetime(2024, 5, 1, 14, 0, 0, 123456, tzinfo=plus_two),
        status="delivered",
        bot_id=9,
        update_id=100,
        user_id=7,
        speaker="Ada",
        message_id=55,
        reply_message_id=56,
        delivered_at=datetime(2024, 5, 1, 14, 0, 1, tzinfo=plus_two),
    )

    assert await _append(db, turn) == [True]

    assert await store.recent_turns(db.reader, "ses_a", 1) == [turn]
    assert await store.turn_for_update(db.reader, 9, 100) == turn


async def test_a_redelivered_update_is_not_a_second_turn(db):
    """append_turn returns False and writes nothing for an update already recorded (I3);
    the key is (bot_id, update_id), and turns without an update id are never merged."""
    await _new_session(db, "ses_a", 1)
    first = _turn("ses_a", 1, update_id=100, user_text="original")
    again = _turn("ses_a", 2, update_id=100, user_text="redelivered")

    assert await _append(db, first) == [True]
    assert await _append(db, again) == [False]
    assert await _turn_count(db) == 1
    assert await store.turn_for_update(db.reader, 0, 100) == first
    assert await store.turn_for_update(db.reader, 0, 101) is None

    other_bot = _turn("ses_a", 2, update_id=100, bot_id=1)
    no_update = [_turn("ses_a", 3), _turn("ses_a", 4)]
    assert await _append(db, other_bot, *no_update) == [True, True, True]
    assert _seqs(await store.recent_turns(db.reader, "ses_a", 10)) == [1, 2, 3, 4]


async def test_a_duplicate_seq_is_an_error_not_a_silent_skip(db):
    """Two different turns at one position of a session raise StorageError; the first stays."""
    await _new_session(db, "ses_a", 1)
    await _append(db, _turn("ses_a", 1, user_text="first"))
    clash = _turn("ses_a", 1, user_text="clash").model_copy(update={"turn_id": "trn_other"})

    with pytest.raises(StorageError, match="append_turn failed for session ses_a"):
        await _append(db, clash)

    assert [t.user_text for t in await store.recent_turns(db.reader, "ses_a", 5)] == ["first"]


async def test_store_writes_are_undone_when_the_transaction_fails(db):
    """Store methods never commit: if the work fails after them, nothing of it persists."""

    async def work(tx):
        await store.create_session(
            tx,
            session_id="ses_a",
            chat_id=1,
            chat_type="private",
            user_id=None,
            title=None,
            now=T0,
        )
        await store.append_turn(tx, _turn("ses_a", 1))
        raise RuntimeError("the reply engine failed")

    with pytest.raises(RuntimeError, match="the reply engine failed"):
        await db.write(work)
    assert await store.get_session(db.reader, "ses_a") is None
    assert await _turn_count(db) == 0


async def test_recent_turns_returns_the_last_n_oldest_first(db):
    """recent_turns gives the latest ``limit`` turns of that session only, in log order."""
    await _new_session(db, "ses_a", 1)
    await _new_session(db, "ses_b", 2)
    await _append(db, *(_turn("ses_a", seq) for seq in range(1, 7)))
    await _append(db, *(_turn("ses_b", seq) for seq in range(1, 10)))

    assert _seqs(await store.recent_turns(db.reader, "ses_a", 3)) == [4, 5, 6]
    assert _seqs(await store.recent_turns(db.reader, "ses_a", 10)) == [1, 2, 3, 4, 5, 6]
    assert {t.session_id for t in await store.recent_turns(db.reader, "ses_a", 10)} == {"ses_a"}
    assert await store.recent_turns(db.reader, "ses_missing", 3) == []


async def test_recent_turns_of_many_sessions_match_each_read_alone(db):
    """recent_turns_of (hydration's read of a page of sessions) gives each session what
    recent_turns gives it alone: a long one, a short one, one without turns, one unknown."""
    await _new_session(db, "ses_a", 1)
    await _new_session(db, "ses_b", 2)
    await _new_session(db, "ses_c", 3)
    await _append(db, *(_turn("ses_a", seq) for seq in range(1, 40)))
    await _append(db, *(_turn("ses_b", seq) for seq in range(1, 3)))
    asked = ["ses_a", "ses_b", "ses_c", "ses_missing"]

    for limit in (1, 3, 50):
        together = await store.recent_turns_of(db.reader, asked, limit)
        assert together == {sid: await store.recent_turns(db.reader, sid, limit) for sid in asked}
    assert _seqs((await store.recent_turns_of(db.reader, asked, 3))["ses_a"]) == [37, 38, 39]
    assert await store.recent_turns_of(db.reader, [], 3) == {}


@pytest.mark.parametrize(
    ("turns", "max_tokens", "first_seq"),
    [
        (40, 35, 6),  # 35 turns: a full page of 32 and 3 from the next
        (40, 33, 8),  # one turn past the page boundary
        (40, 32, 9),  # exactly one page
        (40, 40, 1),  # the budget holds everything exactly
        (64, 1000, 1),  # two full pages, then an empty one
        (64, 63, 2),
        (5, 1000, 1),
    ],
)
async def test_recent_turns_within_returns_the_longest_latest_run_that_fits(
    db, turns, max_tokens, first_seq
):
    """recent_turns_within returns the latest turns whose tokens add up to at most max_tokens,
    oldest first, across the store's 32-row read pages."""
    await _new_session(db, "ses_a", 1)
    # Four characters and no answer: one token per turn.
    await _append(db, *(_turn("ses_a", seq, user_text=f"{seq:04d}") for seq in range(1, turns + 1)))

    chosen = await store.recent_turns_within(db.reader, "ses_a", max_tokens)

    assert _seqs(chosen) == list(range(first_seq, turns + 1))


async def test_recent_turns_within_stops_at_the_first_turn_that_does_not_fit(db):
    """The run is contiguous from the newest turn: an older small turn is not taken after a
    bigger one was refused, and both user and assistant text count."""
    await _new_session(db, "ses_a", 1)
    await _append(
        db,
        _turn("ses_a", 1, user_text="abcd"),  # 1 token
        _turn("ses_a", 2, user_text="abcd", assistant_text="x" * 36),  # 10 tokens
        _turn("ses_a", 3, user_text="abcd"),
        _turn("ses_a", 4, user_text="ab", assistant_text="cd"),  # 1 + 1 tokens
    )

    assert _seqs(await store.recent_turns_within(db.reader, "ses_a", 5)) == [3, 4]
    assert _seqs(await store.recent_turns_within(db.reader, "ses_a", 13)) == [2, 3, 4]
    assert _seqs(await store.recent_turns_within(db.reader, "ses_a", 14)) == [1, 2, 3, 4]


async def test_recent_turns_within_is_empty_when_the_newest_turn_alone_is_too_big(db):
    """A newest turn over the budget yields no turns, even if older ones would fit."""
    await _new_session(db, "ses_a", 1)
    await _new_session(db, "ses_b", 2)
    await _append(
        db,
        _turn("ses_a", 1, user_text="abcd"),
        _turn("ses_a", 2, user_text="abcd", assistant_text="abcde"),  # 1 + 2 tokens
    )

    assert await store.recent_turns_within(db.reader, "ses_a", 2) == []
    assert _seqs(await store.recent_turns_within(db.reader, "ses_a", 3)) == [2]
    assert await store.recent_turns_within(db.reader, "ses_b", 100) == []


@pytest.mark.parametrize("turns", [500, 1001])
async def test_iter_turns_yields_every_turn_in_order_across_pages(db, turns):
    """iter_turns yields each turn of the session once, in order, across its 500-row pages."""
    await _new_session(db, "ses_a", 1)
    await _new_session(db, "ses_b", 2)
    await _append(db, *(_turn("ses_a", seq) for seq in range(1, turns + 1)))
    await _append(db, *(_turn("ses_b", seq) for seq in range(1, 4)))

    seen = [turn async for turn in store.iter_turns(db.reader, "ses_a")]

    assert _seqs(seen) == list(range(1, turns + 1))
    assert {turn.session_id for turn in seen} == {"ses_a"}
    assert [turn async for turn in store.iter_turns(db.reader, "ses_missing")] == []


async def test_undelivered_turns_and_mark_delivered(db):
    """undelivered_turns lists answered turns per session in order; mark_delivered records the
    reply's message id once and takes the turn off the list; 'recorded' turns never appear."""
    await _new_session(db, "ses_a", 1)
    await _new_session(db, "ses_b", 2)
    await _append(
        db,
        _turn("ses_b", 1),
        _turn("ses_a", 1),
        _turn("ses_a", 2, status="recorded"),
        _turn("ses_a", 3),
    )

    async def pending(limit=1000):
        turns = await store.undelivered_turns(db.reader, limit)
        return [(turn.session_id, turn.seq) for turn in turns]

    assert await pending() == [("ses_a", 1), ("ses_a", 3), ("ses_b", 1)]
    assert await pending(limit=2) == [("ses_a", 1), ("ses_a", 3)]

    sent_at = T0 + timedelta(minutes=5)
    await db.write(lambda tx: store.mark_delivered(tx, "ses_a", 1, message_id=555, now=sent_at))
    await db.write(lambda tx: store.mark_delivered(tx, "ses_a", 2, message_id=556, now=sent_at))
    later = sent_at + timedelta(minutes=1)
    await db.write(lambda tx: store.mark_delivered(tx, "ses_a", 1, message_id=999, now=later))

    assert await pending() == [("ses_a", 3), ("ses_b", 1)]
    first, recorded, _ = await store.recent_turns(db.reader, "ses_a", 3)
    assert (first.status, first.reply_message_id, first.delivered_at) == (
        "delivered",
        555,
        sent_at,
    )
    assert (recorded.status, recorded.reply_message_id, recorded.delivered_at) == (
        "recorded",
        None,
        None,
    )


async def test_a_reply_refused_for_good_stays_answered_and_leaves_the_undelivered_list(db):
    """mark_undeliverable keeps Telegram's reason on an answered turn and takes it off the
    list of replies to send; it touches neither delivered turns nor other turns."""
    await _new_session(db, "ses_a", 1)
    await _append(db, _turn("ses_a", 1), _turn("ses_a", 2), _turn("ses_a", 3))
    await db.write(lambda tx: store.mark_delivered(tx, "ses_a", 3, message_id=7, now=T0))
    blocked = "Forbidden: bot was blocked by the user"
    for seq in (1, 3):
        await db.write(
            lambda tx, seq=seq: store.mark_undeliverable(tx, "ses_a", seq, error=blocked)
        )

    assert [turn.seq for turn in await store.undelivered_turns(db.reader)] == [2]
    rows = await db.fetchall(
        "SELECT seq, status, delivery_error FROM conversation_turns ORDER BY seq"
    )
    assert [tuple(row) for row in rows] == [
        (1, "answered", blocked),
        (2, "answered", None),
        (3, "delivered", None),
    ]


# -- query plans -----------------------------------------------------------------------------

HOT_QUERIES = {
    "recent_turns": lambda conn: store.recent_turns(conn, "ses_a", 3),
    "recent_turns_within": lambda conn: store.recent_turns_within(conn, "ses_a", 100),
    "turn_for_update": lambda conn: store.turn_for_update(conn, 0, 100),
    "open_session_for_chat": lambda conn: store.open_session_for_chat(conn, 1),
    "undelivered_turns": lambda conn: store.undelivered_turns(conn),
}


@pytest.mark.parametrize("query", sorted(HOT_QUERIES))
async def test_hot_queries_read_through_an_index(db, query):
    """The queries every turn or start-up runs use an index: no full table scan and no sort of
    the whole table, so their cost does not grow with the history."""
    statements: list[str] = []
    await db.reader.connection.set_trace_callback(statements.append)
    try:
        await HOT_QUERIES[query](db.reader)
    finally:
        await db.reader.connection.set_trace_callback(None)
    assert statements, "the store method ran no SQL"

    for statement in statements:
        plan = [row["detail"] for row in await db.fetchall("EXPLAIN QUERY PLAN " + statement)]
        assert any("INDEX" in detail for detail in plan), plan
        for detail in plan:
            if detail.startswith("SCAN"):
                assert "USING" in detail, f"full scan in {plan} for {statement}"
            assert "TEMP B-TREE" not in detail, f"sort in {plan} for {statement}"


async def test_a_turn_search_keeps_the_newest_of_equally_good_matches(db):
    """When more turns match a query equally well than the limit keeps, the newest are kept,
    best first: the search's cut and its order agree ("ties: the newer turn")."""
    await _new_session(db, "ses_a")
    same = "We moored the kayak by the yellow boathouse."
    await _append(db, *(_turn("ses_a", seq, user_text=same) for seq in range(1, 13)))
    for seq in range(13, 16):  # committed apart: the index has segments of both ages
        await _append(db, _turn("ses_a", seq, user_text=same))

    [hits] = await db.read(
        partial(store.search_turn_texts, session_id="ses_a", queries=["kayak"], limit=4)
    )

    assert [turn.seq for turn, _ in hits] == [15, 14, 13, 12]
    assert len({score for _, score in hits}) == 1
