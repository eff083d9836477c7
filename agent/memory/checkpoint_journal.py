"""A checkpoint's journal: what each write changed since the base file, one JSON line a write.

A session's checkpoint is its base file ``<session_id>.json`` (a whole snapshot, written
atomically) plus, after it, ``<session_id>.journal``: a header line naming the base it follows
(a digest of the base's bytes), then one line per later write holding only what that write
changed (:func:`change`): the top-level fields and the state's fields whose value changed, and
for a list that went on (the recent turns, the state's buffers) how many items dropped off its
front and the items added at its end. Reading applies every complete line to the base, in
order (:func:`compose`).

What a reader can meet, and what it makes of it (invariant I5: a checkpoint is never ahead of
the turn log, and a behind one is rebuilt from the log):

* a journal whose header names another base (the base was rewritten, and the crash came before
  the old journal was removed, or a reader read the base before a rewrite and the journal
  after): the journal is not this base's and is left out, so the checkpoint is the base alone,
  which was whole when written: behind, or current;
* a torn or garbled last line (a crash during an append): the lines before it are the
  checkpoint, one write behind;
* a garbled line with a complete line after it: not something an append leaves, so the
  checkpoint is corrupt (:class:`~agent.errors.CheckpointCorrupt`).

Tested by ``tests/test_checkpoint_journal.py``.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from agent.errors import CheckpointCorrupt

__all__ = ["SUFFIX", "base_digest", "change", "compose", "header", "line"]

#: The journal's file name ends so: ``<session_id>.journal``.
SUFFIX = ".journal"

# The fields of a snapshot a line names apart from the others.
_STATE, _TURNS = "state", "recent_turns"
# A line's keys: top-level fields set, state fields set, state lists shifted (each
# ``[dropped, added]``), the recent turns shifted (``"recent_turns"``). The header's one key.
_SET, _STATE_SET, _LISTS, _BASE = "set", "state", "lists", "base"


def base_digest(base: bytes) -> str:
    """Return the digest of a base file's bytes, by which its journal names it."""
    return hashlib.blake2b(base, digest_size=12).hexdigest()


def line(value: dict[str, Any]) -> bytes:
    """Return ``value`` as one journal line: compact JSON, sorted keys, a newline at the end."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)


def header(digest: str) -> bytes:
    """Return the first line of a journal that follows the base of ``digest``."""
    return line({_BASE: digest})


def change(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """Return what turns the snapshot document ``old`` into ``new``, as a journal line holds it.

    Both are snapshots as JSON values (``model_dump(mode="json")``) with the same keys at the
    top and in the state; ``None`` if they do not have (a field added or removed: the base is
    rewritten instead). A list that continues the old one after some of its items dropped off
    the front (the recent turns, the state's buffers) is written as how many dropped and the
    items added.
    """
    old_state, new_state = old.get(_STATE), new.get(_STATE)
    if (
        old.keys() != new.keys()
        or not isinstance(old_state, dict)
        or not isinstance(new_state, dict)
        or old_state.keys() != new_state.keys()
    ):
        return None
    delta: dict[str, Any] = {}
    top = {
        key: value
        for key, value in new.items()
        if key not in (_STATE, _TURNS) and old[key] != value
    }
    if top:
        delta[_SET] = top
    state: dict[str, Any] = {}
    shifted: dict[str, Any] = {}
    for key, value in new_state.items():
        before = old_state[key]
        if before == value:
            continue
        shift = _shift(before, value)
        if shift is None:
            state[key] = value
        else:
            shifted[key] = shift
    if state:
        delta[_STATE_SET] = state
    if shifted:
        delta[_LISTS] = shifted
    old_turns, new_turns = old.get(_TURNS, []), new.get(_TURNS, [])
    if old_turns != new_turns:
        delta[_TURNS] = _shift(old_turns, new_turns) or [len(old_turns), new_turns]
    return delta


def _shift(old: Any, new: Any) -> list[Any] | None:
    """Return ``[dropped, added]`` when list ``new`` is list ``old`` with ``dropped`` items
    off its front and ``added`` at its end, keeping at least one (``None``: it is not)."""
    if not isinstance(old, list) or not isinstance(new, list):
        return None
    for drop in range(len(old)):
        kept = len(old) - drop
        if kept <= len(new) and old[drop:] == new[:kept]:
            return [drop, new[kept:]]
    return None


def compose(base: bytes, journal: bytes, name: str) -> dict[str, Any]:
    """Return the snapshot document of a base file and its journal (``b""``: none).

    Raises:
        CheckpointCorrupt: the base is empty, not JSON or not an object; or a line of the
            journal other than its last is garbled (see the module docstring).
    """
    if not base.strip():
        raise CheckpointCorrupt(f"{name} is empty")
    try:
        document = orjson.loads(base)
    except orjson.JSONDecodeError as exc:
        raise CheckpointCorrupt(f"{name} is not valid JSON (truncated or garbled)") from exc
    if not isinstance(document, dict):
        raise CheckpointCorrupt(f"{name} is not a snapshot (not a JSON object)")
    return _with_journal(document, base, journal, name) if journal else document


def _with_journal(
    document: dict[str, Any], base: bytes, journal: bytes, name: str
) -> dict[str, Any]:
    # Only lines that end in a newline are complete: an append cut short leaves none.
    lines = journal.split(b"\n")[:-1]
    if not lines or _parsed(lines[0]) != {_BASE: base_digest(base)}:
        return document  # another base's journal, or a header torn: the base alone
    for number, data in enumerate(lines[1:], start=2):
        delta = _parsed(data)
        if delta is None or not _applies(document, delta):
            if number == len(lines):
                break  # the last line, garbled by a crash during its append: one write behind
            raise CheckpointCorrupt(
                f"{name} journal line {number} of {len(lines)} is garbled "
                "(a journal is only appended to)"
            )
        document = _applied(document, delta)
    return document


def _parsed(data: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _applies(document: dict[str, Any], delta: dict[str, Any]) -> bool:
    """Whether ``delta`` is a line :func:`change` could have written for ``document``."""
    state = document.get(_STATE)
    lists = delta.get(_LISTS, {})
    return (
        delta.keys() <= {_SET, _STATE_SET, _LISTS, _TURNS}
        and isinstance(delta.get(_SET, {}), dict)
        and isinstance(delta.get(_STATE_SET, {}), dict)
        and isinstance(state, dict)
        and isinstance(lists, dict)
        and all(_shifts(state.get(key), shift) for key, shift in lists.items())
        and _shifts(document.get(_TURNS, []), delta.get(_TURNS, [0, []]))
    )


def _shifts(items: Any, shift: Any) -> bool:
    """Whether ``shift`` is a ``[dropped, added]`` that list ``items`` can take."""
    return (
        isinstance(items, list)
        and isinstance(shift, list)
        and len(shift) == 2  # dropped, added
        and type(shift[0]) is int
        and 0 <= shift[0] <= len(items)
        and isinstance(shift[1], list)
    )


def _applied(document: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """Return ``document`` with ``delta`` applied (checked by :func:`_applies`)."""
    state = {**document[_STATE], **delta.get(_STATE_SET, {})}
    for key, (drop, added) in delta.get(_LISTS, {}).items():
        state[key] = state[key][drop:] + added
    drop, added = delta.get(_TURNS, [0, []])
    return {
        **document,
        **delta.get(_SET, {}),
        _STATE: state,
        _TURNS: document.get(_TURNS, [])[drop:] + added,
    }
