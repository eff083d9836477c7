"""Against what a user would otherwise pick: the lane beside the stores people use for bot memory.

Run ``python -m bench`` (the whole suite) or ``python -m bench.alternatives`` from the
repository root (``--quick``: a smaller run in seconds, printed only, the CI smoke run;
``--no-write``: print only). It rewrites the "Alternatives" section of ``BENCHMARKS.md`` and
draws ``docs/alternatives.png``.

The same turns (LoCoMo utterances, each answered with a short reply) go, side by side in one
run, to each store of :mod:`bench.alternative_stores`, set up as its documentation recommends:

* the lane: ``ConversationLane.on_turn`` (``open_lane``, durability ``full``);
* python-telegram-bot's ``PicklePersistence`` (one file, ``on_flush=True``), the conversation a
  list in ``chat_data``: ``update_chat_data`` + ``flush()`` after every turn;
* LangGraph's ``AsyncSqliteSaver`` under a ``StateGraph(MessagesState)`` (``add_messages``)
  whose one node appends the reply: one ``ainvoke`` per turn, a ``thread_id`` per chat;
* the OpenAI Agents SDK's ``SQLiteSession`` on a file: ``add_items`` (user + assistant) per turn;
* a JSON file of the whole history: ``json.dumps`` of the list + ``Path.write_text`` per turn.

For each, after 100, 1,000 and 10,000 turns of history (written at once, then timed):

* **per-turn cost**: p50 and p99 of a window of turns, timed in rounds that take turns across
  the stores, so that the ratios to the lane hold on a noisy machine;
* **hydration**: a fresh object opens the store and loads what the chat's next turn needs;
* **bytes on disk**;
* **durability** (:mod:`bench.store_durability`, in a child process): fsync-family syscalls per
  turn counted by strace, and kill -9 at random moments, after which the store must load and
  hold every turn the writer was told is saved.

LangGraph and the Agents SDK come with the ``bench`` extra; without it their rows are skipped
with a note (CI installs ``.[dev]`` only).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import statistics
import sys
import time
from collections import defaultdict
from itertools import count
from pathlib import Path
from typing import Any

from bench.alternative_stores import STORES, LaneStore, Store
from bench.benchmarks_file import write_section
from bench.harness import ROOT, machine, percentile, temporary_workdir
from bench.locomo_texts import DATA, utterances
from bench.plots import Panel, save_line_panels
from bench.store_durability import FSYNC_TURNS, KILL_WITHIN_S, SYNC_CALLS, durability

PLOT = ROOT / "docs" / "alternatives.png"

_WARM_UP = 3
_MIN_PER_ROUND = 2

#: What each store's results hold, by store class name.
Results = dict[str, dict[str, float]]


async def _timed_turn(store: Store, number: int, corpus: list[str]) -> float:
    began = time.perf_counter()
    await store.turn(number, corpus[(number * 7) % len(corpus)])
    return (time.perf_counter() - began) * 1000


async def measure(
    workdir: Path,
    kinds: list[type[Store]],
    corpus: list[str],
    size: int,
    *,
    rounds: int,
    per_round: int,
    round_budget_s: float,
    repeats: int,
) -> Results:
    """Per-turn cost, hydration and bytes on disk of each store after ``size`` turns.

    Each round times ``per_round`` turns of every store in turn, fewer (at least 2) for a store
    whose warm-up turns say they would take more than ``round_budget_s``. Then ``repeats``
    rounds of one cold open of every store.
    """
    began = time.perf_counter()
    stores = [kind(workdir / f"history-{size}" / kind.__name__) for kind in kinds]
    for store in stores:
        await store.fill(corpus, size)
    numbers = {store: count(size + 1) for store in stores}
    quota: dict[Store, int] = {}
    for store in stores:
        await store.open()
        warm = [await _timed_turn(store, next(numbers[store]), corpus) for _ in range(_WARM_UP)]
        affordable = int(round_budget_s * 1000 / statistics.median(warm))
        quota[store] = max(_MIN_PER_ROUND, min(per_round, affordable))
    samples: dict[Store, list[float]] = defaultdict(list)
    for _ in range(rounds):
        for store in stores:
            for _ in range(quota[store]):
                samples[store].append(await _timed_turn(store, next(numbers[store]), corpus))
    for store in stores:
        await store.close()
    hydrations: dict[Store, list[float]] = defaultdict(list)
    for _ in range(repeats):
        for store in stores:
            fresh = type(store)(store.directory)
            opened = time.perf_counter()
            await fresh.open()
            hydrations[store].append((time.perf_counter() - opened) * 1000)
            await fresh.close()
    results = {
        type(store).__name__: {
            "p50": statistics.median(samples[store]),
            "p99": percentile(samples[store], 0.99),
            "n": len(samples[store]),
            "hydrate": statistics.median(hydrations[store]),
            "bytes": store.disk_bytes(),
        }
        for store in stores
    }
    shutil.rmtree(workdir / f"history-{size}")
    elapsed = time.perf_counter() - began
    print(f"alternatives, {size:,} turns ({elapsed:.0f} s): {results}", file=sys.stderr)
    return results


# -- report --------------------------------------------------------------------------------------


def _table(
    results: dict[int, Results], kinds: list[type[Store]], key: str, *, ratio: bool = True
) -> list[str]:
    """One row per store, one column per history size; ``(x)`` is the ratio to the lane."""
    lines = [
        "| store | " + " | ".join(f"{size:,} turns" for size in results) + " |",
        "|---|" + "---:|" * len(results),
    ]
    lane = LaneStore.__name__
    for kind in kinds:
        cells = []
        for by_store in results.values():
            value = by_store[kind.__name__][key]
            cell = f"{value:,.2f}" if ratio else f"{value:,.0f}"
            if ratio and kind is not LaneStore:
                cell += f" ({value / by_store[lane][key]:.2f}x)"
            cells.append(cell)
        lines.append(f"| {kind.label} | " + " | ".join(cells) + " |")
    return lines


def _durability_table(found: dict[str, Any], kinds: list[type[Store]]) -> list[str]:
    lines = [
        "| store | fsync-family syscalls per turn | durable when the call returns"
        " | kill -9: store loads after | kill -9: saved turns missing, where it loads |",
        "|---|---:|---|---:|---:|",
    ]
    for kind in kinds:
        f = found[kind.__name__]
        if f["syncs"] is None:
            syncs, durable = "not counted", "?"
        else:
            syncs, durable = f"{f['syncs']:.1f}", "yes" if f["syncs"] >= 1 else "**no**"
        loads = f"{f['loads']} of {f['kills']}"
        lost = f"{f['lost']:,} (of {f['checked']:,} reported)" if f["loads"] else "(none loads)"
        lines.append(
            f"| {kind.label} | {syncs} | {durable}"
            f" | {loads if f['loads'] == f['kills'] else f'**{loads}**'}"
            f" | {f'**{lost}**' if f['lost'] else lost} |"
        )
    return lines


def report(
    results: dict[int, Results],
    found: dict[str, Any],
    traced: bool,
    kinds: list[type[Store]],
    plot: Path | None,
    *,
    rounds: int,
    per_round: int,
    repeats: int,
    kills: int,
    history: int,
) -> list[str]:
    """The section's tables and notes, below its title and machine line."""
    fewer = ", ".join(
        f"{kind.name} {results[size][kind.__name__]['n']:.0f} at {size:,}"
        for size in results
        for kind in kinds
        if results[size][kind.__name__]["n"] < rounds * per_round
    )
    return [
        "The same turns (LoCoMo utterances, each answered with a short reply) go, side by side"
        " in one run, to the lane and to what a user would otherwise pick for a bot's memory,"
        " each set up as its documentation recommends (SQLite settings as read from the store's"
        " own connection):",
        "",
        "| store | setup |",
        "|---|---|",
        *(f"| {kind.label} | {found[kind.__name__]['settings']} |" for kind in kinds),
        "",
        "Per-turn cost, p50 ms (in brackets: the ratio to the lane's at the same history):",
        "",
        *_table(results, kinds, "p50"),
        "",
        "Per-turn cost, p99 ms:",
        "",
        *_table(results, kinds, "p99"),
        "",
        f"Hydration, p50 ms of {repeats} cold opens: a fresh object opens the store and loads"
        " what the chat's next turn needs (the lane: `open_lane` + `hydrate`, its checkpoint;"
        " the others: the whole history):",
        "",
        *_table(results, kinds, "hydrate"),
        "",
        "Bytes on disk after the timed turns:",
        "",
        *_table(results, kinds, "bytes", ratio=False),
        "",
        *(
            [f"![per-turn cost and hydration against history]({plot.relative_to(ROOT)})", ""]
            if plot
            else []
        ),
        "Durable? Survives kill -9?",
        "",
        *_durability_table(found, kinds),
        "",
        "Each history is written at once: the lane's through the store with the real state fold"
        ' on every turn (as in "Flat in history"), LangGraph\'s as one `aupdate_state`, so one'
        " checkpoint where a bot that had lived through those turns would have written about"
        f" three per turn, each holding the whole history. Then {rounds} rounds time"
        f" {per_round} turns of every store in turn, after {_WARM_UP} untimed"
        + (f" (fewer for a slow store: {fewer})" if fewer else "")
        + "; the history grows by those turns. p99 is the nearest rank: the maximum below 100"
        " samples. The lane's `on_turn` does more than store the turn: it builds the reply's"
        " context packet (retrieval included), folds the session state and summary, and writes"
        " the checkpoint; the others store messages only, and the Agents SDK's `Runner` also"
        " reads the whole session (`get_items`, its hydration here) on every run."
        " python-telegram-bot's own default writes on its `update_interval` (60 s), not after"
        " every turn; LangGraph's beta `DeltaChannel` would store messages as deltas, but the"
        " documented `MessagesState` stores the whole list in every checkpoint.",
        "",
        (
            f"fsync: `strace -f` counts {', '.join(SYNC_CALLS)} over {FSYNC_TURNS} turns of each"
            f" store (a {history:,}-turn history), between two marker syscalls; durable when the"
            " call returns means at least one per turn (the stores here sync only their own"
            " files)."
            if traced
            else "fsync: not counted (no strace here); see the SQLite settings above."
        ),
        "",
        f"kill -9: {kills} times per store, a writer forked on a fresh copy of a {history:,}-turn"
        " store writes turns, reporting each one once the call that saved it has returned, and"
        f" is killed with SIGKILL at a random moment within {KILL_WITHIN_S * 1000:.0f} ms of its"
        " first report; then a fresh object opens the store and looks for the history and every"
        " reported turn (a store that does not load has lost them all). A kill leaves the"
        " operating system's page cache in place, so this tests whether a crash of the process"
        " tears the store; what a power cut leaves is what the fsync column answers.",
    ]


def _plot(results: dict[int, Results], kinds: list[type[Store]]) -> Path | None:
    def series(key: str) -> dict[str, list[tuple[float, float]]]:
        return {
            kind.name: [(size, by_store[kind.__name__][key]) for size, by_store in results.items()]
            for kind in kinds
        }

    return save_line_panels(
        PLOT,
        [
            Panel("Per-turn cost, p50", "ms", series("p50")),
            Panel("Hydration (cold open), p50", "ms", series("hydrate")),
        ],
        xlabel="turns in the chat's history",
        log_x=True,
        log_y=True,
        highlight=LaneStore.name,
    )


# -- main ----------------------------------------------------------------------------------------


def _available() -> list[type[Store]]:
    kinds = []
    for kind in STORES:
        module = kind.missing()
        if module is None:
            kinds.append(kind)
        else:
            print(
                f"alternatives: {kind.name} skipped, {module} is not installed"
                " (pip install -e '.[bench]')",
                file=sys.stderr,
            )
    return kinds


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.alternatives", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="a smaller run, printed only")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--data", type=Path, default=DATA, help="the LoCoMo JSON file")
    args = parser.parse_args(argv)
    logging.getLogger("agent").setLevel(logging.ERROR)  # "checkpoint missing": expected here
    corpus = utterances(args.data)
    kinds = _available()
    if args.quick:
        sizes, rounds, per_round, budget, repeats = [100, 300], 2, 5, 0.3, 2
        kills, history = 2, 100
    else:
        sizes, rounds, per_round, budget, repeats = [100, 1_000, 10_000], 5, 20, 2.0, 5
        kills, history = 25, 1_000
    started, load = time.perf_counter(), os.getloadavg()[0]
    with temporary_workdir(".bench-alternatives-") as workdir:
        where = machine(workdir)
        crashes = durability(workdir, kinds, kills, history, args.data)
        # The smoke run kills while it times (its timings are no figures); the full run after.
        early = asyncio.create_task(crashes) if args.quick else None
        results: dict[int, Results] = {}
        for size in sizes:
            results[size] = await measure(
                workdir, kinds, corpus, size,
                rounds=rounds, per_round=per_round, round_budget_s=budget, repeats=repeats,
            )  # fmt: skip
        found, traced = await (early or crashes)
    elapsed = time.perf_counter() - started
    write = not (args.no_write or args.quick)  # the file shows full runs only
    plot = _plot(results, kinds) if write else None
    body = report(
        results, found, traced, kinds, plot,
        rounds=rounds, per_round=per_round, repeats=repeats, kills=kills, history=history,
    )  # fmt: skip
    command = "python -m bench" + (" --quick" if args.quick else "")
    section = "\n".join(
        [
            "## Alternatives",
            "",
            f"`{command}` ({elapsed:.0f} s for this part) on {where}; the temporary directory is"
            f" next to the repository, on the same filesystem; load average {load:.1f} at the"
            " start (the cores are shared: compare ratios, not milliseconds, across runs).",
            "",
            *body,
        ]
    )
    print(section)
    if write:
        write_section(section + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
