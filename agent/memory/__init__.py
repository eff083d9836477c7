"""The conversation memory (PRD-014): the lane, its read door, and the models they speak in.

Other folders use the memory through these names only: :class:`ConversationLane` (the write
path and lifecycle), :class:`MemoryInspector` (reads, checks and repairs), the
:class:`ReplyEngine` protocol the engines implement, the models a turn and a packet are made of,
what the lane's methods return, and the two renderings commands and engines share
(:func:`render_packet`, :func:`describe_memory`). Everything else is imported from its module.

Nothing in this package imports Telegram, HTTP clients or the scheduler: the adapter calls in,
never the other way round (DESIGN.md section 2).
"""

from agent.memory.conversation_checkpoint import CheckpointWriter
from agent.memory.conversation_context_builder import render_packet
from agent.memory.inspector import ChatSession, MemoryInspector, SaveReport
from agent.memory.lane import ConversationLane
from agent.memory.lane_parts.hydration import HydrationReport
from agent.memory.lane_parts.session_lifecycle import SessionSwitch
from agent.memory.lane_parts.turn_commit import TurnResult
from agent.memory.lane_parts.turn_edits import EditOutcome
from agent.memory.longterm.memory_slots import describe_memory
from agent.memory.ops.checkpoint_audit import CheckpointCheck
from agent.memory.reply_engine import ReplyEngine
from agent.memory.schemas import (
    ConversationContextPacket,
    ConversationSession,
    ConversationTurn,
    InboundMessage,
    JobRef,
    Memory,
    OpenLoop,
    Reply,
    RetrievedItem,
    SessionArchive,
    SessionState,
)

__all__ = [
    "ChatSession",
    "CheckpointCheck",
    "CheckpointWriter",
    "ConversationContextPacket",
    "ConversationLane",
    "ConversationSession",
    "ConversationTurn",
    "EditOutcome",
    "HydrationReport",
    "InboundMessage",
    "JobRef",
    "Memory",
    "MemoryInspector",
    "OpenLoop",
    "Reply",
    "ReplyEngine",
    "RetrievedItem",
    "SaveReport",
    "SessionArchive",
    "SessionState",
    "SessionSwitch",
    "TurnResult",
    "describe_memory",
    "render_packet",
]
