"""The fake clock of the test-suite: the one source of time of the code under test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["T0", "Clock"]

#: The moment every fake clock starts at unless told otherwise.
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


class Clock:
    """A settable clock: call it for the time; set ``now`` or :meth:`advance` it by hand."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        """Move the clock forward by ``timedelta(**delta)``."""
        self.now += timedelta(**delta)
