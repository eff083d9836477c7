"""``agent-memory`` (also ``python -m agent``): inspect and manage what the bot remembers.

The program parses the command line, reads the bot's settings (the environment and ``.env``,
as the bot does; ``--db`` and ``--checkpoints`` override the paths), opens the memory with
:class:`~agent.cli.opened.OpenedMemory` and runs one command. It is the error boundary: every
failure becomes one line on stderr and exit code 2, never a traceback (``AGENT_LOG_LEVEL=DEBUG``
logs the traceback of an unexpected one).

Covered by ``tests/test_cli.py`` (the real program).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from agent import __version__
from agent.cli import (
    browse_commands,
    checkpoint_commands,
    erase_commands,
    stats_command,
    transfer_commands,
)
from agent.cli.arguments import CommandError, Commands
from agent.cli.opened import Handler, OpenedMemory
from agent.cli.render import Output
from agent.config import Settings, load_settings
from agent.errors import AgentError
from agent.utils.logging_setup import configure_logging

__all__ = ["EXIT_ERROR", "build_parser", "main"]

logger = logging.getLogger(__name__)

#: The exit code of any error (argparse uses it for usage errors too); 1 means "problems found".
EXIT_ERROR = 2
_PROG = "agent-memory"

_DESCRIPTION = """\
Inspect and manage what the bot remembers: sessions, turns, state, checkpoint files.

It works on the bot's live database while the bot runs (reads never wait for it; writes take
the bot's write lock and give up after AGENT_DB_LOCK_TIMEOUT seconds) and on a copy. Settings
come from the environment and .env, as for the bot: AGENT_DB_PATH and the summary and retrieval
settings; --db overrides the database's path. The checkpoint directory is the one the bot
recorded in its database (so it works from any directory), else AGENT_CHECKPOINT_DIR;
--checkpoints overrides it, and verify --repair writes only into the bot's own. It never
creates a database."""

_EPILOG = f"""\
SESSION is a session id (ses_ and 32 hex digits) or chat:<chat id> for a chat's open session.

examples:
  {_PROG} sessions --status active
  {_PROG} show chat:123456789
  {_PROG} history chat:123456789 --last 10 --grep hotel
  {_PROG} verify --repair
  {_PROG} export chat:123456789 -o ada.json

exit codes: 0 done (verify: consistent); 1 verify found problems, or checkpoint --diff found
differences; 2 error, with one line on stderr.

forget and prune work beside a running bot: a chat whose session was erased starts a new one
with its next message."""


def _add_locations(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", type=Path, metavar="PATH", help="the database file (default: AGENT_DB_PATH)"
    )
    parser.add_argument(
        "--checkpoints",
        type=Path,
        metavar="DIR",
        help="the checkpoint directory (default: the one the bot recorded in the database, "
        "else AGENT_CHECKPOINT_DIR)",
    )


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of the whole program, every command included."""
    # The locations are accepted before the command and after it; after it they must not
    # overwrite the value given before with a default, hence SUPPRESS.
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    _add_locations(common)
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_locations(parser)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = Commands(parser, common)
    for module in (
        browse_commands,
        checkpoint_commands,
        transfer_commands,
        erase_commands,
        stats_command,
    ):
        module.register(commands)
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings()
    return settings if args.db is None else settings.model_copy(update={"db_path": args.db})


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    handler: Handler = args.handler
    async with OpenedMemory(settings, checkpoints=args.checkpoints) as opened:
        return await handler(opened, args, Output(sys.stdout))


def _fail(message: str) -> int:
    print(f"{_PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the process exit code (see the program's ``--help``)."""
    args = build_parser().parse_args(argv)
    try:
        settings = _settings(args)
        # The output and the one error line say it all; logs only when a level is asked for.
        explicit = "log_level" in settings.model_fields_set
        configure_logging(settings.log_level if explicit else "CRITICAL", settings.secrets)
        return asyncio.run(_run(args, settings))
    except BrokenPipeError:
        # Whoever read the output stopped (`| head`): not an error. Python would complain
        # when it flushes stdout at exit, so stdout goes to /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        return _fail(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    except (AgentError, CommandError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        logger.debug("unexpected failure", exc_info=True)
        first = (str(exc).splitlines() or [""])[0]
        return _fail(f"unexpected {type(exc).__name__}: {first} (AGENT_LOG_LEVEL=DEBUG logs more)")
