"""The contracts of the memory lane (PRD-014 section 3.3), as pydantic v2 models.

Every model that is persisted or handed across a module boundary lives here. Value objects are
frozen; a new state is made with ``model_copy(update=...)``. JSON goes through :func:`dump_json`
and ``Model.model_validate_json`` only, so that every file and column has one spelling.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CHECKPOINT_SCHEMA_VERSION",
    "ChatType",
    "ConversationCheckpointSnapshot",
    "ConversationContextPacket",
    "ConversationSession",
    "ConversationTurn",
    "Fact",
    "InboundMessage",
    "JobRef",
    "JobStatus",
    "Memory",
    "MemoryCandidate",
    "MemoryKind",
    "MemoryStatus",
    "OpenLoop",
    "PendingClarification",
    "Reply",
    "ResponseType",
    "SessionState",
    "SessionStatus",
    "Topic",
    "TurnStatus",
    "dump_json",
    "utc_now",
]

#: Version of the checkpoint file format; a file of another version is rebuilt from the log.
CHECKPOINT_SCHEMA_VERSION = 1

SessionStatus = Literal["active", "paused", "resuming", "awaiting_clarification", "shutdown_clean"]
#: ``answered``: reply committed, not yet sent; ``delivered``: sent and its message id recorded;
#: ``recorded``: a message the bot keeps without answering (groups), nothing to deliver.
TurnStatus = Literal["answered", "delivered", "recorded"]
ResponseType = Literal["none", "text", "action"]
ChatType = Literal["private", "group", "supergroup", "channel", "console"]
JobStatus = Literal["scheduled", "done", "cancelled"]
MemoryKind = Literal["fact", "preference", "decision", "goal", "constraint", "entity"]
MemoryStatus = Literal["candidate", "active", "archived"]


def utc_now() -> datetime:
    """Return the current time, timezone-aware in UTC."""
    return datetime.now(UTC)


def dump_json(model: BaseModel, *, indent: bool = False) -> bytes:
    """Serialise a model the one way we do: orjson, sorted keys, optionally indented.

    Args:
        model: the model to serialise.
        indent: two-space indentation for files a person reads and diffs.

    Returns:
        UTF-8 JSON bytes.
    """
    option = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(model.model_dump(mode="json"), option=option)


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InboundMessage(_Value):
    """One user message as the lane receives it, whatever the transport.

    ``update_id`` (with ``bot_id``) is the idempotency key: a message with the same key is one
    turn however often it is delivered (invariant I3). The console and library callers may leave
    it unset, and then every call is a new turn.
    """

    chat_id: int
    text: str
    chat_type: ChatType = "private"
    user_id: int | None = None
    speaker: str | None = None
    chat_title: str | None = None
    update_id: int | None = None
    bot_id: int = 0
    message_id: int | None = None
    wants_reply: bool = True
    received_at: datetime = Field(default_factory=utc_now)


class JobRef(_Value):
    """A scheduled job (a reminder, a background task) the conversation refers to.

    A turn that carries a job ref with status ``scheduled`` adds it to the session's active
    jobs; a later turn carrying the same ``job_id`` as ``done`` or ``cancelled`` removes it.
    """

    job_id: str
    kind: str = "job"
    label: str = ""
    due_at: datetime | None = None
    status: JobStatus = "scheduled"


class Reply(_Value):
    """What the reply engine answers: the text plus what the lane records on the turn."""

    text: str | None = None
    intent: str | None = None
    action_name: str | None = None
    job_refs: tuple[JobRef, ...] = ()


class ConversationTurn(_Value):
    """One user message and the bot's answer to it: one row of the append-only turn log."""

    turn_id: str
    session_id: str
    seq: int = Field(ge=1, description="Position of the turn in its session, from 1.")
    user_text: str
    assistant_text: str | None = None
    intent: str | None = None
    action_name: str | None = None
    job_refs: tuple[JobRef, ...] = ()
    created_at: datetime
    status: TurnStatus = "answered"
    bot_id: int = 0
    update_id: int | None = None
    user_id: int | None = None
    speaker: str | None = None
    message_id: int | None = None
    reply_message_id: int | None = None
    delivered_at: datetime | None = None


class Fact(_Value):
    """Something the user told about themselves or their plans, e.g. ``name`` = ``Ada``.

    ``key`` is a stable slot (``name``, ``plan``, ``likes``...): a later fact with the same key
    replaces the earlier one; ``turn`` is the seq of the turn that stated it.
    """

    key: str
    value: str
    turn: int


class Memory(_Value):
    """A long-term memory of a chat: outlives its sessions (``/new``), not ``/forget``."""

    memory_id: str
    chat_id: int
    kind: MemoryKind
    key: str
    text: str
    confidence: float = Field(ge=0, le=1)
    importance: float = Field(ge=0, le=1)
    access_count: int = 1
    status: MemoryStatus = "candidate"
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime


class MemoryCandidate(_Value):
    """Something a turn said that may deserve long-term memory (see ``write_if_worthy``)."""

    kind: MemoryKind
    key: str
    text: str
    confidence: float = Field(ge=0, le=1)
    importance: float = Field(ge=0, le=1)


class Topic(_Value):
    """A subject of the conversation, weighted by how present it is."""

    name: str
    weight: float = 1.0
    last_turn: int = 0


class OpenLoop(_Value):
    """Something still to be done or answered: a request, a commitment, a to-do."""

    loop_id: str
    text: str
    kind: str = "todo"
    opened_turn: int
    closed_turn: int | None = None


class PendingClarification(_Value):
    """A question the bot asked that the user has not answered yet."""

    question: str
    asked_turn: int


class SessionState(_Value):
    """Everything the lane knows about a session between turns.

    All fields but ``status`` are a deterministic function of the session's turn log (I6);
    ``status`` records the lifecycle (resuming after a start, ``shutdown_clean`` after a stop).
    """

    session_id: str
    status: SessionStatus = "active"
    active_topics: tuple[Topic, ...] = ()
    pending_clarifications: tuple[PendingClarification, ...] = ()
    open_loops: tuple[OpenLoop, ...] = ()
    active_job_refs: tuple[JobRef, ...] = ()
    facts: tuple[Fact, ...] = ()
    rolling_summary: str = ""
    summary_buffer: tuple[str, ...] = Field(
        default=(),
        description="Compressed lines of the turns not yet folded into the rolling summary.",
    )
    last_summary_delta: str = ""
    last_intent: str | None = None
    last_response_type: ResponseType = "none"
    turn_count: int = 0

    def log_view(self) -> dict[str, object]:
        """Return the part of the state derived from the turn log (all but ``status``)."""
        return self.model_dump(mode="json", exclude={"status"})


class ConversationSession(_Value):
    """One row of ``conversation_sessions``: a session's identity, counters and state."""

    session_id: str
    chat_id: int
    chat_type: ChatType = "private"
    user_id: int | None = None
    title: str | None = None
    status: SessionStatus = "active"
    turn_count: int = 0
    last_seq: int = 0
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None
    state: SessionState


class ConversationContextPacket(_Value):
    """The curated context the reply engine gets instead of the raw transcript."""

    conversation_id: str
    session_status: SessionStatus
    recent_turns: tuple[ConversationTurn, ...] = ()
    recent_turn_summaries: tuple[str, ...] = ()
    rolling_session_summary: str = ""
    active_topics: tuple[Topic, ...] = ()
    active_job_refs: tuple[JobRef, ...] = ()
    pending_clarifications: tuple[PendingClarification, ...] = ()
    open_loops: tuple[OpenLoop, ...] = ()
    facts: tuple[Fact, ...] = ()
    memories: tuple[Memory, ...] = ()
    resolved_entities_map: dict[str, str] = Field(default_factory=dict)
    last_response_type: ResponseType = "none"
    turn_count: int = 0
    context_compiled_at: datetime
    token_estimate: int = 0


class ConversationCheckpointSnapshot(_Value):
    """The full restorable state of one session, written as ``<session_id>.json``.

    ``turn_count`` is the log position the snapshot reflects: a snapshot whose count is below
    the database's is behind and is rebuilt at startup (I5).
    """

    schema_version: int = CHECKPOINT_SCHEMA_VERSION
    session_id: str
    chat_id: int
    turn_count: int
    state: SessionState
    recent_turns: tuple[ConversationTurn, ...] = ()
    summary_delta: str = ""
    written_at: datetime
