"""Commands about consistency: ``checkpoint`` (print, diff) and ``verify`` (check, repair).

``verify`` exits 0 only when the database passes SQLite's integrity and foreign-key checks and
every checkpoint file matches the log (I5); with ``--deep`` also every stored session state
must equal the fold of its turn log (I6). The inbound journal and delivery backlog are
reported, not failed: the bot works them off at its next start (I1, I4).

Covered by ``tests/test_cli.py`` (the real program).
"""

from __future__ import annotations

import argparse
import difflib
from dataclasses import dataclass, field
from typing import Any

import orjson

from agent.cli.arguments import Commands, add_json, add_session
from agent.cli.opened import OpenedMemory
from agent.cli.render import Column, Output
from agent.errors import CheckpointError
from agent.memory import CheckpointCheck, SessionState
from agent.memory.schemas import dump_json

__all__ = ["EXIT_PROBLEMS", "register"]

#: The exit code of a check that found problems (``diff``'s convention; errors exit 2).
EXIT_PROBLEMS = 1
# The most undelivered replies verify counts one by one.
_BACKLOG_LIMIT = 100_000


def _state_lines(state: SessionState) -> list[str]:
    # The part of the state that the log determines, as the checkpoint file spells it.
    data = orjson.dumps(state.log_view(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    return (data.decode("utf-8") + "\n").splitlines(keepends=True)


async def _checkpoint(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    inspector = opened.inspector
    session = await opened.session(args.session)
    snapshot = await inspector.checkpoint(session.session_id)
    path = inspector.checkpoint_path(session.session_id)
    where = f"checkpoint file ({path})" if path is not None else "checkpoint row"
    if snapshot is None:
        raise CheckpointError(
            f"session {session.session_id} has no {where}; `agent-memory verify --repair` writes it"
        )
    name = path.name if path is not None else f"row {session.session_id}"
    if not args.diff:
        # The snapshot as one file holds it (a base and its journal read together; a row).
        out.stream.write(dump_json(snapshot, indent=True).decode())
        return 0
    rebuilt = await inspector.rebuild_state(session.session_id)
    diff = list(
        difflib.unified_diff(
            _state_lines(snapshot.state),
            _state_lines(rebuilt),
            fromfile=f"{name} (state at turn {snapshot.turn_count}, status left out)",
            tofile=f"rebuilt from the turn log (turn {rebuilt.turn_count})",
        )
    )
    if not diff:
        out.line(
            f"checkpoint {name} matches the state rebuilt from the log "
            f"({rebuilt.turn_count} turns)"
        )
        return 0
    out.stream.write("".join(diff))
    return EXIT_PROBLEMS


@dataclass(slots=True)
class _Findings:
    """What ``verify`` found, and what it repaired."""

    integrity: list[str] = field(default_factory=list)
    checkpoints: list[CheckpointCheck] = field(default_factory=list)
    state_mismatches: list[str] = field(default_factory=list)
    repaired: dict[str, str] = field(default_factory=dict)
    journal: dict[str, int] = field(default_factory=dict)
    undelivered: int = 0

    @property
    def problems(self) -> list[CheckpointCheck]:
        return [check for check in self.checkpoints if not check.ok]

    @property
    def consistent(self) -> bool:
        return not (self.integrity or self.problems or self.state_mismatches)


async def _verify(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    inspector = opened.inspector
    if args.repair:
        opened.check_repairable()  # before anything is read: nothing written elsewhere
    found = _Findings()
    found.integrity = await inspector.integrity_problems()
    found.checkpoints = await inspector.check_all()
    if args.deep:
        sessions = await inspector.sessions()
        with out.progress("folding each session's turn log", len(sessions)) as step:
            for session in sessions:
                if await inspector.state_differs(session.session_id):
                    found.state_mismatches.append(session.session_id)
                step()
    statistics = await inspector.statistics()
    found.journal = statistics.journal
    # The bot's own list of replies to send at its next start (I4), read up to a bound.
    found.undelivered = await inspector.undelivered_count(_BACKLOG_LIMIT)
    if args.repair:
        for check in found.problems:
            rewritten = await inspector.repair(check.session_id)
            found.repaired[check.session_id] = "rewritten" if rewritten else "deleted"
        fixed = set(found.repaired)
        found.checkpoints = [c for c in found.checkpoints if c.session_id not in fixed]
    if args.json:
        out.json(_record(found))
    else:
        _print(found, out)
    return 0 if found.consistent else EXIT_PROBLEMS


def _record(found: _Findings) -> dict[str, Any]:
    return {
        "consistent": found.consistent,
        "integrity": found.integrity,
        "checkpoints": {
            "checked": len(found.checkpoints) + len(found.repaired),
            "problems": [
                {"session_id": c.session_id, "verdict": c.verdict, "detail": c.detail}
                for c in found.problems
            ],
            "repaired": found.repaired,
        },
        "state_mismatches": found.state_mismatches,
        "journal": found.journal,
        "undelivered_replies": found.undelivered,
    }


def _print(found: _Findings, out: Output) -> None:
    verdicts: dict[str, int] = {}
    for check in found.checkpoints:
        verdicts[check.verdict] = verdicts.get(check.verdict, 0) + 1
    if found.repaired:
        verdicts["repaired"] = len(found.repaired)
    checked = len(found.checkpoints) + len(found.repaired)
    tally = ", ".join(f"{count} {verdict}" for verdict, count in sorted(verdicts.items()))
    journal = found.journal
    out.fields(
        [
            ("database", "; ".join(found.integrity) or "ok (integrity and foreign keys)"),
            ("checkpoints", f"{checked} checked" + (f": {tally}" if tally else "")),
            (
                "journal",
                f"{journal.get('pending', 0)} pending, {journal.get('failed', 0)} failed "
                "(pending updates are processed at the bot's next start)",
            ),
            (
                "replies",
                f"{found.undelivered} answered but not delivered (sent at the bot's next start)",
            ),
        ]
    )
    if found.problems:
        out.line()
        out.table(
            [
                Column("SESSION"),
                Column("CHECKPOINT", other_style="red"),
                Column("DETAIL", cut=True),
            ],
            [[c.session_id, c.verdict, c.detail] for c in found.problems],
        )
    for sid in found.state_mismatches:
        out.line(f"session {sid}: the stored state differs from the fold of its turn log")
    for sid, action in found.repaired.items():
        out.line(f"repaired {sid}: checkpoint {action}")
    if found.consistent:
        out.line("consistent")
    elif found.problems:
        out.line("\nnot consistent: `agent-memory verify --repair` repairs the checkpoints")
    else:
        out.line("\nnot consistent")


def register(commands: Commands) -> None:
    """Add ``checkpoint`` and ``verify`` to the program's subcommands."""
    checkpoint = commands.add(
        "checkpoint",
        _checkpoint,
        summary="print a session's checkpoint file, or diff it against the log",
        description="Print a session's checkpoint as one file holds it (its base file with "
        "the journal of the turns since read into it). With --diff, compare the state it holds "
        "with the state rebuilt by folding the session's turn log (the status, which is not "
        "derived from the log, is left out); exit 1 when they differ.",
    )
    add_session(checkpoint)
    checkpoint.add_argument(
        "--diff", action="store_true", help="diff the checkpoint's state against the rebuilt one"
    )

    verify = commands.add(
        "verify",
        _verify,
        summary="check the database and every checkpoint; exit 0 only when consistent",
        description="Check the database (SQLite integrity and foreign keys) and every checkpoint "
        "file against the log, and report the inbound journal and delivery backlog. "
        "Exit 0 when consistent, 1 when not, 2 on error.",
    )
    verify.add_argument(
        "--repair",
        action="store_true",
        help="rewrite stale, missing or corrupt checkpoints from the database (atomically, "
        "holding the database's write lock) and delete those of erased sessions",
    )
    verify.add_argument(
        "--deep",
        action="store_true",
        help="also fold every session's turn log and compare it with the stored state (slow)",
    )
    add_json(verify)
