"""How the inspection CLI prints: tables, trees and progress bars drawn by rich, and JSON.

In a terminal, output has colour and emphasis (headers, names, verdicts), and a table too wide
for the window has its widest free-text column cut (with ``…``); long work (``verify --deep``,
``import``, ``export`` and ``prune`` over many sessions) shows a progress bar on stderr, gone
once done. Piped, or with ``NO_COLOR`` set, it is plain text: no escape codes, nothing cut,
no trailing spaces, no progress bar, so ``grep`` and ``awk`` see every character. ``--json``
output is indented JSON with sorted keys, times in ISO 8601 as in the checkpoint files, the same
everywhere.

Covered by ``tests/test_cli.py`` (the real program's output, through pipes and a
pseudo-terminal).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

import orjson
from pydantic_core import to_jsonable_python
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

__all__ = [
    "Column",
    "Output",
    "Section",
    "ago",
    "excerpt",
    "format_bytes",
    "timestamp",
]

_ELLIPSIS = "…"
# A cut column keeps at least this many characters.
_MIN_CUT = 12
# Columns are two spaces apart: one of padding on each side, none at the edges.
_GAP = 2
# Piped output is never wrapped or cut: a width no line reaches.
_UNLIMITED = 1 << 20
_HEADER = "bold"
_NAME = "bold"
_TITLE = "bold cyan"


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its title, whether it is right-aligned (numbers), whether it may be
    cut, and the style of its values in a terminal (``{"matches": "green"}``; any other value:
    ``other_style``)."""

    title: str
    right: bool = False
    cut: bool = False
    styles: Mapping[str, str] = field(default_factory=dict)
    other_style: str = ""

    def style(self, value: str) -> str:
        """The style of ``value`` in this column."""
        return self.styles.get(value, self.other_style)


@dataclass(frozen=True, slots=True)
class Section:
    """A titled part of a tree: a table, a text, or nothing (``none`` is said)."""

    title: str
    columns: Sequence[Column] = ()
    rows: Sequence[Sequence[str]] = ()
    text: str | None = None


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


def _plain_requested() -> bool:
    """Whether ``NO_COLOR`` asks for no colour (https://no-color.org: set and not empty)."""
    return bool(os.environ.get("NO_COLOR"))


class Output:
    """Where a command prints (stdout), and how: rich in a terminal, plain text otherwise.

    Args:
        stream: the text stream of the output; a terminal gets colour and cut tables.
        progress_stream: where progress bars go, when it is a terminal (default: stderr).
    """

    def __init__(self, stream: TextIO = sys.stdout, progress_stream: TextIO | None = None) -> None:
        self.stream = stream
        self.is_terminal = stream.isatty()
        plain = not self.is_terminal or _plain_requested()
        self.console = Console(
            file=stream,
            width=None if self.is_terminal else _UNLIMITED,
            color_system=None if plain else "auto",
            force_terminal=self.is_terminal,
            highlight=False,
            markup=False,
            emoji=False,
        )
        bars = progress_stream if progress_stream is not None else sys.stderr
        self._bars = (
            Console(file=bars, highlight=False, color_system=None if plain else "auto")
            if bars.isatty()
            else None
        )

    @property
    def width(self) -> int | None:
        """The terminal's width in characters; ``None`` when piped (nothing is cut)."""
        return self.console.width if self.is_terminal else None

    def line(self, text: str = "") -> None:
        """Print one line (or several: ``text`` may hold newlines), as it is."""
        self.stream.write(text + "\n")
        self.stream.flush()

    def table(self, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
        """Print an aligned table under a header line; in a terminal too narrow for it, the
        widest column marked ``cut`` is shortened to fit (with ``…``)."""
        self._print(self._table(columns, rows, self.width))

    def fields(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Print ``name  value`` lines with the values aligned."""
        self._print(_fields(pairs))

    def tree(
        self, title: str, pairs: Sequence[tuple[str, str]], sections: Sequence[Section]
    ) -> None:
        """Print a tree: ``title``, its fields, then each section (a table or a text)."""
        root = Tree(Text(title, style=_TITLE), guide_style="dim")
        root.add(_fields(pairs))
        for section in sections:
            if section.text is not None:
                root.add(Text(section.title, style=_TITLE)).add(Text(section.text))
            elif section.rows:
                width = None if self.width is None else self.width - 8  # the guides' indent
                branch = root.add(Text(f"{section.title} ({len(section.rows)})", style=_TITLE))
                branch.add(self._table(section.columns, section.rows, width))
            else:
                root.add(Text(f"{section.title}: none"))
        self._print(root)

    def json(self, value: Any) -> None:
        """Print ``value`` (models, dataclasses, dicts, lists) as indented, key-sorted JSON."""
        data = orjson.dumps(
            to_jsonable_python(value), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
        )
        self.line(data.decode("utf-8"))

    @contextmanager
    def progress(self, what: str, total: int | None) -> Iterator[Callable[[], None]]:
        """Show a progress bar of ``total`` steps (``None``: a spinner) while the block runs,
        in a terminal only; yield the function that counts one step done."""
        if self._bars is None:
            yield lambda: None
            return
        bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self._bars,
            transient=True,  # gone once done: the output stays what it is piped
        )
        with bar:
            task = bar.add_task(what, total=total)
            yield lambda: bar.advance(task)

    def _print(self, renderable: RenderableType) -> None:
        if self.is_terminal:
            self.console.print(renderable)
            return
        with self.console.capture() as captured:
            self.console.print(renderable)
        self.stream.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
        self.stream.flush()

    @staticmethod
    def _table(
        columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None
    ) -> Table:
        widths = [
            max([cell_len(c.title), *(cell_len(row[i]) for row in rows)])
            for i, c in enumerate(columns)
        ]
        cuttable = [i for i, column in enumerate(columns) if column.cut]
        total = sum(widths) + _GAP * (len(columns) - 1)
        if width is not None and cuttable and total > width:
            widest = max(cuttable, key=lambda i: widths[i])
            shortest = max(_MIN_CUT, cell_len(columns[widest].title))
            widths[widest] = max(widths[widest] - (total - width), shortest)
        table = Table(box=None, pad_edge=False, padding=(0, 1), header_style=_HEADER)
        for column, size in zip(columns, widths, strict=True):
            table.add_column(
                column.title,
                justify="right" if column.right else "left",
                no_wrap=True,
                overflow="ellipsis",
                min_width=size,
                max_width=size,
            )
        for row in rows:
            cells = zip(row, columns, strict=True)
            table.add_row(*(Text(cell, style=column.style(cell)) for cell, column in cells))
        return table


def _fields(pairs: Sequence[tuple[str, str]]) -> Table:
    table = Table(box=None, pad_edge=False, padding=(0, 1), show_header=False)
    table.add_column(style=_NAME, no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in pairs:
        table.add_row(Text(name), Text(value))
    return table
