"""Logging for the bot: per-update context on every line, and no secret in any line.

Two filters sit on the root handler. :class:`ContextFilter` adds the ``chat_id``, ``session_id``
and ``update_id`` bound with :func:`bind` for the update being handled (a ``ContextVar``, so
concurrent chats do not mix). :class:`RedactingFilter` replaces every secret it was given (the
bot token, the LLM API key) with ``[REDACTED]`` in the final message and any traceback text:
Bot API URLs carry the token, and httpx logs URLs.

With several bot processes on one database (issue 18), every line also names its worker
(``AGENT_WORKER_ID``, by default ``host:pid``), after the level: ``... INFO worker=web-1:4242
agent.chat...``, so that the lines of one chat can be followed from worker to worker.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import Any

__all__ = ["ContextFilter", "RedactingFilter", "bind", "configure_logging"]

_context: ContextVar[dict[str, Any] | None] = ContextVar("agent_log_context", default=None)

_FORMAT = "%(asctime)s %(levelname)s {worker}%(name)s%(context)s: %(message)s"


@contextmanager
def bind(**fields: Any) -> Iterator[None]:
    """Attach ``fields`` (e.g. ``chat_id=1``) to every log line inside the ``with`` block."""
    merged = {**(_context.get() or {}), **fields}
    token = _context.set(merged)
    try:
        yield
    finally:
        _context.reset(token)


class ContextFilter(logging.Filter):
    """Adds ``record.context`` (`` [chat_id=1 update_id=7]`` or empty) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Decorate the record; never drops it."""
        fields = _context.get()
        record.context = (
            " [" + " ".join(f"{key}={value}" for key, value in fields.items()) + "]"
            if fields
            else ""
        )
        return True


class RedactingFilter(logging.Filter):
    """Replaces secrets in the message, its arguments and its exception text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """Return ``text`` with every secret replaced."""
        for secret in self._secrets:
            text = text.replace(secret, "[REDACTED]")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        """Render the message now, redacted, and redact any traceback; never drops it."""
        if not self._secrets:
            return True
        record.msg = self.redact(record.getMessage())
        record.args = None
        if record.exc_info:
            formatter = logging.Formatter()
            record.exc_text = self.redact(formatter.formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


def _log_uncaught(
    kind: type[BaseException], value: BaseException, traceback: TracebackType | None
) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, traceback)
        return
    logging.getLogger("agent").critical(
        "stopped by an uncaught error", exc_info=(kind, value, traceback)
    )


def configure_logging(
    level: str, secrets: Iterable[str] = (), *, worker_id: str | None = None
) -> None:
    """Send logs to stderr with context fields and secret redaction; so is the traceback of
    an exception nothing caught (``sys.excepthook``).

    Args:
        level: the level of our own loggers (``AGENT_LOG_LEVEL``).
        secrets: strings that must never appear in a log line (token, API keys).
        worker_id: the process's name among the bot's workers (``AGENT_WORKER_ID``), on every
            line as ``worker=...``; ``None``: not shown (a tool that is no worker).
    """
    # The id goes into the format text as it is: a `%` in it must not read as a field.
    worker = "" if worker_id is None else "worker=" + worker_id.replace("%", "%%") + " "
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT.format(worker=worker)))
    handler.addFilter(ContextFilter())
    handler.addFilter(RedactingFilter(secrets))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # A crash's traceback goes through the same filters: it may hold the token too.
    sys.excepthook = _log_uncaught
    # httpx logs every request URL at INFO, and Bot API URLs carry the token.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    logging.getLogger("aiosqlite").setLevel(logging.INFO)
