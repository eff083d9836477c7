"""Tests of agent/db/free_pages.py: what a delete freed holds no text after ``purge_erased``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agent.db import Database, free_pages
from agent.db.free_pages import zero_free_pages

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
    which is what keeps a turn's writes small; ``purge_erased`` zeroes them, and what is still
    in the database stays as it was."""
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
    assert await db.fetchone("SELECT 1 FROM sqlite_schema WHERE name LIKE 'erasure%'") is None
    assert await _free_pages(db) > 6  # the pages stay free for the next turns, zeroed
    with sqlite3.connect(db.path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


async def test_a_free_list_larger_than_one_row_is_zeroed_in_several(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(free_pages, "_CHUNK_BYTES", 3 * 4096)
    await _fill(db, 8)
    await db.write(lambda tx: tx.execute("DROP TABLE gone"))
    free = await _free_pages(db)
    assert free > 12

    assert await db.write(zero_free_pages) == free
    await db.fetchall("PRAGMA wal_checkpoint(TRUNCATE)")

    assert _SECRET not in _on_disk(db.path)


async def test_nothing_free_is_nothing_to_do(db: Database) -> None:
    await db.write(lambda tx: tx.execute("CREATE TABLE t (x)"))
    assert await _free_pages(db) == 0
    assert await db.write(zero_free_pages) == 0
    assert await db.fetchone("SELECT 1 FROM sqlite_schema WHERE name LIKE 'erasure%'") is None
