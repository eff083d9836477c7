"""bench/memory_quality_report.py: the comparison of PostgreSQL's packets with SQLite's."""

from __future__ import annotations

from agent.memory import packet_lines
from bench.memory_quality_report import (
    BUDGETS,
    Question,
    Results,
    packet_sections,
    postgres_table,
)


def _results(found: int, *, contents: str) -> Results:
    """Ten questions at every budget, ``found`` of them with their evidence in the packet."""
    results = Results()
    for budget in BUDGETS:
        for n in range(10):
            question = Question(f"q{n}", "an answer", 1, (n + 1,))
            seqs = {n + 1} if n < found else set()
            results.tallies[budget, "packet", "1-4"].add(question, seqs, "an answer", 900)
            results.packets["conv", budget, n] = (contents if n else "first",)
            results.millis[budget].append(float(n))
    return results


def test_the_verdict_compares_the_packets_recall_with_sqlites_at_every_budget():
    """A fall of more than 3 points is reported as not within; equal recall as within, with
    the packets compared question by question and the median time of each backend."""
    sqlite = _results(8, contents="same")
    fell = postgres_table(_results(7, contents="same"), sqlite, 10, 1.0)
    assert "| 1,000 | **packet** | 70.0% | 70.0% | 100.0% | 900 | n/a | -10.0 |" in fell
    assert "is NOT within 3 points" in fell
    assert "(largest fall 10.0 points)" in fell
    held = postgres_table(_results(8, contents="other"), sqlite, 10, 1.0)
    assert "is within 3 points" in held
    assert "(largest fall 0.0 points)" in held
    assert "| 2,000 | 1 of 10 | 4.0 | 8.0 | 4.0 | 8.0 |" in held


def test_without_sqlite_the_table_has_no_comparison():
    """``--backend postgres`` alone: the recall, and n/a where SQLite's would be."""
    alone = postgres_table(_results(8, contents="same"), None, 10, 1.0)
    assert "| 4,000 | **packet** | 80.0% | 80.0% | 100.0% | 900 | n/a | n/a | n/a |" in alone
    assert "within" not in alone


def test_a_packets_tokens_and_evidence_are_counted_by_section():
    """Each line counts for the section its header opened; an evidence utterance counts where
    it is shown after a speaker or a date, once, and not where it is only quoted in part."""
    rendered = "\n".join([
        "Conversation c1 (40 turns)",
        packet_lines.LOOPS_HEADER,
        "- Ada: I will bring the tent (promised)",
        f"{packet_lines.TOPICS_HEADER}camping",
        packet_lines.EARLIER_HEADER,
        "8 May 2023",
        "Ada: I was in Chicago, it was awesome!",
        packet_lines.TURNS_HEADER,
        "Bob: I was in Chicago, it was awesome!",
        "Bob: The lake was cold",
    ])  # fmt: skip
    evidence = ["I was in Chicago, it was awesome!", "The lake was cold", "the tent"]
    sections = {
        name: (tokens, found) for name, tokens, found in packet_sections(rendered, evidence)
    }
    assert list(sections) == ["title", "open loops", "state", "retrieved", "last turns"]
    assert sections["retrieved"][1] == 1
    assert sections["last turns"][1] == 1
    assert sections["open loops"][1] == 0  # "the tent" is inside a loop line, not after a speaker
    assert sum(tokens for tokens, _ in sections.values()) == (len(rendered) + 1) / 4
    assert sections["open loops"][0] == (len(packet_lines.LOOPS_HEADER) + 1 + 40) / 4
