"""``bench/semantic_cost.py``: a tiny run times replied turns with and without the extra."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import semantic_cost
from bench.locomo_texts import FALLBACK_TEXTS


async def test_a_tiny_run_times_each_lane_every_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = semantic_cost.default_model()
    if model is None:
        pytest.skip("the semantic extra is not installed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    got = await semantic_cost.run(
        tmp_path, model, FALLBACK_TEXTS, history=30, rounds=2, per_round=3
    )
    assert {name: len(ms) for name, ms in got.items()} == {"lexical": 6, "semantic": 6}
    assert all(ms > 0 for times in got.values() for ms in times)
    lines = semantic_cost.report(got)
    assert [line.split(" | ")[0] for line in lines[2:4]] == ["| lexical", "| semantic"]
    assert lines[-1].startswith("\nsemantic p50 / lexical p50: ")
