"""Wires :class:`~agent.config.Settings` into the memory lane and the concierge."""

from __future__ import annotations

from contextlib import AsyncExitStack

from agent.concierge import Concierge, RuleBasedConcierge
from agent.config import Settings
from agent.db import Database
from agent.memory import (
    CheckpointWriter,
    ConversationContextBuilder,
    ConversationLane,
    ConversationStateManager,
    ExtractiveSummarizer,
)

__all__ = ["open_concierge", "open_lane"]


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


async def open_concierge(settings: Settings, stack: AsyncExitStack) -> Concierge:
    """Return the reply engine the settings ask for; its clean-up goes on ``stack``.

    Without an LLM endpoint (the default) that is the offline :class:`RuleBasedConcierge`;
    with one, an :class:`~agent.llm_concierge.OpenAICompatConcierge` that falls back to it.
    """
    offline = RuleBasedConcierge()
    if not (settings.llm_base_url and settings.llm_model):
        return offline
    from agent.llm_concierge import OpenAICompatConcierge  # needs the optional "llm" extra

    llm = OpenAICompatConcierge(
        settings.llm_base_url,
        settings.llm_model,
        settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
        fallback=offline,
        timeout=settings.llm_timeout,
    )
    return await stack.enter_async_context(llm)
