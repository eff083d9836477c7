"""A fake Telegram Bot API HTTP server for tests.

It runs a ``ThreadingHTTPServer`` on 127.0.0.1 in a background thread, so it keeps answering
while the test's event loop is busy or blocked, and it can also serve a bot in a subprocess.
Point python-telegram-bot at it with ``telegram.Bot(api.token, base_url=api.base_url)``.
Updates are served by getUpdates, or posted to webhooks round-robin once
:meth:`FakeBotApi.deliver_webhooks` has started (:mod:`tests.webhook_delivery`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import socket
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from email import policy
from email.parser import BytesHeaderParser
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

from tests.local_server import LocalServer
from tests.webhook_delivery import WebhookDelivery

JsonDict = dict[str, Any]

_JSON_KEYS = frozenset({"reply_markup", "entities", "caption_entities", "allowed_updates",
                        "commands", "scope", "link_preview_options", "reply_parameters"})
_INT_KEYS = frozenset({"chat_id", "message_id", "offset", "limit", "timeout", "cache_time",
                       "reply_to_message_id", "message_thread_id", "max_connections"})
_BOOL_KEYS = frozenset({"disable_notification", "protect_content", "show_alert",
                        "drop_pending_updates", "disable_web_page_preview"})
_DEFAULT_EXCLUDED_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
_SENT_METHODS = ("sendMessage", "sendDocument", "editMessageText", "editMessageReplyMarkup")
_MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z]\w{3,31}")
_COMMAND_RE = re.compile(r"/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,})?")
_PATH_RE = re.compile(r"/bot([^/]*)/([^/]*)")
_FIRST_BOT_MESSAGE_ID = 1000


class ApiError(Exception):
    """A Bot API failure, answered as ``{"ok": false, "error_code": ..., "description": ...}``."""

    def __init__(self, status: int, description: str, parameters: JsonDict | None = None) -> None:
        super().__init__(description)
        self.status, self.description, self.parameters = status, description, parameters

    def payload(self) -> JsonDict:
        """Returns the JSON body Telegram sends for this error."""
        body: JsonDict = {"ok": False, "error_code": self.status, "description": self.description}
        return {**body, "parameters": self.parameters} if self.parameters else body


@dataclass(frozen=True)
class UploadedFile:
    """A file uploaded in a multipart/form-data request (it replaces its parameter's value)."""

    filename: str | None
    content_type: str
    data: bytes


@dataclass(frozen=True)
class SentCall:
    """A successful message-producing call (sendMessage, sendDocument, editMessage*)."""

    method: str
    chat_id: int | str | None
    text: str | None
    params: JsonDict
    message_id: int | None = None
    document: bytes | None = None
    filename: str | None = None


def _api_error(status: int, retry_after: int | None, description: str | None) -> ApiError:
    """A Telegram-style error; a 429 asks to retry after 1 second unless told otherwise."""
    if status == 429 and retry_after is None:
        retry_after = 1
    if description is None:
        description = (f"Too Many Requests: retry after {retry_after}" if status == 429
                       else HTTPStatus(status).phrase)
    params = {"retry_after": retry_after} if retry_after is not None else None
    return ApiError(status, description, params)


def _coerce(key: str, value: Any) -> Any:
    """Decodes a form value as Telegram does (PTB sends non-string values JSON-encoded)."""
    if not isinstance(value, str):
        return value
    if key in _JSON_KEYS:
        with contextlib.suppress(ValueError):
            return json.loads(value)
    elif key in _INT_KEYS and re.fullmatch(r"-?\d+", value):
        return int(value)
    elif key in _BOOL_KEYS and value in ("true", "false"):
        return value == "true"
    return value


def _parse_multipart(body: bytes, content_type: str) -> JsonDict:
    """Parses a multipart/form-data body into fields; file parts become ``UploadedFile``."""
    parser = BytesHeaderParser(policy=policy.HTTP)
    boundary = parser.parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode()).get_boundary()
    if not boundary:
        raise ValueError("multipart body without boundary")
    fields: JsonDict = {}
    for chunk in (b"\r\n" + body).split(b"\r\n--" + boundary.encode("latin-1"))[1:]:
        if chunk.startswith(b"--"):
            break
        _, _, part = chunk.partition(b"\r\n")  # skip transport padding after the delimiter
        head, _, data = part.partition(b"\r\n\r\n")
        headers = parser.parsebytes(head + b"\r\n\r\n")
        disposition = headers["content-disposition"]
        params = dict(disposition.params) if disposition is not None else {}
        if (name := params.get("name")) is None:
            continue
        if (filename := params.get("filename")) is None:
            fields[name] = data.decode("utf-8")
        else:
            fields[name] = UploadedFile(filename, headers.get_content_type(), data)
    return fields


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: the headers and the body go out in two writes, and Nagle's algorithm would
    # hold the body until the client's delayed ACK (40 ms on Linux) on a keep-alive connection.
    disable_nagle_algorithm = True
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silences the default access log on stderr."""

    def do_GET(self) -> None:
        self.server.api._serve(self)

    do_POST = do_GET


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _auto_entities(text: str) -> list[dict[str, Any]]:
    """The entities Telegram adds by itself: a leading /command and every @mention."""
    ents: list[dict[str, Any]] = []
    if match := _COMMAND_RE.match(text):
        ents.append({"type": "bot_command", "offset": 0, "length": _utf16_len(match.group())})
    for match in _MENTION_RE.finditer(text):
        if ents and match.start() < _utf16_len(text[: ents[0]["length"]]):
            continue  # the @bot of a /command@bot belongs to the command
        ents.append({"type": "mention", "offset": _utf16_len(text[: match.start()]),
                     "length": _utf16_len(match.group())})
    return ents


class FakeBotApi:
    """An in-process fake Telegram Bot API with test helpers and fault injection.

    Every public method is thread-safe. Successful calls are recorded in order (``calls``);
    sendMessage, sendDocument, editMessageText and editMessageReplyMarkup also go to ``sent``.
    Failed, faulted and dropped calls are never recorded.

    Args:
        token: The only accepted token; any other one gets 401 Unauthorized.
        username: The bot's username (getMe).
        first_name: The bot's first name (getMe).
        on_sent: Called with each recorded sent call, on the server thread that answers it,
            before the answer goes out (a load generator reacts to replies with it).
    """

    def __init__(self, token: str = "123456:ABC-fake", *, username: str = "memory_test_bot",  # noqa: S107
                 first_name: str = "Memory Test Bot",
                 on_sent: Callable[[SentCall], None] | None = None) -> None:
        self.token = token
        self.on_sent = on_sent
        bot_id = token.split(":", 1)[0]
        self.bot_user: JsonDict = {"id": int(bot_id) if bot_id.isdigit() else 123456,
                                   "is_bot": True, "first_name": first_name, "username": username,
                                   "can_join_groups": True, "can_read_all_group_messages": False,
                                   "supports_inline_queries": False}
        self._cond = threading.Condition(threading.RLock())
        self._stopping = threading.Event()
        self._server: LocalServer | None = None
        self._queue: list[JsonDict] = []
        self._next_update_id = 1
        self._confirmed: set[int] = set()
        self._allowed: frozenset[str] | None = None
        self._calls: list[tuple[str, JsonDict]] = []
        self._sent: list[SentCall] = []
        self._faults: defaultdict[str, deque[ApiError | None]] = defaultdict(deque)
        self._delays: dict[str, float] = {}
        self._outages: dict[str, ApiError | None] = {}
        self._refused: dict[int | str, ApiError] = {}
        self._attempts: Counter[str] = Counter()
        self._chats: dict[int | str, JsonDict] = {}
        self._messages: dict[tuple[int | str, int], JsonDict] = {}
        self._next_bot_mid: defaultdict[int | str, int] = defaultdict(lambda: _FIRST_BOT_MESSAGE_ID)
        self._next_user_mid: defaultdict[int, int] = defaultdict(lambda: 1)
        self._commands: dict[str, list[JsonDict]] = {}
        self._webhook_url = ""
        self._delivery: WebhookDelivery | None = None
        self._counter = 0
        true = self._true
        methods: dict[str, Callable[[JsonDict], Any]] = {
            "getMe": lambda p: dict(self.bot_user), "getUpdates": self._get_updates,
            "sendMessage": self._send_message, "sendDocument": self._send_document,
            "editMessageText": self._edit_message, "editMessageReplyMarkup": self._edit_message,
            "setMyCommands": partial(self._my_commands, "set"),
            "getMyCommands": partial(self._my_commands, "get"),
            "deleteMyCommands": partial(self._my_commands, "delete"),
            "setWebhook": partial(self._webhook, "set"),
            "deleteWebhook": partial(self._webhook, "delete"),
            "getWebhookInfo": partial(self._webhook, "info"),
            "answerCallbackQuery": true, "sendChatAction": true, "close": true, "logOut": true,
        }
        self._methods = {name.lower(): (name, func) for name, func in methods.items()}

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> Self:
        """Binds a random free port on 127.0.0.1 and serves on a daemon thread."""
        if self._server is not None:
            raise RuntimeError("FakeBotApi already started")
        self._stopping.clear()
        self._server = LocalServer(self, _Handler)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         name="fake-bot-api", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stops promptly, waking blocked long polls; later requests get no answer."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
            server, self._server = self._server, None
            delivery, self._delivery = self._delivery, None
        if delivery is not None:
            delivery.stop()
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._server is None:
            raise RuntimeError("FakeBotApi is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``base_url`` for PTB, which calls ``{base_url}{token}/{method}``."""
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        """The ``base_file_url`` for PTB (file downloads are not served)."""
        return f"http://127.0.0.1:{self.port}/file/bot"

    # ------------------------------------------------------------- test helpers
    def push_update(self, update: JsonDict) -> int:
        """Queues a copy of ``update``, assigning the next update_id if it has none."""
        update = copy.deepcopy(update)
        with self._cond:
            update_id = update.setdefault("update_id", self._next_update_id)
            if update_id < self._next_update_id:
                raise ValueError(f"update_id {update_id} is not increasing")
            return self.push_raw(update)

    def push_raw(self, update: JsonDict) -> int:
        """Queues ``update`` verbatim (no copy, no ordering check); it needs an int update_id.

        Once :meth:`deliver_webhooks` has started, it is posted to the webhook instead.
        """
        with self._cond:
            if self._delivery is not None:
                self._delivery.push(update)
            else:
                self._queue.append(update)
            self._next_update_id = max(self._next_update_id, int(update["update_id"]) + 1)
            self._cond.notify_all()
            return int(update["update_id"])

    def push_message(self, chat_id: int, text: str | None = None, *, user_id: int | None = None,
                     first_name: str = "Ada", chat_type: str = "private",
                     username: str | None = None, chat_title: str | None = None,
                     reply_to_message: JsonDict | int | None = None,
                     entities: list[JsonDict] | None = None, caption: str | None = None,
                     photo: bool = False, sticker: bool = False, edited: bool = False,
                     channel_post: bool = False, message_id: int | None = None) -> int:
        """Queues a realistic message update and returns its update_id.

        Args:
            chat_id: The chat; ``user_id`` defaults to it for private chats.
            text: The text; "/cmd@bot args" gets a ``bot_command`` entity like Telegram adds.
            reply_to_message: A Message dict or the id of a message the fake knows.
            edited: Send it as ``edited_message`` (or ``edited_channel_post``).
            channel_post: Send it as a channel post (no ``from``, ``sender_chat`` set).
            message_id: Defaults to the chat's next inbound id (1, 2, ...).

        The other keywords set the sender, the chat kind and title, a caption, a photo or a
        sticker, and explicit ``entities`` (which disable the automatic command entity).
        """
        chat_type = "channel" if channel_post else chat_type
        uid = user_id if user_id is not None else (chat_id if chat_id > 0 else 4242)
        user: JsonDict = {"id": uid, "is_bot": False, "first_name": first_name}
        if username:
            user["username"] = username
        chat: JsonDict = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat.update({k: v for k, v in user.items() if k in ("first_name", "username")})
        else:
            chat["title"] = chat_title or f"Test {chat_type} {chat_id}"
        with self._cond:
            self._chats.setdefault(chat_id, chat)
            message_id = self._next_user_mid[chat_id] if message_id is None else message_id
            self._next_user_mid[chat_id] = max(self._next_user_mid[chat_id], message_id + 1)
            msg: JsonDict = {"message_id": message_id, "date": int(time.time()), "chat": chat}
            msg.update({"sender_chat": chat} if channel_post else {"from": user})
            if edited:  # an edit keeps the message's date and adds the edit's
                original = self._messages.get((chat_id, message_id))
                if original is not None:
                    msg["date"] = original["date"]
                msg["edit_date"] = int(time.time())
            if isinstance(reply_to_message, int):
                reply_to_message = self._lookup(chat_id, reply_to_message)
            if reply_to_message is not None:
                msg["reply_to_message"] = copy.deepcopy(reply_to_message)
            if photo:
                msg["photo"] = [self._file(width=90, height=90), self._file(width=800, height=600)]
            if sticker:
                msg["sticker"] = self._file(type="regular", width=512, height=512,
                                            is_animated=False, is_video=False, emoji="🙂")
            for key, value, ents in (("text", text, entities), ("caption", caption, None)):
                if value is None:
                    continue
                msg[key] = value
                if ents is None:
                    ents = _auto_entities(value)
                if ents:
                    msg["entities" if key == "text" else "caption_entities"] = ents
            self._messages[chat_id, message_id] = msg
            kind = "channel_post" if channel_post else "message"
            return self.push_update({f"edited_{kind}" if edited else kind: msg})

    def push_callback_query(self, chat_id: int, user_id: int, data: str, message_id: int) -> int:
        """Queues a press on an inline button of message ``message_id``; returns the update_id."""
        with self._cond:
            self._counter += 1
            return self.push_update({"callback_query": {
                "id": f"cbq-{self._counter}", "data": data, "chat_instance": f"ci{chat_id}",
                "from": {"id": user_id, "is_bot": False, "first_name": "Ada"},
                "message": self._lookup(chat_id, message_id)}})

    def deliver_webhooks(self, urls: list[str], secret: str, *, max_connections: int = 3,
                         **options: Any) -> WebhookDelivery:
        """Posts every pending and later update to ``urls`` as Telegram posts to a webhook
        behind a round-robin load balancer, until the fake stops; returns the delivery, which
        tells what was delivered where (see :class:`~tests.webhook_delivery.WebhookDelivery`).

        From now on getUpdates answers 409 Conflict, as Telegram does while a webhook is set.

        Args:
            urls: the workers' webhook URLs.
            secret: the secret token (``secret_token`` of setWebhook).
            max_connections: how many updates may be in flight at once.
            options: ``per_chat``, ``timeout``, ``retry_delay`` and ``max_retry_delay`` of the
                delivery.
        """
        with self._cond:
            if self._delivery is not None:
                raise RuntimeError("webhook delivery already started for this FakeBotApi")
            self._delivery = WebhookDelivery(urls, secret, max_connections=max_connections,
                                             **options).start()
            for update in self._queue:
                self._delivery.push(update)
            self._queue.clear()
            return self._delivery

    @property
    def confirmed_update_ids(self) -> set[int]:
        """Ids confirmed (forgotten for good) by a getUpdates call with a larger offset."""
        with self._cond:
            return set(self._confirmed)

    @property
    def sent(self) -> list[SentCall]:
        """Successful sendMessage/sendDocument/editMessage* calls, in order."""
        with self._cond:
            return list(self._sent)

    def sent_messages(self, chat_id: int | str | None = None) -> list[SentCall]:
        """The sendMessage and sendDocument calls, optionally only those to ``chat_id``."""
        return [s for s in self.sent if s.method in ("sendMessage", "sendDocument")
                and (chat_id is None or s.chat_id == chat_id)]

    def calls(self, method: str) -> list[JsonDict]:
        """Parsed params of every successful call of ``method`` (case-insensitive)."""
        with self._cond:
            return [copy.deepcopy(p) for m, p in self._calls if m.lower() == method.lower()]

    def fail_next(self, method: str, count: int = 1, status: int = 429,
                  retry_after: int | None = None, description: str | None = None) -> None:
        """Makes the next ``count`` calls of ``method`` fail with a Telegram-style error.

        Args:
            method: The Bot API method, case-insensitive.
            count: How many calls fail.
            status: The HTTP status and ``error_code`` (429, 500, 502, ...).
            retry_after: Seconds for ``parameters.retry_after``; 429 defaults to 1.
            description: Overrides the Telegram-like description.
        """
        error = _api_error(status, retry_after, description)
        with self._cond:
            self._faults[method.lower()].extend(error for _ in range(count))

    def fail_always(self, method: str, status: int | None = 500, retry_after: int | None = None,
                    description: str | None = None) -> None:
        """Makes every later call of ``method`` fail until :meth:`heal` (an outage).

        Calls queued by :meth:`fail_next` and :meth:`drop_connections` still come first.

        Args:
            method: The Bot API method, case-insensitive.
            status: As in :meth:`fail_next`; ``None`` drops every connection instead.
            retry_after: As in :meth:`fail_next`.
            description: As in :meth:`fail_next`.
        """
        error = None if status is None else _api_error(status, retry_after, description)
        with self._cond:
            self._outages[method.lower()] = error

    def heal(self, method: str) -> None:
        """Ends an outage of ``method`` started by :meth:`fail_always`."""
        with self._cond:
            self._outages.pop(method.lower(), None)
            self._cond.notify_all()

    def refuse_chat(self, chat_id: int | str, status: int = 403,
                    description: str = "Forbidden: bot was blocked by the user") -> None:
        """Makes every later message to ``chat_id`` fail for good, as Telegram does when the
        user blocked the bot (403) or the chat is gone (400 "Bad Request: chat not found")."""
        with self._cond:
            self._refused[chat_id] = ApiError(status, description)

    def attempts(self, method: str) -> int:
        """How many calls of ``method`` arrived: answered, failed, faulted or dropped."""
        with self._cond:
            return self._attempts[method.lower()]

    def drop_connections(self, method: str, count: int = 1) -> None:
        """Makes the next ``count`` calls of ``method`` close the socket without answering."""
        with self._cond:
            self._faults[method.lower()].extend(None for _ in range(count))

    def delay(self, method: str, seconds: float) -> None:
        """Delays every later call of ``method`` by ``seconds`` (0 removes the delay)."""
        with self._cond:
            self._delays[method.lower()] = seconds

    def wait_for(self, predicate: Callable[[FakeBotApi], bool], timeout: float = 10.0,
                 message: str = "") -> None:
        """Blocks until ``predicate(api)`` holds, else raises AssertionError after ``timeout``.

        In a coroutine whose loop runs the bot, use ``asyncio.to_thread(api.wait_for, ...)``.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                if (remaining := deadline - time.monotonic()) <= 0:
                    raise AssertionError(self._timeout_message(timeout, message))
                self._cond.wait(min(remaining, 0.05))

    def wait_until_confirmed(self, update_id: int, timeout: float = 10.0) -> None:
        """Blocks until Telegram would consider ``update_id`` delivered (confirmed)."""
        self.wait_for(lambda api: update_id in api._confirmed, timeout,
                      f"update {update_id} was not confirmed")

    def _timeout_message(self, timeout: float, message: str) -> str:
        with self._cond:
            recent = [(m, p.get("chat_id"), p.get("text")) for m, p in self._calls[-10:]]
            return (f"condition not met within {timeout}s{': ' + message if message else ''}; "
                    f"pending={[u.get('update_id') for u in self._queue]} "
                    f"confirmed={sorted(self._confirmed)} recent calls={recent}")

    # ----------------------------------------------------------------- protocol
    def _serve(self, handler: _Handler) -> None:
        url = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length > 0 else b""
        match = _PATH_RE.fullmatch(url.path)
        if match is not None and match.group(1) != self.token:
            return self._reply(handler, ApiError(401, "Unauthorized"))
        name, func = self._methods.get(match.group(2).lower() if match else "", ("", None))
        if func is None:
            return self._reply(handler, ApiError(404, "Not Found"))
        with self._cond:
            self._attempts[name.lower()] += 1
            self._cond.notify_all()
            delay = self._delays.get(name.lower(), 0.0)
        if delay > 0:
            self._stopping.wait(delay)
        with self._cond:
            faults = self._faults.get(name.lower())
            faulted, fault = (True, faults.popleft()) if faults else (False, None)
            if not faulted and name.lower() in self._outages:
                faulted, fault = True, self._outages[name.lower()]
        if fault is not None:
            return self._reply(handler, fault)
        if faulted or self._stopping.is_set():  # drop the connection without answering
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
            return None
        try:
            params = self._parse(handler.headers.get("Content-Type", ""), url.query, body)
            result = func(params)
        except ApiError as exc:
            return self._reply(handler, exc)
        except (TypeError, ValueError) as exc:  # e.g. limit=abc
            return self._reply(handler, ApiError(400, f"Bad Request: {exc}"))
        sent = None
        with self._cond:
            self._calls.append((name, params))
            if name in _SENT_METHODS:
                doc = params.get("document")
                sent = SentCall(
                    name, params.get("chat_id"), params.get("text", params.get("caption")),
                    params, result["message_id"] if isinstance(result, dict) else None,
                    doc.data if isinstance(doc, UploadedFile) else None,
                    doc.filename if isinstance(doc, UploadedFile) else None)
                self._sent.append(sent)
            self._cond.notify_all()
        if sent is not None and self.on_sent is not None:
            self.on_sent(sent)  # outside the lock: it may push the next update
        return self._reply(handler, {"ok": True, "result": result})

    @staticmethod
    def _parse(content_type: str, query: str, body: bytes) -> JsonDict:
        raw: JsonDict = dict(parse_qsl(query, keep_blank_values=True))
        try:
            if content_type.startswith("application/json") and body:
                decoded = json.loads(body)
                if not isinstance(decoded, dict):
                    raise ApiError(400, "Bad Request: the request body must be a JSON object")
                raw.update(decoded)
            elif content_type.startswith("multipart/form-data"):
                raw.update(_parse_multipart(body, content_type))
            elif body:
                raw.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        except ValueError as exc:
            raise ApiError(400, f"Bad Request: can't parse request: {exc}") from exc
        for key, value in raw.items():  # resolve "attach://<name>" references to uploads
            if isinstance(value, str) and value.startswith("attach://"):
                raw[key] = raw.get(value.removeprefix("attach://"), value)
        return {key: _coerce(key, value) for key, value in raw.items()}

    @staticmethod
    def _reply(handler: _Handler, payload: JsonDict | ApiError) -> None:
        status = payload.status if isinstance(payload, ApiError) else 200
        body = payload.payload() if isinstance(payload, ApiError) else payload
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        with contextlib.suppress(OSError):
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)

    # ------------------------------------------------------------------ methods
    @staticmethod
    def _true(params: JsonDict) -> bool:
        return True

    def _get_updates(self, params: JsonDict) -> list[JsonDict]:
        offset, limit = params.get("offset"), min(max(int(params.get("limit") or 100), 1), 100)
        if self._delivery is not None:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active; "
                                "use deleteWebhook to delete the webhook first")
        deadline = time.monotonic() + max(float(params.get("timeout") or 0), 0.0)
        with self._cond:
            if isinstance(params.get("allowed_updates"), list):
                self._allowed = frozenset(params["allowed_updates"]) or None
            if isinstance(offset, int):  # a negative offset keeps only the last -offset updates
                cut, kept = len(self._queue) + offset, []
                for i, update in enumerate(self._queue):
                    if (i >= cut) if offset < 0 else (update["update_id"] >= offset):
                        kept.append(update)
                    else:
                        self._confirmed.add(update["update_id"])
                self._queue = kept
            while True:
                ready = [u for u in self._queue if self._is_allowed(u)][:limit]
                remaining = deadline - time.monotonic()
                if ready or remaining <= 0 or self._stopping.is_set():
                    return copy.deepcopy(ready)
                self._cond.wait(remaining)

    def _is_allowed(self, update: JsonDict) -> bool:
        kind = next((k for k in update if k != "update_id"), "")
        if self._allowed is None:
            return kind not in _DEFAULT_EXCLUDED_UPDATES
        return kind in self._allowed

    def _send_message(self, params: JsonDict) -> JsonDict:
        text = params.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if len(text) > 4096:
            raise ApiError(400, "Bad Request: message is too long")
        return self._new_bot_message(params, text=text, entities=params.get("entities"))

    def _send_document(self, params: JsonDict) -> JsonDict:
        doc = params.get("document")
        if not isinstance(doc, UploadedFile):
            if not isinstance(doc, str) or not doc:
                raise ApiError(400, "Bad Request: there is no document in the request")
            doc = UploadedFile("document", "application/octet-stream", b"")  # a file_id or URL
        with self._cond:
            document = self._file(file_name=doc.filename, mime_type=doc.content_type,
                                  file_size=len(doc.data))
            return self._new_bot_message(params, document=document, caption=params.get("caption"),
                                         caption_entities=params.get("caption_entities"))

    def _edit_message(self, params: JsonDict) -> JsonDict | bool:
        if params.get("inline_message_id"):
            return True
        with self._cond:
            key: Any = (params.get("chat_id"), params.get("message_id"))
            if (msg := self._messages.get(key)) is None:
                raise ApiError(400, "Bad Request: message to edit not found")
            new = {k: v for k, v in msg.items() if k not in ("reply_markup", "edit_date")}
            if "inline_keyboard" in (markup := params.get("reply_markup") or {}):
                new["reply_markup"] = markup
            if "text" in params:
                new.update(text=params["text"], entities=params.get("entities"))
            new = {k: v for k, v in new.items() if v is not None}
            self._messages[key] = {**new, "edit_date": int(time.time())}
            return copy.deepcopy(self._messages[key])

    def _my_commands(self, action: str, params: JsonDict) -> bool | list[JsonDict]:
        scope = params.get("scope") or {"type": "default"}
        key = json.dumps([scope, params.get("language_code") or ""], sort_keys=True)
        with self._cond:
            if action == "set":
                if not isinstance(commands := params.get("commands"), list):
                    raise ApiError(400, "Bad Request: can't parse commands JSON object")
                self._commands[key] = commands
            elif action == "delete":
                self._commands.pop(key, None)
            else:
                return copy.deepcopy(self._commands.get(key, []))
        return True

    def _webhook(self, action: str, params: JsonDict) -> bool | JsonDict:
        with self._cond:
            if action == "info":
                delivering = len(self._delivery.pending) if self._delivery is not None else 0
                return {"url": self._webhook_url, "has_custom_certificate": False,
                        "pending_update_count": len(self._queue) + delivering}
            self._webhook_url = str(params.get("url") or "") if action == "set" else ""
            if params.get("drop_pending_updates"):
                self._queue.clear()
        return True

    # ------------------------------------------------------------------ helpers
    def _file(self, **fields: Any) -> JsonDict:
        self._counter += 1
        return {"file_id": f"fake-file-{self._counter}", "file_unique_id": f"fu{self._counter}",
                **fields}

    def _chat(self, chat_id: int | str) -> JsonDict:
        if isinstance(chat_id, str):  # "@channelusername"
            default = {"id": -1001, "type": "channel", "title": chat_id}
        elif chat_id > 0:
            default = {"id": chat_id, "type": "private", "first_name": "Ada"}
        else:
            default = {"id": chat_id, "type": "group", "title": f"Group {chat_id}"}
        return self._chats.setdefault(chat_id, default)

    def _lookup(self, chat_id: int, message_id: int) -> JsonDict:
        """Returns a copy of a known message, registering a bot message if it is unknown."""
        if (chat_id, message_id) not in self._messages:
            self._messages[chat_id, message_id] = {
                "message_id": message_id, "date": int(time.time()), "chat": self._chat(chat_id),
                "from": dict(self.bot_user), "text": "..."}
        return copy.deepcopy(self._messages[chat_id, message_id])

    def _new_bot_message(self, params: JsonDict, **fields: Any) -> JsonDict:
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            raise ApiError(400, "Bad Request: chat_id is empty")
        with self._cond:
            if (refusal := self._refused.get(chat_id)) is not None:
                raise refusal
            message_id = self._next_bot_mid[chat_id]
            self._next_bot_mid[chat_id] = message_id + 1
            msg: JsonDict = {"message_id": message_id, "date": int(time.time()),
                             "chat": self._chat(chat_id), "from": dict(self.bot_user)}
            msg.update({k: v for k, v in fields.items() if v is not None})
            if "inline_keyboard" in (markup := params.get("reply_markup") or {}):
                msg["reply_markup"] = markup
            self._messages[chat_id, message_id] = msg
            return copy.deepcopy(msg)
