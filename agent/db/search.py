"""Full-text search helpers of the SQLite backend: FTS5 queries from user text, and optimize.

Every search takes user text, so no FTS5 syntax in it may reach the MATCH expression: a text
is reduced to its words (:func:`~agent.utils.text.split_words`, lowercased, without repeats,
at most ``QUERY_WORDS``), each quoted, joined by ``OR`` (:func:`match_query`).
:func:`scoped_searches` builds the one ``UNION ALL`` statement of several queries that the
summary and memory searches run, and :func:`optimize_indexes` rewrites indexes after an
erasure. The stores' own statements use these; the retriever never sees SQL.

Tested in ``tests/test_store_conformance.py`` (the stores' searches) and
``tests/test_conversation_retriever.py`` (injection, optimize).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.db.transaction import Transaction
from agent.utils.text import split_words

__all__ = [
    "QUERY_WORDS",
    "SEARCH_INDEXES",
    "match_query",
    "optimize_indexes",
    "scoped_searches",
    "search_words",
]

#: Words taken from a query at most: a longer text adds cost, not precision.
QUERY_WORDS = 24
#: The full-text indexes retrieval reads (migration 0006); erasing optimizes them.
SEARCH_INDEXES = ("conversation_turns_fts", "conversation_summaries_fts", "memories_fts")


def search_words(text: str) -> list[str]:
    """Return the words of ``text`` a search takes, lowercased, without repeats."""
    return list(dict.fromkeys(word.lower() for word in split_words(text)))[:QUERY_WORDS]


def match_query(text: str) -> str:
    """Turn free text into a safe FTS5 query: its words, each quoted, joined by ``OR``."""
    return " OR ".join(f'"{word}"' for word in search_words(text))


def scoped_searches(
    arm: str, scope: str, queries: Sequence[str], limit: int
) -> tuple[str, list[Any]]:
    """Return one ``arm`` for each of ``queries`` that has a word to search for, joined by
    ``UNION ALL``, and the statement's parameters (``""`` when no query has one).

    ``arm`` is a ranked search whose parameters are the query's index (its first column), its
    MATCH expression and ``limit``. The expression is ``scope`` (a scope term and a column
    filter) applied to the query's quoted words (:func:`match_query`).
    """
    arms: list[str] = []
    params: list[Any] = []
    for index, words in enumerate(queries):
        query = match_query(words)
        if query:
            arms.append(arm)
            params += [index, f"{scope} : ({query})", limit]
    return " UNION ALL ".join(arms), params


async def optimize_indexes(tx: Transaction, indexes: Sequence[str] = SEARCH_INDEXES) -> None:
    """Merge full-text indexes so that erased rows leave no trace in their pages.

    FTS5 records a deletion as a tombstone next to the old entry; ``optimize`` rewrites each
    index without either. Run in the transaction that erased (``/forget``, prune): its cost is
    proportional to the index, and erasing is rare.
    """
    for table in indexes:
        if table not in SEARCH_INDEXES:
            raise ValueError(f"{table!r} is not one of the search indexes {SEARCH_INDEXES}")
        # The table names are this module's constants (checked above), never user text.
        await tx.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")  # noqa: S608
