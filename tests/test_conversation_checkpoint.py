"""Tests of :class:`CheckpointWriter`: atomic, readable, confined per-session JSON files."""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from agent.errors import CheckpointCorrupt, CheckpointError
from agent.memory import (
    CHECKPOINT_SCHEMA_VERSION,
    CheckpointWriter,
    ConversationCheckpointSnapshot,
    ConversationTurn,
    OpenLoop,
    SessionState,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2
OTHER_SID = "ses_" + "fedcba9876543210" * 2


def snapshot(session_id: str = SID, turn_count: int = 2) -> ConversationCheckpointSnapshot:
    turns = tuple(
        ConversationTurn(
            turn_id=f"trn_{seq:032x}",
            session_id=session_id,
            seq=seq,
            user_text=f"message {seq} — ünïcödé ✓",
            assistant_text=f"answer {seq}",
            created_at=T0,
        )
        for seq in range(1, turn_count + 1)
    )
    state = SessionState(
        session_id=session_id,
        turn_count=turn_count,
        open_loops=(OpenLoop(loop_id="l1", text="send the report", opened_turn=1),),
        summary_buffer=tuple(f"#{t.seq} user: {t.user_text}" for t in turns),
    )
    return ConversationCheckpointSnapshot(
        session_id=session_id,
        chat_id=42,
        turn_count=turn_count,
        state=state,
        recent_turns=turns,
        summary_delta="",
        written_at=T0,
    )


@pytest.fixture
def writer(checkpoint_dir: Path) -> CheckpointWriter:
    return CheckpointWriter(checkpoint_dir)


async def test_file_is_indented_json_with_sorted_keys(writer):
    """A checkpoint is two-space indented JSON with sorted keys, so people can read and diff it."""
    path = await writer.write(snapshot())

    data = path.read_bytes()
    document = orjson.loads(data)
    assert path == writer.directory / f"{SID}.json"
    assert data == orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    assert data.startswith(b'{\n  "')
    assert list(document) == sorted(document)
    assert list(document["state"]) == sorted(document["state"])
    assert document["schema_version"] == CHECKPOINT_SCHEMA_VERSION
    assert "ünïcödé ✓" in data.decode("utf-8")


async def test_write_then_load_round_trips(writer):
    """What is written loads back equal, by this writer and by a fresh one."""
    original = snapshot(turn_count=3)

    await writer.write(original)

    assert await writer.load(SID) == original
    assert await CheckpointWriter(writer.directory).load(SID) == original


async def test_write_creates_the_directory(tmp_path):
    """The checkpoint directory is created on the first write."""
    writer = CheckpointWriter(tmp_path / "deep" / "checkpoints")

    path = await writer.write(snapshot())

    assert path.is_file()
    assert path.parent == (tmp_path / "deep" / "checkpoints").resolve()


async def test_atomic_replace_leaves_no_temp_file(writer):
    """Rewriting a checkpoint replaces it whole and leaves only ``<session_id>.json`` behind."""
    await writer.write(snapshot(turn_count=1))
    await writer.write(snapshot(turn_count=2))

    assert [p.name for p in writer.directory.iterdir()] == [f"{SID}.json"]
    loaded = await writer.load(SID)
    assert loaded is not None
    assert loaded.turn_count == 2


async def test_failed_fsync_keeps_previous_file_and_no_temp(writer, monkeypatch):
    """An fsync error raises CheckpointError; the old checkpoint stays, the temp file goes."""
    await writer.write(snapshot(turn_count=1))
    before = writer.path_for(SID).read_bytes()

    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", fsync)

    with pytest.raises(CheckpointError, match=rf"cannot write checkpoint {SID}\.json: "):
        await writer.write(snapshot(turn_count=2))

    assert writer.path_for(SID).read_bytes() == before
    assert [p.name for p in writer.directory.iterdir()] == [f"{SID}.json"]


async def test_failed_replace_raises_checkpoint_error_not_oserror(writer, monkeypatch):
    """A full disk at rename is a CheckpointError naming the cause; nothing else changes."""
    await writer.write(snapshot(turn_count=1))
    before = writer.path_for(SID).read_bytes()

    def replace(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", replace)

    with pytest.raises(CheckpointError, match="No space left on device") as caught:
        await writer.write(snapshot(turn_count=2))

    assert not isinstance(caught.value, CheckpointCorrupt)
    assert isinstance(caught.value.__cause__, OSError)
    assert writer.path_for(SID).read_bytes() == before
    assert [p.name for p in writer.directory.iterdir()] == [f"{SID}.json"]


async def test_fsync_false_still_writes_without_fsync(checkpoint_dir, monkeypatch):
    """With ``fsync=False`` the file is written (and loads) without a single fsync call."""

    def fsync(fd: int) -> None:
        pytest.fail("fsync was called although fsync=False")

    monkeypatch.setattr(os, "fsync", fsync)
    writer = CheckpointWriter(checkpoint_dir, fsync=False)

    await writer.write(snapshot())

    assert await writer.load(SID) == snapshot()
    assert await writer.delete(SID) is True


@pytest.mark.parametrize(
    "bad_id",
    [
        "../etc/passwd",
        "ses_../../x",
        "/etc/passwd",
        "",
        "ses_",
        "ses_" + "0" * 31,
        "ses_" + "0" * 33,
        "ses_" + "G" * 32,
        "ses_" + "A" * 32,
        "SES_" + "a" * 32,
        "trn_" + "a" * 32,
        "ses_" + "a" * 32 + "\n",
        "ses_" + "a" * 32 + ".json",
        "ses_" + "a" * 32 + "/../x",
        "ses_" + "a" * 16 + "/" + "a" * 15,
    ],
)
def test_path_for_rejects_anything_but_our_session_ids(writer, bad_id):
    """File names come only from ids we generate: traversal and look-alikes are refused."""
    with pytest.raises(ValueError, match="not a session id"):
        writer.path_for(bad_id)


async def test_load_and_delete_refuse_traversal(writer, tmp_path):
    """``load`` and ``delete`` go through ``path_for`` too: no file outside is touched."""
    outside = tmp_path / "victim.json"
    outside.write_text("{}")

    with pytest.raises(ValueError, match="not a session id"):
        await writer.load("../victim")
    with pytest.raises(ValueError, match="not a session id"):
        await writer.delete("../victim")
    assert outside.read_text() == "{}"


def test_path_for_stays_inside_the_directory(writer):
    """A valid id maps to ``<directory>/<id>.json`` and nowhere else."""
    path = writer.path_for(SID)

    assert path.parent == writer.directory
    assert path.name == f"{SID}.json"


async def test_load_of_a_missing_file_is_none(writer):
    """No checkpoint (even no directory yet) is not an error: ``load`` returns None."""
    assert not writer.directory.exists()
    assert await writer.load(SID) is None
    await writer.write(snapshot())
    assert await writer.load(OTHER_SID) is None


async def test_unreadable_file_is_checkpoint_error_not_corrupt(writer):
    """A checkpoint that cannot be read (here: a directory) is a CheckpointError."""
    writer.path_for(SID).mkdir(parents=True)

    with pytest.raises(CheckpointError, match=rf"cannot read checkpoint {SID}\.json") as caught:
        await writer.load(SID)

    assert not isinstance(caught.value, CheckpointCorrupt)


def _valid_bytes() -> bytes:
    return orjson.dumps(snapshot().model_dump(mode="json"))


def _with(**changes: object) -> bytes:
    document = orjson.loads(_valid_bytes())
    document.update(changes)
    return orjson.dumps(document)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b"", r"is empty", id="empty"),
        pytest.param(b"  \n\t ", r"is empty", id="whitespace"),
        pytest.param(_valid_bytes()[:40], r"is not valid JSON \(truncated or garbled\)", id="cut"),
        pytest.param(b"\x00\xff\xfe garbage \x89", r"is not valid JSON", id="garbage"),
        pytest.param(_with(schema_version=999), r"has schema version 999, expected 1", id="v999"),
        pytest.param(b"[1, 2, 3]", r"has schema version None, expected 1", id="not-an-object"),
        pytest.param(
            orjson.dumps({"schema_version": 1}),
            r"is not a valid snapshot \(session_id: Field required\)",
            id="missing-fields",
        ),
        pytest.param(
            _with(turn_count="many"),
            r"is not a valid snapshot \(turn_count: .*integer",
            id="wrong-type",
        ),
        pytest.param(
            _with(surprise=True),
            r"is not a valid snapshot \(surprise: Extra inputs are not permitted\)",
            id="extra-field",
        ),
        pytest.param(_with(session_id=OTHER_SID), rf"holds session {OTHER_SID}", id="other"),
    ],
)
def test_parse_errors_are_checkpoint_corrupt_with_a_reason(data, reason):
    """Every bad file is CheckpointCorrupt naming the file and what is wrong, never a TypeError."""
    with pytest.raises(CheckpointCorrupt, match=rf"^{SID}\.json {reason}"):
        CheckpointWriter.parse(data, session_id=SID, name=f"{SID}.json")


async def test_load_reports_a_corrupt_file(writer):
    """``load`` of a truncated file raises CheckpointCorrupt naming the file."""
    path = await writer.write(snapshot())
    path.write_bytes(path.read_bytes()[:-10])

    with pytest.raises(CheckpointCorrupt, match=rf"{SID}\.json is not valid JSON"):
        await writer.load(SID)


async def test_session_ids_lists_only_valid_id_files(writer):
    """``session_ids`` lists sorted ids of ``<id>.json`` files and ignores everything else."""
    assert writer.session_ids() == []  # no directory yet
    await writer.write(snapshot(OTHER_SID))
    await writer.write(snapshot(SID))
    directory = writer.directory
    (directory / "README.json").write_text("{}")
    (directory / "notes.txt").write_text("x")
    (directory / f"{SID}.json.bak").write_text("{}")
    (directory / f".tmp-{SID}.abc123").write_text("{")
    (directory / ("ses_" + "A" * 32 + ".json")).write_text("{}")
    (directory / "ses_123.json").write_text("{}")

    assert writer.session_ids() == [SID, OTHER_SID]


async def test_delete_reports_whether_a_file_existed(writer):
    """``delete`` removes the file and says whether there was one."""
    await writer.write(snapshot())

    assert await writer.delete(SID) is True
    assert not writer.path_for(SID).exists()
    assert await writer.delete(SID) is False


async def test_remove_temp_files_deletes_only_temp_files(writer):
    """``remove_temp_files`` deletes leftovers of interrupted writes, not checkpoints."""
    assert writer.remove_temp_files() == 0  # no directory yet
    await writer.write(snapshot())
    (writer.directory / f".tmp-{SID}.k2j4h1").write_bytes(b'{"half": ')
    (writer.directory / f".tmp-{OTHER_SID}.x9").write_bytes(b"")

    assert writer.remove_temp_files() == 2

    assert [p.name for p in writer.directory.iterdir()] == [f"{SID}.json"]
    assert writer.remove_temp_files() == 0


async def test_the_checkpoint_directory_is_its_owners_alone(tmp_path):
    """Checkpoints hold conversations: the directory is made 0700 (and an existing one that
    others could list is made so), each file 0600."""
    directory = tmp_path / "checkpoints"
    writer = CheckpointWriter(directory)
    writer.make_private()
    assert directory.stat().st_mode & 0o777 == 0o700
    directory.chmod(0o755)
    writer.make_private()
    assert directory.stat().st_mode & 0o777 == 0o700
