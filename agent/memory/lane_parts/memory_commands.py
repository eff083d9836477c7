"""What a user asks of long-term memory: ``/remember``, ``/facts confirm``, ``/facts forget``.

:class:`MemoryCommands` writes those requests, and the scheduled consolidation, through the
lane's database, then refreshes the memories the chat's packets carry. An erasure removes the
rows, rewrites the full-text indexes whole (no tombstone keeps the text) and empties the
write-ahead log. Tested by ``tests/test_memory_commands.py`` and ``tests/test_memory_store.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.db import Transaction
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.longterm.memory_consolidator import ConsolidationReport
from agent.memory.longterm.memory_slots import USER, attribute_of, fact_key
from agent.memory.schemas import Memory, MemoryCandidate

__all__ = ["MAX_NOTE_CHARS", "MemoryCommands"]

#: The longest note ``/remember`` keeps.
MAX_NOTE_CHARS = 1000


class MemoryCommands:
    """Writes a chat's long-term memory on request.

    Args:
        parts: the lane's parts (database, memory store, promotion gate, chat memories).
    """

    def __init__(self, parts: LaneParts) -> None:
        self._parts = parts

    async def remember(self, chat_id: int, text: str, attribute: str = "note") -> Memory:
        """See :meth:`agent.memory.lane.ConversationLane.remember`.

        Raises:
            ValueError: ``text`` is empty or longer than :data:`MAX_NOTE_CHARS`.
        """
        parts = self._parts
        note = " ".join(text.split())
        if not note or len(note) > MAX_NOTE_CHARS:
            raise ValueError(f"a note holds 1 to {MAX_NOTE_CHARS} characters, this one {len(note)}")
        candidate = MemoryCandidate(
            kind=attribute_of(attribute).kind,
            attribute=attribute,
            key=fact_key(USER, attribute, note),
            text=note,
            origin="noted",
            confidence=1.0,
            importance=attribute_of(attribute).importance,
        )
        now = parts.clock()
        threshold = parts.promotion.threshold

        async def record(tx: Transaction) -> Memory:
            memory = await parts.memory_store.record(
                tx, chat_id, candidate, source=None, threshold=threshold, now=now
            )
            assert memory is not None  # noqa: S101 (confidence 1.0 always passes the gate)
            return memory

        memory = await parts.db.write(record)
        await parts.memories.load(parts.db.reader, [chat_id])
        return memory

    async def confirm(self, chat_id: int, memory_id: str) -> Memory | None:
        """See :meth:`agent.memory.lane.ConversationLane.confirm_memory`."""
        parts = self._parts
        threshold = parts.promotion.threshold
        memory = await parts.db.write(
            lambda tx: parts.memory_store.confirm(tx, chat_id, memory_id, confidence=threshold)
        )
        if memory is not None:
            await parts.memories.load(parts.db.reader, [chat_id])
        return memory

    async def forget(self, chat_id: int, memory_ids: Sequence[str]) -> list[Memory]:
        """See :meth:`agent.memory.lane.ConversationLane.forget_memories`."""
        parts = self._parts
        erased = await parts.db.write(lambda tx: self.erase(tx, chat_id, memory_ids))
        if erased:
            parts.memories.drop(chat_id)
            await parts.purge_erased()
        return erased

    async def erase(self, tx: Transaction, chat_id: int, memory_ids: Sequence[str]) -> list[Memory]:
        """Erase memories of the chat inside the caller's transaction; return those erased."""
        # The rows, then the full-text indexes rewritten whole: no tombstone keeps the text.
        parts = self._parts
        erased = await parts.memory_store.forget(tx, chat_id, memory_ids)
        if erased:
            await parts.retriever.purge(tx)
        return erased

    async def consolidate(self) -> ConsolidationReport:
        """See :meth:`agent.memory.lane.ConversationLane.consolidate_memories`."""
        parts = self._parts
        now = parts.clock()
        report = await parts.db.write(lambda tx: parts.consolidator.consolidate(tx, now=now))
        if report.archived or report.merged or report.decayed:
            await parts.memories.reload(parts.db.reader)
        return report
