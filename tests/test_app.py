"""Tests of agent/app/: the only place that builds the objects of a running bot.

The mains themselves run in ``tests/test_telegram_bot.py`` and ``tests/test_console_sessions.py``
(the real program in a subprocess); these tests check who builds what, by walking imports and
calls with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules_under(folder: str) -> dict[str, ast.Module]:
    return {
        path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted((ROOT / folder).rglob("*.py"))
    }


def _imports(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def _called_names(tree: ast.Module) -> set[str]:
    return {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


def test_only_the_application_and_the_cli_import_the_wiring():
    """agent.app.wiring (settings -> database, lane, engine) is imported by agent/app/ and
    by the CLI (which opens the lane through it), never by a transport or the chat service."""
    modules = _modules_under("agent")
    importers = {name for name, tree in modules.items() if "agent.app.wiring" in _imports(tree)}
    assert "agent/app/telegram_main.py" in importers  # the walker sees real imports
    outside = {name for name in importers if not name.startswith(("agent/app/", "agent/cli/"))}
    assert outside == set()


def test_only_the_application_builds_the_lane_the_engine_and_the_chat_service():
    """ChatService, the lane (through the wiring) and the reply engine are built in agent/app/
    only: the transports receive them."""
    built = {"ChatService", "build_lane", "open_lane", "open_concierge", "RuleBasedConcierge"}
    modules = _modules_under("agent")
    builders = {
        name: sorted(_called_names(tree) & built)
        for name, tree in modules.items()
        if _called_names(tree) & built
    }
    assert "ChatService" in builders["agent/app/telegram_main.py"]
    assert "ChatService" in builders["agent/app/console_main.py"]
    outside = {
        name: calls
        for name, calls in builders.items()
        if not name.startswith(("agent/app/", "agent/cli/"))
    }
    assert outside == {}
