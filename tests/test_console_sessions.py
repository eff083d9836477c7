"""The session commands in the terminal: ``run_bot.py --console`` fed through a pipe, in a
fresh data directory, and run again on the same files (a restart)."""

from __future__ import annotations

import re
import subprocess
import time

from tests.bot_harness import db_rows

REMINDER = "⏰ Reminder: call mom"


def run_console(launch, lines: list[str]) -> str:
    bot = launch(token=None, args=("--console",), stdin=subprocess.PIPE)
    assert bot.communicate("\n".join(lines) + "\n") == 0, bot.stderr
    assert "Traceback" not in bot.stderr
    return bot.stdout


def replies(out: str) -> list[str]:
    """The bot's answers, one string each (an answer may span lines)."""
    return [part.split("\nyou> ")[0].strip() for part in out.split("bot> ")[1:]]


def test_new_carries_a_todo_and_a_reminder_that_fires_once_after_a_restart(launch):
    """/new says what it carried; /loops in the fresh conversation lists the to-do and the
    reminder; the reminder, due while the bot was down, fires once at the next start."""
    out = run_console(
        launch,
        [
            "remind me to book the hotel",
            "remind me in 5 seconds to call mom",
            "/new",
            "/loops",
        ],
    )
    new_reply, loops = replies(out)[3:5]
    assert new_reply.startswith("Started a fresh conversation")
    assert "Carried over" in new_reply
    assert "to do: book the hotel" in new_reply
    assert "reminder: call mom" in new_reply
    assert "to do: book the hotel" in loops
    assert "reminder: call mom" in loops
    fired = out.count(REMINDER)
    time.sleep(6)  # the reminder falls due while the bot is down

    out = run_console(launch, ["/loops"])
    fired += out.count(REMINDER)
    assert fired == 1
    # A start fires due reminders while it reads the first lines: the next run is settled.
    out = run_console(launch, ["/loops"])
    assert REMINDER not in out
    loops = next(r for r in replies(out) if r.startswith("Still open"))
    assert "to do: book the hotel" in loops
    assert "call mom" not in loops


def test_forget_cancels_the_reminders_of_the_conversation(launch, tmp_path):
    """/forget asks, names the reminder it will cancel, erases, and the reminder never fires."""
    out = run_console(
        launch, ["remind me in 3 seconds to call mom", "/forget", "/forget yes", "/loops"]
    )
    ask, done, loops = replies(out)[2:5]
    assert "It also cancels 1 reminder" in ask
    assert "call mom" in ask
    assert "Cancelled 1 reminder" in done
    assert "call mom" in done
    assert loops == "Nothing open."
    time.sleep(4)
    out = run_console(launch, ["/loops"])
    assert REMINDER not in out
    assert db_rows(tmp_path / "memory.db", "SELECT count(*) FROM conversation_turns") == [(0,)]


def test_sessions_resume_clear_and_save_across_restarts(launch):
    """/sessions numbers the chat's conversations; /resume goes back to one (and refuses the
    current one, a number that does not exist and junk); /clear takes the history out of the
    context, not out of /recall; /save says when the last commit and checkpoint happened."""
    out = run_console(
        launch,
        [
            "my name is Ada",
            "the hiking in the Alps was lovely",
            "/new",
            "let's plan the trip to Lisbon",
            "/sessions",
            "/resume 1",
            "/resume 1",
            "/resume 7",
            "/resume first",
            "/resume",
            "/save",
        ],
    )
    answers = replies(out)
    listing, resumed, again, missing, junk, empty, save = answers[5:12]
    assert "You are in conversation 2" in listing
    assert re.search(r'^1\. started .*, 2 turns, last active .*: "my name is Ada"$', listing, re.M)
    assert re.search(r'^2\. \(current\) .*: "let\'s plan the trip to Lisbon"$', listing, re.M)
    assert resumed.startswith("Back to conversation 1")
    assert again == "Conversation 1 is already the current one."
    assert missing == "There is no conversation 7: this chat has numbers 1 to 2."
    assert junk.startswith("Usage: /resume N")
    assert empty.startswith("Usage: /resume N")
    assert "Last commit:" in save
    assert "(turn 2)" in save
    assert re.search(r"Last checkpoint: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(ses_\w+\.json\)", save)

    out = run_console(
        launch,
        ["/sessions", "what's my name?", "/clear", "/memory", "/recall hiking", "/history 3"],
    )
    listing, name, cleared, memory, recall, history = replies(out)[1:7]
    assert "You are in conversation 1" in listing
    assert "Ada" in name
    assert cleared.startswith("Cleared 3 turns from my context")
    assert "hiking" not in memory
    assert "Ada" in memory  # long-term memory stays
    assert "hiking in the Alps" in recall
    assert "hiking in the Alps" in history

    out = run_console(launch, ["/memory", "/save"])
    memory, save = replies(out)[1:3]
    assert "hiking" not in memory
    assert "(turn 4)" in save  # the message and the /clear of the second run


def test_facts_remember_and_forget_in_plain_words_across_restarts(launch):
    """Long-term memory in the terminal: what is noted stays across /new and a restart, a new
    home keeps the old one as history, /remember keeps a note, "forget that ..." erases at once
    and names what it erased, /facts forget N by number; the next run still agrees."""
    out = run_console(
        launch,
        [
            "my name is Ada",
            "I live in Berlin",
            "my sister Mia lives in Porto",
            "I'm planning a trip to Lisbon in May",
            "I'm also planning a dinner party on Friday",
            "/new",
            "I moved to Munich",
        ],
    )
    assert "Noted: you live in Munich (updated)." in replies(out)
    out = run_console(
        launch,
        [
            "where did I live before?",
            "what are my plans?",
            "where does my sister live?",
            "/remember the spare key is under the blue pot",
            "forget that my sister lives in Porto",
            "forget that my brother lives in Rome",
            "/facts all",
        ],
    )
    before, plans, sister, note, erased, nothing, listing = replies(out)[1:8]
    assert "Berlin" in before
    assert "Munich" in before
    assert "Lisbon" in plans
    assert "dinner party" in plans
    assert "Porto" in sister
    assert note == "I'll remember: the spare key is under the blue pot"
    assert erased == "Done, I've forgotten: your sister Mia lives in Porto."
    assert "erased nothing" in nothing
    assert "was: you live in Berlin" in listing
    assert "Porto" not in listing
    number = next(x for x in listing.splitlines() if "dinner party" in x).split(".")[0]

    out = run_console(launch, [f"/facts forget {number}", "what do you know about me?"])
    forgotten, about = replies(out)[1:3]
    assert "dinner party" in forgotten
    assert "dinner party" not in about
    for kept in ("Ada", "Munich", "Lisbon", "spare key"):
        assert kept in about, kept
