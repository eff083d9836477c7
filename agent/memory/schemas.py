"""The contracts of the memory lane (PRD-014 section 3.3), as pydantic v2 models.

Every model that is persisted or handed across a module boundary lives here. Value objects are
frozen; a new state is made with ``model_copy(update=...)``. JSON goes through :func:`dump_json`
and ``Model.model_validate_json`` only, so that every file and column has one spelling.

A group's deliberation lives in :mod:`agent.memory.group_schemas`, the long-term memory models
in :mod:`agent.memory.longterm.memory_schemas` (re-exported: the design puts them here).

Covered by ``tests/test_conversation_checkpoint.py`` (round trips, corrupt files) and others.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field

from agent.memory.group_schemas import Decision, Participant, Proposal
from agent.memory.job_schemas import JobRef, JobStatus, Repeat, RepeatEvery
from agent.memory.longterm.memory_schemas import (
    Memory,
    MemoryCandidate,
    MemoryKind,
    MemoryOrigin,
    MemoryRelation,
    MemoryRelationKind,
    MemoryStatus,
)
from agent.memory.schema_base import Value

__all__ = [
    "ARCHIVE_SCHEMA_VERSION",
    "CHECKPOINT_SCHEMA_VERSION",
    "ChatType",
    "CheckpointTurn",
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
    "MemoryOrigin",
    "MemoryRelation",
    "MemoryRelationKind",
    "MemoryStatus",
    "OpenLoop",
    "PendingClarification",
    "Repeat",
    "RepeatEvery",
    "Reply",
    "ResponseType",
    "RetrievedItem",
    "RetrievedKind",
    "SessionArchive",
    "SessionControl",
    "SessionControlKind",
    "SessionState",
    "SessionStatus",
    "SummarizerKind",
    "SummaryItem",
    "SummaryItemKind",
    "SummaryStatus",
    "SummaryVersion",
    "Topic",
    "TurnStatus",
    "dump_json",
    "utc_now",
]

#: Version of the checkpoint file format. Version 1 files are migrated when read
#: (:meth:`~agent.memory.conversation_checkpoint.CheckpointWriter.parse`); a file of an unknown
#: version is reported as such and rebuilt from the log.
CHECKPOINT_SCHEMA_VERSION = 2
#: Version of the session export format (``agent-memory export`` / ``import``).
ARCHIVE_SCHEMA_VERSION = 1

SessionStatus = Literal["active", "paused", "resuming", "awaiting_clarification", "shutdown_clean"]
#: ``answered``: reply committed, not yet sent; ``delivered``: sent and its message id recorded;
#: ``recorded``: a message the bot keeps without answering (groups), nothing to deliver.
TurnStatus = Literal["answered", "delivered", "recorded"]
#: ``clarification``: the bot asked the user a question it waits for (a pending clarification).
ResponseType = Literal["none", "text", "action", "clarification"]
ChatType = Literal["private", "group", "supergroup", "channel", "console"]
#: How a fact was said: plainly, hedged ("I think I like jazz"), or correcting ("no, May 14").
FactMode = Literal["stated", "hedged", "corrected"]
#: Where a retrieved item comes from: an older turn, a summary delta, a long-term memory.
RetrievedKind = Literal["turn", "summary", "memory"]
#: What a line of a summary records: a decision, a fact, an open question or a key sentence.
SummaryItemKind = Literal["decision", "fact", "question", "key"]
#: ``processing`` only while a model writes the summary (extractive ones are written whole).
SummaryStatus = Literal["processing", "completed", "failed"]
SummarizerKind = Literal["extractive", "llm"]
#: What a session command recorded on a turn did: carried the chat's open items, or cleared.
SessionControlKind = Literal["carry", "clear"]


def utc_now() -> datetime:
    """Return the current time, timezone-aware in UTC."""
    return datetime.now(UTC)


def dump_json(model: BaseModel | dict[str, Any], *, indent: bool = False) -> bytes:
    """Serialise a model the one way we do: orjson, sorted keys, optionally indented.

    Args:
        model: the model to serialise, or its ``model_dump(mode="json")`` already made.
        indent: two-space indentation for files a person reads and diffs.
    Returns:
        UTF-8 JSON bytes.
    """
    option = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    document = model if isinstance(model, dict) else model.model_dump(mode="json")
    return orjson.dumps(document, option=option)


class InboundMessage(Value):
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


class OpenLoop(Value):
    """Something still to be done or answered: a request, a commitment, a to-do.

    ``kind`` is ``todo`` ("remind me to X"), ``commitment`` ("I'll send you the report"),
    ``request`` ("can you check X?", not handled by the bot) or ``question`` (a user question
    the bot could not answer). ``owner`` is who opened it, in group chats (``None`` in private
    ones); ``closed_turn`` is the seq of the turn that closed it.
    """

    loop_id: str
    text: str
    kind: str = "todo"
    opened_turn: int
    closed_turn: int | None = None
    owner: str | None = None


class SessionControl(Value):
    """A session command (``/new``, ``/resume``, ``/clear``) as a bot-side turn records it.

    The state fold reads it like the rest of the turn (I6), so a session's state stays a
    function of its own log:

    - ``carry``: the chat's open to-dos and commitments (``loops``, as they stood in session
      ``carried_from``) and its scheduled reminders (the turn's ``job_refs``) become the
      session's, in place of those it had (``/new`` into a fresh session; ``/resume`` into an
      earlier one, whose own may be stale);
    - ``clear``: the turns so far leave the context packet (they stay in the log and ``/recall``
      finds them); the open to-dos, commitments and reminders stay.
    """

    kind: SessionControlKind
    carried_from: str | None = None
    loops: tuple[OpenLoop, ...] = ()


class Reply(Value):
    """What the reply engine answers: the text plus what the lane records on the turn.

    ``forget_memories``: ids of long-term memories to forget ("forget that my sister lives in
    Porto"), erased in the turn's transaction; ``erase_turns``: seqs of the session's turns whose
    text goes everywhere before the reply is recorded ("forget my locker code", then "yes")."""

    text: str | None = None
    intent: str | None = None
    action_name: str | None = None
    job_refs: tuple[JobRef, ...] = ()
    forget_memories: tuple[str, ...] = ()
    erase_turns: tuple[int, ...] = ()


class ConversationTurn(Value):
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
    control: SessionControl | None = None


class Fact(Value):
    """Something the user told about themselves or someone in their life: ``name`` = ``Ada``.

    ``key`` says what it is about (:mod:`agent.memory.longterm.memory_slots`: ``name``, ``plan:a
    trip to lisbon``, ``sister Mia/location``): a later fact with the same key replaces the earlier
    one; ``turn`` is the seq of the turn that stated it; ``mode`` how it was said; ``speaker`` the
    group member who said it, about themselves (``None`` in a private chat: the user).
    """

    key: str
    value: str
    turn: int
    mode: FactMode = "stated"
    speaker: str | None = None


class Topic(Value):
    """A subject of the conversation, weighted by how present it is."""

    name: str
    weight: float = 1.0
    last_turn: int = 0


class PendingClarification(Value):
    """A question the bot asked that the user has not answered yet."""

    question: str
    asked_turn: int
    asked_of: str | None = Field(
        default=None, description="The group member asked (None: whoever speaks next answers)."
    )


class SummaryItem(Value):
    """One thing a turn said that may go into the summary (see ``ExtractiveSummarizer``).

    ``who`` is the speaker (``user`` when unnamed); ``text`` is one line, already capped.
    """

    seq: int
    kind: SummaryItemKind
    who: str
    text: str


class SessionState(Value):
    """Everything the lane knows about a session between turns.

    All fields but ``status`` are a deterministic function of the session's turn log (I6)
    and of ``chat_type``, which is fixed when the session opens;
    ``status`` records the lifecycle (resuming after a start, ``shutdown_clean`` after a stop).
    """

    session_id: str
    status: SessionStatus = "active"
    chat_type: ChatType = Field(
        default="private", description="The chat's type; group rules run in groups only."
    )
    active_topics: tuple[Topic, ...] = ()
    pending_clarifications: tuple[PendingClarification, ...] = ()
    open_loops: tuple[OpenLoop, ...] = ()
    closed_loops: tuple[OpenLoop, ...] = Field(
        default=(), description="The latest loops closed (closed_turn set), kept for audit."
    )
    active_job_refs: tuple[JobRef, ...] = ()
    resolved_entities: dict[str, str] = Field(
        default_factory=dict,
        description='What "it", "that task", "the reminder"... refer to: a job, loop,'
        " proposal or decision id, or topic:<name>.",
    )
    participants: tuple[Participant, ...] = ()
    proposals: tuple[Proposal, ...] = ()
    decisions: tuple[Decision, ...] = ()
    facts: tuple[Fact, ...] = ()
    rolling_summary: str = ""
    summary_buffer: tuple[str, ...] = Field(
        default=(),
        description=(
            "One line per turn not yet folded into the rolling summary (its first sentence and"
            " its answer's): the packet's compressed turns. Not derivable from summary_items."
        ),
    )
    last_summary_delta: str = ""
    summary_items: tuple[SummaryItem, ...] = Field(
        default=(),
        description=(
            "What the turns not yet folded said that the next summary delta may keep"
            " (decisions, facts, open questions, key sentences, any sentence of a turn): not"
            " derivable from summary_buffer."
        ),
    )
    summary_version: int = Field(
        default=0, description="Folds so far: the version of the rolling summary in the chain."
    )
    summarized_through: int = Field(
        default=0, description="The seq of the last turn the rolling summary covers."
    )
    last_intent: str | None = None
    last_response_type: ResponseType = "none"
    turn_count: int = 0
    cleared_through: int = Field(
        default=0, description="The seq of the last /clear: turns up to it leave the packet."
    )

    def log_view(self) -> dict[str, object]:
        """Return the part of the state derived from the turn log (all but ``status``)."""
        return self.model_dump(mode="json", exclude={"status"})


class SummaryVersion(Value):
    """One row of the summary version chain (``conversation_summaries``, seed 004).

    An ``extractive`` version is written with the turn whose fold made it: its ``text`` is the
    session's rolling summary after that turn. An ``llm`` version is a model's rewrite of the
    extractive version ``parent_summary_id`` (same ``version`` and range), made in the
    background; it never changes the session state (I6).
    """

    summary_id: int
    session_id: str
    version: int
    from_seq: int
    to_seq: int
    parent_summary_id: int | None = None
    summarizer: SummarizerKind = "extractive"
    status: SummaryStatus = "completed"
    text: str = ""
    delta: str = ""
    error: str | None = None
    generation_ms: int | None = None
    created_at: datetime
    completed_at: datetime | None = None


class ConversationSession(Value):
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


class RetrievedItem(Value):
    """One candidate the retriever chose for a packet: an older turn, a summary, a memory.

    ``text`` is the item exactly as the packet renders it (its token estimate is what the item
    costs the budget); ``ref`` names its source (``turn:<seq>``, ``summary:<id>``, a memory id);
    ``seq`` is the turn's seq, or the last turn a summary covers (``None`` for memories);
    ``score`` the weighted score it was ranked by (0-1)."""

    kind: RetrievedKind
    ref: str
    text: str
    seq: int | None = None
    score: float = 0.0


class ConversationContextPacket(Value):
    """The curated context the reply engine gets instead of the raw transcript."""

    conversation_id: str
    session_status: SessionStatus
    recent_turns: tuple[ConversationTurn, ...] = ()
    recent_turn_summaries: tuple[str, ...] = ()
    rolling_session_summary: str = ""
    llm_session_summary: str = Field(
        default="",
        description=(
            "A model-written alternative to rolling_session_summary (the latest completed LLM"
            " summary version), when the optional LLM summarizer made one; not session state."
        ),
    )
    active_topics: tuple[Topic, ...] = ()
    active_job_refs: tuple[JobRef, ...] = ()
    pending_clarifications: tuple[PendingClarification, ...] = ()
    open_loops: tuple[OpenLoop, ...] = ()
    facts: tuple[Fact, ...] = ()
    memories: tuple[Memory, ...] = ()
    retrieved: tuple[RetrievedItem, ...] = Field(
        default=(),
        description="Older turns, summaries and memories relevant to the new message, best first.",
    )
    resolved_entities_map: dict[str, str] = Field(default_factory=dict)
    participants: tuple[Participant, ...] = ()
    proposals: tuple[Proposal, ...] = ()
    decisions: tuple[Decision, ...] = ()
    member: Participant | None = Field(None, description="The group member writing now.")
    last_response_type: ResponseType = "none"
    turn_count: int = 0
    context_compiled_at: datetime
    token_estimate: int = 0


class CheckpointTurn(Value):
    """A turn as a checkpoint file holds it: what was said, not whether the reply reached Telegram.

    The file is written when the turn is committed, before the reply is sent; the delivery
    (status, reply message id, time) is recorded in the database afterwards. The file leaves
    it out, so it never claims a delivery state the database does not have.
    """

    turn_id: str
    session_id: str
    seq: int = Field(ge=1)
    user_text: str
    assistant_text: str | None = None
    intent: str | None = None
    action_name: str | None = None
    job_refs: tuple[JobRef, ...] = ()
    created_at: datetime
    bot_id: int = 0
    update_id: int | None = None
    user_id: int | None = None
    speaker: str | None = None
    message_id: int | None = None
    control: SessionControl | None = None

    @classmethod
    def of(cls, turn: ConversationTurn) -> CheckpointTurn:
        """Return ``turn`` without the fields its delivery sets (step 3, after the file)."""
        return cls(**{name: getattr(turn, name) for name in cls.model_fields})  # no dump


class ConversationCheckpointSnapshot(Value):
    """The full restorable state of one session, written as ``<session_id>.json``.

    Each thing is said once: the log position the snapshot reflects is ``state.turn_count``
    (:attr:`turn_count`; a snapshot below the database's is behind and is rebuilt at startup,
    I5), the last fold's delta is ``state.last_summary_delta``, and ``pending_summary_delta``
    is what a fold of the turns not yet summarised would add (written at a clean shutdown,
    empty otherwise; it is not state, I6). ``recent_turns`` carry no delivery state (see
    :class:`CheckpointTurn`).
    """

    schema_version: int = CHECKPOINT_SCHEMA_VERSION
    session_id: str
    chat_id: int
    state: SessionState
    recent_turns: tuple[CheckpointTurn, ...] = ()
    pending_summary_delta: str = ""
    written_at: datetime

    @property
    def turn_count(self) -> int:
        """The turn of the log the snapshot reflects (the state's turn count)."""
        return self.state.turn_count


class SessionArchive(Value):
    """One session exported whole: its row and every turn of its log, oldest first.

    What ``agent-memory export`` writes and ``agent-memory import`` reads back. The turns are
    the source of truth: an import folds them into the state again (I6) and keeps ``session``
    for its identity, times and status; its ``state`` tells whether the fold came out equal.
    """

    schema_version: int = ARCHIVE_SCHEMA_VERSION
    session: ConversationSession
    turns: tuple[ConversationTurn, ...]
    exported_at: datetime
