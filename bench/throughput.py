"""Throughput end to end: the real bot against a fake Bot API, with 1 to 1,000 chats at once.

Run ``python -m bench`` from the repository root (the whole suite; ``--quick``: 1 and 10 chats
for a few seconds, printed only), or this part alone with ``python -m bench.throughput
[--quick] [--no-write] [--chats 1,10,100,1000] [--seconds 8]``. It rewrites the "Throughput"
section of ``BENCHMARKS.md``.

For each number of chats, a fresh ``python run_bot.py`` (durability ``full``, log level INFO,
a new database in a temporary directory next to the repository) talks to the fake Bot API of
the tests (:class:`tests.fake_bot_api.FakeBotApi`, a threaded HTTP server on 127.0.0.1 in this
process); the bot is started and stopped as the end-to-end tests do it
(:class:`tests.bot_harness.BotProcess`).

Load model (closed loop): every chat keeps ``IN_FLIGHT`` messages unanswered, like someone who
writes a second line before the bot has answered the first; the moment a reply arrives (the
fake's sendMessage), that chat's next message is queued for getUpdates. So the bot always has
``chats x IN_FLIGHT`` messages to work on, and a slow bot gets fewer messages, not a backlog.
A warm-up lets every chat open its session (its first turn); then the replies are counted for a
fixed window: turns per second = replies in the window / its length. Reply latency runs from
the moment the fake makes a message available to getUpdates to the moment the bot's
sendMessage for it arrives (the wait behind the chat's own earlier message included: it is what
the user sees). After the window no new message is sent, and every message sent must be
answered: per chat, each reply must answer the chat's next message (one chat never reordered,
none missing, none twice). When a level fails, the bot's logs and database are copied to a
``throughput-failed-*`` directory beside the repository and the log's tail is printed, with the
chats left waiting and whether the bot fetched their messages.

CPU time over the window is read from ``/proc``: the bot process, its main thread (the event
loop, where python-telegram-bot, httpx and the lane run) apart, this process (the fake and the
load), and the whole machine (the 2 cores are shared). With ``py-spy`` on the ``PATH``, a
second window after the measured one samples the bot's main thread and says where its time goes.

The floor: the same load, at ``BAR_CHATS`` chats (or the most a smaller run has up to that),
on a bare python-telegram-bot echo bot
(``bench/ptb_echo.py``: nothing stored, no order kept), which is what any bot built on
python-telegram-bot and httpx pays per turn before it does anything with the message.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench.benchmarks_file import write_section
from bench.harness import ROOT, arguments, machine, percentile, temporary_workdir
from bench.locomo_texts import utterances
from tests.bot_harness import TOKEN, BotProcess, bot_env
from tests.fake_bot_api import FakeBotApi, SentCall

#: Messages each chat keeps unanswered.
IN_FLIGHT = 2
#: Bar of issue 5: turns per second with at least ``BAR_CHATS`` chats at once.
BAR_TURNS_PER_S = 1000.0
BAR_CHATS = 100
_FIRST_CHAT = 10_000
_TICKS = os.sysconf("SC_CLK_TCK")
#: Lines of a failed level's bot log printed (all of it is kept, see ``_keep``).
_LOG_TAIL = 40
#: Where the bot's main thread spends its time: (label, frame that marks it, indent).
_PROFILE_ROWS = [
    ("handling an update (`ChatService._handle`)", "ChatService._handle", 0),
    ("memory lane `on_turn`", "ConversationLane.on_turn", 1),
    ("packet build with retrieval", "LaneParts.packet_for", 2),
    ("reply engine (rule-based concierge)", "RuleBasedConcierge.reply", 2),
    ("state fold, commit, checkpoint", "TurnCommitter.commit", 2),
    ("sending the reply (PTB + httpx)", "Bot.send_message", 1),
    ("httpcore connection pool upkeep", "AsyncConnectionPool._assign_requests_to_connections", 2),
    ("recording the delivery", "ConversationLane.mark_delivered", 1),
    ("marking the journal entry done", "InboundJournal.mark_done", 1),
    ("polling and journaling (`UpdatePoller.run`)", "UpdatePoller.run", 0),
    ("parsing updates (`Update.de_json`)", "Update.de_json", 0),
    ("database writer task (group commits)", "Database._run_writer", 0),
    ("event loop: waiting in `select`", "EpollSelector.select", 0),
]


@dataclass(slots=True)
class _Chat:
    """One chat of the load: what it sent, what came back, and what went wrong."""

    chat_id: int
    sent: int = 0
    answered: int = 0
    pushed_at: dict[int, float] = field(default_factory=dict)
    #: The update id of each message (by message id), to find it in the bot's journal.
    update_ids: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class LoadDriver:
    """Keeps ``in_flight`` messages of every chat unanswered, and checks the replies.

    It reacts to replies on the fake's server threads (``FakeBotApi.on_sent``).

    Args:
        api: the fake Bot API the bot polls.
        chat_ids: the private chats that write.
        texts: the messages, taken in turn.
        in_flight: messages each chat keeps unanswered.
    """

    def __init__(
        self, api: FakeBotApi, chat_ids: list[int], texts: list[str], in_flight: int
    ) -> None:
        self.api = api
        self.chats = {chat_id: _Chat(chat_id) for chat_id in chat_ids}
        self.texts = [t for t in texts if len(t) < 300] or texts
        self.in_flight = in_flight
        #: (arrival, latency) of every reply, in seconds (``time.perf_counter``).
        self.replies: list[tuple[float, float]] = []
        self._sending = True
        self._lock = threading.Lock()
        self._all_answered = threading.Event()
        self._next_text = 0
        api.on_sent = self._on_sent

    def start(self) -> None:
        """Queue the first ``in_flight`` messages of every chat."""
        with self._lock:
            for chat in self.chats.values():
                for _ in range(self.in_flight):
                    self._push(chat)

    def _push(self, chat: _Chat) -> None:
        chat.sent += 1
        self._next_text += 1
        chat.pushed_at[chat.sent] = time.perf_counter()
        chat.update_ids[chat.sent] = self.api.push_message(
            chat.chat_id, self.texts[self._next_text % len(self.texts)], message_id=chat.sent
        )

    def _on_sent(self, call: SentCall) -> None:
        arrived = time.perf_counter()
        reply_to = (call.params.get("reply_parameters") or {}).get("message_id")
        with self._lock:
            chat = self.chats.get(call.chat_id) if isinstance(call.chat_id, int) else None
            if chat is None:
                return
            expected = chat.answered + 1
            if reply_to != expected:
                chat.errors.append(f"a reply to message {reply_to}, expected {expected}")
            chat.answered += 1
            pushed = chat.pushed_at.pop(reply_to, None) if isinstance(reply_to, int) else None
            if pushed is not None:
                self.replies.append((arrived, arrived - pushed))
            if self._sending:
                self._push(chat)
            elif self._done():
                self._all_answered.set()

    def _done(self) -> bool:
        return all(c.answered >= c.sent for c in self.chats.values())

    def wait_every_chat_answered(self, timeout: float) -> bool:
        """Wait until every chat has had a reply (its session exists); return whether so."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if all(c.answered for c in self.chats.values()):
                    return True
            time.sleep(0.05)
        return False

    def expect_every_chat_answered(self, timeout: float) -> None:
        """Wait until every chat has had a reply.

        Raises:
            RuntimeError: some had none within ``timeout``; it says which, and their messages.
        """
        if not self.wait_every_chat_answered(timeout):
            raise RuntimeError(f"not every chat was answered in {timeout:g} s: {self.unanswered()}")

    def finish(self, timeout: float) -> None:
        """Send no more messages; wait (at most ``timeout``) for those sent to be answered."""
        with self._lock:
            self._sending = False
            if self._done():
                self._all_answered.set()
        self._all_answered.wait(timeout)

    def unanswered(self) -> str:
        """The chats with messages unanswered, the least answered first: which messages, and
        whether the bot confirmed them (a later getUpdates did: they were in its journal)."""
        confirmed = self.api.confirmed_update_ids
        with self._lock:
            waiting = sorted(
                (c for c in self.chats.values() if c.answered < c.sent), key=lambda c: c.answered
            )
            lines = [f"{len(waiting)} of {len(self.chats)} chats have messages unanswered"]
            for chat in waiting[:50]:
                messages = ", ".join(
                    f"{n} (update {chat.update_ids[n]},"
                    f" {'' if chat.update_ids[n] in confirmed else 'not '}confirmed)"
                    for n in range(chat.answered + 1, chat.sent + 1)
                )
                lines.append(f"chat {chat.chat_id}: {chat.answered} answered; waiting: {messages}")
        return "\n".join(lines)

    def problems(self) -> list[str]:
        """Every reply out of order, and every message left unanswered."""
        out: list[str] = []
        for chat in self.chats.values():
            out += [f"chat {chat.chat_id}: {error}" for error in chat.errors]
            if chat.answered != chat.sent:
                out.append(f"chat {chat.chat_id}: {chat.sent - chat.answered} unanswered")
        return out


def _cpu_seconds(stat: Path) -> float:
    # utime and stime: fields 14 and 15 of /proc/<pid>/stat, counted after the "(name)" field.
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _machine_busy_seconds() -> float:
    # The "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal ...
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / _TICKS


@dataclass(frozen=True, slots=True)
class _Cpu:
    """CPU seconds used so far by the bot, its main thread, this process and the machine."""

    bot: float
    bot_main: float
    bench: float
    machine: float

    @classmethod
    def read(cls, pid: int) -> _Cpu:
        return cls(
            bot=_cpu_seconds(Path(f"/proc/{pid}/stat")),
            bot_main=_cpu_seconds(Path(f"/proc/{pid}/task/{pid}/stat")),
            bench=time.process_time(),
            machine=_machine_busy_seconds(),
        )

    def __sub__(self, other: _Cpu) -> _Cpu:
        return _Cpu(
            self.bot - other.bot,
            self.bot_main - other.bot_main,
            self.bench - other.bench,
            self.machine - other.machine,
        )


@dataclass(slots=True)
class LevelResult:
    """The figures of one number of chats."""

    chats: int
    floor: bool
    turns: int
    seconds: float
    latencies_ms: list[float]
    cpu: _Cpu
    answered: int
    problems: list[str]
    #: Main-thread samples per frame (inclusive), and their total; empty without py-spy.
    profile: Counter[str] = field(default_factory=Counter)
    samples: int = 0

    @property
    def turns_per_s(self) -> float:
        """Replies received per second of the window."""
        return self.turns / self.seconds

    def ms_per_turn(self, cpu_seconds: float) -> float:
        """CPU milliseconds per turn of the window."""
        return cpu_seconds * 1000 / max(self.turns, 1)


@contextlib.contextmanager
def _running(home: Path, api: FakeBotApi, *, floor: bool) -> Iterator[int]:
    """Run ``run_bot.py`` (or, for the floor, the echo bot) until it has polled; yield its pid.

    On leaving, it is stopped with SIGTERM (and must exit cleanly) or, after an error, killed.
    """
    env = bot_env(home, api, AGENT_DURABILITY="full", AGENT_LOG_LEVEL="INFO")
    if not floor:
        bot = BotProcess(home, env).start()
        try:
            bot.wait_until_polling(api)
            yield bot.proc.pid if bot.proc is not None else 0
            bot.stop()
        finally:
            bot.ensure_dead()
        return
    with (home / "echo.stderr.log").open("wb") as stderr:
        echo = subprocess.Popen(
            [sys.executable, "-m", "bench.ptb_echo"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        api.wait_for(lambda fake: bool(fake.calls("getUpdates")), 60, "the echo bot never polled")
        yield echo.pid
        echo.terminate()
        echo.wait(30)
    finally:
        if echo.poll() is None:
            echo.kill()
            echo.wait()


def run_level(
    workdir: Path,
    chats: int,
    texts: list[str],
    *,
    window: float,
    warmup: float,
    spy: str | None = None,
    floor: bool = False,
) -> LevelResult:
    """Load a bot with ``chats`` chats for ``window`` seconds, then check every reply.

    With ``spy`` (the path of py-spy), a second window samples the bot's main thread. When the
    level fails (an error, or a message unanswered at the end), the bot's logs and database
    are kept beside the repository (see ``_keep``): the temporary directory goes.
    """
    home = workdir / f"{'floor' if floor else 'bot'}-{chats}"
    home.mkdir()
    try:
        with FakeBotApi(TOKEN) as api, _running(home, api, floor=floor) as pid:
            chat_ids = list(range(_FIRST_CHAT, _FIRST_CHAT + chats))
            driver = LoadDriver(api, chat_ids, texts, IN_FLIGHT)
            driver.start()
            driver.expect_every_chat_answered(max(60.0, chats * 0.5))
            time.sleep(warmup)
            first, before, began = len(driver.replies), _Cpu.read(pid), time.perf_counter()
            time.sleep(window)
            ended, used = time.perf_counter(), _Cpu.read(pid) - before
            replies = [r for r in driver.replies[first:] if began <= r[0] < ended]
            samples, total = _sample(spy, pid, window) if spy else (Counter[str](), 0)
            driver.finish(max(60.0, chats * IN_FLIGHT * 0.1))
            problems = driver.problems()
            unanswered = driver.unanswered() if problems and not floor else ""
    except Exception as exc:
        _keep(home, f"{type(exc).__name__}: {exc}")
        raise
    if unanswered:
        _keep(home, "\n".join([*problems[:50], unanswered]))
    return LevelResult(
        chats=chats,
        floor=floor,
        turns=len(replies),
        seconds=ended - began,
        latencies_ms=[latency * 1000 for _, latency in replies],
        cpu=used,
        answered=sum(chat.answered for chat in driver.chats.values()),
        problems=problems,
        profile=samples,
        samples=total,
    )


def _keep(home: Path, what: str) -> Path:
    """Keep a failed level's bot logs and database beside the repository, where the temporary
    directory's removal does not take them; print where, what failed and the log's tail."""
    base = ROOT.parent if os.access(ROOT.parent, os.W_OK) else ROOT
    kept = base / f"throughput-failed-{home.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    kept.mkdir()
    for path in sorted(home.glob("*.log")) + sorted(home.glob("memory.db*")):
        with contextlib.suppress(OSError):
            shutil.copy2(path, kept / path.name)
    (kept / "failure.txt").write_text(what + "\n", encoding="utf-8")
    out = sys.stderr
    print(f"throughput, {home.name}: failed; its logs and database are kept in {kept}", file=out)
    for log in sorted(home.glob("*.stderr.log")):
        with contextlib.suppress(OSError):
            tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-_LOG_TAIL:]
            print(f"--- {log.name} (last {len(tail)} lines) ---", *tail, sep="\n", file=out)
    print(what, file=out)
    return kept


def _sample(spy: str, pid: int, seconds: float) -> tuple[Counter[str], int]:
    """Sample the bot's main thread with py-spy; count the samples each frame is in."""
    duration = str(max(1, round(seconds)))
    command = [spy, "record", "--pid", str(pid), "--duration", duration, "--rate", "100"]
    command += ["--threads", "--format", "raw", "--output", "/dev/stdout"]
    out = subprocess.run(  # noqa: S603 (py-spy, found on the PATH)
        command, capture_output=True, text=True, check=False, timeout=seconds + 60
    ).stdout
    frames: Counter[str] = Counter()
    total = 0
    for line in out.splitlines():
        stack, _, count = line.rpartition(" ")
        names = stack.split(";")
        if not count.isdigit() or f"({pid})" not in names[0]:
            continue  # another thread than the main one
        total += int(count)
        for name in {frame.split(" (", 1)[0] for frame in names[1:]}:
            frames[name] += int(count)
    return frames, total


def report(results: list[LevelResult]) -> list[str]:
    """The section's tables: the runs, the bar, why it is missed, and where the time goes."""
    cores = os.cpu_count() or 1
    out = [
        "| bot | chats | turns/s | latency p50 ms | latency p99 ms | bot CPU ms/turn"
        " | of which main thread | fake + load CPU ms/turn | machine CPU busy | replies"
        " checked | turns per chat | in order, none missing |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        lat = r.latencies_ms or [float("nan")]
        checked = "n/a" if r.floor else "yes" if not r.problems else f"**no: {len(r.problems)}**"
        out.append(
            f"| {'floor: bare PTB echo bot' if r.floor else '`run_bot.py`'} | {r.chats:,}"
            f" | {r.turns_per_s:,.0f}"
            f" | {statistics.median(lat):.1f} | {percentile(lat, 0.99):.1f}"
            f" | {r.ms_per_turn(r.cpu.bot):.2f} | {r.ms_per_turn(r.cpu.bot_main):.2f}"
            f" | {r.ms_per_turn(r.cpu.bench):.2f} | {r.cpu.machine / r.seconds / cores:.0%}"
            f" | {r.answered:,} | {r.answered / r.chats:,.0f} | {checked} |"
        )
    big = [r for r in results if r.chats >= BAR_CHATS and not r.floor]
    if not big:
        return [*out, "", f"(`--quick`: the bar is for {BAR_CHATS}+ chats; none ran.)"]
    best = max(big, key=lambda r: r.turns_per_s)
    bot_ms, main_ms = best.ms_per_turn(best.cpu.bot), best.ms_per_turn(best.cpu.bot_main)
    out += [
        "",
        "| bar | measured | |",
        "|---|---:|---|",
        f"| at least {BAR_TURNS_PER_S:,.0f} turns/s with {BAR_CHATS}+ chats at once"
        f" | {best.turns_per_s:,.0f} ({best.chats:,} chats)"
        f" | {'pass' if best.turns_per_s >= BAR_TURNS_PER_S else '**miss**'} |",
        "",
        f"What the bar takes at the CPU cost measured with {best.chats:,} chats:"
        f" {BAR_TURNS_PER_S:,.0f} turns/s x {bot_ms:.2f} ms of bot CPU per turn ="
        f" {BAR_TURNS_PER_S * bot_ms / 1000:.1f} cores for the bot alone, on a machine of"
        f" {cores}; its main thread (the event loop, where nearly all of the bot's Python code"
        f" runs: one core at most) would need {BAR_TURNS_PER_S * main_ms / 1000:.1f}."
        f" The measured cost allows at most {min(cores * 1000 / bot_ms, 1000 / main_ms):,.0f}"
        f" turns/s with the machine to itself and nothing waited for.",
    ]
    floor = next((r for r in results if r.floor), None)
    if floor is not None:
        floor_ms = floor.ms_per_turn(floor.cpu.bot)
        floor_main_ms = floor.ms_per_turn(floor.cpu.bot_main)
        out[-1] += (
            f" The floor is python-telegram-bot itself: the bare echo bot, which stores"
            f" nothing, spends {floor_ms:.2f} ms of CPU per turn ({floor_main_ms:.2f} on its"
            f" main thread), so {BAR_TURNS_PER_S:,.0f} turns/s would take"
            f" {BAR_TURNS_PER_S * floor_ms / 1000:.1f} cores before any memory work is done, and"
            f" its one event loop tops out at {1000 / floor_main_ms:,.0f} turns/s."
        )
    profiled = next((r for r in results if r.samples), None)
    if profiled is not None:
        out += [
            "",
            f"Where the bot's main thread spends its time with {profiled.chats:,} chats (py-spy,"
            f" 100 Hz, {profiled.samples:,} samples in a second window after the measured one;"
            " share of the samples whose stack holds the frame; rows nest as indented;"
            " ms per turn: the share of the main thread's CPU per turn in the measured window):",
            "",
            "| frame | share | ms per turn |",
            "|---|---:|---:|",
        ]
        main_per_turn = profiled.ms_per_turn(profiled.cpu.bot_main)
        for label, frame, depth in _PROFILE_ROWS:
            share = profiled.profile.get(frame, 0) / profiled.samples
            out.append(
                f"| {'&nbsp;&nbsp;' * depth}{label} | {share:.0%} | {share * main_per_turn:.2f} |"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print its section, and (full runs) write it to ``BENCHMARKS.md``."""
    parser = arguments("python -m bench.throughput", __doc__, "1 and 10 chats, printed only")
    parser.add_argument("--chats", help="comma-separated numbers of chats (default 1,10,100,1000)")
    parser.add_argument("--seconds", type=float, help="length of each measured window")
    args = parser.parse_args(argv)
    levels = [1, 10] if args.quick else [1, 10, BAR_CHATS, 1000]
    if args.chats:
        levels = [int(n) for n in args.chats.split(",")]
    window = args.seconds or (1.0 if args.quick else 8.0)
    warmup = 0.2 if args.quick else 1.0
    # The profile and the floor at the bar's load (the largest level up to it in a smaller run).
    at_bar = max((n for n in levels if n <= BAR_CHATS), default=levels[0])
    spy = None if args.quick else shutil.which("py-spy")
    texts = utterances(args.data)
    started = time.perf_counter()
    results: list[LevelResult] = []
    with temporary_workdir(".bench-throughput-") as workdir:
        where = machine(workdir)
        for chats in levels:
            profile = spy if chats == at_bar else None
            results.append(
                run_level(workdir, chats, texts, window=window, warmup=warmup, spy=profile)
            )
            print(f"throughput: {chats} chats, {results[-1].turns_per_s:.0f}/s", file=sys.stderr)
        results.append(run_level(workdir, at_bar, texts, window=window, warmup=warmup, floor=True))
    elapsed = time.perf_counter() - started
    command = "python -m bench" + (" --quick" if args.quick else "")
    section = "\n".join(
        [
            "## Throughput",
            "",
            f"`{command}` ({elapsed:.0f} s for this part) on {where}; the temporary directory is"
            " next to the repository, on the same filesystem.",
            "",
            f"`python run_bot.py` (durability `full`, a fresh database per row) against the tests'"
            f" fake Bot API on 127.0.0.1, in a closed loop: every chat keeps {IN_FLIGHT} messages"
            f" unanswered and sends its next one the moment a reply comes. Turns/s are counted"
            f" over {window:g} s, after a warm-up in which every chat opened its session."
            " Latency: from the update being available to getUpdates to the reply's sendMessage"
            " reaching the fake. Every chat's session starts empty and grows over the run (turns"
            " per chat): a long session's turns cost more (retrieval, see Flat in history),"
            " which is why the lone chat's turns cost the most CPU. CPU per turn is read from"
            " `/proc` over the same window; the machine's cores are shared with other work (see"
            " its CPU busy share), so the figures are as noisy as the machine was.",
            "",
            *report(results),
        ]
    )
    print(section)
    for result in results:
        for problem in result.problems[:20] if not result.floor else []:
            print(f"throughput, {result.chats} chats: {problem}", file=sys.stderr)
    if not (args.no_write or args.quick):  # the file shows full runs only
        write_section(section + "\n")
    return 1 if any(r.problems for r in results if not r.floor) else 0


if __name__ == "__main__":
    raise SystemExit(main())
