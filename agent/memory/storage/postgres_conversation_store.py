"""The conversation store on PostgreSQL: sessions, the turn log and the turn search together.

:class:`PostgresConversationStore` is the
:class:`~agent.memory.conversation_store.ConversationStore` of ``agent/db/schema_postgres.sql``
(migrations 0002 and 0007), made of the three parts of this package on PostgreSQL:
:class:`~agent.memory.storage.postgres_session_table.PostgresSessionTable`,
:class:`~agent.memory.storage.postgres_turn_log.PostgresTurnLog` and
:class:`~agent.memory.storage.postgres_turn_search.PostgresTurnSearch`. Where SQLite's triggers
keep the FTS5 index, this class keeps the turn index: a turn appended or edited is indexed in
the same transaction; a turn erased takes its index row with it (the foreign key's cascade), so
an erased turn is never found and its words are no longer counted. Tested by the conformance
suite (``tests/test_store_conformance.py``, ``postgres`` parameter) and
``tests/test_postgres_turn_search.py``.
"""

from __future__ import annotations

from datetime import datetime

from agent.db import Transaction
from agent.memory.schemas import ConversationTurn
from agent.memory.storage.postgres_session_table import PostgresSessionTable
from agent.memory.storage.postgres_turn_log import PostgresTurnLog
from agent.memory.storage.postgres_turn_search import PostgresTurnSearch

__all__ = ["PostgresConversationStore"]


class PostgresConversationStore(PostgresSessionTable, PostgresTurnLog, PostgresTurnSearch):
    """The :class:`~agent.memory.conversation_store.ConversationStore` on PostgreSQL."""

    async def append_turn(self, tx: Transaction, turn: ConversationTurn) -> bool:
        """Append a turn and index it; return ``False`` (and change nothing) if its update is
        known."""
        if not await super().append_turn(tx, turn):
            return False
        await self.index_turn(tx, turn)
        return True

    async def edit_turn(
        self,
        tx: Transaction,
        session_id: str,
        seq: int,
        *,
        text: str,
        previous_text: str,
        edited_at: datetime,
        bot_id: int,
        update_id: int | None,
    ) -> bool:
        """Replace a turn's user text (see :meth:`SqliteTurnLog.edit_turn
        <agent.memory.storage.turn_log.SqliteTurnLog.edit_turn>`) and index its new text: a
        search finds what the message says now, not what it said."""
        edited = await super().edit_turn(
            tx, session_id, seq, text=text, previous_text=previous_text, edited_at=edited_at,
            bot_id=bot_id, update_id=update_id,
        )  # fmt: skip
        if edited:
            await self.reindex_turn(tx, session_id, seq)
        return edited

    async def erase_turn_text(self, tx: Transaction, session_id: str, seq: int) -> bool:
        """Erase a turn's texts (see :meth:`SqliteTurnLog.erase_turn_text
        <agent.memory.storage.turn_log.SqliteTurnLog.erase_turn_text>`) and index it again:
        its index row holds the words it had."""
        erased = await super().erase_turn_text(tx, session_id, seq)
        if erased:
            await self.reindex_turn(tx, session_id, seq)
        return erased

    async def purge_search(self, tx: Transaction) -> None:
        """Nothing to merge: the turn index has no segments, and an erased turn's index row
        was deleted with it, in the same transaction (the cascade). Its pages are reclaimed by
        (auto)vacuum, which cannot run inside a transaction."""
