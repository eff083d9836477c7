"""Terminal mode: chat with the bot on stdin/stdout through the very same lane and concierge.

One local session (chat id 0), persistent across runs: the same database, checkpoints and
commands as on Telegram, so anyone can try the memory without a Telegram account. Reminders
fire in the terminal while it is open, and after a restart if they fell due meanwhile.
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import AsyncExitStack
from typing import TextIO

from agent.app.wiring import build_lane, open_concierge, open_database
from agent.chat.commands import CommandCenter
from agent.chat.reminders import AsyncioScheduler, Reminders
from agent.config import Settings
from agent.db import Database
from agent.memory import ConversationLane, InboundMessage, JobRef, ReplyEngine

__all__ = ["CONSOLE_CHAT_ID", "run_console"]

#: The chat id of the terminal's session (Telegram never uses 0).
CONSOLE_CHAT_ID = 0
_PROMPT = "you> "


class _Console:
    def __init__(
        self, lane: ConversationLane, db: Database, concierge: ReplyEngine, output: TextIO
    ) -> None:
        self.lane = lane
        self.concierge = concierge
        self.commands = CommandCenter(lane, db)
        self.output = output
        self.reminders: Reminders | None = None
        self._forget_pending: str | None = None

    def say(self, text: str) -> None:
        self.output.write(f"bot> {text}\n")
        self.output.flush()

    async def handle(self, line: str) -> None:
        if line.startswith("/"):
            await self._command(line)
            return
        result = await self.lane.on_turn(
            InboundMessage(chat_id=CONSOLE_CHAT_ID, text=line, chat_type="console", speaker="you"),
            self.concierge,
        )
        if self.reminders is not None:
            self.reminders.schedule_from_turn(CONSOLE_CHAT_ID, result.turn)
        if result.turn.assistant_text:
            self.say(result.turn.assistant_text)
            # The terminal has no message ids: 0 records that the reply was shown.
            await self.lane.mark_delivered(result.turn, 0)

    async def _command(self, line: str) -> None:
        name, _, args = line[1:].partition(" ")
        name = name.lower()
        if name == "forget" and args.strip().lower() == "yes" and self._forget_pending:
            reply = await self.commands.confirm_forget(CONSOLE_CHAT_ID, self._forget_pending)
            self._forget_pending = None
            self.say(reply.text)
            return
        reply = await self.commands.run(CONSOLE_CHAT_ID, name, args)
        if reply.confirm_forget is not None:
            self._forget_pending = reply.confirm_forget
            self.say(reply.text + " Type /forget yes to confirm.")
        elif reply.document is not None:
            filename, data = reply.document
            self.say(f"{reply.text} ({filename})\n{data.decode()}")
        else:
            self.say(reply.text)

    async def job_due(self, chat_id: int, job: JobRef) -> None:
        result = await self.lane.complete_job(
            chat_id, job.job_id, f"⏰ Reminder: {job.label or '(no text)'}"
        )
        if result is not None and result.turn.assistant_text:
            self.say(result.turn.assistant_text)
            await self.lane.mark_delivered(result.turn, 0)


async def _lines(stream: TextIO) -> asyncio.StreamReader | None:
    """Return a non-blocking reader of ``stream`` when it is a pipe or terminal."""
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
    except (ValueError, OSError):
        return None  # a regular file: read it with blocking calls in a thread
    return reader


async def _read_line(reader: asyncio.StreamReader | None, stream: TextIO) -> str:
    """Read one line ("" at end of input), without blocking the loop when ``reader`` is set."""
    if reader is None:
        return await asyncio.to_thread(stream.readline)
    return (await reader.readline()).decode("utf-8", "replace")


async def run_console(
    settings: Settings,
    stop: asyncio.Event,
    *,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
) -> None:
    """Chat on ``stdin``/``stdout`` until end of input or ``stop`` is set."""
    db = await open_database(settings)
    lane = build_lane(settings, db)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(lane.shutdown)
        await lane.hydrate()
        # No scheduler runs upkeep in the terminal: consolidate once per start.
        await lane.consolidate_memories()
        concierge = await open_concierge(settings, stack)
        console = _Console(lane, db, concierge, stdout)
        scheduler = AsyncioScheduler()
        stack.push_async_callback(scheduler.shutdown)
        console.reminders = Reminders(lane, scheduler, console.job_due)
        console.reminders.schedule_active()
        undelivered = [turn for chat, turn in await lane.undelivered() if chat == CONSOLE_CHAT_ID]
        for turn in undelivered:
            console.say(turn.assistant_text or "")
            await lane.mark_delivered(turn, 0)
        console.say("Hello! I remember our conversations. /help lists what I can do.")
        reader = await _lines(stdin)
        stopped = asyncio.create_task(stop.wait())
        try:
            while True:
                stdout.write(_PROMPT)
                stdout.flush()
                read = asyncio.ensure_future(_read_line(reader, stdin))
                done, _ = await asyncio.wait({read, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if stopped in done:
                    read.cancel()
                    break
                raw = read.result()
                if not raw:
                    break
                line = raw.strip()
                if line:
                    await console.handle(line)
        finally:
            stopped.cancel()
            stdout.write("\n")
            stdout.flush()
