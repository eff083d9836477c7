"""What the cost benchmarks share: where they run, what they ran on, and how they sum up.

A benchmark runs in :func:`temporary_workdir`, a temporary directory next to the repository
(the same filesystem as a deployment from a clone, not a tmpfs), names the machine with
:func:`machine` in its section of ``BENCHMARKS.md``, opens lanes there with
:func:`lane_settings` and reports :func:`percentile` figures; a part that runs alone parses
its command line with :func:`arguments`.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from agent.config import Settings
from bench.locomo_texts import DATA

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def temporary_workdir(prefix: str) -> Iterator[Path]:
    """Yield a new directory beside the repository (in it, if read-only); remove it after."""
    base = ROOT.parent if os.access(ROOT.parent, os.W_OK) else ROOT
    with tempfile.TemporaryDirectory(prefix=prefix, dir=base) as tmp:
        yield Path(tmp)


def machine(workdir: Path) -> str:
    """Describe the machine: cores, CPU, the filesystem under ``workdir``, kernel, versions."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    fs = "unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(  # noqa: S603
            ["df", "-T", str(workdir)],  # noqa: S607
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.splitlines()  # fmt: skip
        fields = out[-1].split()
        fs = f"{fields[1]} on {fields[0]}"
    return (
        f"{os.cpu_count()} cores ({cpu}), {fs}, Linux {platform.release()},"
        f" Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )


def lane_settings(workdir: Path, name: str, durability: str) -> Settings:
    """Settings of a lane whose database and checkpoints are ``workdir/name*``."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        db_path=workdir / f"{name}.db",
        checkpoint_dir=workdir / f"{name}-checkpoints",
        durability=durability,
    )


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of ``values``: 0.99 of 100 is the 99th."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def arguments(prog: str, doc: str, quick: str) -> argparse.ArgumentParser:
    """A part's command line: ``--quick`` (described by ``quick``), ``--no-write``, ``--data``."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--data", type=Path, default=DATA, help="the LoCoMo JSON file")
    return parser
