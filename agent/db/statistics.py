"""Figures about what a database remembers: turns, journal, summaries, memories.

:func:`read_statistics` counts the rows of the memory's tables by their status, for
operators (``agent-memory stats`` and ``verify``). Unlike the lane's queries it reads whole
tables, once per call: it is an audit, not part of a turn. Covered by ``tests/test_cli.py``
(``stats``) and ``tests/test_memory_inspector.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.db.transaction import Transaction

__all__ = ["MemoryStatistics", "read_statistics"]

# Each figure: one GROUP BY over one table; the first column is the key, the last the count.
_QUERIES = {
    "turns": "SELECT status, count(*) FROM conversation_turns GROUP BY status",
    "journal": "SELECT status, count(*) FROM inbound_updates GROUP BY status",
    "summaries": (
        "SELECT summarizer || ' ' || status, count(*) FROM conversation_summaries"
        " GROUP BY summarizer, status"
    ),
    "memories": "SELECT status, count(*) FROM memories GROUP BY status",
}


@dataclass(frozen=True, slots=True)
class MemoryStatistics:
    """Row counts of the memory's tables, each by status.

    Attributes:
        turns: turns by status; ``answered`` ones are replies not delivered yet (I4).
        journal: inbound journal entries by status; ``pending`` ones are not processed yet,
            ``failed`` ones were given up after repeated failures.
        summaries: summary versions by summarizer and status (``extractive completed``...).
        memories: long-term memories by status (``active``, ``candidate``, ``archived``).
    """

    turns: dict[str, int] = field(default_factory=dict)
    journal: dict[str, int] = field(default_factory=dict)
    summaries: dict[str, int] = field(default_factory=dict)
    memories: dict[str, int] = field(default_factory=dict)


async def read_statistics(conn: Transaction) -> MemoryStatistics:
    """Count the rows of the memory's tables by status (reads every table once).

    Args:
        conn: any connection (normally ``db.reader``).
    """
    found: dict[str, dict[str, int]] = {}
    for name, sql in _QUERIES.items():
        rows = await conn.fetchall(sql)
        found[name] = {str(row[0]): int(row[1]) for row in rows}
    return MemoryStatistics(
        turns=found["turns"],
        journal=found["journal"],
        summaries=found["summaries"],
        memories=found["memories"],
    )
