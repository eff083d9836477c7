"""The long-term memories packets carry, per chat, kept at hand for the chats that talk.

Every packet carries its chat's most important current memories and the values they most
recently superseded (so that "where did I live before?" can be answered), besides the ones
retrieval finds for the message. They are read from the database once per chat and kept, for the
``chats`` chats used last only: a bot with thousands of chats holds no memory objects for the
quiet ones (20 memories of a chat are ~30 KB as pydantic objects).

Covered by ``tests/test_memory_store.py`` and ``tests/test_memory_commands.py``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from agent.db import Transaction
from agent.memory.longterm.memory_store import MemoryStore
from agent.memory.schemas import Memory

__all__ = ["ChatMemories"]


class ChatMemories:
    """The memories packets carry for the recently used chats: the most important current ones
    first, then the most recently superseded.

    Args:
        store: where the memories are.
        per_chat: current memories a packet carries per chat.
        past: superseded memories a packet carries per chat.
        chats: chats whose memories are kept; the least recently used others are dropped and
            read again when needed.
    """

    def __init__(self, store: MemoryStore, *, per_chat: int, past: int, chats: int) -> None:
        if chats < 1:
            raise ValueError("chats must be at least 1")
        self._store = store
        self._per_chat = per_chat
        self._past = past
        self._chats = chats
        self._kept: OrderedDict[int, tuple[Memory, ...]] = OrderedDict()

    async def of(self, conn: Transaction, chat_id: int) -> tuple[Memory, ...]:
        """Return the chat's memories, reading them (through ``conn``) if not kept."""
        memories = self._kept.get(chat_id)
        if memories is not None:
            self._kept.move_to_end(chat_id)
            return memories
        await self.load(conn, [chat_id])
        return self._kept.get(chat_id, ())

    async def load(self, conn: Transaction, chat_ids: Iterable[int]) -> None:
        """Read the memories of ``chat_ids`` again (they changed in the database)."""
        found = await self._store.current_for_chats(
            conn, list(chat_ids), per_chat=self._per_chat, past=self._past
        )
        for chat_id, memories in found.items():
            self._keep(chat_id, tuple(memories))

    async def reload(self, conn: Transaction) -> None:
        """Read again the memories of every chat kept (after consolidation or erasure)."""
        await self.load(conn, list(self._kept))

    def drop(self, chat_id: int) -> None:
        """Forget what is kept for a chat (its memories are read again when needed)."""
        self._kept.pop(chat_id, None)

    def _keep(self, chat_id: int, memories: tuple[Memory, ...]) -> None:
        self._kept[chat_id] = memories
        self._kept.move_to_end(chat_id)
        while len(self._kept) > self._chats:
            self._kept.popitem(last=False)
