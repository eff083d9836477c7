"""Checkpoints as database rows: every worker and the CLI read the same one (PostgreSQL).

With several bot processes (issue 18) a checkpoint file on one host is behind as soon as another
host's worker serves the chat. :class:`DatabaseCheckpoints` keeps each session's snapshot as a
row of ``session_checkpoints`` (``agent/db/schema_postgres.sql``: ``JSONB``, deleted with its
session), written in a transaction of its own after the turn's commit, as a file is (side
effects after COMMIT; I5: the turn log stays the source of truth, a row behind it is rebuilt
before its session serves a turn). Where a checkpoint directory is set, each write is also
mirrored into files there by a :class:`CheckpointWriter` (a base and its journal; a shared
volume, or per host for people who read files); reads come from the row.

Writes of one session come from the worker holding its chat (the lane writes a checkpoint
under the chat's lock), so the last write is the latest state; a worker whose held session is
behind (a shutdown's or a heal's rewrite) does not replace a newer row. Tested in
``tests/test_checkpoint_rows.py``.
"""

from __future__ import annotations

from pathlib import Path

from agent.db import AnyDatabase, Transaction
from agent.errors import CheckpointError, StorageError
from agent.memory.conversation_checkpoint import CheckpointWriter, SnapshotSource
from agent.memory.schemas import ConversationCheckpointSnapshot, dump_json
from agent.utils.ids import is_session_id
from agent.utils.timestamps import to_db_time

__all__ = ["DatabaseCheckpoints"]


class DatabaseCheckpoints:
    """A :class:`~agent.memory.conversation_checkpoint.CheckpointStore` of database rows.

    Args:
        db: the open database holding ``session_checkpoints``.
        files: where to mirror each checkpoint as a file (``None``: rows only).
    """

    def __init__(self, db: AnyDatabase, files: CheckpointWriter | None = None) -> None:
        self._db = db
        self._files = files

    @property
    def directory(self) -> Path | None:
        """The directory of the mirrored files (``None``: rows only)."""
        return None if self._files is None else self._files.directory

    def path_for(self, session_id: str) -> Path | None:
        """Return the mirrored file of a session (``None``: rows only)."""
        return None if self._files is None else self._files.path_for(session_id)

    async def write(self, snapshot: SnapshotSource, *, compact: bool = False) -> None:
        """Store the snapshot (or the one ``snapshot()`` makes) as its session's row (and
        file, if mirrored; ``compact``: the file in one piece, see
        :meth:`CheckpointWriter.write`).

        A session the database no longer has (erased meanwhile) gets no row.

        Raises:
            CheckpointError: the row or the file could not be written; the previous one is
                left intact.
        """
        if callable(snapshot):
            snapshot = snapshot()
        if not is_session_id(snapshot.session_id):
            raise ValueError(f"not a session id: {snapshot.session_id!r}")
        data = dump_json(snapshot)

        async def upsert(tx: Transaction) -> int:
            return await tx.execute(
                "INSERT INTO session_checkpoints (session_id, turn_count, snapshot, written_at)"
                " SELECT ?, ?, ?::jsonb, ? WHERE EXISTS"
                " (SELECT 1 FROM conversation_sessions WHERE session_id = ?)"
                " ON CONFLICT (session_id) DO UPDATE SET turn_count = excluded.turn_count,"
                " snapshot = excluded.snapshot, written_at = excluded.written_at"
                # A process whose held session is behind (another worker served the chat
                # since) does not put its older snapshot over the newer one; a row ahead of
                # the log (I5 broken) is replaced by the repair.
                " WHERE session_checkpoints.turn_count <= excluded.turn_count"
                " OR session_checkpoints.turn_count > (SELECT turn_count FROM"
                " conversation_sessions WHERE session_id = excluded.session_id)",
                (
                    snapshot.session_id,
                    snapshot.turn_count,
                    data,
                    to_db_time(snapshot.written_at),
                    snapshot.session_id,
                ),
            )

        try:
            await self._db.write(upsert)
        except StorageError as exc:
            raise CheckpointError(
                f"cannot write the checkpoint of {snapshot.session_id}: {exc}"
            ) from exc
        if self._files is not None:
            await self._files.write(snapshot, compact=compact)

    async def load(self, session_id: str) -> ConversationCheckpointSnapshot | None:
        """Read and validate a session's checkpoint row; ``None`` if there is none.

        Raises:
            CheckpointCorrupt: the row is not a valid snapshot of this session.
            CheckpointError: the database cannot be read.
        """
        try:
            row = await self._db.fetchone(
                "SELECT snapshot::text AS snapshot FROM session_checkpoints WHERE session_id = ?",
                (session_id,),
            )
        except StorageError as exc:
            raise CheckpointError(f"cannot read the checkpoint of {session_id}: {exc}") from exc
        if row is None:
            return None
        return CheckpointWriter.parse(
            row["snapshot"].encode(), session_id=session_id, name=f"checkpoint row {session_id}"
        )

    async def delete(self, session_id: str) -> bool:
        """Delete a session's row (and file); return whether there was either."""
        deleted = await self._db.write(
            lambda tx: tx.execute(
                "DELETE FROM session_checkpoints WHERE session_id = ?", (session_id,)
            )
        )
        had_file = self._files is not None and await self._files.delete(session_id)
        return bool(deleted) or had_file

    async def session_ids(self) -> list[str]:
        """Return the ids of every session with a checkpoint row or file, sorted."""
        rows = await self._db.fetchall(
            "SELECT session_id FROM session_checkpoints ORDER BY session_id"
        )
        ids = {row["session_id"] for row in rows}
        if self._files is not None:
            ids.update(await self._files.session_ids())
        return sorted(ids)

    def make_private(self) -> None:
        """Make the mirror's directory its owner's alone (rows need nothing)."""
        if self._files is not None:
            self._files.make_private()

    def remove_temp_files(self) -> int:
        """Delete the mirror's unfinished temporary files; return how many."""
        return 0 if self._files is None else self._files.remove_temp_files()
