"""Open a lane and hydrate a one-session database (issue 20, bar 5), beside another tree.

Run ``python -m bench.open_cost`` from the repository root; ``--before PATH`` names another
checkout of the project (the tree before a change, e.g. ``git archive`` of ``main`` unpacked in
a temporary directory) to measure in the same run. One private session per history length is
bulk-filled through the store (``bench.lane_cost.fill``, the real state fold of its last
turns), then hydrated once so that its checkpoint file is written. Then, round by round, each
tree gets a fresh process (``PYTHONPATH`` = that tree) per history length that times
``open_lane`` + ``hydrate`` + ``shutdown`` of that database ``--starts`` times (the first start
of a process, which pays the imports' lazy work, is reported apart); the trees alternate, the
one that goes first swapping every round, so that a machine slowing down for a while slows
both. Prints the table of p50s; writes nothing. Tested by ``tests/test_open_cost.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import ROOT, lane_settings, machine, temporary_workdir
from bench.locomo_texts import DATA
from bench.locomo_texts import utterances as texts_of

__all__ = ["child", "main", "measure", "report", "run"]

_CHAT = 21
_FOLD_LAST = 5_000


async def _fill(workdir: Path, size: int, texts: list[str]) -> None:
    from agent.app.wiring import build_lane, open_database
    from bench.lane_cost import fill

    settings = lane_settings(workdir, f"open-{size}", "process")
    db = await open_database(settings)
    lane = build_lane(settings, db)
    await fill(db, settings, [(_CHAT, size)], texts, fold_last=_FOLD_LAST)
    await lane.hydrate()  # writes the checkpoint file
    await lane.shutdown()


async def child(workdir: Path, size: int, starts: int) -> dict[str, list[float]]:
    """Time ``starts`` starts of the lane over the filled database, in this process (ms)."""
    from agent.app.wiring import open_lane

    logging.getLogger("agent").setLevel(logging.ERROR)
    settings = lane_settings(workdir, f"open-{size}", "full")
    got: dict[str, list[float]] = {"open": [], "hydrate": [], "shutdown": []}
    for _ in range(starts):
        began = time.perf_counter()
        lane = await open_lane(settings)
        opened = time.perf_counter()
        report = await lane.hydrate()
        done = time.perf_counter()
        await lane.shutdown()
        stopped = time.perf_counter()
        if report.sessions != 1 or report.rebuilt:
            raise RuntimeError(f"unexpected start: {report}")
        got["open"].append((opened - began) * 1000)
        got["hydrate"].append((done - opened) * 1000)
        got["shutdown"].append((stopped - done) * 1000)
    return got


def measure(tree: Path, workdir: Path, size: int, starts: int) -> dict[str, list[float]]:
    """Run :func:`child` in a fresh process of ``tree``'s code; return its timings."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(  # noqa: S603 (this interpreter, our own code)
        [sys.executable, "-c", _child_source(), str(workdir), str(size), str(starts)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, list[float]] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# The child runs in the tree under test, which may not have this module: its code travels as
# text (it needs only ``bench.harness.lane_settings`` and ``agent.app.wiring`` there).
_CHILD_HEAD = (
    "import asyncio, json, logging, sys, time\n"
    "from pathlib import Path\n"
    "from bench.harness import lane_settings\n"
)


def _child_source() -> str:
    import inspect

    return (
        _CHILD_HEAD
        + inspect.getsource(child)
        + (
            "print(json.dumps(asyncio.run(child(Path(sys.argv[1]), int(sys.argv[2]),"
            " int(sys.argv[3])))))\n"
        )
    )


def _p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def _fill_all(workdir: Path, sizes: list[int], texts: list[str]) -> None:
    for size in sizes:
        await _fill(workdir, size, texts)


Samples = dict[tuple[str, int], dict[str, list[float]]]


def run(
    workdir: Path, trees: dict[str, Path], sizes: list[int], *, rounds: int, starts: int,
    texts: list[str],
) -> Samples:  # fmt: skip
    """Fill one database per size in ``workdir``, then time the starts of each tree over it,
    alternated round by round; return ``(tree, size) -> {"first", "open", "hydrate",
    "total"}`` in ms (``first``: the first start of each process, not in the others)."""
    asyncio.run(_fill_all(workdir, sizes, texts))
    got: Samples = {
        (name, size): {"first": [], "open": [], "hydrate": [], "total": []}
        for name in trees
        for size in sizes
    }
    for round_ in range(rounds):
        order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
        for size in sizes:
            for name in order:
                times = measure(trees[name], workdir, size, starts)
                into = got[(name, size)]
                into["first"].append(times["open"][0] + times["hydrate"][0])
                opens, hydrates = times["open"][1:], times["hydrate"][1:]
                into["open"] += opens
                into["hydrate"] += hydrates
                into["total"] += [o + h for o, h in zip(opens, hydrates, strict=True)]
        print(f"round {round_ + 1} of {rounds} done", file=sys.stderr)
    return got


def report(samples: Samples) -> list[str]:
    """The table of p50s, a row per tree and size."""
    lines = [
        "| tree | turns | open p50 ms | hydrate p50 ms | open + hydrate p50 ms"
        " | first start of a process p50 ms |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (name, size), got in sorted(samples.items(), key=lambda item: (item[0][1], item[0][0])):
        lines.append(
            f"| {name} | {size:,} | {_p50(got['open']):.2f} | {_p50(got['hydrate']):.2f}"
            f" | {_p50(got['total']):.2f} | {_p50(got['first']):.2f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.open_cost", description=__doc__)
    parser.add_argument("--before", type=Path, help="another checkout to measure alongside")
    parser.add_argument("--sizes", default="100,1000,10000,100000", help="history lengths")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--starts", type=int, default=21, help="starts per process")
    parser.add_argument("--data", type=Path, default=DATA, help="the LoCoMo JSON file")
    args = parser.parse_args(argv)
    # Here, not in run(): a test calling run() must leave the process's loggers as they were.
    logging.getLogger("agent").setLevel(logging.ERROR)  # "checkpoint missing": expected here
    sizes = [int(size) for size in args.sizes.split(",")]
    trees = {"after": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    with temporary_workdir(".bench-open-") as workdir:
        print(f"machine: {machine(workdir)}", file=sys.stderr)
        samples = run(
            workdir, trees, sizes, rounds=args.rounds, starts=args.starts,
            texts=texts_of(args.data),
        )  # fmt: skip
    print("\n".join(report(samples)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
