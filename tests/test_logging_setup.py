"""Tests of logging_setup.py: context on every line, and no secret in any line (DESIGN.md 7).

The handler is the one ``configure_logging`` installs, writing to a captured stderr; the root
logger's handlers and level are put back after each test.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest

from agent.config import Settings
from agent.utils.logging_setup import bind, configure_logging

TOKEN = "123456:AAHfakeSecretT0ken_for-logging-tests"  # noqa: S105 (a fake)
SECRET_HALF = TOKEN.split(":", 1)[1]


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Put the root logger's handlers and level, and ``sys.excepthook``, back after the test."""
    root = logging.getLogger()
    handlers, level, hook = list(root.handlers), root.level, sys.excepthook
    yield
    sys.excepthook = hook
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_settings_name_the_token_and_its_secret_half_as_secrets() -> None:
    """The token is redacted whole and by its half after the colon (a URL may encode it)."""
    settings = Settings(TELEGRAM_BOT_TOKEN=TOKEN)  # type: ignore[call-arg]
    assert TOKEN in settings.secrets
    assert SECRET_HALF in settings.secrets


def test_the_token_reaches_no_log_line_at_any_level_in_any_form(
    root_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """At DEBUG, the token in a message, in its arguments, percent-encoded in a URL, in an
    exception's text and traceback, in stack info and in a third-party logger's line is
    replaced by ``[REDACTED]``; the lines themselves, and their context fields, stay."""
    configure_logging("DEBUG", Settings(TELEGRAM_BOT_TOKEN=TOKEN).secrets)  # type: ignore[call-arg]
    log = logging.getLogger("agent.test")
    url = f"https://api.telegram.org/bot{TOKEN}/getUpdates"
    with bind(chat_id=7):
        log.debug("calling %s", url)
        log.info("token is " + TOKEN)
        log.warning("encoded: %s", url.replace(":", "%3A"))
        log.error("args %r", {"token": TOKEN})
        log.critical("stack", stack_info=True, extra={"t": TOKEN})
        try:
            raise ValueError(f"request to {url} failed")
        except ValueError:
            log.exception("request failed")
        logging.getLogger("telegram.ext").warning("PTB says %s", TOKEN)
        logging.getLogger("httpx").warning("HTTP Request: POST %s", url)

    err = capsys.readouterr().err
    assert TOKEN not in err
    assert SECRET_HALF not in err
    assert err.count("[REDACTED]") == 7  # one a line that held it (the traceback: once)
    assert "Traceback" in err
    assert "request to https://api.telegram.org/bot[REDACTED]/getUpdates failed" in err
    assert all("[chat_id=7]" in line for line in err.splitlines() if " agent.test" in line)


def test_a_crash_prints_its_traceback_without_the_token() -> None:
    """An exception nothing catches (its message holding the token) ends the process with a
    traceback on stderr that went through the redacting filter."""
    crash = (
        "from agent.utils.logging_setup import configure_logging\n"
        f"configure_logging('INFO', [{TOKEN!r}])\n"
        f"raise RuntimeError('GET https://api.telegram.org/bot' + {TOKEN!r} + '/getMe')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", crash], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "CRITICAL agent: stopped by an uncaught error" in done.stderr
    assert "RuntimeError: GET https://api.telegram.org/bot[REDACTED]/getMe" in done.stderr
    assert SECRET_HALF not in done.stderr


def test_every_line_names_its_worker(
    root_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a worker id, every line carries ``worker=<id>`` after its level, its own loggers'
    and third parties' alike, before the context fields; a ``%`` in the id is text, not a
    field. Without one (a tool), lines carry none."""
    configure_logging("INFO", worker_id="web-2:41%d")
    with bind(chat_id=7):
        logging.getLogger("agent.test").info("turn %d", 5)
    logging.getLogger("telegram.ext").warning("PTB says hi")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert " INFO worker=web-2:41%d agent.test [chat_id=7]: turn 5" in lines[0]
    assert " WARNING worker=web-2:41%d telegram.ext: PTB says hi" in lines[1]

    configure_logging("INFO")
    logging.getLogger("agent.test").info("no worker")
    assert " INFO agent.test: no worker" in capsys.readouterr().err


def test_the_bot_names_its_worker_on_every_line(launch) -> None:
    """``run_bot.py`` logs ``worker=$AGENT_WORKER_ID`` on each line (the console at INFO, fed
    one message through a pipe)."""
    bot = launch(
        token=None,
        args=("--console",),
        stdin=subprocess.PIPE,
        AGENT_LOG_LEVEL="INFO",
        AGENT_WORKER_ID="console-1",
    )
    assert bot.communicate("hello\n") == 0, bot.stderr
    lines = [line for line in bot.stderr.splitlines() if " INFO " in line]
    assert lines, bot.stderr
    assert all(" INFO worker=console-1 " in line for line in lines), bot.stderr
