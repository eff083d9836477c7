"""The ``stats`` command: the figures of ``/stats``, for every session, and the sizes on disk.

Covered by ``tests/test_cli.py`` (the real program).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from agent.cli.arguments import Commands, add_json
from agent.cli.browse_commands import session_status
from agent.cli.opened import OpenedMemory
from agent.cli.render import Output, format_bytes

__all__ = ["register"]

def _checkpoint_sizes(checkpoint_dir: Path | None) -> dict[str, int]:
    sizes = {}
    files = (
        list(checkpoint_dir.glob("*.json"))
        if checkpoint_dir is not None and checkpoint_dir.is_dir()
        else []
    )
    sizes["checkpoint_files"] = len(files)
    # A checkpoint's bytes are its base file's and its journal's (the turns since the base).
    journals = [path.with_suffix(".journal") for path in files]
    sizes["checkpoints"] = sum(path.stat().st_size for path in (*files, *journals) if path.exists())
    return sizes


def _breakdown(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    parts = ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
    return f"{total} ({parts})" if parts else "0"


async def _stats(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    inspector = opened.inspector
    statistics = await inspector.statistics()
    sessions = await inspector.sessions()
    states = [session.state for session in sessions]
    by_status: dict[str, int] = {}
    for session in sessions:
        status = session_status(session)
        by_status[status] = by_status.get(status, 0) + 1
    state_counts = {
        "open_loops": sum(len(state.open_loops) for state in states),
        "pending_clarifications": sum(len(state.pending_clarifications) for state in states),
        "reminders": sum(len(state.active_job_refs) for state in states),
        "facts": sum(len(state.facts) for state in states),
        "topics": sum(len(state.active_topics) for state in states),
    }
    sizes = await opened.database.bytes_on_disk()
    sizes |= await asyncio.to_thread(_checkpoint_sizes, inspector.checkpoint_directory)
    if args.json:
        record: dict[str, Any] = {
            "sessions": by_status,
            "turns": statistics.turns,
            "summaries": statistics.summaries,
            "memories": statistics.memories,
            "journal": statistics.journal,
            "state": state_counts,
            "bytes": sizes,
        }
        out.json(record)
        return 0
    side = sizes.get("database-wal", 0) + sizes.get("database-shm", 0)
    database = f"{opened.database.location}: {format_bytes(sizes['database'])}" + (
        f" (+ {format_bytes(side)} WAL and index)" if "database-wal" in sizes else ""
    )
    checkpoints = (
        f"{inspector.checkpoint_directory}: {sizes['checkpoint_files']} files, "
        f"{format_bytes(sizes['checkpoints'])}"
        if inspector.checkpoint_directory is not None
        else "database rows"
    )
    out.fields(
        [
            ("sessions", _breakdown(by_status)),
            ("turns", _breakdown(statistics.turns)),
            ("open loops", str(state_counts["open_loops"])),
            ("clarifications", str(state_counts["pending_clarifications"])),
            ("reminders", str(state_counts["reminders"])),
            ("facts", str(state_counts["facts"])),
            ("topics", str(state_counts["topics"])),
            ("summary versions", _breakdown(statistics.summaries)),
            ("memories", _breakdown(statistics.memories)),
            ("inbound journal", _breakdown(statistics.journal)),
            ("database", database),
            ("checkpoints", checkpoints),
        ]
    )
    return 0


def register(commands: Commands) -> None:
    """Add ``stats`` to the program's subcommands."""
    stats = commands.add(
        "stats",
        _stats,
        summary="figures about all sessions: counts, summaries, memories, sizes",
        description="Print the figures of /stats for all sessions together (turns, open loops, "
        "reminders, facts), the summary versions, long-term memories and inbound journal by "
        "status, and the sizes of the database and the checkpoint files.",
    )
    add_json(stats)
