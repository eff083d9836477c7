"""Tests of :class:`CheckpointWriter`: atomic, readable, confined per-session JSON files."""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from agent.errors import CheckpointCorrupt, CheckpointError
from agent.memory import CheckpointWriter, ConversationTurn, OpenLoop, SessionState
from agent.memory.schemas import (
    CHECKPOINT_SCHEMA_VERSION,
    CheckpointTurn,
    ConversationCheckpointSnapshot,
    dump_json,
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
        state=state,
        recent_turns=tuple(CheckpointTurn.of(turn) for turn in turns),
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
    """A later write appends to ``<session_id>.journal``; a compacting one replaces the base
    whole and leaves only ``<session_id>.json`` behind. No temporary file is left either way."""
    await writer.write(snapshot(turn_count=1))
    await writer.write(snapshot(turn_count=2))

    assert sorted(p.name for p in writer.directory.iterdir()) == [f"{SID}.journal", f"{SID}.json"]
    loaded = await writer.load(SID)
    assert loaded is not None
    assert loaded.turn_count == 2

    await writer.write(snapshot(turn_count=3), compact=True)

    assert [p.name for p in writer.directory.iterdir()] == [f"{SID}.json"]
    assert writer.path_for(SID).read_bytes() == dump_json(snapshot(turn_count=3), indent=True)
    assert await writer.load(SID) == snapshot(turn_count=3)


@pytest.mark.parametrize("compact", [True, False], ids=["base", "journal"])
async def test_failed_fsync_keeps_previous_file_and_no_temp(writer, monkeypatch, compact):
    """An fsync error raises CheckpointError; the old checkpoint stays, the temp file goes, and
    a journal's append is undone (the files read the previous checkpoint)."""
    await writer.write(snapshot(turn_count=1))
    before = writer.path_for(SID).read_bytes()

    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fsync)

    with pytest.raises(CheckpointError, match=rf"cannot write checkpoint {SID}\.json: "):
        await writer.write(snapshot(turn_count=2), compact=compact)

    assert writer.path_for(SID).read_bytes() == before
    assert [p.name for p in writer.directory.iterdir()] == [f"{SID}.json"]
    assert await writer.load(SID) == snapshot(turn_count=1)


async def test_failed_replace_raises_checkpoint_error_not_oserror(writer, monkeypatch):
    """A full disk at rename is a CheckpointError naming the cause; nothing else changes."""
    await writer.write(snapshot(turn_count=1))
    before = writer.path_for(SID).read_bytes()

    def replace(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", replace)

    with pytest.raises(CheckpointError, match="No space left on device") as caught:
        await writer.write(snapshot(turn_count=2), compact=True)

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
        pytest.param(
            _with(schema_version=999),
            r"has schema version 999, newer than this program reads \(2\): written by a newer"
            r" version of the bot",
            id="v999",
        ),
        pytest.param(_with(schema_version=0), r"has schema version 0, expected 2", id="v0"),
        pytest.param(_with(schema_version="2"), r"has schema version '2', expected 2", id="v-str"),
        pytest.param(_with(schema_version=None), r"has schema version None, expected 2", id="v?"),
        pytest.param(b"[1, 2, 3]", r"is not a snapshot \(not a JSON object\)", id="not-an-object"),
        pytest.param(
            orjson.dumps({"schema_version": CHECKPOINT_SCHEMA_VERSION}),
            r"is not a valid snapshot \(session_id: Field required\)",
            id="missing-fields",
        ),
        pytest.param(
            _with(chat_id="many"),
            r"is not a valid snapshot \(chat_id: .*integer",
            id="wrong-type",
        ),
        pytest.param(
            _with(turn_count=2),
            r"is not a valid snapshot \(turn_count: Extra inputs are not permitted\)",
            id="v1-field-in-v2",
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


# -- version 1 files ---------------------------------------------------------------------------

#: A checkpoint file exactly as version 1 wrote it (the bot before checkpoint version 2, at a
#: clean shutdown after two turns, with ExtractiveSummarizer(keep_raw=1)). Its fields said
#: things twice (``turn_count``, ``summary_delta``), and turn 1 says ``answered`` though its
#: reply was recorded as delivered before turn 2 was written.
V1_SID = "ses_01a21348b6ab7f77b85196ced15ce9b3"
V1_FILE = """\
{
  "chat_id": 42,
  "recent_turns": [
    {
      "action_name": null,
      "assistant_text": "Nice to meet you, Ada.",
      "bot_id": 0,
      "created_at": "2025-03-01T12:01:00Z",
      "delivered_at": null,
      "intent": "state_fact",
      "job_refs": [],
      "message_id": 101,
      "reply_message_id": null,
      "seq": 1,
      "session_id": "ses_01a21348b6ab7f77b85196ced15ce9b3",
      "speaker": null,
      "status": "answered",
      "turn_id": "trn_01a21348b6ac7e01856f5883355d0d0c",
      "update_id": 1,
      "user_id": 7,
      "user_text": "my name is Ada"
    },
    {
      "action_name": "add_todo",
      "assistant_text": "Added to your list: book the hotel.",
      "bot_id": 0,
      "created_at": "2025-03-01T12:02:00Z",
      "delivered_at": null,
      "intent": "add_todo",
      "job_refs": [],
      "message_id": 102,
      "reply_message_id": null,
      "seq": 2,
      "session_id": "ses_01a21348b6ab7f77b85196ced15ce9b3",
      "speaker": null,
      "status": "answered",
      "turn_id": "trn_01a21348b6b278eea5f4059fba8575f3",
      "update_id": 2,
      "user_id": 7,
      "user_text": "remind me to book the hotel"
    }
  ],
  "schema_version": 1,
  "session_id": "ses_01a21348b6ab7f77b85196ced15ce9b3",
  "state": {
    "active_job_refs": [],
    "active_topics": [
      {
        "last_turn": 2,
        "name": "hotel",
        "weight": 1.0
      },
      {
        "last_turn": 1,
        "name": "ada",
        "weight": 0.85
      }
    ],
    "chat_type": "private",
    "closed_loops": [],
    "decisions": [],
    "facts": [
      {
        "key": "name",
        "turn": 1,
        "value": "Ada"
      }
    ],
    "last_intent": "add_todo",
    "last_response_type": "action",
    "last_summary_delta": "",
    "open_loops": [
      {
        "closed_turn": null,
        "kind": "todo",
        "loop_id": "loop-2-1",
        "opened_turn": 2,
        "owner": null,
        "text": "book the hotel"
      }
    ],
    "participants": [],
    "pending_clarifications": [],
    "proposals": [],
    "resolved_entities": {
      "it": "loop-2-1",
      "that": "loop-2-1",
      "that task": "loop-2-1",
      "the task": "loop-2-1",
      "this task": "loop-2-1"
    },
    "rolling_summary": "",
    "session_id": "ses_01a21348b6ab7f77b85196ced15ce9b3",
    "status": "shutdown_clean",
    "summarized_through": 0,
    "summary_buffer": [
      "#1 user: my name is Ada -> Nice to meet you, Ada.",
      "#2 user: remind me to book the hotel -> Added to your list: book the hotel."
    ],
    "summary_items": [
      {
        "kind": "fact",
        "seq": 1,
        "text": "name: Ada",
        "who": "user"
      },
      {
        "kind": "key",
        "seq": 2,
        "text": "remind me to book the hotel",
        "who": "user"
      }
    ],
    "summary_version": 0,
    "turn_count": 2
  },
  "summary_delta": "[turns 1-1]\\n#1 user [fact]: name: Ada",
  "turn_count": 2,
  "written_at": "2025-03-01T12:02:00Z"
}"""


def test_a_version_1_file_loads_in_the_current_format():
    """A version 1 file parses into a current snapshot: the state as it was, the turn count
    once, the shutdown's pending delta kept, the turns' text without a delivery claim."""
    v1 = orjson.loads(V1_FILE)

    snapshot = CheckpointWriter.parse(V1_FILE.encode(), session_id=V1_SID, name="v1.json")

    assert snapshot.schema_version == CHECKPOINT_SCHEMA_VERSION == 2
    # The state as it was (fields added since then take their defaults).
    assert snapshot.state == SessionState.model_validate(v1["state"])
    assert set(v1["state"]) <= set(snapshot.state.model_dump(mode="json"))
    assert snapshot.turn_count == v1["turn_count"] == 2
    assert snapshot.pending_summary_delta == v1["summary_delta"]
    assert snapshot.pending_summary_delta == "[turns 1-1]\n#1 user [fact]: name: Ada"
    assert list(snapshot.recent_turns) == [
        CheckpointTurn.model_validate(
            {
                k: v
                for k, v in turn.items()
                if k not in ("status", "reply_message_id", "delivered_at")
            }
        )
        for turn in v1["recent_turns"]
    ]
    assert (snapshot.chat_id, snapshot.written_at) == (42, datetime(2025, 3, 1, 12, 2, tzinfo=UTC))


async def test_a_version_1_file_is_rewritten_with_each_field_once(writer):
    """Written back, a migrated version 1 file says each thing once and nothing of delivery."""
    snapshot = CheckpointWriter.parse(V1_FILE.encode(), session_id=V1_SID)

    path = await writer.write(snapshot)

    document = orjson.loads(path.read_bytes())
    assert set(document) == {
        "chat_id",
        "pending_summary_delta",
        "recent_turns",
        "schema_version",
        "session_id",
        "state",
        "written_at",
    }
    assert document["schema_version"] == 2
    delivery = {"status", "reply_message_id", "delivered_at"}
    assert not any(delivery & set(turn) for turn in document["recent_turns"])
    assert await writer.load(V1_SID) == snapshot


def test_a_version_1_delta_equal_to_the_last_fold_is_not_pending():
    """In a version 1 file written after a turn, ``summary_delta`` repeated the state's last
    delta: migrated, nothing is pending."""
    document = orjson.loads(V1_FILE)
    delta = "[turns 1-1]\n#1 user [fact]: name: Ada"
    document["state"].update(status="active", last_summary_delta=delta)
    document["summary_delta"] = delta

    snapshot = CheckpointWriter.parse(orjson.dumps(document), session_id=V1_SID)

    assert snapshot.state.last_summary_delta == delta
    assert snapshot.pending_summary_delta == ""


def test_a_version_1_file_with_two_turn_counts_is_corrupt():
    """A version 1 file whose two turn counts disagree (edited by hand) is reported, not
    guessed at."""
    document = orjson.loads(V1_FILE)
    document["turn_count"] = 3

    with pytest.raises(CheckpointCorrupt, match=r"^v1\.json says turn 3 beside a state at turn 2$"):
        CheckpointWriter.parse(orjson.dumps(document), session_id=V1_SID, name="v1.json")


async def test_load_reports_a_corrupt_file(writer):
    """``load`` of a truncated file raises CheckpointCorrupt naming the file."""
    path = await writer.write(snapshot())
    path.write_bytes(path.read_bytes()[:-10])

    with pytest.raises(CheckpointCorrupt, match=rf"{SID}\.json is not valid JSON"):
        await writer.load(SID)


async def test_session_ids_lists_only_valid_id_files(writer):
    """``session_ids`` lists sorted ids of ``<id>.json`` files and ignores everything else."""
    assert await writer.session_ids() == []  # no directory yet
    await writer.write(snapshot(OTHER_SID))
    await writer.write(snapshot(SID))
    directory = writer.directory
    (directory / "README.json").write_text("{}")
    (directory / "notes.txt").write_text("x")
    (directory / f"{SID}.json.bak").write_text("{}")
    (directory / f".tmp-{SID}.abc123").write_text("{")
    (directory / ("ses_" + "A" * 32 + ".json")).write_text("{}")
    (directory / "ses_123.json").write_text("{}")

    assert await writer.session_ids() == [SID, OTHER_SID]


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
