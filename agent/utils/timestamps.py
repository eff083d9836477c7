"""Timestamps as the database stores them: ISO 8601 text, UTC, one fixed width.

Every store writes its times through :func:`to_db_time` so that text order is time order in
SQL comparisons (``received_at < ?``, ``ORDER BY updated_at``), and reads them back with
:func:`from_db_time`. Both pass ``None`` through, for nullable columns.

Covered by ``tests/test_conversation_store.py`` and ``tests/test_store_conformance.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload

__all__ = ["from_db_time", "to_db_time"]


@overload
def to_db_time(moment: datetime) -> str: ...
@overload
def to_db_time(moment: None) -> None: ...
@overload
def to_db_time(moment: datetime | None) -> str | None: ...
def to_db_time(moment: datetime | None) -> str | None:
    """Return ``moment`` in UTC as ISO text with microseconds (``None`` stays ``None``)."""
    return None if moment is None else moment.astimezone(UTC).isoformat(timespec="microseconds")


@overload
def from_db_time(text: str) -> datetime: ...
@overload
def from_db_time(text: None) -> None: ...
@overload
def from_db_time(text: str | None) -> datetime | None: ...
def from_db_time(text: str | None) -> datetime | None:
    """Return the datetime a :func:`to_db_time` text stands for (``None`` stays ``None``)."""
    return None if text is None else datetime.fromisoformat(text)
