"""``python -m bench [--quick] [--no-write]``: the lane's cost suite (issue 5)."""

from __future__ import annotations

import asyncio

from bench import alternatives, lane_cost, postgres_cost, throughput


async def _suite() -> int:
    return (
        await lane_cost.main() or await postgres_cost.main() or await alternatives.main()
    )


# The throughput part drives a bot in a subprocess from threads: it runs outside the loop.
raise SystemExit(asyncio.run(_suite()) or throughput.main())
