"""Entry point: settings -> memory lane -> (Telegram adapter, in the next issue).

For now it opens the memory, runs the start-up hydration (checking and repairing every
checkpoint against the turn log), reports what it found, and shuts the lane down cleanly.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from agent.config import load_settings
from agent.errors import AgentError
from agent.runtime import open_lane


async def _main() -> int:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    lane = await open_lane(settings)
    try:
        report = await lane.hydrate()
    finally:
        await lane.shutdown()
    print(
        f"memory at {settings.db_path}: {report.sessions} open sessions, "
        f"{len(report.rebuilt)} checkpoints rebuilt, {len(report.undelivered)} replies undelivered"
    )
    return 0


def main() -> int:
    """Run the bot; return the process exit code."""
    try:
        return asyncio.run(_main())
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
