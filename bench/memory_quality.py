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
   in the rendered packet verbatim, each on a line of its own after its speaker or date (a
   recent turn or a retrieved turn, whatever section carries it; a summary line does not
   count); *(any)*: at least one is. *Answer recall*: share whose answer string (case-folded,
   punctuation removed) occurs in the rendered packet. Category 5 (adversarial, no answer in the
   conversation) is reported apart, evidence only.
4. **Computes two baselines** from the same database and the same costing: the *last-N
   window* (the newest turns that fill the budget, verbatim) and *BM25 + last 3* (the last three
   turns, then the session's turns in plain FTS5 BM25 order for the question's words, rendered
   as the packet renders a retrieved turn, until the budget is full), each costed as one text
   of newline-separated lines, as the packet is.

**On PostgreSQL** (``--backend postgres``, or ``both`` for the two and their comparison): the
same run through the same lane with ``AGENT_DATABASE_URL`` set, so the lane takes the
PostgreSQL stores (``agent.app.wiring.stores_for``). The server is ``--postgres-url`` or
``AGENT_TEST_POSTGRES_URL``; each conversation gets a fresh schema of its own (the search path
of its connections), dropped after. The *BM25 + last 3* baseline is plain FTS5 SQL: it is
reported for SQLite only. ``both`` writes the SQLite tables and, under them, the packet's and
the window's recall on PostgreSQL with the difference from SQLite at each budget (issue 18: at
most 3 points below).

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
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks_file import write_section  # noqa: E402
from memory_quality_report import (  # noqa: E402
    BUDGETS,
    Conversation,
    Question,
    Results,
    norm,
    postgres_table,
    sqlite_table,
)
from postgres_schema import fresh_schema, parse_with_backend  # noqa: E402

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
from agent.memory.conversation_store import match_query  # noqa: E402
from agent.memory.packet_lines import render_turn  # noqa: E402
from agent.utils.tokens import estimate_tokens, tokens_for_chars  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
_DIA = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m) on (\d{1,2}) (\w+),? (\d{4})", re.IGNORECASE)
# Candidates the BM25 baseline reads (enough to fill 4,000 tokens many times over).
_BM25_POOL = 400


class SilentEngine:
    """The reply engine of a bot that listens: never asked, since no message wants a reply."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply()


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


#: Where a conversation's database is: what a :data:`Backend` gives a conversation's settings.
Place = dict[str, Any]
#: A backend: the place of a conversation's database (in ``workdir``), made and then removed.
Backend = Callable[[Path, str], AbstractAsyncContextManager[Place]]


@asynccontextmanager
async def _sqlite_file(workdir: Path, name: str) -> AsyncIterator[Place]:
    yield {"db_path": workdir / f"{name}.db", "database_url": None}


def _postgres(url: str) -> Backend:
    """A backend that gives each conversation a fresh schema of the server at ``url``."""

    @asynccontextmanager
    async def schema(workdir: Path, name: str) -> AsyncIterator[Place]:
        with fresh_schema(url, f"memory_quality_{name}") as conninfo:
            yield {"db_path": workdir / f"{name}.db", "database_url": SecretStr(conninfo)}

    return schema


def _settings(place: Place, checkpoints: Path, budget: int) -> Settings:
    # Retrieval weights and the rest come from the environment (AGENT_*), as in the bot.
    base = load_settings(env_file=None)
    return base.model_copy(
        update={
            **place,
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
    return seqs, norm("\n".join(texts)), tokens_for_chars(chars)


def _contents(packet: ConversationContextPacket | None) -> tuple[object, ...]:
    """What a packet carries, without its ids (a session's id differs between databases)."""
    if packet is None:
        return ()
    recent = tuple(turn.seq for turn in packet.recent_turns)
    return recent, tuple((item.kind, item.seq, item.text) for item in packet.retrieved)


def _shown_seqs(
    evidence: Iterable[int], turns: dict[int, ConversationTurn], rendered: str
) -> set[int]:
    """The evidence turns whose words the rendered packet carries verbatim, each on a line of
    its own after its speaker or date (``Ada: ...``, ``#12 Ada (8 May 2023): ...``): what a
    reply engine reads, whatever part of the packet the turn came in."""
    text = rendered + "\n"
    return {seq for seq in evidence if f": {turns[seq].user_text}\n" in text}


async def _run_sample(
    sample: dict[str, Any], index: int, workdir: Path, results: Results, quick: bool,
    backend: Backend,
) -> Conversation:  # fmt: skip
    async with backend(workdir, sample["sample_id"]) as place:
        return await _measure_sample(sample, index, place, workdir, results, quick)


async def _measure_sample(
    sample: dict[str, Any], index: int, place: Place, workdir: Path, results: Results,
    quick: bool,
) -> Conversation:  # fmt: skip
    chat_id = -(1000 + index)
    checkpoints = workdir / f"{sample['sample_id']}-checkpoints"
    clock = _Clock()
    lane = await open_lane(_settings(place, checkpoints, BUDGETS[0]), clock=clock)
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
        settings = _settings(place, checkpoints, budget)
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
            window_text, window_tokens = norm(window_lines), estimate_tokens(window_lines)
            last3 = newest_first[:3]
            for number, q in enumerate(conversation.questions):
                part = "5" if q.category == 5 else "1-4"
                began = time.perf_counter()
                packet = await lane.inspector.context(chat_id, q.text)
                results.millis[budget].append((time.perf_counter() - began) * 1000)
                rendered = "" if packet is None else render_packet(packet)
                results.packets[sample["sample_id"], budget, number] = _contents(packet)
                if packet is None or packet.token_estimate != estimate_tokens(rendered):
                    raise AssertionError(f"packet estimate is not its text's: {packet}")
                if packet.token_estimate > budget:
                    # The goal includes this: the text an engine receives is never over budget.
                    raise AssertionError(f"packet over budget {budget}: {packet}")
                text, shown = norm(rendered), _shown_seqs(q.evidence, turns, rendered)
                evidence = [turns[seq].user_text for seq in q.evidence] if part == "1-4" else []
                results.add_sections(budget, rendered, evidence)
                results.tallies[budget, "packet", part].add(q, shown, text, packet.token_estimate)
                results.by_category[budget, q.category].add(q, shown, text, packet.token_estimate)
                results.tallies[budget, "last-N window", part].add(
                    q, window_seqs, window_text, window_tokens
                )
                if isinstance(db, Database):  # plain FTS5 SQL: SQLite's alone
                    order = await _bm25_order(db, session_id, q.text)
                    seqs, bm25_text, used = _bm25_packet(order, turns, last3, budget)
                    results.tallies[budget, "BM25 + last 3", part].add(q, seqs, bm25_text, used)
        finally:
            await lane.shutdown()
    return conversation


async def _run(
    samples: list[dict[str, Any]], backend: Backend, quick: bool
) -> tuple[Results, list[Conversation], float]:
    started = time.perf_counter()
    results = Results()
    conversations = []
    with tempfile.TemporaryDirectory(prefix="memory-quality-") as tmp:
        for index, sample in enumerate(samples):
            conversations.append(
                await _run_sample(sample, index, Path(tmp), results, quick, backend)
            )
            print(f"{sample['sample_id']}: done", file=sys.stderr)
    return results, conversations, time.perf_counter() - started


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two conversations, 1/3 of the Qs")
    parser.add_argument("--data", type=Path, default=DATA, help="the LoCoMo JSON file")
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    args = parse_with_backend(parser, argv)
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    if args.quick:
        samples = samples[:2]
    sqlite: Results | None = None
    parts: list[str] = []
    if args.backend in ("sqlite", "both"):
        sqlite, conversations, seconds = await _run(samples, _sqlite_file, args.quick)
        parts.append(sqlite_table(sqlite, conversations, seconds))
    if args.backend in ("postgres", "both"):
        results, conversations, seconds = await _run(
            samples, _postgres(args.postgres_url), args.quick
        )
        questions = sum(len(c.questions) for c in conversations)
        parts.append(postgres_table(results, sqlite, questions, seconds))
    section = "\n".join(parts)
    print(section)
    if not args.quick and not args.no_write and sqlite is not None:
        print(f"written to {write_section(section)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
