"""bench/throughput_postgres.py: skipped in one line without a server; the server's processes
whose CPU counts for a run (the real PostgreSQL server). The measurement itself runs the real
workers: ``python -m bench.throughput_postgres --quick``."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.throughput_postgres import main, postgres_cpu_pids


def test_without_a_server_it_is_skipped_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGENT_TEST_POSTGRES_URL", raising=False)
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert out == "throughput on PostgreSQL: skipped, AGENT_TEST_POSTGRES_URL is not set\n"


@pytest.mark.postgres
def test_the_run_counts_its_own_backends_and_the_server_processes(postgres_url: str) -> None:
    psycopg = pytest.importorskip("psycopg", reason="postgres: the `postgres` extra is missing")
    with (
        psycopg.connect(postgres_url, application_name="bench_mine") as mine,
        psycopg.connect(postgres_url, application_name="someone_else") as other,
    ):
        [(my_pid,)] = mine.execute("SELECT pg_backend_pid()").fetchall()
        [(other_pid,)] = other.execute("SELECT pg_backend_pid()").fetchall()
        pids = postgres_cpu_pids(postgres_url, "bench_mine")
    assert my_pid in pids
    assert other_pid not in pids
    assert all(Path(f"/proc/{pid}").exists() for pid in pids[:1])  # the postmaster
    assert len(pids) > 2  # the server's own processes (WAL writer, checkpointer, ...)
