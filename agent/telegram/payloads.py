"""Pure conversions between Telegram objects and the memory lane's types.

No I/O here: every function takes python-telegram-bot objects (or JSON) and returns ours, so
each one is tested with real ``telegram.Update`` objects.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import orjson
from telegram import Bot, Message, MessageEntity, Update
from telegram.error import RetryAfter, TelegramError

from agent.chat.inbound_journal import JournalEntry
from agent.memory.schemas import ChatType, InboundMessage

__all__ = [
    "MAX_MESSAGE_CHARS",
    "chat_key",
    "describe",
    "edit_from_update",
    "entry_from_json",
    "entry_from_update",
    "inbound_from_update",
    "retry_after_seconds",
    "split_message",
    "update_from_entry",
]

#: Telegram's limit on the text of one message.
MAX_MESSAGE_CHARS = 4096

_CHAT_TYPES: dict[str, ChatType] = {
    "private": "private",
    "group": "group",
    "supergroup": "supergroup",
    "channel": "channel",
}


def _storable(value: object) -> int | None:
    """Return ``value`` if it is an integer SQLite can store (64 bits), else ``None``.

    Telegram's ids fit in 52 bits: a larger one, or one of another type, comes from a broken
    update, and must not stop the journal from recording it.
    """
    return value if isinstance(value, int) and -(2**63) <= value < 2**63 else None


def chat_key(update: Update) -> int | None:
    """Return the chat an update belongs to (for ordering), else its user, else ``None``."""
    if update.effective_chat is not None:
        return _storable(update.effective_chat.id)
    if update.effective_user is not None:
        return _storable(update.effective_user.id)
    return None


def entry_from_update(update: Update) -> JournalEntry:
    """Return the journal entry of an update: its id, chat and JSON payload."""
    return JournalEntry(
        update_id=update.update_id, chat_id=chat_key(update), payload=update.to_json()
    )


def entry_from_json(data: dict[str, Any], bot: Bot) -> JournalEntry:
    """Return the journal entry of an update's JSON (whose ``update_id`` is an int), readable
    or not: an update python-telegram-bot cannot read has no chat key."""
    update_id: int = data["update_id"]
    # The json module, not orjson: Telegram's JSON may hold integers past 64 bits.
    payload = json.dumps(data, ensure_ascii=False)
    try:
        key = chat_key(update_from_entry(JournalEntry(update_id, None, payload), bot))
    except ValueError:
        key = None
    return JournalEntry(update_id=update_id, chat_id=key, payload=payload)


def update_from_entry(entry: JournalEntry, bot: Bot) -> Update:
    """Rebuild the update a journal entry holds.

    Raises:
        ValueError: the payload is not the JSON of an update.
    """
    try:
        data = orjson.loads(entry.payload)
        update = Update.de_json(data, bot) if isinstance(data, dict) else None
    except Exception as exc:
        # PTB's parser raises whatever its field code hits on a payload of the wrong shape:
        # TypeError, AttributeError, KeyError, and OverflowError or OSError from a date no
        # datetime holds. Every one means the same thing here: not a readable update.
        raise ValueError(f"journal entry {entry.update_id} holds no readable update") from exc
    if update is None:
        raise ValueError(f"journal entry {entry.update_id} holds no update")
    return update


def _addressed(message: Message, bot_id: int, bot_username: str | None) -> bool:
    """Whether a group message is for the bot: a mention of it, or a reply to it."""
    reply_to = message.reply_to_message
    if reply_to is not None and reply_to.from_user is not None:
        if reply_to.from_user.id == bot_id:
            return True
    if bot_username:
        handle = "@" + bot_username.lower()
        try:
            mentions = message.parse_entities(
                [MessageEntity.MENTION]
            ) or message.parse_caption_entities([MessageEntity.MENTION])
        except (AttributeError, TypeError, ValueError):
            # An entity whose offset or length is not a number or cuts a character in two, or
            # caption entities without a caption: the message is still a turn, it just does
            # not mention anyone.
            return False
        if any(text.lower() == handle for text in mentions.values()):
            return True
    return False


def inbound_from_update(
    update: Update, *, bot_id: int, bot_username: str | None
) -> InboundMessage | None:
    """Return the lane's view of a new text message (or captioned media), else ``None``.

    Edited messages, channel posts, service messages and media without a caption return
    ``None``: they are not turns. In a group every message is a turn, but only one that
    mentions the bot or replies to it wants a reply.
    """
    message = update.message
    # A message without a chat (malformed: Telegram always sends one) has nowhere to go.
    if message is None or message.chat is None:
        return None
    text = message.text or message.caption
    if not text:
        return None
    chat = message.chat
    chat_id = _storable(chat.id)
    if chat_id is None:
        return None
    user = message.from_user
    chat_type = _CHAT_TYPES.get(chat.type, "private")
    wants_reply = chat_type == "private" or _addressed(message, bot_id, bot_username)
    return InboundMessage(
        chat_id=chat_id,
        text=text,
        chat_type=chat_type,
        user_id=_storable(user.id) if user is not None else None,
        speaker=user.full_name if user is not None else None,
        chat_title=chat.title,
        update_id=_storable(update.update_id),
        bot_id=bot_id,
        message_id=_storable(message.message_id),
        wants_reply=wants_reply,
        received_at=message.date,
    )


def _is_command(message: Message) -> bool:
    """Whether a message is a command (a ``bot_command`` entity at its start), as
    python-telegram-bot's ``filters.COMMAND`` decides."""
    return any(e.type == MessageEntity.BOT_COMMAND and e.offset == 0 for e in message.entities)


def edit_from_update(update: Update, *, bot_id: int) -> InboundMessage | None:
    """Return the lane's view of an edited message (text or caption), else ``None``.

    The result names the edited message (``message_id``), the edit's own update
    (``update_id``, its idempotency key), the new text and the time of the edit
    (``received_at``: Telegram's ``edit_date``). It never wants a reply: an edit is recorded
    quietly. ``None`` for what is not an edited message with text, and for a message edited
    into a command: an edit never runs a command, and the turn keeps the text it had.
    """
    message = update.edited_message
    if message is None or message.chat is None or _is_command(message):
        return None
    text = message.text or message.caption
    chat_id = _storable(message.chat.id)
    message_id = _storable(message.message_id)
    if not text or chat_id is None or message_id is None:
        return None
    user = message.from_user
    return InboundMessage(
        chat_id=chat_id,
        text=text,
        chat_type=_CHAT_TYPES.get(message.chat.type, "private"),
        user_id=_storable(user.id) if user is not None else None,
        speaker=user.full_name if user is not None else None,
        chat_title=message.chat.title,
        update_id=_storable(update.update_id),
        bot_id=bot_id,
        message_id=message_id,
        wants_reply=False,
        received_at=message.edit_date or message.date,
    )


def split_message(text: str, limit: int = MAX_MESSAGE_CHARS) -> list[str]:
    """Split ``text`` into pieces Telegram accepts, preferring line breaks, then spaces."""
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit)
        if cut <= 0:
            cut = rest.rfind(" ", 0, limit)
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut])
        rest = rest[cut:].lstrip("\n ")
    if rest or not pieces:
        pieces.append(rest)
    return pieces


def retry_after_seconds(exc: RetryAfter) -> float:
    """Return how long Telegram asked to wait, in seconds (int or timedelta, per PTB mode)."""
    value = exc.retry_after
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return float(value)


def describe(exc: TelegramError) -> str:
    """Return a Bot API error for a log line: ``"TimedOut: Timed out"``, ``"BadRequest: Chat
    not found"``, ``"Forbidden: bot was blocked by the user"`` (no kind said twice)."""
    kind, text = type(exc).__name__, str(exc)
    return text if text.startswith(kind) else f"{kind}: {text}"
