"""Durations as people say them: ``45s``, ``5 min``, ``2 h 15 min``, ``3 days``.

Used where a line tells a person how long something has lasted or how late it is (an outage
in the log, a reminder delivered late).

Covered by ``tests/test_failure_streak.py`` and ``tests/test_chat_service.py``.
"""

from __future__ import annotations

__all__ = ["spoken_duration"]

_MINUTE = 60
_HOUR = 3600
_DAY = 86400


def spoken_duration(seconds: float) -> str:
    """Return ``seconds`` rounded down to its two largest units: ``45s``, ``5 min``,
    ``2 h 15 min``, ``1 h``, ``3 days 4 h``."""
    whole = max(int(seconds), 0)
    if whole < _MINUTE:
        return f"{whole}s"
    if whole < _HOUR:
        return f"{whole // _MINUTE} min"
    if whole < _DAY:
        hours, minutes = divmod(whole // _MINUTE, 60)
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(whole // _HOUR, 24)
    unit = "day" if days == 1 else "days"
    return f"{days} {unit} {hours} h" if hours else f"{days} {unit}"
