"""``bench/turn_cost.py``: a tiny run measures the lane and the reference design alike."""

from __future__ import annotations

from pathlib import Path

import orjson

from bench import turn_cost
from bench.locomo_texts import FALLBACK_TEXTS


async def test_a_tiny_run_samples_both_designs_at_every_history(tmp_path: Path) -> None:
    samples = await turn_cost.run(tmp_path, FALLBACK_TEXTS, [20, 60], rounds=2, per_round=3)
    assert sorted(samples) == [20, 60]
    for got in samples.values():
        for design in ("lane", "reference"):
            sample = got[design]
            assert len(sample.wall) == len(sample.loop) == len(sample.written) == 6
            assert all(ms > 0 for ms in sample.wall)
            # Both write durably every turn: a turn of either writes some bytes.
            assert all(written > 0 for written in sample.written)
    lines = turn_cost.report(samples, rounds=2, per_round=3)
    assert lines[2].startswith("| 20 |")
    assert lines[3].startswith("| 60 |")
    assert sum(line.startswith("| ") and "(issue 20)" not in line for line in lines) >= 5


async def test_the_reference_logs_every_turn_and_replaces_its_checkpoint(tmp_path: Path) -> None:
    reference = turn_cost.ReferenceDesign(tmp_path / "ref", {"turn_count": 3})
    await reference.open([("hello", "hi"), ("how are you", "fine")])
    try:
        await reference.on_turn("I moved to Porto", "Noted.")
        assert reference.db is not None
        async with reference.db.execute("SELECT count(*) FROM turns") as cursor:
            assert await cursor.fetchone() == (3,)
        saved = orjson.loads(reference.path.read_bytes())
        assert saved["turn_count"] == 4
        assert saved["recent_turns"][-1]["user_text"] == "I moved to Porto"
        assert not reference.path.with_suffix(".tmp").exists()
    finally:
        await reference.close()
