"""Crash test of the real bot (issue 3): SIGKILL ``python run_bot.py`` over and over, then check.

A fake Telegram Bot API (:class:`tests.fake_bot_api.FakeBotApi`) serves a stream of 50
messages over three private chats and a group; like Telegram it keeps every update queued
until a ``getUpdates`` call with a higher offset confirms it. The real entry point runs in a
subprocess on one database and checkpoint directory, and is killed with SIGKILL at a moment
chosen at random: while it starts, once it has called getMe, once it has published its
commands (start-up recovery), while it polls and handles a burst of messages, or the instant a
reply was sent (before its message id can be recorded). After each kill the database and the
checkpoint files are checked as the kill left them; then the bot is started again. A last,
clean run answers whatever is left, and the invariants of DESIGN.md section 3 are checked on
the final database, checkpoints and everything the fake saw sent.

The random choices come from ``random.Random(seed)``; the seed is in every failure message and
``CRASH_SEED=<seed>`` replays the same choices (the timing of the kills still varies).
``CRASH_KILLS`` sets how many SIGKILLs must land on a running bot (default 20).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path

import pytest

from agent.config import Settings
from agent.errors import CheckpointError
from agent.memory import CheckpointWriter
from agent.runtime import open_lane
from tests.fake_bot_api import FakeBotApi, SentCall

RUN_BOT = Path(__file__).resolve().parent.parent / "run_bot.py"
TOKEN = "123456:ABCDEFGHIJKLMNOPQRSTUVWXYZabc"  # noqa: S105 - the fake's test token
KILLS = int(os.environ.get("CRASH_KILLS", "20"))
SEED = int(os.environ.get("CRASH_SEED", str(random.SystemRandom().randrange(2**32))))
MESSAGES = 50
PRIVATE_CHATS = (101, 102, 103)
GROUP = -500
GROUP_MEMBERS = (201, 202, 203)
BOT_USERNAME = "memory_test_bot"
# Where a kill is aimed (see run_cycle), with its weight.
ANCHORS = {"spawn": 2, "getMe": 1, "commands": 2, "polling": 4, "send": 3}
# Generous limits for one step of a bot on a slow machine; only reached when something is wrong.
STEP_TIMEOUT = 30.0
# The fake answers sendMessage this late, so that kills land between commit and send.
SEND_DELAY = 0.02
FINAL_TIMEOUT = 60.0

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


@dataclass
class Pushed:
    """A message the fake has queued: its update id and its message id in the chat."""

    message: Message
    update_id: int
    message_id: int


@dataclass
class CrashStats:
    """What the kills hit, counted over the whole run (printed with every failure)."""

    cycles: int = 0
    kills: int = 0  # SIGKILLs that landed on a running bot
    anchors: Counter[str] = field(default_factory=Counter)  # kills by where they were aimed
    pushed: int = 0  # messages queued at the fake so far
    confirmed_at_kill: int = 0  # sum over kills: updates the fake had confirmed
    journal_pending_at_kill: int = 0  # ... journaled, not yet processed (recovered at start)
    undelivered_at_kill: int = 0  # ... turns answered (committed) but not marked delivered
    unsent_at_kill: int = 0  # ... of which the reply had not reached the fake at all
    checkpoints_behind_at_kill: int = 0  # ... checkpoint files behind the database
    anchor_timeouts: int = 0  # aimed kills whose event did not come in time (killed anyway)
    # (chat, message id) -> kills that fell between the reply's send and its record
    sent_unrecorded: Counter[tuple[int, int]] = field(default_factory=Counter)
    sends: int = 0  # replies the fake received (with duplicates)
    dup_sends: int = 0  # replies sent more than once (a kill between send and record)

    def render(self) -> str:
        """Return the counters as one line."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["anchors"] = dict(sorted(self.anchors.items()))
        values["sent_unrecorded"] = self.sent_unrecorded.total()
        return ", ".join(f"{name}={value}" for name, value in values.items())


def make_stream(rng: random.Random) -> list[Message]:
    """Return the 50 messages: three private chats and a group where the bot is addressed
    now and then (by mention), so some turns are recorded without a reply."""
    stream = []
    names = {101: "Ada", 102: "Grace", 103: "Linus"}
    for index in range(1, MESSAGES + 1):
        chat_id = rng.choice((*PRIVATE_CHATS, GROUP))
        if chat_id == GROUP:
            user_id = rng.choice(GROUP_MEMBERS)
            addressed = rng.random() < 0.5
            if addressed:
                text = f"@{BOT_USERNAME} what do you know about me? ({index})"
            else:
                text = rng.choice(_GROUP_TEXTS).format(i=index)
            stream.append(Message(index, chat_id, user_id, text, "group", addressed))
        else:
            text = rng.choice(_PRIVATE_TEXTS).format(i=index, name=names[chat_id])
            stream.append(Message(index, chat_id, chat_id, text, "private", True))
    return stream


def push(api: FakeBotApi, message: Message, pushed: list[Pushed]) -> None:
    """Queue one message at the fake, as Telegram would deliver it."""
    # Message ids count up per chat, like Telegram's: 1, 2, ...
    message_id = 1 + sum(p.message.chat_id == message.chat_id for p in pushed)
    update_id = api.push_message(
        message.chat_id,
        message.text,
        user_id=message.user_id,
        first_name=f"User{message.user_id}",
        chat_type=message.chat_type,
        chat_title="Crash team" if message.chat_type == "group" else None,
        message_id=message_id,
    )
    pushed.append(Pushed(message, update_id, message_id))


def reply_to(sent: SentCall) -> int | None:
    """Return the message id a sent message replies to (the user message it answers)."""
    params = sent.params.get("reply_parameters") or {}
    return params.get("message_id") if isinstance(params, dict) else None


def replies(api: FakeBotApi) -> list[SentCall]:
    """Every sendMessage that answers a user message (replies carry reply_parameters)."""
    return [s for s in api.sent_messages() if s.method == "sendMessage" and reply_to(s)]


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
            "PTB_TIMEDELTA": "true",
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, label: str) -> subprocess.Popen[bytes]:
        """Start the bot; its log goes to ``bot-stderr.log`` after a ``label`` line."""
        with self.stderr_path.open("ab") as stderr:
            stderr.write(f"--- {label} ---\n".encode())
            stderr.flush()
            self.proc = subprocess.Popen(
                [sys.executable, str(RUN_BOT)],
                cwd=self.tmp_path,
                env=self.env,
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

    def stop(self) -> int:
        """SIGTERM the bot, wait for its graceful shutdown and return its exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def log_tail(self) -> str:
        """The last lines the bot logged (for failure messages)."""
        return self.stderr_path.read_text(errors="replace")[-4000:]


def wait(api: FakeBotApi, bot: BotProcess, predicate: Callable[[FakeBotApi], bool]) -> bool:
    """Wait until ``predicate`` holds or the bot died; return whether it holds."""
    with contextlib.suppress(AssertionError):
        api.wait_for(lambda a: predicate(a) or not bot.running(), STEP_TIMEOUT)
    return predicate(api)


def read_only(db_path: Path) -> sqlite3.Connection:
    """Open the bot's database read-only, so that the checks never change what a kill left."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


# -- the checks -------------------------------------------------------------------------------


def check_after_kill(api: FakeBotApi, bot: BotProcess, stats: CrashStats) -> None:
    """What a kill leaves: an intact database, every confirmed update journaled (I1), no
    update recorded twice (I3), every reply the user has seen in the turn log (I2), and only
    parseable checkpoints that are never ahead of the database (I5)."""
    confirmed = api.confirmed_update_ids
    seen = replies(api)
    if not bot.db_path.exists():
        assert not confirmed, f"updates {sorted(confirmed)} confirmed, but no database exists"
        assert not seen, "replies sent, but no database exists"
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
        turns = {
            (row["chat_id"], row["message_id"]): row
            for row in conn.execute(
                "SELECT s.chat_id, t.message_id, t.assistant_text, t.status FROM"
                " conversation_turns AS t JOIN conversation_sessions AS s USING (session_id)"
                " WHERE t.update_id IS NOT NULL"
            )
        }
        in_window = set()
        for sent in seen:
            key = (int(sent.chat_id or 0), reply_to(sent) or 0)
            turn = turns.get(key)
            assert turn is not None, f"I2: reply {sent.text!r} seen, its turn is not in the log"
            assert turn["assistant_text"] == sent.text, f"I2: reply {sent.text!r} != the log's"
            if turn["status"] == "answered":  # sent, but its message id not yet recorded
                in_window.add(key)
        stats.sent_unrecorded.update(in_window)
        sessions = {
            row["session_id"]: row["turn_count"]
            for row in conn.execute("SELECT session_id, turn_count FROM conversation_sessions")
        }
        stats.confirmed_at_kill += len(confirmed)
        stats.journal_pending_at_kill += sum(s == "pending" for s in journal.values())
        undelivered = {key for key, t in turns.items() if t["status"] == "answered"}
        stats.undelivered_at_kill += len(undelivered)
        stats.unsent_at_kill += len(undelivered - in_window)
    finally:
        conn.close()
    for path in sorted(bot.checkpoint_dir.glob("*.json")):
        try:
            snapshot = CheckpointWriter.parse(path.read_bytes(), session_id=path.stem)
        except CheckpointError as exc:
            raise AssertionError(f"I5: a kill left an unparseable checkpoint: {exc}") from exc
        in_db = sessions.get(snapshot.session_id)
        assert in_db is not None, f"I5: checkpoint {path.name} of a session the db lacks"
        assert snapshot.turn_count <= in_db, f"I5: checkpoint {path.name} ahead of the db"
        stats.checkpoints_behind_at_kill += snapshot.turn_count < in_db


def check_final(api: FakeBotApi, bot: BotProcess, pushed: list[Pushed], stats: CrashStats) -> None:
    """After the last clean run: every delivered update is exactly one turn (I1, I3), every
    reply was sent and recorded as delivered (I2, I4), duplicates are rare, and each chat's
    turns are in the order of its updates."""
    by_update = {p.update_id: p for p in pushed}
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
        pending = conn.execute(
            "SELECT update_id FROM inbound_updates WHERE status != 'done'"
        ).fetchall()
    finally:
        conn.close()
    counts = Counter(row["update_id"] for row in rows)
    assert set(counts) == confirmed, (
        f"I1: confirmed updates without a turn: {sorted(confirmed - set(counts))}; "
        f"turns of unknown updates: {sorted(set(counts) - confirmed)}"
    )
    assert max(counts.values()) == 1, "I3: an update has more than one turn"
    assert sessions == len({p.message.chat_id for p in pushed}), "one session per chat"
    assert not pending, f"journal entries never processed: {[r[0] for r in pending]}"
    sends: dict[tuple[int, int], list[SentCall]] = {}
    for sent in replies(api):
        sends.setdefault((int(sent.chat_id or 0), reply_to(sent) or 0), []).append(sent)
    stats.sends = sum(len(s) for s in sends.values())
    stats.dup_sends = sum(len(s) - 1 for s in sends.values())
    for row in rows:
        sent_for_turn = sends.pop((row["chat_id"], row["message_id"]), [])
        message = by_update[row["update_id"]].message
        assert row["user_text"] == message.text, f"update {row['update_id']}: wrong text"
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


async def check_checkpoints_match_log(bot: BotProcess) -> None:
    """I5 and I6 after the last clean run: every open session's checkpoint parses, is at the
    log's turn, and holds the state rebuilt from the whole turn log."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        db_path=bot.db_path,
        checkpoint_dir=bot.checkpoint_dir,
    )
    lane = await open_lane(settings)
    try:
        sessions = await lane.store.list_sessions(lane.db.reader, limit=None, open_only=True)
        assert sessions, "no open session at the end"
        for session in sessions:
            sid = session.session_id
            snapshot = await lane.checkpoints.load(sid)
            assert snapshot is not None, f"I5: open session {sid} has no checkpoint"
            assert snapshot.turn_count == session.turn_count, f"I5: {sid} checkpoint not at log"
            rebuilt = await lane.rebuild_state(sid)
            assert snapshot.state.log_view() == rebuilt.log_view(), f"I6: {sid} checkpoint != log"
    finally:
        await lane.db.close()


def wait_until_idle(api: FakeBotApi, bot: BotProcess, update_ids: set[int]) -> None:
    """Wait until the bot has nothing left to do: Telegram may forget every update (all are
    confirmed), no journaled update waits, and no committed reply waits to be sent. What it
    did is checked afterwards (a lost message fails there, not as a time-out here)."""
    deadline = time.monotonic() + FINAL_TIMEOUT
    while time.monotonic() < deadline:
        assert bot.running(), f"the bot died in the final run:\n{bot.log_tail()}"
        if update_ids <= api.confirmed_update_ids and bot.db_path.exists():
            conn = read_only(bot.db_path)
            try:
                (waiting,) = conn.execute(
                    "SELECT (SELECT COUNT(*) FROM inbound_updates WHERE status = 'pending')"
                    " + (SELECT COUNT(*) FROM conversation_turns WHERE status = 'answered')"
                ).fetchone()
            finally:
                conn.close()
            if waiting == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"the final run did not finish in {FINAL_TIMEOUT}s:\n{bot.log_tail()}")


# -- the kills --------------------------------------------------------------------------------


def run_cycle(
    api: FakeBotApi,
    bot: BotProcess,
    rng: random.Random,
    stream: list[Message],
    pushed: list[Pushed],
    stats: CrashStats,
) -> None:
    """Start the bot, queue the next few messages, kill it where ``rng`` says, check."""
    remaining = stream[len(pushed) :]
    burst = remaining[: rng.randint(1, max(1, 2 * MESSAGES // KILLS))]
    answered = {(s.chat_id, reply_to(s)) for s in replies(api)}
    unanswered = [
        p
        for p in pushed
        if p.message.wants_reply and (p.message.chat_id, p.message_id) not in answered
    ]
    choices = [a for a in ANCHORS if a != "send" or any(m.wants_reply for m in burst) or unanswered]
    anchor = rng.choices(choices, weights=[ANCHORS[a] for a in choices])[0]
    base_calls = {m: len(api.calls(m)) for m in ("getMe", "setMyCommands", "deleteWebhook")}
    base_sends = len(replies(api))
    bot.start(f"cycle {stats.cycles} ({anchor})")
    stats.cycles += 1

    def queue(gap: float) -> None:
        for message in burst:
            push(api, message, pushed)
            if gap:
                time.sleep(rng.uniform(0, gap))
        stats.pushed = len(pushed)

    def unanswered_left(a: FakeBotApi) -> bool:
        done = {(s.chat_id, reply_to(s)) for s in replies(a)}
        return any(
            p.message.wants_reply and (p.message.chat_id, p.message_id) not in done for p in pushed
        )

    reached = True
    if anchor == "spawn":
        queue(0)
        time.sleep(rng.uniform(0, 1.0))  # importing, migrating, hydrating, connecting
    elif anchor in ("getMe", "commands"):
        queue(0)
        method = "getMe" if anchor == "getMe" else "setMyCommands"
        reached = wait(api, bot, lambda a: len(a.calls(method)) > base_calls[method])
        time.sleep(rng.uniform(0, 0.1))  # connecting; or recovering journal and replies
    elif anchor == "polling":
        # deleteWebhook comes just before the first getUpdates (a long poll, recorded by the
        # fake only when it returns).
        reached = wait(
            api, bot, lambda a: len(a.calls("deleteWebhook")) > base_calls["deleteWebhook"]
        )
        queue(0.03)
        time.sleep(rng.uniform(0, 0.3))
    else:  # "send": the instant a reply is sent, before its message id is recorded
        queue(0)
        target = base_sends + rng.randint(1, 2)
        reached = wait(api, bot, lambda a: len(replies(a)) >= target or not unanswered_left(a))
    stats.anchor_timeouts += not reached
    code = bot.kill()
    if code != -signal.SIGKILL:
        raise AssertionError(f"the bot exited by itself with {code}:\n{bot.log_tail()}")
    stats.kills += 1
    stats.anchors[anchor] += 1
    # A send that reached the fake before the kill is still delivered (as by Telegram): let
    # the fake finish it (it waits SEND_DELAY first) before looking at what was sent.
    time.sleep(10 * SEND_DELAY)
    check_after_kill(api, bot, stats)


@pytest.mark.crash
async def test_sigkill_at_random_points_loses_no_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real bot killed with SIGKILL at random points of a 50-message stream, over and over,
    loses nothing: every update Telegram considers delivered is exactly one turn (I1, I3),
    every reply is in the log and was sent, a duplicate only for a kill between send and
    record (I2, I4), each chat's turns are in update order, the database is intact, every
    checkpoint parses (I5), and after the final clean run each checkpoint holds the state
    rebuilt from the turn log (I6)."""
    for name in [n for n in os.environ if n.startswith(("AGENT_", "TELEGRAM_"))]:
        monkeypatch.delenv(name)  # the checker's settings must be the bot's (defaults)
    rng = random.Random(SEED)
    stats = CrashStats()
    started = time.monotonic()
    stream = make_stream(rng)
    pushed: list[Pushed] = []
    with FakeBotApi(TOKEN, username=BOT_USERNAME) as api:
        api.delay("sendMessage", SEND_DELAY)  # so that kills land between commit and send
        bot = BotProcess(api, tmp_path)
        try:
            while stats.kills < KILLS:
                assert stats.cycles < 3 * KILLS, "the bot keeps exiting before the kill"
                run_cycle(api, bot, rng, stream, pushed, stats)
            for message in stream[len(pushed) :]:
                push(api, message, pushed)
            stats.pushed = len(pushed)
            polls = len(api.calls("deleteWebhook"))
            bot.start("final clean run")
            # Up first (recovery queued, polling), so that the SIGTERM finds it running.
            if not wait(api, bot, lambda a: len(a.calls("deleteWebhook")) > polls):
                raise AssertionError(f"the final run did not start:\n{bot.log_tail()}")
            wait_until_idle(api, bot, {p.update_id for p in pushed})
            code = bot.stop()
            assert code == 0, f"graceful stop exited {code}:\n{bot.log_tail()}"
            check_after_kill(api, bot, CrashStats())  # the same rules hold after a clean stop
            check_final(api, bot, pushed, stats)
            await check_checkpoints_match_log(bot)
        except Exception as exc:  # any failure: add the seed and what the kills hit
            if bot.running():
                bot.kill()
            raise AssertionError(
                f"{exc}\n  seed={SEED} (replay: CRASH_SEED={SEED}); {stats.render()}"
                f"\n  bot log: {bot.stderr_path}"
            ) from exc
    print(f"bot crash run seed={SEED} in {time.monotonic() - started:.1f}s: {stats.render()}")
