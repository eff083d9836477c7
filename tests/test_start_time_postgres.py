"""bench/start_time_postgres.py: the start-time fill on the real PostgreSQL server (rows of every
table the bot reads at its first reply, checkpoint rows one turn behind where the SQLite fill's
file is, the schema dropped after) and the bot's URL of that schema."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agent.config import Settings
from agent.memory.conversation_checkpoint import CheckpointWriter
from bench.locomo_texts import FALLBACK_TEXTS
from bench.start_time import TEMPLATE_TURNS, make_template, session_id_of

pytestmark = pytest.mark.postgres


def test_the_fill_copies_every_table_and_the_schema_is_dropped(
    tmp_path: Path, postgres_url: str
) -> None:
    psycopg = pytest.importorskip("psycopg", reason="postgres: the `postgres` extra is missing")
    from bench.start_time_postgres import PostgresBackend

    template = asyncio.run(make_template(tmp_path, FALLBACK_TEXTS))
    backend = PostgresBackend(os.environ["AGENT_TEST_POSTGRES_URL"])
    home = tmp_path / "postgres-300"
    home.mkdir()
    backend.fill(home, template, 300)
    env = backend.env(home)
    assert env["AGENT_CHECKPOINT_DIR"] is None  # the bot runs as PostgreSQL's default: rows only
    url = env["AGENT_DATABASE_URL"]
    assert Settings(_env_file=None, database_url=url).database_url is not None  # type: ignore[call-arg]
    conninfo = backend._conninfo(home)
    with psycopg.connect(conninfo) as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM conversation_sessions),"
            " (SELECT count(DISTINCT session_id) FROM conversation_session_parts),"
            " (SELECT count(*) FROM conversation_turns),"
            " (SELECT count(*) FROM conversation_turn_search),"
            " (SELECT count(*) FROM session_checkpoints),"
            " (SELECT sum(turns) FROM conversation_turn_search_totals)"
        ).fetchone()
        assert counts == (
            300,
            300,
            300 * TEMPLATE_TURNS,
            300 * TEMPLATE_TURNS,
            300,
            300 * TEMPLATE_TURNS,
        )
        rows = dict(
            conn.execute(
                "SELECT session_id, turn_count FROM session_checkpoints"
                " WHERE session_id IN (%s, %s)",
                (session_id_of(0), session_id_of(101)),
            ).fetchall()
        )
        assert rows == {session_id_of(0): TEMPLATE_TURNS, session_id_of(101): TEMPLATE_TURNS - 1}
        [(snapshot,)] = conn.execute(
            "SELECT snapshot::text FROM session_checkpoints WHERE session_id = %s",
            (session_id_of(7),),
        ).fetchall()
        parsed = CheckpointWriter.parse(snapshot.encode(), session_id=session_id_of(7), name="row")
        assert parsed.turn_count == TEMPLATE_TURNS
    backend.forget_records(home)
    with psycopg.connect(conninfo) as conn:
        [(unknown,)] = conn.execute(
            "SELECT count(*) FROM conversation_sessions WHERE checkpoint_seq IS NULL"
        ).fetchall()
        assert unknown == 300
    backend.drop(home)
    with psycopg.connect(postgres_url) as conn:
        [(left,)] = conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s",
            ("bench_start_postgres_300",),
        ).fetchall()
        assert left == 0
