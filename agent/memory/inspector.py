"""The one door for reading, checking and repairing the memory: :class:`MemoryInspector`.

The bot's commands (``/memory``, ``/recall``, ``/facts``, ``/sessions``, ``/save``,
``/export``...), the ``agent-memory`` tool, the benchmarks and the tests read what the lane
remembers here, never through the lane's collaborators. It is had from a lane
(:attr:`ConversationLane.inspector <agent.memory.lane.ConversationLane.inspector>`) and reads
two ways:

* **what the lane holds** for a chat's open session (the packet the next reply would get, the
  last turns, the ``/save`` report, the checkpoint as it would be written): needs a hydrated
  lane, as in the bot;
* **what the database and the checkpoint directory hold** for any session, open or closed:
  works on a lane that was never hydrated, as ``agent-memory`` opens one beside a running bot
  (reads go through the read-only connections, which in WAL mode never wait for the bot).

Repairs (a checkpoint rewritten from the database, an exported session imported) take the
database's write lock like any write. Tested by ``tests/test_memory_inspector.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

from agent.db.statistics import MemoryStatistics, read_statistics
from agent.errors import CheckpointError, SessionNotFound
from agent.memory.conversation_store import TurnEdit
from agent.memory.lane_parts.checkpoint_keeper import CheckpointKeeper
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.ops.checkpoint_audit import CheckpointCheck
from agent.memory.ops.session_archive import export_session, import_session
from agent.memory.schemas import (
    ConversationCheckpointSnapshot,
    ConversationContextPacket,
    ConversationSession,
    ConversationTurn,
    Memory,
    RetrievedItem,
    SessionArchive,
    SessionState,
    SessionStatus,
    SummaryVersion,
    dump_json,
)

__all__ = ["ChatSession", "MemoryInspector", "SaveReport"]


@dataclass(frozen=True, slots=True)
class ChatSession:
    """One session of a chat as ``/sessions`` lists it.

    Attributes:
        number: its place among the chat's sessions, oldest first, from 1.
        session_id: its id.
        started: when it was opened.
        last_active: its last turn (or when it was closed).
        turns: how many turns it has.
        first_words: its first user message ("" if none).
        current: whether it is the chat's open session.
    """

    number: int
    session_id: str
    started: datetime
    last_active: datetime
    turns: int
    first_words: str
    current: bool


@dataclass(frozen=True, slots=True)
class SaveReport:
    """Where a chat's open session stands on disk (``/save``).

    Attributes:
        session_id: the session.
        turns: the turns committed.
        last_commit: when the last of them was committed (``None``: none yet).
        checkpoint_written: when its checkpoint file was last written (``None``: not written).
    """

    session_id: str
    turns: int
    last_commit: datetime | None
    checkpoint_written: datetime | None


async def _up_to(
    turns: AsyncIterable[ConversationTurn], seq: int
) -> AsyncIterator[ConversationTurn]:
    async for turn in turns:
        if turn.seq <= seq:  # later turns belong to a state committed after the one read
            yield turn


class MemoryInspector:
    """Reads, checks and repairs what a lane remembers (see the module docstring).

    Args:
        parts: the lane's parts.
        keeper: the lane's checkpoint upkeep.
    """

    def __init__(self, parts: LaneParts, keeper: CheckpointKeeper) -> None:
        self._parts = parts
        self._keeper = keeper

    # -- settings --------------------------------------------------------------------------

    @property
    def token_budget(self) -> int:
        """The packet's token budget (what ``/stats`` compares a packet with)."""
        return self._parts.builder.token_budget

    @property
    def recent_turns(self) -> int:
        """How many raw turns a packet (and a checkpoint) carries."""
        return self._parts.builder.recent_turns

    @property
    def checkpoint_directory(self) -> Path | None:
        """The directory of the checkpoint files (``None``: checkpoints are database rows only)."""
        return self._parts.checkpoints.directory

    def now(self) -> datetime:
        """Return the current time by the lane's clock."""
        return self._parts.clock()

    # -- a chat's open session, as the lane holds it ---------------------------------------

    async def packet(self, chat_id: int) -> ConversationContextPacket | None:
        """Return the chat's packet from what the lane holds, without retrieval.

        The state, last turns, memories and summaries, as a turn's packet has them but with no
        retrieved items (those depend on the next message: see :meth:`context`). ``None`` for
        an unknown chat.
        """
        live = self._parts.sessions.for_chat(chat_id)
        return None if live is None else await self._parts.packet(live)

    async def context(
        self, chat_id: int, text: str | None = None
    ) -> ConversationContextPacket | None:
        """Return the packet a message ``text`` would get now, retrieval included.

        Without ``text`` (``/memory``: the next message is not known yet) the retrieval query
        is the chat's last message, and the active topics as always. Nothing is written.

        Returns:
            The packet, or ``None`` for a chat with no open session.
        """
        live = self._parts.sessions.for_chat(chat_id)
        if live is None:
            return None
        if text is None:
            text = live.recent[-1].user_text if live.recent else ""
        return await self._parts.packet_for(live, text, is_new=False)

    async def recall(self, chat_id: int, words: str, limit: int = 5) -> list[RetrievedItem]:
        """Search the chat's open session and memories for ``words``, best first (``/recall``).

        The same retriever and scores as a turn's packet, over every turn of the session
        (the latest included) and the chat's long-term memories.
        """
        live = self._parts.sessions.for_chat(chat_id)
        if live is None or limit < 1:
            return []
        return await self._recall(live.session.chat_id, live.session.session_id, words, limit,
                                  live.state)  # fmt: skip

    async def history(self, chat_id: int, limit: int) -> list[ConversationTurn]:
        """Return the last ``limit`` turns of the chat's open session, oldest first."""
        sid = self._parts.sessions.session_id_for_chat(chat_id)
        if sid is None or limit < 1:
            return []
        return await self.recent(sid, limit)

    async def save_report(self, chat_id: int) -> SaveReport | None:
        """Say when the chat's open session was last committed and checkpointed (``/save``).

        Every turn is committed before its reply is sent and its checkpoint written right
        after; a checkpoint whose write failed is written again now. ``None``: no open session.
        """
        parts = self._parts
        parts.check_open()
        sid = parts.sessions.session_id_for_chat(chat_id)
        if sid is None:
            return None
        await self._keeper.rewrite(sid)
        live = parts.sessions.get(sid)
        if live is None:
            return None
        try:
            snapshot = await parts.checkpoints.load(sid)
        except CheckpointError:
            snapshot = None
        return SaveReport(
            session_id=sid,
            turns=live.state.turn_count,
            last_commit=live.recent[-1].created_at if live.recent else None,
            checkpoint_written=None if snapshot is None else snapshot.written_at,
        )

    def checkpoint_bytes(self, session_id: str) -> bytes:
        """Return the checkpoint JSON of an open session, as its file holds it (for exports).

        Raises:
            SessionNotFound: the session is not open in this lane.
        """
        live = self._parts.sessions.get(session_id)
        if live is None:
            raise SessionNotFound(f"session {session_id} is not open")
        return dump_json(self._keeper.snapshot(live), indent=True)

    async def chat_memories(self, chat_id: int) -> tuple[Memory, ...]:
        """Return the long-term memories the chat's packets carry: the most important current
        ones, then the most recently superseded."""
        return await self._parts.memories.of(self._parts.db.reader, chat_id)

    # -- any session, as the database holds it ---------------------------------------------

    async def session(self, session_id: str) -> ConversationSession | None:
        """The session row of ``session_id`` (open or closed), or ``None``."""
        return await self._parts.store.get_session(self._parts.db.reader, session_id)

    async def open_session(self, chat_id: int) -> ConversationSession | None:
        """The row of the chat's open session in the database, or ``None``."""
        return await self._parts.store.open_session_for_chat(self._parts.db.reader, chat_id)

    async def sessions(
        self,
        *,
        chat_id: int | None = None,
        status: SessionStatus | None = None,
        open_only: bool = False,
    ) -> list[ConversationSession]:
        """Return every session (of ``chat_id``; with ``status``; open ones only)."""
        return await self._parts.store.list_sessions(
            self._parts.db.reader, limit=None, chat_id=chat_id, status=status, open_only=open_only
        )

    async def chat_sessions(self, chat_id: int) -> list[ChatSession]:
        """Return the chat's sessions, oldest first, numbered from 1 (``/sessions``)."""
        rows = await self.sessions(chat_id=chat_id)
        rows.sort(key=lambda row: (row.created_at, row.session_id))
        store, reader = self._parts.store, self._parts.db.reader
        words = await store.first_words(reader, [row.session_id for row in rows])
        return [
            ChatSession(
                number=number,
                session_id=row.session_id,
                started=row.created_at,
                last_active=row.updated_at,
                turns=row.turn_count,
                first_words=words.get(row.session_id, ""),
                current=row.closed_at is None,
            )
            for number, row in enumerate(rows, start=1)
        ]

    def turns(self, session_id: str) -> AsyncIterator[ConversationTurn]:
        """Yield every turn of a session, oldest first."""
        return self._parts.store.iter_turns(self._parts.db.reader, session_id)

    async def recent(self, session_id: str, limit: int) -> list[ConversationTurn]:
        """Return the last ``limit`` turns of a session, oldest first."""
        return await self._parts.store.recent_turns(self._parts.db.reader, session_id, limit)

    async def turn(self, session_id: str, seq: int) -> ConversationTurn | None:
        """Return turn ``seq`` of a session as the database has it (``None``: no such turn)."""
        return await self._parts.store.get_turn(self._parts.db.reader, session_id, seq)

    async def edit_history(self, session_id: str, seq: int) -> list[TurnEdit]:
        """Return the texts a turn's message had before its edits, oldest first."""
        return await self._parts.store.turn_edits(self._parts.db.reader, session_id, seq)

    async def undelivered_count(self, limit: int) -> int:
        """Count the answered turns not delivered yet (I4), up to ``limit``."""
        reader = self._parts.db.reader
        return len(await self._parts.store.undelivered_turns(reader, limit=limit))

    async def summary_history(
        self, session_id: str, *, limit: int | None = None
    ) -> list[SummaryVersion]:
        """Return a session's summary version chain, oldest first (for audits and tools).

        Args:
            session_id: the session.
            limit: only the newest this many versions.
        """
        reader = self._parts.db.reader
        return await self._parts.summary_store.history(reader, session_id, limit=limit)

    async def facts(self, chat_id: int, *, history: bool = False) -> list[Memory]:
        """Return what the chat's long-term memory keeps (``/facts``), by kind then age.

        Args:
            chat_id: the chat.
            history: include the values that were superseded (``valid_until`` set).
        """
        reader = self._parts.db.reader
        return await self._parts.memory_store.listing(reader, chat_id, history=history)

    async def facts_as_of(self, chat_id: int, moment: datetime) -> list[Memory]:
        """Return the chat's memories that were true at ``moment``."""
        return await self._parts.memory_store.as_of(self._parts.db.reader, chat_id, moment)

    async def statistics(self) -> MemoryStatistics:
        """Count the rows of the memory's tables by status (reads every table once)."""
        return await read_statistics(self._parts.db.reader)

    async def integrity_problems(self) -> list[str]:
        """Return what the database's integrity and foreign-key checks report (empty: none)."""
        return await self._parts.db.integrity_problems()

    async def packet_of(self, session: ConversationSession) -> ConversationContextPacket:
        """Return the packet ``session``'s next reply would get, as ``/memory`` shows it.

        Read from the database (any session, open or closed), with the retrieval query
        ``/memory`` uses: the session's last message (the next one is not known yet).
        """
        parts = self._parts
        state, now = session.state, parts.clock()
        recent = await self.recent(session.session_id, max(parts.builder.recent_turns, 1))
        chat = session.chat_id
        memories = await self.chat_memories(chat)
        retrieved = await parts.db.read(
            partial(
                parts.retriever.for_packet,
                chat_id=chat,
                session_id=session.session_id,
                text=recent[-1].user_text if recent else "",
                now=now,
                state=state,
                recent_turns=parts.builder.recent_turns,
                token_budget=parts.builder.token_budget,
            )
        )
        return parts.builder.build(state, recent, now=now, memories=memories, retrieved=retrieved)

    async def recall_in(
        self, session: ConversationSession, words: str, limit: int
    ) -> list[RetrievedItem]:
        """Search a session and its chat's memories for ``words``, best first.

        The bot's retriever and scores, over every turn of the session (open or closed),
        without the topic query (what is searched is the words alone).
        """
        return await self._recall(session.chat_id, session.session_id, words, limit, session.state)

    async def _recall(
        self, chat_id: int, session_id: str, words: str, limit: int, state: SessionState
    ) -> list[RetrievedItem]:
        parts = self._parts
        recall = partial(
            parts.retriever.recall,
            chat_id=chat_id,
            session_id=session_id,
            words=words,
            now=parts.clock(),
            state=state,
        )
        return (await parts.db.read(recall))[:limit]

    async def rebuild_state(self, session_id: str) -> SessionState:
        """Fold a session's whole turn log into its state (I6; reads every turn).

        Raises:
            SessionNotFound: no such session.
        """
        session = await self.session(session_id)
        if session is None:
            raise SessionNotFound(f"no session {session_id}")
        return await self._parts.states.rebuild(
            session_id, self.turns(session_id), chat_type=session.chat_type
        )

    async def state_differs(self, session_id: str) -> bool:
        """Whether a session's stored state differs from the fold of its turn log (I6).

        The row and its turns are read from one snapshot: an edited message changes a past
        turn and the state in one commit, which a fold read across two snapshots would take
        for a mismatch. A session erased meanwhile does not differ.
        """
        parts = self._parts
        async with parts.db.snapshot() as reader:
            row = await parts.store.get_session(reader, session_id)
            if row is None:
                return False  # erased meanwhile
            state = row.state
            turns = parts.store.iter_turns(reader, session_id)
            rebuilt = await parts.states.rebuild(
                session_id, _up_to(turns, state.turn_count), chat_type=row.chat_type
            )
        return rebuilt.log_view() != state.log_view()

    # -- checkpoint files -------------------------------------------------------------------

    async def checkpoint(self, session_id: str) -> ConversationCheckpointSnapshot | None:
        """Return the snapshot a session's checkpoint file holds (``None``: no file).

        Raises:
            CheckpointError: the file is unreadable, corrupt or of an unknown version.
        """
        return await self._parts.checkpoints.load(session_id)

    def checkpoint_path(self, session_id: str) -> Path | None:
        """Return where a session's checkpoint file is or would be (``None``: no files)."""
        return self._parts.checkpoints.path_for(session_id)

    async def checkpoint_ids(self) -> list[str]:
        """Return the session ids that have a checkpoint."""
        return await self._parts.checkpoints.session_ids()

    async def check(self, session: ConversationSession) -> CheckpointCheck:
        """Return how the session's checkpoint file compares with ``session`` (never raises)."""
        return await self._keeper.audit().check(session)

    async def check_all(self, *, settle: float | None = None) -> list[CheckpointCheck]:
        """Check the checkpoint of every session, and every file without a session.

        See :meth:`agent.memory.ops.checkpoint_audit.CheckpointAudit.check_all`; ``settle``
        (seconds) overrides how long a mismatch is given to resolve.
        """
        audit, reader = self._keeper.audit(), self._parts.db.reader
        if settle is None:
            return await audit.check_all(reader)
        return await audit.check_all(reader, settle=settle)

    async def repair(self, session_id: str) -> bool:
        """Rewrite a session's checkpoint from the database, or delete it if it has no session.

        Returns:
            ``True`` if the file was rewritten, ``False`` if it was deleted (an orphan).

        Raises:
            DatabaseLocked: another process held the write lock past the lock timeout.
            CheckpointError: the file could not be written.
        """
        return await self._keeper.audit().repair(self._parts.db, session_id)

    # -- moving sessions in and out ---------------------------------------------------------

    async def export(self, session_id: str) -> SessionArchive | None:
        """Return a session with every turn of its log (``None``: no such session)."""
        parts = self._parts
        return await export_session(parts.db.reader, parts.store, session_id, now=parts.clock())

    async def import_archive(self, archive: SessionArchive) -> SessionState:
        """Re-create an exported session in one write transaction, then write its checkpoint.

        Returns:
            The imported session's state (folded from its turns again).

        Raises:
            ArchiveError: the archive cannot be imported (nothing of it was committed).
        """
        parts = self._parts
        state = await parts.db.write(
            lambda tx: import_session(
                tx,
                archive,
                store=parts.store,
                states=parts.states,
                summary_store=parts.summary_store,
                memory_store=parts.memory_store,
                promotion=parts.promotion,
            )
        )
        # After the commit, as every checkpoint: the file is never ahead of the database (I5).
        await self.repair(archive.session.session_id)
        return state

    async def wait_summaries(self) -> None:
        """Wait until no model summary runs or waits to run (tests and benchmarks)."""
        if self._parts.summary_worker is not None:
            await self._parts.summary_worker.wait_idle()
