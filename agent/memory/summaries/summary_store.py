"""The summary version chain: SQL in, :class:`~agent.memory.schemas.SummaryVersion` out.

Table ``conversation_summaries`` (``schema.sql``, migration 0005), after seed 004's ``memory``
table. Each row is one version of a session's rolling summary:

* ``extractive`` rows are written by :func:`agent.memory.writer.write_summary_version` in the
  transaction of the turn whose fold made them, always ``completed``; version ``n`` is the
  session's ``n``-th fold, its ``text`` the state's ``rolling_summary`` after it (I6), its
  ``parent_summary_id`` the version ``n - 1`` it was built on;
* ``llm`` rows are the optional model summaries of an extractive version (same version and
  turn range, ``parent_summary_id`` = that version), run in the background by
  :class:`agent.memory.summaries.summary_worker.SummaryWorker`: ``processing``, then
  ``completed`` or ``failed``. A partial unique index allows one ``processing`` row per
  session, so two runs never overlap, not even from two processes.

Retention: each new extractive version deletes the versions (of both kinds) more than
``retention`` versions older, in the same transaction, so a session holds at most
``retention`` versions however long it runs (``0`` keeps every version). A kept row still names
its parent after the parent was pruned (``parent_summary_id`` is no foreign key, and ids are
never reused). Every row goes with its session (``ON DELETE CASCADE``: ``/forget``, prune).

Write methods take the :class:`~agent.db.Transaction` of :meth:`agent.db.Database.write` and
never commit; reads take any transaction (normally ``db.reader``), the search a
:class:`~agent.db.Snapshot`. Every query reads through an index. The contract is
``tests/test_store_conformance.py``, which
:class:`~agent.memory.summaries.postgres_summary_store.PostgresSummaryStore` passes too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from agent.db import Row, Snapshot, Transaction
from agent.db.search import scoped_searches
from agent.errors import StorageError
from agent.memory.schemas import SummarizerKind, SummaryStatus, SummaryVersion
from agent.memory.storage.id_lists import SqliteIdLists
from agent.utils.timestamps import from_db_time, to_db_time

__all__ = [
    "DEFAULT_SUMMARY_RETENTION",
    "SqliteSummaryStore",
    "SummaryHit",
    "SummaryStore",
]

#: Versions of a session's summary kept by default (the last 1,000 turns at one fold per 10).
DEFAULT_SUMMARY_RETENTION = 100


class SummaryHit(NamedTuple):
    """A summary delta found by a search (:meth:`SummaryStore.search`).

    Attributes:
        summary_id: the version's row.
        from_seq: the first turn it covers.
        to_seq: the last turn it covers.
        delta: what the fold added to the summary.
        bm25: the match's BM25 score (lower is better).
    """

    summary_id: int
    from_seq: int
    to_seq: int
    delta: str
    bm25: float


_COLUMNS = (
    "summary_id, session_id, version, from_seq, to_seq, parent_summary_id, summarizer, status,"
    " text, delta, error, generation_ms, created_at, completed_at"
)


class SummaryStore(Protocol):
    """**Protocol:** the storage of the summary version chain.

    Called by :func:`agent.memory.writer.write_summary_version` inside a turn's transaction,
    by :class:`agent.memory.summaries.summary_worker.SummaryWorker` for model summaries,
    and by the lane and tests to read the chain. ``tx`` is the open write transaction
    (:meth:`agent.db.Database.write`); ``conn`` the write transaction or the database's reader.
    Implementations never commit. ``search`` is synchronous, on a :class:`~agent.db.Snapshot`:
    the retriever runs it in the database's searcher thread (:meth:`agent.db.Database.read`).
    """

    def search(
        self, conn: Snapshot, session_id: str, queries: Sequence[str], limit: int
    ) -> list[list[SummaryHit]]:
        """Return, for each of ``queries``, at most ``limit`` of the session's completed
        extractive deltas that match it (BM25), in no particular order."""
        ...

    async def append_extractive(
        self,
        tx: Transaction,
        session_id: str,
        *,
        version: int,
        from_seq: int,
        to_seq: int,
        text: str,
        delta: str,
        now: datetime,
    ) -> SummaryVersion:
        """Add extractive version ``version`` on top of the previous one; apply retention."""
        ...

    async def revise_extractive(
        self, tx: Transaction, session_id: str, *, version: int, text: str, delta: str
    ) -> bool:
        """Give extractive version ``version`` the text and delta of a fold made again (a turn
        of its range or before was edited); drop the model summaries of that version."""
        ...

    async def latest(
        self,
        conn: Transaction,
        session_id: str,
        *,
        summarizer: SummarizerKind = "extractive",
        status: SummaryStatus | None = "completed",
    ) -> SummaryVersion | None:
        """Return the session's newest row of ``summarizer`` (with ``status``), or ``None``."""
        ...

    async def latest_llm(
        self, conn: Transaction, session_ids: Sequence[str]
    ) -> dict[str, SummaryVersion]:
        """Return the newest completed model summary of each of ``session_ids`` that has one."""
        ...

    async def get(self, conn: Transaction, summary_id: int) -> SummaryVersion | None:
        """Return one row of the chain, or ``None``."""
        ...

    async def history(
        self, conn: Transaction, session_id: str, *, limit: int | None = None
    ) -> list[SummaryVersion]:
        """Return the session's chain, oldest version first (newest ``limit`` versions)."""
        ...

    async def begin_llm(
        self, tx: Transaction, parent: SummaryVersion, *, now: datetime
    ) -> SummaryVersion | None:
        """Insert a ``processing`` model summary of ``parent``; ``None`` if one is running."""
        ...

    async def finish_llm(
        self,
        tx: Transaction,
        summary_id: int,
        *,
        status: SummaryStatus,
        text: str = "",
        error: str | None = None,
        generation_ms: int | None = None,
        now: datetime,
    ) -> bool:
        """Mark a ``processing`` row ``completed`` or ``failed``; ``False`` if it is not."""
        ...

    async def fail_processing(self, tx: Transaction, *, error: str, now: datetime) -> int:
        """Mark every ``processing`` row ``failed`` (runs a restart cut short)."""
        ...


def _row_to_summary(row: Row) -> SummaryVersion:
    return SummaryVersion(
        summary_id=row["summary_id"],
        session_id=row["session_id"],
        version=row["version"],
        from_seq=row["from_seq"],
        to_seq=row["to_seq"],
        parent_summary_id=row["parent_summary_id"],
        summarizer=row["summarizer"],
        status=row["status"],
        text=row["text"],
        delta=row["delta"],
        error=row["error"],
        generation_ms=row["generation_ms"],
        created_at=from_db_time(row["created_at"]),
        completed_at=from_db_time(row["completed_at"]),
    )


class SqliteSummaryStore(SqliteIdLists):
    """The :class:`SummaryStore` on SQLite (lists of ids as JSON:
    :class:`~agent.memory.storage.id_lists.SqliteIdLists`).

    Args:
        retention: versions kept per session (both kinds of the newest ``retention``
            versions); ``0`` keeps them all.

    Raises:
        ValueError: a negative retention.
    """

    def __init__(self, *, retention: int = DEFAULT_SUMMARY_RETENTION) -> None:
        if retention < 0:
            raise ValueError("retention must be 0 (keep every version) or more")
        self.retention = retention

    def search(
        self, conn: Snapshot, session_id: str, queries: Sequence[str], limit: int
    ) -> list[list[SummaryHit]]:
        """BM25 over the session's extractive summary deltas (migration 0006), for each query.

        Each query is reduced to quoted words (:func:`agent.db.search.scoped_searches`), so
        FTS5 syntax in it is never parsed. At most ``limit`` hits per query, in no particular
        order; all the queries in one statement.
        """
        found: list[list[SummaryHit]] = [[] for _ in queries]
        scope = session_id.replace('"', '""')
        sql, params = scoped_searches(
            "SELECT ?, s.summary_id, s.from_seq, s.to_seq, s.delta, hit.score FROM"
            " conversation_summaries AS s JOIN (SELECT rowid AS hit_rowid,"
            "   bm25(conversation_summaries_fts, 0.0, 1.0) AS score FROM conversation_summaries_fts"
            "   WHERE conversation_summaries_fts MATCH ? ORDER BY score, hit_rowid LIMIT ?) AS hit"
            " ON s.summary_id = hit.hit_rowid"
            " WHERE s.summarizer = 'extractive' AND s.status = 'completed'",
            f'session_id : "{scope}" AND delta',
            queries,
            limit,
        )
        if not sql:
            return found
        for row in conn.fetchall(sql, params):
            found[row[0]].append(SummaryHit(row[1], row[2], row[3], row[4], float(row[5])))
        return found

    async def append_extractive(
        self,
        tx: Transaction,
        session_id: str,
        *,
        version: int,
        from_seq: int,
        to_seq: int,
        text: str,
        delta: str,
        now: datetime,
    ) -> SummaryVersion:
        """Add extractive version ``version`` on top of the previous one; apply retention.

        Raises:
            StorageError: the version exists already, or the insert failed.
        """
        parent = await self.latest(tx, session_id)
        try:
            rows = await tx.fetchall(
                f"INSERT INTO conversation_summaries (session_id, version, from_seq, to_seq,"
                " parent_summary_id, summarizer, status, text, delta, created_at, completed_at)"
                " VALUES (?, ?, ?, ?, ?, 'extractive', 'completed', ?, ?, ?, ?)"
                f" RETURNING {_COLUMNS}",
                (
                    session_id,
                    version,
                    from_seq,
                    to_seq,
                    None if parent is None else parent.summary_id,
                    text,
                    delta,
                    to_db_time(now),
                    to_db_time(now),
                ),
            )
            if self.retention:
                await tx.execute(
                    "DELETE FROM conversation_summaries WHERE session_id = ? AND version <= ?",
                    (session_id, version - self.retention),
                )
        except sqlite3.Error as exc:
            raise StorageError(
                f"append_extractive failed for session {session_id} version {version}: {exc}"
            ) from exc
        return _row_to_summary(next(iter(rows)))

    async def revise_extractive(
        self, tx: Transaction, session_id: str, *, version: int, text: str, delta: str
    ) -> bool:
        """Give extractive version ``version`` the text and delta of a fold made again.

        An edited turn changes the fold of its own version and the rolling summary of every
        later one; the version numbers and turn ranges stay (folds come every ``n`` turns,
        whatever the text). The model summaries of the version summarised the old text: they
        are deleted, and the worker summarises the latest version again.

        Returns:
            Whether the version is still in the chain (retention may have pruned it).

        Raises:
            StorageError: the writes failed.
        """
        try:
            changed = await tx.execute(
                "UPDATE conversation_summaries SET text = ?, delta = ?"
                " WHERE session_id = ? AND version = ? AND summarizer = 'extractive'",
                (text, delta, session_id, version),
            )
            await tx.execute(
                "DELETE FROM conversation_summaries"
                " WHERE session_id = ? AND version = ? AND summarizer = 'llm'",
                (session_id, version),
            )
        except sqlite3.Error as exc:
            raise StorageError(
                f"revise_extractive failed for session {session_id} version {version}: {exc}"
            ) from exc
        return changed == 1

    async def latest(
        self,
        conn: Transaction,
        session_id: str,
        *,
        summarizer: SummarizerKind = "extractive",
        status: SummaryStatus | None = "completed",
    ) -> SummaryVersion | None:
        """Return the session's newest row of ``summarizer`` (with ``status``), or ``None``."""
        sql = (
            f"SELECT {_COLUMNS} FROM conversation_summaries WHERE session_id = ? AND summarizer = ?"
        )
        params: list[Any] = [session_id, summarizer]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        rows = await conn.fetchall(sql + " ORDER BY version DESC, summary_id DESC LIMIT 1", params)
        return next((_row_to_summary(row) for row in rows), None)

    async def latest_llm(
        self, conn: Transaction, session_ids: Sequence[str]
    ) -> dict[str, SummaryVersion]:
        """Return the newest completed model summary of each of ``session_ids`` that has one."""
        if not session_ids:
            return {}
        rows = await conn.fetchall(
            f"SELECT {_COLUMNS} FROM conversation_summaries AS summary"
            " WHERE summary.summary_id = (SELECT summary_id FROM conversation_summaries"
            "   WHERE session_id = summary.session_id AND summarizer = 'llm'"
            "   AND status = 'completed' ORDER BY version DESC, summary_id DESC LIMIT 1)"
            f" AND summary.session_id IN (SELECT s.value FROM {self.IDS_TABLE})",
            (self.ids_param(session_ids),),
        )
        return {row["session_id"]: _row_to_summary(row) for row in rows}

    async def get(self, conn: Transaction, summary_id: int) -> SummaryVersion | None:
        """Return one row of the chain, or ``None``."""
        rows = await conn.fetchall(
            f"SELECT {_COLUMNS} FROM conversation_summaries WHERE summary_id = ?", (summary_id,)
        )
        return next((_row_to_summary(row) for row in rows), None)

    async def history(
        self, conn: Transaction, session_id: str, *, limit: int | None = None
    ) -> list[SummaryVersion]:
        """Return the session's chain, oldest version first (the newest ``limit`` versions).

        Within a version the extractive row comes first, then its model summaries in order.
        """
        sql = f"SELECT {_COLUMNS} FROM conversation_summaries WHERE session_id = ?"
        params: list[Any] = [session_id]
        if limit is not None:
            sql += (
                " AND version > (SELECT COALESCE(MAX(version), 0) FROM conversation_summaries"
                " WHERE session_id = ?) - ?"
            )
            params += [session_id, limit]
        rows = await conn.fetchall(sql + " ORDER BY version, summary_id", params)
        return [_row_to_summary(row) for row in rows]

    async def begin_llm(
        self, tx: Transaction, parent: SummaryVersion, *, now: datetime
    ) -> SummaryVersion | None:
        """Insert a ``processing`` model summary of the extractive version ``parent``.

        Returns:
            The new row, or ``None`` if the session already has a summary in progress (the
            partial unique index ``conversation_summaries_processing`` is the guard).

        Raises:
            StorageError: the insert failed otherwise (e.g. the session was erased).
        """
        try:
            rows = await tx.fetchall(
                f"INSERT INTO conversation_summaries (session_id, version, from_seq, to_seq,"
                " parent_summary_id, summarizer, status, created_at)"
                " VALUES (?, ?, ?, ?, ?, 'llm', 'processing', ?)"
                f" ON CONFLICT DO NOTHING RETURNING {_COLUMNS}",
                (
                    parent.session_id,
                    parent.version,
                    parent.from_seq,
                    parent.to_seq,
                    parent.summary_id,
                    to_db_time(now),
                ),
            )
        except sqlite3.Error as exc:
            raise StorageError(f"begin_llm failed for session {parent.session_id}: {exc}") from exc
        return next((_row_to_summary(row) for row in rows), None)

    async def finish_llm(
        self,
        tx: Transaction,
        summary_id: int,
        *,
        status: SummaryStatus,
        text: str = "",
        error: str | None = None,
        generation_ms: int | None = None,
        now: datetime,
    ) -> bool:
        """Mark a ``processing`` row ``completed`` (with ``text``) or ``failed``.

        Returns:
            ``False`` if the row is gone (erased, pruned) or no longer ``processing``.

        Raises:
            ValueError: ``status`` is ``processing``.
        """
        if status == "processing":
            raise ValueError("finish_llm needs status 'completed' or 'failed'")
        changed = await tx.execute(
            "UPDATE conversation_summaries SET status = ?, text = ?, error = ?,"
            " generation_ms = ?, completed_at = ? WHERE summary_id = ? AND status = 'processing'",
            (status, text, error, generation_ms, to_db_time(now), summary_id),
        )
        return changed == 1

    async def fail_processing(self, tx: Transaction, *, error: str, now: datetime) -> int:
        """Mark every ``processing`` row ``failed``; return how many there were.

        Run at start-up: a model summary still ``processing`` then was cut short by the stop
        or crash of the process that ran it.
        """
        changed = await tx.execute(
            "UPDATE conversation_summaries SET status = 'failed', error = ?, completed_at = ?"
            " WHERE status = 'processing'",
            (error, to_db_time(now)),
        )
        return changed
