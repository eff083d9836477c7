"""The conversation memory lane (PRD-014): turn log, session state, checkpoints, packets.

Nothing in this package imports Telegram, HTTP clients or the scheduler: the adapter calls in,
never the other way round (DESIGN.md section 2).
"""

from agent.memory.conversation_checkpoint import CheckpointWriter
from agent.memory.conversation_context_builder import ConversationContextBuilder, render_packet
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_store import ConversationStore, SqliteConversationStore
from agent.memory.conversation_summarizer import ExtractiveSummarizer, Summarizer, SummaryFold
from agent.memory.lane import ConversationLane, HydrationReport, ReplyEngine, TurnResult
from agent.memory.schemas import (
    CHECKPOINT_SCHEMA_VERSION,
    ConversationCheckpointSnapshot,
    ConversationContextPacket,
    ConversationSession,
    ConversationTurn,
    InboundMessage,
    JobRef,
    OpenLoop,
    PendingClarification,
    Reply,
    SessionState,
    Topic,
)
from agent.memory.writer import write_conversation_turn

__all__ = [
    "CHECKPOINT_SCHEMA_VERSION",
    "CheckpointWriter",
    "ConversationCheckpointSnapshot",
    "ConversationContextBuilder",
    "ConversationContextPacket",
    "ConversationLane",
    "ConversationSession",
    "ConversationStateManager",
    "ConversationStore",
    "ConversationTurn",
    "ExtractiveSummarizer",
    "HydrationReport",
    "InboundMessage",
    "JobRef",
    "OpenLoop",
    "PendingClarification",
    "Reply",
    "ReplyEngine",
    "SessionState",
    "SqliteConversationStore",
    "Summarizer",
    "SummaryFold",
    "Topic",
    "TurnResult",
    "render_packet",
    "write_conversation_turn",
]
