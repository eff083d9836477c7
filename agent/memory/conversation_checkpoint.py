"""Per-session JSON checkpoint files, written atomically (invariant I5).

One ``<session_id>.json`` per session, indented and with sorted keys so that a person can read
and diff it. A write goes to a temporary file in the same directory, is flushed and fsynced,
replaces the old file with ``os.replace`` and finally fsyncs the directory, so a reader (or a
crash) sees the old file or the new one, never a torn one. File names come from session ids
we generated (:func:`agent.utils.ids.is_session_id`: a prefix and hex digits), never from user
text, so a path cannot leave the checkpoint directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

import orjson
from pydantic import ValidationError

from agent.errors import CheckpointCorrupt, CheckpointError
from agent.memory.schemas import (
    CHECKPOINT_SCHEMA_VERSION,
    ConversationCheckpointSnapshot,
    dump_json,
)
from agent.utils.ids import is_session_id

__all__ = ["CheckpointStore", "CheckpointWriter"]

logger = logging.getLogger(__name__)

_SUFFIX = ".json"
_TEMP_PREFIX = ".tmp-"
# What version 1 wrote of a turn's delivery: the state at commit, before the reply was sent.
_V1_DELIVERY_FIELDS = ("status", "reply_message_id", "delivered_at")
# Conversations are private: the directory is its owner's alone (files are 0600 from mkstemp).
_PRIVATE_DIRECTORY = 0o700


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

    async def write(self, snapshot: ConversationCheckpointSnapshot) -> object:
        """Write a snapshot atomically and durably.

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


class CheckpointWriter:
    """Writes, reads and deletes the checkpoint files of one directory.

    Args:
        directory: where the ``<session_id>.json`` files live; created if missing.
        fsync: fsync file and directory on every write (durability ``full``); without it a
            write survives a crash of the process but not of the machine.
    """

    def __init__(self, directory: str | Path, *, fsync: bool = True) -> None:
        self._directory = Path(directory).resolve()
        self.fsync = fsync

    @property
    def directory(self) -> Path:
        """The directory of the checkpoint files."""
        return self._directory

    def path_for(self, session_id: str) -> Path:
        """Return the checkpoint path of a session.

        Raises:
            ValueError: ``session_id`` is not an id we generate (so it cannot name a path).
        """
        if not is_session_id(session_id):
            raise ValueError(f"not a session id: {session_id!r}")
        return self.directory / f"{session_id}{_SUFFIX}"

    async def write(self, snapshot: ConversationCheckpointSnapshot) -> Path:
        """Write a snapshot atomically and durably; return its path.

        Raises:
            CheckpointError: the file could not be written (directory missing or read-only,
                disk full, I/O error). The previous checkpoint, if any, is left intact.
        """
        path = self.path_for(snapshot.session_id)
        data = dump_json(snapshot, indent=True)
        try:
            await asyncio.to_thread(self._write_atomic, path, data)
        except OSError as exc:
            raise CheckpointError(
                f"cannot write checkpoint {path.name}: {exc.strerror or exc}"
            ) from exc
        return path

    def _write_atomic(self, path: Path, data: bytes) -> None:
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
            os.replace(temp_name, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
            raise
        if self.fsync:
            self._fsync_directory()

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
            CheckpointCorrupt: the file is empty, truncated, not JSON, of an unknown schema
                version (one newer than this program's is said to be), or for another
                session.
            CheckpointError: the file exists but cannot be read.
        """
        path = self.path_for(session_id)
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CheckpointError(
                f"cannot read checkpoint {path.name}: {exc.strerror or exc}"
            ) from exc
        return self.parse(data, session_id=session_id, name=path.name)

    @staticmethod
    def parse(
        data: bytes, *, session_id: str | None = None, name: str = "checkpoint"
    ) -> ConversationCheckpointSnapshot:
        """Validate checkpoint bytes into a snapshot; a version 1 file is migrated.

        Raises:
            CheckpointCorrupt: as for :meth:`load`.
        """
        if not data.strip():
            raise CheckpointCorrupt(f"{name} is empty")
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise CheckpointCorrupt(f"{name} is not valid JSON (truncated or garbled)") from exc
        if not isinstance(document, dict):
            raise CheckpointCorrupt(f"{name} is not a snapshot (not a JSON object)")
        document = _current(document, name)
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
        """Delete a session's checkpoint; return whether there was one."""
        path = self.path_for(session_id)
        try:
            await asyncio.to_thread(path.unlink)
        except FileNotFoundError:
            return False
        if self.fsync:
            await asyncio.to_thread(self._fsync_directory)
        return True

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
        """Delete temporary files left by writes a crash interrupted; return how many."""
        if not self.directory.is_dir():
            return 0
        removed = 0
        # scandir and a prefix test: a glob matches a pattern against every name, which over
        # 100,000 files held the start for 0.3 s (bench/start_time.py).
        with os.scandir(self.directory) as entries:
            temps = [entry.path for entry in entries if entry.name.startswith(_TEMP_PREFIX)]
        for path in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
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
