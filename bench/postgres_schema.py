"""A benchmark's backend options, and a fresh PostgreSQL schema for one run, dropped after it.

``bench/memory_quality.py`` and ``bench/retrieval_cost.py`` run with ``--backend postgres`` on
the server of ``--postgres-url`` (or ``AGENT_TEST_POSTGRES_URL``): each conversation or history
size gets a schema of its own, the search path of every connection made with the connection
string :func:`fresh_schema` gives, so runs never see one another's rows;
:func:`parse_with_backend` gives both benchmarks the options. Tested in
``tests/test_postgres_schema.py``.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["fresh_schema", "parse_with_backend"]


def parse_with_backend(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> argparse.Namespace:
    """Parse ``argv`` with ``--backend`` (``sqlite``, ``postgres`` or ``both``: each, and the
    comparison; ``postgres`` alone prints only) and ``--postgres-url`` (default:
    ``AGENT_TEST_POSTGRES_URL``) added to ``parser``; a PostgreSQL run without a server is
    refused with a usage error."""
    parser.add_argument(
        "--backend", choices=("sqlite", "postgres", "both"), default="sqlite",
        help="where the lane stores (both: each, and the comparison; postgres alone: print only)",
    )  # fmt: skip
    parser.add_argument(
        "--postgres-url", default=os.environ.get("AGENT_TEST_POSTGRES_URL"),
        help="the PostgreSQL server (default: AGENT_TEST_POSTGRES_URL)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.backend != "sqlite" and not args.postgres_url:
        parser.error(f"--backend {args.backend} needs --postgres-url or AGENT_TEST_POSTGRES_URL")
    return args


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
