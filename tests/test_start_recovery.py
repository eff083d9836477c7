"""What a start does before its first reply (issue 18, section 1): the real ``run_bot.py``
against the fake Bot API. A start that hydrates sessions lazily still sends the replies
committed but never delivered (I4) and processes the journaled updates never processed (I1)
before it takes a new update: each chat's new message is answered after them."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

from agent.utils.timestamps import to_db_time
from tests.bot_harness import TOKEN, FakeChats, db_rows, message_update
from tests.fake_bot_api import FakeBotApi, SentCall

BOT_ID = int(TOKEN.split(":", 1)[0])
UNDELIVERED, JOURNALED = 1, 2  # the chats


def _reply_to(call: SentCall) -> int | None:
    return (call.params.get("reply_parameters") or {}).get("message_id")


def _leave_undone(db_path: Path, update_id: int) -> None:
    """Leave the database as a crash would: chat UNDELIVERED's first reply committed and not
    sent; an update of chat JOURNALED journaled (Telegram told) and never processed."""
    with contextlib.closing(sqlite3.connect(db_path, isolation_level=None)) as conn:
        changed = conn.execute(
            "UPDATE conversation_turns SET status = 'answered', reply_message_id = NULL,"
            " delivered_at = NULL WHERE seq = 1 AND session_id = (SELECT session_id FROM"
            " conversation_sessions WHERE chat_id = ? AND closed_at IS NULL)",
            (UNDELIVERED,),
        ).rowcount
        assert changed == 1
        update = message_update(update_id, JOURNALED, "my code word is green", message_id=2)
        conn.execute(
            "INSERT INTO inbound_updates (bot_id, update_id, chat_id, payload, received_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (BOT_ID, update_id, JOURNALED, json.dumps(update), to_db_time(datetime.now(UTC))),
        )


def test_undelivered_replies_and_journaled_updates_go_before_the_first_new_message(
    api: FakeBotApi, chats: FakeChats, polling_bot, tmp_path: Path
):
    """After a stop that left a reply unsent and an update unprocessed, the next start
    sends the reply and answers the journaled update before it answers the new message each
    of those chats has waiting, and its log says it recovered them before it polled."""
    bot = polling_bot()
    first = chats.ask(UNDELIVERED, "my code word is blue")
    chats.ask(JOURNALED, "hello")
    bot.stop()
    journaled = max(chats.update_ids) + 1
    _leave_undone(tmp_path / "memory.db", journaled)
    sent_before = len(api.sent_messages())
    # New messages wait in both chats when the bot starts (update ids after the journaled one).
    api.push_update(message_update(journaled + 1, UNDELIVERED, "and now?", message_id=2))
    api.push_update(message_update(journaled + 2, JOURNALED, "and now?", message_id=3))

    again = polling_bot()
    api.wait_for(
        lambda fake: sum(_reply_to(c) is not None for c in fake.sent_messages()[sent_before:])
        >= 4,
        60,
        "four replies after the restart",
    )
    after = api.sent_messages()[sent_before:]
    order = [(call.chat_id, _reply_to(call)) for call in after if _reply_to(call) is not None]
    assert order.index((UNDELIVERED, 1)) < order.index((UNDELIVERED, 2))
    assert order.index((JOURNALED, 2)) < order.index((JOURNALED, 3))
    assert next(c.text for c in after if (c.chat_id, _reply_to(c)) == (UNDELIVERED, 1)) == (
        first.text
    )
    log = again.stderr
    assert log.index("recovering 1 undelivered replies and 1 unprocessed updates") < log.index(
        "is up"
    )
    deadline = time.monotonic() + 30
    while db_rows(
        tmp_path / "memory.db",
        "SELECT count(*) FROM inbound_updates WHERE status = 'pending'",
    ) != [(0,)]:
        assert time.monotonic() < deadline, "the journaled update is still pending"
        time.sleep(0.05)
    turns = db_rows(
        tmp_path / "memory.db",
        "SELECT t.user_text FROM conversation_turns AS t JOIN conversation_sessions AS s"
        " USING (session_id) WHERE s.chat_id = ? ORDER BY t.seq",
        (JOURNALED,),
    )
    assert turns == [("hello",), ("my code word is green",), ("and now?",)]
    again.stop()
