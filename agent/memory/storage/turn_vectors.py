"""The turns' sentence vectors in the database: the source of truth of the semantic search.

Table ``conversation_turn_vectors`` (``schema.sql`` migration 0017, ``schema_postgres.sql``
0008): one row per turn with the float32s a named model made of its words. The same SQL runs
on both backends (``?`` parameters, ``ON CONFLICT``, a vector as ``BLOB`` or ``BYTEA``). A row goes
with its turn (the foreign key's cascade) and an edit of the turn's words drops it (a trigger),
so whatever erases or changes a turn leaves no vector of its old words (an edited turn is found
by its words alone: the indexer encodes the turns after the last one with a vector). Tested in
``tests/test_semantic_search.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.db import Snapshot, Transaction

__all__ = ["TurnVectorStore", "UnindexedTurn"]


@dataclass(frozen=True, slots=True)
class UnindexedTurn:
    """A turn without a vector of the model yet: its seq, its words and who said them."""

    seq: int
    text: str
    speaker: str | None = None

    @property
    def sentence(self) -> str:
        """What is encoded: ``speaker: words`` (a question often names who said it)."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


class TurnVectorStore:
    """Reads and writes the vectors of a session's turns (either backend: the SQL is one)."""

    async def unindexed(
        self, conn: Transaction, session_id: str, model: str, limit: int
    ) -> list[UnindexedTurn]:
        """Return the session's turns after its last turn with a vector of ``model``, oldest
        first, at most ``limit``: a primary-key range, whatever the session's length."""
        rows = await conn.fetchall(
            "SELECT seq, user_text, speaker FROM conversation_turns WHERE session_id = ? AND seq >"
            " COALESCE((SELECT MAX(seq) FROM conversation_turn_vectors"
            " WHERE session_id = ? AND model = ?), 0) ORDER BY seq LIMIT ?",
            (session_id, session_id, model, limit),
        )
        return [UnindexedTurn(row["seq"], row["user_text"], row["speaker"]) for row in rows]

    async def write(
        self,
        tx: Transaction,
        session_id: str,
        model: str,
        vectors: list[tuple[UnindexedTurn, bytes]],
    ) -> None:
        """Store each turn's vector, if the turn still has the words it was made of (a turn
        erased or edited since it was read gets none: the next run reads it again)."""
        current = {
            (row["seq"], row["user_text"])
            for row in await tx.fetchall(
                "SELECT seq, user_text FROM conversation_turns WHERE session_id = ?"
                " AND seq BETWEEN ? AND ?",
                (session_id, vectors[0][0].seq, vectors[-1][0].seq),
            )
        } if vectors else set()  # fmt: skip
        await tx.executemany(
            "INSERT INTO conversation_turn_vectors (session_id, seq, model, vector)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (session_id, seq)"
            " DO UPDATE SET model = excluded.model, vector = excluded.vector",
            [  # a memoryview: BLOB on SQLite, BYTEA on PostgreSQL (whose bytes are JSON text)
                (session_id, turn.seq, model, memoryview(vector))
                for turn, vector in vectors
                if (turn.seq, turn.text) in current
            ],
        )

    def vectors(
        self, conn: Snapshot, session_id: str, model: str, after_seq: int
    ) -> list[tuple[int, bytes]]:
        """Return the session's vectors of ``model`` for turns after ``after_seq``, by seq."""
        rows = conn.fetchall(
            "SELECT seq, vector FROM conversation_turn_vectors"
            " WHERE session_id = ? AND seq > ? AND model = ? ORDER BY seq",
            (session_id, after_seq, model),
        )
        return [(row["seq"], bytes(row["vector"])) for row in rows]
