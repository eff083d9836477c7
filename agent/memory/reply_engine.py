"""The engine that answers a message: what :class:`~agent.memory.lane.ConversationLane` asks.

Implemented by the rule-based concierge and the model engines (``agent/engines``). Covered by
the lane's tests (``tests/test_lane.py``) and the engines' own.
"""

from __future__ import annotations

from typing import Protocol

from agent.memory.schemas import ConversationContextPacket, InboundMessage, Reply

__all__ = ["ReplyEngine"]


class ReplyEngine(Protocol):
    """**Protocol:** the engine that answers a message: the rule-based concierge, or a model.

    Called by :meth:`ConversationLane.on_turn` (so by the Telegram adapter and the terminal
    mode) once for every message that wants a reply, with the session's packet as it stood
    *before* the message. The reply's text, intent, action name, job refs and the memories it
    asks to forget are recorded with the turn. It sees the packet, never the database.
    """

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        """Return the reply to ``message``; ``Reply(text=None)`` to stay silent."""
        ...
