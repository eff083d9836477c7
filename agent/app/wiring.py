"""Wires :class:`~agent.config.Settings` into the database, the memory lane and the concierge.

Covered by every test that opens a lane the way the bot does (``tests/test_cli.py``,
``tests/test_lane_crash.py``, ``tests/test_chat_service.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import datetime

from agent.config import Settings
from agent.db import Database
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import (
    CheckpointWriter,
    ConversationContextBuilder,
    ConversationLane,
    ConversationRetriever,
    ConversationStateManager,
    DecayPolicy,
    ExtractiveSummarizer,
    MemoryConsolidator,
    ReplyEngine,
    RetrievalPolicy,
    RetrievalWeights,
    SqliteSummaryStore,
    SummaryWorker,
    utc_now,
)

__all__ = [
    "build_lane",
    "decay_policy",
    "open_concierge",
    "open_database",
    "open_lane",
    "retrieval_policy",
]

logger = logging.getLogger(__name__)


def decay_policy(settings: Settings) -> DecayPolicy:
    """Return how long-term memories decay and are archived, as the settings say."""
    return DecayPolicy(
        half_life_days=settings.memory_half_life_days,
        archive_below=settings.memory_archive_below,
        archive_after_days=settings.memory_archive_after_days,
    )


def retrieval_policy(settings: Settings) -> RetrievalPolicy:
    """Return the retrieval weights and bounds the settings say."""
    return RetrievalPolicy(
        weights=RetrievalWeights(
            message=settings.retrieval_weight_message,
            topics=settings.retrieval_weight_topics,
            recency=settings.retrieval_weight_recency,
            importance=settings.retrieval_weight_importance,
            open_loop=settings.retrieval_weight_open_loop,
        ),
        candidates=settings.retrieval_candidates,
        recency_half_life_turns=settings.retrieval_recency_half_life,
        min_score=settings.retrieval_min_score,
        decay=decay_policy(settings),
    )


async def open_lane(
    settings: Settings, *, clock: Callable[[], datetime] = utc_now
) -> ConversationLane:
    """Open the database (migrating it) and build the lane the settings describe.

    The caller runs :meth:`ConversationLane.hydrate` next and :meth:`ConversationLane.shutdown`
    at the end (which closes the database). ``clock`` is the lane's time (benchmarks replay
    old conversations at their own dates).

    Raises:
        StorageError: the database cannot be opened or migrated.
    """
    return build_lane(settings, await open_database(settings), clock=clock)


async def open_database(settings: Settings) -> Database:
    """Open the database the settings name, migrating it.

    Raises:
        StorageError: the database cannot be opened or migrated.
    """
    return await Database(
        settings.db_path, durability=settings.durability, lock_timeout=settings.lock_timeout
    ).open()


def build_lane(
    settings: Settings, db: Database, *, clock: Callable[[], datetime] = utc_now
) -> ConversationLane:
    """Build the lane the settings describe over an open database (the lane's
    :meth:`~ConversationLane.shutdown` closes it)."""
    summarizer = ExtractiveSummarizer(
        every_n=settings.summarize_every,
        keep_raw=settings.recent_turns,
        max_summary_chars=settings.summary_max_chars,
    )
    summary_store = SqliteSummaryStore(retention=settings.summary_retention)
    worker = None
    if settings.llm_summarizer and settings.llm_base_url and settings.llm_model:
        from agent.engines.llm_summarizer import (
            OpenAICompatSummarizer,  # needs the optional "llm" extra
        )

        model = OpenAICompatSummarizer(
            settings.llm_base_url,
            settings.llm_model,
            settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
            timeout=settings.llm_timeout,
        )
        worker = SummaryWorker(
            db, model, store=summary_store, max_chars=settings.summary_max_chars, clock=clock
        )
    elif settings.llm_summarizer:
        logger.warning(
            "AGENT_LLM_SUMMARIZER is on but AGENT_LLM_BASE_URL or AGENT_LLM_MODEL is not set: "
            "summaries stay extractive"
        )
    return ConversationLane(
        db,
        CheckpointWriter(settings.checkpoint_dir, fsync=settings.durability == "full"),
        state_manager=ConversationStateManager(summarizer),
        builder=ConversationContextBuilder(
            token_budget=settings.packet_token_budget, recent_turns=settings.recent_turns
        ),
        summary_store=summary_store,
        summary_worker=worker,
        retriever=ConversationRetriever(policy=retrieval_policy(settings)),
        consolidator=MemoryConsolidator(policy=decay_policy(settings)),
        resident_sessions=settings.resident_sessions,
        clock=clock,
    )


async def open_concierge(settings: Settings, stack: AsyncExitStack) -> ReplyEngine:
    """Return the reply engine the settings ask for; its clean-up goes on ``stack``.

    Without an LLM endpoint (the default) that is the offline :class:`RuleBasedConcierge`;
    with one, an :class:`~agent.engines.llm.OpenAICompatConcierge` that falls back to it.
    """
    offline = RuleBasedConcierge()
    if not (settings.llm_base_url and settings.llm_model):
        return offline
    from agent.engines.llm import OpenAICompatConcierge  # needs the optional "llm" extra

    llm = OpenAICompatConcierge(
        settings.llm_base_url,
        settings.llm_model,
        settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
        fallback=offline,
        timeout=settings.llm_timeout,
    )
    return await stack.enter_async_context(llm)
