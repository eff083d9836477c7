"""The start-time benchmark on PostgreSQL: :class:`PostgresBackend` for ``bench/start_time.py``.

``python -m bench.start_time --backend postgres`` (the server of ``AGENT_TEST_POSTGRES_URL``)
runs the same scenarios as on SQLite with the bot's ``AGENT_DATABASE_URL`` set to a fresh schema
of that server (:func:`bench.postgres_schema.fresh_schema`, one per size, dropped after it). The
fill copies the template session's rows ``N`` times with ``COPY`` in one transaction per
``_FILL_BATCH`` sessions: sessions and their state parts, turns, summaries (the generated
search columns and the statement triggers of their totals run as for any insert), each turn's
row of the turn index (``conversation_turn_search``, the words :func:`turn_index_row` gives the
template's turn; the index's totals trigger runs per row) and each session's checkpoint as a
``session_checkpoints`` row, the place a PostgreSQL bot reads checkpoints from (the stale
share's row is one turn behind, as the SQLite fill's file is). The bot runs as PostgreSQL's
default is: checkpoints as rows only (``AGENT_CHECKPOINT_DIR`` unset, so no file mirror and no
fsync per checkpoint). The settings take a URL only: the schema is the ``options`` parameter
of the server's URL. Tested in ``tests/test_start_time_postgres.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from agent.memory.storage.postgres_turn_search import turn_index_row
from agent.utils.timestamps import to_db_time
from bench.postgres_schema import fresh_schema
from bench.start_time import _FILL_BATCH, Template, _Copier, session_id_of

__all__ = ["PostgresBackend"]


class PostgresBackend:
    """Sessions in a fresh schema of the server at ``url``; the bot's ``AGENT_DATABASE_URL``."""

    name = "postgres"

    def __init__(self, url: str) -> None:
        self._url = url
        self._schemas: dict[Path, tuple[contextlib.ExitStack, str]] = {}

    def _conninfo(self, home: Path) -> str:
        return self._schemas[home][1]

    def fill(self, home: Path, template: Template, sessions: int) -> None:
        """Create the schema of ``home``, migrate it (the bot's own migrations), copy rows in."""
        import psycopg  # the `postgres` extra

        stack = contextlib.ExitStack()
        conninfo = stack.enter_context(fresh_schema(self._url, f"start_{home.name}"))
        self._schemas[home] = (stack, conninfo)
        asyncio.run(_migrate_postgres(conninfo))
        copier = _Copier(template, sessions)
        current, behind = (
            orjson.loads(d)["state"]["turn_count"] for d in (template.checkpoint, template.behind)
        )
        index = [
            turn_index_row(
                template.session_id, t["speaker"], t["user_text"], t["assistant_text"], t["intent"]
            )
            for t in template.turns
        ]
        with psycopg.connect(conninfo) as conn:
            columns = _columns(conn)
            for first in range(0, sessions, _FILL_BATCH):
                batch = range(first, min(first + _FILL_BATCH, sessions))
                _copy(conn, columns, "conversation_sessions", [copier.session(i) for i in batch])
                parts = [row for i in batch for row in copier.parts(i)]
                _copy(conn, columns, "conversation_session_parts", parts)
                turns = [row for i in batch for row in copier.turns(i)]
                _copy(conn, columns, "conversation_turns", turns)
                summaries = [row for i in batch for row in copier.summaries(i)]
                _copy(conn, columns, "conversation_summaries", summaries)
                search = [
                    {"session_id": t["session_id"], "seq": t["seq"], "words": w, "length": n}
                    for t, (w, n) in zip(turns, index * len(batch), strict=True)
                ]
                _copy(conn, columns, "conversation_turn_search", search)
                checkpoints = [
                    {
                        "session_id": session_id_of(i),
                        "turn_count": behind if i % copier.stale_every == 1 else current,
                        "snapshot": copier.checkpoint(i).decode(),
                        "written_at": to_db_time(copier.epoch),
                    }
                    for i in batch
                ]
                _copy(conn, columns, "session_checkpoints", checkpoints)
                conn.commit()
            # COPY gave the identity column its values: the next summary's id goes on after them.
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('conversation_summaries', 'summary_id'),"
                " (SELECT max(summary_id) FROM conversation_summaries))"
            )
            conn.commit()
            conn.execute("ANALYZE")
            conn.commit()

    def forget_records(self, home: Path) -> None:
        """Make every record unknown, as migration 0015 leaves a database."""
        import psycopg

        with psycopg.connect(self._conninfo(home), autocommit=True) as conn:
            conn.execute("UPDATE conversation_sessions SET checkpoint_seq = NULL")

    def env(self, home: Path) -> dict[str, str | None]:
        """The bot's database: the schema of ``home``; checkpoints as rows only."""
        options = psycopg_conninfo().conninfo_to_dict(self._conninfo(home))["options"]
        url = f"{self._url}?options={quote(str(options))}"
        return {"AGENT_DATABASE_URL": url, "AGENT_CHECKPOINT_DIR": None}

    def drop(self, home: Path) -> None:
        """Drop the schema of ``home``."""
        stack, _ = self._schemas.pop(home)
        stack.close()


def psycopg_conninfo() -> Any:
    """``psycopg.conninfo`` (the `postgres` extra, imported when a server is used)."""
    import psycopg

    return psycopg.conninfo


async def _migrate_postgres(conninfo: str) -> None:
    import psycopg

    from agent.db.postgres import migrate_postgres

    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        await migrate_postgres(conn)


def _columns(conn: Any) -> dict[str, set[str]]:
    """The columns of each table a fill may write (not the generated ones)."""
    rows = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND is_generated = 'NEVER'"
    ).fetchall()
    out: dict[str, set[str]] = {}
    for table, column in rows:
        out.setdefault(table, set()).add(column)
    return out


def _copy(conn: Any, columns: dict[str, set[str]], table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    names = [name for name in rows[0] if name in columns[table]]
    with conn.cursor().copy(
        f"COPY {table} ({', '.join(names)}) FROM STDIN"  # the schema's own names
    ) as copy:
        for row in rows:
            # SQLite hands JSON columns written from bytes back as bytes: here they are text.
            copy.write_row(tuple(_text(row[name]) for name in names))


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value
