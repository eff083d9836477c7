"""What an erasure leaves in a SQLite file: nothing, and what a turn pays for that.

A turn's connection uses ``secure_delete = FAST`` (:data:`SECURE_DELETE`): deleted content is
zeroed inside the pages a write touches anyway, but a freed page keeps what it held, and a page
that B-tree balancing rebuilt can keep an old copy of a moved cell in its free space (found: an
old copy of a turn's state, holding an erased detail, in a split 1 KiB page). Zeroing
everything as it is freed (``secure_delete = ON``) wrote 15 KB more per turn at 10,000 turns
(57.9 KB against 42.4: BENCHMARKS.md, issue 20). So an erasure ends with :func:`vacuum`
instead: SQLite rebuilds the file from what is live, so that no free page and no page's free
space keeps a byte of what was deleted; :meth:`Database.purge_erased
<agent.db.database.Database.purge_erased>` then empties the write-ahead log. It costs a
rewrite of the file once per erasure (writes wait meanwhile: a fraction of a second for
thousands of turns, seconds for a large file) and as much free disk as the file.

Tested by ``tests/test_sqlite_erasure.py`` and, end to end, by the erasure tests of
``tests/test_hostile_input.py`` (no byte of an erased chat or detail in the file or its log).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["SECURE_DELETE", "vacuum"]

#: The turn's setting (see the module's docstring).
SECURE_DELETE = "PRAGMA secure_delete = FAST;"


def vacuum(path: Path, timeout: float) -> None:
    """Rebuild the file at ``path`` from its live content, on a connection of its own (it
    cannot run in a transaction); wait up to ``timeout`` s for the write lock.

    Raises:
        sqlite3.Error: the lock did not come, or the disk refused.
    """
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        # The copy SQLite builds stays in memory: no temporary file holds the conversations.
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("VACUUM")
    finally:
        conn.close()
