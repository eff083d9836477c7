"""bench/postgres_schema.py: a benchmark's backend options, and its fresh schema on the real
server, dropped after."""

from __future__ import annotations

import argparse

import pytest

from bench.postgres_schema import fresh_schema, parse_with_backend


def test_a_postgres_run_needs_a_server_and_sqlite_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """--backend sqlite (the default) needs no server; postgres or both without a URL is a
    usage error; the URL is --postgres-url, else AGENT_TEST_POSTGRES_URL."""
    monkeypatch.delenv("AGENT_TEST_POSTGRES_URL", raising=False)
    args = parse_with_backend(argparse.ArgumentParser(), [])
    assert (args.backend, args.postgres_url) == ("sqlite", None)
    with pytest.raises(SystemExit) as refused:
        parse_with_backend(argparse.ArgumentParser(), ["--backend", "both"])
    assert refused.value.code == 2
    given = ["--backend", "postgres", "--postgres-url", "postgresql://a@h/d"]
    assert parse_with_backend(argparse.ArgumentParser(), given).postgres_url == "postgresql://a@h/d"
    monkeypatch.setenv("AGENT_TEST_POSTGRES_URL", "postgresql://b@h/d")
    args = parse_with_backend(argparse.ArgumentParser(), ["--backend", "both"])
    assert args.postgres_url == "postgresql://b@h/d"


@pytest.mark.postgres
def test_a_fresh_schema_is_the_search_path_and_is_dropped_after(postgres_url: str) -> None:
    """The connection string yielded writes into the new, empty schema (one left by a run cut
    short is replaced); the schema is gone after the block."""
    psycopg = pytest.importorskip("psycopg", reason="postgres: the `postgres` extra is missing")
    with fresh_schema(postgres_url, "Test-Run") as conninfo:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("CREATE TABLE left_over (x INTEGER)")
    with fresh_schema(postgres_url, "Test-Run") as conninfo:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            [(schema,)] = conn.execute("SELECT current_schema()").fetchall()
            assert schema == "bench_test_run"
            conn.execute("CREATE TABLE left_over (x INTEGER)")  # the first one is gone
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'bench_test_run'"
        ).fetchone()
        assert found == (0,)
