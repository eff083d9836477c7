"""The console main: builds the lane, the reply engine and a ChatService over a terminal Outbox.

``agent-bot --console`` runs it (:mod:`agent.app.launcher`). Covered by
``tests/test_console_sessions.py`` and the console tests of ``tests/test_telegram_bot.py``.
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import AsyncExitStack
from typing import TextIO

from agent.app.wiring import build_lane, open_concierge, open_database, record_locations
from agent.chat.inbound_journal import InboundJournal
from agent.chat.reminders import AsyncioScheduler
from agent.chat.service import ChatService
from agent.config import Settings
from agent.console import CONSOLE_BOT_ID, ConsoleOutbox, chat_in_terminal

__all__ = ["run_console"]


async def run_console(
    settings: Settings,
    stop: asyncio.Event,
    *,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
) -> None:
    """Chat on ``stdin``/``stdout`` until end of input or ``stop`` is set."""
    db = await open_database(settings)
    await record_locations(settings, db)  # where agent-memory finds the checkpoint files
    lane = build_lane(settings, db)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(lane.shutdown)
        await lane.hydrate(background=True)
        # No scheduler runs upkeep in the terminal: consolidate once per start.
        await lane.consolidate_memories()
        engine = await open_concierge(settings, stack)
        outbox = ConsoleOutbox(stdout)
        scheduler = AsyncioScheduler()
        journal = InboundJournal(db, CONSOLE_BOT_ID)  # each line, before it is handled (I1)
        service = ChatService(lane, engine, outbox, db=db, scheduler=scheduler, journal=journal)
        stack.push_async_callback(service.shutdown)
        # Unwound first: no reminder is queued once the chat's queue drains.
        stack.push_async_callback(scheduler.shutdown)
        await chat_in_terminal(service, outbox, stop, stdin=stdin, stdout=stdout)
