"""Hostile and malformed input against the real bot (DESIGN.md section 7, issue 6).

``run_bot.py`` runs in a subprocess against the fake Bot API (the fixtures are in
``conftest.py``): updates Telegram would never send, chats that must not see each other, an
erasure checked down to the bytes of the files, and the token under every failure. The
lane-level versions, with many more examples, are in ``test_hostile_input.py``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from agent.memory import CheckpointWriter
from tests.bot_harness import (
    BOT_USERNAME,
    TOKEN,
    TOKEN_SECRET,
    BotProcess,
    FakeChats,
    db_rows,
)
from tests.fake_bot_api import FakeBotApi
from tests.hostile import INJECTIONS, ODD_CHARACTERS, files_containing

#: How long the bot may take to work through a burst of updates.
PROCESS_TIMEOUT = 60.0


def _wait_processed(db: Path, update_ids: list[int], timeout: float = PROCESS_TIMEOUT) -> None:
    """Wait until every update was handled once: done, or failed at least once."""
    marks = ",".join("?" * len(update_ids))
    sql = (
        f"SELECT count(*) FROM inbound_updates WHERE update_id IN ({marks})"  # noqa: S608
        " AND (status != 'pending' OR attempts > 0)"
    )
    deadline = time.monotonic() + timeout
    while db_rows(db, sql, tuple(update_ids)) != [(len(update_ids),)]:
        if time.monotonic() > deadline:
            left = db_rows(
                db, "SELECT update_id, status, attempts FROM inbound_updates WHERE status ="
                " 'pending' AND attempts = 0"
            )
            raise AssertionError(f"updates not all handled within {timeout}s: {left}")
        time.sleep(0.1)


def _message(chat: dict[str, Any], text: str | None, **fields: Any) -> dict[str, Any]:
    data = {"message_id": 1, "date": 1_700_000_000, "chat": chat, **fields}
    data.setdefault("from", {"id": 8888, "is_bot": False, "first_name": "Eve"})
    return data if text is None else {**data, "text": text}


def _malformed_updates(first_id: int) -> list[dict[str, Any]]:
    """Updates the Bot API would never send, one of each kind of damage."""
    private = {"id": 8001, "type": "private", "first_name": "Eve"}
    group = {"id": -8002, "type": "group", "title": "Broken"}
    fox = "🦊@" + BOT_USERNAME + " hi"
    kinds: list[dict[str, Any]] = [
        {"message": {"message_id": 1, "date": 1_700_000_000, "text": "no chat at all"}},
        {"message": _message(private, "a date that is no number", date="yesterday")},
        {"message": _message({"id": 2**63, "type": "private"}, "a chat id past 64 bits")},
        {"message": _message({"id": "abc", "type": "private"}, "a chat id that is text")},
        {"message": _message(group, "@x hi", entities=[{"type": "mention", "offset": "a",
                                                      "length": 2}])},
        {"message": _message(group, "hi", entities=[{"type": "mention", "offset": 500,
                                                     "length": 9}])},
        {"message": _message(group, fox, entities=[{"type": "mention", "offset": 1,
                                                    "length": len(BOT_USERNAME) + 1}])},
        {"message": _message(group, None, photo=[], caption_entities=[
            {"type": "mention", "offset": 0, "length": 4}])},
        {"message": _message(private, "/history 3", entities=[{"type": "bot_command",
                                                              "offset": 0, "length": "x"}])},
        {"message": _message({"id": 8003, "type": "martian"}, "a chat of an unknown type")},
        {"message": _message(private, "two kinds"), "edited_message": _message(private, "x")},
        {"callback_query": {"id": "q", "from": _message(private, None)["from"],
                            "chat_instance": "c",
                            "data": "forget:../../etc/passwd",
                            "message": _message(private, "Forget?")}},
    ]
    return [{"update_id": first_id + n, **kind} for n, kind in enumerate(kinds)]


def test_malformed_updates_are_survived_and_the_next_message_is_answered(
    api: FakeBotApi, chats: FakeChats, polling_bot: Any, tmp_path: Path
) -> None:
    """Updates with no chat, a date that is no number, ids past 64 bits or of the wrong type,
    entities out of range, of the wrong type or cutting an emoji in half, caption entities
    without a caption, an unknown chat type, two kinds at once, a forged /forget button:
    the bot stays up, confirms every one, records the readable ones, and
    answers the next message; odd and oversized texts are stored as they were sent."""
    bot = polling_bot()
    chat = 8010
    assert "Ada" in chats.ask(chat, "my name is Ada").text
    broken = _malformed_updates(api.push_message(chat, "before") + 1)
    for update in broken:
        api.push_raw(update)
    odd = ODD_CHARACTERS + " " + " ".join(INJECTIONS)
    oversized = ("x" * 100 + "\u202e" + "🦊") * 60  # 6,180 characters, past Telegram's 4,096
    for text in (odd, oversized):
        chats.send(chat, text)
    assert "Ada" in chats.ask(chat, "what's my name?").text

    ids = [u["update_id"] for u in broken] + chats.update_ids
    api.wait_for(lambda a: set(ids) <= a.confirmed_update_ids, PROCESS_TIMEOUT, "not confirmed")
    db = tmp_path / "memory.db"
    _wait_processed(db, ids)
    assert bot.alive
    bot.stop()
    stored = {text for (text,) in db_rows(db, "SELECT user_text FROM conversation_turns")}
    assert {odd, oversized, "a chat of an unknown type", "hi"} <= stored
    assert "no chat at all" not in stored
    assert "a chat id past 64 bits" not in stored
    # The unreadable update was journaled as Telegram sent it, without a chat.
    [(chat_id,)] = db_rows(
        db, "SELECT chat_id FROM inbound_updates WHERE update_id = ?", (broken[1]["update_id"],)
    )
    assert chat_id is None


def _marker(index: int) -> str:
    return "Zq" + "abcdefgh"[index] + "marker"


def test_chats_never_share_memory_end_to_end(
    api: FakeBotApi, chats: FakeChats, polling_bot: Any, tmp_path: Path
) -> None:
    """Six private chats and two groups (whose members also talk privately), each with a
    marker of its own: no answer, command output, export or checkpoint file of one chat holds
    another chat's marker, and a forged /forget button naming another chat's conversation
    erases nothing."""
    bot = polling_bot()
    privates = {9000 + i: _marker(i) for i in range(6)}
    groups = {-9100: (_marker(6), [9000, 9001, 9002]), -9101: (_marker(7), [9003, 9004, 9005])}
    markers = {**privates, **{chat: marker for chat, (marker, _) in groups.items()}}
    seen: dict[int, list[str]] = {chat: [] for chat in markers}

    for chat, marker in privates.items():
        for text in (f"my name is {marker}", f"I'm planning a trip to {marker}ville in May",
                     f"remind me to call {marker}"):
            seen[chat].append(chats.ask(chat, text).text or "")
    for chat, (marker, members) in groups.items():
        for member, text in zip(members, (f"my name is {marker}", f"I propose {marker}cafe",
                                          f"let's go with {marker}cafe"), strict=True):
            chats.send(chat, text, user_id=member, chat_type="group", chat_title="Trip")
    questions = ("what's my name?", "what do you know about me?", "what did we talk about?",
                 "what is still open?", "what did we decide?")
    commands = ("/memory", "/history 50", "/topics", "/loops", "/stats")
    for chat in markers:
        extra: dict[str, Any] = {}
        if chat < 0:
            extra = {"user_id": groups[chat][1][0], "chat_type": "group", "chat_title": "Trip"}
        prefix = f"@{BOT_USERNAME} " if chat < 0 else ""
        for text in questions:
            seen[chat].append(chats.ask(chat, prefix + text, **extra).text or "")
        for text in commands:
            seen[chat].append(chats.ask(chat, text, **extra).text or "")
        for other in (m for c, m in markers.items() if c != chat):
            recalled = chats.ask(chat, f"/recall {other}", **extra).text or ""
            assert recalled.startswith("Nothing in this conversation matches"), recalled
        export = chats.ask(chat, "/export", **extra)
        assert export.document is not None
        seen[chat].append(export.document.decode())
        seen[chat].append(chats.ask(chat, f"/recall {markers[chat]}", **extra).text or "")

    # A forged confirmation in chat 9000 naming chat 9001's conversation erases nothing.
    victim = CheckpointWriter.parse(seen[9001][-2].encode()).session_id
    forged = chats.ask(9000, "/forget")
    sent = len(api.sent_messages(9000))
    api.push_callback_query(9000, 9000, f"forget:{victim}", forged.message_id)
    assert "nothing was erased" in chats.wait_for_message(9000, "erased", after=sent).text
    assert markers[9001] in (chats.ask(9001, "what's my name?").text or "")
    bot.stop()

    for path in sorted((tmp_path / "checkpoints").glob("*.json")):
        snapshot = CheckpointWriter.parse(path.read_bytes())
        seen[snapshot.chat_id].append(path.read_text())
    for chat, outputs in seen.items():
        text = "\n".join(outputs).lower()
        assert markers[chat].lower() in text
        leaked = [m for other, m in markers.items() if other != chat and m.lower() in text]
        assert leaked == [], f"chat {chat} saw {leaked}"


def test_forget_leaves_no_byte_of_the_chat_on_disk_end_to_end(
    api: FakeBotApi, chats: FakeChats, polling_bot: Any, tmp_path: Path
) -> None:
    """After /forget and its button, what the chat said is in no byte of the database file,
    its write-ahead log or the checkpoint directory, while the bot runs and after it stops;
    the next message starts a fresh conversation and another chat keeps its memory."""
    chat, other = 9500, 9501
    bot = polling_bot()
    for text in ("my name is Wombatquasar", "I'm planning a trip to Wombatquasarville in May",
                 "remind me to call Wombatquasar", "what do you know about me?"):
        chats.ask(chat, text)
    chats.ask(other, "my name is Bob")
    assert chats.ask(chat, "/export").document is not None
    needles = (b"Wombatquasar", b"wombatquasar", b"quasar")
    assert files_containing(tmp_path, *needles)  # the search can find it

    question = chats.ask(chat, "/forget")
    button = question.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    sent = len(api.sent_messages(chat))
    api.push_callback_query(chat, chat, button, question.message_id)
    chats.wait_for_message(chat, "forgotten", after=sent)
    assert "Wombatquasar" not in (chats.ask(chat, "what's my name?").text or "")
    fresh = chats.ask(chat, "/export").document  # the conversation that question started
    assert fresh is not None
    assert CheckpointWriter.parse(fresh).turn_count == 1
    assert b"quasar" not in fresh

    files = [p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".log")]
    assert {"memory.db", "memory.db-wal"} <= {p.name for p in files}
    assert [hit for hit in files_containing(tmp_path, *needles) if ".log:" not in hit] == []
    assert "Bob" in (chats.ask(other, "what's my name?").text or "")
    bot.stop()
    assert [hit for hit in files_containing(tmp_path, *needles) if ".log:" not in hit] == []
    assert b"quasar" not in (tmp_path / f"{bot.stderr_path.name}").read_bytes()


def test_the_token_stays_secret_through_faults_crashes_and_revocation(
    api: FakeBotApi, chats: FakeChats, launch: Any, tmp_path: Path
) -> None:
    """At DEBUG level, through failed sends and polls, handlers that raise, an update that
    cannot be read, a SIGKILL and restart, the token being revoked mid-run (401: exit 2), and
    a start with a token Telegram rejects, neither the token nor its secret half appears in
    the bot's output or in any file it writes."""
    chat = 9700
    runs: list[BotProcess] = []

    def start(**extra: str) -> BotProcess:
        runs.append(launch(api, AGENT_LOG_LEVEL="DEBUG", **extra))
        runs[-1].wait_until_polling(api)
        return runs[-1]

    first = start()
    chats.ask(chat, "my name is Ada")
    api.fail_next("sendMessage", status=500)
    api.drop_connections("getUpdates")
    chats.ask(chat, "remind me to book the hotel")
    for update in _malformed_updates(api.push_message(chat, "/stats") + 1):
        api.push_raw(update)  # tracebacks from failing handlers, an unreadable batch
    chats.ask(chat, "/export")
    first.kill()

    second = start()
    assert "Ada" in (chats.ask(chat, "what's my name?").text or "")
    api.token = "654321:RevokedSecretValue_abcdefghij"  # noqa: S105 (the fake's, a fake)
    assert second.wait(60) == 2
    assert "TELEGRAM_BOT_TOKEN" in second.stderr

    rejected_token = "777777:RejectedSecretValue_abcdefghij"  # noqa: S105 (a fake)
    rejected = launch(
        api, workdir=tmp_path / "rejected", token=rejected_token, AGENT_LOG_LEVEL="DEBUG"
    )
    assert rejected.wait(60) == 2

    output = "".join(run.stderr + run.stdout for run in [*runs, rejected])
    assert "DEBUG" in output
    assert "Traceback" in output  # the error paths logged their tracebacks...
    assert "[REDACTED]" in output  # ...and the lines that held a secret were redacted
    for secret in (TOKEN, TOKEN_SECRET, "RejectedSecretValue_abcdefghij"):
        assert secret not in output, secret
        assert files_containing(tmp_path, secret.encode()) == [], secret
