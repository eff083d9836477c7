"""The optional model summarizer, run in the background under the summary version chain.

The extractive summarizer (:mod:`agent.memory.conversation_summarizer`) is the default and the
fall-back: it runs inside every turn, deterministically, and its versions are the session
state's rolling summary. A model (any :class:`ModelSummarizer`, e.g.
:class:`agent.engines.llm_summarizer.OpenAICompatSummarizer`) may *also* summarise each new
extractive version, after the turn that made it was committed, as seed 004 does:

1. take the session's latest completed extractive version (the *parent*);
2. insert a ``processing`` row for it (same version and turn range, ``parent_summary_id`` =
   the parent) in its own transaction;
3. ask the model, with the parent's text and the raw turns of its range;
4. mark the row ``completed`` with the model's text, or ``failed`` with the error.

Never two at once for one session: in this process one task per session runs at a time (a new
version asked for meanwhile is summarised when it ends: requests coalesce, the newest version
wins), and across processes the partial unique index on ``(session_id) WHERE status =
'processing'`` refuses a second ``processing`` row. A row still ``processing`` at start-up was
cut short by a stop or a crash and is marked ``failed`` by :meth:`SummaryWorker.
initialize` (so run one bot process per database, as the lane assumes anyway).

**Why the model summary never changes the session state.** I6 wants the state to be a function
of the turn log, and a model's answer is not (it may differ on every call, fail, or arrive
late). So the state's ``rolling_summary`` is always the extractive one; the model's summary is
offered beside it, as :attr:`ConversationContextPacket.llm_session_summary`, whenever one is
completed. A failed model run leaves the extractive summary in place, as it always is.

Tested by ``tests/test_summary_chain.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from agent.db import AnyDatabase
from agent.errors import StorageError
from agent.memory.conversation_store import ConversationStore, SqliteConversationStore
from agent.memory.schemas import ConversationTurn, SummaryStatus, SummaryVersion, utc_now
from agent.memory.summaries.summary_store import SqliteSummaryStore, SummaryStore

__all__ = ["ModelSummarizer", "SummaryRequest", "SummaryWorker"]

logger = logging.getLogger(__name__)

# The most raw turns one model request carries (a legacy range may be long).
_MAX_TURNS = 50
_ERROR_CHARS = 500
_CANCELLED = "cancelled: the bot stopped or the session closed"


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What a model gets to summarise one extractive version.

    Attributes:
        session_id: the session.
        version: the extractive version summarised.
        from_seq: the first turn of the version's range.
        to_seq: its last turn.
        extractive_summary: the extractive rolling summary of that version (every turn up to
            ``to_seq``, compressed).
        turns: the raw turns of the range (at most the last 50), oldest first.
        max_chars: the longest summary wanted (longer answers are cut).
    """

    session_id: str
    version: int
    from_seq: int
    to_seq: int
    extractive_summary: str
    turns: tuple[ConversationTurn, ...]
    max_chars: int


class ModelSummarizer(Protocol):
    """**Protocol:** a model that writes a summary (the optional LLM summarizer).

    Called by :class:`SummaryWorker`, in a background task, once per extractive
    version; ``initialize`` before the first call and ``shutdown`` at the end.
    """

    async def initialize(self) -> None:
        """Open what the model needs (an HTTP client). Idempotent."""
        ...

    async def shutdown(self) -> None:
        """Close it. Idempotent."""
        ...

    async def summarize(self, request: SummaryRequest) -> str:
        """Return the summary text; raise on any failure (the run is then marked failed)."""
        ...


class SummaryWorker:
    """Runs a :class:`ModelSummarizer` in the background under the summary chain.

    The lane calls :meth:`schedule` after committing a turn that folded, reads
    :meth:`latest_text` when it builds a packet, and calls :meth:`shutdown` when it stops.

    Args:
        db: the open database (the lane's).
        model: the model summarizer.
        store: the summary chain storage (default: SQLite).
        turns: the turn log storage, to read a version's raw turns (default: SQLite).
        max_chars: the longest model summary kept.
        clock: returns the current time.
    """

    def __init__(
        self,
        db: AnyDatabase,
        model: ModelSummarizer,
        *,
        store: SummaryStore | None = None,
        turns: ConversationStore | None = None,
        max_chars: int = 2000,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.db = db
        self.model = model
        self.store: SummaryStore = store or SqliteSummaryStore()
        self.turns: ConversationStore = turns or SqliteConversationStore()
        self.max_chars = max_chars
        self._clock = clock
        self._initialized = False
        self._init_lock = asyncio.Lock()
        self._closed = False
        # One task per session at a time: the in-process guard (the index is the other one).
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self._attempted: dict[str, int] = {}
        # Per session: the last turn its newest completed model summary covers, and the text.
        self._latest: dict[str, tuple[int, str]] = {}

    async def initialize(self, session_ids: Sequence[str] = ()) -> None:
        """Fail runs a stop or crash cut short, open the model, load the latest summaries.

        Idempotent for the first two; the latest completed model summaries of
        ``session_ids`` are loaded on every call.
        """
        async with self._init_lock:
            if not self._initialized:
                now = self._clock()
                stale = await self.db.write(
                    lambda tx: self.store.fail_processing(
                        tx, error="interrupted: the process stopped during the run", now=now
                    )
                )
                if stale:
                    logger.warning("%d model summaries were cut short by a restart", stale)
                await self.model.initialize()
                self._initialized = True
        found = await self.store.latest_llm(self.db.reader, list(session_ids))
        self._latest.update({sid: (entry.to_seq, entry.text) for sid, entry in found.items()})

    def schedule(self, session_id: str) -> None:
        """Summarise the session's latest extractive version in the background.

        Returns at once. If a run for the session is in progress, one more run follows it
        (for the then newest version) instead of a second one at the same time.
        """
        if self._closed:
            return
        running = self._tasks.get(session_id)
        if running is not None and not running.done():
            self._again.add(session_id)
            return
        task = asyncio.create_task(self._run(session_id), name=f"summary-{session_id}")
        self._tasks[session_id] = task
        task.add_done_callback(lambda done: self._done(session_id, done))

    def _done(self, session_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(session_id) is task:
            del self._tasks[session_id]
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "model summary task of session %s failed",
                session_id,
                exc_info=task.exception(),
            )

    def latest_text(self, session_id: str, *, after_seq: int = 0) -> str:
        """Return the session's newest completed model summary ("" if it has none).

        Args:
            session_id: the session.
            after_seq: "" unless the summary covers a turn after this seq (one made before a
                ``/clear`` at ``after_seq`` summarises what the packet no longer shows).
        """
        to_seq, text = self._latest.get(session_id, (0, ""))
        return text if to_seq > after_seq else ""

    def forget(self, session_id: str) -> None:
        """Drop what is held of a session (closed or erased); cancel its run, if any."""
        self._latest.pop(session_id, None)
        self._attempted.pop(session_id, None)
        self._again.discard(session_id)
        task = self._tasks.get(session_id)
        if task is not None:
            task.cancel()

    async def wait_idle(self) -> None:
        """Wait until no run is in progress or asked for (tests, orderly stops)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def shutdown(self) -> None:
        """Cancel the runs in progress (marked failed), then close the model. Idempotent."""
        if self._closed:
            return
        self._closed = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._initialized:
            await self.model.shutdown()

    # -- one run ---------------------------------------------------------------------------

    async def _run(self, session_id: str) -> None:
        await self.initialize()
        while not self._closed:
            self._again.discard(session_id)
            await self._summarize_latest(session_id)
            if session_id not in self._again:
                return

    async def _summarize_latest(self, session_id: str) -> None:
        parent = await self.store.latest(self.db.reader, session_id)
        if parent is None or parent.version <= self._attempted.get(session_id, 0):
            return
        # Each version is tried once; a failure waits for the next version (the extractive
        # summary is there meanwhile).
        self._attempted[session_id] = parent.version
        now = self._clock()
        try:
            entry = await self.db.write(lambda tx: self.store.begin_llm(tx, parent, now=now))
        except StorageError as exc:  # e.g. the session was erased meanwhile
            logger.warning("model summary of session %s not started: %s", session_id, exc)
            return
        if entry is None:
            logger.debug("a model summary of session %s is already in progress", session_id)
            return
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            request = await self._request(parent)
            text = (await self.model.summarize(request)).strip()
            if not text:
                raise ValueError("the model returned an empty summary")  # noqa: TRY301
        except asyncio.CancelledError:
            await self._finish(entry, started, error=_CANCELLED)
            raise
        except Exception as exc:
            logger.warning(
                "model summary of session %s version %d failed; the extractive one stays: %s",
                session_id,
                parent.version,
                exc,
            )
            await self._finish(entry, started, error=f"{type(exc).__name__}: {exc}")
            return
        if len(text) > self.max_chars:
            text = text[: self.max_chars - 1].rstrip() + "…"
        if await self._finish(entry, started, text=text):
            self._latest[session_id] = (entry.to_seq, text)
            logger.debug("model summary of session %s version %d done", session_id, entry.version)

    async def _request(self, parent: SummaryVersion) -> SummaryRequest:
        turns = []
        for seq in range(max(parent.from_seq, parent.to_seq - _MAX_TURNS + 1), parent.to_seq + 1):
            turn = await self.turns.get_turn(self.db.reader, parent.session_id, seq)
            if turn is not None:
                turns.append(turn)
        return SummaryRequest(
            session_id=parent.session_id,
            version=parent.version,
            from_seq=parent.from_seq,
            to_seq=parent.to_seq,
            extractive_summary=parent.text,
            turns=tuple(turns),
            max_chars=self.max_chars,
        )

    async def _finish(
        self, entry: SummaryVersion, started: float, *, text: str = "", error: str | None = None
    ) -> bool:
        elapsed = int((asyncio.get_running_loop().time() - started) * 1000)
        now = self._clock()
        status: SummaryStatus = "failed" if error is not None else "completed"
        detail = None if error is None else error[:_ERROR_CHARS]
        try:
            return await self.db.write(
                lambda tx: self.store.finish_llm(
                    tx,
                    entry.summary_id,
                    status=status,
                    text=text,
                    error=detail,
                    generation_ms=elapsed,
                    now=now,
                )
            )
        except Exception:
            logger.exception("could not record the model summary %d", entry.summary_id)
            return False
