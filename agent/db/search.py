"""Full-text search helpers: FTS5 queries from user text, optimize, and FTS5's tokens.

Every search takes user text, so no FTS5 syntax in it may reach the MATCH expression: a text
is reduced to its words (:func:`~agent.utils.text.split_words`, lowercased, without repeats,
at most ``QUERY_WORDS``), each quoted, joined by ``OR`` (:func:`match_query`).
:func:`scoped_searches` builds the one ``UNION ALL`` statement of several queries that the
summary and memory searches run, and :func:`optimize_indexes` rewrites indexes after an
erasure. The stores' own statements use these; the retriever never sees SQL.

:func:`index_tokens` gives the tokens FTS5's tokenizer (:data:`FTS5_TOKENIZER`: Porter stems of
case- and diacritic-folded words, ``snake_case`` whole) makes of texts, by running that very
tokenizer in an in-memory SQLite database: the PostgreSQL indexes of turns, summaries and
memories store them (:mod:`agent.db.bm25`), so that both backends index, count and rank the same
words.

Tested in ``tests/test_store_conformance.py`` (the stores' searches),
``tests/test_conversation_retriever.py`` (injection, optimize) and
``tests/test_postgres_turn_search.py`` (the tokens).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from agent.db.transaction import Transaction
from agent.utils.text import split_words

__all__ = [
    "FTS5_TOKENIZER",
    "QUERY_WORDS",
    "SEARCH_INDEXES",
    "index_tokens",
    "match_query",
    "optimize_indexes",
    "scoped_searches",
    "search_words",
]

#: Words taken from a query at most: a longer text adds cost, not precision.
QUERY_WORDS = 24
#: The full-text indexes retrieval reads (migration 0006); erasing optimizes them.
SEARCH_INDEXES = ("conversation_turns_fts", "conversation_summaries_fts", "memories_fts")
#: The tokenizer of those indexes (schema.sql, migrations 0006, 0007 and 0011).
FTS5_TOKENIZER = "porter unicode61 remove_diacritics 2 tokenchars '_'"


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


_TOKENIZERS = threading.local()


def _tokenizer() -> sqlite3.Connection:
    """Return this thread's in-memory database with an FTS5 table of :data:`FTS5_TOKENIZER`
    and its ``instance`` vocabulary (a sqlite3 connection belongs to the thread that made it)."""
    conn: sqlite3.Connection | None = getattr(_TOKENIZERS, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.execute(
            f"CREATE VIRTUAL TABLE texts USING fts5 (text, tokenize = \"{FTS5_TOKENIZER}\")"
        )
        conn.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab (texts, 'instance')")
        _TOKENIZERS.conn = conn
    return conn


def index_tokens(texts: Sequence[str | None]) -> list[list[str]]:
    """Return the tokens an index of :data:`FTS5_TOKENIZER` makes of each of ``texts``, in
    order (``None``: none).

    Each text is a row of an in-memory FTS5 table, read back through its ``instance``
    vocabulary and rolled back: FTS5 itself tokenizes (about 70 microseconds a turn).
    """
    conn = _tokenizer()
    found: list[list[str]] = [[] for _ in texts]
    conn.execute("BEGIN")
    try:
        conn.executemany(
            "INSERT INTO texts (rowid, text) VALUES (?, ?)",
            [(index + 1, text) for index, text in enumerate(texts) if text],
        )
        for doc, term in conn.execute("SELECT doc, term FROM tokens ORDER BY doc, offset"):
            found[doc - 1].append(term)
    finally:
        conn.execute("ROLLBACK")
    return found
