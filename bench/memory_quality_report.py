"""The tables of ``bench/memory_quality.py``: what it counts per question, and the section of
``BENCHMARKS.md`` it writes ("Memory quality": SQLite's tables, where the packet's tokens go,
and PostgreSQL's comparison with them). Tested in ``tests/test_memory_quality_report.py``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from agent.memory import packet_lines

__all__ = [
    "BUDGETS",
    "METHODS",
    "POSTGRES_METHODS",
    "POSTGRES_TOLERANCE",
    "Conversation",
    "Question",
    "Results",
    "Tally",
    "norm",
    "packet_sections",
    "postgres_table",
    "sqlite_table",
]

_NOT_WORD = re.compile(r"[^\w\s]")
_SPACE = re.compile(r"\s+")
BUDGETS = (1000, 2000, 4000)
METHODS = ("packet", "last-N window", "BM25 + last 3")
#: The methods measured on PostgreSQL: the baseline of plain FTS5 SQL is SQLite's alone.
POSTGRES_METHODS = METHODS[:2]
#: The largest fall of the packet's evidence recall on PostgreSQL from SQLite's (points).
POSTGRES_TOLERANCE = 3.0
# A rendered packet's section headers, and the part of the packet each one opens.
_SECTIONS = {
    packet_lines.LOOPS_HEADER: "open loops",
    packet_lines.CLARIFICATIONS_HEADER: "pending clarifications",
    packet_lines.REMEMBERED_HEADER: "memories",
    packet_lines.RELEVANT_MEMORIES_HEADER: "memories",
    packet_lines.EARLIER_HEADER: "retrieved",
    packet_lines.SUMMARY_HEADER: "summaries",
    packet_lines.LLM_SUMMARY_HEADER: "summaries",
    packet_lines.COMPRESSED_HEADER: "recent turns, compressed",
    packet_lines.TURNS_HEADER: "last turns",
    packet_lines.REFERENCES_HEADER: "state",
    **{header: "state" for header, _ in packet_lines.LISTED.values()},
    packet_lines.LISTED["facts"][0]: "facts",
    packet_lines.LISTED["jobs"][0]: "scheduled jobs",
}
# Sections opened by a line of their own that starts so.
_OPENING = {packet_lines.TOPICS_HEADER: "state", "The member writing now:": "member"}


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
            self.answer_found += norm(q.answer) in text

    def row(self) -> tuple[str, str, str, str]:
        return (
            _pct(self.all_found, self.with_evidence),
            _pct(self.any_found, self.with_evidence),
            _pct(self.answer_found, self.with_answer),
            f"{self.tokens / self.questions:.0f}" if self.questions else "0",
        )

    def recall(self) -> float:
        """Evidence recall (all), in percent."""
        return 100 * self.all_found / self.with_evidence if self.with_evidence else 0.0


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "n/a"


@dataclass(slots=True)
class Results:
    # (budget, method, "1-4" | "5") -> tally
    tallies: dict[tuple[int, str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_category: dict[tuple[int, int], Tally] = field(default_factory=lambda: defaultdict(Tally))
    # (sample id, budget, question) -> what its packet carries; budget -> ms per packet
    packets: dict[tuple[str, int, int], tuple[object, ...]] = field(default_factory=dict)
    millis: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    # budget -> section -> tokens over all packets; evidence utterances found in it; packets
    section_tokens: dict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    section_evidence: dict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    sectioned: Counter[int] = field(default_factory=Counter)

    def add_sections(self, budget: int, rendered: str, evidence: Iterable[str]) -> None:
        """Count a packet's tokens per section and where its ``evidence`` lines are."""
        self.sectioned[budget] += 1
        for section, tokens, found in packet_sections(rendered, evidence):
            self.section_tokens[budget][section] += tokens
            self.section_evidence[budget][section] += found


def packet_sections(rendered: str, evidence: Iterable[str]) -> list[tuple[str, float, int]]:
    """Return each section of a rendered packet (in order of first appearance), the tokens its
    lines take (4 characters a token, newline included) and how many of the ``evidence``
    utterances it shows on a line of their own after a speaker or date (``Ada: words``).

    The title is the first line; topics, references, decisions, proposals and participants
    are the state.
    """
    wanted = {f": {text}" for text in evidence}
    tokens: dict[str, float] = {}
    found: Counter[str] = Counter()
    section = "title"
    for number, line in enumerate(rendered.split("\n")):
        opening = [name for start, name in _OPENING.items() if line.startswith(start)]
        if line in _SECTIONS or opening:
            section = _SECTIONS.get(line) or opening[0]
        elif number and section == "title":
            section = "state"
        tokens[section] = tokens.get(section, 0.0) + (len(line) + 1) / 4
        shown = {ending for ending in wanted if line.endswith(ending)}
        found[section] += len(shown)
        wanted -= shown
    return [(section, spent, found[section]) for section, spent in tokens.items()]


def norm(text: str) -> str:
    """Case-folded text without punctuation, spaces collapsed (how answers are matched)."""
    return _SPACE.sub(" ", _NOT_WORD.sub(" ", str(text).casefold())).strip()


def sqlite_table(results: Results, conversations: list[Conversation], seconds: float) -> str:
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
        " *all*: every evidence utterance of the question is in the rendered packet verbatim, on a"
        " line of its own after its speaker or date; *any*: at"
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
    lines += [
        "",
        "Where the packet's tokens go: mean tokens per packet of each section (all questions),"
        " and the evidence utterances of categories 1-4 found in it:",
        "",
        "| section | " + " | ".join(f"{budget:,}" for budget in BUDGETS) + " |",
        "|---|" + "---:|" * len(BUDGETS),
    ]
    every = sorted(
        {section for budget in BUDGETS for section in results.section_tokens[budget]},
        key=lambda section: -results.section_tokens[BUDGETS[0]][section],
    )
    for section in every:
        cells = [
            f"{results.section_tokens[budget][section] / max(results.sectioned[budget], 1):.0f}"
            f" / {results.section_evidence[budget][section]}"
            for budget in BUDGETS
        ]
        lines.append(f"| {section} | " + " | ".join(cells) + " |")
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


def postgres_table(results: Results, sqlite: Results | None, questions: int, seconds: float) -> str:
    """The run on PostgreSQL: the packet and the window, and the packet's difference from
    SQLite's evidence recall (all) where SQLite ran too."""
    lines = [
        "### On PostgreSQL",
        "",
        "`python bench/memory_quality.py --backend both` (or `--backend postgres` alone; the"
        " server is `--postgres-url` or `AGENT_TEST_POSTGRES_URL`): the same conversations and"
        f" questions ({questions}; {seconds:.0f} s) through the same lane with"
        " `AGENT_DATABASE_URL` set, so on the PostgreSQL stores, each conversation in a fresh"
        " schema dropped after. *BM25 + last 3* is plain FTS5 SQL: SQLite only. The last"
        " columns: the difference of evidence recall (all) from SQLite's, in points.",
        "",
        "| budget | method | evidence (all) | evidence (any) | answer string | tokens"
        " | category 5 (all) | vs SQLite 1-4 | vs SQLite 5 |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    worst = 0.0
    for budget in BUDGETS:
        for method in POSTGRES_METHODS:
            main, adversarial = (results.tallies[budget, method, part] for part in ("1-4", "5"))
            cells = [*main.row(), adversarial.row()[0]]
            for part, tally in (("1-4", main), ("5", adversarial)):
                if sqlite is None:
                    cells.append("n/a")
                    continue
                difference = tally.recall() - sqlite.tallies[budget, method, part].recall()
                cells.append(f"{difference:+.1f}")
                if method == "packet":
                    worst = min(worst, difference)
            name = f"**{method}**" if method == "packet" else method
            lines.append(f"| {budget:,} | {name} | " + " | ".join(cells) + " |")
    if sqlite is not None:
        verdict = "within" if -worst <= POSTGRES_TOLERANCE else "NOT within"
        lines += [
            "",
            f"The packet on PostgreSQL is {verdict} {POSTGRES_TOLERANCE:.0f} points of SQLite's"
            f" evidence recall at every budget (largest fall {abs(worst):.1f} points).",
            "",
            "Each packet against SQLite's for the same question (the same recent turns, and"
            " the same items retrieved in the same order, or not), and the time to build one"
            " (`MemoryInspector.context`: retrieval and"
            " packet; PostgreSQL 15 on the same machine, over TCP to 127.0.0.1):",
            "",
            "| budget | packets the same | SQLite median ms | p95 ms | PostgreSQL median ms"
            " | p95 ms |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for budget in BUDGETS:
            keys = [key for key in results.packets if key[1] == budget]
            same = sum(results.packets[key] == sqlite.packets.get(key) for key in keys)
            cells = [f"{same} of {len(keys)}"]
            for millis in (sqlite.millis[budget], results.millis[budget]):
                cells += [f"{_percentile(millis, 0.5):.1f}", f"{_percentile(millis, 0.95):.1f}"]
            lines.append(f"| {budget:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[int(share * (len(ordered) - 1))] if ordered else 0.0
