"""bench/memory_quality_report.py: the comparison of PostgreSQL's packets with SQLite's."""

from __future__ import annotations

from bench.memory_quality_report import BUDGETS, Question, Results, postgres_table


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
