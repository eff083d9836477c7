"""Overwrite a SQLite file's free pages with zeros, so that what an erasure deleted is gone.

A turn frees pages all the time (FTS5 merges rewrite segments, a session row's state gets a new
overflow chain). Zeroing each of them as it is freed (``secure_delete = ON``) wrote a fifth of a
turn's bytes (BENCHMARKS.md, issue 20). The turn's connection uses ``secure_delete = FAST``
instead: deleted content is zeroed inside the pages a write touches anyway, and freed pages keep
what they held. An erasure then calls :func:`zero_free_pages` in a transaction of its own: a
scratch table takes every free page with a blob of zeros, and is dropped again with
``secure_delete = ON``, so the pages go back to the free list holding nothing. The work is
proportional to the free list, not to the file (``VACUUM`` would rewrite the whole file and
needs as much free disk again).

Tested by ``tests/test_free_pages.py`` and, end to end, by the erasure tests of
``tests/test_hostile_input.py`` (no byte of an erased chat in the file or its log).
"""

from __future__ import annotations

from agent.db.transaction import Transaction

__all__ = ["SECURE_DELETE", "zero_free_pages"]

#: The turn's setting (see the module's docstring).
SECURE_DELETE = "PRAGMA secure_delete = FAST;"

_SCRATCH = "erasure_zeroed_pages"
# One row's blob at most (SQLite's default length limit is 1e9 bytes); more rows for more.
_CHUNK_BYTES = 64 * 1024 * 1024
# A page of an overflow chain keeps 4 bytes for the next page's number.
_OVERFLOW_HEADER = 4


async def _one(tx: Transaction, sql: str) -> int:
    row = await tx.fetchone(sql)
    return 0 if row is None else int(row[0])


async def zero_free_pages(tx: Transaction) -> int:
    """Overwrite every page on the file's free list with zeros; return how many there were.

    Run it inside a write transaction, after the deletes: it frees nothing it did not fill.
    """
    free = await _one(tx, "PRAGMA freelist_count")
    if free == 0:
        return 0
    per_page = await _one(tx, "PRAGMA page_size") - _OVERFLOW_HEADER
    await tx.execute(f"CREATE TABLE {_SCRATCH} (zeros BLOB NOT NULL)")
    left, before = free, free + 1
    while 0 < left < before:  # every row takes at least one page: its chain is longer than one
        # SQLite takes a new page from the free list before it grows the file.
        size = min(left * per_page, _CHUNK_BYTES)
        await tx.execute(f"INSERT INTO {_SCRATCH} (zeros) VALUES (zeroblob(?))", (size,))  # noqa: S608
        left, before = await _one(tx, "PRAGMA freelist_count"), left
    # The last page of a chain is written only in part, and a free page SQLite still holds
    # in its cache keeps the rest: dropped with ``secure_delete = ON``, every page of the
    # scratch table is zeroed whole as it goes back to the free list.
    await tx.execute("PRAGMA secure_delete = ON")
    try:
        await tx.execute(f"DROP TABLE {_SCRATCH}")
    finally:
        await tx.execute(SECURE_DELETE)
    return free
