"""Whole-session export and import: a session's row and its turn log as one JSON document.

:func:`export_session` reads a session and every turn of it into a
:class:`~agent.memory.schemas.SessionArchive`; :func:`import_session` writes one back inside
the caller's write transaction, the way the lane wrote it turn by turn: each turn is appended
with its ids, update key and delivery state, the state is folded from the turns again (I6)
with the summary version each fold makes, and the facts a private chat's turns stated go
through the promotion gate of long-term memory again. Export, ``/forget``, import therefore
gives the same session state, turn log and summary chain. Model summaries (optional, never
state) are not carried.

An archive that cannot be imported is refused with :class:`~agent.errors.ArchiveError` before
anything of it is committed: its session id exists, its chat already has another open session,
its turns are not one gap-free log of the session, an update of it is already another
session's turn, or its turns fold into another state than the one it carries (the summary
settings differ from the exporting bot's, or the file was edited).

Covered by ``tests/test_cli.py`` (``export``, ``import``) and ``tests/test_chat_service.py``
(``/export``).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import ValidationError

from agent.db import Transaction
from agent.errors import ArchiveError
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_store import ConversationStore
from agent.memory.longterm.memory_store import MemoryStore
from agent.memory.rules.session_rules import PERSONAL_CHAT_TYPES
from agent.memory.schemas import (
    ARCHIVE_SCHEMA_VERSION,
    ConversationSession,
    ConversationTurn,
    SessionArchive,
    SessionState,
)
from agent.memory.summaries.summary_store import SummaryStore
from agent.memory.writer import (
    PromotionPolicy,
    memory_candidates,
    write_if_worthy,
    write_summary_version,
)
from agent.utils.ids import is_session_id

__all__ = ["export_session", "import_session", "parse_archive"]

# The chat types whose facts become long-term memories: the lane promotes from private talk
# only (in a group, "my name is" speaks for one member, not for the chat).


async def export_session(
    conn: Transaction, store: ConversationStore, session_id: str, *, now: datetime
) -> SessionArchive | None:
    """Return a session with every turn of its log, or ``None`` if there is no such session.

    Safe on a database a running bot writes to: the turns are those of the state read (a turn
    appended meanwhile belongs to a later state and is left out).

    Args:
        conn: any connection (normally ``db.reader``).
        store: the storage backend.
        session_id: the session.
        now: the export time recorded in the archive.
    """
    session = await store.get_session(conn, session_id)
    if session is None:
        return None
    turns = [
        turn
        async for turn in store.iter_turns(conn, session_id)
        if turn.seq <= session.state.turn_count
    ]
    return SessionArchive(session=session, turns=tuple(turns), exported_at=now)


def parse_archive(data: bytes, *, name: str = "archive") -> SessionArchive:
    """Validate the bytes of an exported session.

    Raises:
        ArchiveError: not JSON, not a session export, or of another format version.
    """
    try:
        archive = SessionArchive.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "file"
        raise ArchiveError(f"{name} is not a session export ({where}: {first['msg']})") from exc
    if archive.schema_version != ARCHIVE_SCHEMA_VERSION:
        raise ArchiveError(
            f"{name} has export format {archive.schema_version}, expected {ARCHIVE_SCHEMA_VERSION}"
        )
    if not is_session_id(archive.session.session_id):
        raise ArchiveError(f"{name} holds no session id of ours: {archive.session.session_id!r}")
    return archive


async def import_session(
    tx: Transaction,
    archive: SessionArchive,
    *,
    store: ConversationStore,
    states: ConversationStateManager,
    summary_store: SummaryStore,
    memory_store: MemoryStore,
    promotion: PromotionPolicy,
) -> SessionState:
    """Re-create an exported session, its turns, summary chain and memories, in ``tx``.

    Args:
        tx: a connection inside an open write transaction (:meth:`agent.db.Database.write`).
        archive: the exported session.
        store: the storage backend.
        states: the state rules (with the summary settings of the bot that will use it).
        summary_store: the summary version chain's storage.
        memory_store: the long-term memory storage.
        promotion: the gate that decides what becomes a long-term memory.

    Returns:
        The session's state as imported (its status the exported one).

    Raises:
        ArchiveError: the archive cannot be imported (see the module docstring); raised
            before the transaction commits, so nothing of it is kept.
        StorageError: the database refused a write.
    """
    exported = archive.session
    sid = exported.session_id
    if await store.get_session(tx, sid) is not None:
        raise ArchiveError(f"session {sid} already exists; forget it first to import it again")
    if exported.closed_at is None:
        current = await store.open_session_for_chat(tx, exported.chat_id)
        if current is not None:
            raise ArchiveError(
                f"chat {exported.chat_id} already has an open session ({current.session_id});"
                " forget it first, or import into another database"
            )
    await store.create_session(
        tx,
        session_id=sid,
        chat_id=exported.chat_id,
        chat_type=exported.chat_type,
        user_id=exported.user_id,
        title=exported.title,
        now=exported.created_at,
        closed_at=exported.closed_at,  # a closed session never takes its chat's open place
    )
    state = SessionState(session_id=sid, chat_type=exported.chat_type)
    for turn in archive.turns:
        state = await _replay(tx, exported, state, turn, store, states, summary_store)
        if exported.chat_type in PERSONAL_CHAT_TYPES:
            await write_if_worthy(
                tx,
                memory_store,
                exported.chat_id,
                memory_candidates(turn, promotion),
                session_id=sid,
                seq=turn.seq,
                now=turn.created_at,
                policy=promotion,
            )
    if state.log_view() != exported.state.log_view():
        raise ArchiveError(
            f"the turns of session {sid} fold into another state than the one exported: "
            "set AGENT_SUMMARIZE_EVERY, AGENT_RECENT_TURNS and AGENT_SUMMARY_MAX_CHARS as the "
            "exporting bot had them"
        )
    state = state.model_copy(update={"status": exported.status})
    await store.save_state(tx, state, last_seq=state.turn_count, now=exported.updated_at)
    return state


async def _replay(
    tx: Transaction,
    session: ConversationSession,
    state: SessionState,
    turn: ConversationTurn,
    store: ConversationStore,
    states: ConversationStateManager,
    summary_store: SummaryStore,
) -> SessionState:
    """Append one archived turn and return the state after it (with its summary version)."""
    try:
        after = states.apply(state, turn)
    except ValueError as exc:
        raise ArchiveError(f"the turns of session {session.session_id} are no log: {exc}") from exc
    if not await store.append_turn(tx, turn):
        raise ArchiveError(
            f"turn {turn.seq} of session {session.session_id} (Telegram update "
            f"{turn.update_id}) is already a turn of another session"
        )
    # The chain row of a fold is written with its turn, at the turn's time, as the lane does.
    await write_summary_version(tx, summary_store, state, after, now=turn.created_at)
    return after
