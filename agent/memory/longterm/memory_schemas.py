"""The contracts of long-term memory: a memory of a chat, and a candidate for one.

Re-exported by :mod:`agent.memory.schemas` (the lane's contracts). Covered by
``tests/test_memory_store.py`` and ``tests/test_writer.py``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from agent.memory.schema_base import Value

__all__ = [
    "Memory",
    "MemoryCandidate",
    "MemoryKind",
    "MemoryOrigin",
    "MemoryRelation",
    "MemoryRelationKind",
    "MemoryStatus",
]

#: Seed 003's seven kinds of long-term memory.
MemoryKind = Literal["fact", "preference", "decision", "goal", "constraint", "entity", "procedure"]
MemoryStatus = Literal["candidate", "active", "archived"]
#: ``said`` in conversation; ``noted``: a note the user asked for verbatim (``/remember``).
MemoryOrigin = Literal["said", "noted"]
#: How one memory stands to another (seed 003): it ``supersedes`` the value it replaced,
#: ``contradicts`` the other side of a like/dislike it replaced, is ``related_to`` the entity
#: memory of the someone it is about.
MemoryRelationKind = Literal["supersedes", "contradicts", "related_to"]


class Memory(Value):
    """A long-term memory of a chat: outlives its sessions (``/new``), not ``/forget``.

    A typed statement (seed 003): ``subject`` (``user``, or someone in their life such as
    ``sister Mia``) has ``attribute`` = ``text``, from ``valid_from`` until ``valid_until``
    (``None``: still true). ``key`` is its slot (:mod:`agent.memory.longterm.memory_slots`): at most
    one memory of a slot is current, the others are its history.
    """

    memory_id: str
    chat_id: int
    kind: MemoryKind
    subject: str = "user"
    attribute: str
    key: str
    text: str
    origin: MemoryOrigin = "said"
    valid_from: datetime
    valid_until: datetime | None = None
    confidence: float = Field(ge=0, le=1)
    importance: float = Field(ge=0, le=1)
    access_count: int = 1
    status: MemoryStatus = "candidate"
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime
    decay: float = Field(
        default=1.0, ge=0, le=1, description="Decay factor of the last consolidation (1: fresh)."
    )
    archived_at: datetime | None = None

    @property
    def about_user(self) -> bool:
        """Whether the memory is about the user (not someone or something in their life)."""
        return self.subject == "user"


class MemoryCandidate(Value):
    """Something a turn said that may deserve long-term memory (see ``write_if_worthy``).

    ``key`` is the fact's key (:mod:`agent.memory.longterm.memory_slots`); ``correction``: it
    corrects the current value (which was never true) rather than replacing it from now on;
    ``replaces``: the key of another slot whose current memory it puts right ("sorry, her name
    is Anna" of ``relative:sister hanna``), which was never true either.
    """

    kind: MemoryKind
    subject: str = "user"
    attribute: str
    key: str
    text: str
    origin: MemoryOrigin = "said"
    correction: bool = False
    replaces: str | None = None
    confidence: float = Field(ge=0, le=1)
    importance: float = Field(ge=0, le=1)


class MemoryRelation(Value):
    """A relation between two memories of a chat: ``memory_id`` ``relation`` ``other_id``.

    Written by the store when a memory is recorded; it goes when either memory goes.
    """

    memory_id: str
    relation: MemoryRelationKind
    other_id: str
    created_at: datetime
