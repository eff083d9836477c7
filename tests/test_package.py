"""Tests of the package as a whole: its public surface, its import direction, its wheel."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable
from pathlib import Path

import agent.memory
from agent.db import load_schema_text, parse_migrations

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_IN_CORE = {"telegram", "httpx", "apscheduler"}


def test_memory_all_is_sorted_unique_and_resolves():
    """agent.memory.__all__ is sorted, has no duplicates, and every name in it exists."""
    exported = agent.memory.__all__
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert hasattr(agent.memory, name), name


def test_memory_exports_at_most_25_names():
    """The memory's door is narrow: at most 25 names, each one other folders need (the lane,
    the inspector, the reply-engine protocol, the models of a turn and a packet, what the
    lane's methods return); everything else is imported from its module."""
    assert len(agent.memory.__all__) <= 25
    assert {"ConversationLane", "MemoryInspector", "ReplyEngine"} <= set(agent.memory.__all__)


# The lane's collaborators: private to it, reached by nothing outside agent/memory/.
_COLLABORATORS = (
    "store|summaries|memory_store|summary_store|checkpoints|builder|retriever|states|writer"
    "|db|summary_worker|consolidator|promotion|_parts|_store|_db|_sessions|_keeper"
)


def test_nothing_outside_the_memory_reaches_past_the_lane():
    """Code outside agent/memory/ (the application, commands, CLI, benchmarks and tests) never
    touches the lane's collaborators: it writes through the lane and reads through its
    inspector. Tests that check raw rows use the Database they opened themselves."""
    reach = re.compile(rf"\blane\.({_COLLABORATORS})\b")
    files = [
        path
        for folder in ("agent", "bench", "tests")
        for path in _python_files(folder)
        if not path.is_relative_to(ROOT / "agent/memory")
    ]
    assert reach.search("await lane.store.get_session(lane.db.reader, sid)")  # it can fail
    found = {
        f"{path.relative_to(ROOT).as_posix()}:{number}": line.strip()
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if reach.search(line) and path.name != "test_package.py"
    }
    assert found == {}


def _imported_modules(path: Path) -> set[str]:
    """Top-level names of every module a file imports (statements and import_module calls)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value.split(".")[0])
    return found


def test_memory_and_db_never_import_telegram_http_or_the_scheduler():
    """Nothing under agent/memory or agent/db imports telegram, httpx or apscheduler: the
    adapter calls in, never the other way round (DESIGN.md section 2)."""
    files = sorted([*(ROOT / "agent/memory").rglob("*.py"), *(ROOT / "agent/db").rglob("*.py")])
    imports = {path.relative_to(ROOT).as_posix(): _imported_modules(path) for path in files}
    # The walker sees real imports (otherwise this test could not fail).
    assert "aiosqlite" in imports["agent/db/database.py"]
    assert "pydantic" in imports["agent/memory/schemas.py"]
    assert "agent" in imports["agent/memory/conversation_store.py"]

    offending = {name: sorted(found & FORBIDDEN_IN_CORE) for name, found in imports.items()}
    assert {name: found for name, found in offending.items() if found} == {}


def _full_imports(path: Path) -> set[str]:
    """Dotted names of the modules a file imports (``from x.y import z`` gives ``x.y``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def _python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _importers(files: list[Path], reached: Callable[[str], bool]) -> dict[str, list[str]]:
    """For each file that imports a module ``reached`` accepts, the modules it imports so."""
    found = {}
    for path in files:
        names = _full_imports(path) | _imported_modules(path)
        hits = sorted(name for name in names if reached(name))
        if hits:
            found[path.relative_to(ROOT).as_posix()] = hits
    return found


def test_only_the_telegram_package_imports_telegram():
    """python-telegram-bot is imported under agent/telegram/ only: the memory, the chat
    service, the engines, the console, the application wiring and the CLI work without it."""
    importers = _importers(_python_files("agent"), lambda name: name.split(".")[0] == "telegram")
    assert "agent/telegram/adapter.py" in importers  # the walker sees real imports
    outside = {
        name: hits for name, hits in importers.items() if not name.startswith("agent/telegram/")
    }
    assert outside == {}


def test_reply_engines_never_import_the_database_or_a_store():
    """Reply engines see a packet, never the database: no agent.db, no SQLite, no store."""
    reached = _importers(
        _python_files("agent/engines"),
        lambda name: (
            name.startswith("agent.db")
            or name in {"sqlite3", "aiosqlite"}
            or name.endswith("_store")
        ),
    )
    assert reached == {}


def test_memory_never_imports_the_transport_the_chat_service_or_the_application():
    """The memory lane is called by the chat service and the transports, never the other way
    round: nothing under agent/memory/ imports agent.telegram, agent.chat, agent.console,
    agent.app, agent.engines or agent.cli."""
    assert "agent.memory.schemas" in _full_imports(ROOT / "agent/memory/lane.py")  # it sees
    callers = (
        "agent.telegram",
        "agent.chat",
        "agent.console",
        "agent.app",
        "agent.engines",
        "agent.cli",
    )
    reached = _importers(
        _python_files("agent/memory"),
        lambda name: any(name == caller or name.startswith(caller + ".") for caller in callers),
    )
    assert reached == {}


def _modules() -> list[Path]:
    return [
        path
        for path in _python_files("agent")
        if path.name not in {"__init__.py", "__main__.py"}
    ]


def test_no_module_is_over_500_lines():
    """STYLE: a module longer than 500 lines does more than one thing; split it at a seam."""
    lengths = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in _modules()
    }
    assert lengths["agent/memory/lane.py"] > 100  # the walker reads real modules
    assert {name: n for name, n in lengths.items() if n > 500} == {}


def test_every_module_has_a_test_file_or_names_the_tests_that_cover_it():
    """Each module has ``tests/test_<name>.py``, or its docstring names test files that exist."""
    tests = {path.name for path in (ROOT / "tests").glob("test_*.py")}
    untested = {}
    for path in _modules():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        named = set(re.findall(r"tests/(test_\w+\.py)", doc))
        if f"test_{path.stem}.py" in tests or (named and named <= tests):
            continue
        untested[path.relative_to(ROOT).as_posix()] = sorted(named - tests)
    assert untested == {}


_CHECK_INSTALLED = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path

    import agent
    from agent.db import Database
    from agent.db.migrations import load_schema_text

    unpacked, schema, db_file = (Path(arg) for arg in sys.argv[1:4])
    assert Path(agent.__file__).resolve().is_relative_to(unpacked.resolve()), agent.__file__
    assert load_schema_text() == schema.read_text(encoding="utf-8")

    async def main():
        async with Database(db_file) as db:
            row = await db.fetchone("PRAGMA user_version")
            print(row[0])

    asyncio.run(main())
    """
)


def test_wheel_carries_schema_sql_and_works_installed(tmp_path):
    """The built wheel holds agent/db/schema.sql (and the PostgreSQL DDL beside it), and the
    unpacked package (outside the source tree) finds it and migrates a new database with it."""
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(dist), str(ROOT)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    (wheel,) = dist.glob("agent-*.whl")
    schema = (ROOT / "schema.sql").read_bytes()
    with zipfile.ZipFile(wheel) as archive:
        assert "agent/db/schema.sql" in archive.namelist()
        assert archive.read("agent/db/schema.sql") == schema
        assert "agent/db/schema_postgres.sql" in archive.namelist()
        unpacked = tmp_path / "site"
        archive.extractall(unpacked)
    assert not (unpacked / "schema.sql").exists()  # only the packaged copy can be found

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(unpacked)}
    run = subprocess.run(
        [sys.executable, "-W", "error", "-c", _CHECK_INSTALLED,
         str(unpacked), str(ROOT / "schema.sql"), str(elsewhere / "memory.db")],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(len(parse_migrations(load_schema_text())))
