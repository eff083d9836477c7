"""One warning per outage: a run of failed calls is logged when it starts and when it ends.

A bot that logs every failed attempt fills its log during an outage in proportion to the
outage's length and to the work waiting (every poll, every reply, every retry of each).
:class:`FailureStreak` logs the first failure of a run at WARNING, the later ones at DEBUG, and
the first success after them at INFO, with how many attempts failed over how long: an outage of
any length costs two lines per kind of call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["FailureStreak"]


class FailureStreak:
    """The current run of failures of one kind of call (polling, sending), for the log.

    Args:
        logger: where the lines go.
        what: names the calls in the lines, e.g. ``"sending"`` ("sending failed (...)").
        meanwhile: ends the first warning: what happens until the calls work again.
        clock: monotonic seconds.
    """

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        meanwhile: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self.what = what
        self.meanwhile = meanwhile
        self._clock = clock
        self.failures = 0
        self._since = 0.0

    @property
    def active(self) -> bool:
        """Whether the last attempt failed."""
        return self.failures > 0

    def failed(self, problem: str) -> None:
        """Count a failed attempt; only the first of a run is logged above DEBUG."""
        self.failures += 1
        if self.failures == 1:
            self._since = self._clock()
            self._logger.warning("%s failed (%s); %s", self.what, problem, self.meanwhile)
        else:
            self._logger.debug("%s failed (%s), %d in a row", self.what, problem, self.failures)

    def succeeded(self) -> None:
        """End the run, if any, with one INFO line saying how long it lasted."""
        if not self.failures:
            return
        self._logger.info(
            "%s works again after %d failed attempts in %.0fs",
            self.what,
            self.failures,
            self._clock() - self._since,
        )
        self.failures = 0
