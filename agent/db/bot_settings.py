"""Settings the bot records in its database for the tools that work on its data.

The bot knows where its files are (its settings, resolved in its working directory); a tool
run from elsewhere does not. :func:`record_setting` stores a value at each start (the
checkpoint directory's absolute path, :data:`CHECKPOINT_DIR`) and :func:`recorded_setting`
reads it back; ``agent-memory`` takes it as its default. The table is ``bot_settings``
(``schema.sql`` 0017, ``schema_postgres.sql`` 0008): one row per name, on both backends.

Covered by ``tests/test_bot_settings.py`` (both backends) and ``tests/test_cli.py`` (the real
bot records, the real CLI reads).
"""

from __future__ import annotations

from datetime import UTC, datetime

from agent.db.transaction import AnyDatabase, Transaction

__all__ = ["CHECKPOINT_DIR", "record_setting", "recorded_setting"]

#: The absolute path of the bot's checkpoint directory (absent: checkpoints are rows only).
CHECKPOINT_DIR = "checkpoint_dir"


async def record_setting(db: AnyDatabase, name: str, value: str | None) -> None:
    """Record ``value`` under ``name`` (``None``: forget it), in one write transaction.

    Raises:
        StorageError: the database refused the write.
    """
    now = datetime.now(UTC).isoformat()

    async def work(tx: Transaction) -> None:
        if value is None:
            await tx.execute("DELETE FROM bot_settings WHERE name = ?", (name,))
            return
        await tx.execute(
            "INSERT INTO bot_settings (name, value, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at",
            (name, value, now),
        )

    await db.write(work)


async def recorded_setting(db: AnyDatabase, name: str) -> str | None:
    """Return the value recorded under ``name``, or ``None``."""
    row = await db.fetchone("SELECT value FROM bot_settings WHERE name = ?", (name,))
    return None if row is None else str(row["value"])
