"""Tests of agent/utils/failure_streak.py: an outage of any length is two lines above DEBUG."""

from __future__ import annotations

import logging

import pytest

from agent.utils.failure_streak import FailureStreak

LOGGER = "tests.failure_streak"


def test_a_run_of_failures_is_one_warning_and_one_info_however_long(caplog):
    """The first failure of a run is a WARNING saying what happens meanwhile, the next ones
    are DEBUG, and the first success after them is one INFO with the count and the duration;
    a success outside a run logs nothing, and the next failure starts a new run."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    now = [100.0]
    streak = FailureStreak(
        logging.getLogger(LOGGER), "sending", "replies wait", clock=lambda: now[0]
    )
    streak.succeeded()
    assert not streak.active
    for second in range(50):
        now[0] = 100.0 + second
        streak.failed(f"NetworkError: Bad Gateway #{second}")
    assert streak.active
    now[0] = 160.0
    streak.succeeded()
    streak.succeeded()
    streak.failed("TimedOut: Timed out")

    loud = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno > logging.DEBUG]
    assert loud == [
        ("WARNING", "sending failed (NetworkError: Bad Gateway #0); replies wait"),
        ("INFO", "sending works again after 50 failed attempts in 60s"),
        ("WARNING", "sending failed (TimedOut: Timed out); replies wait"),
    ]
    quiet = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(quiet) == 49
    assert quiet[-1] == "sending failed (NetworkError: Bad Gateway #49), 50 in a row"
    assert streak.failures == 1


@pytest.mark.parametrize("failures", [0, 1])
def test_active_says_whether_the_last_attempt_failed(failures):
    """``active`` is true from a failure to the next success."""
    streak = FailureStreak(logging.getLogger(LOGGER), "polling", "messages wait")
    for _ in range(failures):
        streak.failed("boom")
    assert streak.active is bool(failures)
