"""Start the bot: settings -> memory lane -> Telegram (polling or webhook) or the terminal.

    agent-bot                    # Telegram, TELEGRAM_BOT_TOKEN from the environment or .env
    agent-bot --console          # chat in the terminal, no Telegram account needed

``python run_bot.py [--console]`` is the same program, from a source checkout.

Exit codes: 0 after a clean stop, 2 for a configuration problem (one line on stderr saying
what to set), 1 for any other failure. SIGTERM or SIGINT stops gracefully; a second one exits
at once.

Covered by ``tests/test_telegram_bot.py`` and ``tests/test_console_sessions.py`` (the real
program, its exit codes and one-line errors).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

from agent.config import Settings, load_settings
from agent.errors import AgentError, ConfigError
from agent.utils.logging_setup import configure_logging

__all__ = ["IO_THREADS", "main"]

logger = logging.getLogger(__name__)

#: Threads of the event loop's default executor. Checkpoint files are written and fsynced in it
#: (``asyncio.to_thread``), with the chat's lock held; asyncio's default (CPU count + 4: 6 on
#: 2 cores) queued 100 busy chats behind six fsyncs. Measured with ``python -m bench.throughput
#: --chats 100``, alternated: 107 / 120 / 116 turns/s with 6 threads, 131 / 159 / 146 with 32.
IO_THREADS = 32


def _install_signal_handlers(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            logger.warning("second signal: exiting at once")
            os._exit(128 + signum)
        logger.info("signal %s: shutting down gracefully", signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)


async def _run(settings: Settings, console: bool) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="agent-io")
    )
    _install_signal_handlers(stop)
    if console:
        from agent.app.console_main import run_console

        await run_console(settings, stop)
    else:
        from agent.app.telegram_main import run_telegram_bot

        await run_telegram_bot(settings, stop)


def main(argv: list[str] | None = None) -> int:
    """Run the bot; return the process exit code."""
    parser = argparse.ArgumentParser(description="A Telegram bot that never forgets.")
    parser.add_argument(
        "--console", action="store_true", help="chat in the terminal instead of Telegram"
    )
    args = parser.parse_args(argv)
    # Opt in to python-telegram-bot's timedelta durations (RetryAfter.retry_after).
    os.environ.setdefault("PTB_TIMEDELTA", "true")
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # The terminal is the chat: only warnings there, unless a level was asked for.
    quiet = args.console and "log_level" not in settings.model_fields_set
    configure_logging(
        "WARNING" if quiet else settings.log_level, settings.secrets, worker_id=settings.worker_id
    )
    try:
        asyncio.run(_run(settings, args.console))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except AgentError as exc:
        logger.error("stopped: %s", exc)
        return 1
    return 0
