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


def test_a_long_outage_is_warned_about_again_at_growing_intervals(caplog):
    """An outage that lasts is warned about again after 1, 5 and 15 minutes and every 15
    minutes after that (so an operator sees the bot still tries), with how long and how many
    attempts; the failures between stay at DEBUG, and a new run starts the cadence afresh."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    now = [0.0]
    streak = FailureStreak(
        logging.getLogger(LOGGER), "reaching Telegram at http://127.0.0.1:9/bot",
        "retrying until it answers", clock=lambda: now[0],
    )  # fmt: skip
    for second in range(0, 3601, 30):  # an hour of attempts, one every 30 s (the back-off cap)
        now[0] = float(second)
        streak.failed("NetworkError: ConnectError")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings[0] == (
        "reaching Telegram at http://127.0.0.1:9/bot failed (NetworkError: ConnectError); "
        "retrying until it answers"
    )
    assert warnings[1:] == [
        f"reaching Telegram at http://127.0.0.1:9/bot still failing after {after}, {attempts} "
        "attempts (last: NetworkError: ConnectError); retrying until it answers"
        for after, attempts in [
            ("1 min", 3), ("5 min", 11), ("15 min", 31), ("30 min", 61), ("45 min", 91),
            ("1 h", 121),
        ]
    ]  # fmt: skip
    streak.succeeded()
    caplog.clear()
    for second in range(3700, 3700 + 61, 30):
        now[0] = float(second)
        streak.failed("TimedOut")
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING][1:] == [
        "reaching Telegram at http://127.0.0.1:9/bot still failing after 1 min, 3 attempts "
        "(last: TimedOut); retrying until it answers"
    ]
