"""Fixtures shared by the test-suite: real SQLite files and real checkpoint directories, the
real bot (``run_bot.py`` in a subprocess) against the fake Bot API, and a fresh schema on a
real PostgreSQL server for the tests marked ``postgres``."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from telegram import Bot

from agent.db import Database
from agent.memory import (
    CheckpointWriter,
    ConversationContextPacket,
    ConversationLane,
    InboundMessage,
    Reply,
)
from tests.bot_harness import BOT_USERNAME, TOKEN, BotProcess, FakeChats, bot_env
from tests.fake_bot_api import FakeBotApi

# Property tests (hypothesis): a moderate number of examples in CI; HYPOTHESIS_PROFILE=long for
# a torture run. No deadline: a turn fsyncs, and a loaded machine is slow, not wrong. The
# tests that share one lane across examples give each example its own chats and update ids,
# which is why the function-scoped-fixture health check is off.
_PROPERTY_SETTINGS = {
    "deadline": None,
    "database": None,  # nothing written into the checkout; a failure prints its example
    "print_blob": True,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}
settings.register_profile("ci", max_examples=60, **_PROPERTY_SETTINGS)
settings.register_profile("long", max_examples=2000, **_PROPERTY_SETTINGS)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


class EchoEngine:
    """A reply engine for memory tests: answers with the text and the turn it saw."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply(text=f"echo #{packet.turn_count + 1}: {message.text}", intent="echo")


@pytest.fixture(autouse=True)
def _embedded_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shell that points the bot at PostgreSQL must not point the tests there: a test that
    wants the server asks for ``postgres_url``."""
    monkeypatch.delenv("AGENT_DATABASE_URL", raising=False)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def checkpoint_dir(tmp_path: Path) -> Path:
    return tmp_path / "checkpoints"


@pytest.fixture
async def db(db_path: Path) -> AsyncIterator[Database]:
    """A migrated database in a real file, closed after the test."""
    async with Database(db_path) as database:
        yield database


@pytest.fixture
async def lane(db: Database, checkpoint_dir: Path) -> AsyncIterator[ConversationLane]:
    """A hydrated lane over the ``db`` fixture's file and a real checkpoint directory.

    A test that checks raw rows asks for ``db`` too: the same database the lane writes to.
    """
    memory_lane = ConversationLane(db, CheckpointWriter(checkpoint_dir))
    await memory_lane.hydrate()
    yield memory_lane
    await memory_lane.shutdown()


@pytest.fixture
def engine() -> EchoEngine:
    return EchoEngine()


# -- the real bot against the fake Bot API ------------------------------------------------

Launch = Callable[..., BotProcess]


@pytest.fixture
def api() -> Iterator[FakeBotApi]:
    """A fake Bot API on 127.0.0.1 that accepts only :data:`TOKEN`."""
    with FakeBotApi(TOKEN, username=BOT_USERNAME) as fake:
        yield fake


@pytest.fixture
def chats(api: FakeBotApi) -> FakeChats:
    return FakeChats(api)


@pytest.fixture
async def bot(api: FakeBotApi, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bot]:
    """A python-telegram-bot ``Bot`` on the fake ``api``, in PTB's timedelta mode: code under
    test reads ``RetryAfter.retry_after`` (an int with a deprecation warning otherwise)."""
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    async with Bot(api.token, base_url=api.base_url, base_file_url=api.base_file_url) as tg:
        yield tg


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    """Start ``run_bot.py`` runs in ``tmp_path`` (or a sub-directory); kill leftovers at the end.

    ``launch(api, **env)`` starts a bot on ``api`` with extra environment variables;
    ``workdir=``, ``token=``, ``args=``, ``stdin=`` and ``prefix=`` (see :class:`BotProcess`)
    change the rest.
    """
    started: list[BotProcess] = []

    def start(
        api: FakeBotApi | None = None,
        *,
        workdir: Path = tmp_path,
        token: str | None = TOKEN,
        args: tuple[str, ...] = (),
        stdin: int = subprocess.DEVNULL,
        prefix: tuple[str, ...] = (),
        **extra: str,
    ) -> BotProcess:
        workdir.mkdir(parents=True, exist_ok=True)
        env = bot_env(workdir, api, token=token, **extra)
        bot = BotProcess(workdir, env, args=args, name=f"run{len(started) + 1}", prefix=prefix)
        started.append(bot)
        return bot.start(stdin=stdin)

    yield start
    for bot in started:
        bot.ensure_dead()


@pytest.fixture
def polling_bot(api: FakeBotApi, launch: Launch) -> Callable[..., BotProcess]:
    """Start a bot on the fake and wait until it polls."""

    def start(**extra: str) -> BotProcess:
        bot = launch(api, **extra)
        bot.wait_until_polling(api)
        return bot

    return start


# -- PostgreSQL ---------------------------------------------------------------------------------
# Tests marked `postgres` run against a real server at AGENT_TEST_POSTGRES_URL (issue 18,
# section 4); without it they skip with one line, or fail when AGENT_REQUIRE_POSTGRES=1 (CI).

_NO_POSTGRES = "postgres: AGENT_TEST_POSTGRES_URL is not set"


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("postgres") is None or os.environ.get("AGENT_TEST_POSTGRES_URL"):
        return
    if os.environ.get("AGENT_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"{_NO_POSTGRES} and AGENT_REQUIRE_POSTGRES=1", pytrace=False)
    pytest.skip(_NO_POSTGRES)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A connection string to a fresh, empty schema of its own (the search path), dropped
    after the test; skips (or fails, see above) without ``AGENT_TEST_POSTGRES_URL``."""
    url = os.environ.get("AGENT_TEST_POSTGRES_URL")
    if not url:
        if os.environ.get("AGENT_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{_NO_POSTGRES} and AGENT_REQUIRE_POSTGRES=1", pytrace=False)
        pytest.skip(_NO_POSTGRES)
    import psycopg  # the `postgres` extra: imported only when a server is there
    from psycopg import sql

    schema = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield psycopg.conninfo.make_conninfo(url, options=f"-c search_path={schema}")
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
