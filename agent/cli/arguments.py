"""The command-line arguments the inspection commands share.

Sessions are named by their id or, for a chat's open session, by ``chat:<chat id>``
(:func:`session_ref`). Both are checked here, before anything runs: a session id must have the
exact shape of the ids the bot generates, so user text never becomes a checkpoint path.

Covered by ``tests/test_cli.py`` (the real program).
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from agent.utils.ids import is_session_id

__all__ = [
    "CommandError",
    "Commands",
    "SessionRef",
    "add_json",
    "add_session",
    "moment",
    "positive",
    "session_ref",
]

_CHAT_PREFIX = "chat:"


class CommandError(Exception):
    """The command cannot run as asked; the message says what to do instead."""


class Commands:
    """The program's subcommands; each command module adds its own with :meth:`add`.

    Args:
        parser: the program's parser.
        common: the options every command accepts too (after its name).
    """

    def __init__(self, parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
        self._subparsers = parser.add_subparsers(
            title="commands", dest="command", metavar="COMMAND", required=True
        )
        self._common = common

    def add(
        self,
        name: str,
        handler: Callable[..., Awaitable[int]],
        *,
        summary: str,
        description: str,
    ) -> argparse.ArgumentParser:
        """Add a command that runs ``handler``; return its parser, for its own arguments.

        Args:
            name: the command's name.
            handler: what it runs (a :data:`~agent.cli.opened.Handler`).
            summary: its line in the program's help.
            description: the opening of its own help.
        """
        parser: argparse.ArgumentParser = self._subparsers.add_parser(
            name, parents=[self._common], help=summary, description=description
        )
        parser.set_defaults(handler=handler)
        return parser


@dataclass(frozen=True, slots=True)
class SessionRef:
    """A session as the command line names it: by id, or as a chat's open session.

    Attributes:
        session_id: the session's id; ``None`` for a chat's open session.
        chat_id: the chat whose open session is meant (when ``session_id`` is ``None``).
    """

    session_id: str | None = None
    chat_id: int = 0

    def __str__(self) -> str:
        return self.session_id or f"{_CHAT_PREFIX}{self.chat_id}"


def session_ref(text: str) -> SessionRef:
    """Parse a SESSION argument (an argparse ``type``).

    Raises:
        argparse.ArgumentTypeError: neither a session id nor ``chat:<chat id>``.
    """
    if is_session_id(text):
        return SessionRef(session_id=text)
    if text.startswith(_CHAT_PREFIX):
        number = text[len(_CHAT_PREFIX) :]
        if number.removeprefix("-").isdecimal() and len(number) <= 20:
            return SessionRef(chat_id=int(number))
    raise argparse.ArgumentTypeError(
        "expected a session id (ses_ and 32 hex digits) or chat:<chat id>"
    )


def positive(text: str) -> int:
    """Parse a positive whole number (an argparse ``type``)."""
    if not text.isdecimal() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, not {text[:20]!r}")
    return int(text)


def moment(text: str) -> datetime:
    """Parse an ISO 8601 time (an argparse ``type``); one without a zone is UTC."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a time such as 2026-03-01 or 2026-03-01T09:30, not {text[:30]!r}"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def add_session(parser: argparse.ArgumentParser) -> None:
    """Add the positional SESSION argument."""
    parser.add_argument(
        "session", type=session_ref, metavar="SESSION", help="a session id, or chat:<chat id>"
    )


def add_json(parser: argparse.ArgumentParser) -> None:
    """Add ``--json``: machine-readable output instead of text."""
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
