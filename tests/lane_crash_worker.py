"""The child program of the lane crash test (``tests/test_lane_crash.py``): turns, forever.

It opens the memory lane the way production does (explicit :class:`agent.config.Settings`,
:func:`agent.app.wiring.open_lane`, ``hydrate()``), then streams turns of several chats through
:meth:`ConversationLane.on_turn` as fast as it can, until it is killed (or ``--count`` turns
were acknowledged, then it shuts the lane down cleanly).

The acknowledgment log (``--log``) is what the caller was told. It holds one JSON line per
event, written with a single ``os.write`` on an ``O_APPEND`` descriptor:

* ``{"ev": "attempt", ...}`` just before a message is handed to ``on_turn`` (not fsynced);
* ``{"ev": "ack", ..., "session_id", "seq", "dup"}`` once ``on_turn`` has returned, then
  fsynced: from here on the turn must survive anything (I2), exactly once (I3).

After the acknowledgment the reply counts as sent and is recorded with
:meth:`ConversationLane.mark_delivered` (step 3); the replies ``hydrate()`` reports as
undelivered are "sent" the same way before anything else (I4).

Update ids are fresh and increasing from ``--start-update``. Like Telegram, the worker first
redelivers the updates a previous run attempted but never acknowledged, and it now and then
resends an update that was already acknowledged, which must come back as the same turn (I3).
Some updates are edits (``--edit-rate``) of a message of the chat already acknowledged, handed
to :meth:`ConversationLane.on_edit`; their log lines carry ``edit_of`` (the edited message)
and ``outcome``; a resent edit must come back as ``duplicate``.
``--database-url`` runs the lane on PostgreSQL (checkpoints as rows) instead of the SQLite file.
``--text-bytes`` pads messages to that size, so that checkpoint files get large and a kill
lands inside a checkpoint write more often. Nothing of ``agent`` is patched or faked.

On stdout it prints ``opening`` before the database is opened and ``ready`` once the lane is
hydrated and the undelivered replies are sent; the parent times its kills from these lines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from agent.app.wiring import open_lane
from agent.config import Settings
from agent.memory import (
    ConversationContextPacket,
    ConversationLane,
    ConversationTurn,
    InboundMessage,
    JobRef,
    Reply,
)

# Small summary folds so that rolling summaries change often under the crash.
SUMMARIZE_EVERY = 4
RECENT_TURNS = 3
#: A delivered reply's (fake) Telegram message id is this plus its update id.
REPLY_MESSAGE_BASE = 1_000_000
_WORDS = ("alpha", "beta", "gamma", "delta", "émoji 🦊", "שלום", "zero\u200bwidth", "tea")


@dataclass(frozen=True, slots=True)
class Update:
    """One inbound update as the worker sends it: enough to send it again identically."""

    update_id: int
    chat_id: int
    size: int
    edit_of: int | None = None  # an edit of this message (the update id that sent it)


def crash_settings(db: Path, checkpoints: Path, database_url: str | None = None) -> Settings:
    """Return the settings of the crash test: durability ``full``, quick summary folds.

    With ``database_url`` the lane runs on that PostgreSQL database, its checkpoints rows
    (no checkpoint directory); else on the SQLite file ``db`` with files in ``checkpoints``.
    """
    where: dict[str, Any] = (
        {"db_path": db, "checkpoint_dir": checkpoints}
        if database_url is None
        else {"db_path": db, "database_url": database_url}
    )
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        **where,
        durability="full",
        lock_timeout=30.0,
        summarize_every=SUMMARIZE_EVERY,
        recent_turns=RECENT_TURNS,
        packet_token_budget=2000,
        log_level="WARNING",
    )


def database_url(conninfo: str) -> str:
    """Return ``conninfo`` (the ``postgres_url`` fixture's, with its schema in ``options``) as
    the ``postgresql://`` URL that ``AGENT_DATABASE_URL`` takes, options kept."""
    from psycopg.conninfo import conninfo_to_dict  # the `postgres` extra

    info = {key: str(value) for key, value in conninfo_to_dict(conninfo).items()}
    user = quote(info.pop("user", ""), safe="")
    password = quote(info.pop("password", ""), safe="")
    host = info.pop("host", "localhost")
    port = info.pop("port", "5432")
    dbname = quote(info.pop("dbname", ""), safe="")
    query = urlencode(info, quote_via=quote)
    return f"postgresql://{user}:{password}@{host}:{port}/{dbname}" + (f"?{query}" if query else "")


def chat_ids(count: int) -> list[int]:
    """Return the chats of a run: even positions are private chats, odd ones groups."""
    return [1000 + i if i % 2 == 0 else -1000 - i for i in range(count)]


def message_text(update: Update) -> str:
    """Return the text of an update: a function of the update alone, so a resend is equal."""
    words = " ".join(_WORDS[(update.update_id + i) % len(_WORDS)] for i in range(3))
    head = f"Update {update.update_id} in chat {update.chat_id}: {words}. "
    if update.edit_of is not None:
        head = f"Edit {update.update_id} of {update.edit_of} in chat {update.chat_id}: {words}. "
    if update.size <= len(head):
        return head
    filler = f"pad{update.update_id} "
    body = (filler * (update.size // len(filler) + 1))[: update.size - len(head)]
    return head + body


def reply_message_id(turn: ConversationTurn) -> int:
    """Return the Telegram message id the worker "sends" a turn's reply as."""
    return REPLY_MESSAGE_BASE + (turn.update_id or 0)


def inbound(update: Update) -> InboundMessage:
    """Return the :class:`InboundMessage` of an update (groups stay silent on some)."""
    group = update.chat_id < 0
    return InboundMessage(
        chat_id=update.chat_id,
        text=message_text(update),
        chat_type="group" if group else "private",
        user_id=abs(update.chat_id) * 10 + update.update_id % 3,
        speaker=f"user{update.update_id % 3}" if group else "ada",
        chat_title=f"group {update.chat_id}" if group else None,
        update_id=update.update_id,
        message_id=update.update_id if update.edit_of is None else update.edit_of,
        wants_reply=update.edit_of is None and (not group or update.update_id % 3 != 0),
    )


class ScriptedEngine:
    """A deterministic reply engine: answers from the message and the packet it is given.

    Every fifth update schedules a reminder job and every seventh cancels the oldest active
    one, so that the crash also moves the session's job refs (part of the state, I6).
    """

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        """Answer with the turn number and the first words of the message."""
        update_id = message.update_id or 0
        text = (
            f"Turn {packet.turn_count + 1} of {packet.conversation_id[-6:]} noted. "
            f"You said {message.text[:24]!r}; {len(packet.recent_turns)} recent turns seen."
        )
        if update_id % 5 == 0:
            job = JobRef(job_id=f"reminder:{update_id}", kind="reminder", label=f"u{update_id}")
            return Reply(
                text=text, intent="remind", action_name="schedule_reminder", job_refs=(job,)
            )
        if update_id % 7 == 0 and packet.active_job_refs:
            job = packet.active_job_refs[0].model_copy(update={"status": "cancelled"})
            return Reply(text=text, intent="cancel", action_name="cancel_reminder", job_refs=(job,))
        return Reply(text=text, intent="chat" if update_id % 2 else "question")


class AckLog:
    """The acknowledgment log: one JSON line per event, appended with one ``write`` each."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def attempt(self, update: Update) -> None:
        """Record that ``update`` is about to be handed to the lane (no fsync: a hint only)."""
        self._write(
            {
                "ev": "attempt",
                "update_id": update.update_id,
                "chat_id": update.chat_id,
                "size": update.size,
                "edit_of": update.edit_of,
            },
            sync=False,
        )

    def ack_edit(self, update: Update, outcome: str) -> None:
        """Record, durably, what the lane said it did with an edit."""
        self._write(
            {
                "ev": "ack",
                "update_id": update.update_id,
                "chat_id": update.chat_id,
                "size": update.size,
                "edit_of": update.edit_of,
                "outcome": outcome,
                "dup": outcome == "duplicate",
            },
            sync=True,
        )

    def ack(self, update: Update, session_id: str, seq: int, *, dup: bool) -> None:
        """Record, durably, that the lane told the caller the update's turn is committed."""
        self._write(
            {
                "ev": "ack",
                "update_id": update.update_id,
                "chat_id": update.chat_id,
                "size": update.size,
                "session_id": session_id,
                "seq": seq,
                "dup": dup,
            },
            sync=True,
        )

    def _write(self, record: dict[str, object], *, sync: bool) -> None:
        os.write(self._fd, json.dumps(record, sort_keys=True).encode() + b"\n")
        if sync:
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the descriptor."""
        os.close(self._fd)


def read_log(path: Path) -> list[dict[str, Any]]:
    """Return the complete lines of a log (a torn last line, if any, is no acknowledgment)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")[:-1]  # the part after the last newline is not a whole line
    return [json.loads(line) for line in lines if line]


def unacknowledged(records: list[dict[str, Any]]) -> list[Update]:
    """Return the updates attempted but never acknowledged, in first-attempt order."""
    acked = {r["update_id"] for r in records if r["ev"] == "ack"}
    pending: dict[int, Update] = {}
    for r in records:
        uid = int(r["update_id"])
        if r["ev"] == "attempt" and uid not in acked and uid not in pending:
            pending[uid] = Update(uid, int(r["chat_id"]), int(r["size"]), r.get("edit_of"))
    return list(pending.values())


class Worker:
    """Streams turns of several chats through one lane, logging every acknowledgment."""

    def __init__(self, args: argparse.Namespace, lane: ConversationLane, log: AckLog) -> None:
        self.lane = lane
        self.log = log
        self.engine = ScriptedEngine()
        self.rng = random.Random(args.seed)
        self.chats = chat_ids(args.chats)
        self.text_bytes = args.text_bytes
        self.redeliver_rate = args.redeliver_rate
        self.new_session_rate = args.new_session_rate
        self.resume_rate = args.resume_rate
        self.edit_rate = args.edit_rate
        self.remaining = args.count if args.count > 0 else None
        self.next_update = args.start_update
        records = read_log(args.log)
        self.acked: list[Update] = [
            Update(int(r["update_id"]), int(r["chat_id"]), int(r["size"]), r.get("edit_of"))
            for r in records
            if r["ev"] == "ack"
        ]
        self.acked = list({update.update_id: update for update in self.acked}.values())
        self.acked_ids = {update.update_id for update in self.acked}
        self.redeliveries: dict[int, list[Update]] = {chat: [] for chat in self.chats}
        for update in unacknowledged(records):
            self.redeliveries.setdefault(update.chat_id, []).append(update)
        newest = max((int(r["update_id"]) for r in records), default=0)
        if self.next_update <= newest:
            raise SystemExit(f"--start-update {self.next_update} is not above {newest}")

    async def run(self) -> None:
        """Run one task per chat until ``--count`` acknowledgments (or forever)."""
        await asyncio.gather(*(self._chat(chat) for chat in self.redeliveries))

    async def _chat(self, chat_id: int) -> None:
        # Telegram redelivers what was never confirmed before anything new (I3 on restart).
        backlog = self.redeliveries[chat_id]
        while self.remaining is None or self.remaining > 0:
            if backlog:
                update = backlog.pop(0)
            elif self.acked and self.rng.random() < self.redeliver_rate:
                update = self.rng.choice(self.acked)  # a resend of a delivered update
            elif self.rng.random() < self.new_session_rate:
                await self.lane.new_session(chat_id)
                continue
            elif self.rng.random() < self.resume_rate:
                await self._resume_earlier(chat_id)
                continue
            elif self.rng.random() < self.edit_rate and (target := self._message_of(chat_id)):
                update = Update(self.next_update, chat_id, 0, edit_of=target.update_id)
                self.next_update += 1
            else:
                update = Update(self.next_update, chat_id, self._size())
                self.next_update += 1
            self.log.attempt(update)
            if update.edit_of is not None:
                self.log.ack_edit(update, await self.lane.on_edit(inbound(update)))
                self._acknowledged(update)
                if self.remaining is not None:
                    self.remaining -= 1
                continue
            result = await self.lane.on_turn(inbound(update), self.engine)
            self.log.ack(update, result.turn.session_id, result.turn.seq, dup=result.duplicate)
            self._acknowledged(update)
            if result.needs_delivery:  # "sent" now; step 3 records the Telegram message id
                await self.lane.mark_delivered(result.turn, reply_message_id(result.turn))
            if self.remaining is not None:
                self.remaining -= 1

    async def _resume_earlier(self, chat_id: int) -> None:
        # /resume of a random earlier session of the chat (it takes the chat's open items).
        current = self.lane.session_id_for_chat(chat_id)
        sessions = await self.lane.inspector.chat_sessions(chat_id)
        earlier = [s for s in sessions if s.session_id != current]
        if earlier:
            await self.lane.resume_session(chat_id, self.rng.choice(earlier).session_id)

    def _acknowledged(self, update: Update) -> None:
        if update.update_id not in self.acked_ids:
            self.acked.append(update)
            self.acked_ids.add(update.update_id)

    def _message_of(self, chat_id: int) -> Update | None:
        """Return an acknowledged message of the chat to edit (``None``: it has none yet)."""
        messages = [u for u in self.acked if u.chat_id == chat_id and u.edit_of is None]
        return self.rng.choice(messages) if messages else None

    def _size(self) -> int:
        if self.text_bytes <= 0:
            return self.rng.choice((0, 0, 0, 300, 4096))
        return self.rng.randint(self.text_bytes // 2, self.text_bytes)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--checkpoints", type=Path, required=True)
    parser.add_argument(
        "--database-url", help="run on this PostgreSQL database (checkpoints as rows)"
    )
    parser.add_argument("--log", type=Path, required=True, help="the acknowledgment log")
    parser.add_argument("--chats", type=int, default=4)
    parser.add_argument(
        "--start-update",
        type=int,
        required=True,
        help="the first fresh update id; above every id the log holds",
    )
    parser.add_argument(
        "--count",
        type=int,
        default=0,
        help="stop cleanly after this many acknowledgments (0: never)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--text-bytes",
        type=int,
        default=0,
        help="pad messages to 1/2..1 of this size (large checkpoint writes)",
    )
    parser.add_argument("--redeliver-rate", type=float, default=0.08)
    parser.add_argument("--new-session-rate", type=float, default=0.04)
    parser.add_argument("--resume-rate", type=float, default=0.02)
    parser.add_argument("--edit-rate", type=float, default=0.1)
    return parser.parse_args(argv)


async def amain(args: argparse.Namespace) -> None:
    """Open and hydrate the lane, then stream turns; shut down cleanly if they run out."""
    log = AckLog(args.log)
    print("opening", flush=True)
    lane = await open_lane(crash_settings(args.db, args.checkpoints, args.database_url))
    try:
        report = await lane.hydrate()
        for turn in report.undelivered:  # I4: replies committed but never sent go out first
            await lane.mark_delivered(turn, reply_message_id(turn))
        print("ready", flush=True)
        await Worker(args, lane, log).run()
    finally:
        await lane.shutdown()
        log.close()


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``python tests/lane_crash_worker.py --db ... --log ... --start-update K``."""
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    asyncio.run(amain(parse_args(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    main()
