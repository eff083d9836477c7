"""The files of a SQLite database: the main file, its write-ahead log and its shared-memory
index, kept private, in WAL mode, in small pages and measured, and a connection to them with
the project's PRAGMAs (:func:`configure`). Used by
:class:`agent.db.Database`; tested in ``tests/test_database.py`` (permissions, WAL on every
connection, the page size of a new file and an old one; two opening one new file in
``tests/test_migrations.py``) and ``tests/test_cli.py`` (``stats``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from pathlib import Path

from agent.db.sqlite_erasure import SECURE_DELETE
from agent.db.sqlite_faults import is_busy

__all__ = ["configure", "file_sizes", "make_private", "switch_to_wal", "use_small_pages"]

logger = logging.getLogger("agent.db.database")

_PRIVATE_FILE = 0o600
_PARTS = ("database", "database-wal", "database-shm")
# A turn changes a few hundred bytes of each of many pages, and the write-ahead log writes
# whole pages: 1 KiB pages write a turn in a third of the bytes 4 KiB pages do (BENCHMARKS.md,
# issue 20).
_PAGE_SIZE = 1024
# The log is copied back into the file once it holds this much (SQLite's default, 1,000 pages,
# of its default 4 KiB pages), whatever the page size.
_WAL_BYTES = 4_000 * 1024


# Temporary b-trees (sorts, FTS5 merges) in memory: in files they were most of a turn's writes.
_TEMP_STORE = "PRAGMA temp_store = MEMORY;"


def configure(
    conn: sqlite3.Connection,
    *,
    query_only: bool,
    synchronous: str,
    busy_timeout_ms: int,
    lock_timeout: float,
) -> None:
    """Put a new connection's database in WAL mode and give the connection the project's
    PRAGMAs (rows as :class:`sqlite3.Row`).

    Call it in the thread that will use the connection: it may sleep (:func:`switch_to_wal`).
    Every connection asks for WAL: on a new file, whichever connects first switches it.

    Raises:
        sqlite3.Error: the file is no database, or cannot be read (the caller closes ``conn``).
    """
    conn.row_factory = sqlite3.Row
    use_small_pages(conn)  # before WAL: a new file takes them
    switch_to_wal(conn, lock_timeout)
    # One call for every PRAGMA. Erasure (/forget) must leave no text in the file: deleted
    # content is zeroed in the pages a write touches, and purge_erased rebuilds the file
    # (agent.db.sqlite_erasure).
    conn.executescript(
        f"PRAGMA busy_timeout = {busy_timeout_ms:d};"
        f" {_TEMP_STORE}"
        " PRAGMA foreign_keys = ON;"
        f" PRAGMA synchronous = {synchronous};"
        f" {SECURE_DELETE}"
        + (" PRAGMA query_only = ON;" if query_only else "")
    )


def _side_files(path: Path) -> tuple[Path, Path]:
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


def make_private(path: Path) -> None:
    """Create the database file readable by its owner only (``0600``), or take the group's and
    others' permissions away from it.

    SQLite creates the ``-wal`` and ``-shm`` files with the database file's permissions, so
    they are private too; existing ones are made so as well. The file holds conversations: no
    other local user may read them. A file we may not change is left as it is, with a warning.
    """
    with contextlib.suppress(OSError):  # SQLite says why a file cannot be opened, better
        os.close(os.open(path, os.O_RDONLY | os.O_CREAT, _PRIVATE_FILE))
    for name in (path, *_side_files(path)):
        try:
            mode = name.stat().st_mode & 0o777
            if mode & 0o077:
                name.chmod(mode & ~0o077)
        except FileNotFoundError:
            continue
        except OSError as exc:
            logger.warning("%s stays readable by other users: %s", name, exc.strerror or exc)


def file_sizes(path: Path) -> dict[str, int]:
    """Return the sizes of the database file at ``path`` and of its side files (``0`` for one
    that does not exist), keyed ``database``, ``database-wal``, ``database-shm``."""
    parts = zip(_PARTS, (path, *_side_files(path)), strict=True)
    return {part: name.stat().st_size if name.exists() else 0 for part, name in parts}


def switch_to_wal(conn: sqlite3.Connection, lock_timeout: float) -> None:
    """Put the database of ``conn`` in WAL mode (a no-op once it is: the mode is persistent).

    Two connections switching a new file to WAL at once can get SQLITE_BUSY at once, without
    SQLite's busy handler waiting (lock escalation): retried with backoff for up to
    ``lock_timeout`` seconds. It sleeps: call it in the connection's own thread.
    """
    deadline = time.monotonic() + lock_timeout
    delay = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.Error as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
        else:
            return


def use_small_pages(conn: sqlite3.Connection) -> None:
    """Give a new database file 1 KiB pages (an existing one keeps its own) and copy the log
    back at 4 MB of it. Call it before :func:`switch_to_wal`: a file in WAL mode has its size.
    """
    conn.execute(f"PRAGMA page_size = {_PAGE_SIZE:d}")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute(f"PRAGMA wal_autocheckpoint = {_WAL_BYTES // page_size:d}")
