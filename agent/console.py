"""Terminal mode: a terminal Outbox over the very same ChatService, lane and reply engine.

One local session (chat id 0), persistent across runs: the same database, checkpoints and
commands as on Telegram, so anyone can try the memory without a Telegram account. Reminders
fire in the terminal while it is open, and after a restart if they fell due meanwhile. The
console main (``agent/app/console_main.py``) builds the service; :func:`chat_in_terminal`
reads the lines and hands them to it.

Covered by ``tests/test_console_sessions.py`` and the console tests of
``tests/test_telegram_bot.py`` (``run_bot.py --console`` through a pipe).
"""

from __future__ import annotations

import asyncio
from typing import TextIO

from agent.chat.service import ChatService
from agent.memory import InboundMessage

__all__ = ["CONSOLE_CHAT_ID", "ConsoleOutbox", "chat_in_terminal"]

#: The chat id of the terminal's session (Telegram never uses 0).
CONSOLE_CHAT_ID = 0
_PROMPT = "you> "
_GREETING = "Hello! I remember our conversations. /help lists what I can do."


class ConsoleOutbox:
    """An :class:`~agent.chat.outbox.Outbox` that prints to a text stream.

    The terminal has no message ids: every send returns 0, which records that the reply was
    shown. A request to confirm ``/forget`` is answered with ``/forget yes``.

    Args:
        output: where the bot's lines go.
    """

    def __init__(self, output: TextIO) -> None:
        self.output = output
        #: The session ``/forget yes`` erases, once the bot asked for it.
        self.forget_pending: str | None = None

    def say(self, text: str) -> None:
        """Print one message of the bot."""
        self.output.write(f"bot> {text}\n")
        self.output.flush()

    async def send_text(
        self,
        chat_id: int,
        text: str,
        *,
        reply_to: int | None = None,
        confirm_forget: str | None = None,
        attempts: int | None = None,
    ) -> int:
        """Print ``text``; a ``/forget`` to confirm says how."""
        if confirm_forget is not None:
            self.forget_pending = confirm_forget
            text += "\nType /forget yes to confirm."
        self.say(text)
        return 0

    async def send_document(self, chat_id: int, filename: str, data: bytes, caption: str) -> int:
        """Print the file's name and its text."""
        self.say(f"{caption} ({filename})\n{data.decode()}")
        return 0

    def stop_retrying(self) -> None:
        """Nothing to stop: printing does not fail for a while."""


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


async def _handle(service: ChatService, outbox: ConsoleOutbox, line: str) -> None:
    name, _, args = line[1:].partition(" ")
    pending = outbox.forget_pending
    if line.startswith("/") and name.lower() == "forget" and args.strip().lower() == "yes":
        if pending is not None:
            outbox.forget_pending = None
            await service.in_order(
                CONSOLE_CHAT_ID, lambda: service.confirm_forget(CONSOLE_CHAT_ID, pending)
            )
            return
    await service.on_message(
        InboundMessage(chat_id=CONSOLE_CHAT_ID, text=line, chat_type="console", speaker="you")
    )


async def chat_in_terminal(
    service: ChatService,
    outbox: ConsoleOutbox,
    stop: asyncio.Event,
    *,
    stdin: TextIO,
    stdout: TextIO,
) -> None:
    """Show the replies owed since the last run, then chat on ``stdin``/``stdout`` until end
    of input or ``stop`` is set."""
    await service.recover(chat_id=CONSOLE_CHAT_ID)
    await service.join()
    outbox.say(_GREETING)
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
                await _handle(service, outbox, line)
    finally:
        stopped.cancel()
        stdout.write("\n")
        stdout.flush()
