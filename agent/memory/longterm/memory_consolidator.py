"""Long-term memory upkeep: decay with access boost, archiving, merging of duplicates.

Memories fade unless used (seed 003). A memory's *decay factor* halves every
``half_life_days`` since it was last accessed (stated again, or retrieved into a packet), and
each access adds a boost, capped::

    decay = min(1, 0.5 ** (days_since_access / half_life_days) + min(0.1 * access_count, 0.5))
    effective score = importance * decay

:class:`MemoryConsolidator` runs periodically (a PTB ``JobQueue`` job in the bot, once at start
in the console): it merges near-identical memories of a chat into one, stores every memory's
new decay factor, and archives those whose effective score fell below the threshold once they
are old enough. Archived memories leave packets; saying the thing again brings one back
(``write_if_worthy``). The clock is an argument, so tests can move time.
"""

from __future__ import annotations

import logging
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agent.db import Transaction
from agent.memory.longterm.memory_schemas import Memory
from agent.memory.longterm.memory_slots import fact_key
from agent.memory.longterm.memory_store import MemoryStore, SqliteMemoryStore
from agent.utils.text import split_words

__all__ = ["ConsolidationReport", "DecayPolicy", "MemoryConsolidator", "decay_factor"]

logger = logging.getLogger(__name__)

_SECONDS_PER_DAY = 86400.0
# Words that do not make two memories different ("likes: the Beatles" = "likes: Beatles").
_FILLER = frozenset({"a", "an", "the", "my", "our", "some"})
# Decay factors closer than this are not rewritten.
_EPSILON = 1e-6


@dataclass(frozen=True, slots=True)
class DecayPolicy:
    """How memories decay and when they are archived (seed 003's values by default).

    Attributes:
        half_life_days: days without access after which the decay factor halves.
        access_boost: added to the decay factor per access (stated or retrieved).
        max_access_boost: the most the accesses add together.
        archive_below: a memory whose effective score (importance * decay) is below this...
        archive_after_days: ...and which is at least this old is archived.
    """

    half_life_days: float = 30.0
    access_boost: float = 0.1
    max_access_boost: float = 0.5
    archive_below: float = 0.3
    archive_after_days: float = 30.0

    def __post_init__(self) -> None:
        if self.half_life_days <= 0:
            raise ValueError("half_life_days must be positive")


def decay_factor(memory: Memory, now: datetime, policy: DecayPolicy = DecayPolicy()) -> float:
    """Return the memory's decay factor at ``now``: 1.0 when fresh, towards 0 when unused.

    Args:
        memory: the memory (its last access time and access count are read).
        now: the current time.
        policy: the half-life and the access boost.
    """
    days = max((now - memory.last_accessed_at).total_seconds() / _SECONDS_PER_DAY, 0.0)
    boost = min(memory.access_count * policy.access_boost, policy.max_access_boost)
    return min(1.0, float(0.5 ** (days / policy.half_life_days)) + boost)


@dataclass(slots=True)
class ConsolidationReport:
    """What one consolidation run changed.

    Attributes:
        checked: memories looked at (all not archived).
        decayed: memories whose stored decay factor changed.
        archived: ids of the memories archived.
        merged: survivor id -> ids of the duplicates folded into it.
    """

    checked: int = 0
    decayed: int = 0
    archived: list[str] = field(default_factory=list)
    merged: dict[str, list[str]] = field(default_factory=dict)


def _normalized(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text.casefold())
    return " ".join(w for w in split_words(folded) if w not in _FILLER)


def _signatures(memory: Memory) -> list[tuple[str, ...]]:
    # Two memories of a chat are duplicates when they say the same of the same subject:
    # near-identical keys ("likes:the beatles", "likes:beatles"), or the same text under the
    # same many-value attribute; "likes:cats" and "dislikes:cats" share their text, not their
    # attribute, and stay apart (they never are both current: one supersedes the other).
    key = fact_key(memory.subject, memory.attribute, memory.text)
    signatures: list[tuple[str, ...]] = [("key", memory.kind, _normalized(key))]
    text = _normalized(memory.text)
    if ":" in key and text:
        prefix = f"{memory.subject}/{memory.attribute}"
        signatures.append(("text", memory.kind, _normalized(prefix), text))
    return signatures


def _duplicate_groups(memories: Sequence[Memory]) -> list[list[Memory]]:
    """Group one chat's memories into sets of duplicates (union-find over signatures)."""
    parent = list(range(len(memories)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    seen: dict[tuple[str, ...], int] = {}
    for i, memory in enumerate(memories):
        for signature in _signatures(memory):
            j = seen.setdefault(signature, i)
            parent[find(i)] = find(j)
    groups: defaultdict[int, list[Memory]] = defaultdict(list)
    for i, memory in enumerate(memories):
        groups[find(i)].append(memory)
    return [group for group in groups.values() if len(group) > 1]


def _merged(group: Sequence[Memory]) -> Memory:
    # The survivor is the strongest memory; the newest statement's text wins (as in upsert).
    survivor = max(
        group,
        key=lambda m: (m.status == "active", m.importance, m.access_count, m.confidence, m.key),
    )
    newest = max(group, key=lambda m: (m.updated_at, m.memory_id))
    doubt = 1.0
    for memory in group:
        doubt *= 1.0 - memory.confidence
    return survivor.model_copy(
        update={
            "text": newest.text,
            "confidence": 1.0 - doubt,
            "importance": max(m.importance for m in group),
            "access_count": sum(m.access_count for m in group),
            "status": "active" if any(m.status == "active" for m in group) else survivor.status,
            "updated_at": newest.updated_at,
            "last_accessed_at": max(m.last_accessed_at for m in group),
        }
    )


class MemoryConsolidator:
    """Merges, decays and archives long-term memories (the scheduled consolidation job).

    Args:
        store: the memory storage (default: SQLite).
        policy: the decay and archive rules.
    """

    def __init__(self, store: MemoryStore | None = None, policy: DecayPolicy | None = None) -> None:
        self.store: MemoryStore = store or SqliteMemoryStore()
        self.policy = policy or DecayPolicy()

    async def consolidate(self, tx: Transaction, *, now: datetime) -> ConsolidationReport:
        """Run one consolidation inside the caller's write transaction.

        1. Merge duplicates: per chat, memories with near-identical keys (or the same text
           under the same kind of key) become one, with the evidence of all (access counts
           added, confidences combined) and the sources of all.
        2. Update every memory's decay factor (:func:`decay_factor`).
        3. Archive memories whose effective score fell below ``archive_below`` and that are at
           least ``archive_after_days`` old.

        Reads every memory not archived: it is a background job, not part of a turn.

        Args:
            tx: a connection inside an open write transaction.
            now: the current time.
        """
        report = ConsolidationReport()
        memories = await self.store.unarchived(tx)
        report.checked = len(memories)
        by_chat: defaultdict[int, list[Memory]] = defaultdict(list)
        for memory in memories:
            by_chat[memory.chat_id].append(memory)
        live: list[Memory] = []
        for chat_memories in by_chat.values():
            gone: set[str] = set()
            for group in _duplicate_groups(chat_memories):
                survivor = _merged(group)
                duplicates = [m.memory_id for m in group if m.memory_id != survivor.memory_id]
                await self.store.merge(tx, survivor, duplicates)
                report.merged[survivor.memory_id] = duplicates
                gone.update(m.memory_id for m in group)
                live.append(survivor)
            live.extend(m for m in chat_memories if m.memory_id not in gone)
        decays: list[tuple[str, float]] = []
        archive: list[str] = []
        min_age = self.policy.archive_after_days * _SECONDS_PER_DAY
        for memory in live:
            decay = decay_factor(memory, now, self.policy)
            old_enough = (now - memory.created_at).total_seconds() >= min_age
            if memory.importance * decay < self.policy.archive_below and old_enough:
                archive.append(memory.memory_id)
            if abs(decay - memory.decay) > _EPSILON:
                decays.append((memory.memory_id, decay))
        await self.store.set_decay(tx, decays, archive=archive, now=now)
        report.decayed = len(decays)
        report.archived = archive
        logger.info(
            "memory consolidation: %d checked, %d merged away, %d decayed, %d archived",
            report.checked,
            sum(len(ids) for ids in report.merged.values()),
            report.decayed,
            len(report.archived),
        )
        return report
