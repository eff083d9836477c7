"""Helpers for the end-to-end tests: the real ``run_bot.py`` in a subprocess, the fake Bot API.

:class:`BotProcess` starts ``python run_bot.py`` with an environment that points it at a
:class:`~tests.fake_bot_api.FakeBotApi` on 127.0.0.1 and keeps its files (database,
checkpoints, logs) in a test directory, so nothing from the outside (a ``.env`` file, the
developer's own ``AGENT_*`` or proxy variables) leaks in. :class:`FakeChats` sends messages into
the fake the way Telegram would and waits for the bot's answer to each one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Self

from tests.fake_bot_api import FakeBotApi, SentCall

__all__ = [
    "ANSWER_TIMEOUT",
    "BOT_USERNAME",
    "REPO",
    "RUN_BOT",
    "START_TIMEOUT",
    "TOKEN",
    "TOKEN_SECRET",
    "BotProcess",
    "FakeChats",
    "bot_env",
    "db_rows",
    "free_port",
    "is_reminder",
    "message_update",
]

REPO = Path(__file__).resolve().parents[1]
RUN_BOT = REPO / "run_bot.py"
#: A well-formed token that the fake accepts; its secret half is distinctive, so a search for
#: it in logs and files cannot match anything by chance.
TOKEN = "123456:AAHfakeSecretT0ken_for-E2E-tests9"  # noqa: S105 (a fake)
TOKEN_SECRET = TOKEN.split(":", 1)[1]
BOT_USERNAME = "memory_test_bot"
#: How long a bot may take to import, migrate, hydrate and reach its first poll.
START_TIMEOUT = 60.0
#: How long one answer may take (a loaded 2-core machine, fsync on every commit).
ANSWER_TIMEOUT = 30.0
#: Seconds of each long poll: short, so that the first poll is seen soon after start-up.
POLL_TIMEOUT = "1"
_UP_LINE = f"bot @{BOT_USERNAME} is up"
_REMINDER_PREFIX = "⏰"
# Variables of the outer environment that must not reach the bot.
_FOREIGN_PREFIXES = ("TELEGRAM_", "AGENT_")
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def bot_env(
    workdir: Path, api: FakeBotApi | None = None, *, token: str | None = TOKEN, **extra: str
) -> dict[str, str]:
    """Return the environment of a bot keeping its files in ``workdir``.

    Args:
        workdir: the bot's working directory; the database and checkpoints go there.
        api: the fake Bot API to talk to (``None``: no Telegram settings at all).
        token: ``TELEGRAM_BOT_TOKEN`` (``None``: unset).
        extra: more variables, e.g. ``AGENT_LOG_LEVEL="DEBUG"``.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(_FOREIGN_PREFIXES) and key.lower() not in _PROXY_VARIABLES
    }
    env.update(
        AGENT_DB_PATH=str(workdir / "memory.db"),
        AGENT_CHECKPOINT_DIR=str(workdir / "checkpoints"),
        AGENT_POLL_TIMEOUT=POLL_TIMEOUT,
        PTB_TIMEDELTA="true",
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    if api is not None:
        env.update(TELEGRAM_BASE_URL=api.base_url, TELEGRAM_BASE_FILE_URL=api.base_file_url)
    if token is not None:
        env["TELEGRAM_BOT_TOKEN"] = token
    env.update(extra)
    return env


class BotProcess:
    """One run of ``python run_bot.py`` in a subprocess; stdout and stderr go to files.

    Args:
        workdir: the working directory (no ``.env`` there) and the home of its log files.
        env: the complete environment (see :func:`bot_env`).
        args: command-line arguments, e.g. ``("--console",)``.
        name: names the log files (``<name>.stderr.log``), one pair per run.
        prefix: a command that runs the bot, e.g. ``("nsenter", ...)``; it must exec it (the
            process signalled is the one started).
    """

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str],
        *,
        args: tuple[str, ...] = (),
        name: str = "bot",
        prefix: tuple[str, ...] = (),
    ) -> None:
        self.workdir = workdir
        self.env = env
        self.args = args
        self.prefix = prefix
        self.stdout_path = workdir / f"{name}.stdout.log"
        self.stderr_path = workdir / f"{name}.stderr.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, *, stdin: int = subprocess.DEVNULL) -> Self:
        """Spawn the bot (it does not wait for anything)."""
        if self.proc is not None:
            raise RuntimeError("BotProcess already started; make a new one for the next run")
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [*self.prefix, sys.executable, str(RUN_BOT), *self.args],
                cwd=self.workdir,
                env=self.env,
                stdin=stdin,
                stdout=out,
                stderr=err,
            )
        return self

    def wait_until_up(self, timeout: float = START_TIMEOUT) -> None:
        """Wait for the "bot @... is up" log line (needs AGENT_LOG_LEVEL at INFO or below)."""
        deadline = time.monotonic() + timeout
        while _UP_LINE not in self.stderr:
            self._check_alive("before it was up")
            if time.monotonic() > deadline:
                raise AssertionError(f"the bot was not up within {timeout}s{self._tail()}")
            time.sleep(0.05)

    def wait_until_polling(self, api: FakeBotApi, timeout: float = START_TIMEOUT) -> None:
        """Wait until the bot is up and one of its getUpdates calls has been answered.

        A call answered after the "is up" line is the bot's own (a poll of an earlier run
        that is still held by the fake could be counted otherwise); at a log level that
        hides that line, any getUpdates call answered after the start counts.
        """
        if self.env.get("AGENT_LOG_LEVEL", "INFO").upper() in ("DEBUG", "INFO"):
            self.wait_until_up(timeout)
        polls = len(api.calls("getUpdates"))

        def polled(fake: FakeBotApi) -> bool:
            self._check_alive("before it polled")
            return len(fake.calls("getUpdates")) > polls

        api.wait_for(polled, timeout, "the bot never polled")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM the bot, wait for it and check that it exited with code 0."""
        proc = self._running()
        proc.send_signal(signal.SIGTERM)
        code = self.wait(timeout)
        assert code == 0, f"the bot exited with {code} after SIGTERM{self._tail()}"
        return code

    def kill(self) -> int:
        """SIGKILL the bot (no shutdown sequence at all) and reap it."""
        proc = self._running()
        proc.kill()
        return self.wait(30.0)

    def wait(self, timeout: float = 30.0) -> int:
        """Wait for the bot to exit on its own; return its exit code."""
        proc = self._running()
        try:
            self.returncode = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"the bot did not exit within {timeout}s{self._tail()}") from None
        return self.returncode

    def communicate(self, data: str, timeout: float = 60.0) -> int:
        """Feed ``data`` to the bot's stdin pipe, close it and wait for the exit code."""
        proc = self._running()
        try:
            proc.communicate(data.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"the bot did not exit within {timeout}s{self._tail()}") from None
        self.returncode = proc.returncode
        return self.returncode

    def ensure_dead(self) -> None:
        """Kill the bot if it still runs (test clean-up)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()

    @property
    def alive(self) -> bool:
        """Whether the process runs."""
        return self.proc is not None and self.proc.poll() is None

    # -- output ------------------------------------------------------------------------------

    @property
    def stderr(self) -> str:
        """Everything the bot wrote on stderr so far."""
        return _read(self.stderr_path)

    @property
    def stdout(self) -> str:
        """Everything the bot wrote on stdout so far."""
        return _read(self.stdout_path)

    def _running(self) -> subprocess.Popen[bytes]:
        if self.proc is None:
            raise RuntimeError("BotProcess was not started; call start() first")
        return self.proc

    def _check_alive(self, when: str) -> None:
        proc = self._running()
        if proc.poll() is not None:
            raise AssertionError(f"the bot exited with {proc.returncode} {when}{self._tail()}")

    def _tail(self, lines: int = 40) -> str:
        return "\n--- bot stderr (tail) ---\n" + "\n".join(self.stderr.splitlines()[-lines:])


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def is_reminder(call: SentCall) -> bool:
    """Whether a sent message is a reminder firing (rather than an answer)."""
    return (call.text or "").startswith(_REMINDER_PREFIX)


class FakeChats:
    """Writes into chats of the fake Bot API and waits for the bot's answers.

    It numbers the messages of each chat itself, so that an answer can be matched to its
    message: the bot answers a message with ``reply_parameters.message_id`` set to it, and
    answers a command (or a message without text) with a plain message.
    """

    def __init__(self, api: FakeBotApi) -> None:
        self.api = api
        self._next_message_id: defaultdict[int, int] = defaultdict(lambda: 1)
        #: The update id of every message pushed, in order.
        self.update_ids: list[int] = []

    def send(self, chat_id: int, text: str | None = None, **kwargs: Any) -> tuple[int, int]:
        """Push a message (see :meth:`FakeBotApi.push_message`); return (update_id, message_id)."""
        message_id = kwargs.pop("message_id", None)
        if message_id is None:
            message_id = self._next_message_id[chat_id]
        self._next_message_id[chat_id] = max(self._next_message_id[chat_id], message_id + 1)
        update_id = self.api.push_message(chat_id, text, message_id=message_id, **kwargs)
        self.update_ids.append(update_id)
        return update_id, message_id

    def ask(
        self,
        chat_id: int,
        text: str | None = None,
        *,
        timeout: float = ANSWER_TIMEOUT,
        **kwargs: Any,
    ) -> SentCall:
        """Push a message and return the bot's answer to it (reminders firing are skipped)."""
        before = len(self.api.sent_messages(chat_id))
        _, message_id = self.send(chat_id, text, **kwargs)
        found: list[SentCall] = []

        def answered(api: FakeBotApi) -> bool:
            for call in api.sent_messages(chat_id)[before:]:
                replied_to = (call.params.get("reply_parameters") or {}).get("message_id")
                if replied_to == message_id or (replied_to is None and not is_reminder(call)):
                    found.append(call)
                    return True
            return False

        self.api.wait_for(answered, timeout, f"no answer to {text!r} in chat {chat_id}")
        return found[0]

    def wait_for_message(
        self,
        chat_id: int,
        contains: str,
        *,
        after: int = 0,
        timeout: float = ANSWER_TIMEOUT,
    ) -> SentCall:
        """Wait for a message to ``chat_id`` containing ``contains``, among those sent after
        the first ``after`` ones; return it."""
        found: list[SentCall] = []

        def sent(api: FakeBotApi) -> bool:
            calls = api.sent_messages(chat_id)[after:]
            found.extend(call for call in calls if contains in (call.text or ""))
            return bool(found)

        self.api.wait_for(sent, timeout, f"no message with {contains!r} in chat {chat_id}")
        return found[0]

    def answers_to(self, chat_id: int, message_id: int) -> list[SentCall]:
        """Every message the bot sent in reply to message ``message_id`` of ``chat_id``."""
        return [
            call
            for call in self.api.sent_messages(chat_id)
            if (call.params.get("reply_parameters") or {}).get("message_id") == message_id
        ]


def message_update(
    update_id: int, chat_id: int, text: str, *, message_id: int = 1, first_name: str = "Ada"
) -> dict[str, Any]:
    """A private-chat text message update, as Telegram posts it to a webhook."""
    user = {"id": chat_id, "is_bot": False, "first_name": first_name}
    return {
        "update_id": update_id,
        "message": {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private", "first_name": first_name},
            "from": user,
            "text": text,
        },
    }


def db_rows(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one read query on the bot's SQLite file (it may be running: WAL allows it)."""
    with contextlib.closing(sqlite3.connect(path, timeout=30)) as conn:
        return conn.execute(sql, params).fetchall()


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
