"""Tests of agent/telegram/retry.py: Telegram's retry rules, with a real ``telegram.Bot`` against
the fake Bot API over HTTP (the ``api`` and ``bot`` fixtures of conftest.py)."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from telegram import Bot, Message
from telegram.error import BadRequest, Forbidden, InvalidToken

from agent.telegram.retry import retry_bot_api
from agent.utils.failure_streak import FailureStreak

CHAT = 77
LOGGER = "tests.bot_api_retry"
HANG = 20.0  # only turns a hang into a failure


def streak() -> FailureStreak:
    return FailureStreak(logging.getLogger(LOGGER), "sending", "retrying")


async def send(
    bot: Bot,
    text: str,
    *,
    failures: FailureStreak | None = None,
    stop: asyncio.Event | None = None,
    attempts: int | None = None,
) -> Message | None:
    """sendMessage to :data:`CHAT` through retry_bot_api, with a 10 ms back-off."""
    return await retry_bot_api(
        lambda: bot.send_message(CHAT, text),
        failures=failures or streak(),
        backoff=0.01,
        stop=stop or asyncio.Event(),
        attempts=attempts,
    )


async def test_transient_failures_are_retried_until_the_call_succeeds(api, bot, caplog):
    """500, a dropped connection, 502 and 429 are each retried; the call's result comes back,
    and the run of failures is one WARNING and one INFO line."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    api.fail_next("sendMessage", status=500)
    api.drop_connections("sendMessage")
    api.fail_next("sendMessage", status=502)
    api.fail_next("sendMessage", status=429, retry_after=1)
    sent = await send(bot, "hello", attempts=5)
    assert sent is not None
    assert sent.text == "hello"
    assert api.attempts("sendMessage") == 5
    assert [s.text for s in api.sent] == ["hello"]
    loud = [r.levelname for r in caplog.records if r.levelno > logging.DEBUG]
    assert loud == ["WARNING", "INFO"]


async def test_a_429_waits_the_retry_after_telegram_names_and_uses_up_no_attempt(api, bot):
    """After a 429 the next attempt comes no sooner than ``retry_after``, however short the
    back-off, and comes even when no attempt is left: Telegram said when to try again."""
    api.fail_next("sendMessage", 2, status=429, retry_after=1)
    started = time.monotonic()
    sent = await send(bot, "later", attempts=1)
    assert sent is not None
    assert time.monotonic() - started >= 2.0
    assert api.attempts("sendMessage") == 3


async def test_the_attempts_run_out_into_none(api, bot):
    """A call that keeps failing returns ``None`` after ``attempts`` attempts."""
    api.fail_always("sendMessage", status=503)
    failures = streak()
    sent = await send(bot, "never", failures=failures, attempts=3)
    assert sent is None
    assert api.attempts("sendMessage") == 3
    assert failures.failures == 3


@pytest.mark.parametrize(
    ("status", "description", "error"),
    [
        (403, "Forbidden: bot was blocked by the user", Forbidden),
        (400, "Bad Request: chat not found", BadRequest),
        (401, "Unauthorized", InvalidToken),
    ],
)
async def test_refusals_and_a_rejected_token_are_raised_at_once(
    api, bot, status, description, error
):
    """A refusal (403, 400: a NetworkError to python-telegram-bot) or a rejected token is
    raised after one attempt: asking again cannot change it."""
    api.fail_always("sendMessage", status=status, description=description)
    with pytest.raises(error):
        await send(bot, "no")
    assert api.attempts("sendMessage") == 1


async def test_stop_ends_a_wait_and_no_attempt_follows_while_failing(api, bot):
    """Setting ``stop`` during a wait (a 429 asking for a minute) returns ``None`` at once,
    without another attempt."""
    api.fail_always("sendMessage", status=429, retry_after=60)
    stop = asyncio.Event()
    task = asyncio.create_task(send(bot, "held", stop=stop))
    await asyncio.to_thread(api.wait_for, lambda a: a.attempts("sendMessage") == 1, HANG)
    stop.set()
    assert await asyncio.wait_for(task, HANG) is None
    assert api.attempts("sendMessage") == 1
