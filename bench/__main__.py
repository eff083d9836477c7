"""``python -m bench [--quick] [--no-write]``: the lane's cost suite (issue 5)."""

from __future__ import annotations

import asyncio

from bench.lane_cost import main

raise SystemExit(asyncio.run(main()))
