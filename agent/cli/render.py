"""How the inspection CLI prints: aligned tables, short times, and JSON.

Output is plain text, the same in a terminal and in a pipe, except that in a terminal a table
too wide for the window has its widest free-text column cut (with ``…``); piped, nothing is
cut, so ``grep`` and ``awk`` see every character. ``--json`` output is indented JSON with
sorted keys, times in ISO 8601 as in the checkpoint files.

Covered by ``tests/test_cli.py`` (the real program's output).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

import orjson
from pydantic_core import to_jsonable_python

__all__ = ["Column", "Output", "ago", "excerpt", "format_bytes", "table_text", "timestamp"]

_ELLIPSIS = "…"
# A cut column keeps at least this many characters.
_MIN_CUT = 12
_GAP = "  "


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its title, whether it is right-aligned (numbers), whether it may be cut."""

    title: str
    right: bool = False
    cut: bool = False


def table_text(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], *, width: int | None = None
) -> str:
    """Return rows as an aligned table under a header line.

    Args:
        columns: the columns, in order.
        rows: one sequence of cells per row, as many as ``columns``.
        width: the most characters a line may have; the widest column marked ``cut`` is
            shortened to fit (``None``: no limit).
    """
    widths = [max([len(c.title), *(len(row[i]) for row in rows)]) for i, c in enumerate(columns)]
    cuttable = [i for i, column in enumerate(columns) if column.cut]
    total = sum(widths) + len(_GAP) * (len(columns) - 1)
    if width is not None and cuttable and total > width:
        widest = max(cuttable, key=lambda i: widths[i])
        widths[widest] = max(widths[widest] - (total - width), _MIN_CUT, len(columns[widest].title))

    def line(cells: Sequence[str]) -> str:
        parts = []
        for cell, column, size in zip(cells, columns, widths, strict=True):
            if len(cell) > size:
                cell = cell[: size - 1] + _ELLIPSIS
            parts.append(cell.rjust(size) if column.right else cell.ljust(size))
        return _GAP.join(parts).rstrip()

    return "\n".join([line([c.title for c in columns]), *(line(row) for row in rows)])


def ago(moment: datetime | None, now: datetime) -> str:
    """Return how long ago ``moment`` was: ``45s ago``, ``12m ago``, ``3h ago``, ``5d ago``."""
    if moment is None:
        return "-"
    seconds = max((now - moment).total_seconds(), 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


def timestamp(moment: datetime | None) -> str:
    """Return a time as ``2025-03-01 12:00:00`` (UTC, as stored), or ``-``."""
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S}"


def excerpt(text: str | None, limit: int) -> str:
    """Return ``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + _ELLIPSIS


def format_bytes(size: int) -> str:
    """Return a size readably: ``812 B``, ``14.2 KB``, ``3.1 MB``."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


class Output:
    """Where a command prints (stdout), and what it knows about it.

    Args:
        stream: the text stream; a terminal gets tables cut to its width.
    """

    def __init__(self, stream: TextIO = sys.stdout) -> None:
        self.stream = stream
        self.is_terminal = stream.isatty()

    @property
    def width(self) -> int | None:
        """The terminal's width in characters; ``None`` when piped (nothing is cut)."""
        return shutil.get_terminal_size().columns if self.is_terminal else None

    def line(self, text: str = "") -> None:
        """Print one line (or several: ``text`` may hold newlines)."""
        self.stream.write(text + "\n")

    def table(self, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
        """Print an aligned table (see :func:`table_text`)."""
        self.line(table_text(columns, rows, width=self.width))

    def fields(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Print ``name  value`` lines with the values aligned."""
        size = max((len(name) for name, _ in pairs), default=0)
        for name, value in pairs:
            self.line(f"{name.ljust(size)}{_GAP}{value}".rstrip())

    def json(self, value: Any) -> None:
        """Print ``value`` (models, dataclasses, dicts, lists) as indented, key-sorted JSON."""
        data = orjson.dumps(
            to_jsonable_python(value), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
        )
        self.line(data.decode("utf-8"))
