"""Contention (issue 6): other processes read and write the database while the bot is busy.

The real bot (``run_bot.py`` in a subprocess, the fake Bot API) answers a burst of messages
from several chats while two other processes work on its live database file
(:mod:`tests.db_contender`): one copies it with SQLite's online backup API in a loop, the other
runs write transactions as an inspection tool would, holding the write lock up to 100 ms each
time and now and then truncating the WAL. No "database is locked" (or any error) may reach a
user, every message is answered once, and every turn is in the log.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing

import pytest

from tests.bot_harness import REPO, db_rows

CONTENDER = REPO / "tests" / "db_contender.py"
#: Chats and messages per chat of the burst (CONTENTION_MESSAGES=n for a longer run).
CHATS = 8
MESSAGES = int(os.environ.get("CONTENTION_MESSAGES", "25"))
#: Seconds to wait for the whole burst to be answered on a loaded 2-core machine (a guard
#: against a hang, not a speed requirement).
BURST_TIMEOUT = 60.0 + 2.0 * CHATS * MESSAGES


class Contender:
    """A :mod:`tests.db_contender` process on the bot's database."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CONTENDER), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        assert ready == "ready\n", self.proc.stderr.read() if self.proc.stderr else ready

    def stop(self) -> int:
        """Stop it; return how many rounds it completed (fails if it hit an error)."""
        self.proc.terminate()
        out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        return int(json.loads(out.splitlines()[-1])["rounds"])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def contenders() -> Iterator[list[Contender]]:
    started: list[Contender] = []
    yield started
    for contender in started:
        contender.kill()


def test_backups_and_inspection_writes_never_reach_a_user(
    api, chats, polling_bot, contenders, tmp_path
):
    """While a backup loop and an inspection tool's write transactions (each holding the lock
    up to 100 ms) work on the live database, a burst of messages from several chats is
    answered in full: one answer per message, no error text, every turn delivered and in the
    log, no update left pending, and the backup copies are sound databases."""
    # A send slower than the Bot API timeout is sent again (a duplicate the user may see, see
    # "Slow or failing Telegram"): that is not what this test is about, so no send times out.
    bot = polling_bot(AGENT_TELEGRAM_TIMEOUT="120")
    db = tmp_path / "memory.db"
    copy = tmp_path / "backup.db"
    first = 7000
    for chat in range(first, first + CHATS):
        chats.ask(chat, "my name is Ada")  # the sessions exist: the inspection writes touch them
    contenders.append(Contender("backup", str(db), str(copy)))
    contenders.append(Contender("write", str(db), "--hold", "0.1"))

    sent: list[tuple[int, int]] = []
    for n in range(MESSAGES):
        for chat in range(first, first + CHATS):
            sent.append((chat, chats.send(chat, f"remind me to pack item {n}")[1]))

    def all_answered(_: object) -> bool:
        return all(chats.answers_to(chat, message_id) for chat, message_id in sent)

    api.wait_for(all_answered, BURST_TIMEOUT, "not every message was answered")
    backups, writes = (contender.stop() for contender in contenders)
    assert "Ada" in chats.ask(first, "what's my name?").text
    bot.stop()

    for chat, message_id in sent:
        [answer] = chats.answers_to(chat, message_id)
        assert "pack item" in answer.text, answer.text
    texts = [call.text or "" for call in api.sent_messages()]
    assert not [t for t in texts if "locked" in t.lower() or "sorry" in t.lower()]
    assert db_rows(
        db,
        "SELECT s.chat_id, count(*), sum(t.status = 'delivered') FROM conversation_turns t"
        " JOIN conversation_sessions s USING (session_id) GROUP BY s.chat_id",
    ) == [
        (chat, MESSAGES + 2 - (chat != first), MESSAGES + 2 - (chat != first))
        for chat in range(first, first + CHATS)
    ]
    assert db_rows(db, "SELECT DISTINCT status FROM inbound_updates") == [("done",)]
    assert db_rows(db, "PRAGMA integrity_check") == [("ok",)]
    with closing(sqlite3.connect(copy)) as backup:
        assert backup.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert " ERROR " not in bot.stderr
    assert "Traceback" not in bot.stderr
    assert backups > 0
    assert writes > 0
    print(f"contention: {len(sent)} messages, {backups} backups, {writes} write transactions")
