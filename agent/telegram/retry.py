"""Telegram's rules for retrying a Bot API call, in one place (sending, start-up calls, polling).

A 429 (``RetryAfter``, flood control) waits the ``retry_after`` Telegram names, then tries
again (Telegram said when: it uses up no attempt); a timeout, a dropped connection or a 5xx
(``NetworkError``) waits a back-off that doubles after each failure, up to
:data:`~agent.config.TELEGRAM_MAX_BACKOFF`. Anything else is not retried: a refusal
(``Forbidden``; ``BadRequest``, although python-telegram-bot derives it from ``NetworkError``)
or a rejected token cannot change by asking again, unless the caller names it ``transient``
(polling waits out a 409 Conflict, another instance polling, and a 400 with the back-off: it
cannot give up). Failures are logged through a
:class:`~agent.utils.failure_streak.FailureStreak`: one warning per outage, not one per attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError

from agent.config import TELEGRAM_MAX_BACKOFF
from agent.telegram.payloads import describe, retry_after_seconds
from agent.utils.failure_streak import FailureStreak

__all__ = ["retry_bot_api"]

T = TypeVar("T")


async def retry_bot_api(
    call: Callable[[], Awaitable[T]],
    *,
    failures: FailureStreak,
    backoff: float,
    stop: asyncio.Event | None = None,
    attempts: int | None = None,
    transient: tuple[type[TelegramError], ...] = (),
) -> T | None:
    """Run ``call`` until it succeeds, retrying transient failures per Telegram's rules.

    Args:
        call: makes one attempt (a Bot API request).
        failures: counts and logs the failures of this kind of call.
        backoff: seconds before the first retry after a network error or 5xx.
        stop: once set, waits end at once and no attempt is made while the calls fail
            (``None``: retry until the call succeeds or is cancelled).
        attempts: the most attempts that may fail with a network error or a 5xx (``None``: no
            limit); the attempts a 429 answers do not count.
        transient: more errors to retry like a network error (polling: ``Conflict``,
            ``BadRequest``).

    Returns:
        What ``call`` returned, or ``None``: the attempts ran out, or ``stop`` was set.

    Raises:
        telegram.error.TelegramError: a failure retrying cannot help (403, 400, 401, 409...).
    """
    delay = backoff
    failed = 0  # attempts that failed with a network error or a 5xx
    stopping = stop or asyncio.Event()  # never set: no stop
    retried: tuple[type[TelegramError], ...] = (NetworkError, *transient)
    while not stopping.is_set() or not failures.active:
        try:
            result = await call()
        except RetryAfter as exc:
            wait = retry_after_seconds(exc)
            failures.failed(f"flood control: Telegram asks to wait {wait:.0f}s")
        except retried as exc:  # timeouts, dropped connections, 5xx
            if isinstance(exc, BadRequest) and not isinstance(exc, transient):
                raise  # a NetworkError to python-telegram-bot, final to Telegram
            failures.failed(describe(exc))
            failed += 1
            if failed == attempts:
                return None
            wait, delay = delay, min(delay * 2, TELEGRAM_MAX_BACKOFF)
        else:
            failures.succeeded()
            return result
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await stopping.wait()
    return None
