"""The conversation memory lane (PRD-014): turn log, session state, checkpoints, packets.

Nothing in this package imports Telegram, HTTP clients or the scheduler: the adapter calls in,
never the other way round (DESIGN.md section 2).
"""

from agent.memory.conversation_checkpoint import (
    CheckpointWriter,
)
from agent.memory.conversation_context_builder import (
    ConversationContextBuilder,
    render_packet,
)
from agent.memory.conversation_state_manager import (
    ConversationStateManager,
    LoopUpdate,
    merge_facts,
    update_open_loops,
)
from agent.memory.conversation_store import (
    ConversationStore,
    SqliteConversationStore,
    match_query,
)
from agent.memory.conversation_summarizer import (
    ExtractiveSummarizer,
    Summarizer,
    SummaryFold,
)
from agent.memory.extraction import (
    Clause,
    Closer,
    ReminderRequest,
    clean_value,
    content_stems,
    extract_closers,
    extract_openers,
    is_reminder_request,
    match_loop,
    normalize_text,
    parse_reminder,
    split_clauses,
)
from agent.memory.fact_extraction import (
    extract_facts,
)
from agent.memory.inbound_journal import (
    InboundJournal,
    JournalEntry,
)
from agent.memory.lane import (
    ConversationLane,
    HydrationReport,
    ReplyEngine,
    TurnResult,
)
from agent.memory.memory_store import (
    MemoryStore,
    SqliteMemoryStore,
)
from agent.memory.schemas import (
    CHECKPOINT_SCHEMA_VERSION,
    ChatType,
    ConversationCheckpointSnapshot,
    ConversationContextPacket,
    ConversationSession,
    ConversationTurn,
    Fact,
    InboundMessage,
    JobRef,
    JobStatus,
    Memory,
    MemoryCandidate,
    MemoryKind,
    MemoryStatus,
    OpenLoop,
    PendingClarification,
    Reply,
    ResponseType,
    SessionState,
    SessionStatus,
    Topic,
    TurnStatus,
    dump_json,
    utc_now,
)
from agent.memory.writer import (
    PromotionPolicy,
    memory_candidates,
    write_conversation_turn,
    write_if_worthy,
)

__all__ = [
    "CHECKPOINT_SCHEMA_VERSION",
    "ChatType",
    "CheckpointWriter",
    "Clause",
    "Closer",
    "ConversationCheckpointSnapshot",
    "ConversationContextBuilder",
    "ConversationContextPacket",
    "ConversationLane",
    "ConversationSession",
    "ConversationStateManager",
    "ConversationStore",
    "ConversationTurn",
    "ExtractiveSummarizer",
    "Fact",
    "HydrationReport",
    "InboundJournal",
    "InboundMessage",
    "JobRef",
    "JobStatus",
    "JournalEntry",
    "LoopUpdate",
    "Memory",
    "MemoryCandidate",
    "MemoryKind",
    "MemoryStatus",
    "MemoryStore",
    "OpenLoop",
    "PendingClarification",
    "PromotionPolicy",
    "ReminderRequest",
    "Reply",
    "ReplyEngine",
    "ResponseType",
    "SessionState",
    "SessionStatus",
    "SqliteConversationStore",
    "SqliteMemoryStore",
    "Summarizer",
    "SummaryFold",
    "Topic",
    "TurnResult",
    "TurnStatus",
    "clean_value",
    "content_stems",
    "dump_json",
    "extract_closers",
    "extract_facts",
    "extract_openers",
    "is_reminder_request",
    "match_loop",
    "match_query",
    "memory_candidates",
    "merge_facts",
    "normalize_text",
    "parse_reminder",
    "render_packet",
    "split_clauses",
    "update_open_loops",
    "utc_now",
    "write_conversation_turn",
    "write_if_worthy",
]
