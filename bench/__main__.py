"""``python -m bench [--quick] [--no-write]``: the lane's cost suite (issue 5)."""

from __future__ import annotations

import asyncio

from bench import (
    alternatives,
    lane_cost,
    postgres_cost,
    start_time,
    throughput,
    throughput_postgres,
    turn_cost,
)


async def _suite() -> int:
    return (
        await lane_cost.main()
        or await turn_cost.main()
        or await postgres_cost.main()
        or await alternatives.main()
    )


# The throughput and start-time parts drive a bot in a subprocess from threads: they run
# outside the loop. Throughput on PostgreSQL skips in one line without AGENT_TEST_POSTGRES_URL.
raise SystemExit(
    asyncio.run(_suite()) or throughput.main() or throughput_postgres.main() or start_time.main()
)
