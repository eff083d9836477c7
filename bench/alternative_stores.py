"""The stores a user would otherwise pick for a bot's memory, and the lane, behind one interface.

Each :class:`Store` keeps one chat's conversation in its own directory, set up as its
documentation recommends; :mod:`bench.alternatives` times them side by side and
:mod:`bench.store_durability` kills them. LangGraph and the Agents SDK come with the ``bench``
extra: :meth:`Store.missing` names what is not installed, and those stores are imported only
when opened.
"""

from __future__ import annotations

import abc
import importlib.util
import json
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from agent.app.wiring import build_lane, open_database
from agent.config import Settings
from agent.memory import InboundMessage
from bench.harness import lane_settings
from bench.lane_cost import TrivialEngine, fill

CHAT = 7  # the one chat every store keeps
REPLY = "Noted, thanks for telling me."

_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def _history(corpus: list[str], turns: int) -> list[str]:
    # The user texts lane_cost.fill gives the lane's session of chat CHAT: the same turns.
    return [corpus[(seq + CHAT) % len(corpus)] for seq in range(1, turns + 1)]


def _items(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": REPLY}]


async def _sqlite(query: Callable[[str], Awaitable[Iterable[Any]]]) -> str:
    """The journal mode and ``synchronous`` of the connection that ``query`` runs SQL on."""
    journal = next(iter(await query("PRAGMA journal_mode")))[0]
    synchronous = next(iter(await query("PRAGMA synchronous")))[0]
    return f"journal_mode={journal}, synchronous={_SYNCHRONOUS.get(synchronous, synchronous)}"


class Store(abc.ABC):
    """One way to keep a chat's conversation on disk, driven turn by turn by this benchmark.

    ``fill`` writes a history at once, on a closed store. ``open`` is the hydration: a fresh
    object opens the store and loads what the chat's next turn needs. Every store lives in its
    own ``directory``, so its bytes on disk are that directory's. ``turn`` numbers are unique
    and grow; the lane uses them as Telegram update ids.
    """

    #: Its row in the tables (Markdown) and its name in the notes and the plot.
    label: ClassVar[str]
    name: ClassVar[str]
    #: How it is set up, beyond what :meth:`settings` reads from it.
    setup: ClassVar[str]
    #: Modules of the ``bench`` extra it needs.
    needs: ClassVar[tuple[str, ...]] = ()

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    @classmethod
    def missing(cls) -> str | None:
        """The first module it needs that is not installed, if any."""
        for module in cls.needs:
            try:
                if importlib.util.find_spec(module) is None:
                    return module
            except ModuleNotFoundError:
                return module
        return None

    @abc.abstractmethod
    async def fill(self, corpus: list[str], turns: int) -> None:
        """Write a history of ``turns`` turns (texts from ``corpus``) at once."""

    async def settings(self) -> str:
        """How the open store is set up, its SQLite settings read from its own connection."""
        return self.setup

    def disk_bytes(self) -> int:
        """Bytes of every file the store keeps."""
        return sum(p.stat().st_size for p in self.directory.rglob("*") if p.is_file())

    @abc.abstractmethod
    async def open(self) -> None:
        """Open the store and load what the next turn needs (the hydration)."""

    @abc.abstractmethod
    async def turn(self, number: int, text: str) -> None:
        """Store one turn (``text`` and the reply); return once the store says it is saved."""

    @abc.abstractmethod
    async def user_texts(self) -> list[str]:
        """Every user text of the history as :meth:`open` found it, oldest first."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close what :meth:`open` opened."""


class _MessagesStore(Store):
    """A store of the conversation as a list of ``{"role", "content"}`` messages."""

    async def fill(self, corpus: list[str], turns: int) -> None:
        await self.open()
        try:
            await self._write_history([m for text in _history(corpus, turns) for m in _items(text)])
        finally:
            await self.close()

    @abc.abstractmethod
    async def _write_history(self, messages: list[dict[str, str]]) -> None: ...


class LaneStore(Store):
    """The lane: ``on_turn`` with a reply engine that answers at once."""

    label = "**the lane** (`on_turn`)"
    name = "the lane"
    setup = "`open_lane`, durability `full`; checkpoint: temp file, fsync, rename, fsync dir"

    def _settings(self) -> Settings:
        return lane_settings(self.directory, "lane", "full")

    async def fill(self, corpus: list[str], turns: int) -> None:
        """Write the history through the store, the real state fold on every turn."""
        settings = self._settings()
        db = await open_database(settings)
        lane = build_lane(settings, db)
        try:
            await fill(db, settings, [(CHAT, turns)], corpus)
            await lane.hydrate()  # writes the checkpoint
        finally:
            await lane.shutdown()

    async def open(self) -> None:
        settings = self._settings()
        self.db = await open_database(settings)
        self.lane = build_lane(settings, self.db)
        await self.lane.hydrate()
        self.engine = TrivialEngine()

    async def turn(self, number: int, text: str) -> None:
        message = InboundMessage(
            chat_id=CHAT, text=text, user_id=CHAT, speaker="Ada", update_id=number
        )
        await self.lane.on_turn(message, self.engine)

    async def user_texts(self) -> list[str]:
        # The lane keeps the recent turns only in memory: the rest is read from the log.
        return [t.user_text for t in await self.lane.inspector.history(CHAT, 10**9)]

    async def settings(self) -> str:
        return f"{self.setup}; {await _sqlite(self.db.fetchall)}"

    async def close(self) -> None:
        await self.lane.shutdown()


class PicklePersistenceStore(_MessagesStore):
    """python-telegram-bot's ``PicklePersistence``, flushed after every turn."""

    label = "python-telegram-bot `PicklePersistence`"
    name = "PicklePersistence"
    setup = (
        "one file, `on_flush=True`; `update_chat_data` + `flush()` per turn (`flush` pickles"
        " everything into `open('wb')`: truncated, then rewritten in place; no fsync)"
    )

    async def open(self) -> None:
        from telegram.ext import PicklePersistence

        self.persistence = PicklePersistence(
            self.directory / "bot.pickle", single_file=True, on_flush=True
        )
        chat_data = await self.persistence.get_chat_data()
        self.data = chat_data.get(CHAT, {"history": []})

    async def _write_history(self, messages: list[dict[str, str]]) -> None:
        self.data["history"] = messages
        await self._flush()

    async def turn(self, number: int, text: str) -> None:
        self.data["history"] += _items(text)
        await self._flush()

    async def _flush(self) -> None:
        # What Application does on its persistence interval, here after every turn.
        await self.persistence.update_chat_data(CHAT, self.data)
        await self.persistence.flush()

    async def user_texts(self) -> list[str]:
        return [m["content"] for m in self.data["history"] if m["role"] == "user"]

    async def close(self) -> None:
        """Nothing to close: the file is written by each flush."""


def _reply_node(state: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "assistant", "content": REPLY}]}


class LangGraphStore(_MessagesStore):
    """LangGraph's SQLite checkpointer under a one-node messages graph."""

    label = "LangGraph `AsyncSqliteSaver`"
    name = "LangGraph"
    setup = "`StateGraph(MessagesState)`, one node that appends the reply; `ainvoke` per turn"
    needs = ("langgraph.graph", "langgraph.checkpoint.sqlite.aio")

    async def open(self) -> None:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
        from langgraph.graph import START, MessagesState, StateGraph

        self.conn = await aiosqlite.connect(self.directory / "langgraph.db")
        self.saver = AsyncSqliteSaver(self.conn)
        builder = StateGraph(MessagesState)
        builder.add_node("reply", _reply_node)
        builder.add_edge(START, "reply")
        self.graph = builder.compile(checkpointer=self.saver)
        self.config: Any = {"configurable": {"thread_id": f"chat-{CHAT}"}}
        state = await self.graph.aget_state(self.config)
        self.messages: list[Any] = state.values.get("messages", [])

    async def _write_history(self, messages: list[dict[str, str]]) -> None:
        # One checkpoint holding the whole history; real use writes about three per turn,
        # each with the whole history, so this is kinder to it than a real bot would be.
        await self.graph.aupdate_state(self.config, {"messages": messages}, as_node="reply")

    async def turn(self, number: int, text: str) -> None:
        await self.graph.ainvoke({"messages": [{"role": "user", "content": text}]}, self.config)

    async def user_texts(self) -> list[str]:
        return [m.content for m in self.messages if m.type == "human"]

    async def settings(self) -> str:
        await self.saver.setup()
        return f"{self.setup}; {await _sqlite(self.conn.execute_fetchall)}"

    async def close(self) -> None:
        await self.conn.close()


class AgentsSessionStore(_MessagesStore):
    """The OpenAI Agents SDK's ``SQLiteSession`` on a file (no model, no network)."""

    label = "OpenAI Agents SDK `SQLiteSession`"
    name = "Agents SDK"
    setup = "a file; `add_items` (user + assistant) per turn"
    needs = ("agents",)

    async def open(self) -> None:
        from agents import SQLiteSession

        self.session = SQLiteSession(f"chat-{CHAT}", self.directory / "agents.db")
        self.items: list[Any] = await self.session.get_items()

    async def _write_history(self, messages: list[dict[str, str]]) -> None:
        await self.session.add_items(messages)

    async def turn(self, number: int, text: str) -> None:
        await self.session.add_items(_items(text))

    async def user_texts(self) -> list[str]:
        return [i["content"] for i in self.items if i.get("role") == "user"]

    async def settings(self) -> str:
        # The session's own (thread-local) connection: the library sets journal_mode only.
        conn = self.session._get_connection()

        async def query(sql: str) -> list[Any]:
            return conn.execute(sql).fetchall()

        return f"{self.setup}; {await _sqlite(query)}"

    async def close(self) -> None:
        self.session.close()


class JsonFileStore(_MessagesStore):
    """The whole history as one JSON file, rewritten after every turn."""

    label = "JSON file of the whole history"
    name = "JSON file"
    setup = "`json.dumps` of the list + `Path.write_text` (truncated, rewritten in place; no fsync)"

    async def open(self) -> None:
        self.path = self.directory / "history.json"
        text = self.path.read_text(encoding="utf-8") if self.path.exists() else "[]"
        self.history: list[dict[str, str]] = json.loads(text)

    async def _write_history(self, messages: list[dict[str, str]]) -> None:
        self.history = messages
        self.path.write_text(json.dumps(self.history), encoding="utf-8")

    async def turn(self, number: int, text: str) -> None:
        self.history += _items(text)
        self.path.write_text(json.dumps(self.history), encoding="utf-8")

    async def user_texts(self) -> list[str]:
        return [m["content"] for m in self.history if m["role"] == "user"]

    async def close(self) -> None:
        """Nothing to close: the file is written by each turn."""


STORES: list[type[Store]] = [
    LaneStore,
    PicklePersistenceStore,
    LangGraphStore,
    AgentsSessionStore,
    JsonFileStore,
]
