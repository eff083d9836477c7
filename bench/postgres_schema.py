"""A fresh PostgreSQL schema for one benchmark run, dropped after it.

``bench/memory_quality.py`` and ``bench/retrieval_cost.py`` run with ``--backend postgres`` on
the server of ``--postgres-url`` (or ``AGENT_TEST_POSTGRES_URL``): each conversation or history
size gets a schema of its own, the search path of every connection made with the connection
string :func:`fresh_schema` gives, so runs never see one another's rows. Tested in
``tests/test_postgres_schema.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["fresh_schema"]


@contextmanager
def fresh_schema(url: str, name: str) -> Iterator[str]:
    """Create the empty schema ``bench_<name>`` (dropping one left by a run cut short) and
    yield a connection string to the server at ``url`` with it as the search path; drop it at
    the end."""
    import psycopg  # the `postgres` extra
    from psycopg import sql

    name = "bench_" + re.sub(r"\W", "_", name).lower()  # word characters: no quoting needed
    schema = sql.Identifier(name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(schema))
    try:
        yield psycopg.conninfo.make_conninfo(url, options=f"-c search_path={name}")
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(schema))
