"""Commands that read the memory: ``sessions``, ``show``, ``history`` and ``recall``.

They never write, so they run beside a live bot without waiting for it (WAL readers).

Covered by ``tests/test_cli.py`` (the real program).
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Callable
from typing import Any, get_args

from agent.cli.arguments import CommandError, Commands, add_json, add_session, moment, positive
from agent.cli.opened import OpenedMemory
from agent.cli.render import Column, Output, Section, ago, excerpt, timestamp
from agent.db.search import index_tokens
from agent.memory import (
    CheckpointCheck,
    ConversationSession,
    ConversationTurn,
    Memory,
    SessionState,
    render_packet,
)
from agent.memory.schemas import SessionStatus

__all__ = ["VERDICT_STYLES", "register", "session_status", "session_title", "state_sections"]

#: How a checkpoint's verdict looks in a terminal (any other: red, a problem).
VERDICT_STYLES = {"matches": "green", "writing": "yellow", "-": ""}
#: The status a closed session is shown (and filtered) with: its stored one is stale.
CLOSED = "closed"
# Each order: the key, and whether the largest comes first.
_SORTS: dict[str, tuple[Callable[[ConversationSession], Any], bool]] = {
    "activity": (lambda s: s.updated_at, True),
    "created": (lambda s: s.created_at, True),
    "turns": (lambda s: s.turn_count, True),
    "chat": (lambda s: s.chat_id, False),
    "id": (lambda s: s.session_id, False),
}
_TEXT = 300  # characters of a turn's text `history` prints per line, in a terminal
_GREP_BATCH = 256  # turns tokenized at once by `history --grep`


def session_title(session: ConversationSession) -> str:
    """Return who or what a session is with: the chat's title, or its user."""
    if session.title:
        return session.title
    return f"user {session.user_id}" if session.user_id is not None else "-"


def session_status(session: ConversationSession) -> str:
    """Return a session's status as shown: ``closed`` for one ended by ``/new``."""
    return CLOSED if session.closed_at is not None else session.status


def state_sections(state: SessionState) -> list[tuple[str, list[Column], list[list[str]]]]:
    """Return the parts of a session state as ``(title, columns, rows)`` tables.

    The open loops, clarifications, topics, jobs and facts of every session; the
    participants, proposals and decisions of groups, when there are any.
    """
    sections = [
        (
            "Open loops",
            [Column("ID"), Column("KIND"), Column("OPENED", right=True), Column("OWNER"),
             Column("TEXT", cut=True)],
            [[lp.loop_id, lp.kind, str(lp.opened_turn), lp.owner or "-", lp.text]
             for lp in state.open_loops],
        ),
        (
            "Pending clarifications",
            [Column("ASKED", right=True), Column("OF"), Column("QUESTION", cut=True)],
            [[str(c.asked_turn), c.asked_of or "-", c.question]
             for c in state.pending_clarifications],
        ),
        (
            "Topics",
            [Column("TOPIC", cut=True), Column("WEIGHT", right=True), Column("LAST", right=True)],
            [[t.name, f"{t.weight:.2f}", str(t.last_turn)] for t in state.active_topics],
        ),
        (
            "Reminders and jobs",
            [Column("JOB"), Column("KIND"), Column("DUE"), Column("STATUS"),
             Column("LABEL", cut=True)],
            [[j.job_id, j.kind, timestamp(j.due_at), j.status, j.label]
             for j in state.active_job_refs],
        ),
        (
            "Facts",
            [Column("WHO"), Column("KEY"), Column("VALUE", cut=True), Column("TURN", right=True)],
            [[f.speaker or "-", f.key, f.value, str(f.turn)] for f in state.facts],
        ),
    ]  # fmt: skip
    group = [
        (
            "Participants",
            [Column("NAME"), Column("MESSAGES", right=True), Column("POSITION", cut=True)],
            [[p.name, str(p.message_count), p.last_position] for p in state.participants],
        ),
        (
            "Proposals",
            [Column("ID"), Column("BY"), Column("STATUS"), Column("TEXT", cut=True)],
            [[p.proposal_id, p.proposer, p.status, p.text] for p in state.proposals],
        ),
        (
            "Decisions",
            [Column("ID"), Column("BY"), Column("TURN", right=True), Column("OUTCOME", cut=True)],
            [[d.decision_id, d.decided_by, str(d.decided_turn), d.outcome]
             for d in state.decisions],
        ),
    ]  # fmt: skip
    return sections + [section for section in group if section[2]]


async def _sessions(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    inspector = opened.inspector
    listed = await inspector.sessions(
        chat_id=args.chat,
        status=None if args.status in (None, CLOSED) else args.status,
        open_only=args.status not in (None, CLOSED),
    )
    if args.status == CLOSED:
        listed = [session for session in listed if session.closed_at is not None]
    key, newest_first = _SORTS[args.sort]
    listed.sort(key=key, reverse=newest_first)
    if args.limit is not None:
        listed = listed[: args.limit]
    checks = {check.session_id: check for check in await inspector.check_all()}
    now = inspector.now()
    if args.json:
        out.json([_session_record(s, checks.get(s.session_id)) for s in listed])
        return 0
    if not listed:
        out.line("no sessions")
        return 0
    rows = []
    for session in listed:
        check = checks.get(session.session_id)
        written = check.snapshot.written_at if check and check.snapshot else None
        rows.append([
            session.session_id, str(session.chat_id), session_title(session),
            session_status(session), str(session.turn_count), ago(session.updated_at, now),
            ago(written, now), check.verdict if check else "-",
        ])  # fmt: skip
    out.table(
        [Column("SESSION"), Column("CHAT", right=True), Column("TITLE", cut=True),
         Column("STATUS"), Column("TURNS", right=True), Column("ACTIVE"),
         Column("CHECKPOINT", right=True),
         Column("MATCHES LOG", styles=VERDICT_STYLES, other_style="red")],
        rows,
    )  # fmt: skip
    return 0


def _session_record(session: ConversationSession, check: CheckpointCheck | None) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "chat_id": session.chat_id,
        "chat_type": session.chat_type,
        "title": session.title,
        "user_id": session.user_id,
        "status": session_status(session),
        "turns": session.turn_count,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
        "closed_at": session.closed_at,
        "checkpoint": None if check is None else _check_record(check),
    }


def _check_record(check: CheckpointCheck) -> dict[str, Any]:
    return {
        "verdict": check.verdict,
        "detail": check.detail,
        "written_at": check.snapshot.written_at if check.snapshot else None,
    }


async def _show(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    inspector = opened.inspector
    session = await opened.session(args.session)
    check = await inspector.check(session)
    packet = await inspector.packet_of(session)
    memories = await inspector.facts(session.chat_id, history=True)
    if args.json:
        out.json(
            {
                "session": session,
                "checkpoint": _check_record(check),
                "packet": packet,
                "memories": memories,
            }
        )
        return 0
    state, now = session.state, inspector.now()
    written = check.snapshot.written_at if check.snapshot else None
    fields = [
        ("chat", f"{session.chat_id} ({session.chat_type})"),
        ("title", session_title(session)),
        ("status", session_status(session)),
        ("turns", str(state.turn_count)),
        ("created", timestamp(session.created_at)),
        ("last activity", f"{timestamp(session.updated_at)} ({ago(session.updated_at, now)})"),
        ("closed", timestamp(session.closed_at)),
        ("checkpoint", check.detail + (f", written {ago(written, now)}" if written else "")),
        ("summary", _summary_line(state)),
        ("last intent", state.last_intent or "-"),
    ]
    sections = [
        Section(title, columns, rows)
        for title, columns, rows in [*state_sections(state), _memory_section(memories)]
    ]
    if state.rolling_summary:
        sections.append(Section("Rolling summary", text=state.rolling_summary))
    budget = inspector.token_budget
    sections.append(
        Section(
            f"Context packet (about {packet.token_estimate} of {budget} tokens, as /memory)",
            text=render_packet(packet),
        )
    )
    out.tree(f"Session {session.session_id}", fields, sections)
    return 0


def _memory_section(memories: list[Memory]) -> tuple[str, list[Column], list[list[str]]]:
    """The chat's long-term memory: current values and their history (``/facts all``)."""
    return (
        "Long-term memory of the chat",
        [Column("KIND"), Column("SUBJECT"), Column("ATTRIBUTE"), Column("VALUE", cut=True),
         Column("STATUS"), Column("FROM"), Column("UNTIL")],
        [[m.kind, m.subject, m.attribute, m.text, m.status, timestamp(m.valid_from),
          timestamp(m.valid_until)] for m in memories],
    )  # fmt: skip


def _summary_line(state: SessionState) -> str:
    if not state.summary_version:
        return "none yet"
    return f"version {state.summary_version}, turns 1-{state.summarized_through}"


def _turn_text(turn: ConversationTurn) -> str:
    return " ".join((turn.speaker or "", turn.user_text, turn.assistant_text or ""))


async def _grep(
    turns: AsyncIterator[ConversationTurn], grep: list[str], substring: bool
) -> list[ConversationTurn]:
    """The turns holding every word of ``grep``: as words, stemmed as /recall's index stems
    them ("hotel" finds "hotels", "mind" does not find "remind"); or, with ``substring``, as
    parts of the text in any case."""
    if substring:
        parts = " ".join(grep).casefold().split()
        return [t async for t in turns if all(p in _turn_text(t).casefold() for p in parts)]
    wanted = set(index_tokens([" ".join(grep)])[0])
    if not wanted:
        raise CommandError("--grep needs a word of letters or digits; --substring finds any text")
    found: list[ConversationTurn] = []
    batch: list[ConversationTurn] = []

    def keep(batch: list[ConversationTurn]) -> None:
        tokens = index_tokens([_turn_text(turn) for turn in batch])
        found.extend(
            turn for turn, words in zip(batch, tokens, strict=True) if wanted <= set(words)
        )

    async for turn in turns:
        batch.append(turn)
        if len(batch) == _GREP_BATCH:
            keep(batch)
            batch = []
    keep(batch)
    return found


async def _history(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    inspector = opened.inspector
    session = await opened.session(args.session)
    sid = session.session_id
    if args.grep:
        turns = await _grep(inspector.turns(sid), args.grep, args.substring)
        turns = turns[-args.last :] if args.last else turns
    elif args.last:
        turns = await inspector.recent(sid, args.last)
    else:
        turns = [turn async for turn in inspector.turns(sid)]
    if args.json:
        out.json(turns)
        return 0
    if not turns:
        out.line("no turns match" if args.grep else "no turns")
    limit = _TEXT if out.is_terminal else None
    for turn in turns:
        out.line(f"#{turn.seq}  {timestamp(turn.created_at)}  {turn.status}")
        if turn.user_text:
            out.line(f"  {turn.speaker or 'user'}: {_text(turn.user_text, limit)}")
        if turn.assistant_text:
            out.line(f"  bot: {_text(turn.assistant_text, limit)}")
    return 0


def _one_line(text: str) -> str:
    return " / ".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def _text(text: str, limit: int | None) -> str:
    return excerpt(text, limit) if limit is not None else " ".join(text.split())


async def _recall(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    session = await opened.session(args.session)
    words = " ".join(args.words)
    items = await opened.inspector.recall_in(session, words, args.limit)
    if args.json:
        out.json(items)
        return 0
    if not items:
        out.line(f"nothing in session {session.session_id} matches {excerpt(words, 80)!r}")
        return 0
    out.table(
        [Column("SCORE", right=True), Column("KIND"), Column("REF"), Column("TEXT", cut=True)],
        [[f"{i.score:.2f}", i.kind, i.ref, _one_line(i.text)] for i in items],
    )
    return 0


async def _memories(opened: OpenedMemory, args: argparse.Namespace, out: Output) -> int:
    inspector = opened.inspector
    if args.at is not None:
        memories = await inspector.facts_as_of(args.chat_id, args.at)
    else:
        memories = await inspector.facts(args.chat_id, history=args.all)
    if args.json:
        out.json(memories)
        return 0
    if not memories:
        when = f" at {timestamp(args.at)}" if args.at is not None else ""
        out.line(f"chat {args.chat_id} has no long-term memories{when}")
        return 0
    _, columns, rows = _memory_section(memories)
    out.table(columns, rows)
    return 0


def register(commands: Commands) -> None:
    """Add the reading commands to the program's subcommands."""
    sessions = commands.add(
        "sessions",
        _sessions,
        summary="list sessions with their checkpoint's state",
        description="List sessions: id, chat, title or user, status (closed: ended by /new), "
        "turns, last activity, the checkpoint file's age and whether it matches the log.",
    )
    sessions.add_argument(
        "--status",
        choices=[*get_args(SessionStatus), CLOSED],
        help="only sessions with this status (closed: ended by /new)",
    )
    sessions.add_argument("--chat", type=int, metavar="CHAT_ID", help="only this chat's sessions")
    sessions.add_argument(
        "--sort", choices=list(_SORTS), default="activity", help="order (default: activity)"
    )
    sessions.add_argument("--limit", type=positive, metavar="N", help="at most N sessions")
    add_json(sessions)

    show = commands.add(
        "show",
        _show,
        summary="a session's state and current context packet",
        description="Show a session: status, open loops, clarifications, topics, reminders and "
        "jobs, facts, the rolling summary and the context packet its next reply would get.",
    )
    add_session(show)
    add_json(show)

    history = commands.add(
        "history",
        _history,
        summary="a session's turns",
        description="Print a session's turns, oldest first.",
    )
    add_session(history)
    history.add_argument("--last", type=positive, metavar="N", help="only the last N turns")
    history.add_argument(
        "--grep",
        nargs="+",
        metavar="WORD",
        help="only turns containing every WORD as a word, in any case and form, as /recall "
        "matches them (hotel finds hotels; mind does not find remind)",
    )
    history.add_argument(
        "--substring",
        action="store_true",
        help="with --grep: match each WORD anywhere in the text (mind finds remind)",
    )
    add_json(history)

    memories = commands.add(
        "memories",
        _memories,
        summary="a chat's long-term memories, now, with history, or at a time",
        description="List what the bot keeps about a chat's user (as /facts): kind, subject, "
        "attribute, value, status and validity. --all adds the superseded values; --at shows "
        "what was true at a time (ISO 8601, UTC unless it says otherwise).",
    )
    memories.add_argument("chat_id", type=int, metavar="CHAT_ID", help="the chat")
    when = memories.add_mutually_exclusive_group()
    when.add_argument("--all", action="store_true", help="with the superseded values")
    when.add_argument("--at", type=moment, metavar="TIME", help="what was true at TIME")
    add_json(memories)

    recall = commands.add(
        "recall",
        _recall,
        summary="search a session as the bot's retriever does",
        description="Search a session's turns, summaries and its chat's memories with the "
        "bot's own retriever (BM25, recency, importance, open loops), with its scores (0-1).",
    )
    add_session(recall)
    recall.add_argument("words", nargs="+", metavar="WORD", help="what to search for")
    recall.add_argument("--limit", type=positive, default=5, metavar="N", help="default: 5")
    add_json(recall)
