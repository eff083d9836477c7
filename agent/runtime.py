"""Wires :class:`~agent.config.Settings` into a ready memory lane."""

from __future__ import annotations

from agent.config import Settings
from agent.db import Database
from agent.memory import (
    CheckpointWriter,
    ConversationContextBuilder,
    ConversationLane,
    ConversationStateManager,
    ExtractiveSummarizer,
)

__all__ = ["open_lane"]


async def open_lane(settings: Settings) -> ConversationLane:
    """Open the database (migrating it) and build the lane the settings describe.

    The caller runs :meth:`ConversationLane.hydrate` next and :meth:`ConversationLane.shutdown`
    at the end (which closes the database).

    Raises:
        StorageError: the database cannot be opened or migrated.
    """
    db = await Database(
        settings.db_path, durability=settings.durability, lock_timeout=settings.lock_timeout
    ).open()
    summarizer = ExtractiveSummarizer(
        every_n=settings.summarize_every, keep_raw=settings.recent_turns
    )
    return ConversationLane(
        db,
        CheckpointWriter(settings.checkpoint_dir, fsync=settings.durability == "full"),
        state_manager=ConversationStateManager(summarizer),
        builder=ConversationContextBuilder(
            token_budget=settings.packet_token_budget, recent_turns=settings.recent_turns
        ),
    )
