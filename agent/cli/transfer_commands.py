"""Commands that move a session in and out: ``export`` (JSON or Markdown) and ``import``.

The JSON export is a :class:`~agent.memory.SessionArchive`: the session's row and every turn.
``import`` re-creates it through the store in one write transaction (the state folded from the
turns again, summary chain and memories as the bot made them) and then writes its checkpoint,
so export, ``forget``, ``import`` gives the same state. The Markdown export is for people: the
state and the transcript, not importable.

Covered by ``tests/test_cli.py`` (the real program).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from agent.cli.arguments import Commands, add_json, add_session
from agent.cli.browse_commands import session_status, session_title, state_sections
from agent.cli.opened import OpenedMemory
from agent.cli.render import Column, Output, timestamp
from agent.errors import ArchiveError, SessionNotFound
from agent.memory import SessionArchive
from agent.memory.ops.session_archive import parse_archive
from agent.memory.schemas import dump_json

__all__ = ["register"]

_STDIO = "-"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|") or " "


def _markdown_table(columns: list[Column], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(column.title.lower() for column in columns) + " |"]
    lines.append("|" + "|".join("---:" if column.right else "---" for column in columns) + "|")
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return lines


def render_markdown(archive: SessionArchive) -> str:
    """Return an exported session as a Markdown document: its state, then every turn."""
    session, state = archive.session, archive.session.state
    lines = [
        f"# Session {session.session_id}",
        "",
        *_markdown_table(
            [Column("field"), Column("value")],
            [
                ["chat", f"{session.chat_id} ({session.chat_type})"],
                ["title", session_title(session)],
                ["status", session_status(session)],
                ["turns", str(state.turn_count)],
                ["created", timestamp(session.created_at)],
                ["last activity", timestamp(session.updated_at)],
                ["exported", timestamp(archive.exported_at)],
            ],
        ),
    ]
    for title, columns, rows in state_sections(state):
        if rows:
            lines += ["", f"## {title}", "", *_markdown_table(columns, rows)]
    if state.rolling_summary:
        lines += ["", "## Rolling summary", "", "```text", state.rolling_summary, "```"]
    lines += ["", "## Turns"]
    for turn in archive.turns:
        lines += ["", f"### #{turn.seq} · {timestamp(turn.created_at)} · {turn.status}", ""]
        if turn.user_text:
            lines.append(f"**{turn.speaker or 'user'}:** {turn.user_text}")
        if turn.assistant_text:
            lines += ["", f"**bot:** {turn.assistant_text}"]
    return "\n".join(lines) + "\n"


async def _export(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    session = await opened.session(args.session)
    archive = await opened.inspector.export(session.session_id)
    if archive is None:
        raise SessionNotFound(f"session {session.session_id} was erased while exporting it")
    if args.format == "json":
        data = dump_json(archive, indent=True) + b"\n"
    else:
        data = render_markdown(archive).encode("utf-8")
    if args.output == _STDIO:
        out.stream.write(data.decode("utf-8"))
        return 0
    await asyncio.to_thread(Path(args.output).write_bytes, data)
    out.line(f"exported session {session.session_id} ({len(archive.turns)} turns) to {args.output}")
    return 0


async def _import(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    name = "stdin" if args.file == _STDIO else args.file
    if args.file == _STDIO:
        data = await asyncio.to_thread(sys.stdin.buffer.read)
    else:
        data = await asyncio.to_thread(Path(args.file).read_bytes)
    archive = parse_archive(data, name=name)
    inspector, sid = opened.inspector, archive.session.session_id
    # Refused here with a clear word; checked again inside the transaction (a bot may write).
    if await inspector.session(sid) is not None:
        raise ArchiveError(f"session {sid} already exists; forget it first to import it again")
    state = await inspector.import_archive(archive)
    record: dict[str, Any] = {
        "session_id": sid,
        "chat_id": archive.session.chat_id,
        "turns": state.turn_count,
        "summary_version": state.summary_version,
        "checkpoint": str(inspector.checkpoint_path(sid)),
    }
    if args.json:
        out.json(record)
    else:
        out.line(
            f"imported session {sid} of chat {record['chat_id']}: {state.turn_count} turns, "
            f"summary version {state.summary_version}; checkpoint {record['checkpoint']}"
        )
    return 0


def register(commands: Commands) -> None:
    """Add ``export`` and ``import`` to the program's subcommands."""
    export = commands.add(
        "export",
        _export,
        summary="write a session out as JSON (importable) or Markdown",
        description="Export a session: json is its row and every turn (what import reads); "
        "markdown is its state and transcript, for reading.",
    )
    add_session(export)
    export.add_argument(
        "--format", choices=["json", "markdown"], default="json", help="default: json"
    )
    export.add_argument(
        "--output", "-o", default=_STDIO, metavar="FILE", help="write to FILE (default: stdout)"
    )

    imported = commands.add(
        "import",
        _import,
        summary="re-create a session from a JSON export",
        description="Import a session exported with `export --format json` (FILE, or - for "
        "stdin): its turns, state, summary versions and memories, in one transaction, then its "
        "checkpoint. Refused if the session exists, or if it is open and its chat has another "
        "open session.",
    )
    imported.add_argument("file", metavar="FILE", help="the exported JSON file, or - for stdin")
    add_json(imported)
