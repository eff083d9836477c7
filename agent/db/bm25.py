"""BM25 as SQLite's FTS5 computes it, for the PostgreSQL stores that rank in Python.

FTS5's ``bm25()`` (``fts5_aux.c``) scores a row for a query of phrases ``i`` as::

    idf_i = log((N - n_i + 0.5) / (n_i + 0.5))      (1e-6 when not positive)
    score = -sum_i idf_i * f_i (k1 + 1) / (f_i + k1 (1 - b + b D / avgdl))

with ``k1 = 1.2``, ``b = 0.75``, ``N`` the index's rows, ``n_i`` the rows holding phrase ``i``
(in the columns the query names), ``f_i`` its weighted count in the row, ``D`` the row's tokens
in every column and ``avgdl`` the index's tokens per row: lower is better. The summary and
memory stores on PostgreSQL fetch a scope's rows that hold a query word (``tsquery`` over a GIN
index), read ``N``, the token total and each word's ``n_i`` of the whole index
(:func:`index_statistics`, migrations 0004 and 0005 of ``schema_postgres.sql``), and score here,
so that both backends rank alike. Words are those of :func:`agent.db.search.search_words`
(without FTS5's porter stemming). Tested in ``tests/test_bm25.py``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from agent.db.transaction import Snapshot
from agent.utils.text import split_words

__all__ = [
    "SEARCHED_TABLES",
    "IndexStatistics",
    "best",
    "bm25",
    "index_statistics",
    "lexemes",
    "tsquery",
    "word_counts",
]

T = TypeVar("T")

_K1 = 1.2
_B = 0.75
#: The smallest IDF: FTS5's floor for a word found in half the rows or more.
_IDF_FLOOR = 1e-6
#: A lexeme of a PostgreSQL tsquery is shorter than 2 KiB; a longer word is never found.
_MAX_LEXEME_BYTES = 2046
#: The tables with a ``search`` tsvector, a ``search_length`` and a ``search_totals`` row.
SEARCHED_TABLES = ("conversation_summaries", "memories")


@dataclass(frozen=True, slots=True)
class IndexStatistics:
    """What BM25 reads of a whole index.

    Attributes:
        rows: the rows of the index (``N``).
        average_length: tokens per row (``avgdl``).
        hits: for each word, the rows that hold it (``n_i``).
    """

    rows: int
    average_length: float
    hits: dict[str, int]

    def idf(self, word: str) -> float:
        """Return FTS5's IDF of ``word``."""
        found = self.hits.get(word, 0)
        value = math.log((self.rows - found + 0.5) / (found + 0.5))
        return value if value > 0.0 else _IDF_FLOOR


def lexemes(words: Iterable[str]) -> list[str]:
    """Return the words a tsquery can hold (not too long for a lexeme), in order."""
    return [word for word in words if len(word.encode()) <= _MAX_LEXEME_BYTES]


def tsquery(words: Sequence[str]) -> str:
    """Return the tsquery text that matches a row holding any of ``words``.

    Each word is quoted: the words of :func:`~agent.db.search.search_words` are runs of word
    characters, so no quote, backslash or operator is in them.
    """
    return " | ".join(f"'{word}'" for word in words)


def word_counts(*texts: str) -> Counter[str]:
    """Count the words of ``texts`` as the ``search`` columns hold them (lowercased)."""
    return Counter(word.lower() for text in texts for word in split_words(text))


def bm25(
    statistics: IndexStatistics, words: Sequence[str], counts: Counter[str], length: int
) -> float:
    """Return FTS5's ``bm25()`` of a row for a query of ``words`` (lower is better).

    Args:
        statistics: the index's figures.
        words: the query's words (distinct).
        counts: the row's words in the searched columns (:func:`word_counts`).
        length: the row's tokens in every column (``search_length``).
    """
    average = statistics.average_length or 1.0
    norm = _K1 * (1.0 - _B + _B * length / average)
    score = 0.0
    for word in words:
        found = counts.get(word, 0)
        if found:
            score += statistics.idf(word) * (found * (_K1 + 1.0)) / (found + norm)
    return -score


def best(
    statistics: IndexStatistics,
    words: Sequence[str],
    candidates: Iterable[tuple[T, Counter[str], int]],
    limit: int,
) -> list[tuple[T, float]]:
    """Return the ``limit`` best of ``candidates`` that hold one of ``words``, with their
    scores, best first; equal scores in the order given (FTS5: ``ORDER BY bm25, rowid LIMIT``).

    Args:
        statistics: the index's figures.
        words: the query's words (distinct).
        candidates: ``(item, its word counts, its length)``, in rowid order.
        limit: the most returned.
    """
    scored = [
        (bm25(statistics, words, counts, length), position, item)
        for position, (item, counts, length) in enumerate(candidates)
        if any(counts.get(word) for word in words)
    ]
    scored.sort(key=lambda entry: (entry[0], entry[1]))
    return [(item, score) for score, _, item in scored[: max(limit, 0)]]


def index_statistics(conn: Snapshot, table: str, words: Sequence[str]) -> IndexStatistics:
    """Read the figures of ``table``'s whole index for ``words`` (one statement).

    The row and token totals are ``search_totals``' row of the table; each word's row count is
    a count over the GIN index with the word's own tsquery (FTS5 reads the word's posting list
    for it too).

    Raises:
        ValueError: ``table`` has no search index.
    """
    if table not in SEARCHED_TABLES:
        raise ValueError(f"{table!r} is not one of the searched tables {SEARCHED_TABLES}")
    # One parameter per word, so that the planner sees each word and reads its posting list.
    # The table name is one of SEARCHED_TABLES (checked above), never user text.
    count = f", (SELECT count(*) FROM {table} WHERE search @@ ?::tsquery)" * len(words)  # noqa: S608
    row = conn.fetchone(
        f"SELECT row_count, token_count{count} FROM search_totals WHERE index_name = ?",  # noqa: S608
        [*(tsquery([word]) for word in words), table],
    )
    if row is None:
        raise ValueError(f"{table!r} has no row in search_totals: is the schema migrated?")
    rows, tokens, *hits = (int(value) for value in row)
    return IndexStatistics(
        rows, tokens / rows if rows else 0.0, dict(zip(words, hits, strict=True))
    )
