"""Reminders on python-telegram-bot's ``JobQueue``: the Telegram bot's job scheduler.

Covered by ``tests/test_telegram_bot.py`` (reminders through the real bot and its ``JobQueue``).
"""

from __future__ import annotations

from telegram.ext import CallbackContext, JobQueue

from agent.chat.reminders import Fire

__all__ = ["JobQueueScheduler"]


class JobQueueScheduler:
    """A :class:`JobScheduler` on python-telegram-bot's ``JobQueue`` (APScheduler)."""

    def __init__(self, job_queue: JobQueue[CallbackContext]) -> None:  # type: ignore[type-arg]
        self._job_queue = job_queue

    def schedule(self, job_id: str, delay: float, fire: Fire) -> None:
        """Run ``fire()`` in ``delay`` seconds through the job queue."""
        if self._job_queue.get_jobs_by_name(job_id):
            return

        async def callback(_: object) -> None:
            await fire()

        # APScheduler drops a job it runs more than a second late (misfire_grace_time=1): a
        # busy event loop or a wall clock stepped forward would lose the reminder for good.
        # Late, a reminder still fires (once: the job leaves the queue when it runs).
        self._job_queue.run_once(
            callback,
            when=max(delay, 0.0),
            name=job_id,
            job_kwargs={"misfire_grace_time": None},
        )
