"""Tests of the pure conversions between Telegram updates and the lane's types.

Every update is a real ``telegram.Update`` built with ``Update.de_json`` from the JSON Telegram
sends; the bot they are bound to has a request that fails the test on any network call.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from telegram import Bot, Update
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut
from telegram.request import BaseRequest, RequestData
from telegram.warnings import PTBDeprecationWarning

from agent.chat.inbound_journal import JournalEntry
from agent.memory.schemas import InboundMessage
from agent.telegram.payloads import (
    MAX_MESSAGE_CHARS,
    chat_key,
    describe,
    edit_from_update,
    entry_from_json,
    entry_from_update,
    inbound_from_update,
    retry_after_seconds,
    split_message,
    update_from_entry,
)
from tests.hostile import telegram_updates

BOT_ID = 777
BOT_USERNAME = "memory_test_bot"
TOKEN = f"{BOT_ID}:ABC-offline"  # the request below never sends it anywhere
DATE = 1_700_000_000
ADA: dict[str, Any] = {"id": 42, "is_bot": False, "first_name": "Ada", "last_name": "Lovelace"}
BOB: dict[str, Any] = {"id": 43, "is_bot": False, "first_name": "Bob"}
BOT_USER: dict[str, Any] = {"id": BOT_ID, "is_bot": True, "first_name": "Memory"}
PRIVATE: dict[str, Any] = {"id": 42, "type": "private", "first_name": "Ada"}
GROUP: dict[str, Any] = {"id": -100, "type": "group", "title": "Team"}


class OfflineRequest(BaseRequest):
    """A request that fails the test on any network call: these are pure functions."""

    async def initialize(self) -> None:
        pass

    async def shutdown(self) -> None:
        pass

    @property
    def read_timeout(self) -> float:
        return 1.0

    async def do_request(
        self, url: str, method: str, request_data: RequestData | None = None, **_: Any
    ) -> tuple[int, bytes]:
        pytest.fail(f"unexpected network call: {method} {url.rsplit('/', 1)[-1]}")


@pytest.fixture
def bot() -> Bot:
    return Bot(TOKEN, request=OfflineRequest(), get_updates_request=OfflineRequest())


def message(
    text: str | None = "hello",
    *,
    chat: dict[str, Any] = PRIVATE,
    sender: dict[str, Any] | None = ADA,
    message_id: int = 5,
    **fields: Any,
) -> dict[str, Any]:
    """Return the JSON of a message as Telegram sends it."""
    data: dict[str, Any] = {"message_id": message_id, "date": DATE, "chat": chat, **fields}
    if sender is not None:
        data["from"] = sender
    if text is not None:
        data["text"] = text
    return data


def update(bot: Bot, update_id: int = 10, **kinds: Any) -> Update:
    """Return a real ``telegram.Update`` parsed from the JSON ``{"update_id": ..., **kinds}``."""
    parsed = Update.de_json({"update_id": update_id, **kinds}, bot)
    assert parsed is not None
    return parsed


def mention(text: str, handle: str) -> list[dict[str, Any]]:
    """The ``mention`` entity Telegram adds for ``handle`` in ``text`` (ASCII text only)."""
    return [{"type": "mention", "offset": text.index(handle), "length": len(handle)}]


def inbound(upd: Update) -> InboundMessage | None:
    return inbound_from_update(upd, bot_id=BOT_ID, bot_username=BOT_USERNAME)


# -- inbound_from_update ----------------------------------------------------------------------


def test_private_text_becomes_a_message_that_wants_a_reply(bot: Bot) -> None:
    """A private text message maps field by field onto the lane's InboundMessage."""
    msg = inbound(update(bot, update_id=10, message=message("my name is Ada")))
    assert msg == InboundMessage(
        chat_id=42,
        text="my name is Ada",
        chat_type="private",
        user_id=42,
        speaker="Ada Lovelace",
        chat_title=None,
        update_id=10,
        bot_id=BOT_ID,
        message_id=5,
        wants_reply=True,
        received_at=dt.datetime.fromtimestamp(DATE, dt.UTC),
    )


def test_group_message_without_mention_is_recorded_without_reply(bot: Bot) -> None:
    """In a group, a message that does not address the bot is a turn that wants no reply."""
    msg = inbound(update(bot, message=message("lunch at noon?", chat=GROUP)))
    assert msg is not None
    assert (msg.chat_id, msg.chat_type, msg.chat_title) == (-100, "group", "Team")
    assert msg.wants_reply is False


def test_group_message_mentioning_the_bot_wants_a_reply(bot: Bot) -> None:
    """A mention entity of the bot's @username (any case) addresses it."""
    text = "hey @Memory_Test_Bot what's my name?"
    msg = inbound(
        update(bot, message=message(text, chat=GROUP, entities=mention(text, "@Memory_Test_Bot")))
    )
    assert msg is not None
    assert msg.wants_reply is True


def test_group_message_mentioning_another_bot_wants_no_reply(bot: Bot) -> None:
    """A mention of someone else, or the bot's name without a mention entity, does not."""
    text = "ask @other_bot, not memory_test_bot"
    msg = inbound(
        update(bot, message=message(text, chat=GROUP, entities=mention(text, "@other_bot")))
    )
    assert msg is not None
    assert msg.wants_reply is False


def test_supergroup_reply_to_the_bot_wants_a_reply(bot: Bot) -> None:
    """A reply to one of the bot's messages addresses it, even without a mention."""
    supergroup = {"id": -1001, "type": "supergroup", "title": "Big team"}
    earlier = message("Noted.", chat=supergroup, sender=BOT_USER, message_id=4)
    msg = inbound(
        update(bot, message=message("thanks!", chat=supergroup, reply_to_message=earlier))
    )
    assert msg is not None
    assert (msg.chat_type, msg.wants_reply) == ("supergroup", True)


def test_group_reply_to_another_member_wants_no_reply(bot: Bot) -> None:
    """A reply to a human member of the group does not address the bot."""
    earlier = message("who has the keys?", chat=GROUP, sender=BOB, message_id=4)
    msg = inbound(update(bot, message=message("I do", chat=GROUP, reply_to_message=earlier)))
    assert msg is not None
    assert msg.wants_reply is False


def test_photo_with_caption_becomes_its_caption(bot: Bot) -> None:
    """A captioned photo is a turn whose text is the caption; a caption mention addresses."""
    photo = [{"file_id": "p1", "file_unique_id": "u1", "width": 90, "height": 90}]
    private = inbound(update(bot, message=message(None, photo=photo, caption="my cat Tom")))
    caption = "look @memory_test_bot"
    in_group = inbound(
        update(
            bot,
            message=message(
                None,
                chat=GROUP,
                photo=photo,
                caption=caption,
                caption_entities=mention(caption, "@memory_test_bot"),
            ),
        )
    )
    assert private is not None
    assert in_group is not None
    assert (private.text, private.wants_reply) == ("my cat Tom", True)
    assert (in_group.text, in_group.wants_reply) == (caption, True)


@pytest.mark.parametrize(
    "kinds",
    [
        pytest.param(
            {
                "message": message(
                    None,
                    sticker={
                        "file_id": "s1",
                        "file_unique_id": "su1",
                        "type": "regular",
                        "width": 512,
                        "height": 512,
                        "is_animated": False,
                        "is_video": False,
                    },
                )
            },
            id="sticker",
        ),
        pytest.param(
            {
                "message": message(
                    None, photo=[{"file_id": "p", "file_unique_id": "u", "width": 1, "height": 1}]
                )
            },
            id="photo-without-caption",
        ),
        pytest.param({"edited_message": message("fixed", edit_date=DATE + 5)}, id="edited"),
        pytest.param(
            {
                "channel_post": message(
                    "news",
                    chat={"id": -200, "type": "channel", "title": "News"},
                    sender=None,
                    sender_chat={"id": -200, "type": "channel", "title": "News"},
                )
            },
            id="channel-post",
        ),
        pytest.param(
            {
                "callback_query": {
                    "id": "cb1",
                    "from": ADA,
                    "chat_instance": "ci",
                    "data": "forget:abc",
                    "message": message("Forget?", sender=BOT_USER),
                }
            },
            id="callback-query",
        ),
    ],
)
def test_updates_that_are_not_new_text_are_no_turn(bot: Bot, kinds: dict[str, Any]) -> None:
    """Stickers, bare media, edits, channel posts and button presses return None."""
    assert inbound(update(bot, **kinds)) is None


# -- edit_from_update -------------------------------------------------------------------------


def test_an_edited_text_becomes_an_edit_of_its_message(bot: Bot) -> None:
    """An ``edited_message`` names the edited message, its own update (the edit's key), the
    new text and the time of the edit; it never wants a reply."""
    edited = message("my name is Grace", message_id=5, edit_date=DATE + 90)
    edit = edit_from_update(update(bot, update_id=11, edited_message=edited), bot_id=BOT_ID)
    assert edit == InboundMessage(
        chat_id=42,
        text="my name is Grace",
        chat_type="private",
        user_id=42,
        speaker="Ada Lovelace",
        chat_title=None,
        update_id=11,
        bot_id=BOT_ID,
        message_id=5,
        wants_reply=False,
        received_at=dt.datetime.fromtimestamp(DATE + 90, dt.UTC),
    )


def test_an_edited_caption_becomes_an_edit_with_the_new_caption(bot: Bot) -> None:
    """A photo whose caption was edited is an edit with the new caption as its text; in a
    group it is the member's edit, still without a reply."""
    photo = [{"file_id": "p", "file_unique_id": "u", "width": 1, "height": 1}]
    edited = message(
        None, chat=GROUP, sender=BOB, photo=photo, caption="the new caption", edit_date=DATE + 5
    )
    edit = edit_from_update(update(bot, edited_message=edited), bot_id=BOT_ID)
    assert edit is not None
    assert (edit.text, edit.chat_id, edit.chat_type, edit.speaker) == (
        "the new caption",
        -100,
        "group",
        "Bob",
    )
    assert edit.wants_reply is False


@pytest.mark.parametrize(
    "kinds",
    [
        pytest.param({"message": message("a new message")}, id="new-message"),
        pytest.param(
            {
                "edited_message": message(
                    "/history 5",
                    edit_date=DATE + 5,
                    entities=[{"type": "bot_command", "offset": 0, "length": 8}],
                )
            },
            id="edited-into-a-command",
        ),
        pytest.param(
            {
                "edited_message": message(
                    None,
                    photo=[{"file_id": "p", "file_unique_id": "u", "width": 1, "height": 1}],
                    edit_date=DATE + 5,
                )
            },
            id="caption-removed",
        ),
        pytest.param(
            {
                "edited_channel_post": message(
                    "news, corrected",
                    chat={"id": -200, "type": "channel", "title": "News"},
                    sender=None,
                    edit_date=DATE + 5,
                )
            },
            id="edited-channel-post",
        ),
    ],
)
def test_what_is_no_edited_text_is_no_edit(bot: Bot, kinds: dict[str, Any]) -> None:
    """A new message, a message edited into a command (an edit never runs one), an edit that
    leaves no text, and an edited channel post are no edit of a turn."""
    assert edit_from_update(update(bot, **kinds), bot_id=BOT_ID) is None


# -- chat_key and the journal round trip ------------------------------------------------------


def test_chat_key_is_the_chat_else_the_user_else_none(bot: Bot) -> None:
    """Updates are ordered by chat; without a chat by user; without either they have no key."""
    in_group = update(bot, message=message("hi", chat=GROUP))
    pressed = update(
        bot,
        callback_query={
            "id": "cb1",
            "from": ADA,
            "chat_instance": "ci",
            "data": "x",
            "message": message("?", chat=GROUP, sender=BOT_USER),
        },
    )
    inline = update(bot, inline_query={"id": "iq", "from": BOB, "query": "q", "offset": ""})
    # A kind of update that names neither (as a poll update): bare here, PTB requires
    # many poll fields that do not matter.
    bare = update(bot)
    assert [chat_key(u) for u in (in_group, pressed, inline, bare)] == [-100, -100, 43, None]


def test_journal_entry_round_trips_the_update(bot: Bot) -> None:
    """entry_from_update keeps the id, the chat and the whole update; update_from_entry
    rebuilds an equal update bound to the bot."""
    text = "héllo 🦊 שלום \u200b @memory_test_bot"
    original = update(
        bot,
        update_id=99,
        message=message(text, chat=GROUP, entities=mention(text, "@memory_test_bot")),
    )
    entry = entry_from_update(original)
    assert (entry.update_id, entry.chat_id, entry.attempts) == (99, -100, 0)
    rebuilt = update_from_entry(entry, bot)
    assert rebuilt.to_dict() == original.to_dict()
    assert rebuilt.get_bot() is bot
    assert inbound(rebuilt) == inbound(original)


@pytest.mark.parametrize("payload", ["", "not json", "null", "[1, 2]", '{"message": {}}'])
def test_unreadable_journal_payload_raises_value_error(bot: Bot, payload: str) -> None:
    """A payload that is not an update's JSON raises ValueError (the adapter skips it)."""
    with pytest.raises(ValueError, match="journal entry 7"):
        update_from_entry(JournalEntry(update_id=7, chat_id=1, payload=payload), bot)


# -- split_message ----------------------------------------------------------------------------


def assert_split_keeps_text(text: str, pieces: list[str], limit: int) -> None:
    """Every piece fits, none is empty, and the text is the pieces with only whitespace
    between them (the whitespace a split fell on)."""
    assert all(0 < len(piece) <= limit for piece in pieces), [len(p) for p in pieces]
    at = 0
    for piece in pieces:
        skipped = text[at : text.index(piece, at)]
        assert not skipped.strip(), f"lost {skipped!r} before a piece"
        at = text.index(piece, at) + len(piece)
    assert not text[at:].strip(), f"lost {text[at:]!r} at the end"


def test_short_text_is_one_piece() -> None:
    """A text within the limit (up to exactly 4096 characters) is sent as it is."""
    assert split_message("hi") == ["hi"]
    exact = "x" * MAX_MESSAGE_CHARS
    assert split_message(exact) == [exact]
    assert split_message("") == [""]


def test_split_prefers_line_breaks() -> None:
    """A long text splits at the last line break that fits, losing only that break."""
    lines = [f"line {i:04d} " + "x" * 90 for i in range(100)]
    text = "\n".join(lines)
    pieces = split_message(text)
    assert len(pieces) > 1
    assert all(len(p) <= MAX_MESSAGE_CHARS for p in pieces)
    assert "\n".join(pieces) == text  # every cut fell on a line break
    assert all(p.startswith("line ") for p in pieces)


def test_split_falls_back_to_spaces() -> None:
    """Without a line break to split at, the split falls on the last space that fits."""
    words = [f"w{i}" for i in range(3000)]
    text = " ".join(words)
    pieces = split_message(text)
    assert len(pieces) > 1
    assert " ".join(pieces) == text
    assert all(len(p) <= MAX_MESSAGE_CHARS for p in pieces)


def test_a_single_long_word_is_split_hard() -> None:
    """A 10,000-character word is cut at the limit, and no character is lost."""
    word = "".join(random.Random(1).choice("abc🦊é") for _ in range(10_000))
    pieces = split_message(word)
    assert [len(p) for p in pieces] == [4096, 4096, 1808]
    assert "".join(pieces) == word


def test_split_never_loses_more_than_split_whitespace() -> None:
    """Random mixes of words, spaces, line breaks and long words keep every character but
    the whitespace at the cuts, with small limits that force many cuts."""
    rng = random.Random(2024)
    tokens = ["a", "bb", "ccc", " ", " ", "\n", "\n\n", "🦊", "ש", "\u200b", "x" * 40]
    for limit in (5, 17, 64):
        for _ in range(50):
            text = "".join(rng.choice(tokens) for _ in range(rng.randint(1, 200)))
            pieces = split_message(text, limit)
            if not text.strip():
                continue  # nothing but whitespace: nothing to keep
            assert_split_keeps_text(text, pieces, limit)


# -- retry_after_seconds ----------------------------------------------------------------------


def test_retry_after_as_int_in_legacy_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PTB_TIMEDELTA, PTB reports an int (with a deprecation warning): seconds."""
    monkeypatch.delenv("PTB_TIMEDELTA", raising=False)
    with pytest.warns(PTBDeprecationWarning):
        exc = RetryAfter(7)
    with pytest.warns(PTBDeprecationWarning):
        seconds = retry_after_seconds(exc)
    assert seconds == 7.0


@pytest.mark.parametrize(
    ("value", "seconds"), [(7, 7.0), (dt.timedelta(seconds=2.5), 2.5), (0, 0.0)]
)
def test_retry_after_as_timedelta(
    monkeypatch: pytest.MonkeyPatch, value: int | dt.timedelta, seconds: float
) -> None:
    """With PTB_TIMEDELTA=true PTB reports a timedelta: its total seconds."""
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    exc = RetryAfter(value)
    assert isinstance(exc.retry_after, dt.timedelta)
    assert retry_after_seconds(exc) == seconds


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (TimedOut(), "TimedOut: Timed out"),
        (NetworkError("Bad Gateway"), "NetworkError: Bad Gateway"),
        (BadRequest("Bad Request: chat not found"), "BadRequest: Chat not found"),
        (
            Forbidden("Forbidden: bot was blocked by the user"),
            "Forbidden: bot was blocked by the user",
        ),
    ],
)
def test_describe_names_the_error_kind_once(exc: Exception, text: str) -> None:
    """A Bot API error reads "Kind: what Telegram said" in a log line, never "Kind: Kind: ..."."""
    assert describe(exc) == text


# -- hostile and malformed updates (hypothesis) -----------------------------------------------

#: These tests are pure and fast: four times the profile's examples.
_MANY = settings(max_examples=settings().max_examples * 4)


@_MANY
@given(data=telegram_updates())
def test_any_update_json_is_journaled_and_read_or_refused_with_value_error(
    data: dict[str, Any],
) -> None:
    """Whatever JSON Telegram sends (missing fields, entities of the wrong type, dates no
    datetime holds, unknown kinds), it can be journaled as it is, and reading it back gives
    an update or a ValueError, which the adapter records as a failed attempt: nothing else
    escapes. An update that cannot be read has no chat key."""
    bot = Bot(TOKEN, request=OfflineRequest(), get_updates_request=OfflineRequest())
    entry = entry_from_json(data, bot)
    assert orjson.loads(entry.payload) == data
    try:
        upd = update_from_entry(entry, bot)
    except ValueError:
        upd = None
    assert entry.chat_id == (None if upd is None else chat_key(upd))


@_MANY
@given(data=telegram_updates())
def test_readable_updates_become_a_valid_message_or_none_and_round_trip(
    data: dict[str, Any],
) -> None:
    """An update python-telegram-bot can read round-trips through the journal unchanged and
    becomes a valid message whose text is the message's own text or caption, or no message
    at all: a malformed entity or a missing chat never raises."""
    bot = Bot(TOKEN, request=OfflineRequest(), get_updates_request=OfflineRequest())
    try:
        upd = update_from_entry(entry_from_json(data, bot), bot)
    except ValueError:
        return
    entry = entry_from_update(upd)
    assert (entry.update_id, entry.chat_id) == (data["update_id"], chat_key(upd))
    rebuilt = update_from_entry(entry, bot)
    assert rebuilt.to_dict() == upd.to_dict()

    edit = edit_from_update(upd, bot_id=BOT_ID)
    assert edit_from_update(rebuilt, bot_id=BOT_ID) == edit
    if edit is not None:  # only edited messages are edits, with their new text or caption
        raw = data["edited_message"]
        assert edit.text == (raw.get("text") or raw.get("caption"))
        assert (edit.message_id, edit.update_id) == (raw["message_id"], data["update_id"])
        assert not edit.wants_reply
        assert InboundMessage.model_validate_json(edit.model_dump_json()) == edit

    msg = inbound(upd)
    assert inbound(rebuilt) == msg
    if msg is None:
        return
    raw = data["message"]  # only new messages become turns
    assert msg.text == (raw.get("text") or raw.get("caption"))
    assert msg.text
    assert (msg.chat_id, msg.update_id, msg.message_id) == (
        raw["chat"]["id"],
        data["update_id"],
        raw["message_id"],
    )
    assert msg.wants_reply or raw["chat"]["type"] != "private"
    assert InboundMessage.model_validate_json(msg.model_dump_json()) == msg
