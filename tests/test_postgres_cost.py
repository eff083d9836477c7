"""``bench/postgres_cost.py``: a tiny run on the real server, and one line without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import postgres_cost
from bench.locomo_texts import FALLBACK_TEXTS
from tests.lane_crash_worker import database_url


async def test_without_a_server_it_skips_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGENT_TEST_POSTGRES_URL", raising=False)
    assert await postgres_cost.main(["--quick"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [postgres_cost._NO_SERVER]


@pytest.mark.postgres
async def test_a_tiny_run_measures_every_row_against_the_floor(
    postgres_url: str, tmp_path: Path
) -> None:
    lines = await postgres_cost.measure(
        database_url(postgres_url), tmp_path, FALLBACK_TEXTS, rounds=1, per_round=3
    )
    table = [line for line in lines if line.startswith("| ") and "ms" not in line]
    assert len(table) == 7
    assert table[0].startswith("| **floor**")
    assert table[0].endswith("| 1.00x | 1.00x |")
    for line in table:
        p50, p99 = (float(cell) for cell in line.split("|")[2:4])
        assert 0 < p50 <= p99
