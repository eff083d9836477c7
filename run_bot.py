"""Start the bot from a source checkout: ``python run_bot.py [--console]``.

The program is :func:`agent.app.launcher.main` (installed as the ``agent-bot`` command); see
its module for the options and exit codes.
"""

import sys

from agent.app.launcher import main

if __name__ == "__main__":
    sys.exit(main())
