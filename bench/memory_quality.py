"""Memory quality: does the context packet carry what a later question needs?

Run ``python bench/memory_quality.py [--quick]`` from the repository root. It reads the LoCoMo
conversations from ``../shared/data/locomo-dev.json`` (CC BY-NC 4.0; read in place, never
copied into this repository), and for each conversation:

1. **Feeds it through the real turn path.** A lane is opened with ``agent.app.wiring.open_lane``
   on a temporary SQLite file, and every utterance goes through ``ConversationLane.on_turn``.
   One LoCoMo sample is one session of one group chat: both speakers are group members whose
   utterances are user messages (speaker name and user id kept), and the bot listens without
   replying (``wants_reply=False``), as in a group where it is not addressed. A shared image
   becomes ``[shares an image: <caption>]`` after the text. The lane's clock is the LoCoMo
   session's date (one minute per utterance), so turns carry their real dates.
2. **Asks each question at 1,000, 2,000 and 4,000 tokens.** A lane with that packet budget is
   opened over the same database and ``MemoryInspector.context(chat, question)`` builds the
   packet a reply to the question would get: the same retrieval path as ``on_turn``, without
   recording the question. The bench asserts that the rendered packet (the text a reply engine
   receives) is within the budget: ``estimate_tokens(render_packet(packet)) <= budget``.
3. **Scores it.** *Evidence recall (all)*: share of questions whose evidence utterances are all
   in the packet verbatim (a recent turn or a retrieved turn; a summary line does not count);
   *(any)*: at least one is. *Answer recall*: share whose answer string (case-folded,
   punctuation removed) occurs in the rendered packet. Category 5 (adversarial, no answer in the
   conversation) is reported apart, evidence only.
4. **Computes two baselines** from the same database and the same costing: the *last-N
   window* (the newest turns that fill the budget, verbatim) and *BM25 + last 3* (the last three
   turns, then the session's turns in plain FTS5 BM25 order for the question's words, rendered
   as the packet renders a retrieved turn, until the budget is full), each costed as one text
   of newline-separated lines, as the packet is.

Evidence ids are repaired where the intent is clear: ``"D8:6; D9:17"`` is split in two,
``"D:11:26"`` read as ``D11:26``; ids naming no utterance (``"D"``, or ``D10:19`` in a session
with fewer turns) are dropped, and a question left without evidence is not counted for evidence
recall (its answer still is). The table goes to ``BENCHMARKS.md`` (section "Memory quality").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks_file import write_section  # noqa: E402

from agent.app.wiring import build_lane, open_database, open_lane  # noqa: E402
from agent.config import Settings, load_settings  # noqa: E402
from agent.db import Database  # noqa: E402
from agent.memory import (  # noqa: E402
    ConversationContextPacket,
    ConversationLane,
    ConversationTurn,
    InboundMessage,
    Reply,
    render_packet,
)
from agent.memory.conversation_retriever import render_turn  # noqa: E402
from agent.memory.conversation_store import match_query  # noqa: E402
from agent.utils.tokens import estimate_tokens, tokens_for_chars  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
BUDGETS = (1000, 2000, 4000)
METHODS = ("packet", "last-N window", "BM25 + last 3")
_DIA = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m) on (\d{1,2}) (\w+),? (\d{4})", re.IGNORECASE)
_NOT_WORD = re.compile(r"[^\w\s]")
_SPACE = re.compile(r"\s+")
# Candidates the BM25 baseline reads (enough to fill 4,000 tokens many times over).
_BM25_POOL = 400


class SilentEngine:
    """The reply engine of a bot that listens: never asked, since no message wants a reply."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply()


@dataclass(slots=True)
class Question:
    text: str
    answer: str | None
    category: int
    evidence: tuple[int, ...]  # seqs of the evidence turns


@dataclass(slots=True)
class Conversation:
    sample_id: str
    chat_id: int
    questions: list[Question]
    repaired: int = 0
    dropped: int = 0
    no_evidence: int = 0


@dataclass(slots=True)
class Tally:
    questions: int = 0
    with_evidence: int = 0
    all_found: int = 0
    any_found: int = 0
    with_answer: int = 0
    answer_found: int = 0
    tokens: int = 0

    def add(self, q: Question, seqs: set[int], text: str, tokens: int) -> None:
        self.questions += 1
        self.tokens += tokens
        if q.evidence:
            self.with_evidence += 1
            found = [seq in seqs for seq in q.evidence]
            self.all_found += all(found)
            self.any_found += any(found)
        if q.answer is not None and q.category != 5:
            self.with_answer += 1
            self.answer_found += _norm(q.answer) in text

    def row(self) -> tuple[str, str, str, str]:
        def pct(n: int, d: int) -> str:
            return f"{100 * n / d:.1f}%" if d else "n/a"

        return (
            pct(self.all_found, self.with_evidence),
            pct(self.any_found, self.with_evidence),
            pct(self.answer_found, self.with_answer),
            f"{self.tokens / self.questions:.0f}" if self.questions else "0",
        )


@dataclass(slots=True)
class Results:
    # (budget, method, "1-4" | "5") -> tally
    tallies: dict[tuple[int, str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_category: dict[tuple[int, int], Tally] = field(default_factory=lambda: defaultdict(Tally))


def _norm(text: str) -> str:
    return _SPACE.sub(" ", _NOT_WORD.sub(" ", str(text).casefold())).strip()


def _session_date(text: str) -> datetime:
    match = _DATE.search(text)
    if match is None:
        raise ValueError(f"unreadable LoCoMo date {text!r}")
    hour, minute, half, day, month, year = match.groups()
    moment = datetime.strptime(f"{day} {month} {year}", "%d %B %Y").replace(tzinfo=UTC)
    hour24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return moment.replace(hour=hour24, minute=int(minute))


def _sessions(conversation: dict[str, Any]) -> list[tuple[datetime, list[dict[str, Any]]]]:
    numbers = sorted(
        int(key.split("_")[1])
        for key, value in conversation.items()
        if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
    )
    return [
        (_session_date(conversation[f"session_{n}_date_time"]), conversation[f"session_{n}"])
        for n in numbers
    ]


def _utterance_text(utterance: dict[str, Any]) -> str:
    text = str(utterance.get("text", "")).strip()
    caption = utterance.get("blip_caption")
    if caption:
        text = f"{text} [shares an image: {caption}]".strip()
    return text


def _evidence(
    raw: Iterable[str], seq_of: dict[str, int], conversation: Conversation
) -> tuple[int, ...]:
    seqs: list[int] = []
    for entry in raw:
        parts = [p for p in re.split(r"[;,]", str(entry)) if p.strip()]
        if len(parts) > 1:
            conversation.repaired += 1
        for part in parts:
            match = _DIA.fullmatch(part.strip())
            dia = f"D{match.group(1)}:{match.group(2)}" if match else None
            if dia is not None and dia != part.strip() and len(parts) == 1:
                conversation.repaired += 1
            if dia is None or dia not in seq_of:
                conversation.dropped += 1
                continue
            seqs.append(seq_of[dia])
    return tuple(dict.fromkeys(seqs))


def _settings(db_path: Path, checkpoints: Path, budget: int) -> Settings:
    # Retrieval weights and the rest come from the environment (AGENT_*), as in the bot.
    base = load_settings(env_file=None)
    return base.model_copy(
        update={
            "db_path": db_path,
            "checkpoint_dir": checkpoints,
            "durability": "process",
            "packet_token_budget": budget,
        }
    )


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2020, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def _feed(
    lane: ConversationLane, clock: _Clock, sample: dict[str, Any], chat_id: int
) -> dict[str, int]:
    """Send every utterance of a sample through on_turn; return dia_id -> turn seq."""
    conv = sample["conversation"]
    users = {conv["speaker_a"]: 1, conv["speaker_b"]: 2}
    engine = SilentEngine()
    seq_of: dict[str, int] = {}
    update_id = abs(chat_id) * 100_000
    for started, utterances in _sessions(conv):
        for n, utterance in enumerate(utterances):
            clock.now = started + timedelta(minutes=n)
            update_id += 1
            result = await lane.on_turn(
                InboundMessage(
                    chat_id=chat_id,
                    text=_utterance_text(utterance),
                    chat_type="group",
                    chat_title=sample["sample_id"],
                    user_id=users.get(utterance["speaker"], 3),
                    speaker=utterance["speaker"],
                    update_id=update_id,
                    wants_reply=False,
                    received_at=clock.now,
                ),
                engine,
            )
            seq_of[utterance["dia_id"]] = result.turn.seq
    clock.now += timedelta(days=1)
    return seq_of


def _line(turn: ConversationTurn) -> str:
    return f"{turn.speaker}: {turn.user_text}"


def _last_n(turns_newest_first: list[ConversationTurn], budget: int) -> list[ConversationTurn]:
    """The newest turns whose lines, as one text, fit the budget (costed as the packet is)."""
    chosen: list[ConversationTurn] = []
    chars = -1  # n lines joined by newlines: their lengths plus n - 1
    for turn in turns_newest_first:
        chars += len(_line(turn)) + 1
        if tokens_for_chars(chars) > budget:
            break
        chosen.append(turn)
    return chosen


async def _bm25_order(db: Database, session_id: str, question: str) -> list[int]:
    """Plain FTS5 BM25 over the session's turn text: the question's words, unweighted."""
    query = match_query(question)
    if not query:
        return []
    rows = await db.fetchall(
        "SELECT t.seq FROM conversation_turns AS t JOIN (SELECT rowid AS r, rank AS score"
        " FROM conversation_turns_fts WHERE conversation_turns_fts MATCH ?"
        " ORDER BY rank LIMIT ?) AS hit ON t.session_id = ? AND t.seq = (hit.r & 4294967295)"
        " ORDER BY hit.score, t.seq",
        (
            f'session_id : "{session_id}" AND {{user_text assistant_text}} : ({query})',
            _BM25_POOL,
            session_id,
        ),
    )
    return [row["seq"] for row in rows]


def _bm25_packet(
    order: list[int], turns: dict[int, ConversationTurn], last: list[ConversationTurn], budget: int
) -> tuple[set[int], str, int]:
    seqs = {t.seq for t in last}
    texts = [_line(t) for t in last]
    chars = len("\n".join(texts))
    for seq in order:
        if seq in seqs:
            continue
        text = render_turn(turns[seq])
        cost = len(text) + (1 if texts else 0)
        if tokens_for_chars(chars + cost) > budget:
            continue
        chars += cost
        seqs.add(seq)
        texts.append(text)
    return seqs, _norm("\n".join(texts)), tokens_for_chars(chars)


def _packet_seqs(packet: ConversationContextPacket) -> set[int]:
    seqs = {turn.seq for turn in packet.recent_turns}
    seqs.update(item.seq for item in packet.retrieved if item.kind == "turn" and item.seq)
    return seqs


async def _run_sample(
    sample: dict[str, Any], index: int, workdir: Path, results: Results, quick: bool
) -> Conversation:
    chat_id = -(1000 + index)
    db_path = workdir / f"{sample['sample_id']}.db"
    checkpoints = workdir / f"{sample['sample_id']}-checkpoints"
    clock = _Clock()
    lane = await open_lane(_settings(db_path, checkpoints, BUDGETS[0]), clock=clock)
    try:
        await lane.hydrate()
        seq_of = await _feed(lane, clock, sample, chat_id)
    finally:
        await lane.shutdown()
    conversation = Conversation(sample["sample_id"], chat_id, [])
    for qa in sample["qa"]:
        answer = qa.get("answer")
        q = Question(
            text=str(qa["question"]),
            answer=None if answer is None else str(answer),
            category=int(qa["category"]),
            evidence=_evidence(qa.get("evidence", []), seq_of, conversation),
        )
        conversation.no_evidence += not q.evidence
        conversation.questions.append(q)
    if quick:
        conversation.questions = conversation.questions[::3]
    for budget in BUDGETS:
        settings = _settings(db_path, checkpoints, budget)
        db = await open_database(settings)
        lane = build_lane(settings, db, clock=clock)
        try:
            await lane.hydrate()
            session_id = lane.session_id_for_chat(chat_id)
            if session_id is None:
                raise RuntimeError(f"{sample['sample_id']}: the session was not hydrated")
            turns = {t.seq: t async for t in lane.inspector.turns(session_id)}
            newest_first = sorted(turns.values(), key=lambda t: -t.seq)
            window = _last_n(newest_first, budget)
            window_seqs = {t.seq for t in window}
            window_lines = "\n".join(_line(t) for t in window)
            window_text, window_tokens = _norm(window_lines), estimate_tokens(window_lines)
            last3 = newest_first[:3]
            for q in conversation.questions:
                part = "5" if q.category == 5 else "1-4"
                packet = await lane.inspector.context(chat_id, q.text)
                rendered = "" if packet is None else render_packet(packet)
                if packet is None or packet.token_estimate != estimate_tokens(rendered):
                    raise AssertionError(f"packet estimate is not its text's: {packet}")
                if packet.token_estimate > budget:
                    # The goal includes this: the text an engine receives is never over budget.
                    raise AssertionError(f"packet over budget {budget}: {packet}")
                text = _norm(rendered)
                results.tallies[budget, "packet", part].add(
                    q, _packet_seqs(packet), text, packet.token_estimate
                )
                results.by_category[budget, q.category].add(
                    q, _packet_seqs(packet), text, packet.token_estimate
                )
                results.tallies[budget, "last-N window", part].add(
                    q, window_seqs, window_text, window_tokens
                )
                order = await _bm25_order(db, session_id, q.text)
                seqs, bm25_text, used = _bm25_packet(order, turns, last3, budget)
                results.tallies[budget, "BM25 + last 3", part].add(q, seqs, bm25_text, used)
        finally:
            await lane.shutdown()
    return conversation


def _table(results: Results, conversations: list[Conversation], seconds: float) -> str:
    questions = sum(len(c.questions) for c in conversations)
    turns_note = ", ".join(c.sample_id for c in conversations)
    lines = [
        "## Memory quality",
        "",
        f"`python bench/memory_quality.py` on LoCoMo ({turns_note}; {questions} questions;"
        f" {seconds:.0f} s). Each conversation is fed through `ConversationLane.on_turn` as one"
        " group-chat session (both speakers are members, every utterance a user turn, the bot"
        " silent); then each question gets the packet a reply to it would get"
        " (`MemoryInspector.context`, the retrieval path of `on_turn`). Evidence recall"
        " *all*: every evidence utterance of the question is in the packet verbatim; *any*: at"
        " least one is. Answer string: the answer occurs in the rendered packet. Tokens: mean"
        " token estimate (4 characters per token) of the text a reply engine receives, headers"
        " and newlines included; the packet's never exceeds the budget (the bench checks it)."
        " Baselines: the newest turns that fill the budget (*last-N*), and the last 3 turns"
        " plus the session's turns in plain FTS5 BM25 order for the question (*BM25 + last 3*),"
        " costed like the packet: their lines as one text.",
        "",
        "Categories 1-4 (multi-hop, temporal, open-domain, single-hop):",
        "",
        "| budget | method | evidence (all) | evidence (any) | answer string | tokens |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for budget in BUDGETS:
        for method in METHODS:
            row = results.tallies[budget, method, "1-4"].row()
            name = f"**{method}**" if method == "packet" else method
            lines.append(f"| {budget:,} | {name} | " + " | ".join(row) + " |")
    lines += [
        "",
        "Category 5 (adversarial: the premise is false, no answer exists; evidence only):",
        "",
        "| budget | method | evidence (all) | evidence (any) | tokens |",
        "|---:|---|---:|---:|---:|",
    ]
    for budget in BUDGETS:
        for method in METHODS:
            every, some, _, tokens = results.tallies[budget, method, "5"].row()
            name = f"**{method}**" if method == "packet" else method
            lines.append(f"| {budget:,} | {name} | {every} | {some} | {tokens} |")
    lines += [
        "",
        "The packet by category (evidence all / answer string):",
        "",
        "| budget | 1 multi-hop | 2 temporal | 3 open-domain | 4 single-hop |",
        "|---:|---:|---:|---:|---:|",
    ]
    for budget in BUDGETS:
        cells = []
        for category in (1, 2, 3, 4):
            every, _, answer, _ = results.by_category[budget, category].row()
            cells.append(f"{every} / {answer}")
        lines.append(f"| {budget:,} | " + " | ".join(cells) + " |")
    repaired = sum(c.repaired for c in conversations)
    dropped = sum(c.dropped for c in conversations)
    no_evidence = sum(c.no_evidence for c in conversations)
    lines += [
        "",
        f"Evidence ids: {repaired} repaired (split or reformatted), {dropped} dropped (naming no"
        f" utterance); {no_evidence} questions left without evidence are not counted for"
        " evidence recall. The packet also carries the session state (topics, participants,"
        " summaries) within the same budget; the baselines carry turns only. Data: LoCoMo"
        " (Maharana et al., ACL 2024), CC BY-NC 4.0, read in place from a local copy (`--data`;"
        " never shipped with the code: its licence is non-commercial).",
        "",
    ]
    return "\n".join(lines)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two conversations, 1/3 of the Qs")
    parser.add_argument("--data", type=Path, default=DATA, help="the LoCoMo JSON file")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    args = parser.parse_args(argv)
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    if args.quick:
        samples = samples[:2]
    started = time.perf_counter()
    results = Results()
    conversations = []
    with tempfile.TemporaryDirectory(prefix="memory-quality-") as tmp:
        for index, sample in enumerate(samples):
            conversations.append(await _run_sample(sample, index, Path(tmp), results, args.quick))
            print(f"{sample['sample_id']}: done", file=sys.stderr)
    section = _table(results, conversations, time.perf_counter() - started)
    print(section)
    if not args.quick and not args.no_write:
        print(f"written to {write_section(section)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
