"""Checkpoints as PostgreSQL rows (agent/memory/storage/checkpoint_rows.py), with and without a
mirror directory, against a real server."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("psycopg", reason="postgres: the `postgres` extra is not installed")

from agent.db.postgres import PostgresDatabase
from agent.errors import CheckpointCorrupt
from agent.memory import CheckpointWriter
from agent.memory.schemas import ConversationCheckpointSnapshot, SessionState
from agent.memory.storage.checkpoint_rows import DatabaseCheckpoints
from agent.memory.storage.postgres_session_table import PostgresSessionTable

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SID = "ses_" + "a" * 32


def snapshot(turns: int, sid: str = SID) -> ConversationCheckpointSnapshot:
    return ConversationCheckpointSnapshot(
        session_id=sid,
        chat_id=7,
        state=SessionState(session_id=sid, turn_count=turns, rolling_summary=f"after {turns}"),
        written_at=T0,
    )


async def open_session(db: PostgresDatabase, sid: str = SID) -> None:
    await db.write(
        lambda tx: PostgresSessionTable().create_session(
            tx, session_id=sid, chat_id=7, chat_type="private", user_id=7, title=None, now=T0
        )
    )


async def test_a_row_reads_back_the_latest_snapshot_and_goes_with_its_session(postgres_url):
    """write then load gives the last snapshot; deleting the session deletes its row; a
    session the database does not have gets none."""
    async with PostgresDatabase(postgres_url) as db:
        rows = DatabaseCheckpoints(db)
        await open_session(db)
        assert await rows.load(SID) is None
        await rows.write(snapshot(1))
        await rows.write(snapshot(2))
        loaded = await rows.load(SID)
        assert loaded is not None
        assert (loaded.turn_count, loaded.state.rolling_summary) == (2, "after 2")
        assert await rows.session_ids() == [SID]
        assert (rows.directory, rows.path_for(SID)) == (None, None)
        await db.write(lambda tx: PostgresSessionTable().delete_session(tx, SID))
        assert await rows.session_ids() == []
        ghost = "ses_" + "b" * 32
        await rows.write(snapshot(1, ghost))  # erased meanwhile: no row, no error
        assert await rows.load(ghost) is None


async def test_a_mirror_directory_gets_the_same_snapshot_as_a_file(postgres_url, tmp_path: Path):
    """With a directory, each write is also written to the files (a base, then a journal line;
    the base alone when compact) that the file reader parses to the same snapshot; delete
    removes the row and every file."""
    files = CheckpointWriter(tmp_path / "checkpoints")
    async with PostgresDatabase(postgres_url) as db:
        mirrored = DatabaseCheckpoints(db, files)
        await open_session(db)
        await mirrored.write(snapshot(3))
        assert mirrored.path_for(SID) == tmp_path / "checkpoints" / f"{SID}.json"
        assert await files.load(SID) == await mirrored.load(SID)
        await mirrored.write(snapshot(4))  # the file's base and a journal line
        assert files.journal_path(SID).exists()
        assert await files.load(SID) == await mirrored.load(SID) == snapshot(4)
        await mirrored.write(snapshot(4), compact=True)
        assert not files.journal_path(SID).exists()
        assert await files.load(SID) == snapshot(4)
        await mirrored.write(snapshot(5))
        assert await mirrored.delete(SID)
        assert list(files.directory.iterdir()) == []  # the base and its journal
        assert (await files.load(SID), await mirrored.load(SID)) == (None, None)
        assert not await mirrored.delete(SID)


async def test_a_row_of_another_session_is_refused_as_corrupt(postgres_url):
    """A row whose snapshot names another session is reported as corrupt, as a file is."""
    async with PostgresDatabase(postgres_url) as db:
        rows = DatabaseCheckpoints(db)
        await open_session(db)
        await rows.write(snapshot(1))
        await db.write(
            lambda tx: tx.execute(
                "UPDATE session_checkpoints SET snapshot = jsonb_set(snapshot, '{session_id}',"
                " to_jsonb(?::text))",
                ("ses_" + "c" * 32,),
            )
        )
        with pytest.raises(CheckpointCorrupt, match="holds session"):
            await rows.load(SID)


async def test_an_older_snapshot_does_not_replace_a_newer_row_but_repairs_one_ahead(postgres_url):
    """A worker whose held session is behind (another served the chat since) writes an older
    snapshot: the newer row stays. A row ahead of the session's log is replaced."""
    async with PostgresDatabase(postgres_url) as db:
        rows = DatabaseCheckpoints(db)
        await open_session(db)
        await db.write(
            lambda tx: tx.execute(
                "UPDATE conversation_sessions SET turn_count = 3 WHERE session_id = ?", (SID,)
            )
        )
        await rows.write(snapshot(3))
        await rows.write(snapshot(2))
        loaded = await rows.load(SID)
        assert loaded is not None
        assert loaded.turn_count == 3
        await rows.write(snapshot(5))  # ahead of the log: no writer does it, a test can
        await rows.write(snapshot(3))
        loaded = await rows.load(SID)
        assert loaded is not None
        assert loaded.turn_count == 3
