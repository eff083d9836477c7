"""The database layer: connection factory, PRAGMAs, migrations, the one way to write, the
storage seam every store speaks (:class:`Transaction`, :class:`Snapshot`, :class:`Row`), and
the locks between a bot's workers (:class:`ChatLocks`, :class:`LeaderLock`)."""

from agent.db.database import Database, Durability, Read, Work
from agent.db.locks import ChatLocks, LeaderLock, LocalChatLocks, SoleLeader
from agent.db.migrations import Migration, load_schema_text, migrate, parse_migrations
from agent.db.transaction import AnyDatabase, Params, Row, Snapshot, Transaction

__all__ = [
    "AnyDatabase",
    "ChatLocks",
    "Database",
    "Durability",
    "LeaderLock",
    "LocalChatLocks",
    "Migration",
    "Params",
    "Read",
    "Row",
    "Snapshot",
    "SoleLeader",
    "Transaction",
    "Work",
    "load_schema_text",
    "migrate",
    "parse_migrations",
]
