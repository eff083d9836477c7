"""The database layer: connection factory, PRAGMAs, migrations, and the one way to write."""

from agent.db.database import Database, Durability, Work
from agent.db.migrations import Migration, load_schema_text, migrate, parse_migrations

__all__ = [
    "Database",
    "Durability",
    "Migration",
    "Work",
    "load_schema_text",
    "migrate",
    "parse_migrations",
]
