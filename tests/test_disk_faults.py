"""Disk faults (issue 6): the turn log stays the source of truth, and checkpoints heal.

The database and checkpoint files are real files in ``tmp_path``. Faults come from outside
our code only: SQLite's own page limit (``PRAGMA max_page_count``) makes SQLite itself report
"database or disk is full"; the checkpoint directory's disk fails at the OS calls the writer
makes (``os.open``, ``os.fsync``, ``os.replace``: the disk is the outside world here). The
end-to-end tests put the checkpoint directory or the database on a small real filesystem (a
tmpfs in a user and mount namespace, no root needed) and fill it up or make it read-only
under the running bot.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agent.chat.storage_backlog import APOLOGY
from agent.db import Database
from agent.errors import DatabaseUnwritable
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage
from tests.bot_harness import ANSWER_TIMEOUT, BotProcess, db_rows

LANE_LOGGER = "agent.memory.lane"
DB_LOGGER = "agent.db.database"
CHAT_A = 101
CHAT_B = 202
# Larger than the pages the file has free: a turn with it needs new pages (overflow pages).
BIG = "a long message that needs pages of its own. " * 500


def message(chat_id: int, n: int, text: str | None = None) -> InboundMessage:
    return InboundMessage(
        chat_id=chat_id, text=text or f"message {n} of chat {chat_id}", update_id=chat_id * 1000 + n
    )


def records(caplog: pytest.LogCaptureFixture, logger: str, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno == level]


async def seqs(db: Database, session_id: str) -> list[int]:
    rows = await db.fetchall(
        "SELECT seq FROM conversation_turns WHERE session_id = ? ORDER BY seq", (session_id,)
    )
    return [row[0] for row in rows]


async def let_the_file_grow(db: Database, pages: int | None) -> None:
    """Allow the database file ``pages`` more pages (``None``: no limit), through SQLite's own
    ``max_page_count``: past it SQLite reports SQLITE_FULL, as on a full disk."""

    async def limit(tx: Any) -> None:
        [(count,)] = await tx.fetchall("PRAGMA page_count")
        limit = 4294967294 if pages is None else count + pages
        await tx.execute(f"PRAGMA max_page_count = {limit}")

    await db.write(limit)


class FailingDisk:
    """The checkpoint directory's disk: it fails the OS calls named by a fault until healed.

    Only calls about that directory fail (opening a file in it for writing, writing to such a
    file, renaming into it); ``fsync`` and ``fdatasync`` fail for every descriptor, which
    only the checkpoint writer syncs from Python. A directory that is not writable refuses
    the journal's appends too here (as when its files lost their write permission with it).
    """

    FAULTS: ClassVar[dict[str, tuple[frozenset[str], int]]] = {
        "directory not writable": (frozenset({"open"}), errno.EACCES),
        "read-only filesystem": (frozenset({"open"}), errno.EROFS),
        "disk full at fsync": (frozenset({"fsync"}), errno.ENOSPC),
        "disk full at rename": (frozenset({"replace", "write"}), errno.ENOSPC),
        "I/O error": (frozenset({"fsync"}), errno.EIO),
    }

    def __init__(self, monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
        self.directory = directory.resolve()
        self.failing: tuple[frozenset[str], int] | None = None
        self.refused = 0
        real_open, real_fsync, real_replace = os.open, os.fsync, os.replace
        real_fdatasync, real_write = os.fdatasync, os.write

        def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            writing = flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR)
            if writing and Path(path).parent == self.directory:
                self._maybe_fail("open")
            return real_open(path, flags, *args, **kwargs)

        def fake_fsync(fd: int) -> None:
            self._maybe_fail("fsync")
            real_fsync(fd)

        def fake_fdatasync(fd: int) -> None:
            self._maybe_fail("fsync")
            real_fdatasync(fd)

        def fake_write(fd: int, data: Any) -> int:
            if self.failing is not None and "write" in self.failing[0]:
                where = Path("/")
                with contextlib.suppress(OSError):  # not a file (a pipe, a socket)
                    where = Path(os.readlink(f"/proc/self/fd/{fd}")).parent
                if where == self.directory:
                    self._maybe_fail("write")
            return real_write(fd, data)

        def fake_replace(src: Any, dst: Any) -> None:
            if Path(dst).parent == self.directory:
                self._maybe_fail("replace")
            real_replace(src, dst)

        monkeypatch.setattr(os, "open", fake_open)
        monkeypatch.setattr(os, "fsync", fake_fsync)
        monkeypatch.setattr(os, "fdatasync", fake_fdatasync)
        monkeypatch.setattr(os, "write", fake_write)
        monkeypatch.setattr(os, "replace", fake_replace)

    def fail(self, fault: str) -> int:
        """Start failing; return the errno the calls get."""
        self.failing = self.FAULTS[fault]
        return self.failing[1]

    def heal(self) -> None:
        self.failing = None

    def _maybe_fail(self, call: str) -> None:
        if self.failing is not None and call in self.failing[0]:
            self.refused += 1
            code = self.failing[1]
            raise OSError(code, os.strerror(code))


# -- the database refuses writes ---------------------------------------------------------------


async def test_a_write_that_fills_the_disk_fails_alone_and_the_rest_of_its_batch_commits(
    db_path, caplog
):
    """SQLite rolls the whole transaction back when a write hits a full disk. The writes
    grouped with it, before and after, are then committed in the next transaction: each caller
    is told exactly what happened to its own write, and one line tells the operator."""
    caplog.set_level(logging.DEBUG, logger=DB_LOGGER)
    async with Database(db_path) as db:
        await db.write(lambda tx: tx.execute("CREATE TABLE items (name TEXT)"))
        await db.write(lambda tx: tx.execute("INSERT INTO items VALUES ('seed')"))
        await let_the_file_grow(db, 0)

        def insert(name: str) -> Callable[[Any], Any]:
            async def work(tx: Any) -> str:
                await tx.execute("INSERT INTO items VALUES (?)", (name,))
                return name

            return work

        # Handed over together: one batch, in this order.
        before, big, after = await asyncio.gather(
            db.write(insert("before")),
            db.write(insert(BIG)),
            db.write(insert("after")),
            return_exceptions=True,
        )
        names = {row[0] for row in await db.fetchall("SELECT name FROM items")}

    assert (before, after) == ("before", "after")
    assert isinstance(big, DatabaseUnwritable)
    assert "database or disk is full" in str(big)
    assert names == {"seed", "before", "after"}
    with sqlite3.connect(db_path) as other:  # and so another process sees it
        assert {row[0] for row in other.execute("SELECT name FROM items")} == names
    [error] = records(caplog, DB_LOGGER, logging.ERROR)
    assert "refuses writes" in error
    assert "database or disk is full" in error
    assert "Traceback" not in caplog.text


async def test_a_turn_the_full_database_refuses_is_not_half_kept_and_the_chat_goes_on(
    db_path, checkpoint_dir, engine, caplog
):
    """While the database is full, each turn fails whole (DatabaseUnwritable): nothing of it in
    the log, the state or the checkpoint; one error line for all of them. Once it has room, the
    chat goes on at the next turn number, and a restart finds nothing to repair (I5, I6)."""
    caplog.set_level(logging.DEBUG, logger="agent")
    db = await Database(db_path).open()
    lane = ConversationLane(db, CheckpointWriter(checkpoint_dir))
    await lane.hydrate()
    for n in (1, 2):
        await lane.on_turn(message(CHAT_A, n), engine)
    sid = lane.session_id_for_chat(CHAT_A)
    assert sid is not None
    before = lane.inspector.checkpoint_path(sid).read_bytes()

    await let_the_file_grow(db, 0)
    for n in (3, 4, 5):
        with pytest.raises(DatabaseUnwritable, match="database or disk is full"):
            await lane.on_turn(message(CHAT_A, n, BIG), engine)
    with pytest.raises(DatabaseUnwritable):  # a new chat's first turn: no session left behind
        await lane.on_turn(message(CHAT_B, 1, BIG), engine)

    assert await seqs(db, sid) == [1, 2]
    assert (await lane.inspector.packet(CHAT_A)).turn_count == 2
    assert lane.session_id_for_chat(CHAT_B) is None
    assert lane.inspector.checkpoint_path(sid).read_bytes() == before
    [error] = records(caplog, DB_LOGGER, logging.ERROR)
    assert "refuses writes" in error
    assert str(db_path) in error
    assert "Traceback" not in caplog.text

    await let_the_file_grow(db, None)
    result = await lane.on_turn(message(CHAT_A, 3, BIG), engine)
    await lane.on_turn(message(CHAT_B, 1), engine)
    assert (result.turn.seq, result.duplicate) == (3, False)
    assert await seqs(db, sid) == [1, 2, 3]
    [recovered] = records(caplog, DB_LOGGER, logging.WARNING)
    assert "accepts writes again" in recovered
    await lane.shutdown()

    again = ConversationLane(await Database(db_path).open(), CheckpointWriter(checkpoint_dir))
    report = await again.hydrate()
    try:
        assert report.rebuilt == {}
        snapshot = await again.inspector.checkpoint(sid)
        assert snapshot is not None
        assert snapshot.turn_count == 3
        assert snapshot.state.log_view() == (await again.inspector.rebuild_state(sid)).log_view()
    finally:
        await again.shutdown()


# -- the checkpoint directory refuses writes ---------------------------------------------------


@pytest.mark.parametrize("fault", list(FailingDisk.FAULTS))
async def test_checkpoint_faults_keep_every_turn_log_once_and_heal_without_a_new_turn(
    lane, db, engine, checkpoint_dir, monkeypatch, caplog, fault
):
    """While the checkpoint disk fails, every turn is committed and answered, the files stay
    as they were (parseable, behind), and one error line names the cause. Once the disk
    recovers, rewrite_stale_checkpoints (the maintenance job) brings every file level with
    the turn log without waiting for the chats' next messages, and one line says so."""
    caplog.set_level(logging.DEBUG, logger=LANE_LOGGER)
    for n in (1, 2):
        await lane.on_turn(message(CHAT_A, n), engine)
    sid_a = lane.session_id_for_chat(CHAT_A)
    assert sid_a is not None
    path_a = lane.inspector.checkpoint_path(sid_a)
    before = checkpoint_files(path_a)
    disk = FailingDisk(monkeypatch, checkpoint_dir)
    code = disk.fail(fault)

    answers = [await lane.on_turn(message(CHAT_A, n), engine) for n in (3, 4, 5)]
    answers += [await lane.on_turn(message(CHAT_B, n), engine) for n in (1, 2)]
    assert await lane.rewrite_stale_checkpoints() == 0  # the disk has not recovered yet

    assert all(a.turn.status == "answered" and a.turn.assistant_text for a in answers)
    sid_b = lane.session_id_for_chat(CHAT_B)
    assert sid_b is not None
    assert await seqs(db, sid_a) == [1, 2, 3, 4, 5]
    assert await seqs(db, sid_b) == [1, 2]
    assert disk.refused >= 5
    assert checkpoint_files(path_a) == before  # the old files, whole
    assert CheckpointWriter.parse(before[0], journal=before[1], session_id=sid_a).turn_count == 2
    names = sorted(p.name for p in checkpoint_dir.iterdir())
    assert names == sorted([path_a.name] + [path_a.stem + ".journal"] * bool(before[1]))
    [error] = records(caplog, LANE_LOGGER, logging.ERROR)
    assert os.strerror(code) in error
    assert records(caplog, LANE_LOGGER, logging.WARNING) == []

    disk.heal()
    assert await lane.rewrite_stale_checkpoints() == 2

    for sid, turns in ((sid_a, 5), (sid_b, 2)):
        snapshot = await lane.inspector.checkpoint(sid)
        assert snapshot is not None
        assert snapshot.turn_count == turns
        stored = await lane.inspector.session(sid)
        assert stored is not None
        assert snapshot.state == stored.state
    [recovered] = records(caplog, LANE_LOGGER, logging.WARNING)
    assert "written again" in recovered
    assert os.strerror(code) in recovered
    assert len(records(caplog, LANE_LOGGER, logging.ERROR)) == 1
    assert await lane.rewrite_stale_checkpoints() == 0  # nothing left to heal


# -- the real bot on a small real filesystem ---------------------------------------------------


class SmallDisk:
    """A small tmpfs over ``mountpoint``, in a user and mount namespace of its own.

    No root needed: ``unshare --user --map-root-user --mount`` starts a holder process that
    mounts the tmpfs and sleeps; a bot started with :meth:`prefix` joins its namespaces
    (``nsenter``) and sees the tmpfs at ``mountpoint``, while the test reaches it through
    ``/proc/<holder>/root``. The tmpfs outlives the bot's runs and goes with the holder.
    """

    def __init__(self, mountpoint: Path, size_kib: int) -> None:
        self.mountpoint = mountpoint
        self.size_kib = size_kib
        mountpoint.mkdir(parents=True, exist_ok=True)
        script = 'mount -t tmpfs -o size="$1"k tmpfs "$2" && echo ready && exec sleep 3600'
        self.holder = subprocess.Popen(
            [
                "unshare",
                "--user",
                "--map-root-user",
                "--mount",
                "sh",
                "-c",
                script,
                "sh",
                str(size_kib),
                str(mountpoint),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.holder.stdout is not None
        if self.holder.stdout.readline() != b"ready\n":
            self.stop()
            pytest.skip("cannot mount a tmpfs in a user namespace here")

    def prefix(self, workdir: Path) -> tuple[str, ...]:
        """The command prefix that runs a program inside the namespace, in ``workdir``."""
        return (*self._nsenter(), f"--wd={workdir}")

    def path(self, inside: Path) -> Path:
        """The path by which the test reaches ``inside`` (an absolute path) as the bot sees it."""
        return Path(f"/proc/{self.holder.pid}/root") / inside.relative_to("/")

    def fill(self) -> None:
        """Take every free block of the tmpfs with a filler file."""
        with self.path(self.mountpoint / "filler").open("ab", buffering=0) as filler:
            filler.write(bytes(self.size_kib * 1024))  # a short write: what fits
            with pytest.raises(OSError, match=os.strerror(errno.ENOSPC)):
                filler.write(b"\0")

    def free(self) -> None:
        self.path(self.mountpoint / "filler").unlink()

    def copy_out(self, inside: Path, to: Path) -> Path:
        """Copy a closed database file out of the tmpfs (SQLite would resolve the
        ``/proc/<pid>/root`` link and open the directory under the tmpfs instead)."""
        shutil.copyfile(self.path(inside), to)
        return to

    def remount(self, mode: str) -> None:
        """Remount the tmpfs ``ro`` or ``rw`` (retried while a file is open for writing)."""
        command = [*self._nsenter(), "mount", "-o", f"remount,bind,{mode}", str(self.mountpoint)]
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while (done := subprocess.run(command, capture_output=True, check=False)).returncode:
            assert time.monotonic() < deadline, done.stderr
            time.sleep(0.05)

    def stop(self) -> None:
        self.holder.kill()
        self.holder.communicate()

    def _nsenter(self) -> tuple[str, ...]:
        pid = self.holder.pid
        return ("nsenter", f"--target={pid}", "--user", "--mount", "--preserve-credentials")


@pytest.fixture
def small_disk() -> Iterator[Callable[[Path, int], SmallDisk]]:
    """``small_disk(mountpoint, size_kib)``: a :class:`SmallDisk`, removed after the test."""
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        pytest.skip("needs unshare and nsenter (util-linux)")
    disks: list[SmallDisk] = []

    def make(mountpoint: Path, size_kib: int) -> SmallDisk:
        disks.append(SmallDisk(mountpoint, size_kib))
        return disks[-1]

    yield make
    for disk in disks:
        disk.stop()


@pytest.fixture
def db_disk(api, launch, small_disk, tmp_path):
    """The database on a 16 MiB tmpfs: ``(disk, db, start)``, where ``start(**env)`` launches
    a bot with its database at ``db`` on that disk (it does not wait for it)."""
    disk = small_disk(tmp_path / "data", 16 * 1024)
    db = tmp_path / "data" / "memory.db"

    def start(**env: str) -> BotProcess:
        return launch(api, prefix=disk.prefix(tmp_path), AGENT_DB_PATH=str(db), **env)

    return disk, db, start


def checkpoint_files(path: Path) -> tuple[bytes, bytes]:
    """The bytes of a checkpoint's base file and of its journal (``b""``: none)."""
    journal = path.with_suffix(".journal")
    return path.read_bytes(), journal.read_bytes() if journal.exists() else b""


def checkpoint_turns(directory: Path) -> dict[int, int]:
    """chat id -> the turn count of its checkpoint, for every checkpoint file in ``directory``."""
    found = {}
    for path in directory.glob("ses_*.json"):
        base, journal = checkpoint_files(path)
        snapshot = CheckpointWriter.parse(base, journal=journal, session_id=path.stem)
        found[snapshot.chat_id] = snapshot.turn_count
    return found


def lines_with(stderr: str, mark: str) -> list[str]:
    return [line for line in stderr.splitlines() if mark in line]


def test_bot_answers_while_the_checkpoint_disk_is_full_or_read_only_and_heals(
    api, chats, launch, small_disk, tmp_path
):
    """The real bot with its checkpoint directory on a 1 MiB tmpfs, filled up, then remounted
    read-only: every message is answered and in the turn log, each outage costs one error
    line and no traceback, and once the disk recovers every checkpoint catches up with the
    turn log by itself (the heal job), with no new message in those chats."""
    chat_a, chat_b = 6001, 6002
    directory = tmp_path / "checkpoints"
    disk = small_disk(directory, 1024)
    bot = launch(api, prefix=disk.prefix(tmp_path), AGENT_HEAL_INTERVAL="0.5")
    bot.wait_until_polling(api)
    seen = disk.path(directory)
    assert "Ada" in chats.ask(chat_a, "my name is Ada").text
    chats.ask(chat_a, "I'm planning a trip to Lisbon in May")
    assert checkpoint_turns(seen) == {chat_a: 2}

    def outage(
        start: Callable[[], None],
        end: Callable[[], None],
        level: dict[int, int],
        *,
        slack: bool = False,
    ) -> None:
        start()
        for chat, text in ((chat_a, "remind me to book the hotel"), (chat_b, "my name is Bob")):
            assert chats.ask(chat, text).text
        assert "Ada" in chats.ask(chat_a, "what's my name?").text
        caught_up = {chat_a: level[chat_a] + 2, chat_b: level.get(chat_b, 0) + 1}
        held = checkpoint_turns(seen)  # whole, and never ahead of the turn log
        if slack:  # a journal's line may still fit in its last page on a full disk
            assert held.keys() == level.keys()
            assert all(level[chat] <= held[chat] <= caught_up[chat] for chat in held)
        else:
            assert held == level
        end()
        api.wait_for(lambda _: checkpoint_turns(seen) == caught_up, ANSWER_TIMEOUT, "not healed")

    outage(disk.fill, disk.free, {chat_a: 2}, slack=True)
    assert len(lines_with(bot.stderr, "not written")) == 1
    assert len(lines_with(bot.stderr, "checkpoints are written again")) == 1
    outage(lambda: disk.remount("ro"), lambda: disk.remount("rw"), {chat_a: 4, chat_b: 1})
    bot.stop()

    stderr = bot.stderr
    [full, read_only] = lines_with(stderr, "not written")
    assert os.strerror(errno.ENOSPC) in full
    assert os.strerror(errno.EROFS) in read_only
    assert len(lines_with(stderr, "checkpoints are written again")) == 2
    assert " ERROR " not in stderr.replace(full, "").replace(read_only, "")
    assert "Traceback" not in stderr
    db = tmp_path / "memory.db"
    turns = db_rows(
        db,
        "SELECT s.chat_id, count(*) FROM conversation_turns JOIN conversation_sessions s"
        " USING (session_id) GROUP BY s.chat_id ORDER BY s.chat_id",
    )
    assert turns == [(chat_a, 6), (chat_b, 2)]
    assert checkpoint_turns(seen) == {chat_a: 6, chat_b: 2}
    assert not list(seen.glob(".tmp-*"))


def test_bot_on_a_full_database_disk_apologises_confirms_nothing_and_answers_after(
    api, chats, db_disk, tmp_path
):
    """The real bot with its database on a 16 MiB tmpfs, filled up: a message gets one short
    apology and is not confirmed to Telegram (it is not in the journal); once the disk has
    room again it is answered, nothing said before is forgotten, and the log has one error
    line for the outage, one for the recovery, no traceback."""
    chat = 6101
    disk, db, start = db_disk
    bot = start()
    bot.wait_until_polling(api)
    assert "Ada" in chats.ask(chat, "my name is Ada").text

    disk.fill()
    update_id, message_id = chats.send(chat, "I'm planning a trip to Lisbon in May")
    apology = chats.wait_for_message(chat, APOLOGY)
    assert "reply_parameters" not in apology.params
    polls = len(api.calls("getUpdates"))
    api.wait_for(lambda a: len(a.calls("getUpdates")) > polls + 1, ANSWER_TIMEOUT, "no poll")
    assert update_id not in api.confirmed_update_ids  # Telegram keeps it (I1)

    disk.free()
    api.wait_for(lambda _: chats.answers_to(chat, message_id), ANSWER_TIMEOUT, "never answered")
    [answer] = chats.answers_to(chat, message_id)
    assert "Lisbon" in answer.text
    assert "Ada" in chats.ask(chat, "what's my name?").text
    bot.stop()

    assert [c.text for c in api.sent_messages(chat)].count(APOLOGY) == 1
    stored = disk.copy_out(db, tmp_path / "copy.db")  # the bot stopped: no WAL left
    assert db_rows(stored, "SELECT user_text FROM conversation_turns ORDER BY seq") == [
        ("my name is Ada",),
        ("I'm planning a trip to Lisbon in May",),
        ("what's my name?",),
    ]
    assert db_rows(stored, "SELECT DISTINCT status FROM inbound_updates") == [("done",)]
    stderr = bot.stderr
    [refused] = lines_with(stderr, " ERROR ")
    assert "refuses writes" in refused
    assert "database or disk is full" in refused
    assert len(lines_with(stderr, "accepts writes again")) == 1
    assert "Traceback" not in stderr


def test_work_in_flight_when_the_database_disk_fills_is_finished_once_after(
    api, chats, db_disk, tmp_path
):
    """The database disk fills while a reply is on its way and the next message is journaled
    but not yet handled: the reply is sent once (its delivery is recorded later, not resent),
    the next message gets one apology, stays pending, and is answered once the disk has room;
    every update ends up done and every reply delivered, with no traceback."""
    chat = 6201
    disk, db, start = db_disk
    bot = start(
        AGENT_HEAL_INTERVAL="0.5",
        AGENT_TELEGRAM_TIMEOUT="60",  # the held reply below must not time out and be resent
    )
    bot.wait_until_polling(api)
    chats.ask(chat, "my name is Ada")

    sends = api.attempts("sendMessage")
    api.delay("sendMessage", 8)  # the fake holds the next reply while the disk fills
    _, first = chats.send(chat, "I'm planning a trip to Lisbon in May")
    api.wait_for(lambda a: a.attempts("sendMessage") > sends, ANSWER_TIMEOUT, "no reply sent")
    second_update, second = chats.send(chat, "remind me to book the hotel")
    api.wait_until_confirmed(second_update, ANSWER_TIMEOUT)  # journaled, queued behind
    disk.fill()
    api.delay("sendMessage", 0)
    chats.wait_for_message(chat, APOLOGY)
    disk.free()
    api.wait_for(lambda _: chats.answers_to(chat, second), ANSWER_TIMEOUT, "never answered")
    assert "Ada" in chats.ask(chat, "what's my name?").text
    bot.stop()

    assert [len(chats.answers_to(chat, m)) for m in (first, second)] == [1, 1]
    assert [c.text for c in api.sent_messages(chat)].count(APOLOGY) == 1
    stored = disk.copy_out(db, tmp_path / "copy.db")
    assert db_rows(stored, "SELECT seq, status FROM conversation_turns ORDER BY seq") == [
        (n, "delivered") for n in (1, 2, 3, 4)
    ]
    assert db_rows(stored, "SELECT DISTINCT status FROM inbound_updates") == [("done",)]
    assert len(lines_with(bot.stderr, " ERROR ")) == 1
    assert "Traceback" not in bot.stderr


def test_bot_on_a_read_only_database_stops_with_one_clear_line_and_loses_nothing(
    api, chats, db_disk
):
    """Started on a database whose filesystem is read-only, the bot stops at once (exit code
    1) with one line naming the file and the cause, no traceback, having confirmed nothing
    to Telegram; started again once it is writable, it answers the message that waited and
    remembers what it was told before."""
    chat = 6301
    disk, db, start = db_disk
    first = start()
    first.wait_until_polling(api)
    chats.ask(chat, "my name is Ada")
    first.stop()

    disk.remount("ro")
    update_id, message_id = chats.send(chat, "what's my name?")
    refused = start()
    assert refused.wait(60) == 1
    [line] = [line for line in refused.stderr.splitlines() if line.strip()]
    assert str(db) in line
    assert "readonly" in line or "read-only" in line
    assert update_id not in api.confirmed_update_ids

    disk.remount("rw")
    second = start()
    second.wait_until_polling(api)
    api.wait_for(lambda _: chats.answers_to(chat, message_id), ANSWER_TIMEOUT, "never answered")
    [answer] = chats.answers_to(chat, message_id)
    assert "Ada" in answer.text
    second.stop()
