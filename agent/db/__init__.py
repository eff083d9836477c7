"""The database layer: connection factory, PRAGMAs, migrations, the one way to write, and the
storage seam every store speaks (:class:`Transaction`, :class:`Snapshot`, :class:`Row`)."""

from agent.db.database import Database, Durability, Read, Work
from agent.db.migrations import Migration, load_schema_text, migrate, parse_migrations
from agent.db.transaction import AnyDatabase, Params, Row, Snapshot, Transaction

__all__ = [
    "AnyDatabase",
    "Database",
    "Durability",
    "Migration",
    "Params",
    "Read",
    "Row",
    "Snapshot",
    "Transaction",
    "Work",
    "load_schema_text",
    "migrate",
    "parse_migrations",
]
