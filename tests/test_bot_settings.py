"""Tests of agent/db/bot_settings.py and ``record_locations`` (agent/app/wiring.py): the bot
records where its checkpoint files are, on both backends, for ``agent-memory``."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.app.wiring import open_database, record_locations
from agent.config import Settings
from agent.db.bot_settings import CHECKPOINT_DIR, recorded_setting
from tests.lane_crash_worker import database_url as url_of


def _settings(tmp_path: Path, url: str | None, **paths: Path) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        db_path=tmp_path / "memory.db",
        database_url=url,
        durability="process",
        **paths,
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """``None`` (the SQLite file) or a fresh PostgreSQL schema."""
    return None if request.param == "sqlite" else url_of(request.getfixturevalue("postgres_url"))


async def test_the_bot_records_its_checkpoint_directory_as_an_absolute_path(
    tmp_path, monkeypatch, database_url
):
    """A start records the checkpoint directory resolved against the bot's working directory
    (a relative AGENT_CHECKPOINT_DIR names the same place from anywhere); a start with the
    same directory writes nothing; another directory replaces it."""
    monkeypatch.chdir(tmp_path)
    settings = _settings(tmp_path, database_url, checkpoint_dir=Path("checkpoints"))
    db = await open_database(settings)
    try:
        assert await recorded_setting(db, CHECKPOINT_DIR) is None
        await record_locations(settings, db)
        assert await recorded_setting(db, CHECKPOINT_DIR) == str(tmp_path / "checkpoints")
        stamps = [tuple(row) for row in await db.fetchall("SELECT updated_at FROM bot_settings")]
        await record_locations(settings, db)
        assert [tuple(row) for row in await db.fetchall("SELECT updated_at FROM bot_settings")] == (
            stamps
        )
        moved = _settings(tmp_path, database_url, checkpoint_dir=tmp_path / "elsewhere")
        await record_locations(moved, db)
        assert await recorded_setting(db, CHECKPOINT_DIR) == str(tmp_path / "elsewhere")
    finally:
        await db.close()


@pytest.mark.postgres
async def test_rows_only_on_postgresql_record_no_directory(tmp_path, postgres_url):
    """On PostgreSQL without AGENT_CHECKPOINT_DIR checkpoints are rows only: no directory is
    recorded, and one recorded before is forgotten."""
    url = url_of(postgres_url)
    with_files = _settings(tmp_path, url, checkpoint_dir=tmp_path / "mirror")
    rows_only = _settings(tmp_path, url)
    db = await open_database(rows_only)
    try:
        await record_locations(with_files, db)
        assert await recorded_setting(db, CHECKPOINT_DIR) == str(tmp_path / "mirror")
        await record_locations(rows_only, db)
        assert await recorded_setting(db, CHECKPOINT_DIR) is None
    finally:
        await db.close()
