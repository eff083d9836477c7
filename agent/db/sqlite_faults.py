"""How SQLite's errors map to ours (:mod:`agent.errors`): busy, unwritable, or a failed write.

The :class:`~agent.db.database.Database` retries a busy lock, reports a disk that refuses
writes as :class:`~agent.errors.DatabaseUnwritable` (the same write may commit once the disk
recovers), and any other driver error as :class:`~agent.errors.StorageError`. Tested through
the database in ``tests/test_database.py`` and ``tests/test_disk_faults.py``.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from agent.errors import DatabaseUnwritable, StorageError

__all__ = ["is_busy", "is_unwritable", "read_only_hint", "storage_error", "translate_write_error"]

_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
# The disk, not the write, is at fault: the same write may commit once the disk recovers.
_UNWRITABLE_CODES = frozenset(
    {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN}
)


def is_busy(exc: sqlite3.Error) -> bool:
    """Return whether ``exc`` says another connection holds a lock (worth retrying)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES
    return "locked" in str(exc) or "busy" in str(exc)


def is_unwritable(exc: sqlite3.Error) -> bool:
    """Return whether ``exc`` says the disk refuses writes (full, read-only, I/O error)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _UNWRITABLE_CODES


def storage_error(message: str, exc: sqlite3.Error) -> StorageError:
    """Return ``exc`` as our error: :class:`DatabaseUnwritable` when the disk is at fault."""
    error = (DatabaseUnwritable if is_unwritable(exc) else StorageError)(f"{message}: {exc}")
    error.__cause__ = exc
    return error


def read_only_hint(path: Path) -> str:
    """Return why ``path`` cannot be opened for writing, if a permission says so, or ``""``."""
    # SQLite says "unable to open database file" whether the file, or the directory where it
    # keeps its -wal and -shm files, cannot be written: say which one.
    for what, target in (("file", path), ("directory", path.parent)):
        if target.exists() and not os.access(target, os.W_OK):
            return f" (the {what} {target} is read-only)"
    return ""


def translate_write_error(exc: Exception) -> Exception:
    """Return the error a failed write work reports: a driver error as ours, and a store's
    :class:`StorageError` as :class:`DatabaseUnwritable` when the disk caused it."""
    if isinstance(exc, sqlite3.Error):
        return storage_error("write failed", exc)
    cause = exc.__cause__
    if type(exc) is StorageError and isinstance(cause, sqlite3.Error) and is_unwritable(cause):
        # A store translated the error at its boundary; it was the disk, not the write.
        error = DatabaseUnwritable(str(exc))
        error.__cause__ = cause
        return error
    return exc
