"""Concierge recall: does the offline concierge quote the right line, or say it was not told?

Run ``python bench/concierge_recall.py [--quick] [--no-write]`` from the repository root. It
feeds the LoCoMo conversations (``../shared/data/locomo-dev.json``, read in place, never copied)
through the real turn path exactly as ``bench/memory_quality.py`` does (one group session per
conversation, both speakers members, the bot silent), then for each question builds the packet a
reply would get (``MemoryInspector.context``, default budget of 2,000 tokens) and asks the
concierge's recall (:func:`agent.engines.rule_recall.recollect`) for its best candidate and score.

For every threshold of a sweep it counts, over the questions of categories 1-4 (answerable):

* **right**: the score reaches the threshold and the quoted line is an evidence utterance of the
  question, or contains its answer string (case-folded, punctuation removed);
* **wrong**: the score reaches the threshold and the line is neither;
* **not told**: the score is below the threshold (the concierge says "you haven't told me");

and over category 5 (adversarial: the premise is false) the share answered "not told". The
threshold kept in ``agent/engines/rule_recall.py`` (``RECALL_THRESHOLD``) is the one with the most
right minus wrong answers: a wrong quote costs what a right one gains. The table goes to
``BENCHMARKS.md`` (section "Concierge recall").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks_file import write_section  # noqa: E402
from memory_quality import DATA, _Clock, _evidence, _feed, _settings  # noqa: E402
from memory_quality_report import Conversation, norm  # noqa: E402

from agent.app.wiring import open_lane  # noqa: E402
from agent.engines.rule_recall import RECALL_THRESHOLD, recollect  # noqa: E402

THRESHOLDS = tuple(round(0.3 + 0.05 * n, 2) for n in range(14))  # 0.30 ... 0.95
BUDGET = 2000


@dataclass(frozen=True, slots=True)
class Outcome:
    """One question's best candidate: its score, and whether it is the right line."""

    category: int
    score: float
    right: bool


async def _sample(sample: dict[str, Any], index: int, workdir: Path) -> list[Outcome]:
    chat_id = -(2000 + index)
    place = {"db_path": workdir / f"{sample['sample_id']}.db", "database_url": None}
    clock = _Clock()
    lane = await open_lane(
        _settings(place, workdir / f"{sample['sample_id']}-cp", BUDGET), clock=clock
    )
    outcomes: list[Outcome] = []
    try:
        await lane.hydrate()
        seq_of = await _feed(lane, clock, sample, chat_id)
        conversation = Conversation(sample["sample_id"], chat_id, [])
        for qa in sample["qa"]:
            evidence = _evidence(qa.get("evidence", []), seq_of, conversation)
            answer = qa.get("answer")
            packet = await lane.inspector.context(chat_id, str(qa["question"]))
            question = str(qa["question"])
            found = None if packet is None else recollect(packet, question, personal=False)
            if found is None:
                outcomes.append(Outcome(int(qa["category"]), 0.0, False))
                continue
            said = norm(found.said)
            right = found.seq in evidence or (
                answer is not None and bool(norm(str(answer))) and norm(str(answer)) in said
            )
            outcomes.append(Outcome(int(qa["category"]), found.score, right))
    finally:
        await lane.shutdown()
    return outcomes


def _table(outcomes: list[Outcome], seconds: float, samples: list[str]) -> str:
    answerable = [o for o in outcomes if o.category != 5]
    adversarial = [o for o in outcomes if o.category == 5]
    singles = [o for o in outcomes if o.category == 4]

    def share(count: int, total: int) -> str:
        return f"{100 * count / total:.1f}%" if total else "-"

    lines = [
        "## Concierge recall",
        "",
        f"`python bench/concierge_recall.py` on LoCoMo ({', '.join(samples)}; "
        f"{len(outcomes)} questions, {len(answerable)} answerable; {seconds:.0f} s), packet "
        f"budget {BUDGET:,} tokens. For each question the offline concierge's recall "
        "(`agent/engines/rule_recall.py`) quotes its best line of the packet if its score "
        'reaches the threshold, else says "you haven\'t told me". *Right*: the quoted line is '
        "an evidence utterance or contains the answer; *wrong*: it is neither; *not told*: "
        "below the threshold; *(4)*: of the single-hop questions (one fact asked, the kind a "
        "user asks the concierge). Category 5 (adversarial, no answer exists): share answered "
        f'"not told". The threshold in use is **{RECALL_THRESHOLD}** (most right minus wrong).',
        "",
        "| threshold | right (1-4) | wrong (1-4) | not told (1-4) | right - wrong "
        "| right (4) | wrong (4) | not told (5) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for threshold in THRESHOLDS:
        quoted = [o for o in answerable if o.score >= threshold]
        right = sum(o.right for o in quoted)
        wrong = len(quoted) - right
        told_not = len(answerable) - len(quoted)
        honest = sum(o.score < threshold for o in adversarial)
        single = [o for o in quoted if o.category == 4]
        single_right = sum(o.right for o in single)
        mark = "**" if threshold == RECALL_THRESHOLD else ""
        lines.append(
            f"| {mark}{threshold:.2f}{mark} | {share(right, len(answerable))} "
            f"| {share(wrong, len(answerable))} | {share(told_not, len(answerable))} "
            f"| {share(right - wrong, len(answerable))} | {share(single_right, len(singles))} "
            f"| {share(len(single) - single_right, len(singles))} "
            f"| {share(honest, len(adversarial))} |"
        )
    return "\n".join(lines) + "\n"


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two conversations")
    parser.add_argument("--data", type=Path, default=DATA, help="the LoCoMo JSON file")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    args = parser.parse_args(argv)
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    if args.quick:
        samples = samples[:2]
    began = time.perf_counter()
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="concierge-recall-") as tmp:
        for index, sample in enumerate(samples):
            outcomes.extend(await _sample(sample, index, Path(tmp)))
            print(f"{sample['sample_id']}: done", file=sys.stderr)
    section = _table(outcomes, time.perf_counter() - began, [s["sample_id"] for s in samples])
    print(section)
    if not args.quick and not args.no_write:
        print(f"written to {write_section(section)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
