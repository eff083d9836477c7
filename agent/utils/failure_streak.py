"""A few warnings per outage: a run of failed calls is logged when it starts, now and then
while it lasts, and when it ends.

A bot that logs every failed attempt fills its log during an outage in proportion to the
outage's length and to the work waiting (every poll, every reply, every retry of each); a bot
that logs only the first leaves an operator wondering whether it still tries.
:class:`FailureStreak` logs the first failure of a run at WARNING, the later ones at DEBUG, a
"still failing" WARNING once the run has lasted 1, 5 and 15 minutes and every 15 minutes after
that, and the first success after them at INFO, with how many attempts failed over how long:
an outage costs a handful of lines per kind of call, however long it lasts.

Covered by ``tests/test_failure_streak.py``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from agent.utils.durations import spoken_duration

__all__ = ["REMINDERS", "FailureStreak"]

#: Seconds into a run of failures at which it is warned about again; the last one repeats.
REMINDERS = (60.0, 300.0, 900.0)


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
        self._reminded = 0  # "still failing" warnings of this run so far

    @property
    def active(self) -> bool:
        """Whether the last attempt failed."""
        return self.failures > 0

    def failed(self, problem: str) -> None:
        """Count a failed attempt; only the first of a run is logged above DEBUG."""
        self.failures += 1
        if self.failures == 1:
            self._since = self._clock()
            self._reminded = 0
            self._logger.warning("%s failed (%s); %s", self.what, problem, self.meanwhile)
            return
        lasted = self._clock() - self._since
        if lasted >= self._next_reminder():
            self._reminded += 1
            self._logger.warning(
                "%s still failing after %s, %d attempts (last: %s); %s",
                self.what,
                spoken_duration(lasted),
                self.failures,
                problem,
                self.meanwhile,
            )
        else:
            self._logger.debug("%s failed (%s), %d in a row", self.what, problem, self.failures)

    def _next_reminder(self) -> float:
        """Seconds into the run at which the next "still failing" warning is due."""
        if self._reminded < len(REMINDERS):
            return REMINDERS[self._reminded]
        return REMINDERS[-1] * (self._reminded - len(REMINDERS) + 2)

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

