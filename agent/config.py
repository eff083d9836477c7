"""The one Settings object: read from the environment and an optional ``.env`` file.

Every field has a description and an environment variable; the README's configuration table
lists them all (a test keeps the two in step). Build it once at the entry point with
:func:`load_settings` and pass it down: nothing reads the environment anywhere else.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from agent.config_problems import describe_problems
from agent.errors import ConfigError

__all__ = ["TELEGRAM_MAX_BACKOFF", "Settings", "default_worker_id", "load_settings"]

#: The longest wait, in seconds, between two attempts of a Bot API call failing with a server
#: or network error (polling and sending).
TELEGRAM_MAX_BACKOFF = 30.0


def default_worker_id() -> str:
    """Return ``host:pid``: this process's name among the bot's workers when none is set."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Settings(BaseSettings):
    """The bot's configuration. Environment variable names are in each field's ``alias``."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        frozen=True,
    )

    telegram_bot_token: SecretStr | None = Field(
        default=None,
        alias="TELEGRAM_BOT_TOKEN",
        description="The bot token from @BotFather (123456:ABC...). Not needed for --console.",
    )
    telegram_base_url: str = Field(
        default="https://api.telegram.org/bot",
        alias="TELEGRAM_BASE_URL",
        description="Bot API base URL; e.g. http://127.0.0.1:8081/bot for a local Bot API server.",
    )
    telegram_base_file_url: str = Field(
        default="https://api.telegram.org/file/bot",
        alias="TELEGRAM_BASE_FILE_URL",
        description="Bot API base URL for file downloads.",
    )
    allowed_user_ids: Annotated[frozenset[int], NoDecode] = Field(
        default=frozenset(),
        alias="AGENT_ALLOWED_USER_IDS",
        description="Comma-separated Telegram user ids allowed to talk to the bot; empty: all.",
    )
    poll_timeout: int = Field(
        default=30,
        ge=0,
        le=50,
        alias="AGENT_POLL_TIMEOUT",
        description="Seconds each getUpdates long poll waits for news (polling mode; 0: no wait).",
    )
    telegram_timeout: float = Field(
        default=5.0,
        gt=0,
        alias="AGENT_TELEGRAM_TIMEOUT",
        description=(
            "Seconds a Bot API request may take to connect, send and answer (a long poll gets "
            "this on top of its wait) before it counts as failed and is retried."
        ),
    )
    telegram_backoff: float = Field(
        default=1.0,
        gt=0,
        le=TELEGRAM_MAX_BACKOFF,
        alias="AGENT_TELEGRAM_BACKOFF",
        description=(
            "Seconds before the first retry of a Bot API call that failed with a server or "
            "network error; doubled after each failure, up to 30."
        ),
    )
    redeliver_interval: float = Field(
        default=60.0,
        gt=0,
        alias="AGENT_REDELIVER_INTERVAL",
        description=(
            "Seconds between passes that resend the replies Telegram did not take (at least "
            "this old), one attempt each, until it takes them."
        ),
    )
    max_concurrent_chats: int = Field(
        default=256,
        ge=1,
        alias="AGENT_MAX_CONCURRENT_CHATS",
        description=(
            "Chats whose messages are handled at the same moment; past this, the chats with "
            "messages waiting take turns, one message each."
        ),
    )
    webhook_url: str | None = Field(
        default=None,
        alias="AGENT_WEBHOOK_URL",
        description="Public HTTPS URL of the webhook; set it to use webhook mode, not polling.",
    )
    webhook_listen: str = Field(
        default="127.0.0.1",
        alias="AGENT_WEBHOOK_LISTEN",
        description="Address the webhook server listens on.",
    )
    webhook_port: int = Field(
        default=8443,
        ge=1,
        le=65535,
        alias="AGENT_WEBHOOK_PORT",
        description="Port the webhook server listens on.",
    )
    webhook_secret: SecretStr | None = Field(
        default=None,
        alias="AGENT_WEBHOOK_SECRET",
        description="Secret Telegram sends with each webhook request (1-256 of A-Z a-z 0-9 _ -).",
    )
    llm_base_url: str | None = Field(
        default=None,
        alias="AGENT_LLM_BASE_URL",
        description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1; unset: offline.",
    )
    llm_api_key: SecretStr | None = Field(
        default=None,
        alias="AGENT_LLM_API_KEY",
        description="API key of the LLM endpoint, if it needs one.",
    )
    llm_model: str | None = Field(
        default=None,
        alias="AGENT_LLM_MODEL",
        description="Model name sent to the LLM endpoint; unset: offline concierge.",
    )
    llm_timeout: float = Field(
        default=20.0,
        gt=0,
        alias="AGENT_LLM_TIMEOUT",
        description="Seconds per LLM request before retrying, then falling back to offline.",
    )
    database_url: SecretStr | None = Field(
        default=None,
        alias="AGENT_DATABASE_URL",
        description=(
            "postgresql://user:password@host:port/dbname selects PostgreSQL (the `postgres` "
            "extra) for several bot processes; unset: SQLite at AGENT_DB_PATH."
        ),
    )
    db_path: Path = Field(
        default=Path("memory.db"),
        alias="AGENT_DB_PATH",
        description="SQLite database file: the turn log, the source of truth.",
    )
    checkpoint_dir: Path = Field(
        default=Path("checkpoints"),
        alias="AGENT_CHECKPOINT_DIR",
        description=(
            "Directory of the per-session <session_id>.json checkpoint files. With PostgreSQL "
            "checkpoints are database rows, mirrored into files only where this is set."
        ),
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
    heal_interval: float = Field(
        default=30.0,
        gt=0,
        alias="AGENT_HEAL_INTERVAL",
        description=(
            "Seconds between retries of what a disk fault left undone: checkpoint files not "
            "written, and messages, replies and reminders not recorded while the database "
            "refused writes."
        ),
    )
    resident_sessions: int = Field(
        default=256,
        ge=1,
        alias="AGENT_RESIDENT_SESSIONS",
        description=(
            "Sessions held as objects in memory, the most recently active; up to 16 times as "
            "many others are held as compact JSON (a few KB instead of ~20 KB), and the rest "
            "are read again from the database when their chat talks."
        ),
    )
    summarize_every: int = Field(
        default=10,
        ge=1,
        alias="AGENT_SUMMARIZE_EVERY",
        description="Fold older turns into the rolling summary every this many turns.",
    )
    summary_max_chars: int = Field(
        default=2000,
        ge=200,
        alias="AGENT_SUMMARY_MAX_CHARS",
        description="Most characters a session's rolling summary holds; older parts compress.",
    )
    summary_retention: int = Field(
        default=100,
        ge=0,
        alias="AGENT_SUMMARY_RETENTION",
        description="Summary versions kept per session in the version chain; 0 keeps them all.",
    )
    llm_summarizer: bool = Field(
        default=False,
        alias="AGENT_LLM_SUMMARIZER",
        description=(
            "Also summarise with the LLM endpoint, in the background; the extractive summary "
            "stays the session state's and the fall-back."
        ),
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
        description=(
            "Most tokens (4 characters each) of the context packet as the reply engine"
            " receives it (its rendered text)."
        ),
    )
    embedding_model: str | None = Field(
        default=None,
        alias="AGENT_EMBEDDING_MODEL",
        description=(
            "A sentence-transformers model (hub name or folder) for semantic retrieval, fused"
            " with BM25; needs the `semantic` extra. Unset: BM25 alone."
        ),
    )
    embedding_wait_ms: float = Field(
        default=0.0,
        ge=0,
        alias="AGENT_EMBEDDING_WAIT_MS",
        description=(
            "How long a reply's retrieval waits, after its lexical searches, for the message's"
            " vector (semantic retrieval). 0: never; a vector not encoded by then is left out"
            " and the semantic search goes from the best lexical hits' vectors alone, so the"
            " extra adds nothing to a reply's latency."
        ),
    )
    retrieval_weight_message: float = Field(
        default=1.0,
        ge=0,
        alias="AGENT_RETRIEVAL_WEIGHT_MESSAGE",
        description="Retrieval score weight of BM25 relevance to the new message.",
    )
    retrieval_weight_topics: float = Field(
        default=0.1,
        ge=0,
        alias="AGENT_RETRIEVAL_WEIGHT_TOPICS",
        description=(
            "Retrieval score weight of BM25 relevance to the active topics (memories always; "
            "the session's turns and summaries when no word of the message is in a turn)."
        ),
    )
    retrieval_weight_recency: float = Field(
        default=0.0,
        ge=0,
        alias="AGENT_RETRIEVAL_WEIGHT_RECENCY",
        description="Retrieval score weight of recency (turns back; a memory's decay).",
    )
    retrieval_weight_importance: float = Field(
        default=0.1,
        ge=0,
        alias="AGENT_RETRIEVAL_WEIGHT_IMPORTANCE",
        description="Retrieval score weight of importance (a memory's, or a turn's prior).",
    )
    retrieval_weight_open_loop: float = Field(
        default=0.1,
        ge=0,
        alias="AGENT_RETRIEVAL_WEIGHT_OPEN_LOOP",
        description="Retrieval score weight of opening a loop or question still open.",
    )
    retrieval_recency_half_life: float = Field(
        default=200.0,
        gt=0,
        alias="AGENT_RETRIEVAL_RECENCY_HALF_LIFE",
        description="Turns back after which an older turn's recency score halves.",
    )
    retrieval_candidates: int = Field(
        default=40,
        ge=1,
        le=400,
        alias="AGENT_RETRIEVAL_CANDIDATES",
        description="Fewest candidates each full-text index returns per query (big budgets: more).",
    )
    retrieval_min_score: float = Field(
        default=0.0,
        ge=0,
        le=1,
        alias="AGENT_RETRIEVAL_MIN_SCORE",
        description="Retrieved items scoring below this (0-1) stay out of the packet.",
    )
    memory_half_life_days: float = Field(
        default=30.0,
        gt=0,
        alias="AGENT_MEMORY_HALF_LIFE_DAYS",
        description="Days without use after which a long-term memory's decay factor halves.",
    )
    memory_archive_below: float = Field(
        default=0.3,
        ge=0,
        le=1,
        alias="AGENT_MEMORY_ARCHIVE_BELOW",
        description="Consolidation archives memories whose importance * decay falls below this.",
    )
    memory_archive_after_days: float = Field(
        default=30.0,
        ge=0,
        alias="AGENT_MEMORY_ARCHIVE_AFTER_DAYS",
        description="Memories younger than this many days are never archived.",
    )
    memory_consolidate_hours: float = Field(
        default=6.0,
        gt=0,
        alias="AGENT_MEMORY_CONSOLIDATE_HOURS",
        description="Hours between memory consolidation runs (decay, archive, merge).",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO",
        alias="AGENT_LOG_LEVEL",
        description="Logging level of the bot.",
    )
    worker_id: str = Field(
        default_factory=default_worker_id,
        min_length=1,
        max_length=200,
        alias="AGENT_WORKER_ID",
        description="This process's name among the bot's workers, on every log line "
        "(default: host:pid).",
    )

    @field_validator("allowed_user_ids", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> object:
        if isinstance(value, str):
            parts = [part for part in re.split(r"[,\s]+", value.strip()) if part]
            for part in parts:
                if not part.lstrip("-").isdecimal():
                    raise ValueError(
                        f"{part[:20]!r} is not a user id, set comma-separated numeric Telegram "
                        "user ids (empty: everyone)"
                    )
            return frozenset(int(part) for part in parts)
        return value

    @field_validator("telegram_base_url", "telegram_base_file_url", "llm_base_url", "webhook_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            shown = value if len(value) <= 60 else value[:59] + "…"
            raise ValueError(
                f"{shown!r} is not an http:// or https:// URL, set the full URL with its host"
            )
        return value

    @field_validator("db_path", "checkpoint_dir")
    @classmethod
    def _check_path(cls, value: Path) -> Path:
        if not str(value).strip() or str(value) == ".":
            raise ValueError("the value is empty, set a path (or unset it for the default)")
        if not value.name:
            raise ValueError(f"{str(value)!r} names no file or directory, set a path that does")
        return value

    @field_validator("telegram_bot_token")
    @classmethod
    def _check_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not _TOKEN.match(value.get_secret_value()):
            # The message must not echo the value: it is a secret.
            raise ValueError(
                "the value is not a bot token, set the token @BotFather gave you (123456789:AA...)"
            )
        return value

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value():
            return None
        if not _DATABASE_URL.match(value.get_secret_value()):
            # The message must not echo the value: it holds a password.
            raise ValueError(
                "the value is not a PostgreSQL URL, set "
                "postgresql://user:password@host:port/dbname (or unset it to keep the SQLite file)"
            )
        return value

    @property
    def checkpoint_files(self) -> bool:
        """Whether checkpoints are written as files (always on SQLite; on PostgreSQL only
        where ``AGENT_CHECKPOINT_DIR`` is set)."""
        return self.database_url is None or "checkpoint_dir" in self.model_fields_set

    @field_validator("webhook_secret")
    @classmethod
    def _check_webhook_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not _WEBHOOK_SECRET.match(value.get_secret_value()):
            raise ValueError(
                "the value is not valid, set 1-256 characters of A-Z, a-z, 0-9, _ and -"
            )
        return value

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret value set, for log redaction (the token's secret half too)."""
        values = (self.telegram_bot_token, self.webhook_secret, self.llm_api_key)
        found = [v.get_secret_value() for v in values if v is not None]
        if self.database_url is not None:
            url = self.database_url.get_secret_value()
            found.append(url)
            # The password alone too, unless it is so short that hiding it would garble every
            # log line that happens to contain it (a password that short is the weak spot).
            password = urlsplit(url).password
            if password is not None and len(password) >= _SHORTEST_REDACTED:
                found.append(password)
        if self.telegram_bot_token is not None:
            # A URL may carry the token percent-encoded ("123%3AAAH..."): its half after the
            # colon is the secret part, and alone still in the clear.
            found.append(self.telegram_bot_token.get_secret_value().partition(":")[2])
        return tuple(found)


_SHORTEST_REDACTED = 8
_DATABASE_URL = re.compile(r"\A(postgresql|postgres)://\S+\Z")
_WEBHOOK_SECRET = re.compile(r"\A[A-Za-z0-9_-]{1,256}\Z")
_TOKEN = re.compile(r"\A\d{3,20}:[A-Za-z0-9_-]{20,}\Z")


def load_settings(env_file: str | Path | None = ".env") -> Settings:
    """Read the settings, turning validation errors into one readable :class:`ConfigError`.

    Args:
        env_file: a dotenv file to read besides the environment (``None``: none).

    Raises:
        ConfigError: a variable is malformed; one line names it, what is wrong and what to
            set (never the value of a secret).
    """
    try:
        return Settings(_env_file=env_file)  # type: ignore[call-arg]
    except ValidationError as exc:
        raise ConfigError("invalid configuration: " + describe_problems(exc, Settings)) from exc
