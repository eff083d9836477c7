"""What waits for the SQLite writer's next group commit (:meth:`Database.write
<agent.db.database.Database.write>`): a piece of work, whether it must survive a power loss,
and the future its caller awaits, resolved once after the commit or the failure.

Tested through ``tests/test_database.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent.db.transaction import Transaction

__all__ = ["Pending", "settle"]


@dataclass(slots=True)
class Pending:
    """A piece of write work waiting for the writer.

    Attributes:
        work: called with the write transaction, open.
        durable: it must survive a power loss (``False``: what can be made again).
        future: resolved with the work's result after the commit, or with its error.
    """

    work: Callable[[Transaction], Awaitable[Any]]
    durable: bool = True
    future: asyncio.Future[Any] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def settle(
    future: asyncio.Future[Any], *, exc: BaseException | None = None, result: Any = None
) -> None:
    """Resolve ``future`` with ``exc`` or ``result``, unless it is done (its caller was
    cancelled)."""
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)
