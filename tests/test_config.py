"""Tests of agent/config.py: defaults, the environment, .env files, errors and the README."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.config import Settings, load_settings
from agent.errors import ConfigError

README = Path(__file__).resolve().parents[1] / "README.md"
ALIASES = {name: field.alias for name, field in Settings.model_fields.items()}
CORE = (
    "db_path",
    "checkpoint_dir",
    "durability",
    "lock_timeout",
    "summarize_every",
    "recent_turns",
    "packet_token_budget",
    "log_level",
)


def _core(settings: Settings) -> dict[str, object]:
    """The storage and memory settings (other fields are tested by their own features)."""
    return {name: getattr(settings, name) for name in CORE}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    """No AGENT_* variable from the outside, and a working directory without a .env file."""
    for alias in ALIASES.values():
        monkeypatch.delenv(alias, raising=False)
        monkeypatch.delenv(alias.lower(), raising=False)
    monkeypatch.chdir(tmp_path)


def test_defaults_without_environment():
    """With nothing set, every setting has its declared default, and the core ones are the
    documented values."""
    settings = load_settings()
    for name, field in Settings.model_fields.items():
        assert getattr(settings, name) == field.get_default(call_default_factory=True), name
    assert _core(settings) == {
        "db_path": Path("memory.db"),
        "checkpoint_dir": Path("checkpoints"),
        "durability": "full",
        "lock_timeout": 30.0,
        "summarize_every": 10,
        "recent_turns": 3,
        "packet_token_budget": 2000,
        "log_level": "INFO",
    }


def test_environment_variables_override_defaults(monkeypatch, tmp_path):
    """Each AGENT_* variable sets its field, converted to the field's type."""
    monkeypatch.setenv("AGENT_DB_PATH", str(tmp_path / "x.db"))
    monkeypatch.setenv("AGENT_CHECKPOINT_DIR", "snapshots")
    monkeypatch.setenv("AGENT_DURABILITY", "process")
    monkeypatch.setenv("AGENT_DB_LOCK_TIMEOUT", "2.5")
    monkeypatch.setenv("AGENT_SUMMARIZE_EVERY", "4")
    monkeypatch.setenv("AGENT_RECENT_TURNS", "0")
    monkeypatch.setenv("AGENT_PACKET_TOKEN_BUDGET", "500")
    monkeypatch.setenv("AGENT_LOG_LEVEL", "DEBUG")

    settings = load_settings(env_file=None)

    assert _core(settings) == {
        "db_path": tmp_path / "x.db",
        "checkpoint_dir": Path("snapshots"),
        "durability": "process",
        "lock_timeout": 2.5,
        "summarize_every": 4,
        "recent_turns": 0,
        "packet_token_budget": 500,
        "log_level": "DEBUG",
    }


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("AGENT_DURABILITY", "fast"),
        ("AGENT_DB_LOCK_TIMEOUT", "0"),
        ("AGENT_DB_LOCK_TIMEOUT", "soon"),
        ("AGENT_SUMMARIZE_EVERY", "0"),
        ("AGENT_RECENT_TURNS", "-1"),
        ("AGENT_PACKET_TOKEN_BUDGET", "99"),
        ("AGENT_LOG_LEVEL", "LOUD"),
        ("AGENT_DATABASE_URL", "mysql://root:hunter2@db/agent"),
        ("AGENT_DATABASE_URL", "memory.db"),
    ],
)
def test_a_malformed_variable_raises_config_error_naming_it(monkeypatch, variable, value):
    """A value of the wrong type or range raises ConfigError whose message names the variable
    (and only the bad one)."""
    monkeypatch.setenv(variable, value)
    valid = "AGENT_SUMMARIZE_EVERY" if variable != "AGENT_SUMMARIZE_EVERY" else "AGENT_RECENT_TURNS"
    monkeypatch.setenv(valid, "5")  # a good neighbour must not be blamed

    with pytest.raises(ConfigError, match=rf"^invalid configuration: {variable}: ") as caught:
        load_settings(env_file=None)

    assert isinstance(caught.value.__cause__, ValidationError)
    named = set(re.findall(r"AGENT_\w+", str(caught.value)))
    assert named == {variable}


def test_dotenv_file_is_read_and_the_environment_wins(monkeypatch, tmp_path):
    """A .env in the working directory (or a given file) supplies settings; a variable in the
    environment beats the same one in the file; env_file=None ignores files."""
    (tmp_path / ".env").write_text(
        "# local overrides\nAGENT_DURABILITY=process\nAGENT_RECENT_TURNS=7\n", encoding="utf-8"
    )
    other = tmp_path / "other.env"
    other.write_text("AGENT_SUMMARIZE_EVERY=3\n", encoding="utf-8")

    from_cwd = load_settings()
    assert (from_cwd.durability, from_cwd.recent_turns) == ("process", 7)
    assert load_settings(env_file=other).summarize_every == 3
    assert load_settings(env_file=other).durability == "full"
    assert load_settings(env_file=None).durability == "full"

    monkeypatch.setenv("AGENT_RECENT_TURNS", "1")
    assert load_settings().recent_turns == 1


def test_a_malformed_value_in_dotenv_raises_config_error(tmp_path):
    """A bad value read from .env is reported like one from the environment."""
    (tmp_path / ".env").write_text("AGENT_DURABILITY=fast\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="AGENT_DURABILITY"):
        load_settings()


def _readme_config_table() -> dict[str, str]:
    """Map each variable of README's configuration table to its default column."""
    section = README.read_text(encoding="utf-8").split("## Configuration", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `?([^`|]*)`? \|", section, flags=re.MULTILINE)
    return dict(rows)


def test_every_setting_is_documented_in_the_readme():
    """Every Settings field has a description and a row in README's configuration table, and
    the table lists no variable that does not exist (datasette test_settings_are_documented)."""
    table = _readme_config_table()
    for name, field in Settings.model_fields.items():
        assert field.description, f"Settings.{name} has no description"
    missing = sorted(set(ALIASES.values()) - set(table))
    assert missing == [], f"settings missing from README's configuration table: {missing}"
    assert sorted(set(table) - set(ALIASES.values())) == []


def test_readme_defaults_match_the_code():
    """The default column of README's table shows each plain default the code declares."""
    table = _readme_config_table()
    for name, field in Settings.model_fields.items():
        default = field.default
        if ALIASES[name] not in table or not isinstance(default, int | float | str | Path):
            continue  # absence is the other test's failure; None/sets have no single spelling
        documented = table[ALIASES[name]]
        if isinstance(default, bool):  # before int: a bool is an int
            assert documented == str(default).lower(), name
        elif isinstance(default, int | float):
            assert float(documented) == default, name
        else:
            assert documented == str(default), name


def test_a_database_url_selects_postgres_and_hides_its_password(monkeypatch):
    """A PostgreSQL URL is taken; the URL and its password are secrets (never logged) and a
    malformed one is refused without echoing it; checkpoint files are then written only where
    AGENT_CHECKPOINT_DIR is set."""
    url = "postgresql://agent:s3cret-pass@db.internal:5432/memory"
    monkeypatch.setenv("AGENT_DATABASE_URL", url)
    settings = load_settings(env_file=None)
    assert settings.database_url is not None
    assert settings.database_url.get_secret_value() == url
    assert {url, "s3cret-pass"} <= set(settings.secrets)
    assert not settings.checkpoint_files
    monkeypatch.setenv("AGENT_CHECKPOINT_DIR", "/srv/checkpoints")
    assert load_settings(env_file=None).checkpoint_files
    monkeypatch.setenv("AGENT_DATABASE_URL", "postgres//agent:s3cret-pass@db")
    with pytest.raises(ConfigError) as caught:
        load_settings(env_file=None)
    assert "s3cret" not in str(caught.value)
    monkeypatch.delenv("AGENT_DATABASE_URL")
    assert load_settings(env_file=None).checkpoint_files  # SQLite: always files


def test_the_worker_id_is_host_and_pid_unless_set(monkeypatch):
    """``AGENT_WORKER_ID`` names the process among the bot's workers; unset, it is
    ``host:pid`` of the process reading the settings; empty, it is refused."""
    assert load_settings(env_file=None).worker_id == f"{socket.gethostname()}:{os.getpid()}"
    monkeypatch.setenv("AGENT_WORKER_ID", "web-3")
    assert load_settings(env_file=None).worker_id == "web-3"
    monkeypatch.setenv("AGENT_WORKER_ID", "")
    with pytest.raises(ConfigError, match="AGENT_WORKER_ID"):
        load_settings(env_file=None)
