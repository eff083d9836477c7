"""Semantic search of a session's turns: sentence vectors, a nearest-neighbour cache, an indexer.

Optional: the ``semantic`` extra (sentence-transformers, usearch) and ``AGENT_EMBEDDING_MODEL``
(a sentence-transformers model: a hub name, or the path of a model folder). Without them the
retriever is lexical only (FTS5 BM25) and nothing here runs.

* **Vectors after the commit, off the turn's path.** :meth:`SemanticSearch.schedule` is called
  once a turn is committed; a background task reads the session's turns that have no vector
  yet, encodes them in a thread and writes the vectors in a transaction of their own
  (:class:`~agent.memory.storage.turn_vectors.TurnVectorStore`). A packet uses what is indexed:
  a turn not indexed yet is still found by FTS5. A turn is encoded as ``speaker: words``.
* **The database is the source of truth; the index is a cache.** Each process keeps a usearch
  index per recently searched session (at most ``cached_sessions``), filled from the database
  at its first search and topped up from it at each search (the vectors after the last seq it
  holds), so a process that crashed, or another worker, finds the same vectors. An erasure
  (:meth:`forget`) empties the cache; the cascade has removed the rows.
* **The message's vector beside its words' search, made once, never waited for.** A packet's
  message is encoded in a thread of its own (:meth:`SemanticSearch.encode_message`) while the
  retriever runs its lexical searches; a vector not encoded by then is left out (``wait``,
  ``AGENT_EMBEDDING_WAIT_MS``, 0 by default), and the search goes from the vectors of the
  best lexical hits alone, so the encoder adds nothing to a reply's latency. The vector is
  kept, so the indexer stores it for the message's turn instead of encoding the same
  ``speaker: words`` again.
* **Fused with BM25** by the retriever (reciprocal rank fusion,
  :func:`agent.memory.retrieval_ranking.fuse`), the message's vector first moved towards the
  vectors of its best BM25 hits (:meth:`SemanticSearch.search`'s ``seeds``).

Tested in ``tests/test_semantic_search.py`` (skipped without the extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from agent.db import Snapshot
from agent.db.transaction import AnyDatabase
from agent.memory.storage.turn_vectors import TurnVectorStore, UnindexedTurn

__all__ = ["SemanticSearch", "load_encoder"]

logger = logging.getLogger(__name__)

#: Turns encoded and written per step of the indexer.
_BATCH = 64
#: The messages' vectors kept for the indexer, the newest (a message's vector is its turn's).
_KEPT_MESSAGES = 64

#: Encodes texts into unit vectors (float32 rows, one per text).
Encoder = Callable[[list[str]], Any]


def load_encoder(model: str) -> tuple[Encoder, int]:
    """Load a sentence-transformers model (a hub name or a folder) on the CPU.

    Returns:
        A function of texts to their normalised vectors, and the vectors' dimension.

    Raises:
        ImportError: the ``semantic`` extra is not installed.
    """
    import torch  # the optional "semantic" extra
    from sentence_transformers import SentenceTransformer

    # One thread: the bot's own threads (the loop, the searcher, the writer) keep theirs; torch
    # on every core made a turn with a reply 10 times slower while the indexer ran.
    torch.set_num_threads(1)
    encoder = SentenceTransformer(model, device="cpu")
    # Renamed in sentence-transformers 6 (the old name warns there).
    measure = getattr(encoder, "get_embedding_dimension", None)
    measure = measure or encoder.get_sentence_embedding_dimension
    dimension = int(measure() or 0)

    def encode(texts: list[str]) -> Any:
        return encoder.encode(texts, batch_size=_BATCH, normalize_embeddings=True)

    return encode, dimension


class _SessionIndex:
    """A usearch index of one session's vectors and the last seq it holds."""

    def __init__(self, dimension: int) -> None:
        from usearch.index import Index  # the optional "semantic" extra

        self.index = Index(ndim=dimension, metric="cos", dtype="f32")
        self.last_seq = 0


class SemanticSearch:
    """Sentence vectors of turns: the indexer, the cache of indexes, the search.

    Args:
        db: the database the vectors are read from and written to.
        model: the model's name as ``AGENT_EMBEDDING_MODEL`` gives it (stored with each vector:
            a vector of another model is not compared).
        load: loads the model, returning its encoding function and its dimension
            (:func:`load_encoder`); called once, in a thread, at the first encoding (loading
            takes seconds: a start does not wait for it).
        store: the vectors' table.
        cached_sessions: how many sessions' indexes a process keeps (the most recently
            searched).
    """

    def __init__(
        self,
        db: AnyDatabase,
        model: str,
        load: Callable[[], tuple[Encoder, int]],
        *,
        store: TurnVectorStore | None = None,
        cached_sessions: int = 32,
    ) -> None:
        self._db = db
        self.model = model
        self._load = load
        self._loaded: tuple[Encoder, int] | None = None
        self.dimension = 0
        self._store = store or TurnVectorStore()
        self._cached_sessions = cached_sessions
        self._indexes: OrderedDict[str, _SessionIndex] = OrderedDict()
        self._lock = threading.Lock()  # the searcher's thread and the others share the cache
        self._loading = threading.Lock()  # the model loads once (seconds: not under _lock)
        self._pending: dict[str, None] = {}
        # Sentence -> vector of the messages encoded for a packet: the turn each one becomes
        # is indexed with it, not encoded twice (under _lock: the loop and the threads).
        self._messages: OrderedDict[str, Any] = OrderedDict()
        self._encoding: OrderedDict[str, Future[Any]] = OrderedDict()  # and those under way
        self._messages_encoder = ThreadPoolExecutor(1, thread_name_prefix="message-encoder")
        self._task: asyncio.Task[None] | None = None

    def _encode(self, texts: list[str]) -> Any:
        # In a thread (embed_query, the indexer): the first call loads the model.
        with self._loading:
            if self._loaded is None:
                self._loaded = self._load()
                self.dimension = self._loaded[1]
            encode = self._loaded[0]
        return encode(texts)

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded (its first encoding loads it: seconds)."""
        return self._loaded is not None

    def encode_message(self, text: str, speaker: str | None = None) -> Future[Any]:
        """Start encoding a message in a thread of its own; return its unit vector's future.

        The caller searches the message's words meanwhile (the retriever waits for the vector
        only after its lexical searches). The message is encoded as its turn will be
        (``speaker: words``) and the vector kept: when the turn is committed, the indexer
        stores it instead of encoding the words again.
        """
        message = UnindexedTurn(0, text, speaker)
        future = self._messages_encoder.submit(self._encode_message, message)
        with self._lock:  # the indexer waits for it, should the turn be committed first
            self._encoding[message.sentence] = future
            while len(self._encoding) > _KEPT_MESSAGES:
                self._encoding.popitem(last=False)
        return future

    def _encode_message(self, message: UnindexedTurn) -> Any:
        vector = self._encode([message.sentence])[0]
        with self._lock:
            self._messages[message.sentence] = vector
            while len(self._messages) > _KEPT_MESSAGES:
                self._messages.popitem(last=False)
        return vector

    def schedule(self, session_id: str) -> None:
        """Index the session's new turns in the background (call after the turn's commit)."""
        self._pending[session_id] = None
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="turn-indexer")

    async def drain(self) -> None:
        """Wait until every scheduled session is indexed (tools, tests and benchmarks)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def shutdown(self) -> None:
        """Finish the indexing in flight (its writes need the database: call before closing)."""
        await self.drain()
        self._messages_encoder.shutdown(wait=True)

    def forget(self) -> None:
        """Drop every cached index and kept message (after an erasure: the next search reads
        the database; a message's words and vector are not kept past it)."""
        with self._lock:
            self._indexes.clear()
            self._messages.clear()

    async def _run(self) -> None:
        while self._pending:
            session_id = next(iter(self._pending))
            try:
                done = await self._index_some(session_id)
            except Exception:
                # The turns stay unindexed (FTS5 still finds them); the next commit retries.
                logger.exception("indexing the turns of %s failed", session_id)
                done = True
            if done:
                self._pending.pop(session_id, None)

    async def _index_some(self, session_id: str) -> bool:
        """Index up to a batch of the session's turns; return whether none are left."""
        turns = await self._store.unindexed(self._db.reader, session_id, self.model, _BATCH)
        if not turns:
            return True
        sentences = list(dict.fromkeys(turn.sentence for turn in turns))
        with self._lock:  # the messages encoded for their packets are not encoded again
            known = {s: self._messages.pop(s) for s in sentences if s in self._messages}
            under_way = {s: self._encoding.pop(s) for s in sentences if s in self._encoding}
        for sentence, future in under_way.items():  # a reply need not have waited for it
            if sentence not in known:
                with contextlib.suppress(Exception):  # failed: encoded again below
                    known[sentence] = await asyncio.wrap_future(future)
            with self._lock:
                self._messages.pop(sentence, None)
        missing = [sentence for sentence in sentences if sentence not in known]
        if missing:
            vectors = await asyncio.to_thread(self._encode, missing)
            known.update(zip(missing, vectors, strict=True))
        rows = [(turn, known[turn.sentence].astype("float32").tobytes()) for turn in turns]

        async def write(tx: Any) -> None:
            await self._store.write(tx, session_id, self.model, rows)

        await self._db.write(write, durable=False)  # made again from the turn if lost
        after = await self._store.unindexed(self._db.reader, session_id, self.model, 1)
        # A turn erased or edited while it was encoded is not written: no progress, stop.
        return not after or after[0].seq == turns[0].seq

    def search(
        self,
        conn: Snapshot,
        session_id: str,
        vector: Any,
        limit: int,
        before_seq: int | None,
        *,
        seeds: Sequence[int] = (),
        feedback: float = 1.0,
        wait: float | None = None,
    ) -> list[int]:
        """Return the seqs of the session's turns nearest ``vector`` (a vector, or the future
        of one: :meth:`encode_message`; ``None``: none), nearest first, before ``before_seq``
        (``None``: any), at most ``limit``; runs in the searcher's thread. A message that could
        not be encoded finds none (its words are still searched).

        With ``seeds`` (turns known to match, e.g. BM25's best hits), the vector searched is
        the message's plus ``feedback`` times the mean of the seeds' vectors, normalised
        (Rocchio's pseudo-relevance feedback): it moves towards what the conversation said of
        the subject, so turns that share no word with the message, nor its phrasing, but talk
        of what its hits talk of come nearer. Seeds without a vector are left out.

        ``wait``: the most seconds to wait for a vector still being encoded (``None``: until
        it is). One not encoded by then is left out: the seeds' mean alone is searched (no
        seeds: nothing), so a reply need not wait for the encoder; the vector is still
        stored for its turn once encoded.
        """
        import numpy as np  # comes with the optional "semantic" extra

        if vector is None:
            return []
        fresh = self._store.vectors(conn, session_id, self.model, self._last_seq(session_id))
        if isinstance(vector, Future):  # read while it was encoded: wait for it now, or not
            try:
                vector = vector.result(timeout=wait)
            except TimeoutError:
                vector = None  # still encoding: the seeds alone
            except Exception:
                logger.exception("encoding the message failed: its words alone are searched")
                return []
        with self._lock:
            cached = self._indexes.get(session_id)
            if cached is None:
                cached = self._indexes[session_id] = _SessionIndex(self.dimension)
            self._indexes.move_to_end(session_id)
            while len(self._indexes) > self._cached_sessions:
                self._indexes.popitem(last=False)
            new = [(seq, blob) for seq, blob in fresh if seq > cached.last_seq]
            if new:
                keys = np.array([seq for seq, _ in new], dtype=np.uint64)
                rows = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in new])
                cached.index.add(keys, rows)
                cached.last_seq = new[-1][0]
            held = len(cached.index)
            if not held:
                return []
            extra = 0 if before_seq is None else max(cached.last_seq - before_seq + 1, 0)
            held_rows = (cached.index.get(np.uint64(seq)) for seq in seeds)
            known = [np.asarray(row, dtype=np.float32).reshape(-1) for row in held_rows if
                     row is not None]  # fmt: skip
            if vector is None and not (known and feedback):
                return []
            query = np.zeros(self.dimension, dtype=np.float32)
            if vector is not None:
                query = np.asarray(vector, dtype=np.float32).reshape(-1)
            if known and feedback:  # Rocchio: towards the seeds' mean, as a unit vector again
                query = query + feedback * np.mean(known, axis=0)
                query = query / (np.linalg.norm(query) or 1.0)
            found = cached.index.search(query, limit + extra)
        seqs = [int(key) for key in found.keys]
        return [seq for seq in seqs if before_seq is None or seq < before_seq][:limit]

    def _last_seq(self, session_id: str) -> int:
        with self._lock:
            cached = self._indexes.get(session_id)
            return 0 if cached is None else cached.last_seq
