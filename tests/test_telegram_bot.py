"""End-to-end tests of the bot (issue 3): the real ``run_bot.py`` against a fake Bot API.

Every test starts ``python run_bot.py`` as a subprocess (see :mod:`tests.bot_harness`) with its
database and checkpoints in ``tmp_path`` and ``TELEGRAM_BASE_URL`` pointing at a
:class:`~tests.fake_bot_api.FakeBotApi` on 127.0.0.1; nothing else is reachable or faked. The
tests talk to the bot only as Telegram would (updates in, Bot API calls out), then look at
the files it leaves behind.
"""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson
import pytest

from agent.memory import CheckpointWriter
from tests.bot_harness import (
    ANSWER_TIMEOUT,
    BOT_USERNAME,
    TOKEN,
    TOKEN_SECRET,
    FakeChats,
    db_rows,
    free_port,
    is_reminder,
    message_update,
)
from tests.fake_bot_api import FakeBotApi, SentCall

WEBHOOK_SECRET = "s3cret"  # noqa: S105 (the test's own)


def _turn_texts(db: Path, chat_id: int) -> list[tuple[str, str | None, int | None, str]]:
    """(user_text, assistant_text, user_id, status) of the chat's turns, in order."""
    return db_rows(
        db,
        "SELECT t.user_text, t.assistant_text, t.user_id, t.status FROM conversation_turns t "
        "JOIN conversation_sessions s USING (session_id) WHERE s.chat_id = ? "
        "ORDER BY t.session_id, t.seq",
        (chat_id,),
    )


def _error_lines(stderr: str, *marks: str) -> list[str]:
    """The non-empty lines of ``stderr`` (with ``marks``: those containing one of them)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    return [line for line in lines if any(mark in line for mark in marks)] if marks else lines


def _reminders(api: FakeBotApi, chat_id: int, label: str) -> list[SentCall]:
    return [c for c in api.sent_messages(chat_id) if is_reminder(c) and label in (c.text or "")]


# -- 1. a private chat end to end -----------------------------------------------------------


def test_private_chat_end_to_end(api, chats, polling_bot, tmp_path):
    """A private chat remembers facts, keeps to-dos, fires reminders, answers every command,
    exports its checkpoint, and /forget (confirmed with the button) erases it everywhere."""
    chat = 1001
    bot = polling_bot()

    assert "Ada" in chats.ask(chat, "my name is Ada").text
    assert "Lisbon" in chats.ask(chat, "I'm planning a trip to Lisbon in May").text
    assert "Ada" in chats.ask(chat, "what's my name?").text
    about = chats.ask(chat, "what do you know about me?").text
    assert "Ada" in about
    assert "Lisbon" in about
    assert "book the hotel" in chats.ask(chat, "remind me to book the hotel").text
    assert "book the hotel" in chats.ask(chat, "what is still open?").text
    assert "book the hotel" in chats.ask(chat, "I booked the hotel").text
    assert "sunscreen" in chats.ask(chat, "remind me to buy sunscreen").text

    assert "call mom" in chats.ask(chat, "remind me in 2 seconds to call mom").text
    api.wait_for(lambda a: _reminders(a, chat, "call mom"), 30, "the reminder never fired")
    [fired] = _reminders(api, chat, "call mom")
    assert "reply_parameters" not in fired.params  # a message of its own, not an answer

    assert "/help" in chats.ask(chat, "/start").text
    help_text = chats.ask(chat, "/help").text
    assert all(f"/{name}" in help_text for name in ("memory", "history", "recall", "forget"))
    assert "Ada" in chats.ask(chat, "/memory").text
    history = chats.ask(chat, "/history 2").text
    assert "The last 2 turns" in history
    assert len(set(re.findall(r"^#(\d+) ", history, flags=re.MULTILINE))) == 2
    assert "call mom" in history  # the latest turns: the reminder and the message setting it
    assert "Lisbon" in chats.ask(chat, "/topics").text
    loops = chats.ask(chat, "/loops").text
    assert "buy sunscreen" in loops
    assert "book the hotel" not in loops  # done
    assert "call mom" not in loops  # fired
    recall = chats.ask(chat, "/recall Lisbon").text
    assert "Best matches" in recall
    assert "Lisbon" in recall
    assert "Turns:" in chats.ask(chat, "/stats").text

    export = chats.ask(chat, "/export")
    assert export.method == "sendDocument"
    assert export.document is not None
    assert export.filename is not None
    session_id = Path(export.filename).stem
    snapshot = CheckpointWriter.parse(export.document, session_id=session_id)
    assert snapshot.chat_id == chat
    assert snapshot.turn_count >= 10
    assert b"Ada" in export.document
    base = tmp_path / "checkpoints" / export.filename
    journal = base.with_suffix(".journal")  # the turns since the base file was written
    on_disk = CheckpointWriter.parse(
        base.read_bytes(), journal=journal.read_bytes() if journal.exists() else b""
    )
    assert on_disk.session_id == session_id
    assert on_disk.turn_count == snapshot.turn_count

    ask_first = chats.ask(chat, "/forget")
    keyboard = ask_first.params["reply_markup"]["inline_keyboard"]
    button = keyboard[0][0]
    assert session_id in button["callback_data"]
    sent = len(api.sent_messages(chat))
    api.push_callback_query(chat, chat, button["callback_data"], ask_first.message_id)
    assert "forgotten" in chats.wait_for_message(chat, "forgotten", after=sent).text
    assert api.calls("answerCallbackQuery")

    after = chats.ask(chat, "what's my name?").text
    assert "Ada" not in after
    db = tmp_path / "memory.db"
    lisbon = "%Lisbon%"
    assert db_rows(
        db,
        "SELECT count(*) FROM conversation_turns WHERE user_text LIKE ? OR assistant_text LIKE ?",
        (lisbon, lisbon),
    ) == [(0,)]
    assert db_rows(
        db,
        "SELECT count(*) FROM conversation_turns_fts WHERE conversation_turns_fts MATCH ?",
        ("Lisbon",),
    ) == [(0,)]
    assert db_rows(db, "SELECT count(*) FROM inbound_updates WHERE payload LIKE ?", (lisbon,)) == [
        (0,)
    ]
    assert db_rows(
        db, "SELECT count(*) FROM conversation_sessions WHERE session_id = ?", (session_id,)
    ) == [(0,)]
    assert not (tmp_path / "checkpoints" / export.filename).exists()
    bot.stop()


# -- 2. restart without amnesia -------------------------------------------------------------


def test_restart_keeps_facts_loops_and_reminders(api, chats, polling_bot, tmp_path):
    """After a SIGTERM and a new start on the same files, the bot still knows the facts and
    open loops, and a reminder set before the stop fires after the restart, exactly once."""
    chat = 2002
    first = polling_bot()
    chats.ask(chat, "my name is Ada")
    chats.ask(chat, "remind me to book the hotel")
    assert "stretch" in chats.ask(chat, "remind me in 4 seconds to stretch").text
    first.stop()  # right away: the reminder is not due yet
    assert "shutting down" in first.stderr
    assert "memory lane shut down cleanly" in first.stderr
    assert _reminders(api, chat, "stretch") == [], "the reminder fired before the restart"
    statuses = db_rows(tmp_path / "memory.db", "SELECT DISTINCT status FROM conversation_sessions")
    assert statuses == [("shutdown_clean",)]

    second = polling_bot()
    assert "Ada" in chats.ask(chat, "what's my name?").text
    assert "book the hotel" in chats.ask(chat, "/loops").text
    api.wait_for(lambda a: _reminders(a, chat, "stretch"), 30, "the reminder never fired")
    second.stop()

    # A third run: the fired reminder is closed for good and is not sent again.
    third = polling_bot()
    loops = chats.ask(chat, "/loops").text
    assert "book the hotel" in loops
    assert "stretch" not in loops
    still_open = chats.ask(chat, "what is still open?").text
    assert "book the hotel" in still_open
    assert "stretch" not in still_open
    third.stop()
    assert len(_reminders(api, chat, "stretch")) == 1


def _due_times(db: Path) -> list[datetime]:
    """The due times of the reminders the turn log holds (as the turns that set them say)."""
    return [
        datetime.fromisoformat(job["due_at"])
        for (refs,) in db_rows(db, "SELECT job_refs FROM conversation_turns")
        for job in orjson.loads(refs)
        if job["kind"] == "reminder" and job["status"] == "scheduled"
    ]


@pytest.mark.parametrize("down", ["kill", "stop"])
def test_reminder_due_while_the_bot_was_down_fires_once_after_the_restart(
    api, chats, polling_bot, tmp_path, down
):
    """A reminder committed before a SIGKILL (or a SIGTERM), whose time passes while the bot
    is down, fires at the next start, once: not never, and not again at a third start."""
    chat = 2003
    first = polling_bot()
    assert "water" in chats.ask(chat, "remind me in 2 seconds to water the plants").text
    getattr(first, down)()
    [due] = _due_times(tmp_path / "memory.db")
    time.sleep(max((due - datetime.now(UTC)).total_seconds(), 0) + 0.5)  # down past its time
    assert _reminders(api, chat, "water") == [], "the reminder fired before the restart"

    second = polling_bot()
    api.wait_for(lambda a: _reminders(a, chat, "water"), 30, "the reminder never fired")
    assert "water" not in chats.ask(chat, "/loops").text
    second.stop()
    third = polling_bot()
    assert "water" not in chats.ask(chat, "/loops").text
    third.stop()
    assert len(_reminders(api, chat, "water")) == 1


def test_wall_clock_jumps_while_running_neither_lose_nor_repeat_a_reminder(
    api, chats, polling_bot, tmp_path
):
    """The wall clock jumps while the bot runs (an NTP step: libfaketime shifts the OS clock
    under the bot; monotonic time runs on). A reminder that a jump forward skips over fires
    once, at once, not never; after a jump back a reminder fires once, when the wall clock
    reaches its time (reminders keep absolute UTC times)."""
    libfaketime = pytest.importorskip("libfaketime")
    _, faketime_env = libfaketime.get_reload_information()
    chat = 2004
    offset = tmp_path / "clock-offset"  # seconds libfaketime adds to the bot's wall clock
    offset.write_text("+0\n")
    bot = polling_bot(AGENT_HEAL_INTERVAL="1", FAKETIME_TIMESTAMP_FILE=str(offset), **faketime_env)
    assert "stretch" in chats.ask(chat, "remind me in 20 minutes to stretch").text
    offset.write_text("+3600\n")  # an hour later, at once: 40 minutes past its time
    api.wait_for(lambda a: _reminders(a, chat, "stretch"), 60, "the skipped reminder never fired")
    assert "water" in chats.ask(chat, "remind me in 2 seconds to water the plants").text
    offset.write_text("+3590\n")  # ten seconds back
    api.wait_for(lambda a: _reminders(a, chat, "water"), 60, "the reminder never fired")
    loops = chats.ask(chat, "/loops").text
    assert "stretch" not in loops
    assert "water" not in loops
    bot.stop()
    assert len(_reminders(api, chat, "stretch")) == 1
    assert len(_reminders(api, chat, "water")) == 1
    # APScheduler says so when it skips a run; the periodic maintenance jobs may skip one.
    assert not [line for line in bot.stderr.splitlines() if "was missed" in line and "job_" in line]


def test_allow_list_refuses_others_once_and_keeps_nothing_of_theirs(
    api, chats, polling_bot, tmp_path
):
    """With AGENT_ALLOWED_USER_IDS set, a stranger who floods the bot (messages, known and
    unknown commands, a sticker, a mention in a group, a forged /forget button naming an
    allowed user's conversation) gets one polite refusal in all, then silence; nothing they
    wrote is stored: no turn, no session, no journal text, no checkpoint, no byte of the
    database files. Allowed users are answered and keep their conversations."""
    bot = polling_bot(AGENT_ALLOWED_USER_IDS="4242, 4343")
    stranger = 5005
    assert "Ada" in chats.ask(4242, "my name is Ada", user_id=4242).text
    export = chats.ask(4242, "/export", user_id=4242)
    victim = Path(export.filename).stem
    refusal = chats.ask(stranger, "my secret is swordfish", user_id=stranger).text
    assert "private" in refusal
    flood = [chats.send(stranger, f"swordfish {n}", user_id=stranger)[0] for n in range(5)]
    for text in ("/history swordfish", "/recall swordfish", "/frobnicate swordfish", None):
        flood.append(chats.send(stranger, text, user_id=stranger, sticker=text is None)[0])
    flood.append(
        chats.send(-6006, f"@{BOT_USERNAME} swordfish", user_id=stranger, chat_type="group")[0]
    )
    flood.append(chats.send(stranger, "/forget", user_id=stranger)[0])
    flood.append(api.push_callback_query(stranger, stranger, f"forget:{victim}", 1))
    # An allowed user's forged button naming someone else's conversation erases nothing.
    flood.append(api.push_callback_query(4343, 4343, f"forget:{victim}", 1))
    api.wait_for(lambda a: set(flood) <= a.confirmed_update_ids, 30, "flood not confirmed")
    assert "Ada" in chats.ask(4242, "what's my name?", user_id=4242).text
    bot.stop()  # lets every queued update finish

    assert [call.text for call in api.sent_messages(stranger)] == [refusal]
    assert api.sent_messages(-6006) == []
    db = tmp_path / "memory.db"
    assert db_rows(db, "SELECT DISTINCT status FROM inbound_updates") == [("done",)]
    assert db_rows(
        db, "SELECT count(*) FROM conversation_turns WHERE user_text LIKE '%sword%'"
    ) == [(0,)]
    assert db_rows(db, "SELECT count(*) FROM inbound_updates WHERE payload LIKE '%sword%'") == [
        (0,)
    ]
    assert db_rows(
        db, "SELECT count(*) FROM conversation_sessions WHERE chat_id IN (5005, -6006)"
    ) == [(0,)]
    assert db_rows(db, "SELECT chat_id FROM conversation_sessions") == [(4242,)]
    assert (tmp_path / "checkpoints" / export.filename).is_file()
    assert [p.name for p in tmp_path.rglob("*") if b"swordfish" in _bytes(p)] == [], (
        "the stranger's text is somewhere on disk"
    )


def _bytes(path: Path) -> bytes:
    """A file's bytes (the bot's own logs aside: they are its stderr, captured by the test)."""
    return b"" if not path.is_file() or path.name.endswith(".log") else path.read_bytes()


# -- 3. chats apart, and a group -------------------------------------------------------------


def test_two_chats_never_share_memory(api, chats, polling_bot):
    """What one chat tells the bot never reaches another chat's answers or commands."""
    ada, bob = 3001, 3002
    bot = polling_bot()
    chats.ask(ada, "my name is Ada")
    chats.ask(ada, "I'm planning a trip to Reykjavik in May")

    # The offline concierge's examples say "my name is Ada": look for what chat A said.
    name = chats.ask(bob, "what's my name?", first_name="Bob").text
    assert "don't know your name" in name
    assert "Your name is Ada" not in name
    for command in ("/memory", "/history", "/topics", "/loops", "/stats"):
        text = chats.ask(bob, command, first_name="Bob").text
        assert "Ada" not in text, command
        assert "Reykjavik" not in text, command
    assert "Nothing in this conversation matches" in chats.ask(bob, "/recall Reykjavik").text
    about = chats.ask(bob, "what do you know about me?", first_name="Bob").text
    assert "your name is Ada" not in about.lower()
    assert "Reykjavik" not in about
    assert "Ada" in chats.ask(ada, "what's my name?").text
    bot.stop()


def test_a_chat_that_keeps_writing_does_not_hold_up_the_others(api, chats, polling_bot):
    """Past AGENT_MAX_CONCURRENT_CHATS busy chats, the chats take turns: a chat that always has
    its next message waiting (it writes again the moment each answer comes, three messages
    ahead) does not keep the only slot, and another chat's message is answered while it goes
    on. (The 1,000-chat throughput bench left chats unanswered for minutes: the first 256
    chats, the cap, kept every slot, and the others' messages waited in the journal.)"""
    busy, other, ahead = 3201, 3202, 3
    writing = True
    busy_sent: list[int] = []
    busy_answers: list[int] = []

    def write() -> None:
        busy_sent.append(chats.send(busy, f"and another thing, number {len(busy_sent) + 1}")[1])

    def on_sent(call: SentCall) -> None:
        # On the fake's server thread, before the answer goes out: the next message is queued
        # for getUpdates before the bot can ask for it.
        if call.chat_id == busy:
            busy_answers.append((call.params.get("reply_parameters") or {})["message_id"])
            if writing:
                write()

    bot = polling_bot(AGENT_MAX_CONCURRENT_CHATS="1")
    api.on_sent = on_sent
    for _ in range(ahead):
        write()
    api.wait_for(lambda _: len(busy_answers) >= 5, ANSWER_TIMEOUT, "the busy chat is answered")

    answered_before = len(busy_answers)
    answer = chats.ask(other, "my name is Bob", first_name="Bob")  # within ANSWER_TIMEOUT
    assert "Bob" in (answer.text or "")
    # It waited for a message or two of the busy chat, which kept writing meanwhile.
    assert len(busy_answers) - answered_before <= 10, busy_answers
    writing = False
    # Each answer but the last ones brought a message: the counts meet once all are answered.
    api.wait_for(lambda _: len(busy_answers) == len(busy_sent), ANSWER_TIMEOUT, "busy chat")
    assert busy_answers == busy_sent == list(range(1, len(busy_sent) + 1))
    bot.stop()


def test_group_records_everything_and_answers_only_when_addressed(
    api, chats, polling_bot, tmp_path
):
    """In a group of three, every message becomes a turn of the group's one session, and the
    bot answers only a mention of it, a reply to one of its messages, or a command."""
    group = -3100
    members = {31: "Ada", 32: "Bob", 33: "Cy"}
    bot = polling_bot()

    def say(user_id: int, text: str, **kwargs: object) -> int:
        return chats.send(
            group,
            text,
            user_id=user_id,
            first_name=members[user_id],
            chat_type="group",
            chat_title="Trip planning",
            **kwargs,
        )[1]

    def ask(user_id: int, text: str, **kwargs: object) -> SentCall:
        return chats.ask(
            group,
            text,
            user_id=user_id,
            first_name=members[user_id],
            chat_type="group",
            chat_title="Trip planning",
            **kwargs,
        )

    quiet = [
        say(31, "I'm planning a trip to Lisbon in May"),
        say(32, "I can book the flights"),
        say(33, "hey @other_bot what's up"),
    ]
    mention = ask(31, f"@{BOT_USERNAME} what did we talk about?")
    assert mention.params.get("reply_parameters"), "a mention gets a reply to it"
    assert "Lisbon" in mention.text
    quiet.append(say(33, "sounds great", reply_to_message=quiet[0]))  # a reply to Ada
    reply = ask(32, "what is still open?", reply_to_message=mention.message_id)
    assert reply.params.get("reply_parameters"), "a reply to the bot gets a reply"
    history = ask(33, "/history 20")
    for text in ("Lisbon", "book the flights", "other_bot", "sounds great", "still open"):
        assert text in history.text, text
    for name in members.values():
        assert f" {name}: " in history.text, name

    for message_id in quiet:
        assert chats.answers_to(group, message_id) == [], f"answered message {message_id}"
    assert len(api.sent_messages(group)) == 3  # the mention, the reply to the bot, the command
    turns = _turn_texts(tmp_path / "memory.db", group)
    assert len(turns) == 6  # every message; the command is not a turn
    assert {user_id for _, _, user_id, _ in turns} == set(members)
    assert [status for *_, status in turns].count("recorded") == 4
    assert db_rows(
        tmp_path / "memory.db",
        "SELECT count(*) FROM conversation_sessions WHERE chat_id = ?",
        (group,),
    ) == [(1,)]
    bot.stop()


def test_an_edited_message_corrects_what_the_bot_remembers(api, chats, polling_bot, tmp_path):
    """An edited message (Telegram ``edited_message``) replaces its turn's text quietly: no
    reply; the bot answers from the new text, the old one is the turn's edit history and in no
    memory; an edit of a message that is no turn (a command, one sent before the bot ran) and
    an edit in a group change nothing the user did not change, and nothing is answered."""
    chat, group = 4101, -4102
    bot = polling_bot()
    _, name_id = chats.send(chat, "my name is Ada")
    assert "Ada" in (chats.ask(chat, "what's my name?").text or "")
    sent = len(api.sent_messages(chat))
    chats.send(chat, "my name is Grace", edited=True, message_id=name_id)
    _, command_id = chats.send(chat, "/history 1")
    chats.wait_for_message(chat, "The last 1 turn:", after=sent)
    chats.send(chat, "/history 9", edited=True, message_id=command_id)  # never runs
    chats.send(chat, "my name is Hedy", edited=True, message_id=999)  # before the bot ran
    answer = chats.ask(chat, "what's my name?").text or ""
    assert "Grace" in answer
    assert "Ada" not in answer
    group_id = chats.send(group, "we meet at 9", chat_type="group", user_id=41)[1]
    chats.send(
        group, "we meet at 10", chat_type="group", user_id=41, edited=True, message_id=group_id
    )

    api.wait_for(lambda a: set(chats.update_ids) <= a.confirmed_update_ids, 30, "unconfirmed")
    bot.stop()  # lets every queued update finish
    assert len(chats.answers_to(chat, name_id)) == 1  # the message's answer; none to its edit
    assert not [c for c in api.sent_messages(chat) if "The last 9 turns" in (c.text or "")]
    assert api.sent_messages(group) == []
    db = tmp_path / "memory.db"
    texts = [text for text, *_ in _turn_texts(db, chat)]
    assert texts == ["my name is Grace", "what's my name?", "what's my name?"]
    assert [text for text, *_ in _turn_texts(db, group)] == ["we meet at 10"]
    assert db_rows(db, "SELECT previous_text FROM turn_edits ORDER BY rowid") == [
        ("my name is Ada",),
        ("we meet at 9",),
    ]
    assert db_rows(db, "SELECT text FROM memories WHERE chat_id = ?", (chat,)) == [("Grace",)]
    assert db_rows(db, "SELECT DISTINCT status FROM inbound_updates") == [("done",)]
    assert not _error_lines(bot.stderr, " ERROR ", " CRITICAL "), bot.stderr


# -- 4. bad updates --------------------------------------------------------------------------


def test_bad_updates_are_answered_or_ignored_and_the_bot_stays_up(
    api, chats, polling_bot, tmp_path
):
    """Stickers, captions, edits, channel posts, group joins, huge, exotic and empty texts and
    junk commands are each answered or ignored sensibly; the bot stays up and every update is
    confirmed and processed."""
    chat, channel, group = 4001, -1004001, -4002
    bot = polling_bot()

    def ask(text: str | None = None, **kwargs: object) -> str:
        return chats.ask(chat, text, **kwargs).text or ""

    assert "only read text" in ask(sticker=True)
    sent = len(api.sent_messages(chat))
    _, photo_id = chats.send(chat, None, photo=True, caption="my name is Ada")
    answer = chats.wait_for_message(chat, "Ada", after=sent)
    assert answer.params["reply_parameters"]["message_id"] == photo_id
    chats.send(chat, "my name is Eve", edited=True, message_id=photo_id)
    _, command_id = chats.send(chat, "/history 1")
    chats.wait_for_message(chat, "The last 1 turn:", after=sent)
    chats.send(chat, "/history 5", edited=True, message_id=command_id)
    chats.send(channel, "hello channel", channel_post=True)
    join = api.push_update(
        {
            "message": {
                "message_id": 1,
                "date": 1_700_000_000,
                "chat": {"id": group, "type": "group", "title": "New group"},
                "from": {"id": 4003, "is_bot": False, "first_name": "Cy"},
                "new_chat_members": [
                    {
                        "id": 123456,
                        "is_bot": True,
                        "first_name": "Memory Test Bot",
                        "username": BOT_USERNAME,
                    }
                ],
            }
        }
    )

    long_text = ("the quick brown fox jumps over the lazy dog " * 100)[:4096]
    assert len(long_text) == 4096
    assert ask(long_text)
    exotic = "🙂🎉 שלום مرحبا \u200b\u200d\u2067abc\u2069 👋🏽 e\u0301"
    assert ask(exotic)
    assert ask("\u200b\u200d")
    assert "Usage: /recall" in ask("/recall")
    assert "Nothing in this conversation matches" in ask('/recall " AND* NEAR( col:x -')
    frobnicate = ask("/frobnicate")
    assert "/frobnicate" in frobnicate
    assert "/help" in frobnicate
    assert "Usage: /history" in ask("/history abc")
    assert "at most 50" in ask("/history 99999999999")
    assert "Eve" in ask("what's my name?")  # the caption counted, and so did its edit

    updates = {*chats.update_ids, join}
    api.wait_for(lambda a: updates <= a.confirmed_update_ids, 30, "updates not confirmed")
    assert api.sent_messages(channel) == []
    assert api.sent_messages(group) == []
    assert chats.answers_to(chat, photo_id) == [answer]  # the edit got no answer of its own
    assert not [c for c in api.sent_messages(chat) if "The last 5 turns" in (c.text or "")]
    assert bot.alive
    bot.stop()  # lets every queued update finish
    assert "Traceback" not in bot.stderr
    assert not _error_lines(bot.stderr, " ERROR ", " CRITICAL "), bot.stderr
    db = tmp_path / "memory.db"
    assert db_rows(db, "SELECT DISTINCT status FROM inbound_updates") == [("done",)]
    stored = {text for text, *_ in _turn_texts(db, chat)}
    assert long_text in stored
    assert exotic in stored


# -- 5. webhook mode --------------------------------------------------------------------------


def test_webhook_checks_the_secret_before_recording(api, launch, tmp_path):
    """In webhook mode the bot registers its URL and secret, answers 403 and records nothing
    without the right secret (missing, wrong, of another case, one character longer or
    shorter, empty, in the query string),
    and journals and answers an update sent with it (header names are case-insensitive).
    A body that is no update gets 400; an update python-telegram-bot cannot read is journaled
    as sent (200: Telegram must not resend it forever) and the bot goes on."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram-hook"
    bot = launch(
        api,
        AGENT_WEBHOOK_URL=url,
        AGENT_WEBHOOK_LISTEN="127.0.0.1",
        AGENT_WEBHOOK_PORT=str(port),
        AGENT_WEBHOOK_SECRET=WEBHOOK_SECRET,
    )
    bot.wait_until_up()
    [registered] = api.calls("setWebhook")
    assert registered["url"] == url
    assert registered["secret_token"] == WEBHOOK_SECRET

    chat = 5001
    body = orjson.dumps(message_update(1, chat, "my name is Ada"))
    header = "X-Telegram-Bot-Api-Secret-Token"
    db = tmp_path / "memory.db"
    with httpx.Client(trust_env=False, timeout=30) as client:
        missing = client.post(url, content=body, headers={"Content-Type": "application/json"})
        wrong = client.post(url, content=body, headers={header: "wrong"})
        assert (missing.status_code, wrong.status_code) == (403, 403)
        refused = [
            client.post(url, content=body, headers={header: WEBHOOK_SECRET.upper()}),
            client.post(url, content=body, headers={header: WEBHOOK_SECRET + "0"}),
            client.post(url, content=body, headers={header: WEBHOOK_SECRET[:-1]}),
            client.post(url, content=body, headers={header: ""}),
            client.post(url + f"?secret_token={WEBHOOK_SECRET}", content=body),
        ]
        assert [r.status_code for r in refused] == [403] * 5
        assert client.get(url, headers={header: WEBHOOK_SECRET}).status_code == 405
        assert db_rows(db, "SELECT count(*) FROM conversation_turns") == [(0,)]
        assert db_rows(db, "SELECT count(*) FROM inbound_updates") == [(0,)]

        right = client.post(url, content=body, headers={header.lower(): WEBHOOK_SECRET})
        assert right.status_code == 200
        answer = FakeChats(api).wait_for_message(chat, "Ada")
        assert answer.params["reply_parameters"]["message_id"] == 1
        again = client.post(url, content=body, headers={header: WEBHOOK_SECRET})  # a redelivery
        assert again.status_code == 200
        garbage = [b"{not json", b"[1, 2]", b'{"message": {}}', b'{"update_id": "7"}']
        for content in garbage:
            status = client.post(url, content=content, headers={header: WEBHOOK_SECRET})
            assert status.status_code == 400, content
        unreadable = message_update(2, chat, "a date that is no number")
        unreadable["message"]["date"] = "yesterday"
        for later in (unreadable, message_update(3, chat, "what's my name?", message_id=3)):
            sent = client.post(url, content=orjson.dumps(later), headers={header: WEBHOOK_SECRET})
            assert sent.status_code == 200
        FakeChats(api).wait_for_message(chat, "Your name is Ada")

    assert bot.alive
    bot.stop()
    assert db_rows(db, "SELECT count(*) FROM conversation_turns") == [(2,)]
    assert db_rows(db, "SELECT update_id, status, attempts FROM inbound_updates") == [
        (1, "done", 0),
        (2, "pending", 1),  # unreadable: tried again at the next start, then given up
        (3, "done", 0),
    ]
    assert len(api.sent_messages(chat)) == 2
    assert api.calls("getUpdates") == []  # no polling in webhook mode


# -- 6. configuration errors ----------------------------------------------------------------


def test_configuration_errors_exit_2_with_one_clear_line(api, launch, tmp_path):
    """A missing, malformed or rejected token stops the bot with exit code 2 and a clear line
    naming TELEGRAM_BOT_TOKEN: no traceback, and never the token itself."""
    malformed = "not-a-token-MalformedSecret12345"
    rejected = "654321:RejectedSecretValue_abcdefghij"
    runs = {
        "missing": launch(api, workdir=tmp_path / "missing", token=None),
        "malformed": launch(api, workdir=tmp_path / "malformed", token=malformed),
        "rejected": launch(api, workdir=tmp_path / "rejected", token=rejected),
    }
    for name, bot in runs.items():
        assert bot.wait(60) == 2, f"{name}: {bot.stderr}"
        assert "Traceback" not in bot.stderr, name

    [line] = _error_lines(runs["missing"].stderr)
    assert "TELEGRAM_BOT_TOKEN" in line

    [line] = _error_lines(runs["malformed"].stderr)
    assert "TELEGRAM_BOT_TOKEN" in line
    assert "MalformedSecret12345" not in line

    stderr = runs["rejected"].stderr
    errors = [line for line in _error_lines(stderr) if line.startswith("error:")]
    assert len(errors) == 1, stderr
    assert "TELEGRAM_BOT_TOKEN" in errors[0]
    assert "rejected" in errors[0]
    assert rejected not in stderr
    assert rejected.split(":", 1)[1] not in stderr


# -- 7. the token stays secret ---------------------------------------------------------------


def test_token_never_reaches_logs_or_files(api, chats, polling_bot, tmp_path):
    """At DEBUG level, through a conversation with failed sends and polls, the token appears
    neither in the bot's stderr nor in any file it writes."""
    chat = 7001
    bot = polling_bot(AGENT_LOG_LEVEL="DEBUG")
    chats.ask(chat, "my name is Ada")
    api.fail_next("sendMessage", status=502)
    api.drop_connections("getUpdates")
    assert "Ada" in chats.ask(chat, "what's my name?").text
    chats.ask(chat, "remind me to book the hotel")
    chats.ask(chat, "/memory")
    chats.ask(chat, "/export")
    bot.stop()

    stderr = bot.stderr
    assert "DEBUG" in stderr
    assert "getUpdates" in stderr  # the Bot API calls were logged...
    assert "[REDACTED]" in stderr  # ...and a line that held the token was redacted
    assert "polling failed" in stderr  # the error paths ran
    assert "sending failed" in stderr
    assert TOKEN not in stderr
    assert TOKEN_SECRET not in stderr
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.suffix == ".json" for path in files)
    for path in files:
        assert TOKEN_SECRET.encode() not in path.read_bytes(), path


def test_reminder_log_lines_name_the_job_not_the_message_that_set_it(api, chats, polling_bot):
    """A reminder firing logs under its chat and job id, not under the update_id of the
    message that set it (each chat worker starts from a clean logging context)."""
    chat = 7002
    bot = polling_bot(AGENT_LOG_LEVEL="DEBUG")
    chats.ask(chat, "remind me in 1 second to stretch")
    api.wait_for(lambda a: _reminders(a, chat, "stretch"), 30, "the reminder never fired")
    bot.stop()
    lines = [line for line in bot.stderr.splitlines() if "job_id=job_" in line]
    assert lines, "the reminder logged nothing with its job id"
    assert all(f"chat_id={chat}" in line and "update_id=" not in line for line in lines), lines


# -- 8. the terminal -------------------------------------------------------------------------


def test_console_a_message_not_understood_changes_nothing_and_gets_a_short_reply(launch):
    """Through the terminal, in a fresh data directory: messages the bot does not understand
    get a reply of at most 200 characters with an example and /help, and change nothing
    (/loops is the same before and after); a promise and "never mind" are understood."""
    bot = launch(token=None, args=("--console",), stdin=subprocess.PIPE)
    lines = [
        "remind me to book the hotel",
        "I'll send you the itinerary tomorrow",
        "when does the ferry to Porto leave?",
        "/loops",
        "purple monkey dishwasher",
        "the sky is made of jam, whatever",
        "remind me in 0 minutes to cook",
        "/loops",
        "never mind",
        "/loops",
        "help",
        "/recall hotel itinerary",
    ]
    assert bot.communicate("\n".join(lines) + "\n") == 0, bot.stderr
    replies = bot.stdout.split("you> bot> ")[1:]
    assert len(replies) == len(lines)
    before, after, dismissed = replies[3], replies[7], replies[9]
    assert "to do: book the hotel" in before
    assert "promised: send you the itinerary tomorrow" in before
    assert "ferry to Porto" in before
    assert after == before
    for reply in replies[4:7]:
        said = reply.removesuffix("\nyou> ").strip()
        assert "didn't understand" in said or "couldn't read the time" in said
        assert len(said) <= 200
        assert "/help" in said
    assert "ferry to Porto" in replies[8]  # "never mind" names what it dropped
    assert "ferry to Porto" not in dismissed
    assert "promised: send you the itinerary tomorrow" in dismissed
    assert "offline concierge" in replies[10]
    assert "offline concierge" not in replies[11]  # the help text is never recalled
    assert "didn't understand" not in replies[11]
    assert "Traceback" not in bot.stderr


def test_console_through_a_pipe_remembers_across_runs(launch, tmp_path):
    """``run_bot.py --console`` answers lines from a pipe on stdout, without a token, and a
    second run on the same files still knows what the first was told."""
    first = launch(token=None, args=("--console",), stdin=subprocess.PIPE)
    lines = [
        "my name is Ada",
        "I'm planning a trip to Lisbon in May",
        "what's my name?",
        "remind me to book the hotel",
        "/loops",
        "/history 2",
    ]
    assert first.communicate("\n".join(lines) + "\n") == 0, first.stderr
    out = first.stdout
    assert "Nice to meet you, Ada" in out
    assert "Your name is Ada" in out
    assert "to do: book the hotel" in out
    assert "The last 2 turns" in out
    assert "Traceback" not in first.stderr

    second = launch(token=None, args=("--console",), stdin=subprocess.PIPE)
    assert second.communicate("what's my name?\nwhat do you know about me?\n/loops\n") == 0
    out = second.stdout
    assert "Your name is Ada" in out
    assert "Lisbon" in out
    assert "to do: book the hotel" in out
    assert "Traceback" not in second.stderr
    sessions = db_rows(tmp_path / "memory.db", "SELECT count(*) FROM conversation_sessions")
    assert sessions == [(1,)]


def test_forget_in_plain_words_in_a_private_chat_and_a_group(api, chats, polling_bot, tmp_path):
    """In a private chat, "forget that ..." erases the matching long-term memory at once and
    says what it erased; in a group, where nothing about a person is kept long-term, it says
    so and erases nothing; /facts shows the result."""
    private, group = 1201, -1202
    bot = polling_bot()
    chats.ask(private, "my sister Mia lives in Porto")
    chats.ask(private, "I have a dog called Rex")
    reply = chats.ask(private, "forget that my sister lives in Porto").text
    assert reply.startswith("Done, I've forgotten: your sister Mia lives in Porto. I also found")
    facts = chats.ask(private, "/facts").text
    assert "Porto" not in facts
    assert "your dog is called Rex" in facts
    rows = db_rows(
        tmp_path / "memory.db", "SELECT text FROM memories WHERE chat_id = ?", (private,)
    )
    assert ("Porto",) not in rows

    said = chats.ask(
        group,
        f"@{BOT_USERNAME} forget that my sister lives in Porto",
        user_id=31,
        first_name="Ada",
        chat_type="group",
        chat_title="Trip planning",
    ).text
    assert "no long-term memory" in said
    assert "your dog is called Rex" in chats.ask(private, "/facts").text
    bot.stop()


async def test_a_repeating_job_still_running_is_skipped_quietly(caplog):
    """A maintenance job slower than its interval (the database is slow or away) does not run
    twice at once, and APScheduler does not warn at every interval that it skipped it."""
    from telegram.ext import ApplicationBuilder

    from agent.telegram.bot import RepeatingJob, schedule

    application = ApplicationBuilder().token(TOKEN).build()
    queue = application.job_queue
    assert queue is not None
    running, overlapped, runs = 0, 0, 0

    async def slow() -> None:
        nonlocal running, overlapped, runs
        runs += 1
        running += 1
        overlapped = max(overlapped, running)
        await asyncio.sleep(0.35)
        running -= 1

    caplog.set_level(logging.WARNING)
    schedule(queue, RepeatingJob("slow", 0.05, slow, first=0))
    await queue.start()
    try:
        await asyncio.sleep(1.2)  # 24 intervals
        (job,) = queue.get_jobs_by_name("slow")
        job.schedule_removal()
        while running:  # the last run ends (stopping the queue would cancel it)
            await asyncio.sleep(0.05)
    finally:
        await queue.stop()
    assert overlapped == 1
    assert 2 <= runs <= 8  # about one run per 0.35 s, not one per interval
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
