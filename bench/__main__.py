"""``python -m bench [--quick] [--no-write]``: the lane's cost suite (issue 5)."""

from __future__ import annotations

import asyncio

from bench import alternatives, lane_cost, postgres_cost, start_time, throughput


async def _suite() -> int:
    return (
        await lane_cost.main() or await postgres_cost.main() or await alternatives.main()
    )


# The throughput and start-time parts drive a bot in a subprocess from threads: they run
# outside the loop.
raise SystemExit(asyncio.run(_suite()) or throughput.main() or start_time.main())
