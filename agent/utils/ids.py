"""Identifiers we generate: unique, time-sortable, and safe as file names.

Ids are UUIDv7 (a millisecond timestamp followed by random bits; the ``uuid6`` package keeps
them increasing within a process, borrowing from the next millisecond under bursts, so ids made
later sort later) in lowercase hex behind a short prefix that says what they name. Checkpoint
file names are built from session ids, so :func:`is_session_id` is the gate that keeps user
text out of paths.
"""

from __future__ import annotations

import re

import uuid6

__all__ = ["is_session_id", "job_id", "memory_id", "session_id", "turn_id"]

_SESSION_ID = re.compile(r"\Ases_[0-9a-f]{32}\Z")


def session_id() -> str:
    """Return a new session id, e.g. ``ses_019a...``."""
    return f"ses_{uuid6.uuid7().hex}"


def turn_id() -> str:
    """Return a new turn id, e.g. ``trn_019a...``."""
    return f"trn_{uuid6.uuid7().hex}"


def job_id() -> str:
    """Return a new job id (a reminder, a background task), e.g. ``job_019a...``."""
    return f"job_{uuid6.uuid7().hex}"


def memory_id() -> str:
    """Return a new long-term memory id, e.g. ``mem_019a...``."""
    return f"mem_{uuid6.uuid7().hex}"


def is_session_id(value: str) -> bool:
    """Tell whether ``value`` has the exact shape of an id made by :func:`session_id`."""
    return bool(_SESSION_ID.match(value))
