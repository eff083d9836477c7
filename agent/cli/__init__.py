"""The inspection command line, ``agent-memory`` (or ``python -m agent``).

One module per group of commands: :mod:`~agent.cli.browse_commands` (sessions, show, history,
recall), :mod:`~agent.cli.checkpoint_commands` (checkpoint, verify),
:mod:`~agent.cli.transfer_commands` (export, import), :mod:`~agent.cli.erase_commands` (forget,
prune) and :mod:`~agent.cli.stats_command`; :mod:`~agent.cli.program` parses the command line
and is the error boundary, :mod:`~agent.cli.opened` opens the memory as the bot does.
"""

from agent.cli.program import main

__all__ = ["main"]
