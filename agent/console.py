"""Terminal mode: a terminal Outbox over the very same ChatService, lane and reply engine.

One local session (chat id 0), persistent across runs: the same database, checkpoints and
commands as on Telegram, so anyone can try the memory without a Telegram account. The console
main (``agent/app/console_main.py``) builds the service; :func:`chat_in_terminal` reads the
lines and hands them to it. It behaves like a chat:

- Each line is journaled before it is handled, as a Telegram update is (I1): a line typed just
  before a ``kill -9`` (the reply engine was still thinking, e.g. an LLM) is answered at the
  next start, once, after the replies owed since the last run.
- A reminder that falls due while the prompt waits is printed on a line of its own and the
  prompt is shown again; one that fell due while the console was closed fires at the next
  start and says when it was due.
- ``/export`` writes the file into the working directory (never over an existing file) and
  prints its path, as Telegram would hand over a file.
- A line the bot cannot take whole is said so and not kept: one longer than a message may be
  (4096 characters, as on Telegram), or one a terminal cut (a terminal passes at most 4095
  characters of a line; a pipe has no such limit).

Covered by ``tests/test_console_sessions.py`` (pipes and a pseudo-terminal) and the console
tests of ``tests/test_telegram_bot.py`` (``run_bot.py --console`` through a pipe).
"""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import TextIO

import orjson

from agent.chat.inbound_journal import JournalEntry
from agent.chat.service import ChatService
from agent.chat.storage_backlog import APOLOGY, REFUSALS
from agent.memory import InboundMessage

__all__ = [
    "CONSOLE_BOT_ID",
    "CONSOLE_CHAT_ID",
    "MAX_LINE_CHARS",
    "TERMINAL_LINE_CHARS",
    "ConsoleOutbox",
    "chat_in_terminal",
]

#: The chat id of the terminal's session (Telegram never uses 0).
CONSOLE_CHAT_ID = 0
#: The bot id of the console's journal entries and turns (Telegram bots' ids are positive).
CONSOLE_BOT_ID = 0
#: The most characters a line may have: a Telegram message's limit.
MAX_LINE_CHARS = 4096
#: The most characters of a line a terminal passes on (Linux's canonical mode: a 4096-byte
#: buffer, the newline included); the rest of a longer line is dropped by the terminal.
TERMINAL_LINE_CHARS = 4095
_PROMPT = "you> "
_GREETING = "Hello! I remember our conversations. /help lists what I can do."
#: Processed lines older than this leave the journal (their text went when they were done).
_JOURNAL_RETENTION = timedelta(days=7)
# The bytes of a line held in memory at most (the rest of a longer line is counted, dropped).
_READ_LIMIT = 1 << 16


class ConsoleOutbox:
    """An :class:`~agent.chat.outbox.Outbox` that prints to a text stream.

    The terminal has no message ids: every send returns 0, which records that the reply was
    shown. A request to confirm ``/forget`` is answered with ``/forget yes``.

    Args:
        output: where the bot's lines go.
        export_dir: where ``/export`` writes its files (default: the working directory).
    """

    def __init__(self, output: TextIO, *, export_dir: Path | None = None) -> None:
        self.output = output
        self.export_dir = export_dir
        #: The session ``/forget yes`` erases, once the bot asked for it.
        self.forget_pending: str | None = None
        #: Whether the prompt is shown and waits for a line (what the bot says then goes on
        #: a line of its own, and the prompt is shown again after it).
        self.prompting = False

    def prompt(self) -> None:
        """Show the prompt; it waits for a line."""
        self.output.write(_PROMPT)
        self.output.flush()
        self.prompting = True

    def say(self, text: str) -> None:
        """Print one message of the bot (on a line of its own, the prompt again after it)."""
        waiting = self.prompting
        self.output.write(("\n" if waiting else "") + f"bot> {text}\n")
        self.output.flush()
        if waiting:
            self.prompt()

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

    async def send_document(
        self, chat_id: int, filename: str, data: bytes, caption: str, *, reply_to: int | None = None
    ) -> int:
        """Write the file into the export directory (a new name if the name is taken) and
        print the caption and the file's path."""
        directory = self.export_dir or Path.cwd()
        path = await asyncio.to_thread(_write_new_file, directory, filename, data)
        self.say(f"{caption}\nSaved as {path}")
        return 0

    def stop_retrying(self) -> None:
        """Nothing to stop: printing does not fail for a while."""


def _write_new_file(directory: Path, filename: str, data: bytes) -> Path:
    """Write ``data`` to a file of ``directory`` named ``filename`` (``name-2.ext``... when
    taken), atomically (a temporary file renamed); return its absolute path."""
    name = Path(filename).name  # ours (a session id), never a path
    stem, suffix = Path(name).stem, Path(name).suffix
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{name}.{os.getpid()}.tmp"
    temporary.write_bytes(data)
    try:
        number = 1
        while True:
            path = directory / (name if number == 1 else f"{stem}-{number}{suffix}")
            try:
                os.link(temporary, path)  # fails if the name is taken: never overwrites
            except FileExistsError:
                number += 1
                continue
            return path.resolve()
    finally:
        temporary.unlink(missing_ok=True)


class _LineSource:
    """The lines of ``stream``, read without blocking the loop when it is a pipe or terminal.

    A line is held in memory up to :data:`_READ_LIMIT` bytes; the rest of a longer one is
    counted and dropped (it is refused anyway), so a huge paste cannot exhaust memory.
    """

    def __init__(self, stream: TextIO, reader: asyncio.StreamReader | None) -> None:
        self._stream = stream
        self._reader = reader
        self._buffer = bytearray()

    @classmethod
    async def open(cls, stream: TextIO) -> _LineSource:
        """Read ``stream`` through the event loop, or in a thread when it is a regular file."""
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
        except (ValueError, OSError):
            return cls(stream, None)  # a regular file: blocking reads in a thread
        return cls(stream, reader)

    async def line(self) -> tuple[str, int]:
        """Return the next line ("" at end of input) and its length in characters; a line
        longer than what is held comes back as ``"\n"`` with its full length."""
        if self._reader is None:
            line = await asyncio.to_thread(self._stream.readline)
            return line, len(line.rstrip("\r\n"))
        dropped = 0
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0 or self._reader.at_eof():
                cut = end + 1 if end >= 0 else len(self._buffer)
                text = self._buffer[:cut].decode("utf-8", "replace")
                del self._buffer[:cut]
                length = dropped + len(text.rstrip("\r\n"))
                return ("\n" if dropped else text), length
            if len(self._buffer) > _READ_LIMIT:
                dropped += len(self._buffer.decode("utf-8", "replace"))
                self._buffer.clear()
            self._buffer += await self._reader.read(_READ_LIMIT)


def _too_long(length: int, terminal: bool) -> str | None:
    """What to say about a line of ``length`` characters, if it cannot be taken whole."""
    if terminal and length >= TERMINAL_LINE_CHARS:
        return (
            f"That line reached the {TERMINAL_LINE_CHARS} characters a terminal passes on, so "
            "its end was cut off and I kept none of it. Send it in parts, or pipe it in from a "
            "file."
        )
    if length > MAX_LINE_CHARS:
        return (
            f"That line has {length} characters; a message holds at most {MAX_LINE_CHARS} (as "
            "on Telegram), so I kept none of it. Send it in parts."
        )
    return None


class _Lines:
    """The console's lines in the journal: recorded before they are handled, read back by the
    service in the chat's order (after a restart too)."""

    def __init__(self, service: ChatService, outbox: ConsoleOutbox) -> None:
        self.service = service
        self.outbox = outbox
        self._last_id = 0
        self.live: int | None = None  # the line typed in this run that is being handled

    async def record(self, line: str) -> JournalEntry:
        """Journal ``line`` durably; return its entry (its id: microseconds since 1970, so
        ids grow across runs whatever was pruned)."""
        journal = self.service.journal
        if journal is None:
            raise RuntimeError("the console's service has no journal")
        self._last_id = max(self._last_id + 1, time.time_ns() // 1000)
        payload = orjson.dumps({"text": line}).decode()
        entry = JournalEntry(update_id=self._last_id, chat_id=CONSOLE_CHAT_ID, payload=payload)
        await journal.record([entry])
        return entry

    async def handle(self, entry: JournalEntry) -> None:
        """Handle a journaled line (the service's entry reader), in the chat's order."""
        line = str(orjson.loads(entry.payload)["text"])
        if entry.update_id != self.live:
            # Typed before the last run ended and never answered: show what is answered.
            self.outbox.say(f"(you wrote before the restart: {line})")
        try:
            await self._run(line, entry.update_id)
        except REFUSALS:
            # The line stays pending in the journal: answered at the next start (I1).
            self.outbox.say(f"{APOLOGY} (At the latest when the console starts again.)")
            raise

    async def _run(self, line: str, update_id: int) -> None:
        service, chat = self.service, CONSOLE_CHAT_ID
        name, _, args = line[1:].partition(" ")
        if line.startswith("/"):
            pending = self.outbox.forget_pending
            if name.lower() == "forget" and args.strip().lower() == "yes" and pending:
                self.outbox.forget_pending = None
                await service.confirm_forget(chat, pending)
                return
            await service.command(chat, name, args)
            return
        await service.answer(
            InboundMessage(
                chat_id=chat, text=line, chat_type="console", speaker="you",
                update_id=update_id, bot_id=CONSOLE_BOT_ID,
            )
        )  # fmt: skip


async def chat_in_terminal(
    service: ChatService,
    outbox: ConsoleOutbox,
    stop: asyncio.Event,
    *,
    stdin: TextIO,
    stdout: TextIO,
) -> None:
    """Show the replies owed since the last run (and answer the lines journaled but never
    answered), then chat on ``stdin``/``stdout`` until end of input or ``stop`` is set.

    ``service`` must have a journal (of :data:`CONSOLE_BOT_ID`): each line goes through it.
    """
    lines = _Lines(service, outbox)
    service.read_entries_with(lines.handle)
    if service.journal is not None:
        await service.journal.prune(older_than=_JOURNAL_RETENTION)
    await service.recover(chat_id=CONSOLE_CHAT_ID)
    await service.join()
    outbox.say(_GREETING)
    source = await _LineSource.open(stdin)
    terminal = stdin.isatty()
    stopped = asyncio.create_task(stop.wait())
    try:
        while True:
            outbox.prompt()
            read = asyncio.ensure_future(source.line())
            done, _ = await asyncio.wait({read, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if stopped in done:
                read.cancel()
                break
            raw, length = read.result()
            outbox.prompting = False
            if not raw:
                break
            refusal = _too_long(length, terminal)
            if refusal is not None:
                outbox.say(refusal)
                continue
            line = raw.strip()
            if line:
                try:
                    entry = await lines.record(line)
                except REFUSALS as exc:
                    outbox.say(f"I could not save that line ({exc}), so I kept none of it.")
                    continue
                lines.live = entry.update_id
                service.submit(entry)
                await service.join()
    finally:
        outbox.prompting = False
        stopped.cancel()
        stdout.write("\n")
        stdout.flush()
