"""``bench/open_cost.py``: a tiny run times the starts of two trees over the same databases."""

from __future__ import annotations

from pathlib import Path

from bench import open_cost
from bench.harness import ROOT
from bench.locomo_texts import FALLBACK_TEXTS


def test_a_tiny_run_times_every_start_of_each_tree_at_every_history(tmp_path: Path) -> None:
    trees = {"after": ROOT, "before": ROOT}
    samples = open_cost.run(tmp_path, trees, [20, 60], rounds=2, starts=3, texts=FALLBACK_TEXTS)
    assert sorted(samples) == [("after", 20), ("after", 60), ("before", 20), ("before", 60)]
    for got in samples.values():
        assert len(got["first"]) == 2  # one process per round
        assert len(got["open"]) == len(got["hydrate"]) == len(got["total"]) == 4
        assert all(ms > 0 for ms in got["total"])
    lines = open_cost.report(samples)
    assert [line.split(" | ")[:2] for line in lines[2:]] == [
        ["| after", "20"], ["| before", "20"], ["| after", "60"], ["| before", "60"],
    ]  # fmt: skip
