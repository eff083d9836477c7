"""Tests of agent/db/sqlite_erasure.py: what a delete left holds no text after ``purge_erased``.

The old copy of a moved cell that a page rebuild leaves under ``secure_delete = FAST`` is
caught end to end: ``tests/test_hostile_input.py::test_erasing_one_detail_leaves_no_byte_of_it
_on_disk`` found one (an old state, in a split 1 KiB page) before the purge rebuilt the file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent.db import Database

_SECRET = b"Quokkanebula"


def _on_disk(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


async def _fill(db: Database, rows: int) -> None:
    """A table ``gone`` whose rows each span overflow pages (as a session's state does)."""
    text = (_SECRET.decode() + " ") * 2_000
    await db.write(lambda tx: tx.execute("CREATE TABLE gone (id INTEGER PRIMARY KEY, t)"))
    for n in range(rows):
        await db.write(
            lambda tx, n=n: tx.execute("INSERT INTO gone (id, t) VALUES (?, ?)", (n, text))
        )


async def _free_pages(db: Database) -> int:
    row = await db.fetchone("PRAGMA freelist_count")
    assert row is not None
    return int(row[0])


async def test_a_delete_leaves_its_pages_free_with_the_text_until_purge_erased(
    db: Database,
) -> None:
    """A turn's delete (an FTS5 merge, a rewritten state) frees pages without zeroing them,
    which is what keeps a turn's writes small; ``purge_erased`` rebuilds the file, and what is
    still in the database stays as it was."""
    await _fill(db, 6)
    await db.write(lambda tx: tx.execute("CREATE TABLE kept (t)"))
    await db.write(lambda tx: tx.execute("INSERT INTO kept VALUES ('still here')"))
    await db.write(lambda tx: tx.execute("DELETE FROM gone"))
    await db.fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
    assert await _free_pages(db) > 6
    assert _SECRET in _on_disk(db.path)  # else the test could not fail

    assert await db.purge_erased() is True

    assert _SECRET not in _on_disk(db.path)
    assert [tuple(r) for r in await db.fetchall("SELECT t FROM kept")] == [("still here",)]
    assert await _free_pages(db) == 0
    with sqlite3.connect(db.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
