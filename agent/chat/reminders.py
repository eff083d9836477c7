"""Reminders: job refs of the memory lane, run by a scheduler, re-scheduled after a restart.

A reminder is a :class:`~agent.memory.JobRef` of kind ``reminder`` that the concierge put on a
turn. The session state keeps it among its active jobs until the turn that fires it closes it
(:meth:`~agent.memory.ConversationLane.complete_job`), so after a crash every reminder still
active is scheduled again; one whose time passed while the bot was down fires at once, once.

Covered by ``tests/test_chat_service.py`` and ``tests/test_telegram_bot.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Any, Protocol

from agent.chat.job_table import JobTable
from agent.memory import ConversationLane, ConversationTurn, JobRef
from agent.memory.schemas import utc_now

__all__ = ["AsyncioScheduler", "Fire", "JobScheduler", "Reminders"]

logger = logging.getLogger(__name__)

Fire = Callable[[], Coroutine[Any, Any, None]]


class JobScheduler(Protocol):
    """**Protocol:** runs a coroutine when a job falls due.

    Called by :class:`Reminders` when a reminder is set and for every active reminder at
    start-up. Scheduling a ``job_id`` that is already scheduled does nothing.
    """

    def schedule(self, job_id: str, delay: float, fire: Fire) -> None:
        """Run ``fire()`` in ``delay`` seconds (at once if ``delay <= 0``)."""
        ...


class AsyncioScheduler:
    """A :class:`JobScheduler` on the event loop's timers (the terminal mode has no JobQueue)."""

    def __init__(self) -> None:
        self._handles: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def schedule(self, job_id: str, delay: float, fire: Fire) -> None:
        """Run ``fire()`` in ``delay`` seconds on the running loop."""
        if job_id in self._handles:
            return

        def start() -> None:
            self._handles.pop(job_id, None)
            task = asyncio.get_running_loop().create_task(fire(), name=f"job-{job_id}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        self._handles[job_id] = asyncio.get_running_loop().call_later(max(delay, 0.0), start)

    async def shutdown(self) -> None:
        """Cancel the timers and wait for the jobs already running."""
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


class Reminders:
    """Schedules the reminders of the memory lane and hands the due ones to ``on_due``.

    Args:
        lane: the hydrated memory lane (the source of active reminders).
        scheduler: runs the timers.
        on_due: called with ``(chat_id, job)`` when a reminder falls due; it records and
            delivers the reminder (through the chat's ordered queue).
        clock: returns the current time.
        jobs: the jobs table of a bot whose workers share one database: each reminder set is
            a row there too (added, or deleted when cancelled), which one worker claims.
    """

    def __init__(
        self,
        lane: ConversationLane,
        scheduler: JobScheduler,
        on_due: Callable[[int, JobRef], Awaitable[None]],
        *,
        clock: Callable[[], datetime] = utc_now,
        jobs: JobTable | None = None,
    ) -> None:
        self._lane = lane
        self._scheduler = scheduler
        self._on_due = on_due
        self._clock = clock
        self._jobs = jobs

    async def schedule_active(self) -> int:
        """Schedule every reminder still active in the lane (at start-up); return how many."""
        count = 0
        for chat_id, job in self._lane.active_jobs():
            if job.kind == "reminder":
                self._schedule(chat_id, job)
                count += 1
        if count:
            logger.info("re-scheduled %d reminders", count)
        if self._jobs is not None:
            await self._jobs.track_reminders(self._lane.active_jobs())
        return count

    async def schedule_from_turn(self, chat_id: int, turn: ConversationTurn) -> None:
        """Schedule the reminders a just-committed turn set (a message's, or a repeating
        reminder's firing, which sets its next one), and forget those it cancelled."""
        for job in turn.job_refs:
            if job.kind == "reminder" and job.status == "scheduled":
                self._schedule(chat_id, job)
        if self._jobs is not None:
            await self._jobs.track_reminders((chat_id, ref) for ref in turn.job_refs)

    def _schedule(self, chat_id: int, job: JobRef) -> None:
        now = self._clock()
        delay = 0.0 if job.due_at is None else (job.due_at - now).total_seconds()

        async def fire() -> None:
            await self._on_due(chat_id, job)

        self._scheduler.schedule(job.job_id, delay, fire)
