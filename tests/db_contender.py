"""A second process on the bot's database, for the contention test (``tests/test_contention.py``).

It uses nothing of ``agent``, only Python's ``sqlite3``, as an operator's tool would:

* ``backup DB COPY``: copies the live database with SQLite's online backup API, again and
  again (``src.backup(dst)``, like ``sqlite3 DB .backup COPY``);
* ``write DB``: write transactions like an inspection tool's: ``BEGIN IMMEDIATE``, a small
  write to the sessions table, up to ``--hold`` seconds with the write lock held, ``COMMIT``;
  every 20th round also a ``PRAGMA wal_checkpoint(TRUNCATE)``.

It prints ``ready`` once its connection is open and runs until SIGTERM, then prints how many
rounds it completed as JSON (``{"rounds": N}``) and exits 0. Any SQLite error ends it with
exit code 1 and the error on stderr: its own ``timeout`` is long, so a "database is locked"
here would mean the bot held the lock for that long.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import sqlite3
import sys
import time

#: Seconds this process waits for a lock the bot holds (SQLite's busy timeout).
BUSY_TIMEOUT = 30.0


def _backup(database: str, copy: str, stopped: list[bool]) -> int:
    rounds = 0
    with contextlib.closing(sqlite3.connect(database, timeout=BUSY_TIMEOUT)) as source:
        print("ready", flush=True)
        while not stopped:
            with contextlib.closing(sqlite3.connect(copy)) as target:
                source.backup(target)
            rounds += 1
    return rounds


def _write(database: str, hold: float, stopped: list[bool]) -> int:
    rounds = 0
    conn = sqlite3.connect(database, timeout=BUSY_TIMEOUT, isolation_level=None)
    with contextlib.closing(conn):
        print("ready", flush=True)
        while not stopped:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "UPDATE conversation_sessions SET updated_at = updated_at"
                " WHERE rowid = (SELECT max(rowid) FROM conversation_sessions)"
            )
            time.sleep(random.uniform(0, hold))
            conn.execute("COMMIT")
            rounds += 1
            if rounds % 20 == 0:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            time.sleep(random.uniform(0, hold / 2))
    return rounds


def main(argv: list[str] | None = None) -> int:
    """Run one contender until SIGTERM; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=("backup", "write"))
    parser.add_argument("database")
    parser.add_argument("copy", nargs="?", default="")
    parser.add_argument("--hold", type=float, default=0.1, help="most seconds a lock is held")
    args = parser.parse_args(argv)
    stopped: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    try:
        if args.mode == "backup":
            rounds = _backup(args.database, args.copy, stopped)
        else:
            rounds = _write(args.database, args.hold, stopped)
    except sqlite3.Error as exc:
        print(f"{args.mode}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"rounds": rounds}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
