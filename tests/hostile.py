"""Hostile and malformed input (DESIGN.md section 7), and the searches that prove nothing leaked.

The strategies feed hypothesis property tests; the tuples are fixed samples for tests where each
example costs a round trip through a real bot. The search helpers read what the bot leaves
behind as raw bytes (files) or as every table of the database, FTS5 shadow tables included.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from agent.db import Database

__all__ = [
    "HISTORY_ARGUMENTS",
    "INJECTIONS",
    "ODD_CHARACTERS",
    "database_fingerprint",
    "every_table_text",
    "files_containing",
    "telegram_updates",
    "texts",
    "tree_fingerprint",
]

#: Characters that break naive code: NUL and other controls, bidi overrides and isolates,
#: zero-width joiners, a BOM, line and paragraph separators, a combining accent, astral emoji.
ODD_CHARACTERS = (
    "\x00\x01\x08\x0b\x1b\x7f\x85\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202e"
    "\u2066\u2067\u2069\u2028\u2029\ufeff\ufffd\u0301\U0001f98a\U0001f44b\U0001f3fd\U00010348"
)

#: Text that looks like SQL, FTS5 query syntax, a path, a format string or markup.
INJECTIONS = (
    "'; DROP TABLE conversation_turns; --",
    '" OR 1=1 --',
    "Robert'); DELETE FROM memories WHERE ('1'='1",
    "1; ATTACH DATABASE '/tmp/evil.db' AS evil; --",
    "x' UNION SELECT user_text FROM conversation_turns --",
    '"',
    '""',
    '"unbalanced quote',
    "unbalanced quote\"",
    "(",
    "((a b",
    "a b))",
    "*",
    "a*",
    "* a",
    "NEAR",
    "NEAR(a b, 2)",
    "a NEAR/3 b",
    "OR",
    "AND",
    "NOT",
    "a OR b AND NOT c",
    "^",
    "^a",
    "session_id: ses_00000000000000000000000000000000",
    "user_text:secret",
    "{user_text assistant_text}: x",
    "- a + b",
    "rank MATCH 'bm25(10.0, 1.0)'",
    "conversation_turns_fts MATCH 'x'",
    "../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "/etc/passwd",
    "%2e%2e%2fetc%2fpasswd",
    "checkpoints/../memory.db",
    "ses_00000000000000000000000000000000/../../x",
    "\x00../x",
    "%s %d %(x)s {0} {x!r}",
    "${jndi:ldap://example.invalid/a}",
    "<script>alert(1)</script>",
    "*bold* _it_ `code` [link](http://example.invalid)",
)

#: Arguments of ``/history`` that are not a plain small number, with the count they ask for
#: (``None``: none, the answer is the usage line; 51: more than the 50 shown).
HISTORY_ARGUMENTS: tuple[tuple[str, int | None], ...] = (
    ("1" + "0" * 30, 10**30),
    ("9" * 5000, 51),  # past int()'s 4,300-digit limit
    ("0" * 40 + "7", 7),
    ("-5", None),
    ("0", None),
    ("٣", 3),  # Arabic-Indic three
    ("٣٥", 35),
    ("\uff15", 5),  # fullwidth five
    ("²", None),
    ("1e3", None),
    ("0x10", None),
    ("NaN", None),
    ("∞", None),
    ("7 8", None),
    ("../x", None),
    ("../../etc/passwd", None),
)

_SEPARATORS = " \n\t.,!?"


def texts(*, min_size: int = 0, max_size: int = 300) -> st.SearchStrategy[str]:
    """Message texts: any Unicode but surrogates, odd characters, injections, 4,096+ chars
    (the last two whatever ``max_size`` says: names and titles get them too)."""
    odd = st.text(st.sampled_from(ODD_CHARACTERS + _SEPARATORS + "aZ9ü"), min_size=min_size,
                  max_size=max_size)
    long = st.builds(
        lambda unit, count: (unit * count)[:count],
        st.sampled_from(["a", "🦊 ", "שלום ", "x\u200b", "word "]),
        st.integers(4096, 6000),
    )
    return st.one_of(
        st.text(st.characters(exclude_categories=["Cs"]), min_size=min_size, max_size=max_size),
        odd,
        st.sampled_from(INJECTIONS),
        long,
    )


# -- Telegram update JSON ----------------------------------------------------------------------

_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=4),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=2),
)
# Out of range or of the wrong type, never null or []: PTB writes back only the fields it holds
# a value for, so those would not survive the journal (and Telegram never sends them).
_OFFSETS = st.one_of(
    st.integers(-3, 9000),
    st.booleans(),
    st.text(max_size=4),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=2),
)


def _chats() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            # Telegram's ids fit in 52 bits; now and then one past SQLite's 64, or a string.
            "id": st.one_of(
                st.integers(-(2**52), 2**52),
                st.integers(-(2**52), 2**52),
                st.integers(2**63, 2**64),
                st.text(max_size=4),
            ),
            "type": st.sampled_from(["private", "group", "supergroup", "channel", "martian"]),
        },
        optional={"title": texts(max_size=40), "first_name": texts(max_size=20)},
    )


def _users() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"id": st.integers(1, 2**52), "is_bot": st.booleans(), "first_name": texts(max_size=20)},
        optional={"last_name": texts(max_size=20), "username": texts(max_size=20)},
    )


def _entities() -> st.SearchStrategy[list[dict[str, Any]]]:
    entity = st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                ["mention", "bot_command", "bold", "url", "hashtag", "brand_new_kind"]
            ),
            "offset": _OFFSETS,
            "length": _OFFSETS,
        }
    )
    return st.lists(entity, max_size=4)


def _messages(*, nested: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly messages with a chat and a text or caption; some without either."""
    sane_date = st.integers(0, 2**32)
    required: dict[str, st.SearchStrategy[Any]] = {
        "message_id": st.integers(1, 2**31),
        # Now and then a date no datetime can hold.
        "date": st.one_of(sane_date, sane_date, sane_date, st.integers(-(2**63), 2**63)),
    }
    optional: dict[str, st.SearchStrategy[Any]] = {
        "from": _users(),
        "entities": _entities(),
        "caption_entities": _entities(),
        "edit_date": st.integers(0, 2**31),
        "new_chat_members": st.lists(_users(), max_size=2),
        "x_field_from_the_future": st.dictionaries(st.text(max_size=5), _JUNK, max_size=2),
    }
    if nested:
        optional["reply_to_message"] = _messages(nested=False)
    with_text = st.fixed_dictionaries(
        {**required, "chat": _chats(), "text": texts(min_size=1)}, optional=optional
    )
    with_caption = st.fixed_dictionaries(
        {**required, "chat": _chats(), "caption": texts(min_size=1, max_size=60)},
        optional=optional,
    )
    missing = st.fixed_dictionaries(
        required, optional={**optional, "chat": _chats(), "text": texts()}
    )
    return st.one_of(with_text, with_text, with_caption, missing)


def telegram_updates() -> st.SearchStrategy[dict[str, Any]]:
    """Update JSON as Telegram might send it, or as a broken or future Telegram might.

    Known kinds with messages whose fields may be missing, entities with offsets out of
    range or of the wrong type, unknown fields, unknown update kinds with arbitrary JSON, two
    kinds at once, or none. ``update_id`` is always a positive int: it is Telegram's key.
    """
    json_values = st.recursive(
        _JUNK, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
            st.text(max_size=5), inner, max_size=3
        ), max_leaves=6,
    )
    message = st.tuples(st.just("message"), _messages())
    kinds = st.one_of(
        message,
        message,
        st.tuples(
            st.sampled_from(
                ["edited_message", "channel_post", "edited_channel_post", "business_message"]
            ),
            _messages(),
        ),
        st.tuples(
            st.just("callback_query"),
            st.fixed_dictionaries(
                {"id": st.text(min_size=1, max_size=8), "from": _users(),
                 "chat_instance": st.text(max_size=8)},
                optional={"data": texts(max_size=64), "message": _messages(nested=False)},
            ),
        ),
        st.tuples(st.sampled_from(["frobnicate", "poll_v9", "x"]), json_values),
    )
    return st.builds(
        lambda update_id, parts: {"update_id": update_id, **dict(parts)},
        st.integers(1, 2**31),
        st.lists(kinds, max_size=2),
    )


# -- searching what was left behind ------------------------------------------------------------


async def _table_rows(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the database file, FTS5 shadow tables included (the
    virtual tables themselves only show what their shadow tables hold)."""
    names = [
        row["name"]
        for row in await db.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    ]
    return {
        name: [tuple(row) for row in await db.fetchall(f'SELECT * FROM "{name}"')]  # noqa: S608
        for name in names  # (our own table names)
    }


async def every_table_text(db: Database) -> dict[str, str]:
    """Every table, as one lowercased text per table: text columns as they are, blobs decoded
    leniently."""
    found: dict[str, str] = {}
    for name, rows in (await _table_rows(db)).items():
        parts = [
            value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
            for row in rows
            for value in row
            if value is not None
        ]
        found[name] = "\n".join(parts).lower()
    return found


async def database_fingerprint(db: Database) -> dict[str, str]:
    """A digest of every table's rows: two fingerprints are equal only if nothing changed."""
    return {
        name: hashlib.sha256(repr(sorted(rows, key=repr)).encode()).hexdigest()
        for name, rows in (await _table_rows(db)).items()
    }


def tree_fingerprint(root: Path) -> dict[str, str]:
    """A digest of every file below ``root``, by relative path."""
    if not root.is_dir():
        return {}
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def files_containing(root: Path, *needles: bytes) -> list[str]:
    """The files below ``root`` whose raw bytes hold one of ``needles`` (as ``name: needle``)."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path.relative_to(root)}: {n!r}" for n in needles if n in data]
    return found
