"""The real bot on PostgreSQL, killed and cut off from its server (issue 18, section 4).

* :class:`~agent.db.postgres.PostgresDatabase` meets dead connections (the server closed them:
  ``pg_terminate_backend`` here, a restart in production): a read or write that had not begun
  runs on a fresh connection; one cut off mid-transaction fails as
  :class:`~agent.errors.DatabaseUnwritable` (the refusal :mod:`agent.chat.storage_backlog`
  holds work for) with nothing committed; a chat lock asked on a dead connection is asked on
  another; no connection within the pool's timeout (the server refuses this role's logins) is
  that refusal after one timeout, logged once, and the pool reconnects once the server lets it.
* ``run_bot.py`` on PostgreSQL (``AGENT_DATABASE_URL``, a fresh schema), SIGKILLed at random
  moments mid-conversation and restarted: every update the fake Bot API saw confirmed is one
  turn, nothing is doubled, every message is answered (a second copy of a reply only for a
  kill between its send and its record, DESIGN.md I4).
* The PostgreSQL server itself restarted under the running bot (``pg_ctlcluster ... restart -m
  immediate``): only with ``AGENT_TEST_POSTGRES_RESTART=1`` (``.ci/run`` sets it), as it
  restarts the server every test on this machine shares. The bot logs the outage, keeps what it
  could not journal unconfirmed, reconnects and loses nothing.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agent.chat.storage_backlog import APOLOGY
from agent.db.transaction import Transaction
from agent.errors import DatabaseUnwritable
from tests.bot_harness import BOT_USERNAME, TOKEN_SECRET, FakeChats
from tests.conftest import Launch
from tests.fake_bot_api import FakeBotApi
from tests.lane_crash_worker import database_url
from tests.postgres_server import CLUSTER, RESTART_ALLOWED, restart_immediately

pytestmark = pytest.mark.postgres

CHATS = (301, 302, 303)
#: How long the final run may take to answer everything left.
SETTLE_TIMEOUT = 90.0


@pytest.fixture
def api() -> Iterator[FakeBotApi]:
    """A fake Bot API of a bot of its own: on PostgreSQL the leader lock is the bot's (its id)
    across the whole database, so that bots of other test runs on the server are no rivals."""
    token = f"{random.SystemRandom().randrange(10**9, 10**10)}:{TOKEN_SECRET}"
    with FakeBotApi(token, username=BOT_USERNAME) as fake:
        yield fake


def rows(conninfo: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one query on the test's schema (the bot may be running)."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        return list(conn.execute(sql, params).fetchall())


def terminate(conninfo: str, application_name: str) -> int:
    """Have the server close every connection named ``application_name``; return how many."""
    ((closed,),) = rows(
        conninfo,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE application_name = %s",
        (application_name,),
    )
    return int(closed)


async def test_dead_pooled_connections_are_replaced_and_a_lost_write_is_a_refusal(
    postgres_url: str,
) -> None:
    from agent.db.postgres import PostgresDatabase

    # Its connections named, so that only they are closed (others share the server).
    name = f"faults-{uuid.uuid4().hex[:12]}"
    async with PostgresDatabase(f"{postgres_url} application_name={name}", min_size=2) as db:
        await db.write(lambda tx: tx.execute("CREATE TABLE t (n INTEGER)"))
        for _ in range(3):
            # Every connection of the database, idle in the pools, closed by the server.
            closed = terminate(postgres_url, name)
            assert closed >= 2
            await db.write(lambda tx: tx.execute("INSERT INTO t VALUES (1)"))
            assert await db.fetchall("SELECT n FROM t")
            assert await db.read(lambda snap: snap.fetchall("SELECT n FROM t"))
            async with db.snapshot() as snap:
                assert await snap.fetchall("SELECT n FROM t")

        async def cut_off(tx: Transaction) -> None:
            await tx.execute("INSERT INTO t VALUES (2)")
            await tx.execute("SELECT pg_terminate_backend(pg_backend_pid())")

        with pytest.raises(DatabaseUnwritable, match="unreachable"):
            await db.write(cut_off)
        assert [row["n"] for row in await db.fetchall("SELECT n FROM t")] == [1, 1, 1]


async def test_a_chat_lock_on_a_dead_pooled_connection_is_asked_on_another(
    postgres_url: str,
) -> None:
    from agent.db.postgres_locks import PostgresChatLocks

    name = f"faults-{uuid.uuid4().hex[:12]}"
    async with PostgresChatLocks(f"{postgres_url} application_name={name}", name) as locks:
        async with locks.hold(7):
            pass
        for _ in range(3):
            closed = terminate(postgres_url, name)
            assert closed >= 1
            async with locks.hold(7):
                pass


async def test_a_server_that_refuses_connections_is_a_refusal_within_the_timeout(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """No connection within the timeout (here the server refuses this role's logins; a server
    down refuses them all): reads and writes fail as DatabaseUnwritable after one timeout, not
    one per pooled connection, the outage is logged once and its end once."""
    import psycopg
    from psycopg import sql

    from agent.db.postgres import PostgresDatabase

    name = f"faults_{uuid.uuid4().hex[:12]}"
    role = sql.Identifier(name)
    options = str(psycopg.conninfo.conninfo_to_dict(postgres_url)["options"])
    schema = sql.Identifier(options.split("=")[-1])  # "-c search_path=<schema>"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'faults'").format(role))
        admin.execute(sql.SQL("GRANT ALL ON SCHEMA {} TO {}").format(schema, role))
    url = f"{postgres_url} user={name} password=faults"
    try:
        async with PostgresDatabase(url, timeout=1.0) as db:
            await db.write(lambda tx: tx.execute("CREATE TABLE t (n INTEGER)"))
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                admin.execute(sql.SQL("ALTER ROLE {} NOLOGIN").format(role))
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                    (name,),
                )
            for attempt in (
                db.write(lambda tx: tx.execute("INSERT INTO t VALUES (1)")),
                db.fetchall("SELECT n FROM t"),
                db.read(lambda snap: snap.fetchall("SELECT n FROM t")),
            ):
                began = time.monotonic()
                with pytest.raises(DatabaseUnwritable, match="unreachable"):
                    await attempt
                assert time.monotonic() - began < 5.0
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                admin.execute(sql.SQL("ALTER ROLE {} LOGIN").format(role))
            deadline = time.monotonic() + 30
            while True:
                try:
                    await db.write(lambda tx: tx.execute("INSERT INTO t VALUES (2)"))
                    break
                except DatabaseUnwritable:
                    assert time.monotonic() < deadline, "the pool never reconnected"
            assert [row["n"] for row in await db.fetchall("SELECT n FROM t")] == [2]
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP OWNED BY {}").format(role))
            admin.execute(sql.SQL("DROP ROLE {}").format(role))
    outage = [r.getMessage() for r in caplog.records if r.name == "agent.db.postgres"]
    assert sum("is unreachable" in m for m in outage) == 1, outage
    assert sum("is reachable again" in m for m in outage) == 1


def _replies(api: FakeBotApi, chats: FakeChats, sent: list[tuple[int, int, int]]) -> list[int]:
    """Return how many answers each sent message got."""
    return [len(chats.answers_to(chat, message)) for chat, _, message in sent]


def _check_turns(
    conninfo: str, sent: list[tuple[int, int, int]], api: FakeBotApi, *, final: bool = False
) -> None:
    """Every confirmed update is in the journal (I1), no message is two turns (I3), and at the
    end (``final``) every message is one."""
    confirmed = api.confirmed_update_ids
    journaled = {row[0] for row in rows(conninfo, "SELECT update_id FROM inbound_updates")}
    assert confirmed <= journaled, f"confirmed, never journaled: {sorted(confirmed - journaled)}"
    counts = dict(
        rows(
            conninfo,
            "SELECT update_id, count(*) FROM conversation_turns WHERE update_id IS NOT NULL"
            " GROUP BY update_id",
        )
    )
    assert all(n == 1 for n in counts.values()), f"turns doubled: {counts}"
    if final:
        missing = [update for _, update, _ in sent if update not in counts]
        assert not missing, f"updates without their turn: {missing}"


def _sent_unrecorded(
    conninfo: str, chats: FakeChats, sent: list[tuple[int, int, int]]
) -> set[tuple[int, int]]:
    """The messages whose reply the user got while the database had not recorded it as
    delivered: after a kill, the only replies I4 lets the next start send again."""
    unrecorded = {
        row[0]
        for row in rows(
            conninfo,
            "SELECT update_id FROM conversation_turns"
            " WHERE status != 'delivered' AND update_id IS NOT NULL",
        )
    }
    return {
        (chat, message)
        for chat, update, message in sent
        if update in unrecorded and chats.answers_to(chat, message)
    }


def _settle(
    api: FakeBotApi, chats: FakeChats, sent: list[tuple[int, int, int]], conninfo: str
) -> None:
    """Wait until every message is answered and confirmed and its reply recorded."""
    ids = {update for _, update, _ in sent}

    def done(fake: FakeBotApi) -> bool:
        if not (ids <= fake.confirmed_update_ids and all(_replies(fake, chats, sent))):
            return False
        (pending,) = rows(
            conninfo, "SELECT count(*) FROM conversation_turns WHERE status != 'delivered'"
        )[0]
        return pending == 0

    api.wait_for(done, SETTLE_TIMEOUT, "the bot did not answer everything")


@pytest.mark.crash
def test_the_bot_on_postgres_killed_mid_conversation_loses_and_doubles_nothing(
    api: FakeBotApi, chats: FakeChats, launch: Launch, postgres_url: str
) -> None:
    rng = random.Random(os.environ.get("CRASH_SEED"))
    url = database_url(postgres_url)
    sent: list[tuple[int, int, int]] = []  # (chat, update id, message id)
    kills = 5
    caught = 0  # kills that left messages of the burst unanswered
    in_flight: set[tuple[int, int]] = set()  # replies sent, not recorded, when a kill came
    for cycle in range(kills):
        bot = launch(api, token=api.token, AGENT_DATABASE_URL=url, AGENT_LOG_LEVEL="INFO")
        bot.wait_until_polling(api)
        burst = []
        for n in range(12):
            chat = CHATS[n % len(CHATS)]
            update, message = chats.send(chat, f"cycle {cycle} message {n}: my cat is Tom")
            burst.append((chat, update, message))
        sent += burst
        # Mid-conversation: once the bot has answered some of the burst.
        api.wait_for(lambda fake, b=burst: any(_replies(fake, chats, b)), 30.0, "no answer")
        time.sleep(rng.uniform(0.0, 0.15))
        bot.kill()
        caught += not all(_replies(api, chats, sent))
        in_flight |= _sent_unrecorded(postgres_url, chats, sent)
        _check_turns(postgres_url, sent, api)
    assert caught, "no kill landed mid-conversation"
    bot = launch(api, token=api.token, AGENT_DATABASE_URL=url, AGENT_LOG_LEVEL="INFO")
    bot.wait_until_polling(api)
    _settle(api, chats, sent, postgres_url)
    bot.stop()
    _check_turns(postgres_url, sent, api, final=True)
    answers = _replies(api, chats, sent)
    assert all(n >= 1 for n in answers)
    # A second copy only of a reply a kill caught between its send and its record (I4): one
    # per chat in flight at most, and only those.
    doubled = {
        (chat, message) for (chat, _, message), n in zip(sent, answers, strict=True) if n > 1
    }
    assert doubled <= in_flight, f"replies doubled outside a kill's window: {doubled - in_flight}"
    assert sum(n - 1 for n in answers) <= kills * len(CHATS), f"replies doubled: {answers}"
    (turns,) = rows(postgres_url, "SELECT count(*) FROM conversation_turns")[0]
    assert turns == len(sent)


@pytest.mark.skipif(
    not RESTART_ALLOWED,
    reason="restarts the shared PostgreSQL server: set AGENT_TEST_POSTGRES_RESTART=1",
)
def test_the_postgres_server_restarted_under_the_bot_loses_nothing(
    api: FakeBotApi, chats: FakeChats, launch: Launch, postgres_url: str
) -> None:
    """Restarted (every pooled connection dead), then stopped for a while: messages that come
    while it is down stay unconfirmed at Telegram until the bot can journal them; the bot logs
    the outage and its end, and answers every message once."""
    url = database_url(postgres_url)
    # Taking a connection waits 2 s for the server before the operation is refused.
    env = {"AGENT_DATABASE_URL": url, "AGENT_LOG_LEVEL": "INFO", "AGENT_DB_LOCK_TIMEOUT": "2"}
    bot = launch(api, token=api.token, **env)
    bot.wait_until_polling(api)
    sent: list[tuple[int, int, int]] = []

    def burst(label: str) -> set[int]:
        ids = set()
        for n in range(6):
            chat = CHATS[n % len(CHATS)]
            update, message = chats.send(chat, f"{label} {n}")
            sent.append((chat, update, message))
            ids.add(update)
        return ids

    burst("before the restart")
    _settle(api, chats, sent, postgres_url)
    restart_immediately()
    burst("after the restart")
    _settle(api, chats, sent, postgres_url)
    subprocess.run([*CLUSTER, "stop", "-m", "immediate"], check=True, timeout=120)
    try:
        while_down = burst("while the server is down")
        deadline = time.monotonic() + 30
        while "is unreachable" not in bot.stderr and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "is unreachable" in bot.stderr, "the outage was not logged"
        time.sleep(1.0)
        assert not while_down & api.confirmed_update_ids, "confirmed before it was journaled"
    finally:
        subprocess.run([*CLUSTER, "start"], check=True, timeout=120)
    _settle(api, chats, sent, postgres_url)
    assert bot.alive, "the bot died with the server"
    assert "is reachable again" in bot.stderr, "the end of the outage was not logged"
    bot.stop()
    _check_turns(postgres_url, sent, api, final=True)
    answers = [
        [call for call in chats.answers_to(chat, message) if call.text != APOLOGY]
        for chat, _, message in sent
    ]
    assert all(len(calls) == 1 for calls in answers), f"not answered once: {answers}"
    (turns,) = rows(postgres_url, "SELECT count(*) FROM conversation_turns")[0]
    assert turns == len(sent)
