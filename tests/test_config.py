"""Tests of agent/config.py: defaults, the environment, .env files, errors and the README."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
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


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        (
            "AGENT_POLL_TIMEOUT", "99",
            "AGENT_POLL_TIMEOUT: 99 is too large, set a whole number from 0 to 50 in the "
            "environment or .env (default 30)",
        ),
        (
            "AGENT_RECENT_TURNS", "-2",
            "AGENT_RECENT_TURNS: -2 is too small, set a whole number (at least 0) in the "
            "environment or .env (default 3)",
        ),
        (
            "AGENT_DB_LOCK_TIMEOUT", "soon",
            "AGENT_DB_LOCK_TIMEOUT: soon is not valid, set a number (above 0) in the "
            "environment or .env (default 30)",
        ),
        (
            "AGENT_TELEGRAM_BACKOFF", "45",
            "AGENT_TELEGRAM_BACKOFF: 45 is too large, set a number (above 0, at most 30) in the "
            "environment or .env (default 1)",
        ),
        (
            "AGENT_LOG_LEVEL", "very loud",
            "AGENT_LOG_LEVEL: 'very loud' is not valid, set DEBUG, INFO, WARNING or ERROR in "
            "the environment or .env (default INFO)",
        ),
        (
            "AGENT_LLM_SUMMARIZER", "maybe",
            "AGENT_LLM_SUMMARIZER: maybe is not valid, set true or false in the environment or "
            ".env (default false)",
        ),
        (
            "AGENT_WORKER_ID", "",
            "AGENT_WORKER_ID: empty is too short, set text of 1 to 200 characters in the "
            "environment or .env, or unset it for the default",
        ),
        (
            "AGENT_ALLOWED_USER_IDS", "42, @ada",
            "AGENT_ALLOWED_USER_IDS: '@ada' is not a user id, set comma-separated numeric "
            "Telegram user ids (empty: everyone)",
        ),
        (
            "TELEGRAM_BASE_URL", "not-a-url",
            "TELEGRAM_BASE_URL: 'not-a-url' is not an http:// or https:// URL, set the full "
            "URL with its host",
        ),
        (
            "AGENT_LLM_BASE_URL", "localhost:11434/v1",
            "AGENT_LLM_BASE_URL: 'localhost:11434/v1' is not an http:// or https:// URL, set "
            "the full URL with its host",
        ),
        (
            "AGENT_DB_PATH", "",
            "AGENT_DB_PATH: the value is empty, set a path (or unset it for the default)",
        ),
        (
            "TELEGRAM_BOT_TOKEN", "123:hunter2",
            "TELEGRAM_BOT_TOKEN: the value is not a bot token, set the token @BotFather gave "
            "you (123456789:AA...)",
        ),
    ],
)  # fmt: skip
def test_a_config_error_is_one_line_in_our_words(monkeypatch, variable, value, line):
    """Every config error is one line: the setting, what is wrong (the value, unless it is a
    secret) and what to set, in our words, never pydantic's ("Input should be", "Value
    error,")."""
    monkeypatch.setenv(variable, value)

    with pytest.raises(ConfigError) as caught:
        load_settings(env_file=None)

    assert str(caught.value) == f"invalid configuration: {line}"
    assert "hunter2" not in str(caught.value)


def test_several_config_errors_share_the_one_line(monkeypatch):
    """Two bad settings: one line naming both, each with its fix."""
    monkeypatch.setenv("AGENT_DURABILITY", "fast")
    monkeypatch.setenv("AGENT_SUMMARIZE_EVERY", "0")

    with pytest.raises(ConfigError) as caught:
        load_settings(env_file=None)

    assert str(caught.value) == (
        "invalid configuration: AGENT_DURABILITY: fast is not valid, set full or process in "
        "the environment or .env (default full); AGENT_SUMMARIZE_EVERY: 0 is too small, set a "
        "whole number (at least 1) in the environment or .env (default 10)"
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("TELEGRAM_BASE_URL", "not-a-url"),
        ("TELEGRAM_BASE_URL", "ftp://api.telegram.org/bot"),
        ("TELEGRAM_BASE_URL", "http://"),
        ("TELEGRAM_BASE_FILE_URL", "api.telegram.org/file/bot"),
        ("AGENT_POLL_TIMEOUT", "forever"),
    ],
)
def test_the_bot_exits_2_with_one_line_on_a_setting_that_cannot_work(tmp_path, variable, value):
    """``run_bot.py`` with a setting that can never work (a Bot API URL that is no URL) stops
    at once with exit code 2 and one line on stderr naming the setting, instead of retrying
    forever; nothing is created."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "TELEGRAM_"))}
    env |= {"TELEGRAM_BOT_TOKEN": "123456:AAHfakeSecretT0ken_for-config-tests", variable: value}
    run = subprocess.run(
        [sys.executable, str(README.parent / "run_bot.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"error: invalid configuration: {variable}: ")
    assert "Input should" not in lines[0]
    assert "fakeSecret" not in run.stderr
    assert list(tmp_path.iterdir()) == []
