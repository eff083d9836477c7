"""The session commands on Telegram: the real ``run_bot.py`` against the fake Bot API, in a
private chat and in a group, and the command list it publishes."""

from __future__ import annotations

import re

from agent.chat.commands import COMMANDS
from tests.bot_harness import BOT_USERNAME, db_rows


def test_set_my_commands_publishes_the_session_commands(api, polling_bot):
    """setMyCommands carries /sessions, /resume, /clear and /save with the rest, and /help
    lists them."""
    bot = polling_bot()
    (call,) = api.calls("setMyCommands")
    published = {command["command"]: command["description"] for command in call["commands"]}
    assert published == COMMANDS
    for name in ("sessions", "resume", "clear", "save", "new", "forget"):
        assert name in published
    bot.stop()


def test_sessions_and_resume_in_a_private_chat(api, chats, polling_bot, tmp_path):
    """/new carries the to-do and says so; /sessions lists both conversations; /resume 1 goes
    back to the first (its memory of the trip comes back, the to-do is there once); bad
    arguments get a clear message; after a restart the resumed conversation is still open."""
    chat = 8101
    bot = polling_bot()
    chats.ask(chat, "I'm planning a trip to Lisbon in May")
    chats.ask(chat, "remind me to book the hotel")
    carried = chats.ask(chat, "/new")
    assert "Carried over" in (carried.text or "")
    assert "book the hotel" in (carried.text or "")
    chats.ask(chat, "let's talk about cooking")

    listing = chats.ask(chat, "/sessions").text or ""
    assert re.search(r'^1\. started .*: "I\'m planning a trip to Lisbon in May"$', listing, re.M)
    assert re.search(r"^2\. \(current\) started .*, 2 turns", listing, re.M)
    assert chats.ask(chat, "/resume 2").text == "Conversation 2 is already the current one."
    assert (chats.ask(chat, "/resume 0").text or "").startswith("There is no conversation 0")
    assert (chats.ask(chat, "/resume two please").text or "").startswith("Usage: /resume N")
    assert (chats.ask(chat, "/resume 1").text or "").startswith("Back to conversation 1")
    loops = chats.ask(chat, "/loops").text or ""
    assert loops.count("book the hotel") == 1
    assert "Lisbon" in (chats.ask(chat, "what did we talk about?").text or "")
    bot.stop()

    bot = polling_bot()
    assert "You are in conversation 1" in (chats.ask(chat, "/sessions").text or "")
    assert (chats.ask(chat, "/loops").text or "").count("book the hotel") == 1
    bot.stop()
    open_sessions = db_rows(
        tmp_path / "memory.db",
        "SELECT count(*) FROM conversation_sessions WHERE chat_id = ? AND closed_at IS NULL",
        (chat,),
    )
    assert open_sessions == [(1,)]


def test_sessions_and_resume_in_a_group(api, chats, polling_bot):
    """In a group, /sessions and /resume (also addressed as /resume@bot) act on the group's
    sessions, and a private chat's sessions are not the group's."""
    group = -8200
    bot = polling_bot()

    def ask(text: str):
        return chats.ask(
            group, text, user_id=41, first_name="Ada", chat_type="group", chat_title="Trip"
        )

    chats.send(group, "we should go to Porto", user_id=41, first_name="Ada", chat_type="group",
               chat_title="Trip")  # fmt: skip
    assert (ask("/new").text or "").startswith("Started a fresh conversation")
    chats.send(group, "or maybe Faro", user_id=42, first_name="Bob", chat_type="group",
               chat_title="Trip")  # fmt: skip
    listing = ask(f"/sessions@{BOT_USERNAME}").text or ""
    assert "1. started" in listing
    assert '"we should go to Porto"' in listing
    assert re.search(r'^2\. \(current\) .*: "or maybe Faro"$', listing, re.M)
    assert (ask(f"/resume@{BOT_USERNAME} 1").text or "").startswith("Back to conversation 1")
    assert "Porto" in (ask("/history 5").text or "")
    assert (chats.ask(8300, "/sessions").text or "").startswith("No conversations yet")
    bot.stop()
