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

from agent.cli.arguments import CommandError, Commands, add_json, session_ref
from agent.cli.browse_commands import session_status, session_title, state_sections
from agent.cli.opened import OpenedMemory
from agent.cli.render import Column, Output, timestamp
from agent.errors import ArchiveError, SessionNotFound
from agent.memory import ConversationSession, SessionArchive
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


def _archive_bytes(archive: SessionArchive, form: str) -> bytes:
    if form == "json":
        return dump_json(archive, indent=True) + b"\n"
    return render_markdown(archive).encode("utf-8")


async def _export(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    inspector = opened.inspector
    if args.all:
        if args.sessions:
            raise CommandError("name sessions or pass --all, not both")
        sessions = await inspector.sessions()
    elif args.sessions:
        sessions = [await opened.session(ref) for ref in args.sessions]
    else:
        raise CommandError("name a SESSION to export, or pass --all")
    if len(sessions) == 1 and not args.all:
        return await _export_one(opened, sessions[0], args, out)
    if args.output == _STDIO:
        raise CommandError("several sessions go into a directory: pass --output DIR")
    directory = Path(args.output)
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    suffix = ".json" if args.format == "json" else ".md"
    turns = 0
    with out.progress(f"exporting {len(sessions)} sessions", len(sessions)) as step:
        for session in sessions:
            archive = await inspector.export(session.session_id)
            if archive is not None:  # erased meanwhile: nothing to write
                path = directory / f"{session.session_id}{suffix}"  # our id, never user text
                await asyncio.to_thread(path.write_bytes, _archive_bytes(archive, args.format))
                turns += len(archive.turns)
            step()
    out.line(f"exported {len(sessions)} sessions ({turns} turns) to {directory}")
    return 0


async def _export_one(
    opened: OpenedMemory, session: ConversationSession, args: argparse.Namespace, out: Output
) -> int:
    archive = await opened.inspector.export(session.session_id)
    if archive is None:
        raise SessionNotFound(f"session {session.session_id} was erased while exporting it")
    data = _archive_bytes(archive, args.format)
    if args.output == _STDIO:
        out.stream.write(data.decode("utf-8"))
        return 0
    await asyncio.to_thread(Path(args.output).write_bytes, data)
    out.line(f"exported session {session.session_id} ({len(archive.turns)} turns) to {args.output}")
    return 0


async def _read_archive(file: str) -> SessionArchive:
    if file == _STDIO:
        data = await asyncio.to_thread(sys.stdin.buffer.read)
    else:
        data = await asyncio.to_thread(Path(file).read_bytes)
    return parse_archive(data, name="stdin" if file == _STDIO else file)


async def _import(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    if _STDIO in args.files and len(args.files) > 1:
        raise CommandError("- (stdin) is one export: import it alone")
    # Every file is read and checked before anything is written.
    archives = [await _read_archive(file) for file in args.files]
    inspector = opened.inspector
    seen: set[str] = set()
    for archive in archives:
        sid = archive.session.session_id
        # Refused here with a clear word; checked again inside the transaction (a bot may write).
        if sid in seen or await inspector.session(sid) is not None:
            raise ArchiveError(f"session {sid} already exists; forget it first to import it again")
        seen.add(sid)
    records: list[dict[str, Any]] = []
    with out.progress(f"importing {len(archives)} sessions", len(archives)) as step:
        for archive in archives:
            sid = archive.session.session_id
            state = await inspector.import_archive(archive)
            records.append(
                {
                    "session_id": sid,
                    "chat_id": archive.session.chat_id,
                    "turns": state.turn_count,
                    "summary_version": state.summary_version,
                    "checkpoint": str(inspector.checkpoint_path(sid)),
                }
            )
            step()
    if args.json:
        out.json(records[0] if len(records) == 1 else records)
        return 0
    for record in records:
        out.line(
            f"imported session {record['session_id']} of chat {record['chat_id']}: "
            f"{record['turns']} turns, summary version {record['summary_version']}; "
            f"checkpoint {record['checkpoint']}"
        )
    return 0


def register(commands: Commands) -> None:
    """Add ``export`` and ``import`` to the program's subcommands."""
    export = commands.add(
        "export",
        _export,
        summary="write sessions out as JSON (importable) or Markdown",
        description="Export sessions: json is a session's row and every turn (what import "
        "reads); markdown is its state and transcript, for reading. One session goes to stdout "
        "or a file; several (or --all) into a directory, one file each.",
    )
    export.add_argument(
        "sessions",
        nargs="*",
        type=session_ref,
        metavar="SESSION",
        help="a session id, or chat:<chat id>; several go into a directory",
    )
    export.add_argument(
        "--all", action="store_true", help="every session, one file each, into --output DIR"
    )
    export.add_argument(
        "--format", choices=["json", "markdown"], default="json", help="default: json"
    )
    export.add_argument(
        "--output",
        "-o",
        default=_STDIO,
        metavar="PATH",
        help="one session: write to this file (default: stdout); several: into this "
        "directory, as <session id>.json or .md",
    )

    imported = commands.add(
        "import",
        _import,
        summary="re-create sessions from JSON exports",
        description="Import sessions exported with `export --format json` (FILE..., or - for "
        "stdin): each one's turns, state, summary versions and memories, in one transaction, "
        "then its checkpoint. Every file is checked first: refused if one is no export, if a "
        "session exists, or if it is open and its chat has another open session.",
    )
    imported.add_argument(
        "files", nargs="+", metavar="FILE", help="exported JSON files, or - for stdin"
    )
    add_json(imported)
