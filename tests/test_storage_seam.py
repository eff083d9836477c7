"""The storage seam holds: stores speak our types, and only SQLite's own modules touch SQLite.

A second backend (PostgreSQL) implements the store protocols over :class:`agent.db.Transaction`
and :class:`agent.db.Snapshot`; these tests fail when a protocol names a driver's type (or
``Any``) again, or when code outside ``agent/db`` and the ``Sqlite*`` store modules imports a
SQLite driver.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from agent.db.search import match_query
from agent.memory.conversation_store import ConversationStore
from agent.memory.longterm.memory_store import MemoryStore
from agent.memory.summaries.summary_store import SummaryStore

ROOT = Path(__file__).resolve().parents[1]
DRIVERS = {"sqlite3", "aiosqlite"}


@pytest.mark.parametrize("protocol", [ConversationStore, MemoryStore, SummaryStore])
def test_store_protocols_name_no_driver_type_and_no_any(protocol):
    """Every method of a store protocol is annotated with our models, Transaction or Snapshot:
    no sqlite3 or aiosqlite type, no Any."""
    methods = [
        member
        for name, member in vars(protocol).items()
        if callable(member) and not name.startswith("_")
    ]
    assert len(methods) > 5  # it sees the methods
    for method in methods:
        annotations = inspect.get_annotations(method)
        assert "conn" in annotations or "tx" in annotations, method.__name__
        for name, text in annotations.items():
            assert not any(bad in str(text) for bad in ("sqlite", "Connection", "Any")), (
                f"{protocol.__name__}.{method.__name__}({name}: {text})"
            )
        connection = annotations.get("tx", annotations.get("conn"))
        assert connection in {"Transaction", "Snapshot"}, method.__name__


def _drivers_imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & DRIVERS


def test_only_the_database_and_the_sqlite_stores_import_a_driver():
    """Under agent/memory and agent/chat, a module that imports sqlite3 or aiosqlite defines a
    Sqlite* store (part); agent/db is the SQLite backend itself."""
    importers = {}
    for folder in ("agent/memory", "agent/chat"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if _drivers_imported(path):
                importers[path.relative_to(ROOT).as_posix()] = "class Sqlite" in path.read_text(
                    encoding="utf-8"
                )
    assert "agent/memory/storage/turn_log.py" in importers  # the walker sees real imports
    assert {name for name, is_store in importers.items() if not is_store} == set()


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ('kayak" OR NEAR(a b) *', '"kayak" OR "or" OR "near" OR "a" OR "b"'),
        ("Ada's ADA ada", '"ada" OR "s"'),
        ("?! -", ""),
    ],
)
def test_a_search_query_is_quoted_words_only(text, query):
    """match_query keeps words, lowercased, once each, each quoted: FTS5 syntax in user text
    is searched for as words, never parsed."""
    assert match_query(text) == query
