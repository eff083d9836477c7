"""Long-term memory storage (model version 2): typed statements with temporal validity.

:class:`MemoryStore` is the protocol the lane depends on; :class:`SqliteMemoryStore` implements
it on the tables of migration 0011 (the writes here, the reads in
:mod:`agent.memory.longterm.memory_read_store`). A memory fills a *slot*
(:mod:`agent.memory.longterm.memory_slots`): a new value of a one-value attribute supersedes the
current one, which keeps its row as history (``valid_until`` set, a ``supersedes`` relation
from the new one, read back by :meth:`MemoryStore.relations`); values of a many-value
attribute sit side by side. Each memory records the turns that stated it
(``memory_sources``): a memory whose every source is erased goes, and the value it had replaced
is current again (the triggers of migration 0011). Write methods take the
:class:`~agent.db.Transaction` and never commit. Contract: ``tests/test_store_conformance.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from agent.db import Snapshot, Transaction
from agent.memory.longterm.memory_read_store import (
    CURRENT,
    INSERT_COLUMNS,
    READ_COLUMNS,
    SqliteMemoryReads,
    row_to_memory,
)
from agent.memory.longterm.memory_slots import USER, slot_of
from agent.memory.schemas import Memory, MemoryCandidate, MemoryRelation
from agent.utils import ids
from agent.utils.timestamps import to_db_time

__all__ = ["MemoryStore", "SqliteMemoryStore"]


class MemoryStore(Protocol):
    """**Protocol:** storage of long-term memories.

    Called by :func:`agent.memory.writer.write_if_worthy` inside a turn's transaction, by the
    lane when it loads a chat's memories into its packets and for the memory commands
    (``/facts``, ``/remember``). ``tx`` is the write transaction; ``conn`` it or the reader.
    ``search`` is synchronous, on a :class:`~agent.db.Snapshot`: the retriever runs it in the
    database's searcher thread (:meth:`agent.db.Database.read`).
    """

    async def record(
        self,
        tx: Transaction,
        chat_id: int,
        candidate: MemoryCandidate,
        *,
        source: tuple[str, int] | None,
        threshold: float,
        now: datetime,
    ) -> Memory | None:
        """Record what a turn said: reinforce, supersede or add; return the memory it made.

        ``source`` is the ``(session_id, seq)`` of the turn (``None`` for a note the user asked
        for). ``None`` is returned when a candidate below ``threshold`` would have replaced a
        current active memory (a hedge does not overrule what was said plainly).
        """
        ...

    async def remove_sources(self, tx: Transaction, session_id: str, seq: int) -> int:
        """Drop one turn as a source of the memories it stated (the turn was edited); a memory
        left with no source goes with it. Return how many memories lost the source."""
        ...

    async def current_for_chats(
        self, conn: Transaction, chat_ids: Sequence[int], *, per_chat: int, past: int
    ) -> dict[int, list[Memory]]:
        """Return each chat's most important current memories (active, then unconfirmed), then
        its ``past`` most recently superseded ones."""
        ...

    async def listing(self, conn: Transaction, chat_id: int, *, history: bool) -> list[Memory]:
        """Return what the chat keeps, not archived: current memories (with ``history``, the
        superseded ones too), by kind then age."""
        ...

    async def as_of(self, conn: Transaction, chat_id: int, moment: datetime) -> list[Memory]:
        """Return the chat's active memories that were true at ``moment``."""
        ...

    async def relations(self, conn: Transaction, memory_id: str) -> list[MemoryRelation]:
        """Return the relations of a memory, from it and to it (``supersedes``, ``contradicts``,
        ``related_to``), oldest first."""
        ...

    async def confirm(
        self, tx: Transaction, chat_id: int, memory_id: str, *, confidence: float
    ) -> Memory | None:
        """Make a current memory of the chat active, with at least ``confidence``."""
        ...

    async def forget(
        self, tx: Transaction, chat_id: int, memory_ids: Sequence[str]
    ) -> list[Memory]:
        """Erase memories of a chat with their history, relations and the memories about
        them (an entity's facts); return the current ones erased."""
        ...

    def search(
        self, conn: Snapshot, chat_id: int, queries: Sequence[str], *, limit: int
    ) -> list[list[tuple[Memory, float]]]:
        """Return, for each query, the chat's current active memories that best match it
        (BM25, lower is better)."""
        ...

    async def touch(self, tx: Transaction, memory_ids: Sequence[str], *, now: datetime) -> None:
        """Record that memories were retrieved into a packet (access count and time)."""
        ...

    async def unarchived(self, conn: Transaction) -> list[Memory]:
        """Return every current memory not archived (for consolidation), by chat."""
        ...

    async def set_decay(
        self,
        tx: Transaction,
        decays: Sequence[tuple[str, float]],
        *,
        archive: Sequence[str],
        now: datetime,
    ) -> None:
        """Store new decay factors, and archive the memories in ``archive``."""
        ...

    async def merge(self, tx: Transaction, survivor: Memory, duplicates: Sequence[str]) -> None:
        """Replace ``duplicates`` by ``survivor`` (its new values), keeping their sources."""
        ...


class SqliteMemoryStore(SqliteMemoryReads):
    """The :class:`MemoryStore` on SQLite: the writes here, the reads inherited."""

    #: The larger of two values (SQLite's two-argument ``max``).
    GREATEST = "max"

    async def record(
        self,
        tx: Transaction,
        chat_id: int,
        candidate: MemoryCandidate,
        *,
        source: tuple[str, int] | None,
        threshold: float,
        now: datetime,
    ) -> Memory | None:
        """Record what a turn said: reinforce, supersede or add; return the memory it made.

        - The same value said again is more evidence for the current memory
          (``1 - (1-a)(1-b)``), fresher, and ``active`` once said with a confidence that
          reaches ``threshold`` (a plain statement, not one more hedge).
        - Another value of the slot supersedes the current one: that one ends now
          (``valid_until``) and stays as history; a *correction* ends it where it began (it was
          never true) and the new value takes its start. The new row records the relation:
          ``contradicts`` when it is the other side of a like/dislike, ``supersedes`` else.
        - A candidate below the threshold never replaces an active memory (``None``).
        - A fact about someone (``sister Mia/location``) is ``related_to`` the memory that
          names them (``relative:sister mia``).
        - A candidate that ``replaces`` another slot's value ("sorry, her name is Anna") ends
          that one where it began, and ``supersedes`` it.
        """
        stamp = to_db_time(now)
        slot = slot_of(candidate.key)
        current = await self._current(tx, chat_id, slot)
        put_right = None
        if candidate.replaces is not None and candidate.confidence >= threshold:
            put_right = await self._current(tx, chat_id, slot_of(candidate.replaces))
        if put_right is not None and (current is None or put_right.memory_id != current.memory_id):
            await tx.execute(  # never true: it ends where it began
                "UPDATE memories SET valid_until = valid_from, updated_at = ? WHERE memory_id = ?",
                (stamp, put_right.memory_id),
            )
        if (
            current is not None
            and current.attribute == candidate.attribute
            and current.text.casefold() == candidate.text.casefold()
        ):
            memory = await self._reinforce(tx, current, candidate, threshold=threshold, now=now)
        elif (
            current is not None
            and current.status == "active"
            and (candidate.confidence < threshold)
        ):
            return None
        else:
            valid_from = now
            if current is not None:
                ended = current.valid_from if candidate.correction else now
                valid_from = current.valid_from if candidate.correction else now
                await tx.execute(
                    "UPDATE memories SET valid_until = ?, updated_at = ? WHERE memory_id = ?",
                    (to_db_time(ended), stamp, current.memory_id),
                )
            status = "active" if candidate.confidence >= threshold else "candidate"
            inserted = await tx.fetchall(
                f"INSERT INTO memories ({INSERT_COLUMNS}) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, NULL, ?, ?, ?)"
                f" RETURNING {READ_COLUMNS}",
                (
                    ids.memory_id(),
                    chat_id,
                    candidate.kind,
                    candidate.subject,
                    candidate.attribute,
                    slot,
                    candidate.text,
                    candidate.origin,
                    candidate.confidence,
                    candidate.importance,
                    status,
                    to_db_time(valid_from),
                    stamp,
                    stamp,
                    stamp,
                ),
            )
            memory = row_to_memory(next(iter(inserted)))
            if current is not None:
                opposite = current.attribute != candidate.attribute
                relation = "contradicts" if opposite else "supersedes"
                await self._relate(tx, memory.memory_id, relation, current.memory_id, stamp)
            if candidate.subject != USER:
                await self._relate_to_entity(tx, memory, stamp)
        if put_right is not None and put_right.memory_id != memory.memory_id:
            await self._relate(tx, memory.memory_id, "supersedes", put_right.memory_id, stamp)
        if source is not None:
            await tx.execute(
                "INSERT INTO memory_sources (memory_id, session_id, seq) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (memory.memory_id, *source),
            )
        return memory

    async def _reinforce(
        self,
        tx: Transaction,
        current: Memory,
        candidate: MemoryCandidate,
        *,
        threshold: float,
        now: datetime,
    ) -> Memory:
        confidence = 1.0 - (1.0 - current.confidence) * (1.0 - candidate.confidence)
        # Confirmed by being said plainly, never by hedges adding up.
        active = candidate.confidence >= threshold or current.status == "active"
        rows = await tx.fetchall(
            "UPDATE memories SET confidence = ?, status = ?, archived_at = ?, decay = 1.0,"
            f" importance = {self.GREATEST}(importance, ?), access_count = access_count + 1,"
            " text = ?, updated_at = ?, last_accessed_at = ?"
            f" WHERE memory_id = ? RETURNING {READ_COLUMNS}",
            (
                confidence,
                # Said again: back from the archive once it is active.
                "active" if active else current.status,
                None if active else to_db_time(current.archived_at),
                candidate.importance,
                candidate.text,
                to_db_time(now),
                to_db_time(now),
                current.memory_id,
            ),
        )
        return row_to_memory(next(iter(rows)))

    async def _current(self, tx: Transaction, chat_id: int, slot: str) -> Memory | None:
        rows = await tx.fetchall(
            f"SELECT {READ_COLUMNS} FROM memories WHERE chat_id = ? AND key = ? AND {CURRENT}",
            (chat_id, slot),
        )
        return next((row_to_memory(row) for row in rows), None)

    async def _relate(
        self, tx: Transaction, memory_id: str, relation: str, other_id: str, stamp: str
    ) -> None:
        await tx.execute(
            "INSERT INTO memory_relations (memory_id, relation, other_id, created_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (memory_id, relation, other_id, stamp),
        )

    async def _relate_to_entity(self, tx: Transaction, memory: Memory, stamp: str) -> None:
        rows = await tx.fetchall(
            "SELECT memory_id FROM memories WHERE chat_id = ? AND kind = 'entity'"
            f" AND lower(text) = lower(?) AND {CURRENT}",
            (memory.chat_id, memory.subject),
        )
        for row in rows:
            await self._relate(tx, memory.memory_id, "related_to", row["memory_id"], stamp)

    async def remove_sources(self, tx: Transaction, session_id: str, seq: int) -> int:
        """Drop one turn as a source of the memories it stated; return how many lost it.

        Called when the turn's message was edited: what it said before is no evidence any
        more. A memory left with no source is deleted by the ``memory_sources_orphan``
        trigger (as after ``/forget``), and the value it had superseded is current again;
        one that another turn also stated stays.
        """
        changed = await tx.execute(
            "DELETE FROM memory_sources WHERE session_id = ? AND seq = ?", (session_id, seq)
        )
        return changed

    async def confirm(
        self, tx: Transaction, chat_id: int, memory_id: str, *, confidence: float
    ) -> Memory | None:
        """Make a current memory of the chat active (the user confirmed it), with at least
        ``confidence``; ``None`` if the chat has no such current memory."""
        rows = await tx.fetchall(
            "UPDATE memories SET status = 'active', archived_at = NULL, decay = 1.0,"
            f" confidence = {self.GREATEST}(confidence, ?)"
            f" WHERE chat_id = ? AND memory_id = ? AND {CURRENT} RETURNING {READ_COLUMNS}",
            (confidence, chat_id, memory_id),
        )
        return next((row_to_memory(row) for row in rows), None)

    async def forget(
        self, tx: Transaction, chat_id: int, memory_ids: Sequence[str]
    ) -> list[Memory]:
        """Erase memories with their slot's history and relations; return the current ones.

        Forgetting someone (an entity memory: ``relative: sister Mia``) forgets what was said
        about them too. Nothing is restored: the whole slot goes. Other chats' memories are
        never touched, whatever ids are passed.
        """
        named = self.ids_param(memory_ids)
        rows = await tx.fetchall(
            f"SELECT {READ_COLUMNS} FROM memories WHERE chat_id = ? AND (key IN ("
            "  SELECT key FROM memories WHERE chat_id = ? AND memory_id IN"
            f"  (SELECT s.value FROM {self.IDS_TABLE})) OR lower(subject) IN ("
            "  SELECT lower(text) FROM memories WHERE chat_id = ? AND kind = 'entity'"
            f"  AND memory_id IN (SELECT s.value FROM {self.IDS_TABLE})))",
            (chat_id, chat_id, named, chat_id, named),
        )
        erased = [row_to_memory(row) for row in rows]
        if not erased:
            return []
        await tx.execute(
            f"DELETE FROM memories WHERE memory_id IN (SELECT s.value FROM {self.IDS_TABLE})",
            (self.ids_param([memory.memory_id for memory in erased]),),
        )
        return [memory for memory in erased if memory.valid_until is None]

    async def touch(self, tx: Transaction, memory_ids: Sequence[str], *, now: datetime) -> None:
        """Record that memories were retrieved into a packet: one more access, fresh decay."""
        if not memory_ids:
            return
        await tx.execute(
            "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?,"
            f" decay = 1.0 WHERE memory_id IN (SELECT s.value FROM {self.IDS_TABLE})",
            (to_db_time(now), self.ids_param(memory_ids)),
        )

    async def set_decay(
        self,
        tx: Transaction,
        decays: Sequence[tuple[str, float]],
        *,
        archive: Sequence[str],
        now: datetime,
    ) -> None:
        """Store new decay factors (``(memory_id, decay)``), and archive those in ``archive``."""
        await tx.executemany(
            "UPDATE memories SET decay = ? WHERE memory_id = ?",
            [(decay, memory_id) for memory_id, decay in decays],
        )
        await tx.executemany(
            "UPDATE memories SET status = 'archived', archived_at = ? WHERE memory_id = ?",
            [(to_db_time(now), memory_id) for memory_id in archive],
        )

    async def merge(self, tx: Transaction, survivor: Memory, duplicates: Sequence[str]) -> None:
        """Fold ``duplicates`` into ``survivor``: their sources become its, then they go.

        The survivor's row takes the values of ``survivor`` (text, confidence, importance,
        access count, status, last access). The duplicates' sources are re-pointed first, so
        a ``/forget`` of any session that stated one of them still finds the merged memory.
        A duplicate is ended before it goes, so the value it had replaced stays history.
        """
        await tx.execute(
            "UPDATE memories SET text = ?, kind = ?, confidence = ?, importance = ?,"
            " access_count = ?, status = ?, decay = ?, updated_at = ?, last_accessed_at = ?"
            " WHERE memory_id = ?",
            (
                survivor.text,
                survivor.kind,
                survivor.confidence,
                survivor.importance,
                survivor.access_count,
                survivor.status,
                survivor.decay,
                to_db_time(survivor.updated_at),
                to_db_time(survivor.last_accessed_at),
                survivor.memory_id,
            ),
        )
        for memory_id in duplicates:
            await tx.execute(
                "INSERT INTO memory_sources (memory_id, session_id, seq)"
                " SELECT ?, session_id, seq FROM memory_sources WHERE memory_id = ?"
                " ON CONFLICT DO NOTHING",
                (survivor.memory_id, memory_id),
            )
            await tx.execute(
                "UPDATE memories SET valid_until = updated_at WHERE memory_id = ?", (memory_id,)
            )
            await tx.execute("DELETE FROM memories WHERE memory_id = ?", (memory_id,))
