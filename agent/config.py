"""The one Settings object: read from the environment and an optional ``.env`` file.

Every field has a description and an environment variable; the README's configuration table
lists them all (a test keeps the two in step). Build it once at the entry point with
:func:`load_settings` and pass it down: nothing reads the environment anywhere else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from agent.errors import ConfigError

__all__ = ["Settings", "load_settings"]


class Settings(BaseSettings):
    """The bot's configuration. Environment variable names are in each field's ``alias``."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        frozen=True,
    )

    db_path: Path = Field(
        default=Path("memory.db"),
        alias="AGENT_DB_PATH",
        description="SQLite database file: the turn log, the source of truth.",
    )
    checkpoint_dir: Path = Field(
        default=Path("checkpoints"),
        alias="AGENT_CHECKPOINT_DIR",
        description="Directory of the per-session <session_id>.json checkpoint files.",
    )
    durability: Literal["full", "process"] = Field(
        default="full",
        alias="AGENT_DURABILITY",
        description=(
            "full: fsync every commit and checkpoint (survives power loss); process: no fsync "
            "per turn (survives a crash of the process only)."
        ),
    )
    lock_timeout: float = Field(
        default=30.0,
        gt=0,
        alias="AGENT_DB_LOCK_TIMEOUT",
        description="Seconds a write retries while another process holds the database lock.",
    )
    summarize_every: int = Field(
        default=10,
        ge=1,
        alias="AGENT_SUMMARIZE_EVERY",
        description="Fold older turns into the rolling summary every this many turns.",
    )
    recent_turns: int = Field(
        default=3,
        ge=0,
        alias="AGENT_RECENT_TURNS",
        description="Latest turns the context packet carries verbatim.",
    )
    packet_token_budget: int = Field(
        default=2000,
        ge=100,
        alias="AGENT_PACKET_TOKEN_BUDGET",
        description="Most tokens (4 characters each) a context packet may hold.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO",
        alias="AGENT_LOG_LEVEL",
        description="Logging level of the bot.",
    )


def load_settings(env_file: str | Path | None = ".env") -> Settings:
    """Read the settings, turning validation errors into one readable :class:`ConfigError`.

    Args:
        env_file: a dotenv file to read besides the environment (``None``: none).

    Raises:
        ConfigError: a variable is malformed; the message names it and what it expects.
    """
    try:
        return Settings(_env_file=env_file)  # type: ignore[call-arg]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = str(error["loc"][0]) if error["loc"] else "settings"
            problems.append(f"{name}: {error['msg']}")
        raise ConfigError("invalid configuration: " + "; ".join(problems)) from exc
