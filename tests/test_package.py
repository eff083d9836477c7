"""Tests of the package as a whole: its public surface, its import direction, its wheel."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import agent.memory
from agent.db import load_schema_text, parse_migrations

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_IN_CORE = {"telegram", "httpx", "apscheduler"}


def _memory_modules():
    return [
        importlib.import_module(f"agent.memory.{info.name}")
        for info in pkgutil.iter_modules(agent.memory.__path__)
    ]


def test_memory_all_is_sorted_unique_and_resolves():
    """agent.memory.__all__ is sorted, has no duplicates, and every name in it exists."""
    exported = agent.memory.__all__
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert hasattr(agent.memory, name), name


def test_memory_all_exports_every_public_class_and_function_of_its_modules():
    """Every class or function a module of agent.memory lists in its own __all__ is exported
    by the package (httpx test_exported_members)."""
    modules = _memory_modules()
    assert len(modules) >= 5
    missing = []
    for module in modules:
        assert module.__all__, f"{module.__name__} has no __all__"
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                if name not in agent.memory.__all__:
                    missing.append(f"{module.__name__}.{name}")
                else:
                    assert getattr(agent.memory, name) is value, name
    assert missing == [], f"not exported from agent.memory: {missing}"


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


# The transport: the only modules that speak Telegram (python-telegram-bot).
_TRANSPORT = {
    "agent/bot_api_retry.py",
    "agent/bot_launcher.py",
    "agent/reminders.py",
    "agent/telegram_adapter.py",
    "agent/telegram_bot.py",
    "agent/telegram_payloads.py",
    "agent/update_poller.py",
    "agent/webhook_server.py",
}
# Reply engines: a packet in, a Reply out.
_ENGINES = (
    "agent/concierge.py",
    "agent/llm_concierge.py",
    "agent/llm_client.py",
    "agent/llm_summarizer.py",
)


def test_only_the_transport_imports_telegram():
    """python-telegram-bot is imported by the transport modules only: the memory, the
    commands, the engines, the console and the CLI work without it."""
    importers = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "agent").rglob("*.py")
        if "telegram" in _imported_modules(path)
    }
    assert "agent/telegram_adapter.py" in importers  # the walker sees real imports
    assert importers <= _TRANSPORT, sorted(importers - _TRANSPORT)


def test_reply_engines_never_import_the_database_and_memory_never_the_transport():
    """Reply engines see a packet, never the database (no agent.db, no SQLite, no store); the
    memory lane never imports the transport, the commands or the console (they call it)."""
    for engine in _ENGINES:
        found = _full_imports(ROOT / engine)
        reached = {
            name
            for name in found
            if name.startswith("agent.db")
            or name in {"sqlite3", "aiosqlite"}
            or name.endswith("_store")
        }
        assert reached == set(), (engine, sorted(reached))
    transport = {
        "agent." + Path(name).stem
        for name in _TRANSPORT | {"agent/commands.py", "agent/console.py"}
    }
    assert "agent.memory.schemas" in _full_imports(ROOT / "agent/memory/lane.py")  # it sees
    for path in sorted((ROOT / "agent/memory").rglob("*.py")):
        found = _full_imports(path)
        assert not found & transport, (path.name, sorted(found & transport))


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
    """The built wheel holds agent/db/schema.sql, and the unpacked package (outside the source
    tree) finds it and migrates a new database with it."""
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
