"""Tests of agent/utils/ids.py: unique, time-sortable ids, and the session-id gate."""

from __future__ import annotations

import time

import pytest

from agent.utils.ids import is_session_id, job_id, session_id, turn_id


@pytest.mark.parametrize(
    ("make", "prefix"), [(session_id, "ses_"), (turn_id, "trn_"), (job_id, "job_")]
)
def test_ids_are_unique_and_sort_in_creation_order(make, prefix):
    """Ids made one after another in a tight loop (many per millisecond) are all different and
    already sorted."""
    ids = [make() for _ in range(5_000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert all(value.startswith(prefix) for value in ids)


@pytest.mark.parametrize("make", [session_id, turn_id, job_id])
def test_a_later_id_sorts_after_and_is_not_older_than_its_creation(make):
    """An id made later sorts after an earlier one; its first 48 bits (UUIDv7 milliseconds) are
    never before the creation time. (uuid6 bumps them past the clock under bursts of more than
    one id per millisecond, so there is no upper bound.)"""
    before_ms = time.time_ns() // 1_000_000
    earlier = make()
    time.sleep(0.003)
    later = make()

    assert earlier < later
    earlier_ms, later_ms = (int(value[4:16], 16) for value in (earlier, later))
    assert before_ms <= earlier_ms < later_ms


def test_made_session_ids_pass_the_gate_and_turn_ids_do_not():
    """is_session_id accepts exactly what session_id() makes: 'ses_' and 32 lowercase hex."""
    for _ in range(100):
        value = session_id()
        assert is_session_id(value)
        assert len(value) == 36
    assert not is_session_id(turn_id())
    assert not is_session_id(job_id())


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda _: "../x", id="parent-dir"),
        pytest.param(lambda _: "ses_", id="prefix-only"),
        pytest.param(lambda _: "", id="empty"),
        pytest.param(lambda sid: sid.upper(), id="all-uppercase"),
        pytest.param(lambda sid: "ses_" + sid[4:].upper(), id="uppercase-hex"),
        pytest.param(lambda sid: sid + "\n", id="newline-suffixed"),
        pytest.param(lambda sid: "\n" + sid, id="newline-prefixed"),
        pytest.param(lambda sid: sid + " ", id="space-suffixed"),
        pytest.param(lambda sid: sid[:-1], id="31-hex"),
        pytest.param(lambda sid: sid + "0", id="33-hex"),
        pytest.param(lambda sid: sid[:-1] + "g", id="non-hex"),
        pytest.param(lambda sid: sid + ".json", id="file-suffix"),
        pytest.param(lambda sid: "../" + sid, id="relative-path"),
        pytest.param(lambda sid: "/etc/" + sid, id="absolute-path"),
        pytest.param(lambda sid: sid[:20] + "/" + sid[21:], id="slash-inside"),
        pytest.param(lambda sid: sid[:-1] + "\x00", id="nul-byte"),
        pytest.param(lambda sid: "trn_" + sid[4:], id="turn-prefix"),
    ],
)
def test_is_session_id_rejects_path_like_and_malformed_strings(mangle):
    """Anything but the exact shape of a made session id is refused, so user text can never
    become a checkpoint path."""
    valid = session_id()
    assert is_session_id(valid)
    assert not is_session_id(mangle(valid))
