"""The jobs a conversation refers to: a reminder set for a time, and how a repeating one
repeats. Part of the session state and of each turn (:mod:`agent.memory.schemas` re-exports
them).

Covered by ``tests/test_recurrence.py`` and ``tests/test_conversation_state_manager.py``.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import Field

from agent.memory.schema_base import Value

__all__ = ["MAX_SKIPS", "JobRef", "JobStatus", "Repeat", "RepeatEvery"]

JobStatus = Literal["scheduled", "done", "cancelled"]
RepeatEvery = Literal["day", "weekday", "week", "month"]


#: How many single occurrences of a series may be skipped ahead at once.
MAX_SKIPS = 31


class Repeat(Value):
    """How a repeating reminder repeats (:mod:`agent.memory.rules.recurrence`): every day,
    every weekday (Monday to Friday), every week on ``weekday`` (0 is Monday) or every month on
    ``day`` (a shorter month's last day when it has none), at ``at`` (``HH:MM``) on the wall
    clock of ``zone`` (an IANA name); days and weeks may skip (``interval``), and single
    occurrences be skipped (``skips``)."""

    every: RepeatEvery
    at: str = Field(pattern=r"^(?:[01]\d|2[0-3]):[0-5]\d$")
    weekday: int | None = Field(default=None, ge=0, le=6)
    day: int | None = Field(default=None, ge=1, le=31)
    zone: str = "UTC"
    # Every ``interval`` days or weeks, counted from ``since`` (the local date of one
    # occurrence): "every other Monday" is 2 from the first Monday it fell on.
    interval: int = Field(default=1, ge=1, le=12)
    since: date | None = None
    # Local dates of occurrences skipped ("skip the bins on the 14th"), dropped once passed.
    skips: tuple[date, ...] = Field(default=(), max_length=MAX_SKIPS)


class JobRef(Value):
    """A scheduled job (a reminder, a background task) the conversation refers to.

    A turn that carries a job ref with status ``scheduled`` adds it to the session's active
    jobs; a later turn carrying the same ``job_id`` as ``done`` or ``cancelled`` removes it.
    A repeating reminder (``repeat``) is its next occurrence: the turn that fires it schedules
    the one after.
    """

    job_id: str
    kind: str = "job"
    label: str = ""
    due_at: datetime | None = None
    status: JobStatus = "scheduled"
    repeat: Repeat | None = None
