"""Wires :class:`~agent.config.Settings` into the memory lane and the concierge.

Tested by ``tests/test_app.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from importlib.util import find_spec

from agent.config import Settings
from agent.db import AnyDatabase, Database
from agent.db.bot_settings import CHECKPOINT_DIR, record_setting, recorded_setting
from agent.engines.rule_based import RuleBasedConcierge
from agent.errors import ConfigError, StorageError
from agent.memory import CheckpointWriter, ConversationLane, ReplyEngine
from agent.memory.conversation_checkpoint import CheckpointStore
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_retriever import (
    ConversationRetriever,
    RetrievalPolicy,
    RetrievalWeights,
)
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_store import ConversationStore, SqliteConversationStore
from agent.memory.conversation_summarizer import ExtractiveSummarizer
from agent.memory.longterm.memory_consolidator import DecayPolicy, MemoryConsolidator
from agent.memory.longterm.memory_store import MemoryStore, SqliteMemoryStore
from agent.memory.schemas import utc_now
from agent.memory.semantic_search import SemanticSearch, load_encoder
from agent.memory.storage.checkpoint_rows import DatabaseCheckpoints
from agent.memory.summaries.summary_store import SqliteSummaryStore, SummaryStore
from agent.memory.summaries.summary_worker import SummaryWorker

__all__ = [
    "Stores",
    "build_lane",
    "checkpoint_store",
    "decay_policy",
    "open_concierge",
    "open_database",
    "open_lane",
    "record_locations",
    "retrieval_policy",
    "semantic_search",
    "state_manager",
    "stores_for",
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
        vector_wait=settings.embedding_wait_ms / 1000,
        decay=decay_policy(settings),
    )


def state_manager(settings: Settings) -> ConversationStateManager:
    """Return the state rules with the extractive summarizer the settings describe."""
    return ConversationStateManager(
        ExtractiveSummarizer(
            every_n=settings.summarize_every,
            keep_raw=settings.recent_turns,
            max_summary_chars=settings.summary_max_chars,
        )
    )


@dataclass(frozen=True, slots=True)
class Stores:
    """The lane's three stores, of one backend."""

    turns: ConversationStore
    memories: MemoryStore
    summaries: SummaryStore


def stores_for(settings: Settings, db: AnyDatabase) -> Stores:
    """Return the stores of ``db``'s backend; the summary chain keeps as many versions as the
    settings say."""
    if isinstance(db, Database):
        return Stores(
            SqliteConversationStore(),
            SqliteMemoryStore(),
            SqliteSummaryStore(retention=settings.summary_retention),
        )
    # The `postgres` extra: open_database made a PostgresDatabase, so it is installed.
    from agent.memory.longterm.postgres_memory_store import PostgresMemoryStore
    from agent.memory.storage.postgres_conversation_store import PostgresConversationStore
    from agent.memory.summaries.postgres_summary_store import PostgresSummaryStore

    return Stores(
        PostgresConversationStore(),
        PostgresMemoryStore(),
        PostgresSummaryStore(retention=settings.summary_retention),
    )


async def open_database(settings: Settings) -> AnyDatabase:
    """Open the database the settings name (creating and migrating it): PostgreSQL where
    ``AGENT_DATABASE_URL`` is set, else the SQLite file at ``AGENT_DB_PATH``.

    Raises:
        ConfigError: PostgreSQL is asked for but the ``postgres`` extra is not installed.
        StorageError: the database cannot be opened or migrated.
    """
    if settings.database_url is None:
        return await Database(
            settings.db_path, durability=settings.durability, lock_timeout=settings.lock_timeout
        ).open()
    try:
        from agent.db.postgres import PostgresDatabase  # the `postgres` extra
    except ImportError as exc:
        raise ConfigError(
            "AGENT_DATABASE_URL: PostgreSQL needs the postgres extra; install it with "
            "pip install -e '.[postgres]'"
        ) from exc
    return await PostgresDatabase(
        settings.database_url.get_secret_value(), timeout=settings.lock_timeout
    ).open()


async def record_locations(settings: Settings, db: AnyDatabase) -> None:
    """Record in ``db`` where the bot keeps its checkpoint files (an absolute path; none
    where checkpoints are rows only), so that ``agent-memory`` finds them from any directory.

    Written only when it changed; a database that refuses the write is logged, not fatal
    (the bot's own work does not need the record).
    """
    value = str(settings.checkpoint_dir.resolve()) if settings.checkpoint_files else None
    try:
        if await recorded_setting(db, CHECKPOINT_DIR) != value:
            await record_setting(db, CHECKPOINT_DIR, value)
    except StorageError as exc:
        logger.warning("the checkpoint directory was not recorded for agent-memory: %s", exc)


def checkpoint_store(settings: Settings, db: AnyDatabase) -> CheckpointStore:
    """Return where checkpoints go: files on SQLite; on PostgreSQL rows, mirrored into files
    where ``AGENT_CHECKPOINT_DIR`` is set."""
    files = CheckpointWriter(settings.checkpoint_dir, fsync=settings.durability == "full")
    if isinstance(db, Database):
        return files
    return DatabaseCheckpoints(db, files if settings.checkpoint_files else None)


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


def build_lane(
    settings: Settings, db: AnyDatabase, *, clock: Callable[[], datetime] = utc_now
) -> ConversationLane:
    """Build the lane the settings describe over ``db`` (an open database it then owns).

    For callers that use the database beside the lane (the inbound journal of the Telegram
    bot and of ``/forget``): they open it with :func:`open_database` and keep it; the lane
    closes it in :meth:`ConversationLane.shutdown`.
    """
    stores = stores_for(settings, db)
    summaries = stores.summaries
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
            db, model, store=summaries, max_chars=settings.summary_max_chars, clock=clock
        )
    elif settings.llm_summarizer:
        logger.warning(
            "AGENT_LLM_SUMMARIZER is on but AGENT_LLM_BASE_URL or AGENT_LLM_MODEL is not set: "
            "summaries stay extractive"
        )
    return ConversationLane(
        db,
        checkpoint_store(settings, db),
        state_manager=state_manager(settings),
        builder=ConversationContextBuilder(
            token_budget=settings.packet_token_budget, recent_turns=settings.recent_turns
        ),
        store=stores.turns,
        memory_store=stores.memories,
        summary_store=summaries,
        summary_worker=worker,
        retriever=ConversationRetriever(
            stores.turns,
            stores.memories,
            retrieval_policy(settings),
            summary_store=summaries,
            semantic=semantic_search(settings, db),
        ),
        consolidator=MemoryConsolidator(stores.memories, decay_policy(settings)),
        resident_sessions=settings.resident_sessions,
        clock=clock,
    )


def semantic_search(settings: Settings, db: AnyDatabase) -> SemanticSearch | None:
    """Return the semantic search of turns ``AGENT_EMBEDDING_MODEL`` asks for (``None``: unset).

    The model loads at its first use, in a thread (a start does not wait for it).

    Raises:
        ConfigError: a model is named but the ``semantic`` extra is not installed.
    """
    model = settings.embedding_model
    if not model:
        return None
    if find_spec("sentence_transformers") is None or find_spec("usearch") is None:
        raise ConfigError(
            "AGENT_EMBEDDING_MODEL needs the semantic extra: pip install 'agent[semantic]'"
            " (torch first, for its CPU build), or unset AGENT_EMBEDDING_MODEL"
        )
    return SemanticSearch(db, model, partial(load_encoder, model))


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
