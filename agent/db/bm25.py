"""FTS5's tokens in a tsvector and FTS5's bm25() in Python: the PostgreSQL searches.

Each PostgreSQL search (turns: :mod:`agent.memory.storage.postgres_turn_search`; summaries and
memories: :mod:`agent.memory.summaries.postgres_summary_store`,
:mod:`agent.memory.longterm.postgres_memory_store`) indexes, counts and ranks what the SQLite
FTS5 index of the same rows does (``schema.sql``: ``porter unicode61 remove_diacritics 2
tokenchars '_'`` for all three), so that a search finds the same rows in the same order on both
backends.

**The words are FTS5's.** A row's tokens are those :func:`agent.db.search.index_tokens` makes
(FTS5's own tokenizer: Porter stems of case- and diacritic-folded words, ``snake_case`` whole),
written by the store as a ``tsvector`` literal (:func:`tsvector`) with a GIN index, and its
length in tokens (every column's, the scope's too: FTS5's document size). No PostgreSQL text
search configuration makes these tokens (``'simple'`` stems nothing and cuts ``snake_case``,
``'english'`` stems with Snowball's Porter2 and drops stop words). A token's positions number
its occurrences (1, 2, ...: BM25 needs how often, never where), each labelled with the weight
class of its column (``A`` .. ``D``), at most :data:`MAX_OCCURRENCES` (PostgreSQL's limit;
BM25 saturates long before); a token over 2,046 bytes, which PostgreSQL refuses as a lexeme,
is neither indexed nor searched (:func:`searchable`). A query word is the phrase of its tokens
(:func:`word_tokens`); a word FTS5 cuts in several tokens (a letter Unicode 6.1 did not know)
is searched as those tokens, each its own phrase, where FTS5 reads them as one phrase.

**The ranking is FTS5's** ``bm25()`` (``fts5_aux.c``), for a query of phrases ``i``::

    idf_i = log((N - n_i + 0.5) / (n_i + 0.5))      (1e-6 when not positive)
    score = -sum_i idf_i * f_i (k1 + 1) / (f_i + k1 (1 - b + b D / avgdl))

with ``k1 = 1.2``, ``b = 0.75``, ``N`` the index's rows, ``n_i`` the rows holding phrase ``i``
(in the columns the query names), ``f_i`` its occurrences in the row, each weighted by its
column (:func:`frequencies`), ``D`` the row's length and ``avgdl`` the index's tokens per row:
lower is better. ``N``, the token total and each ``n_i`` are the whole index's
(:class:`IndexStatistics`; :func:`index_statistics` reads them for the summaries and memories,
whose totals ``search_totals`` keeps, migrations 0004 and 0005 of ``schema_postgres.sql``), and
a row's weighted occurrences come with it from the server (:func:`occurrences`).
:func:`search_rows` is the whole search of the summaries' and the memories' index. Tested in
``tests/test_bm25.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from agent.db.search import index_tokens, search_words
from agent.db.transaction import Row, Snapshot

__all__ = [
    "COUNTED_ROWS",
    "MAX_OCCURRENCES",
    "SEARCHED_TABLES",
    "IndexStatistics",
    "best",
    "bm25",
    "capped_count",
    "estimated_hits",
    "frequencies",
    "index_statistics",
    "occurrences",
    "query_phrases",
    "search_rows",
    "searchable",
    "tsquery",
    "tsvector",
    "word_tokens",
]

T = TypeVar("T")

_K1 = 1.2
_B = 0.75
#: The smallest IDF: FTS5's floor for a word found in half the rows or more.
_IDF_FLOOR = 1e-6
#: A lexeme of a PostgreSQL tsvector or tsquery is shorter than 2 KiB.
_MAX_LEXEME_BYTES = 2046
#: A lexeme of a tsvector's text and its positions (``'it''s':1A,2B``).
_LEXEME = re.compile(r"'((?:[^']|'')*)':([0-9A-D,]+)")
#: PostgreSQL keeps at most this many positions of a lexeme.
MAX_OCCURRENCES = 256
#: Weight class A weighs 1 (the one class of the summaries' and memories' index).
_ONE = {"A": 1.0}
#: The tables with a ``search`` tsvector, a ``search_length`` and a ``search_totals`` row.
SEARCHED_TABLES = ("conversation_summaries", "memories")
#: Rows a token's count (its ``n_i``) reads before it stops. Counting every posting of a word
#: of most rows took 0.36 s over 400,000 turns (100,000 sessions), and a packet pays it: a
#: token in more rows than this takes its share of the rows from the statistics ANALYZE keeps
#: of the column (:func:`estimated_hits`). Below it the count is FTS5's, exactly.
COUNTED_ROWS = 5_000
#: The tables and their tsvector columns whose tokens are counted (never user text).
_COUNTED_COLUMNS = {
    **dict.fromkeys(SEARCHED_TABLES, "search"),
    "conversation_turn_search": "words",
}


@dataclass(frozen=True, slots=True)
class IndexStatistics:
    """What BM25 reads of a whole index.

    Attributes:
        rows: the rows of the index (``N``).
        average_length: tokens per row (``avgdl``).
        hits: for each token, the rows that hold it (``n_i``).
    """

    rows: int
    average_length: float
    hits: dict[str, int]

    def idf(self, token: str) -> float:
        """Return FTS5's IDF of ``token``."""
        found = self.hits.get(token, 0)
        value = math.log((self.rows - found + 0.5) / (found + 0.5))
        return value if value > 0.0 else _IDF_FLOOR


def searchable(token: str) -> bool:
    """Whether ``token`` can be a lexeme (not too long): an index and a query hold no other."""
    return len(token.encode()) <= _MAX_LEXEME_BYTES


def word_tokens(words: Sequence[str]) -> list[list[str]]:
    """Return the searchable tokens of each of ``words`` (the phrase FTS5 makes of it)."""
    return [[token for token in tokens if searchable(token)] for tokens in index_tokens(words)]


def query_phrases(queries: Sequence[str]) -> list[list[str]]:
    """Return the phrases of each of ``queries``: the tokens of its words
    (:func:`~agent.db.search.search_words`, then :func:`word_tokens`), in order."""
    words_of = [search_words(query) for query in queries]
    every = list(dict.fromkeys(word for words in words_of for word in words))
    tokens = dict(zip(every, word_tokens(every), strict=True))
    return [[token for word in words for token in tokens[word]] for words in words_of]


def _quoted(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery(tokens: Iterable[str]) -> str:
    """Return the tsquery text that matches a row holding any of ``tokens`` (as they are)."""
    return " | ".join(_quoted(token) for token in dict.fromkeys(tokens))


def tsvector(columns: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Return the ``tsvector`` literal of a row's tokens: ``columns`` are ``(weight class,
    tokens)``; each occurrence is a position of its token (see the module docstring)."""
    classes: dict[str, list[str]] = {}  # token -> the weight class of each occurrence
    for weight, tokens in columns:
        for token in tokens:
            if searchable(token):
                classes.setdefault(token, []).append(weight)
    return " ".join(
        _quoted(token)
        + ":"
        + ",".join(f"{n}{weight}" for n, weight in enumerate(found[:MAX_OCCURRENCES], start=1))
        for token, found in classes.items()
    )


def occurrences(column: str) -> str:
    """Return a SQL expression of the searched tokens' occurrences in the tsvector ``column``:
    the text of ``column`` without its other lexemes (its one parameter: the tokens, a
    ``text[]``), read by :func:`frequencies`.

    The other lexemes are dropped by ``ts_delete`` twice (the row without the tokens names
    them), in C: unnesting each candidate's whole tsvector instead cost three times as much.
    """
    # ``column`` is a store's column name, never user text.
    return f"ts_delete({column}, tsvector_to_array(ts_delete({column}, ?::text[])))::text"


def frequencies(found: str | None, weights: Mapping[str, float]) -> dict[str, float]:
    """Return each token's weighted occurrences in the tsvector text of :func:`occurrences`
    (``None``: none); ``weights`` gives each weight class's column weight (``D``, PostgreSQL's
    class of an unlabelled position, and any other class not given weigh 0)."""
    return {
        _unquoted(lexeme): sum(
            weights.get(position[-1] if position[-1].isalpha() else "D", 0.0)
            for position in positions.split(",")
        )
        for lexeme, positions in _LEXEME.findall(found or "")
    }


def _unquoted(lexeme: str) -> str:
    return lexeme.replace("''", "'").replace("\\\\", "\\")


def bm25(
    statistics: IndexStatistics,
    phrases: Sequence[str],
    frequency: Mapping[str, float],
    length: int,
) -> float:
    """Return FTS5's ``bm25()`` of a row for a query of ``phrases`` (lower is better).

    Args:
        statistics: the index's figures.
        phrases: the query's tokens, one per phrase (a token twice counts twice, as in FTS5).
        frequency: the row's weighted occurrences of them (:func:`frequencies`).
        length: the row's tokens in every column.
    """
    average = statistics.average_length or 1.0
    norm = _K1 * (1.0 - _B + _B * length / average)
    score = 0.0
    for phrase in phrases:
        found = frequency.get(phrase, 0.0)
        if found:
            score += statistics.idf(phrase) * (found * (_K1 + 1.0)) / (found + norm)
    return -score


def best(
    statistics: IndexStatistics,
    phrases: Sequence[str],
    candidates: Iterable[tuple[T, Mapping[str, float], int]],
    limit: int,
) -> list[tuple[T, float]]:
    """Return the ``limit`` best of ``candidates`` that hold one of ``phrases``, with their
    scores, best first; equal scores in the order given (FTS5: ``ORDER BY bm25, rowid LIMIT``).

    Args:
        statistics: the index's figures.
        phrases: the query's tokens (:func:`bm25`).
        candidates: ``(item, its weighted occurrences, its length)``, in rowid order.
        limit: the most returned.
    """
    scored = [
        (bm25(statistics, phrases, frequency, length), position, item)
        for position, (item, frequency, length) in enumerate(candidates)
        if any(frequency.get(phrase) for phrase in phrases)
    ]
    scored.sort(key=lambda entry: (entry[0], entry[1]))
    return [(item, score) for score, _, item in scored[: max(limit, 0)]]


def _column(table: str) -> str:
    try:
        return _COUNTED_COLUMNS[table]
    except KeyError:
        raise ValueError(f"{table!r} has no counted search index") from None


def capped_count(table: str) -> str:
    """Return a select-list item counting ``table``'s rows that match a tsquery, up to a limit
    (parameters: the tsquery, the limit: :data:`COUNTED_ROWS` or a cap of the caller's).

    One parameter per token, so that the planner sees each and reads its posting list (GIN).

    Raises:
        ValueError: ``table`` has no counted search index.
    """
    column = _column(table)
    # The table and column are the module's own (checked above), never user text.
    return f", (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {column} @@ ?::tsquery LIMIT ?) AS c)"  # noqa: S608, E501


def estimated_hits(conn: Snapshot, table: str, hits: Mapping[str, int]) -> dict[str, int]:
    """Return ``hits`` (a token's rows, counted up to :data:`COUNTED_ROWS`) with each count
    that reached the cap replaced by an estimate: the token's share of the rows ANALYZE
    sampled (``pg_stats.most_common_elems``) times the table's rows, never under the cap; the
    cap where the statistics do not list the token (not analyzed yet, or rarer than what they
    keep). One statement, only when a count reached the cap.

    Raises:
        ValueError: ``table`` has no counted search index.
    """
    column = _column(table)
    capped = [token for token, count in hits.items() if count >= COUNTED_ROWS]
    if not capped:
        return dict(hits)
    row = conn.fetchone(
        "SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs,"
        " (SELECT reltuples FROM pg_class WHERE oid = ?::regclass) AS total"
        " FROM pg_stats WHERE schemaname = current_schema() AND tablename = ? AND attname = ?",
        (table, table, column),
    )
    if row is None or row["elems"] is None:
        return dict(hits)
    # The frequencies end with three figures of their own (min, max, nulls): not elements.
    shares = dict(zip(row["elems"], row["freqs"], strict=False))
    total = float(row["total"])
    return dict(hits) | {
        token: max(COUNTED_ROWS, round(shares.get(token, 0.0) * total)) for token in capped
    }


def index_statistics(conn: Snapshot, table: str, tokens: Sequence[str]) -> IndexStatistics:
    """Read the figures of ``table``'s whole index for ``tokens``.

    The row and token totals are ``search_totals``' row of the table; each token's row count
    is a count over the GIN index with the token's own tsquery (FTS5 reads the token's posting
    list for it too), up to :data:`COUNTED_ROWS`, and estimated past it
    (:func:`estimated_hits`). One statement, two when a count reached the cap.

    Raises:
        ValueError: ``table`` has no search index.
    """
    if table not in SEARCHED_TABLES:
        raise ValueError(f"{table!r} is not one of the searched tables {SEARCHED_TABLES}")
    distinct = list(dict.fromkeys(tokens))
    params: list[object] = []
    for token in distinct:
        params += [tsquery([token]), COUNTED_ROWS]
    counts = capped_count(table) * len(distinct)
    row = conn.fetchone(
        f"SELECT row_count, token_count{counts} FROM search_totals WHERE index_name = ?",  # noqa: S608
        [*params, table],
    )
    if row is None:
        raise ValueError(f"{table!r} has no row in search_totals: is the schema migrated?")
    rows, total, *found = (int(value) for value in row)
    hits = estimated_hits(conn, table, dict(zip(distinct, found, strict=True)))
    return IndexStatistics(rows, total / rows if rows else 0.0, hits)


def search_rows(
    conn: Snapshot,
    table: str,
    columns: str,
    key: str,
    scope: tuple[str, object],
    queries: Sequence[str],
    limit: int,
) -> list[list[tuple[Row, float]]]:
    """Return, for each of ``queries``, the ``limit`` best rows of ``table``'s scope with their
    scores, best first, ties by the primary key (FTS5's ``ORDER BY bm25, rowid LIMIT``).

    A query is the tokens of its words (:func:`query_phrases`); one without any finds nothing.
    Two statements: the scope's rows that hold a token, with their occurrences (GIN), and,
    when there are any, the index's statistics. Every token of the ``search`` column weighs 1
    (its other columns weigh 0 in SQLite's ``bm25()``: the scope's).

    Args:
        conn: the snapshot read.
        table: one of :data:`SEARCHED_TABLES`.
        columns: the columns read (a select list of the store's, never user text).
        key: the primary key (time-ordered, as FTS5's rowid).
        scope: the scope's column (the store's) and its value (``session_id``, ``chat_id``).
        queries: the texts searched for.
        limit: the most rows per query.
    """
    phrases_of = query_phrases(queries)
    searched = list(dict.fromkeys(token for phrases in phrases_of for token in phrases))
    if limit < 1 or not searched:
        return [[] for _ in queries]
    if table not in SEARCHED_TABLES:
        raise ValueError(f"{table!r} is not one of the searched tables {SEARCHED_TABLES}")
    column, value = scope
    rows = conn.fetchall(
        f"SELECT {columns}, search_length, {occurrences('search')} AS found FROM {table}"  # noqa: S608
        f" WHERE {column} = ? AND search @@ ?::tsquery ORDER BY {key}",
        (searched, value, tsquery(searched)),
    )
    if not rows:
        return [[] for _ in queries]
    statistics = index_statistics(conn, table, searched)
    candidates = [(row, frequencies(row["found"], _ONE), int(row["search_length"])) for row in rows]
    return [best(statistics, phrases, candidates, limit) for phrases in phrases_of]
