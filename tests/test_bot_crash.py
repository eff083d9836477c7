"""Kill -9 torture of the real bot (issues 3 and 6): SIGKILL ``python run_bot.py``, over and over.

A fake Telegram Bot API (:class:`tests.fake_bot_api.FakeBotApi`) serves an endless stream of
messages over four private chats and two groups: a fifth of the private messages set a
reminder due in one to three seconds, the groups address the bot now and then (by mention, so
some turns are recorded without a reply), and every tenth turn of a session folds a summary
delta; now and then a user edits one of their earlier messages (an ``edited_message``, which
changes the turn, never adds one). Like Telegram, the fake keeps every update queued until a
``getUpdates`` call with a
higher offset confirms it. The real entry point runs in a subprocess on one database and
checkpoint directory, and each run is killed with SIGKILL at a moment chosen at random:

* after a random delay: while it starts (importing, migrating, hydrating), once it has called
  getMe, once it has published its commands (start-up recovery), or while it polls and
  handles a burst of messages;
* at an instrumented moment, the instant the harness sees it: a batch of updates handed to the
  bot (its log says "Getting updates", before the journal commit), the database's WAL file
  written (a commit), a checkpoint temp file on disk (a checkpoint write), a reply received by
  the fake (before its message id is recorded), a reminder falling due or reaching the fake, a
  request at the fake LLM endpoint (reply generation, or a background model summary: those
  runs have the LLM concierge and summarizer on, against :class:`tests.fake_llm_api.
  FakeLLMApi`), or inside the graceful shutdown (SIGTERM, then SIGKILL a moment later).

After each kill the database, the checkpoint files and what the fake saw are checked as the
kill left them: integrity, I1-I3, per-chat order, reminders never fired twice, every checkpoint
parseable, never ahead of the log and equal to the log's state at its turn, every session's
state equal to its log (I5, I6), the summary chain in step. What the kill caught in progress
is counted from the run's log, the files and the database (one kill can count in several
places). A last, clean run answers whatever is left and fires every reminder due; then the
invariants of DESIGN.md section 3 are checked on the final database, checkpoints and
everything the fake saw sent.

The random choices come from ``random.Random(seed)``; the seed is in every failure message and
``CRASH_SEED=<seed>`` replays the same choices (the timing of the kills still varies).
``CRASH_KILLS`` sets how many SIGKILLs must land on a running bot (default 20, for CI); the
long run of docs/RELIABILITY.md's "Kill -9 torture" prints its figures with ``-s``::

    CRASH_KILLS=1000 python -m pytest -q -s -m crash tests/test_bot_crash.py -k torture
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.app.wiring import build_lane, open_database, open_lane, state_manager
from agent.config import Settings
from agent.errors import CheckpointError
from agent.memory import CheckpointWriter
from agent.memory.schemas import ConversationCheckpointSnapshot
from tests.bot_harness import POLL_TIMEOUT, is_reminder
from tests.fake_bot_api import FakeBotApi, SentCall
from tests.fake_llm_api import FakeLLMApi
from tests.test_lane_crash import Verified, check_summary_chain, edit_count, last_edit, state_at

RUN_BOT = Path(__file__).resolve().parent.parent / "run_bot.py"
TOKEN = "123456:ABCDEFGHIJKLMNOPQRSTUVWXYZabc"  # noqa: S105 - the fake's test token
KILLS = int(os.environ.get("CRASH_KILLS", "20"))
SEED = int(os.environ.get("CRASH_SEED", str(random.SystemRandom().randrange(2**32))))
PRIVATE_CHATS = (101, 102, 103, 104)
GROUPS = (-500, -501)
GROUP_MEMBERS = (201, 202, 203)
BOT_USERNAME = "memory_test_bot"
# Share of the private messages that set a reminder, due in 1 to 3 seconds.
REMINDER_SHARE = 0.2
# Share of the stream that edits an earlier message of its chat.
EDIT_SHARE = 0.1
# Most messages queued per run (the summary anchor queues 10 to 16, to reach a fold).
BURST = 6
# Where a kill is aimed (see Cycle), with its weight.
ANCHORS = {
    "spawn": 2,
    "getMe": 1,
    "recovery": 2,
    "polling": 3,
    "journal": 2,
    "commit": 2,
    "checkpoint": 2,
    "send": 2,
    "reminder": 3,
    "generate": 1,
    "summary": 1,
    "shutdown": 2,
}
# Anchors at a request to the LLM endpoint: their runs have the LLM on; so has this share of
# the others, and the final run (which fails the model summaries the kills cut short).
LLM_ANCHORS = frozenset({"generate", "summary"})
LLM_SHARE = 0.2
# Generous limits for one step of a bot on a slow machine; only reached when something is wrong.
STEP_TIMEOUT = 30.0
# How long an instrumented moment is watched for before the kill comes anyway.
WATCH_TIMEOUT = 5.0
# The fake answers sendMessage this late, so that kills land between commit and send.
SEND_DELAY = 0.02
FINAL_TIMEOUT = 60.0
# Log lines of the bot (at DEBUG) that tell where a run was when it was killed.
_HYDRATED = "agent.memory.lane: hydrated"
_CONNECTED = "Application started"
_UP = f"bot @{BOT_USERNAME} is up"
_INTAKE_STOPPED = "agent.telegram.bot: shutting down"
_LANE_CLOSED = "memory lane shut down cleanly"
_BATCH = "Getting updates:"
_JOURNALED = "agent.telegram.poller: journaled"
_TEMP_GLOB = ".tmp-*"  # checkpoint temp files (CheckpointWriter writes, then renames them)

_PRIVATE_TEXTS = (
    "my name is {name}",
    "note {i}: the sky is blue",
    "I live in Lisbon",
    "remind me to buy stamps {i}",
    "what's my name?",
    "what is still open?",
    "thanks! 🦊 שלום",
    "what do you know about me?",
    "I'm planning a trip to Porto in May",
    "what did we talk about?",
)
_GROUP_TEXTS = ("lunch at noon {i}?", "the build is green {i}", "who has the keys {i}")


@dataclass(frozen=True)
class Message:
    """One message of the stream: who says what where, and whether the bot must answer."""

    index: int
    chat_id: int
    user_id: int
    text: str
    chat_type: str
    wants_reply: bool
    reminder_delay: int = 0  # seconds until the reminder it sets is due (0: it sets none)
    edit_of: int | None = None  # an edit: the index of the message it edits


@dataclass
class Pushed:
    """A message the fake has queued: its update id, its message id in the chat, and when."""

    message: Message
    update_id: int
    message_id: int
    at: float = 0.0  # time.time() of the push: the message's date, to Telegram's second


@dataclass
class CrashStats:
    """What the kills hit, counted over the whole run (printed with every failure)."""

    cycles: int = 0
    kills: int = 0  # SIGKILLs that landed on a running bot
    clean_stops: int = 0  # runs whose graceful shutdown ended before the SIGKILL came
    llm_runs: int = 0  # runs with the LLM concierge and summarizer on
    anchors: Counter[str] = field(default_factory=Counter)  # kills by where they were aimed
    anchor_timeouts: int = 0  # aimed kills whose event did not come in time (killed anyway)
    # kills by what they caught in progress (from the log, the files, the database)
    caught: Counter[str] = field(default_factory=Counter)
    pushed: int = 0  # messages queued at the fake so far
    # (chat, the message answered or the reminder's text) -> kills between send and record
    sent_unrecorded: Counter[tuple[int, int | str | None]] = field(default_factory=Counter)
    sends: int = 0  # replies the fake received (with duplicates)
    dup_sends: int = 0  # replies sent more than once (a kill between send and record)
    reminders: int = 0  # reminders fired (one turn each)
    dup_reminders: int = 0  # reminder messages sent again (a kill between send and record)
    edits: int = 0  # edited messages applied to their turns

    def render(self) -> str:
        """Return the counters as one line."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["anchors"] = dict(sorted(self.anchors.items()))
        values["caught"] = dict(sorted(self.caught.items()))
        values["sent_unrecorded"] = self.sent_unrecorded.total()
        return ", ".join(f"{name}={value}" for name, value in values.items())


def make_stream(rng: random.Random) -> Iterator[Message]:
    """Yield the messages, without end: four private chats (a fifth of their messages set a
    reminder) and two groups where the bot is addressed now and then; a tenth are edits of an
    earlier message of their chat (by its sender, answered by nobody)."""
    names = {101: "Ada", 102: "Grace", 103: "Linus", 104: "Barbara"}
    sent: defaultdict[int, list[Message]] = defaultdict(list)
    for index in itertools.count(1):
        chat_id = rng.choice((*PRIVATE_CHATS, *GROUPS))
        if sent[chat_id] and rng.random() < EDIT_SHARE:
            target = rng.choice(sent[chat_id])
            text = f"edit {index}: {target.text.split(' (')[0]}, corrected"
            yield Message(
                index, chat_id, target.user_id, text, target.chat_type, False, edit_of=target.index
            )
            continue
        if chat_id in GROUPS:
            user_id = rng.choice(GROUP_MEMBERS)
            addressed = rng.random() < 0.5
            if addressed:
                text = f"@{BOT_USERNAME} what do you know about me? ({index})"
            else:
                text = rng.choice(_GROUP_TEXTS).format(i=index)
            message = Message(index, chat_id, user_id, text, "group", addressed)
        elif rng.random() < REMINDER_SHARE:
            delay = rng.randint(1, 3)
            text = f"remind me in {delay} seconds to water plant {index}"
            message = Message(index, chat_id, chat_id, text, "private", True, delay)
        else:
            text = rng.choice(_PRIVATE_TEXTS).format(i=index, name=names[chat_id])
            message = Message(index, chat_id, chat_id, text, "private", True)
        sent[chat_id].append(message)
        yield message


def push(api: FakeBotApi, message: Message, pushed: list[Pushed]) -> None:
    """Queue one message (or edit) at the fake, as Telegram would deliver it."""
    if message.edit_of is not None:  # the edited message keeps its id
        message_id = next(p.message_id for p in pushed if p.message.index == message.edit_of)
    else:  # message ids count up per chat, like Telegram's: 1, 2, ...
        message_id = 1 + sum(
            p.message.chat_id == message.chat_id and p.message.edit_of is None for p in pushed
        )
    at = time.time()
    update_id = api.push_message(
        message.chat_id,
        message.text,
        user_id=message.user_id,
        first_name=f"User{message.user_id}",
        chat_type=message.chat_type,
        chat_title="Crash team" if message.chat_type == "group" else None,
        message_id=message_id,
        edited=message.edit_of is not None,
    )
    pushed.append(Pushed(message, update_id, message_id, at))


def reply_to(sent: SentCall) -> int | None:
    """Return the message id a sent message replies to (the user message it answers)."""
    params = sent.params.get("reply_parameters") or {}
    return params.get("message_id") if isinstance(params, dict) else None


def replies(api: FakeBotApi) -> list[SentCall]:
    """Every sendMessage that answers a user message (replies carry reply_parameters)."""
    return [s for s in api.sent_messages() if s.method == "sendMessage" and reply_to(s)]


def reminders(api: FakeBotApi) -> list[SentCall]:
    """Every reminder firing the fake received."""
    return [s for s in api.sent_messages() if is_reminder(s)]


def sent_key(sent: SentCall) -> tuple[int, int | str | None]:
    """The turn a sent message belongs to: (chat, the message it answers) for a reply, (chat,
    its text) for a reminder firing (a turn of the bot alone; each reminder's text is unique)."""
    return int(sent.chat_id or 0), reply_to(sent) or sent.text


def model_requests(llm: FakeLLMApi, *, summaries: bool) -> int:
    """How many requests the fake LLM received for model summaries (or for replies)."""
    return sum(
        ("running summary" in str(r.body["messages"][0]["content"])) == summaries
        for r in llm.requests
    )


def llm_env(llm: FakeLLMApi) -> dict[str, str]:
    """The settings of a run with the LLM concierge and the background summarizer on."""
    return {
        "AGENT_LLM_BASE_URL": llm.base_url,
        "AGENT_LLM_MODEL": "fake-model",
        "AGENT_LLM_SUMMARIZER": "true",
    }


class BotProcess:
    """``python run_bot.py`` as a subprocess against the fake, with its stderr in a file."""

    def __init__(self, api: FakeBotApi, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.db_path = tmp_path / "memory.db"
        self.checkpoint_dir = tmp_path / "checkpoints"
        self.stderr_path = tmp_path / "bot-stderr.log"
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "TELEGRAM_"))}
        self.env = {
            **keep,
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_BASE_URL": api.base_url,
            "TELEGRAM_BASE_FILE_URL": api.base_file_url,
            "AGENT_DB_PATH": str(self.db_path),
            "AGENT_CHECKPOINT_DIR": str(self.checkpoint_dir),
            "AGENT_LOG_LEVEL": "DEBUG",
            # Short long polls: a killed run's poll soon stops waiting at the fake.
            "AGENT_POLL_TIMEOUT": POLL_TIMEOUT,
            "PTB_TIMEDELTA": "true",
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_start = 0  # where the current run's lines begin in bot-stderr.log

    def start(self, label: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start the bot (with ``env`` on top of its own); its log goes to ``bot-stderr.log``
        after a ``label`` line."""
        with self.stderr_path.open("ab") as stderr:
            stderr.write(f"--- {label} ---\n".encode())
            stderr.flush()
            self.log_start = stderr.tell()
            self.proc = subprocess.Popen(
                [sys.executable, str(RUN_BOT)],
                cwd=self.tmp_path,
                env={**self.env, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        return self.proc

    def running(self) -> bool:
        """Whether the bot process is still alive."""
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> int:
        """SIGKILL the bot (if it still runs) and return its exit code."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait(timeout=STEP_TIMEOUT)

    def terminate(self) -> None:
        """SIGTERM the bot: its graceful shutdown begins."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> int:
        """SIGTERM the bot, wait for its graceful shutdown and return its exit code."""
        self.terminate()
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def log_size(self) -> int:
        """How many bytes the log holds now (a position for :meth:`run_log`)."""
        return self.stderr_path.stat().st_size

    def run_log(self, since: int | None = None) -> str:
        """What the current run logged so far (from byte ``since`` of the log on)."""
        with self.stderr_path.open("rb") as log:
            log.seek(self.log_start if since is None else since)
            return log.read().decode(errors="replace")

    def log_tail(self) -> str:
        """The last lines the bot logged (for failure messages)."""
        return self.stderr_path.read_text(errors="replace")[-4000:]


def wait(
    api: FakeBotApi,
    bot: BotProcess,
    predicate: Callable[[FakeBotApi], bool],
    timeout: float = STEP_TIMEOUT,
) -> bool:
    """Wait until ``predicate`` holds or the bot died; return whether it holds."""
    with contextlib.suppress(AssertionError):
        api.wait_for(lambda a: predicate(a) or not bot.running(), timeout)
    return predicate(api)


def watch(bot: BotProcess, seen: Callable[[], bool], timeout: float = WATCH_TIMEOUT) -> bool:
    """Look for ``seen()`` every 0.2 ms, until it holds (True), the bot dies or time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and bot.running():
        if seen():
            return True
        time.sleep(0.0002)
    return False


def read_only(db_path: Path) -> sqlite3.Connection:
    """Open the bot's database read-only, so that the checks never change what a kill left."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def checker_settings(bot: BotProcess) -> Settings:
    """The settings of a lane opened by the checker on the bot's files (the bot's defaults)."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        db_path=bot.db_path,
        checkpoint_dir=bot.checkpoint_dir,
    )


# -- the checks -------------------------------------------------------------------------------


def caught_in_log(log: str, terminated: bool) -> list[str]:
    """What a run was doing when it was killed, as far as its log (DEBUG) tells."""
    if terminated:  # SIGTERM came first: the graceful shutdown was under way
        if _LANE_CLOSED in log:
            return ["shutdown: lane closed, exiting"]
        if _INTAKE_STOPPED in log:
            return ["shutdown: draining chats, closing the lane"]
        return ["shutdown: stopping the intake"]
    if _HYDRATED not in log:
        return ["start: import, open, migrate, hydrate"]
    if _CONNECTED not in log:
        return ["start: connect to Telegram"]
    caught = [] if _UP in log else ["start: recovery, publishing commands"]
    if log.rfind(_BATCH) > log.rfind(_JOURNALED):
        caught.append("journal: batch fetched, not yet committed")
    for method, name in (
        ("getUpdates", "polling: getUpdates in flight"),
        ("sendMessage", "sending: sendMessage in flight"),
    ):
        calls = log.count(f"Calling Bot API endpoint `{method}`")
        if calls > log.count(f"Call to Bot API endpoint `{method}` finished"):
            caught.append(name)
    return caught


def check_after_kill(
    api: FakeBotApi, bot: BotProcess, stats: CrashStats, killed_at: datetime | None = None
) -> None:
    """What a kill (at ``killed_at``) leaves: an intact database, every confirmed update
    journaled (I1), no update recorded twice (I3) and each chat's turns in update order, every
    reply and reminder the user has seen in the turn log (I2), no reminder fired twice, and only
    parseable checkpoints that are never ahead of the database (I5). It counts in ``stats``
    what the kill caught in progress."""
    confirmed = api.confirmed_update_ids
    seen = [*replies(api), *reminders(api)]
    if not bot.db_path.exists():
        assert not confirmed, f"updates {sorted(confirmed)} confirmed, but no database exists"
        assert not seen, "messages sent, but no database exists"
        return
    conn = read_only(bot.db_path)
    try:
        (integrity,) = conn.execute("PRAGMA integrity_check").fetchone()
        assert integrity == "ok", f"PRAGMA integrity_check: {integrity}"
        journal = {
            row["update_id"]: row["status"]
            for row in conn.execute("SELECT update_id, status FROM inbound_updates")
        }
        lost = confirmed - journal.keys()
        assert not lost, f"I1: updates {sorted(lost)} confirmed to Telegram but not journaled"
        twice = conn.execute(
            "SELECT update_id, COUNT(*) FROM conversation_turns WHERE update_id IS NOT NULL"
            " GROUP BY bot_id, update_id HAVING COUNT(*) > 1"
        ).fetchall()
        assert not twice, f"I3: updates recorded twice: {[tuple(r) for r in twice]}"
        rows = conn.execute(
            "SELECT s.chat_id, t.session_id, t.update_id, t.message_id, t.assistant_text,"
            " t.status FROM conversation_turns AS t JOIN conversation_sessions AS s"
            " USING (session_id) ORDER BY t.session_id, t.seq"
        ).fetchall()
        turns = {
            (row["chat_id"], row["message_id"] if row["update_id"] else row["assistant_text"]): row
            for row in rows
        }
        by_session: defaultdict[str, list[int]] = defaultdict(list)
        for row in rows:
            if row["update_id"] is not None:
                by_session[row["session_id"]].append(row["update_id"])
        for session_id, updates in by_session.items():
            assert updates == sorted(updates), f"session {session_id}: turns out of update order"
        in_window = set()
        for sent in seen:
            key = sent_key(sent)
            turn = turns.get(key)
            assert turn is not None, f"I2: {sent.text!r} seen, its turn is not in the log"
            assert turn["assistant_text"] == sent.text, f"I2: {sent.text!r} != the log's"
            if turn["status"] == "answered":  # sent, but its message id not yet recorded
                in_window.add(key)
        stats.sent_unrecorded.update(in_window)
        jobs = conn.execute(
            "SELECT json_extract(j.value, '$.job_id') AS job_id,"
            " json_extract(j.value, '$.status') AS status,"
            " json_extract(j.value, '$.due_at') AS due_at"
            " FROM conversation_turns AS t, json_each(CAST(t.job_refs AS TEXT)) AS j"
            " WHERE json_extract(j.value, '$.kind') = 'reminder'"
        ).fetchall()
        fired = Counter(job["job_id"] for job in jobs if job["status"] == "done")
        assert max(fired.values(), default=0) <= 1, f"reminders fired twice: {fired}"
        sessions = {
            row["session_id"]: row
            for row in conn.execute(
                "SELECT session_id, turn_count, json_extract(state, '$.summary_version') AS"
                " summary_version FROM conversation_sessions"
            )
        }
        (processing,) = conn.execute(
            "SELECT COUNT(*) FROM conversation_summaries WHERE status = 'processing'"
        ).fetchone()
    finally:
        conn.close()
    # What the kill caught in progress; replies are keyed by a message id, reminders by text.
    turned = {row["update_id"] for row in rows if row["update_id"] is not None}
    pending = {u for u, status in journal.items() if status == "pending"}
    undelivered = {key for key, t in turns.items() if t["status"] == "answered"}
    due = [
        job
        for job in jobs
        if killed_at is not None and datetime.fromisoformat(job["due_at"]) <= killed_at
    ]
    caught = {
        "received, not yet a turn": bool(pending - turned),
        "turn committed, journal not yet marked done": bool(pending & turned),
        "answered, reply not yet sent": any(isinstance(k[1], int) for k in undelivered - in_window),
        "reply sent, its id not yet recorded": any(isinstance(k[1], int) for k in in_window),
        "reminder fired, not yet delivered": any(isinstance(k[1], str) for k in undelivered),
        "reminder due, not yet fired": any(
            job["status"] == "scheduled" and job["job_id"] not in fired for job in due
        ),
        "model summary in flight": processing > 0,
        "checkpoint write (temp file on disk)": any(bot.checkpoint_dir.glob(_TEMP_GLOB)),
    }
    for path in sorted(bot.checkpoint_dir.glob("*.json")):
        try:
            snapshot = checkpoint_in(path)
        except CheckpointError as exc:
            raise AssertionError(f"I5: a kill left an unparseable checkpoint: {exc}") from exc
        in_db = sessions.get(snapshot.session_id)
        assert in_db is not None, f"I5: checkpoint {path.name} of a session the db lacks"
        assert snapshot.turn_count <= in_db["turn_count"], f"I5: {path.name} ahead of the db"
        if snapshot.turn_count < in_db["turn_count"]:
            caught["turn committed, checkpoint not yet written"] = True
            if snapshot.state.summary_version < in_db["summary_version"]:
                caught["summary fold committed, checkpoint not yet written"] = True
    stats.caught.update(name for name, held in caught.items() if held)


def checkpoint_bytes(path: Path) -> tuple[bytes, bytes]:
    """A checkpoint's base file and its journal (``b""``: none), as a reader finds them."""
    journal = path.with_suffix(".journal")
    return path.read_bytes(), journal.read_bytes() if journal.exists() else b""


def checkpoint_in(path: Path) -> ConversationCheckpointSnapshot:
    """The checkpoint a reader (the lane at start) finds in ``path``: its base file and every
    complete line of its journal, not the base alone (which is behind by the journal)."""
    data, journal = checkpoint_bytes(path)
    return CheckpointWriter.parse(data, session_id=path.stem, journal=journal)


async def check_states_match_log(bot: BotProcess, verified: Verified) -> None:
    """I6 as a kill leaves things: every open session's state in the database, and every
    checkpoint file, is the fold of the session's turn log up to its turn; the summary chain
    is in step with the states. ``verified`` carries the folds over from the last kill."""
    if not any(bot.checkpoint_dir.glob("*.json")):
        return  # no turn yet (a database a kill left half migrated stays as it is)
    # Held open while the lane is: its close must not checkpoint the WAL the kill left, which
    # the next run has to recover from as it is.
    guard = read_only(bot.db_path)
    guard.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    settings = checker_settings(bot)
    db = await open_database(settings)
    lane = build_lane(settings, db)
    states = state_manager(settings)
    try:
        await check_summary_chain(lane, db)
        for path in sorted(bot.checkpoint_dir.glob("*.json")):
            data = checkpoint_bytes(path)
            if verified.files.get(path.name) == data:
                continue
            snapshot = checkpoint_in(path)
            expected = await state_at(
                lane, db, snapshot.session_id, snapshot.turn_count, verified, states=states
            )
            if snapshot.state.log_view() != expected.log_view():
                # A kill between an edit's commit and its checkpoint: one edit behind.
                unedit = await last_edit(lane, db, snapshot.session_id)
                assert unedit is not None, f"I6: {path.name} is not the log's state at its turn"
                before = await state_at(
                    lane,
                    db,
                    snapshot.session_id,
                    snapshot.turn_count,
                    verified,
                    unedit=unedit,
                    states=states,
                )
                assert snapshot.state.log_view() == before.log_view(), (
                    f"I6: {path.name} at turn {snapshot.turn_count} is neither the log's state"
                    " there nor the state before its last edit"
                )
            verified.files[path.name] = data
        for session in await lane.inspector.sessions(open_only=True):
            sid = session.session_id
            state = await state_at(lane, db, sid, session.turn_count, verified, states=states)
            assert session.state.log_view() == state.log_view(), f"I6: {sid} state != its log"
            verified.folds[sid] = (session.turn_count, await edit_count(lane, db, sid), state)
    finally:
        await lane.close()
        guard.close()


def check_final(api: FakeBotApi, bot: BotProcess, pushed: list[Pushed], stats: CrashStats) -> None:
    """After the last clean run: every delivered update is exactly one turn (I1, I3), every
    reply was sent and recorded as delivered (I2, I4), duplicates are rare, each chat's turns
    are in the order of its updates, and no model summary is left half done. Every edit was
    applied once, in order: each turn has its message's last text, its edit history the texts
    before."""
    by_update = {p.update_id: p for p in pushed}
    edits = {p.update_id for p in pushed if p.message.edit_of is not None}
    said: defaultdict[tuple[int, int], list[str]] = defaultdict(list)
    for p in pushed:  # the texts of each message, in the order they were sent
        said[p.message.chat_id, p.message_id].append(p.message.text)
    confirmed = api.confirmed_update_ids
    assert confirmed == set(by_update), "the fake still holds unconfirmed updates"
    conn = read_only(bot.db_path)
    try:
        (integrity,) = conn.execute("PRAGMA integrity_check").fetchone()
        assert integrity == "ok", f"PRAGMA integrity_check: {integrity}"
        rows = conn.execute(
            "SELECT s.chat_id, t.session_id, t.seq, t.update_id, t.message_id, t.user_text,"
            " t.assistant_text, t.status, t.reply_message_id FROM conversation_turns AS t"
            " JOIN conversation_sessions AS s USING (session_id) WHERE t.update_id IS NOT NULL"
            " ORDER BY t.session_id, t.seq"
        ).fetchall()
        (sessions,) = conn.execute("SELECT COUNT(*) FROM conversation_sessions").fetchone()
        history = conn.execute(
            "SELECT s.chat_id, t.message_id, e.update_id, e.previous_text FROM turn_edits AS e"
            " JOIN conversation_turns AS t USING (session_id, seq)"
            " JOIN conversation_sessions AS s USING (session_id) ORDER BY e.rowid"
        ).fetchall()
        pending = conn.execute(
            "SELECT update_id FROM inbound_updates WHERE status != 'done'"
        ).fetchall()
        (processing,) = conn.execute(
            "SELECT COUNT(*) FROM conversation_summaries WHERE status = 'processing'"
        ).fetchone()
    finally:
        conn.close()
    counts = Counter(row["update_id"] for row in rows)
    assert set(counts) == confirmed - edits, (
        f"I1: confirmed updates without a turn: {sorted(confirmed - edits - set(counts))}; "
        f"turns of unknown updates: {sorted(set(counts) - confirmed)}"
    )
    applied = [row["update_id"] for row in history]
    assert sorted(applied) == sorted(edits), "I1, I3: an edit lost or applied twice"
    stats.edits = len(applied)
    previous: defaultdict[tuple[int, int], list[str]] = defaultdict(list)
    for row in history:
        previous[row["chat_id"], row["message_id"]].append(row["previous_text"])
    for key, before in previous.items():
        assert before == said[key][:-1], f"message {key}: edit history out of order"
    assert max(counts.values()) == 1, "I3: an update has more than one turn"
    assert sessions == len({p.message.chat_id for p in pushed}), "one session per chat"
    assert not pending, f"journal entries never processed: {[r[0] for r in pending]}"
    assert not processing, f"{processing} model summaries still processing after a clean stop"
    sends: dict[tuple[int, int], list[SentCall]] = {}
    for sent in replies(api):
        sends.setdefault((int(sent.chat_id or 0), reply_to(sent) or 0), []).append(sent)
    stats.sends = sum(len(s) for s in sends.values())
    stats.dup_sends = sum(len(s) - 1 for s in sends.values())
    for row in rows:
        sent_for_turn = sends.pop((row["chat_id"], row["message_id"]), [])
        message = by_update[row["update_id"]].message
        final = said[row["chat_id"], row["message_id"]][-1]  # its last edit's, if any
        assert row["user_text"] == final, f"update {row['update_id']}: wrong text"
        if not message.wants_reply:
            assert row["assistant_text"] is None, f"unaddressed {message} was answered"
            assert row["status"] == "recorded"
            assert not sent_for_turn, f"a reply was sent to unaddressed {message}"
            continue
        assert row["assistant_text"], f"{message} has no reply in the log"
        assert sent_for_turn, f"I4: the reply to {message} was never sent"
        texts = {s.text for s in sent_for_turn}
        assert texts == {row["assistant_text"]}, f"I2: {message} answered {texts}, log differs"
        assert row["status"] == "delivered", f"I4: reply to {message} not recorded as delivered"
        assert row["reply_message_id"] in {s.message_id for s in sent_for_turn}
        # I4: a reply is sent again only after a kill fell between its send and its record.
        key = (row["chat_id"], row["message_id"])
        assert len(sent_for_turn) - 1 <= stats.sent_unrecorded[key], (
            f"the reply to {message} was sent {len(sent_for_turn)} times, but only "
            f"{stats.sent_unrecorded[key]} kills fell between its send and its record"
        )
    assert not sends, f"replies to messages that are no turn: {list(sends)}"
    # Rare: at most one reply per chat is between send and record when a kill lands.
    chats = len({p.message.chat_id for p in pushed})
    assert stats.dup_sends <= stats.kills * chats, "duplicate replies are not rare"
    # Strictly in order per chat: seq order is update order.
    by_session: dict[str, list[int]] = {}
    for row in rows:
        by_session.setdefault(row["session_id"], []).append(row["update_id"])
    for session_id, updates in by_session.items():
        assert updates == sorted(updates), f"session {session_id}: turns out of update order"


def check_reminders(
    api: FakeBotApi, bot: BotProcess, pushed: list[Pushed], stats: CrashStats
) -> None:
    """After the last clean run, every reminder the stream asked for was set, fell due and
    fired exactly once: one turn closes its job (not never, not twice), recorded as delivered,
    and its message reached the chat; more than once only after a kill between its send and
    its record (I4)."""
    conn = read_only(bot.db_path)
    try:
        jobs = conn.execute(
            "SELECT s.chat_id, t.update_id, t.assistant_text, t.status, t.reply_message_id,"
            " json_extract(j.value, '$.job_id') AS job_id,"
            " json_extract(j.value, '$.status') AS job_status"
            " FROM conversation_turns AS t JOIN conversation_sessions AS s USING (session_id),"
            " json_each(CAST(t.job_refs AS TEXT)) AS j"
            " WHERE json_extract(j.value, '$.kind') = 'reminder'"
        ).fetchall()
    finally:
        conn.close()
    set_by = {job["update_id"]: job["job_id"] for job in jobs if job["job_status"] == "scheduled"}
    asked = {p.update_id for p in pushed if p.message.reminder_delay}
    assert asked <= set(set_by), f"reminders asked for, never set: {sorted(asked - set(set_by))}"
    firings: defaultdict[str, list[sqlite3.Row]] = defaultdict(list)
    for job in jobs:
        if job["job_status"] == "done":
            firings[job["job_id"]].append(job)
    never = set(set_by.values()) - set(firings)
    assert not never, f"reminders that never fired: {sorted(never)}"
    assert all(len(turns) == 1 for turns in firings.values()), "a reminder fired twice"
    sent: defaultdict[tuple[int, int | str | None], list[SentCall]] = defaultdict(list)
    for call in reminders(api):
        sent[sent_key(call)].append(call)
    for [turn] in firings.values():
        key = (turn["chat_id"], turn["assistant_text"])
        calls = sent.pop(key, [])
        assert calls, f"I4: reminder {key} fired in the log, never sent"
        assert turn["status"] == "delivered", f"I4: reminder {key} not recorded as delivered"
        assert turn["reply_message_id"] in {c.message_id for c in calls}
        assert len(calls) - 1 <= stats.sent_unrecorded[key], (
            f"reminder {key} was sent {len(calls)} times, but only "
            f"{stats.sent_unrecorded[key]} kills fell between its send and its record"
        )
        stats.dup_reminders += len(calls) - 1
    assert not sent, f"I2: reminders sent that no turn fired: {list(sent)}"
    stats.reminders = len(firings)


async def check_checkpoints_match_log(bot: BotProcess) -> None:
    """I5 and I6 after the last clean run: every open session's checkpoint parses, is at the
    log's turn, and holds the state rebuilt from the whole turn log."""
    lane = await open_lane(checker_settings(bot))
    try:
        sessions = await lane.inspector.sessions(open_only=True)
        assert sessions, "no open session at the end"
        for session in sessions:
            sid = session.session_id
            snapshot = await lane.inspector.checkpoint(sid)
            assert snapshot is not None, f"I5: open session {sid} has no checkpoint"
            assert snapshot.turn_count == session.turn_count, f"I5: {sid} checkpoint not at log"
            rebuilt = await lane.inspector.rebuild_state(sid)
            assert snapshot.state.log_view() == rebuilt.log_view(), f"I6: {sid} checkpoint != log"
    finally:
        await lane.close()


def wait_until_idle(api: FakeBotApi, bot: BotProcess, update_ids: set[int]) -> None:
    """Wait until the bot has nothing left to do: Telegram may forget every update (all are
    confirmed), no journaled update waits, no committed reply waits to be sent, and no
    reminder waits to fire. What it did is checked afterwards (a lost message fails there,
    not as a time-out here)."""
    deadline = time.monotonic() + FINAL_TIMEOUT
    while time.monotonic() < deadline:
        assert bot.running(), f"the bot died in the final run:\n{bot.log_tail()}"
        if update_ids <= api.confirmed_update_ids and bot.db_path.exists():
            conn = read_only(bot.db_path)
            try:
                (waiting,) = conn.execute(
                    "SELECT (SELECT COUNT(*) FROM inbound_updates WHERE status = 'pending')"
                    " + (SELECT COUNT(*) FROM conversation_turns WHERE status = 'answered')"
                    " + (SELECT COUNT(*) FROM conversation_sessions WHERE closed_at IS NULL"
                    "    AND json_array_length(state, '$.active_job_refs') > 0)"
                ).fetchone()
            finally:
                conn.close()
            if waiting == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"the final run did not finish in {FINAL_TIMEOUT}s:\n{bot.log_tail()}")


# -- the kills --------------------------------------------------------------------------------


@dataclass
class Cycle:
    """One run of the bot: the burst it is fed and the moment its kill is aimed at."""

    api: FakeBotApi
    llm: FakeLLMApi
    bot: BotProcess
    rng: random.Random
    pushed: list[Pushed]
    stats: CrashStats
    anchor: str
    burst: list[Message]
    calls: dict[str, int]  # Bot API calls of each kind made before the start
    terminated: bool = False  # SIGTERM was sent

    def aim(self) -> bool:
        """Wait for the anchor's moment (queueing the burst on the way); return whether it
        came (the kill follows at once either way)."""
        aims: dict[str, Callable[[], bool]] = {
            "spawn": self._spawn,
            "getMe": lambda: self._after_call("getMe"),
            "recovery": lambda: self._after_call("setMyCommands"),
            "polling": self._polling,
            "journal": self._journal,
            "commit": self._commit,
            "checkpoint": self._checkpoint,
            "send": self._send,
            "reminder": self._reminder,
            "generate": lambda: self._model_request(summaries=False),
            "summary": lambda: self._model_request(summaries=True),
            "shutdown": self._shutdown,
        }
        return aims[self.anchor]()

    def queue(self, gap: float = 0.0) -> None:
        """Push the burst to the fake, ``gap`` seconds apart at most."""
        for message in self.burst:
            push(self.api, message, self.pushed)
            if gap:
                time.sleep(self.rng.uniform(0, gap))
        self.stats.pushed = len(self.pushed)

    def wait_up(self) -> None:
        """Wait until the run polls (deleteWebhook comes just before its first getUpdates)."""
        polls = self.calls["deleteWebhook"]
        if not wait(self.api, self.bot, lambda a: len(a.calls("deleteWebhook")) > polls):
            raise AssertionError(f"the bot did not come up:\n{self.bot.log_tail()}")

    def _spawn(self) -> bool:
        self.queue()
        time.sleep(self.rng.uniform(0, 1.0))  # importing, migrating, hydrating, connecting
        return True

    def _after_call(self, method: str) -> bool:
        self.queue()
        reached = wait(self.api, self.bot, lambda a: len(a.calls(method)) > self.calls[method])
        time.sleep(self.rng.uniform(0, 0.1))  # connecting; or recovering journal and replies
        return reached

    def _polling(self) -> bool:
        self.wait_up()
        self.queue(0.03)
        time.sleep(self.rng.uniform(0, 0.3))
        return True

    def _journal(self) -> bool:
        # The instant the bot has a batch in hand: before (or while) it is journaled.
        self.wait_up()
        start = self.bot.log_size()
        self.queue()
        return watch(self.bot, lambda: _BATCH in self.bot.run_log(start))

    def _commit(self) -> bool:
        # The instant the WAL file changes: a commit (journal, turn, delivery) is being written.
        self.wait_up()
        wal = self.bot.db_path.with_name(self.bot.db_path.name + "-wal")

        def stamp() -> tuple[int, int] | None:
            with contextlib.suppress(FileNotFoundError):
                stat = wal.stat()
                return stat.st_size, stat.st_mtime_ns
            return None

        stamps = [stamp()]
        writes = self.rng.randint(1, 6)

        def written() -> bool:
            if (now := stamp()) != stamps[-1]:
                stamps.append(now)
            return len(stamps) > writes

        self.queue()
        return watch(self.bot, written)

    def _checkpoint(self) -> bool:
        # The instant a checkpoint temp file exists: a write between create and rename.
        self.wait_up()
        self.queue()
        return watch(self.bot, lambda: any(self.bot.checkpoint_dir.glob(_TEMP_GLOB)))

    def _send(self) -> bool:
        # The instant a reply reaches the fake, before its message id is recorded.
        base = len(replies(self.api))
        target = base + self.rng.randint(1, 2)

        def unanswered_left(a: FakeBotApi) -> bool:
            done = {(s.chat_id, reply_to(s)) for s in replies(a)}
            return any(
                p.message.wants_reply and (p.message.chat_id, p.message_id) not in done
                for p in self.pushed
            )

        self.queue()
        return wait(
            self.api, self.bot, lambda a: len(replies(a)) >= target or not unanswered_left(a)
        )

    def _reminder(self) -> bool:
        self.queue()
        if self.rng.random() < 0.5:  # the instant a reminder reaches the fake
            base = len(reminders(self.api))
            return wait(self.api, self.bot, lambda a: len(reminders(a)) > base)
        # While the burst's last reminder falls due: firing, committing, checkpointing, sending.
        last = next(p for p in reversed(self.pushed) if p.message.reminder_delay)
        due = int(last.at) + last.message.reminder_delay
        time.sleep(max(0.0, due - time.time()) + self.rng.uniform(0, 0.3))
        return True

    def _model_request(self, *, summaries: bool) -> bool:
        # The instant the LLM endpoint gets a request: a reply, or a background model summary
        # (a 'processing' row is in the database), is being generated.
        base = model_requests(self.llm, summaries=summaries)
        self.queue()
        return watch(
            self.bot,
            lambda: model_requests(self.llm, summaries=summaries) > base,
            STEP_TIMEOUT if summaries else WATCH_TIMEOUT,
        )

    def _shutdown(self) -> bool:
        self.wait_up()
        self.queue(0.02)
        time.sleep(self.rng.uniform(0, 0.5))
        self.bot.terminate()
        self.terminated = True
        time.sleep(self.rng.uniform(0, 0.5))  # inside the graceful shutdown, or after it
        return True


def next_burst(stream: Iterator[Message], rng: random.Random, anchor: str) -> list[Message]:
    """The messages of the next run: a few (more for a summary fold), with at least one
    reminder for the reminder anchor and one message to answer for the send anchor."""
    size = rng.randint(10, 16) if anchor == "summary" else rng.randint(1, BURST)
    burst = list(itertools.islice(stream, size))
    needs: dict[str, Callable[[Message], bool]] = {
        "reminder": lambda m: m.reminder_delay > 0,
        "send": lambda m: m.wants_reply,
    }
    if anchor in needs:
        while not any(needs[anchor](m) for m in burst):
            burst.append(next(stream))
    return burst


async def run_cycle(
    api: FakeBotApi,
    llm: FakeLLMApi,
    bot: BotProcess,
    rng: random.Random,
    stream: Iterator[Message],
    pushed: list[Pushed],
    stats: CrashStats,
    verified: Verified,
) -> None:
    """Start the bot, queue the next few messages, kill it where ``rng`` says, check."""
    anchor = rng.choices(list(ANCHORS), weights=list(ANCHORS.values()))[0]
    with_llm = anchor in LLM_ANCHORS or rng.random() < LLM_SHARE
    calls = {m: len(api.calls(m)) for m in ("getMe", "setMyCommands", "deleteWebhook")}
    burst = next_burst(stream, rng, anchor)
    cycle = Cycle(api, llm, bot, rng, pushed, stats, anchor, burst, calls)
    bot.start(f"cycle {stats.cycles} ({anchor})", llm_env(llm) if with_llm else None)
    stats.cycles += 1
    stats.llm_runs += with_llm
    reached = cycle.aim()
    stats.anchor_timeouts += not reached
    killed_at = datetime.now(UTC)
    code = bot.kill()
    killed = code == -signal.SIGKILL
    if cycle.terminated and code == 0:
        stats.clean_stops += 1
    elif not killed:
        raise AssertionError(f"the bot exited by itself with {code}:\n{bot.log_tail()}")
    else:
        stats.kills += 1
        stats.anchors[anchor] += 1
        stats.caught.update(caught_in_log(bot.run_log(), cycle.terminated))
    # A send that reached the fake before the kill is still delivered (as by Telegram): let
    # the fake finish it (it waits SEND_DELAY first) before looking at what was sent.
    time.sleep(10 * SEND_DELAY)
    check_after_kill(api, bot, stats, killed_at if killed else None)
    await check_states_match_log(bot, verified)


@pytest.mark.crash
async def test_kill_9_torture_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real bot killed with SIGKILL over and over, at random delays and at instrumented
    moments (polling, journaling, commits, checkpoint writes, sends, reminders firing, model
    requests, the graceful shutdown) of a multi-chat stream, loses nothing: every update
    Telegram considers delivered is exactly one turn (I1, I3), every reply and reminder is in
    the log and was sent, a duplicate only for a kill between send and record (I2, I4), each
    reminder fired exactly once, each chat's turns are in update order, the database is
    intact, every checkpoint parses and is the log's state at its turn (I5, I6), and after the
    final clean run each checkpoint holds the state rebuilt from the whole turn log."""
    for name in [n for n in os.environ if n.startswith(("AGENT_", "TELEGRAM_"))]:
        monkeypatch.delenv(name)  # the checker's settings must be the bot's (defaults)
    rng = random.Random(SEED)
    stats = CrashStats()
    verified = Verified()
    started = time.monotonic()
    stream = make_stream(rng)
    pushed: list[Pushed] = []
    with FakeBotApi(TOKEN, username=BOT_USERNAME) as api, FakeLLMApi() as llm:
        api.delay("sendMessage", SEND_DELAY)  # so that kills land between commit and send
        bot = BotProcess(api, tmp_path)
        try:
            while stats.kills < KILLS:
                assert stats.cycles < 3 * KILLS, "the bot keeps exiting before the kill"
                await run_cycle(api, llm, bot, rng, stream, pushed, stats, verified)
            polls = len(api.calls("deleteWebhook"))
            bot.start("final clean run", llm_env(llm))  # fails the model summaries cut short
            # Up first (recovery queued, polling), so that the SIGTERM finds it running.
            if not wait(api, bot, lambda a: len(a.calls("deleteWebhook")) > polls):
                raise AssertionError(f"the final run did not start:\n{bot.log_tail()}")
            wait_until_idle(api, bot, {p.update_id for p in pushed})
            code = bot.stop()
            assert code == 0, f"graceful stop exited {code}:\n{bot.log_tail()}"
            check_after_kill(api, bot, CrashStats())  # the same rules hold after a clean stop
            check_final(api, bot, pushed, stats)
            check_reminders(api, bot, pushed, stats)
            await check_checkpoints_match_log(bot)
            assert stats.reminders > 0, "no reminder fired: the reminder checks are vacuous"
            if KILLS >= 20:  # (~70 messages, a tenth of them edits)
                assert stats.edits > 0, "no edit was sent: the edit checks are vacuous"
        except Exception as exc:  # any failure: add the seed and what the kills hit
            if bot.running():
                bot.kill()
            raise AssertionError(
                f"{exc}\n  seed={SEED} (replay: CRASH_SEED={SEED}); {stats.render()}"
                f"\n  bot log: {bot.stderr_path}"
            ) from exc
    print(f"kill -9 torture seed={SEED} in {time.monotonic() - started:.1f}s: {stats.render()}")
