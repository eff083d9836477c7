"""The inbound journal: step 1 of every turn (DESIGN.md section 3, invariant I1).

Every update is stored here durably *before* Telegram may consider it delivered: the polling
loop confirms an update (by asking for the next offset) only after :meth:`InboundJournal.record`
has committed it, and the webhook answers 200 only then. Updates are then processed from the
journal; whatever is still ``pending`` at start-up is processed first. Once processed, an entry
keeps its key (so that a redelivery is recognised) but drops its payload, so the journal holds no
conversation text it no longer needs.

The payload is the update's JSON as Telegram sent it: this module never imports Telegram.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent.db import AnyDatabase, Row, Transaction
from agent.memory.schemas import utc_now
from agent.utils.timestamps import to_db_time

__all__ = ["HANDLING_FAILED", "InboundJournal", "JournalEntry"]

#: What a user is told when handling their message failed (a fault of ours, a failed attempt).
HANDLING_FAILED = "Sorry, something went wrong on my side with that message. Please send it again."


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One journaled update: its key, its chat (if any), and its JSON payload."""

    update_id: int
    chat_id: int | None
    payload: str
    attempts: int = 0


def _entry(row: Row) -> JournalEntry:
    return JournalEntry(
        update_id=row["update_id"],
        chat_id=row["chat_id"],
        payload=row["payload"],
        attempts=row["attempts"],
    )


class InboundJournal:
    """The durable queue of updates received from Telegram for one bot.

    Args:
        db: the open database (SQLite or PostgreSQL).
        bot_id: the bot's Telegram user id (update ids are unique per bot).
        max_attempts: after this many failed processings an update is marked ``failed``
            instead of being retried at every start (a poison update must not block a chat).
        clock: returns the current time.
    """

    def __init__(
        self,
        db: AnyDatabase,
        bot_id: int,
        *,
        max_attempts: int = 3,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.db = db
        self.bot_id = bot_id
        self.max_attempts = max_attempts
        self._clock = clock

    async def record(self, entries: Sequence[JournalEntry]) -> list[JournalEntry]:
        """Store updates durably in one transaction; return those not seen before.

        A redelivered update (same ``update_id``) is skipped, not an error (I3).
        """
        if not entries:
            return []
        now = to_db_time(self._clock())

        async def insert(tx: Transaction) -> set[int]:
            fresh: set[int] = set()
            # In key order: two processes recording the same updates lock them in one order,
            # so neither waits for the other in a cycle (a deadlock on PostgreSQL).
            for entry in sorted(entries, key=lambda e: e.update_id):
                rows = await tx.fetchall(
                    "INSERT INTO inbound_updates"
                    " (bot_id, update_id, chat_id, payload, received_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (bot_id, update_id) DO NOTHING"
                    " RETURNING update_id",
                    (self.bot_id, entry.update_id, entry.chat_id, entry.payload, now),
                )
                fresh.update(row[0] for row in rows)
            return fresh

        fresh = await self.db.write(insert)
        return [entry for entry in entries if entry.update_id in fresh]

    async def pending(self, limit: int = 10_000) -> list[JournalEntry]:
        """Return the updates received but not yet processed, oldest first."""
        rows = await self.db.fetchall(
            "SELECT update_id, chat_id, payload, attempts FROM inbound_updates"
            " WHERE bot_id = ? AND status = 'pending' ORDER BY update_id LIMIT ?",
            (self.bot_id, limit),
        )
        return [_entry(row) for row in rows]

    async def pending_of_chat(
        self, chat_id: int, *, after: int | None = None, limit: int = 100
    ) -> list[JournalEntry]:
        """Return a chat's updates not yet processed, in ``update_id`` order.

        Read under the chat's lock (:class:`~agent.chat.journal_drain.JournalDrain`): what it
        returns is what no other worker processes meanwhile.

        Args:
            chat_id: the chat; ``0`` stands for the updates of no chat (``chat_id`` NULL).
            after: only updates after this one (those a drain has not tried yet).
            limit: at most this many.
        """
        rows = await self.db.fetchall(
            "SELECT update_id, chat_id, payload, attempts FROM inbound_updates"
            " WHERE bot_id = ? AND status = 'pending' AND coalesce(chat_id, 0) = ?"
            " AND update_id > ? ORDER BY update_id LIMIT ?",
            (self.bot_id, chat_id, -1 if after is None else after, limit),
        )
        return [_entry(row) for row in rows]

    async def pending_chats(self, *, older_than: timedelta) -> list[int]:
        """Return the chats with updates pending for longer than ``older_than``, the chat of
        the oldest first (``0``: updates of no chat).

        The updates a dead worker journaled and never processed, for a sweep to drain.
        """
        cutoff = to_db_time(self._clock() - older_than)
        rows = await self.db.fetchall(
            "SELECT coalesce(chat_id, 0) AS chat, min(update_id) AS first FROM inbound_updates"
            " WHERE bot_id = ? AND status = 'pending' AND received_at < ?"
            " GROUP BY coalesce(chat_id, 0) ORDER BY first",
            (self.bot_id, cutoff),
        )
        return [int(row[0]) for row in rows]

    async def last_update_id(self) -> int | None:
        """Return the highest update id ever journaled for this bot, or ``None``."""
        row = await self.db.fetchone(
            "SELECT max(update_id) FROM inbound_updates WHERE bot_id = ?", (self.bot_id,)
        )
        return None if row is None else row[0]

    async def mark_done(self, update_id: int) -> None:
        """Mark an update processed and drop its payload."""
        now = to_db_time(self._clock())
        await self.db.write(
            lambda tx: tx.execute(
                "UPDATE inbound_updates SET status = 'done', payload = '', processed_at = ?"
                " WHERE bot_id = ? AND update_id = ?",
                (now, self.bot_id, update_id),
            )
        )

    async def mark_failed_attempt(self, update_id: int, error: str) -> bool:
        """Count a failed processing; return ``True`` if the update is now given up."""
        now = to_db_time(self._clock())

        async def count(tx: Transaction) -> bool:
            rows = await tx.fetchall(
                "UPDATE inbound_updates SET attempts = attempts + 1, error = ?,"
                " status = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE status END,"
                " processed_at = ? WHERE bot_id = ? AND update_id = ? RETURNING status",
                (error[:500], self.max_attempts, now, self.bot_id, update_id),
            )
            return any(row[0] == "failed" for row in rows)

        return await self.db.write(count)

    @staticmethod
    async def bots_of_chat(db: AnyDatabase, chat_id: int) -> list[int]:
        """Return the ids of the bots whose journal holds entries of a chat.

        For tools that erase a chat without being its bot (the inspection CLI): each id makes
        an :class:`InboundJournal` whose :meth:`forget_chat` erases that bot's entries.
        """
        rows = await db.fetchall(
            "SELECT DISTINCT bot_id FROM inbound_updates WHERE chat_id = ? ORDER BY bot_id",
            (chat_id,),
        )
        return [int(row[0]) for row in rows]

    async def forget_chat(self, chat_id: int) -> int:
        """Delete the entries of a chat (part of ``/forget``); return how many.

        Processed entries go, and so do pending ones whose processing failed: they came before
        the erasure (a chat's updates are handled in order) and their text would come back as
        a turn at the next start. Entries never tried yet stay: the erasure request itself,
        and messages sent after it.
        """

        async def delete(tx: Transaction) -> int:
            return await tx.execute(
                "DELETE FROM inbound_updates WHERE bot_id = ? AND chat_id = ?"
                " AND (status != 'pending' OR attempts > 0)",
                (self.bot_id, chat_id),
            )

        return await self.db.write(delete)

    async def prune(self, *, older_than: timedelta) -> int:
        """Delete processed entries older than ``older_than``; return how many."""
        cutoff = to_db_time(self._clock() - older_than)

        async def delete(tx: Transaction) -> int:
            return await tx.execute(
                "DELETE FROM inbound_updates WHERE bot_id = ? AND status != 'pending'"
                " AND received_at < ?",
                (self.bot_id, cutoff),
            )

        return await self.db.write(delete)
