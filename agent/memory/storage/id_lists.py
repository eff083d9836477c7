"""How a store's statement takes a list of ids as one parameter, per SQL dialect.

A statement that reads "these sessions" takes the ids as one ``?`` parameter and reads them
back as a table ``s`` with one column ``value``: ``SELECT s.value FROM {IDS_TABLE}``. On SQLite
the parameter is JSON text read by ``json_each``; on PostgreSQL a ``text[]`` read by
``unnest``. The store parts (``Sqlite*`` and ``Postgres*`` in this package) mix one of these in,
so that a statement is written once for both. Tested through the stores that use it
(``tests/test_conversation_store.py``, ``tests/test_store_conformance.py`` on both backends).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

__all__ = ["PostgresIdLists", "SqliteIdLists"]


class SqliteIdLists:
    """Ids as JSON text, read back by ``json_each``."""

    #: A table ``s`` whose column ``value`` holds the ids of the parameter :meth:`ids_param`.
    IDS_TABLE = "json_each(?) AS s"

    @staticmethod
    def ids_param(ids: Sequence[Any]) -> Any:
        """Return the one parameter that carries ``ids``."""
        return orjson.dumps(list(ids))


class PostgresIdLists:
    """Ids as a PostgreSQL ``text[]``, read back by ``unnest``."""

    IDS_TABLE = "unnest(?::text[]) AS s (value)"

    @staticmethod
    def ids_param(ids: Sequence[Any]) -> Any:
        """Return the one parameter that carries ``ids``."""
        return list(ids)
