"""Commands that erase: ``forget`` (one session, as ``/forget``) and ``prune`` (old sessions).

Both go through the lane's own erasure (:meth:`~agent.memory.ConversationLane.forget_session`,
:meth:`~agent.memory.ConversationLane.prune`): the session rows, turns, full-text index entries
(merged, so no trace of the text stays in the index pages), summary versions, the long-term
memories only those sessions stated, and the checkpoint files. The database write takes the
bot's write lock. Both ask before erasing, in a terminal; elsewhere they need ``--yes``.

Covered by ``tests/test_cli.py`` (the real program).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import timedelta

from agent.chat.erasure import forget_everywhere
from agent.cli.arguments import CommandError, Commands, add_json, add_session
from agent.cli.opened import OpenedMemory
from agent.cli.render import Column, Output, ago

__all__ = ["register"]


async def _confirm(question: str, args: argparse.Namespace) -> bool:
    """Return whether to go ahead: ``--yes``, or the answer to ``question`` in a terminal."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise CommandError(f"{question} Pass --yes to confirm (nothing was erased).")
    answer = await asyncio.to_thread(input, f"{question} [y/N] ")
    return answer.strip().lower() in ("y", "yes")


async def _forget(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    session = await opened.session(args.session)
    sid = session.session_id
    question = f"Erase session {sid} (chat {session.chat_id}, {session.turn_count} turns)?"
    if not await _confirm(question, args):
        out.line("nothing erased")
        return 0
    # As /forget of the chat's conversation: its journal entries go too when it is open.
    journal_entries = await forget_everywhere(opened.lane, opened.database, sid) or 0
    out.line(
        f"forgot session {sid} of chat {session.chat_id}: {session.turn_count} turns, their "
        f"summaries and memories, the checkpoint file and {journal_entries} journal entries"
    )
    return 0


async def _prune(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    inspector = opened.inspector
    now = inspector.now()
    cutoff = now - timedelta(days=args.older_than)
    stale = [session for session in await inspector.sessions() if session.updated_at < cutoff]
    if args.dry_run or not stale:
        if args.json:
            out.json({"pruned": [], "would_prune": [s.session_id for s in stale]})
            return 0
        out.line(f"{len(stale)} sessions inactive for {args.older_than:g} days or more")
        if stale:
            out.table(
                [Column("SESSION"), Column("CHAT", right=True), Column("TURNS", right=True),
                 Column("ACTIVE")],
                [[s.session_id, str(s.chat_id), str(s.turn_count), ago(s.updated_at, now)]
                 for s in stale],
            )  # fmt: skip
        return 0
    question = f"Erase {len(stale)} sessions inactive for {args.older_than:g} days or more?"
    if not await _confirm(question, args):
        out.line("nothing erased")
        return 0
    # One transaction erases them all: a spinner, not a count, shows it works.
    with out.progress(f"erasing {len(stale)} sessions", None):
        pruned = await opened.lane.prune(older_than_days=args.older_than)
    if args.json:
        out.json({"pruned": pruned, "would_prune": []})
    else:
        out.line(f"pruned {len(pruned)} sessions" + "".join(f"\n  {sid}" for sid in pruned))
    return 0


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not 0 <= days < 1e6:
        raise argparse.ArgumentTypeError(f"expected a number of days, not {text[:20]!r}")
    return days


def register(commands: Commands) -> None:
    """Add ``forget`` and ``prune`` to the program's subcommands."""
    forget = commands.add(
        "forget",
        _forget,
        summary="erase a session everywhere, as /forget does",
        description="Erase a session everywhere, as /forget does: its turns, full-text index "
        "entries, summary versions, the memories only it stated and its checkpoint file (and, "
        "for a chat's open session, the chat's processed journal entries).",
    )
    add_session(forget)
    forget.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")

    prune = commands.add(
        "prune",
        _prune,
        summary="erase sessions inactive for some days",
        description="Erase every session whose last activity is older than DAYS days, as "
        "forget does for one.",
    )
    prune.add_argument(
        "--older-than", type=_days, required=True, metavar="DAYS", help="days of inactivity"
    )
    prune.add_argument("--dry-run", action="store_true", help="list them, erase nothing")
    prune.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    add_json(prune)
