"""The sessions a lane holds in memory: the ones in use as objects, the others packed.

A hydrated session is what the next turn of its chat needs without reading the database: the
session row, its state and its last raw turns. A bot holds one per chat it talks in, while only
a few chats talk at any moment, and as pydantic objects a session takes ~20 KB (10,000 of them
took 305 MB in ``bench/lane_cost.py``). So :class:`LiveSessions` keeps the ``resident`` most
recently used sessions as objects and packs the others: the JSON of the same models, compressed
with zlib (a twelve-turn session: 4.4 KB of JSON, ~1.7 KB packed; compressing also copies the
JSON out of the buffer orjson allocates, which holds 16 KB for those 4.4), turned back into
objects when their chat talks again (~30 us each way). What a lane asks of every session at
once (its chat, its active jobs, whether its checkpoint file is written) is kept beside the
packed bytes, so no pass over all sessions unpacks one.

A session whose chat is busy (a turn of it is under way: ``busy(chat_id)``) is never packed:
the turn holds the object and will change its state, and the packed bytes would miss it.

Packed sessions are bounded too (:data:`PACKED_PER_RESIDENT` per resident one): past that, the
least recently used are let go, as if never hydrated since the start. Their chat's next
message, command, edit or due job hydrates them again from the database, their checkpoint
checked first (I5), as a lazy start does. A session with active jobs (its reminders are
scheduled from :meth:`LiveSessions.active_jobs`) or whose checkpoint is not written (the
maintenance job rewrites it from :meth:`LiveSessions.unwritten`) is kept.

Covered by ``tests/test_conversation_memory.py`` (resident and packed sessions).
"""

from __future__ import annotations

import zlib
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from agent.memory.schemas import (
    ConversationSession,
    ConversationTurn,
    JobRef,
    SessionState,
    SessionStatus,
    dump_json,
)

__all__ = ["PACKED_PER_RESIDENT", "LiveSession", "LiveSessions"]

#: Sessions kept as objects by default (the rest are packed; see the module docstring).
DEFAULT_RESIDENT = 256
#: Packed sessions kept per resident one; the least recently used others are let go.
PACKED_PER_RESIDENT = 16


@dataclass(slots=True)
class LiveSession:
    """A hydrated session: what the next turn needs, held in memory.

    Attributes:
        session: the session's row (its ``state`` is that of when the row was read).
        state: the session's state now.
        recent: its last raw turns, oldest first.
        checkpoint_status: the status in the checkpoint file on disk; ``None`` when the file
            is missing or behind the turn log.
        saved: this process saved the session's whole state since it was read, so the
            database holds its parts as they are in ``state`` (a row saved before migration
            0019 holds them in its state JSON, until its next whole save): a turn then saves
            only the parts it changed (:func:`~agent.memory.conversation_store.encode_state`).
    """

    session: ConversationSession
    state: SessionState
    recent: deque[ConversationTurn]
    checkpoint_status: SessionStatus | None = None
    saved: bool = False


class _Packing(BaseModel):
    """What a packed session holds (as compressed JSON)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session: ConversationSession
    recent: tuple[ConversationTurn, ...]


@dataclass(frozen=True, slots=True)
class _Packed:
    chat_id: int
    data: bytes
    jobs: tuple[JobRef, ...]
    checkpoint_status: SessionStatus | None


class LiveSessions:
    """Every hydrated session of a lane, by session id and by chat.

    Args:
        recent_turns: how many last turns a session keeps (its ``recent`` deque's length).
        busy: whether a chat has a turn under way (its session is then never packed).
        resident: how many sessions stay objects; the least recently used others are packed.
    """

    def __init__(
        self,
        *,
        recent_turns: int,
        busy: Callable[[int], bool],
        resident: int = DEFAULT_RESIDENT,
    ) -> None:
        if resident < 1:
            raise ValueError("resident must be at least 1")
        self._maxlen = max(recent_turns, 1)
        self._busy = busy
        self._resident_limit = resident
        self._packed_limit = resident * PACKED_PER_RESIDENT
        self._resident: OrderedDict[str, LiveSession] = OrderedDict()
        self._packed: dict[str, _Packed] = {}
        self._by_chat: dict[int, str] = {}

    @property
    def resident_limit(self) -> int:
        """How many sessions stay objects (the rest are packed)."""
        return self._resident_limit

    def __len__(self) -> int:
        return len(self._resident) + len(self._packed)

    def new(
        self, session: ConversationSession, recent: Iterable[ConversationTurn] = ()
    ) -> LiveSession:
        """Return a live session for ``session`` (not added: see :meth:`add`)."""
        return LiveSession(
            session=session, state=session.state, recent=deque(recent, maxlen=self._maxlen)
        )

    def add(self, live: LiveSession) -> None:
        """Hold ``live`` as its chat's session (replacing the chat's previous one)."""
        sid = live.session.session_id
        self._packed.pop(sid, None)
        self._resident[sid] = live
        self._resident.move_to_end(sid)
        self._by_chat[live.session.chat_id] = sid
        self._pack_idle()

    def get(self, session_id: str) -> LiveSession | None:
        """Return a session as an object (unpacking it if packed), or ``None``."""
        live = self._resident.get(session_id)
        if live is not None:
            self._resident.move_to_end(session_id)
            self._pack_idle()  # those left over the limit while they were busy
            return live
        packed = self._packed.get(session_id)
        if packed is None:
            return None
        self.add(live := self._unpack(packed))
        return live

    def for_chat(self, chat_id: int) -> LiveSession | None:
        """Return the chat's session as an object, or ``None``."""
        sid = self._by_chat.get(chat_id)
        return None if sid is None else self.get(sid)

    def session_id_for_chat(self, chat_id: int) -> str | None:
        """Return the id of the chat's session, without unpacking it."""
        return self._by_chat.get(chat_id)

    def chat_id_of(self, session_id: str) -> int | None:
        """Return the chat of a session, without unpacking it."""
        live = self._resident.get(session_id)
        if live is not None:
            return live.session.chat_id
        packed = self._packed.get(session_id)
        return None if packed is None else packed.chat_id

    def discard(self, session_id: str) -> None:
        """Let go of a session (closed or erased); its chat has none afterwards."""
        chat_id = self.chat_id_of(session_id)
        self._resident.pop(session_id, None)
        self._packed.pop(session_id, None)
        if chat_id is not None and self._by_chat.get(chat_id) == session_id:
            del self._by_chat[chat_id]

    def active_jobs(self) -> list[tuple[int, JobRef]]:
        """Return ``(chat_id, job)`` for every active job of every session."""
        jobs = [
            (live.session.chat_id, job)
            for live in self._resident.values()
            for job in live.state.active_job_refs
        ]
        jobs += [(packed.chat_id, job) for packed in self._packed.values() for job in packed.jobs]
        return jobs

    def unwritten(self) -> list[str]:
        """Return the ids of the sessions whose checkpoint file is missing or behind."""
        ids = [sid for sid, live in self._resident.items() if live.checkpoint_status is None]
        ids += [sid for sid, packed in self._packed.items() if packed.checkpoint_status is None]
        return ids

    def each(self) -> Iterator[LiveSession]:
        """Yield every session as an object; packed ones are unpacked one at a time and stay
        packed (for passes over all sessions, such as the checkpoints written at shutdown)."""
        yield from list(self._resident.values())
        for packed in list(self._packed.values()):
            yield self._unpack(packed)

    def _unpack(self, packed: _Packed) -> LiveSession:
        form = _Packing.model_validate_json(zlib.decompress(packed.data))
        live = self.new(form.session, form.recent)
        live.checkpoint_status = packed.checkpoint_status
        return live

    def _pack_idle(self) -> None:
        excess = len(self._resident) - self._resident_limit
        if excess <= 0:
            return
        idle: list[LiveSession] = []
        for live in self._resident.values():  # least recently used first
            if len(idle) == excess:
                break
            if not self._busy(live.session.chat_id):
                idle.append(live)
        for live in idle:
            sid = live.session.session_id
            del self._resident[sid]
            session = live.session
            if live.state is not session.state:  # the row's state is older (a turn since)
                session = session.model_copy(update={"state": live.state})
            form = _Packing(session=session, recent=tuple(live.recent))
            self._packed[sid] = _Packed(
                chat_id=live.session.chat_id,
                data=zlib.compress(dump_json(form), 1),
                jobs=live.state.active_job_refs,
                checkpoint_status=live.checkpoint_status,
            )
        self._let_go()

    def _let_go(self) -> None:
        excess = len(self._packed) - self._packed_limit
        if excess <= 0:
            return
        idle: list[str] = []
        for sid, packed in self._packed.items():  # least recently packed first
            if len(idle) == excess:
                break
            if not packed.jobs and packed.checkpoint_status is not None:
                idle.append(sid)
        for sid in idle:
            self.discard(sid)
