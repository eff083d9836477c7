"""Fixtures shared by the test-suite: real SQLite files and real checkpoint directories."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.db import Database
from agent.memory import (
    CheckpointWriter,
    ConversationContextPacket,
    ConversationLane,
    InboundMessage,
    Reply,
)


class EchoEngine:
    """A reply engine for memory tests: answers with the text and the turn it saw."""

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        return Reply(text=f"echo #{packet.turn_count + 1}: {message.text}", intent="echo")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def checkpoint_dir(tmp_path: Path) -> Path:
    return tmp_path / "checkpoints"


@pytest.fixture
async def db(db_path: Path) -> AsyncIterator[Database]:
    """A migrated database in a real file, closed after the test."""
    async with Database(db_path) as database:
        yield database


@pytest.fixture
async def lane(db_path: Path, checkpoint_dir: Path) -> AsyncIterator[ConversationLane]:
    """A hydrated lane over a real file and a real checkpoint directory."""
    database = await Database(db_path).open()
    memory_lane = ConversationLane(database, CheckpointWriter(checkpoint_dir))
    await memory_lane.hydrate()
    yield memory_lane
    await memory_lane.shutdown()


@pytest.fixture
def engine() -> EchoEngine:
    return EchoEngine()
