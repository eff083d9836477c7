"""A chat's sessions over time: ``/new``, ``/resume``, ``/clear``, erasure and pruning.

:class:`SessionLifecycle` runs the session commands of
:class:`~agent.memory.lane.ConversationLane`. The chat's open to-dos, commitments and reminders
belong to the chat, not the session: closing or resuming a session carries them in a bot-side
``carry`` turn committed in the same transaction (I6: a session's state is the fold of its own
log). Erasing a session (``/forget``, ``agent-memory forget``) or pruning old ones removes every
row, index entry and checkpoint file, then empties the write-ahead log.
Tested by ``tests/test_session_lifecycle.py`` and ``tests/test_chat_sessions.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from agent.db import Transaction
from agent.errors import SessionNotFound
from agent.memory.lane_parts.checkpoint_keeper import CheckpointKeeper
from agent.memory.lane_parts.live_sessions import LiveSession
from agent.memory.lane_parts.parts import LaneParts
from agent.memory.lane_parts.turn_commit import Prelude
from agent.memory.rules.session_rules import CARRIED_LOOP_KINDS
from agent.memory.schemas import (
    ConversationContextPacket,
    InboundMessage,
    JobRef,
    OpenLoop,
    Reply,
    SessionControl,
    SessionState,
)
from agent.utils import ids

__all__ = ["SessionLifecycle", "SessionSwitch"]


class CommitTurn(Protocol):
    """**Protocol:** the lane's turn commit, which a session command's turn goes through."""

    def __call__(
        self,
        live: LiveSession,
        is_new: bool,
        message: InboundMessage,
        reply: Reply,
        packet: ConversationContextPacket | None,
        *,
        control: SessionControl | None = None,
        prelude: Prelude | None = None,
    ) -> Awaitable[object]:
        """Commit the turn ``message`` -> ``reply`` in ``live`` (after ``prelude``)."""
        ...


@dataclass(frozen=True, slots=True)
class SessionSwitch:
    """What :meth:`ConversationLane.new_session` or :meth:`ConversationLane.resume_session` did.

    Attributes:
        closed: the session closed (``None``: the chat had none open).
        opened: the session open now (``None``: the chat's next message opens a fresh one).
        loops: the open to-dos and commitments carried into ``opened``.
        jobs: the scheduled reminders carried into ``opened``.
    """

    closed: str | None
    opened: str | None = None
    loops: tuple[OpenLoop, ...] = ()
    jobs: tuple[JobRef, ...] = ()


def _chat_items(state: SessionState) -> tuple[tuple[OpenLoop, ...], tuple[JobRef, ...]]:
    """Return what of a session belongs to its chat: open to-dos and commitments, and jobs."""
    loops = tuple(lp for lp in state.open_loops if lp.kind in CARRIED_LOOP_KINDS)
    return loops, state.active_job_refs


def _same_items(state: SessionState, loops: Sequence[OpenLoop], jobs: Sequence[JobRef]) -> bool:
    """Whether a session already has exactly these to-dos, commitments and jobs."""
    mine, my_jobs = _chat_items(state)

    def said(items: Sequence[OpenLoop]) -> list[tuple[str, str, str | None]]:
        return [(lp.kind, lp.text, lp.owner) for lp in items]

    return said(mine) == said(loops) and tuple(my_jobs) == tuple(jobs)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _carry_text(loops: Sequence[OpenLoop], jobs: Sequence[JobRef]) -> str:
    parts = [_plural(len(loops), "open to-do")] if loops else []
    parts += [_plural(len(jobs), "reminder")] if jobs else []
    return "Carried into this conversation: " + (" and ".join(parts) or "nothing open") + "."


class SessionLifecycle:
    """Opens, closes, resumes, clears and erases the sessions of chats.

    Args:
        parts: the lane's parts.
        keeper: writes checkpoints after the commits.
        commit_turn: the lane's turn commit (a session command's turn goes through it).
    """

    def __init__(
        self, parts: LaneParts, keeper: CheckpointKeeper, commit_turn: CommitTurn
    ) -> None:
        self._parts = parts
        self._keeper = keeper
        self._commit_turn = commit_turn

    async def new_session(self, chat_id: int) -> SessionSwitch | None:
        """See :meth:`agent.memory.lane.ConversationLane.new_session`."""
        parts = self._parts
        parts.check_open()
        async with parts.chat_locks[chat_id]:
            parts.check_open()
            live = await self._keeper.open_live(chat_id)
            if live is None:
                return None
            old = live.session.session_id
            loops, jobs = _chat_items(live.state)
            now = parts.clock()
            if not loops and not jobs:
                await parts.db.write(lambda tx: parts.store.close_session(tx, old, now=now))
                parts.forget_live(old)
                return SessionSwitch(closed=old)
            sid = ids.session_id()
            fresh = parts.sessions.new(
                live.session.model_copy(
                    update={
                        "session_id": sid,
                        "created_at": now,
                        "updated_at": now,
                        "closed_at": None,
                        "turn_count": 0,
                        "last_seq": 0,
                        "status": "active",
                        "state": SessionState(session_id=sid, chat_type=live.session.chat_type),
                    }
                )
            )
            await self._carry(fresh, True, old, loops, jobs, now=now)
            parts.forget_live(old)
            return SessionSwitch(closed=old, opened=sid, loops=loops, jobs=jobs)

    async def resume_session(self, chat_id: int, session_id: str) -> SessionSwitch:
        """See :meth:`agent.memory.lane.ConversationLane.resume_session`.

        Raises:
            SessionNotFound: the chat has no closed session with this id.
        """
        parts = self._parts
        parts.check_open()
        async with parts.chat_locks[chat_id]:
            parts.check_open()
            store, reader = parts.store, parts.db.reader
            target = await store.get_session(reader, session_id)
            if target is None or target.chat_id != chat_id or target.closed_at is None:
                raise SessionNotFound(f"chat {chat_id} has no closed session {session_id}")
            current = await self._keeper.open_live(chat_id)
            old = None if current is None else current.session.session_id
            loops, jobs = ((), ()) if current is None else _chat_items(current.state)
            recent = await store.recent_turns(reader, session_id, parts.builder.recent_turns)
            live = parts.sessions.new(target.model_copy(update={"closed_at": None}), recent)
            now = parts.clock()

            async def switch(tx: Transaction) -> None:
                if old is not None:
                    await store.close_session(tx, old, now=now)
                if not await store.reopen_session(tx, session_id, now=now):
                    raise SessionNotFound(f"session {session_id} was reopened meanwhile")

            if _same_items(live.state, loops, jobs):
                await parts.db.write(switch)
                parts.sessions.add(live)
                await self._keeper.save(live)
            else:
                await self._carry(live, False, old, loops, jobs, now=now, prelude=switch)
            if old is not None:
                parts.forget_live(old)
            if parts.summary_worker is not None:
                await parts.summary_worker.initialize([session_id])
            return SessionSwitch(closed=old, opened=session_id, loops=loops, jobs=jobs)

    async def _carry(
        self,
        live: LiveSession,
        is_new: bool,
        carried_from: str | None,
        loops: tuple[OpenLoop, ...],
        jobs: tuple[JobRef, ...],
        *,
        now: datetime,
        prelude: Prelude | None = None,
    ) -> None:
        # Under the chat's lock: the carry turn, after ``prelude`` (or closing the session the
        # items come from) in its transaction; then the session is the chat's.
        parts, session = self._parts, live.session

        async def close(tx: Transaction) -> None:
            if carried_from is not None:
                await parts.store.close_session(tx, carried_from, now=now)

        message = InboundMessage(
            chat_id=session.chat_id,
            text="",
            chat_type=session.chat_type,
            user_id=session.user_id,
        )
        reply = Reply(text=_carry_text(loops, jobs), intent="session_carried", job_refs=jobs)
        control = SessionControl(kind="carry", carried_from=carried_from, loops=loops)
        await self._commit_turn(
            live, is_new, message, reply, None, control=control, prelude=prelude or close
        )
        parts.sessions.add(live)

    async def clear_session(self, chat_id: int) -> int | None:
        """See :meth:`agent.memory.lane.ConversationLane.clear_session`."""
        parts = self._parts
        parts.check_open()
        async with parts.chat_locks[chat_id]:
            parts.check_open()
            live = await self._keeper.open_live(chat_id)
            if live is None:
                return None
            cleared = live.state.turn_count - live.state.cleared_through
            if cleared == 0:
                return 0
            message = InboundMessage(
                chat_id=chat_id, text="", chat_type=live.session.chat_type, user_id=None
            )
            reply = Reply(
                text="Cleared: the earlier turns stay on file; /recall finds them.",
                intent="session_cleared",
            )
            await self._commit_turn(
                live, False, message, reply, None, control=SessionControl(kind="clear")
            )
            return cleared

    async def forget_session(self, session_id: str) -> bool:
        """See :meth:`agent.memory.lane.ConversationLane.forget_session`."""
        parts = self._parts
        session = await parts.store.get_session(parts.db.reader, session_id)

        async def erase(tx: Transaction) -> bool:
            deleted = await parts.store.delete_session(tx, session_id)
            if deleted:
                # The full-text indexes keep tombstones next to erased text until merged.
                await parts.retriever.purge(tx)
            return deleted

        deleted = await parts.db.write(erase)
        await parts.checkpoints.delete(session_id)
        parts.forget_live(session_id)
        if session is not None:
            # Memories that came only from this session went with it.
            parts.memories.drop(session.chat_id)
        await parts.purge_erased()
        return deleted

    async def prune(self, *, older_than_days: float) -> list[str]:
        """See :meth:`agent.memory.lane.ConversationLane.prune`."""
        parts = self._parts
        cutoff = parts.clock() - timedelta(days=older_than_days)

        async def erase(tx: Transaction) -> list[str]:
            pruned = await parts.store.prune_sessions(tx, inactive_since=cutoff)
            if pruned:
                await parts.retriever.purge(tx)
            return pruned

        pruned = await parts.db.write(erase)
        for sid in pruned:
            await parts.checkpoints.delete(sid)
            parts.forget_live(sid)
        if pruned:
            await parts.memories.reload(parts.db.reader)
            await parts.purge_erased()
        return pruned
