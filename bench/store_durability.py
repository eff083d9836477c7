"""Is a store durable, and does it survive kill -9? Counted with strace, then killed at random.

:func:`durability` runs this module in a child process, under ``strace -f`` when there is one
(``python -m bench.store_durability WORKDIR KILLS HISTORY DATA OUT STORE...``, the store
class names of :mod:`bench.alternative_stores`). For each store the child:

1. writes a history of ``HISTORY`` turns at once, the store closed after;
2. opens a copy, reads its settings and runs ``FSYNC_TURNS`` turns between two marker syscalls
   (``umask``): strace's log between the markers holds the fsync-family syscalls of those
   turns, whichever thread (SQLite's, aiosqlite's) made them;
3. ``KILLS`` times, on a fresh copy: forks a writer (so the libraries are imported once) that
   opens the store and writes turns, reporting each one on a pipe once the call that saved it
   has returned; sends it SIGKILL at a random moment after its first report; then a fresh
   object opens the store, which must load and hold the history and every reported turn.

A SIGKILL leaves the operating system's page cache in place: it tests whether a crash of the
process can tear the store, not what a power cut leaves, which is what the fsync count answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import shutil
import signal
import sys
import time
import traceback
from itertools import count
from pathlib import Path
from typing import Any

from bench.alternative_stores import STORES, Store
from bench.harness import ROOT
from bench.locomo_texts import utterances

#: Turns whose fsync-family syscalls strace counts, per store.
FSYNC_TURNS = 10
#: The writer is killed this long (uniformly at random) after its first report.
KILL_WITHIN_S = 0.3
SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "msync", "syncfs", "sync")

# os.umask(0o077) is the marker: no store here calls umask, and strace sees it.
_MARKER_MASK = 0o077
_MARKER = re.compile(r"^\d+\s+umask\(077\)")
_SYNC_CALL = re.compile(rf"^\d+\s+(?:{'|'.join(SYNC_CALLS)})\(")
_TURN_NUMBER = re.compile(r"^\[(\d+)\] ")


def _text(number: int, corpus: list[str]) -> str:
    return f"[{number}] {corpus[number % len(corpus)]}"


async def _settings_and_turns(store: Store, first: int, corpus: list[str]) -> str:
    await store.open()
    try:
        settings = await store.settings()
        os.umask(os.umask(_MARKER_MASK))  # marker: the turns' syscalls start here...
        for number in range(first, first + FSYNC_TURNS):
            await store.turn(number, _text(number, corpus))
        os.umask(os.umask(_MARKER_MASK))  # ...and end here
    finally:
        await store.close()
    return settings


async def _write_until_killed(store: Store, first: int, fd: int, corpus: list[str]) -> None:
    await store.open()
    for number in count(first):
        await store.turn(number, _text(number, corpus))
        os.write(fd, b"%d\n" % number)  # reported: the call that saved it has returned


async def _check(store: Store, history: int, reported: list[int]) -> tuple[bool, int]:
    """Whether the store loads and, if it does, how many saved turns it lacks."""
    try:
        await store.open()
    except Exception:  # a torn file: what this looks for
        return False, 0
    try:
        texts = await store.user_texts()
    finally:
        await store.close()
    kept = {int(m.group(1)) for t in texts if (m := _TURN_NUMBER.match(t))}
    history_lost = max(0, history - (len(texts) - len(kept)))
    return True, history_lost + len(set(reported) - kept)


def _kill_once(
    kind: type[Store], prepared: Path, trial: Path, history: int, corpus: list[str]
) -> dict[str, int]:
    shutil.copytree(prepared, trial)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer, until the kill
        os.close(read_fd)
        try:
            asyncio.run(_write_until_killed(kind(trial), history + 1, write_fd, corpus))
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(1)  # never the parent's clean-up (temporary directories, atexit)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        first = pipe.readline()
        if not first:
            os.waitpid(pid, 0)
            raise RuntimeError(f"the writer of {kind.name} died before its first turn")
        time.sleep(random.uniform(0, KILL_WITHIN_S))  # noqa: S311 (timing, not security)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        reported = [int(line) for line in [first, *pipe.read().split()]]
    loads, lost = asyncio.run(_check(kind(trial), history, reported))
    shutil.rmtree(trial)
    return {"reported": len(reported), "loads": int(loads), "lost": lost}


def run_child(
    workdir: Path, kills: int, history: int, data: Path, out: Path, names: list[str]
) -> None:
    """For each store named: its settings, the syscalls of its turns, ``kills`` kill -9s.

    Writes the findings to ``out`` as JSON, by store class name: ``settings``, ``kills``,
    ``loads`` (the store opened after the kill), ``checked`` (turns reported by the writers
    whose store loaded) and ``lost`` (turns of the history or reported that it lacked).
    """
    logging.getLogger("agent").setLevel(logging.ERROR)  # "checkpoint behind, rebuilt": expected
    corpus = utterances(data)
    by_name = {kind.__name__: kind for kind in STORES}
    found: dict[str, Any] = {}
    for name in names:
        began = time.perf_counter()
        kind = by_name[name]
        prepared = workdir / name / "prepared"
        asyncio.run(kind(prepared).fill(corpus, history))
        shutil.copytree(prepared, workdir / name / "fsync")
        settings = asyncio.run(
            _settings_and_turns(kind(workdir / name / "fsync"), history + 1, corpus)
        )
        trials = [
            _kill_once(kind, prepared, workdir / name / f"kill-{i}", history, corpus)
            for i in range(kills)
        ]
        found[name] = {
            "settings": settings,
            "kills": kills,
            "loads": sum(t["loads"] for t in trials),
            "checked": sum(t["reported"] for t in trials if t["loads"]),
            "lost": sum(t["lost"] for t in trials),
        }
        elapsed = time.perf_counter() - began
        print(f"kill -9: {kind.name} ({elapsed:.0f} s) {found[name]}", file=sys.stderr)
        shutil.rmtree(workdir / name)
    out.write_text(json.dumps(found), encoding="utf-8")


def _syncs_per_turn(trace: Path, names: list[str]) -> dict[str, float]:
    """The sync syscalls between each store's two markers in the strace log, per turn."""
    counts: list[int] = []
    for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
        if _MARKER.match(line):
            counts.append(0)
        elif counts and _SYNC_CALL.match(line):
            counts[-1] += 1
    if len(counts) != 2 * len(names):
        return {}
    # Segment 2k follows store k's first marker: its turns. (2k + 1: its close and its kills.)
    return {name: counts[2 * k] / FSYNC_TURNS for k, name in enumerate(names)}


async def durability(
    workdir: Path, kinds: list[type[Store]], kills: int, history: int, data: Path
) -> tuple[dict[str, Any], bool]:
    """Run the child, under strace when there is one: its findings, and whether strace counted.

    Each store's findings gain ``syncs``: fsync-family syscalls per turn, ``None`` uncounted.

    Raises:
        RuntimeError: the child failed (its traceback is on stderr).
    """
    names = [kind.__name__ for kind in kinds]
    out, trace = workdir / "durability.json", workdir / "strace.log"
    command = [
        sys.executable, "-m", "bench.store_durability",
        str(workdir / "durability"), str(kills), str(history), str(data), str(out), *names,
    ]  # fmt: skip
    strace = shutil.which("strace")
    traced = [
        strace, "-f", "--seccomp-bpf", "-o", str(trace),
        "-e", f"trace={','.join(SYNC_CALLS)},umask", *command,
    ] if strace else []  # fmt: skip
    syncs: dict[str, float] = {}
    for argv in (traced, command):
        if not argv:
            continue
        shutil.rmtree(workdir / "durability", ignore_errors=True)
        child = await asyncio.create_subprocess_exec(*argv, cwd=ROOT)
        if await child.wait() == 0:
            syncs = _syncs_per_turn(trace, names) if argv is traced else {}
            break
        print(f"store durability: the child failed under {argv[0]}", file=sys.stderr)
    else:
        raise RuntimeError("store durability: the child failed")
    found: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    for name in names:
        found[name]["syncs"] = syncs.get(name)
    return found, bool(syncs)


if __name__ == "__main__":
    workdir, kills, history, data, out, *names = sys.argv[1:]
    run_child(Path(workdir), int(kills), int(history), Path(data), Path(out), names)
