"""``python -m agent``: the inspection command line (``agent-memory``); see :mod:`agent.cli`."""

import sys

from agent.cli import main

if __name__ == "__main__":
    sys.exit(main())
