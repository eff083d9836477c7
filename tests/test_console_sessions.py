"""The session commands in the terminal: ``run_bot.py --console`` fed through a pipe, in a
fresh data directory, and run again on the same files (a restart)."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.bot_harness import RUN_BOT, BotProcess, bot_env, db_rows
from tests.fake_llm_api import Answer, FakeLLMApi
from tests.test_disk_faults import SmallDisk

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
            "I need to renew my passport",
            "/new",
            "/loops",
        ],
    )
    new_reply, loops = replies(out)[4:6]
    assert new_reply.startswith("Started a fresh conversation")
    assert "Carried over" in new_reply
    assert "to do: book the hotel" in new_reply
    assert "reminder: call mom" in new_reply
    assert "to do: renew your passport" in new_reply  # said back to the user
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
    assert erased == (
        "Done, I've forgotten: your sister Mia lives in Porto. I found no message here that"
        " says it: if an earlier conversation said it, the message stays there (/sessions lists"
        " them; /resume one, then /forget, erases it)."
    )
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


def _wait_for(read, text: str, timeout: float = 60.0) -> str:
    """Call ``read()`` (everything output so far) until it holds ``text``; return it."""
    deadline = time.monotonic() + timeout
    while text not in (out := read()):
        assert time.monotonic() < deadline, f"{text!r} never came:\n{out[-2000:]}"
        time.sleep(0.05)
    return out


def test_a_reminder_due_while_the_prompt_waits_gets_its_own_line_and_the_prompt_again(launch):
    """Through a pipe: a reminder that falls due while the prompt waits for a line is printed
    on a line of its own, after the waiting prompt, and the prompt is shown again; the next
    line is answered as usual."""
    bot = launch(token=None, args=("--console",), stdin=subprocess.PIPE)
    assert bot.proc is not None
    assert bot.proc.stdin is not None
    bot.proc.stdin.write(b"remind me in 2 seconds to stretch\n")
    bot.proc.stdin.flush()
    out = _wait_for(lambda: bot.stdout, "⏰ Reminder: stretch")
    assert out.endswith("you> \nbot> ⏰ Reminder: stretch\nyou> ")
    assert bot.communicate("/loops\n") == 0, bot.stderr
    assert bot.stdout.endswith("⏰ Reminder: stretch\nyou> bot> Nothing open: no to-dos, "
                               "questions or reminders.\nyou> \n")  # fmt: skip


def test_a_reminder_fired_late_says_when_it_was_due(launch, tmp_path):
    """A reminder due while the console was closed fires at the next start; three minutes
    late (libfaketime moves that run's clock), its message says when it was due and how long
    ago, and the turn log holds the very text shown."""
    libfaketime = pytest.importorskip("libfaketime")
    _, faketime_env = libfaketime.get_reload_information()
    out = run_console(launch, ["remind me in 1 minute to call mom"])
    assert "call mom" in replies(out)[1]
    due = datetime.now(UTC) + timedelta(minutes=1)
    offset = tmp_path / "clock-offset"
    offset.write_text("+240\n")  # the next run is four minutes later: three past its time
    bot = launch(
        token=None, args=("--console",), stdin=subprocess.PIPE,
        FAKETIME_TIMESTAMP_FILE=str(offset), **faketime_env,
    )  # fmt: skip
    assert bot.communicate("/loops\n") == 0, bot.stderr
    late = re.search(r"bot> (⏰ Late reminder \(due (\S+) (\S+) UTC, (\d) min ago\): call mom)\n",
                     bot.stdout)  # fmt: skip
    assert late is not None, bot.stdout
    assert late[3] in {f"{due - timedelta(minutes=1):%H:%M}", f"{due:%H:%M}"}
    assert late[4] in {"2", "3"}  # the minute of the reminder's due time is rounded down
    assert db_rows(
        tmp_path / "memory.db", "SELECT count(*) FROM conversation_turns WHERE assistant_text = ?",
        (late[1],),
    ) == [(1,)]  # fmt: skip


def test_export_writes_the_file_and_prints_its_path(launch, tmp_path):
    """/export in the console writes the checkpoint file into the working directory and
    prints its path; a second /export never overwrites the first."""
    out = run_console(launch, ["my name is Ada", "/export", "/export"])
    saved = re.findall(r"^Saved as (/\S+)$", out, re.M)
    assert len(saved) == 2
    first, second = (Path(path) for path in saved)
    assert first.parent == second.parent == tmp_path
    assert first.name.startswith("ses_")
    assert first.suffix == ".json"
    assert second.name == f"{first.stem}-2.json"
    assert json.loads(first.read_text())["state"]["turn_count"] == 1
    assert '"turn_count"' not in out  # the file, not its text, in the terminal
    assert list(tmp_path.glob(".*.tmp")) == []


def test_a_line_too_long_for_a_message_is_said_and_not_kept(launch, tmp_path):
    """Through a pipe, a line longer than a message may be (4096 characters, as on Telegram;
    here also one past the pipe reader's 64 KiB chunk) is refused with one answer saying its
    length and the limit, and nothing of it is kept; a line of exactly 4096 is taken."""
    out = run_console(launch, ["x" * 5000, "y" * 100_000, "z" * 4096, "/history"])
    answers = replies(out)
    assert answers[1] == (
        "That line has 5000 characters; a message holds at most 4096 (as on Telegram), so I "
        "kept none of it. Send it in parts."
    )
    assert answers[2].startswith("That line has 100000 characters;")
    assert "z" * 100 in answers[4]
    texts = db_rows(tmp_path / "memory.db", "SELECT user_text FROM conversation_turns")
    assert texts == [("z" * 4096,)]


def _pty_console(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``run_bot.py --console`` on a pseudo-terminal; return the process and the master end."""
    master, slave = os.openpty()
    env = bot_env(tmp_path, token=None)
    proc = subprocess.Popen(
        [sys.executable, str(RUN_BOT), "--console"], cwd=tmp_path, env=env,
        stdin=slave, stdout=slave, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    return proc, master


class _Screen:
    """What a pseudo-terminal's master end has shown so far."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.text = ""

    def __call__(self) -> str:
        while select.select([self.master], [], [], 0.05)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the process closed the terminal
                break
            if not chunk:
                break
            self.text += chunk.decode("utf-8", "replace")
        return self.text

    def type(self, data: bytes) -> None:
        for start in range(0, len(data), 512):  # as a person pastes: the terminal's pace
            os.write(self.master, data[start : start + 512])
            time.sleep(0.01)
            self()


def test_the_console_in_a_terminal_reprompts_after_a_reminder_and_says_a_line_was_cut(tmp_path):
    """In a (pseudo-)terminal: a reminder due while the prompt waits is printed on its own
    line and the prompt shown again; a pasted line longer than the terminal passes on (it
    cuts at 4095 characters) is noticed and said, and not kept; Ctrl-D ends the chat."""
    proc, master = _pty_console(tmp_path)
    screen = _Screen(master)
    try:
        _wait_for(screen, "you> ")
        screen.type(b"remind me in 2 seconds to stretch\n")
        out = _wait_for(screen, "⏰ Reminder: stretch")
        out = _wait_for(screen, "⏰ Reminder: stretch\r\nyou> ")
        assert "you> \r\nbot> ⏰ Reminder: stretch\r\nyou> " in out
        screen.type(b"w" * 5000 + b"\n")
        out = _wait_for(screen, "kept none of it")
        assert "That line reached the 4095 characters a terminal passes on" in out
        screen.type(b"\x04")  # Ctrl-D: end of input
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    texts = db_rows(tmp_path / "memory.db", "SELECT user_text FROM conversation_turns")
    assert texts == [("remind me in 2 seconds to stretch",), ("",)]


def test_a_line_typed_just_before_kill_9_is_answered_at_the_next_start(launch, tmp_path):
    """The console journals each line before handling it: killed (SIGKILL) while the reply
    engine (a slow LLM) still thinks, the next start answers that line, once, saying it was
    written before the restart; a third start answers nothing again."""
    with FakeLLMApi("Nice to meet you, Ada!") as llm:
        llm.script(Answer(delay=60.0))  # the first request hangs; the next get the default
        env = {"AGENT_LLM_BASE_URL": llm.base_url, "AGENT_LLM_MODEL": "test-model"}
        bot = launch(token=None, args=("--console",), stdin=subprocess.PIPE, **env)
        assert bot.proc is not None
        assert bot.proc.stdin is not None
        bot.proc.stdin.write(b"my name is Ada\n")
        bot.proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not llm.requests:
            assert bot.alive, bot.stderr
            assert time.monotonic() < deadline, "the line never reached the model"
            time.sleep(0.05)
        bot.kill()
        assert db_rows(tmp_path / "memory.db", "SELECT count(*) FROM conversation_turns") == [
            (0,)
        ]
        out = run_console(lambda **kw: launch(**kw, **env), ["/history"])
    assert "bot> (you wrote before the restart: my name is Ada)\n" in out
    assert "bot> Nice to meet you, Ada!\n" in out
    assert db_rows(tmp_path / "memory.db", "SELECT user_text FROM conversation_turns") == [
        ("my name is Ada",)
    ]
    again = run_console(launch, ["/history"])
    assert "before the restart" not in again


def test_a_line_the_database_cannot_take_is_said_and_the_chat_goes_on(launch, tmp_path):
    """The database on a small disk, filled up: a line typed then cannot be journaled, and
    the console says it kept nothing of it (no traceback, no exit); once the disk has room
    again the chat goes on with what it kept before."""
    disk = SmallDisk(tmp_path / "data", 16 * 1024)
    try:

        def start() -> BotProcess:
            started = launch(
                token=None, args=("--console",), stdin=subprocess.PIPE,
                prefix=disk.prefix(tmp_path), AGENT_DB_PATH=str(tmp_path / "data" / "memory.db"),
            )  # fmt: skip
            assert started.proc is not None
            assert started.proc.stdin is not None
            _wait_for(lambda: started.stdout, "/help lists what I can do.")
            return started

        def say(to: BotProcess, line: str, reply: str) -> str:
            to.proc.stdin.write(f"{line}\n".encode())  # type: ignore[union-attr]
            to.proc.stdin.flush()  # type: ignore[union-attr]
            return _wait_for(lambda: to.stdout, reply)

        first = start()
        say(first, "my name is Ada", "Nice to meet you, Ada.")
        # A clean stop leaves no write-ahead log: the line after the disk fills needs a block
        # the disk no longer has. (A log that ends inside a block takes a few pages more in
        # that block's free part, as many as the log's length happens to leave.)
        assert first.communicate("") == 0, first.stderr
        bot = start()
        disk.fill()
        out = say(bot, "I live in Berlin", "so I kept none of it.")
        assert re.search(r"bot> I could not save that line \(.+\), so I kept none of it\.\n", out)
        disk.free()
        say(bot, "what's my name?", "Your name is Ada.")
        assert bot.communicate("") == 0, bot.stderr
        assert "Traceback" not in bot.stderr
        assert "Berlin" not in bot.stdout  # neither noted nor echoed (a pipe is not echoed)
    finally:
        disk.stop()


def test_stats_counts_what_the_bot_remembers_about_the_user(launch):
    """/stats counts the facts kept about the user: in a private chat they are long-term
    memories, and a fresh conversation (/new) still has them."""
    out = run_console(launch, ["my name is Ada", "I live in Porto", "/new", "hello", "/stats"])

    stats = replies(out)[5]
    assert "Turns: 1" in stats
    assert "Facts: 2" in stats
