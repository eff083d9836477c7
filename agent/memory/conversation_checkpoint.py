"""Per-session JSON checkpoint files: a base written atomically, and a journal (invariant I5).

One ``<session_id>.json`` per session, indented and with sorted keys so that a person can read
and diff it: the base. Rewriting it goes to a temporary file in the same directory, which is
flushed and fsynced, replaces the old file with ``os.replace``, and finally the directory is
fsynced, so a reader (or a crash) sees the old file or the new one, never a torn one.

A turn changes a little of a snapshot, so after the base the writer appends what each write
changed to ``<session_id>.journal`` (one JSON line a write, fdatasync'ed with durability
``full``; :mod:`agent.memory.checkpoint_journal` says what a line holds and how a torn one
reads). It rewrites the base, then removes the journal (which names the old base, so a crash
in between leaves it out), once the journal has grown to the base's size or
:data:`JOURNAL_LINES` lines, at the first write of a session in a process, at a clean stop
(``compact``), after a write that failed, and whenever the files are not as this writer left
them (another process or a person wrote them). Reading is the base and every complete line of
its journal; a failed write, of either kind, leaves what the files read as it was.

File names come from session ids we generated (:func:`agent.utils.ids.is_session_id`: a
prefix and hex digits), never from user text, so a path cannot leave the checkpoint directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from agent.errors import CheckpointCorrupt, CheckpointError
from agent.memory import checkpoint_journal
from agent.memory.schemas import (
    CHECKPOINT_SCHEMA_VERSION,
    ConversationCheckpointSnapshot,
    dump_json,
)
from agent.utils.ids import is_session_id

__all__ = ["JOURNAL_LINES", "CheckpointStore", "CheckpointWriter", "SnapshotSource"]

logger = logging.getLogger(__name__)

_SUFFIX = ".json"
_TEMP_PREFIX = ".tmp-"
# What version 1 wrote of a turn's delivery: the state at commit, before the reply was sent.
_V1_DELIVERY_FIELDS = ("status", "reply_message_id", "delivered_at")
# Conversations are private: the directory is its owner's alone (files are 0600 from mkstemp).
_PRIVATE_DIRECTORY = 0o700
_PRIVATE_FILE = 0o600
#: The most lines a journal gets before its base is rewritten (reading applies every one).
JOURNAL_LINES = 64
# The sessions a writer remembers its last write of (the lane's default resident sessions);
# a session it forgot gets its base rewritten at its next write.
_REMEMBERED = 256

#: A snapshot to write, or the function that makes it: a store calls it where it writes (the
#: file store in its worker thread), so a live session's snapshot is built off the event loop.
SnapshotSource = ConversationCheckpointSnapshot | Callable[[], ConversationCheckpointSnapshot]


class CheckpointStore(Protocol):
    """**Protocol:** where the lane keeps each session's checkpoint.

    :class:`CheckpointWriter` (files in one directory: the embedded default) and
    :class:`agent.memory.storage.checkpoint_rows.DatabaseCheckpoints` (a row per session in
    the database, and files only where a directory is set: PostgreSQL, read by every worker and
    the CLI) are both one.
    """

    @property
    def directory(self) -> Path | None:
        """The directory of the checkpoint files (``None``: no files are written)."""
        ...

    def path_for(self, session_id: str) -> Path | None:
        """Return the checkpoint file of a session (``None``: no files are written)."""
        ...

    async def write(self, snapshot: SnapshotSource, *, compact: bool = False) -> object:
        """Write a snapshot (or the one ``snapshot()`` makes) durably; a reader sees the
        previous one or this one, whole.

        ``compact``: leave it in one file, as a person reading the directory expects after
        a clean stop (a file store's base, no journal).

        Raises:
            CheckpointError: it could not be written; the previous one is left intact.
        """
        ...

    async def load(self, session_id: str) -> ConversationCheckpointSnapshot | None:
        """Read and validate a session's checkpoint; ``None`` if there is none.

        Raises:
            CheckpointCorrupt: it is not a valid snapshot of this session.
            CheckpointError: it cannot be read.
        """
        ...

    async def delete(self, session_id: str) -> bool:
        """Delete a session's checkpoint; return whether there was one."""
        ...

    async def session_ids(self) -> list[str]:
        """Return the ids of every session that has a checkpoint, sorted."""
        ...

    def make_private(self) -> None:
        """Make the checkpoint directory, if any, its owner's alone.

        Raises:
            OSError: the directory cannot be created or changed.
        """
        ...

    def remove_temp_files(self) -> int:
        """Delete what writes a crash interrupted left behind; return how many."""
        ...


@dataclass(slots=True)
class _Written:
    """What a writer last left of a session's files: its journal is appended to only while
    they are still so (inode, size and time of each; no journal yet: ``journal`` is ``None``)."""

    document: dict[str, Any]
    digest: str
    base: tuple[int, int, int]
    base_size: int
    journal: tuple[int, int] | None = None
    lines: int = 0


def _identity(stat: os.stat_result) -> tuple[int, int, int]:
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


class CheckpointWriter:
    """Writes, reads and deletes the checkpoint files of one directory.

    Args:
        directory: where the ``<session_id>.json`` files (and their journals) live; created
            if missing.
        fsync: fsync files and directory on every write (durability ``full``); without it a
            write survives a crash of the process but not of the machine.
    """

    def __init__(self, directory: str | Path, *, fsync: bool = True) -> None:
        self._directory = Path(directory).resolve()
        self.fsync = fsync
        # Session id -> what this writer last wrote of it, the most recent last. Each
        # session's writes come one at a time (the lane writes under the chat's lock), each in
        # a worker thread; the lock guards the order of the dict across threads.
        self._written: OrderedDict[str, _Written] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def directory(self) -> Path:
        """The directory of the checkpoint files."""
        return self._directory

    def path_for(self, session_id: str) -> Path:
        """Return the checkpoint path (the base file) of a session.

        Raises:
            ValueError: ``session_id`` is not an id we generate (so it cannot name a path).
        """
        if not is_session_id(session_id):
            raise ValueError(f"not a session id: {session_id!r}")
        return self.directory / f"{session_id}{_SUFFIX}"

    def journal_path(self, session_id: str) -> Path:
        """Return the journal path of a session (see :meth:`path_for` for what is refused)."""
        return self.path_for(session_id).with_suffix(checkpoint_journal.SUFFIX)

    async def write(self, snapshot: SnapshotSource, *, compact: bool = False) -> Path:
        """Write a snapshot durably (made in the writing thread if ``snapshot`` is a function);
        return the path of its base file.

        What changed since this writer's last write of the session is appended to its journal;
        the base is rewritten (atomically) when that cannot be or should not be (see the
        module docstring), and always with ``compact``.

        Raises:
            CheckpointError: the files could not be written (directory missing or read-only,
                disk full, I/O error). The previous checkpoint, if any, is what they read.
        """
        return await asyncio.to_thread(self._write_made, snapshot, compact)

    def _write_made(self, source: SnapshotSource, compact: bool) -> Path:
        snapshot = source() if callable(source) else source
        path = self.path_for(snapshot.session_id)
        try:
            self._write(path, snapshot, compact)
        except OSError as exc:
            raise CheckpointError(
                f"cannot write checkpoint {path.name}: {exc.strerror or exc}"
            ) from exc
        return path

    def _write(self, path: Path, snapshot: ConversationCheckpointSnapshot, compact: bool) -> None:
        document = snapshot.model_dump(mode="json")
        # Taken out while writing: after a failure the next write rewrites the base.
        last = self._forget(snapshot.session_id)
        if last is None or compact or not self._append(path, last, document):
            data = dump_json(document, indent=True)
            base = self._write_atomic(path, data)
            # A journal left behind (a crash, or this failing) names the old base: left out.
            with contextlib.suppress(OSError):
                os.unlink(path.with_suffix(checkpoint_journal.SUFFIX))
            last = _Written(document, checkpoint_journal.base_digest(data), base, len(data))
        with self._lock:
            self._written[snapshot.session_id] = last
            if len(self._written) > _REMEMBERED:
                self._written.popitem(last=False)

    def _forget(self, session_id: str) -> _Written | None:
        with self._lock:
            return self._written.pop(session_id, None)

    def _append(self, path: Path, last: _Written, document: dict[str, Any]) -> bool:
        """Append what changed since ``last`` to the journal; ``False``: rewrite the base."""
        if last.lines >= JOURNAL_LINES or (last.journal and last.journal[1] >= last.base_size):
            return False
        delta = checkpoint_journal.change(last.document, document)
        if delta is None or _identity(os.stat(path)) != last.base:
            return False
        data = checkpoint_journal.line(delta)
        flags = os.O_WRONLY | os.O_APPEND
        if last.journal is None:
            data = checkpoint_journal.header(last.digest) + data
            flags |= os.O_CREAT | os.O_EXCL
        try:
            fd = os.open(path.with_suffix(checkpoint_journal.SUFFIX), flags, _PRIVATE_FILE)
        except (FileExistsError, FileNotFoundError):  # not as this writer left it
            return False
        try:
            stat = os.fstat(fd)
            if last.journal is not None and (stat.st_ino, stat.st_size) != last.journal:
                return False
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if self.fsync:
                    os.fdatasync(fd)
            except BaseException:
                # A failed write leaves the journal as it was (the checkpoint before this one).
                with contextlib.suppress(OSError):
                    if last.journal is None:
                        os.unlink(path.with_suffix(checkpoint_journal.SUFFIX))
                    else:
                        os.ftruncate(fd, stat.st_size)
                raise
        finally:
            os.close(fd)
        if last.journal is None and self.fsync:
            self._fsync_directory()  # the new journal's name
        last.document, last.journal = document, (stat.st_ino, stat.st_size + len(data))
        last.lines += 1
        return True

    def _write_atomic(self, path: Path, data: bytes) -> tuple[int, int, int]:
        """Replace ``path`` with ``data`` atomically; return the new file's identity."""
        prefix = _TEMP_PREFIX + path.stem + "."
        try:
            fd, temp_name = tempfile.mkstemp(prefix=prefix, dir=self.directory)
        except FileNotFoundError:  # the directory's first file, or it was removed
            self.make_private()
            fd, temp_name = tempfile.mkstemp(prefix=prefix, dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
                identity = _identity(os.fstat(handle.fileno()))
            os.replace(temp_name, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
            raise
        if self.fsync:
            self._fsync_directory()
        return identity

    def _fsync_directory(self) -> None:
        # The rename is durable only once the directory entry is on disk.
        dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    async def load(self, session_id: str) -> ConversationCheckpointSnapshot | None:
        """Read and validate a session's checkpoint; ``None`` if there is none.

        Raises:
            CheckpointCorrupt: the base file is empty, truncated, not JSON, of an unknown
                schema version (one newer than this program's is said to be), or for another
                session; or a line of its journal before the last is garbled.
            CheckpointError: the files exist but cannot be read.
        """
        path = self.path_for(session_id)
        try:
            data, journal = await asyncio.to_thread(self._read, path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CheckpointError(
                f"cannot read checkpoint {path.name}: {exc.strerror or exc}"
            ) from exc
        return self.parse(data, session_id=session_id, name=path.name, journal=journal)

    @staticmethod
    def _read(path: Path) -> tuple[bytes, bytes]:
        """Return a base file's bytes and its journal's (``b""``: none), the base first."""
        data = path.read_bytes()
        try:
            return data, path.with_suffix(checkpoint_journal.SUFFIX).read_bytes()
        except FileNotFoundError:
            return data, b""

    @staticmethod
    def parse(
        data: bytes,
        *,
        session_id: str | None = None,
        name: str = "checkpoint",
        journal: bytes = b"",
    ) -> ConversationCheckpointSnapshot:
        """Validate checkpoint bytes (a base and its journal) into a snapshot; a version 1 file
        is migrated.

        Raises:
            CheckpointCorrupt: as for :meth:`load`.
        """
        document = _current(checkpoint_journal.compose(data, journal, name), name)
        try:
            snapshot = ConversationCheckpointSnapshot.model_validate(document)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "file"
            raise CheckpointCorrupt(
                f"{name} is not a valid snapshot ({where}: {first['msg']})"
            ) from exc
        if session_id is not None and snapshot.session_id != session_id:
            raise CheckpointCorrupt(f"{name} holds session {snapshot.session_id}")
        return snapshot

    async def delete(self, session_id: str) -> bool:
        """Delete a session's checkpoint (its journal first); return whether there was one."""
        path = self.path_for(session_id)
        self._forget(session_id)
        try:
            await asyncio.to_thread(self._unlink, path)
        except FileNotFoundError:
            return False
        if self.fsync:
            await asyncio.to_thread(self._fsync_directory)
        return True

    @staticmethod
    def _unlink(path: Path) -> None:
        # The journal first: a crash in between leaves a base, never a journal alone.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path.with_suffix(checkpoint_journal.SUFFIX))
        os.unlink(path)

    async def session_ids(self) -> list[str]:
        """Return the ids of every session that has a checkpoint file, sorted."""
        return await asyncio.to_thread(self._session_ids)

    def _session_ids(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(
            path.stem for path in self.directory.glob(f"*{_SUFFIX}") if is_session_id(path.stem)
        )

    def make_private(self) -> None:
        """Create the directory readable by its owner only (``0700``), or make it so.

        Checkpoints hold conversations: no other local user may list or read them (the files
        themselves are ``0600``, as :func:`tempfile.mkstemp` makes them).

        Raises:
            OSError: the directory cannot be created or changed.
        """
        self.directory.mkdir(mode=_PRIVATE_DIRECTORY, parents=True, exist_ok=True)
        if self.directory.stat().st_mode & 0o777 != _PRIVATE_DIRECTORY:
            self.directory.chmod(_PRIVATE_DIRECTORY)

    def remove_temp_files(self) -> int:
        """Delete what writes a crash interrupted left behind (temporary files, and journals
        whose base is gone, from a delete cut short); return how many."""
        if not self.directory.is_dir():
            return 0
        removed = 0
        # scandir and a prefix test: a glob matches a pattern against every name, which over
        # 100,000 files held the start for 0.3 s (bench/start_time.py).
        with os.scandir(self.directory) as entries:
            names = {entry.name for entry in entries}
        for name in names:
            stem, suffix = os.path.splitext(name)
            if name.startswith(_TEMP_PREFIX) or (
                suffix == checkpoint_journal.SUFFIX and stem + _SUFFIX not in names
            ):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.directory / name)
                    removed += 1
        if removed:
            logger.info("removed %d unfinished checkpoint temp files", removed)
        return removed


def _current(document: dict[str, Any], name: str) -> dict[str, Any]:
    """Return a checkpoint document in the current format, migrating an older one.

    Raises:
        CheckpointCorrupt: the version is unknown: newer than this program's, or not one.
    """
    version = document.get("schema_version")
    if version == CHECKPOINT_SCHEMA_VERSION:
        return document
    if version == 1:
        return _from_v1(document, name)
    if type(version) is int and version > CHECKPOINT_SCHEMA_VERSION:
        raise CheckpointCorrupt(
            f"{name} has schema version {version}, newer than this program reads "
            f"({CHECKPOINT_SCHEMA_VERSION}): written by a newer version of the bot"
        )
    raise CheckpointCorrupt(
        f"{name} has schema version {version!r}, expected {CHECKPOINT_SCHEMA_VERSION}"
    )


def _from_v1(document: dict[str, Any], name: str) -> dict[str, Any]:
    """Migrate a version 1 document, which said things twice, to version 2.

    Version 1 wrote ``turn_count`` beside ``state.turn_count`` (always equal), and
    ``summary_delta`` beside ``state.last_summary_delta``: equal to it, but at a clean
    shutdown the pending delta of the turns not yet folded, which version 2 keeps as
    ``pending_summary_delta``. Its recent turns carried their delivery as it stood when the
    file was written (before the reply was sent), which version 2 leaves to the database.

    Raises:
        CheckpointCorrupt: the two turn counts differ (the file was edited by hand).
    """
    migrated = {**document, "schema_version": 2}
    state = migrated.get("state")
    state = state if isinstance(state, dict) else {}
    turn_count = migrated.pop("turn_count", None)
    if turn_count != state.get("turn_count", 0):
        raise CheckpointCorrupt(
            f"{name} says turn {turn_count!r} beside a state at turn {state.get('turn_count', 0)!r}"
        )
    delta = migrated.pop("summary_delta", "")
    migrated["pending_summary_delta"] = (
        "" if delta == state.get("last_summary_delta", "") else delta
    )
    turns = migrated.get("recent_turns")
    if isinstance(turns, list):
        migrated["recent_turns"] = [
            {key: value for key, value in turn.items() if key not in _V1_DELIVERY_FIELDS}
            if isinstance(turn, dict)
            else turn
            for turn in turns
        ]
    return migrated
