"""The message a due reminder sends, and that the turn firing it records (I2: what the user
saw is in the log).

A reminder fired on time says ``⏰ Reminder: call mom``. One fired a minute late or more (the
bot, or the terminal, was not running at its time; the database refused writes for a while)
says when it was due, so that "call mom" an hour late is not taken for "call mom now":
``⏰ Late reminder (due 2026-03-01 09:30 UTC, 1 h 5 min ago): call mom``.

Covered by ``tests/test_chat_service.py`` and ``tests/test_console_sessions.py``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from agent.memory import JobRef
from agent.utils.durations import spoken_duration

__all__ = ["LATE_AFTER", "reminder_text"]

#: How late a reminder may fire before its message says when it was due.
LATE_AFTER = timedelta(minutes=1)


def reminder_text(job: JobRef, now: datetime | None = None) -> str:
    """Return the message of ``job`` fired at ``now`` (``None``: on time, whenever that is)."""
    label = job.label or "(no text)"
    if now is not None and job.due_at is not None and now - job.due_at >= LATE_AFTER:
        late = spoken_duration((now - job.due_at).total_seconds())
        return f"⏰ Late reminder (due {job.due_at:%Y-%m-%d %H:%M} UTC, {late} ago): {label}"
    return f"⏰ Reminder: {label}"
