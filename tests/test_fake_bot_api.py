"""Tests of the fake Telegram Bot API server, driven by httpx and by a real PTB ``Bot``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import telegram
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, RetryAfter

from tests.fake_bot_api import FakeBotApi

TOKEN = "123456:ABC-fake"  # noqa: S105 - the fake's test token
CHAT = 4242


@pytest.fixture
def api() -> Iterator[FakeBotApi]:
    with FakeBotApi(token=TOKEN) as fake:
        yield fake


def call(api: FakeBotApi, method: str, token: str = TOKEN, **params: object) -> httpx.Response:
    return httpx.post(f"{api.base_url}{token}/{method}", json=params, timeout=10)


def bot(api: FakeBotApi) -> telegram.Bot:
    return telegram.Bot(TOKEN, base_url=api.base_url, base_file_url=api.base_file_url)


async def test_get_me_via_ptb(api: FakeBotApi) -> None:
    """getMe answers a User that PTB accepts as the bot's identity."""
    async with bot(api) as b:
        me = await b.get_me()
    assert (me.id, me.username, me.is_bot) == (123456, "memory_test_bot", True)
    assert api.port > 0
    assert api.base_url == f"http://127.0.0.1:{api.port}/bot"


async def test_pushed_message_arrives_as_update(api: FakeBotApi) -> None:
    """A pushed command arrives via getUpdates as a PTB Update with a bot_command entity."""
    update_id = api.push_message(CHAT, "/start@memory_test_bot hi", username="ada")
    async with bot(api) as b:
        updates = await b.get_updates()
    assert [u.update_id for u in updates] == [update_id]
    message = updates[0].message
    assert message is not None
    assert message.text == "/start@memory_test_bot hi"
    assert message.chat.id == CHAT
    assert message.from_user is not None
    assert message.from_user.username == "ada"
    assert message.parse_entities([telegram.MessageEntity.BOT_COMMAND]).popitem()[1] == (
        "/start@memory_test_bot"
    )


async def test_message_variants_parse_in_ptb(api: FakeBotApi) -> None:
    """Group, reply, photo, sticker, edited and channel-post updates are valid for PTB."""
    api.push_message(-100, "hi all", chat_type="supergroup", chat_title="Team", user_id=7)
    api.push_message(-100, None, photo=True, caption="/pic look", user_id=7, reply_to_message=1)
    api.push_message(CHAT, None, sticker=True)
    api.push_message(CHAT, "fixed typo", edited=True, message_id=1)
    api.push_message(-200, "news", channel_post=True, chat_title="News")
    async with bot(api) as b:
        group, photo, sticker, edited, post = await b.get_updates()
    assert group.message is not None
    assert (group.message.chat.type, group.message.chat.title) == ("supergroup", "Team")
    assert photo.message is not None
    assert photo.message.photo
    assert photo.message.reply_to_message is not None
    assert photo.message.reply_to_message.text == "hi all"
    assert photo.message.caption_entities[0].type == telegram.MessageEntity.BOT_COMMAND
    assert sticker.message is not None
    assert sticker.message.sticker is not None
    assert edited.edited_message is not None
    assert edited.edited_message.text == "fixed typo"
    assert post.channel_post is not None
    assert post.channel_post.sender_chat is not None


async def test_offset_confirms_updates_forever(api: FakeBotApi) -> None:
    """offset=N confirms every update below N; confirmed ones are tracked and never returned."""
    first, second, third = (api.push_message(CHAT, f"m{i}") for i in range(3))
    async with bot(api) as b:
        assert [u.update_id for u in await b.get_updates()] == [first, second, third]
        assert api.confirmed_update_ids == set()  # delivered but not yet confirmed
        assert [u.update_id for u in await b.get_updates(offset=second)] == [second, third]
        assert api.confirmed_update_ids == {first}
        assert [u.update_id for u in await b.get_updates(offset=first)] == [second, third]
        assert await b.get_updates(offset=third + 1) == ()
    assert api.confirmed_update_ids == {first, second, third}
    api.wait_until_confirmed(third, timeout=1)


def test_negative_offset_keeps_only_the_last_updates(api: FakeBotApi) -> None:
    """offset=-N returns the last N updates and forgets all earlier ones."""
    ids = [api.push_message(CHAT, f"m{i}") for i in range(4)]
    result = call(api, "getUpdates", offset=-2).json()["result"]
    assert [u["update_id"] for u in result] == ids[2:]
    assert api.confirmed_update_ids == set(ids[:2])


def test_long_poll_wakes_on_push(api: FakeBotApi) -> None:
    """A blocked getUpdates long poll returns as soon as an update is pushed."""
    timer = threading.Timer(0.3, api.push_message, args=(CHAT, "wake up"))
    timer.start()
    started = time.monotonic()
    result = call(api, "getUpdates", timeout=5).json()["result"]
    elapsed = time.monotonic() - started
    timer.join()
    assert [u["message"]["text"] for u in result] == ["wake up"]
    assert 0.2 < elapsed < 3


def test_long_poll_times_out_empty(api: FakeBotApi) -> None:
    """A long poll without updates returns an empty list after `timeout` seconds."""
    started = time.monotonic()
    assert call(api, "getUpdates", timeout=1).json() == {"ok": True, "result": []}
    assert 0.9 < time.monotonic() - started < 3


async def test_limit_honoured(api: FakeBotApi) -> None:
    """getUpdates returns at most `limit` updates, oldest first."""
    ids = [api.push_message(CHAT, f"m{i}") for i in range(5)]
    async with bot(api) as b:
        assert [u.update_id for u in await b.get_updates(limit=2)] == ids[:2]
        assert [u.update_id for u in await b.get_updates(offset=ids[2], limit=10)] == ids[2:]


def test_allowed_updates_honoured(api: FakeBotApi) -> None:
    """Only update types listed in allowed_updates are returned."""
    api.push_message(CHAT, "text")
    callback = api.push_callback_query(CHAT, CHAT, "yes", message_id=7)
    result = call(api, "getUpdates", allowed_updates=["callback_query"]).json()["result"]
    assert [u["update_id"] for u in result] == [callback]
    assert result[0]["callback_query"]["message"]["message_id"] == 7


async def test_send_message_recorded_and_returned(api: FakeBotApi) -> None:
    """sendMessage is recorded in order and PTB gets a Message with an id from 1000 upwards."""
    button = telegram.InlineKeyboardButton("ok", callback_data="1")
    markup = telegram.InlineKeyboardMarkup([[button]])
    async with bot(api) as b:
        first = await b.send_message(CHAT, "hello", reply_markup=markup)
        second = await b.send_message(CHAT, "again")
    assert (first.message_id, second.message_id) == (1000, 1001)
    assert first.text == "hello"
    assert first.from_user is not None
    assert first.from_user.is_bot
    assert first.reply_markup == markup
    assert [(s.method, s.chat_id, s.text, s.message_id) for s in api.sent_messages(CHAT)] == [
        ("sendMessage", CHAT, "hello", 1000),
        ("sendMessage", CHAT, "again", 1001),
    ]
    assert api.sent[0].params["reply_markup"] == markup.to_dict()
    assert api.sent_messages(CHAT + 1) == []


async def test_send_document_records_bytes(api: FakeBotApi) -> None:
    """sendDocument records the uploaded bytes and filename; PTB gets a Message with a document."""
    content = b"line 1\r\n--boundary-ish\r\n\x00\xff binary\n"
    async with bot(api) as b:
        message = await b.send_document(CHAT, content, filename="memory.md", caption="export")
    assert message.document is not None
    assert (message.document.file_name, message.document.file_size) == ("memory.md", len(content))
    assert message.caption == "export"
    [sent] = api.sent_messages(CHAT)
    assert (sent.method, sent.document, sent.filename, sent.text) == (
        "sendDocument", content, "memory.md", "export")
    assert sent.message_id == message.message_id


async def test_edit_message_text_and_callback_query(api: FakeBotApi) -> None:
    """editMessageText changes a message the bot sent; callback queries reference it."""
    async with bot(api) as b:
        sent = await b.send_message(CHAT, "question?")
        api.push_callback_query(CHAT, CHAT, "answer", sent.message_id)
        [update] = await b.get_updates()
        assert update.callback_query is not None
        assert update.callback_query.data == "answer"
        assert await b.answer_callback_query(update.callback_query.id)
        edited = await b.edit_message_text("answered", chat_id=CHAT, message_id=sent.message_id)
    assert isinstance(edited, telegram.Message)
    assert edited.text == "answered"
    assert [s.method for s in api.sent] == ["sendMessage", "editMessageText"]
    assert len(api.calls("answerCallbackQuery")) == 1


async def test_commands_roundtrip(api: FakeBotApi) -> None:
    """setMyCommands stores commands that getMyCommands returns and deleteMyCommands clears."""
    async with bot(api) as b:
        assert await b.set_my_commands([("start", "Start"), ("forget", "Forget me")])
        assert [c.command for c in await b.get_my_commands()] == ["start", "forget"]
        assert await b.delete_my_commands()
        assert await b.get_my_commands() == ()
        assert await b.delete_webhook(drop_pending_updates=True)
        assert await b.send_chat_action(CHAT, "typing")


def test_wrong_token_is_401(api: FakeBotApi) -> None:
    """A request with another token gets Telegram's 401 Unauthorized."""
    response = call(api, "getMe", "654321:WRONG")
    assert response.status_code == 401
    assert response.json() == {"ok": False, "error_code": 401, "description": "Unauthorized"}


async def test_wrong_token_raises_invalid_token_in_ptb(api: FakeBotApi) -> None:
    """PTB turns the 401 for a wrong token into InvalidToken."""
    with pytest.raises(InvalidToken):
        async with telegram.Bot("654321:WRONG", base_url=api.base_url):
            pass


def test_unknown_method_is_404(api: FakeBotApi) -> None:
    """An unknown method gets Telegram's 404 Not Found."""
    response = call(api, "sendTelepathy")
    assert response.status_code == 404
    assert response.json() == {"ok": False, "error_code": 404, "description": "Not Found"}


def test_methods_case_insensitive_and_params_anywhere(api: FakeBotApi) -> None:
    """Method names are case-insensitive; query, form and JSON parameters are all accepted."""
    base = f"{api.base_url}{TOKEN}"
    by_query = httpx.get(f"{base}/SENDMESSAGE", params={"chat_id": "5", "text": "q"})
    by_form = httpx.post(f"{base}/sendmessage", data={"chat_id": "5", "text": "f"})
    by_json = call(api, "sendMessage", chat_id=5, text="j")
    assert [r.json()["result"]["text"] for r in (by_query, by_form, by_json)] == ["q", "f", "j"]
    assert [s.text for s in api.sent_messages(5)] == ["q", "f", "j"]


async def test_429_surfaces_as_retry_after(
    api: FakeBotApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 429 with parameters.retry_after becomes RetryAfter in PTB and is not recorded as sent."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")  # else reading retry_after warns (an error here)
    api.fail_next("sendMessage", status=429, retry_after=7)
    async with bot(api) as b:
        with pytest.raises(RetryAfter) as caught:
            await b.send_message(CHAT, "too fast")
        assert caught.value.retry_after.total_seconds() == 7
        await b.send_message(CHAT, "later")
    assert [s.text for s in api.sent] == ["later"]


async def test_server_errors_and_dropped_connections_are_not_recorded(api: FakeBotApi) -> None:
    """500/502 answers and dropped connections raise NetworkError and record nothing."""
    api.fail_next("sendMessage", status=502)
    api.drop_connections("sendMessage")
    api.fail_next("sendMessage", status=500)
    async with bot(api) as b:
        for _ in range(3):
            with pytest.raises(NetworkError):
                await b.send_message(CHAT, "lost")
        assert (await b.send_message(CHAT, "kept")).message_id == 1000
    assert [s.text for s in api.sent] == ["kept"]
    assert len(api.calls("sendMessage")) == 1


async def test_an_outage_lasts_until_healed_and_every_attempt_is_counted(
    api: FakeBotApi,
) -> None:
    """fail_always(method) fails (or, with status None, drops) every call until heal(method);
    attempts(method) counts every call that arrived, recorded or not."""
    async with bot(api) as b:
        api.fail_always("sendMessage", status=502)
        for _ in range(2):
            with pytest.raises(NetworkError, match="Bad Gateway"):
                await b.send_message(CHAT, "lost")
        api.fail_always("sendMessage", status=None)
        with pytest.raises(NetworkError):
            await b.send_message(CHAT, "dropped")
        assert await b.get_me()  # other methods are not affected
        api.heal("sendMessage")
        await b.send_message(CHAT, "kept")
    assert [s.text for s in api.sent] == ["kept"]
    assert api.attempts("sendMessage") == 4
    assert api.attempts("SENDMESSAGE") == 4


@pytest.mark.parametrize(
    ("status", "description", "error"),
    [
        (403, "Forbidden: bot was blocked by the user", Forbidden),
        (400, "Bad Request: chat not found", BadRequest),
    ],
)
async def test_a_refused_chat_fails_for_good_and_others_are_served(
    api: FakeBotApi, status: int, description: str, error: type[Exception]
) -> None:
    """refuse_chat(chat) answers every message to that chat with Telegram's refusal."""
    api.refuse_chat(CHAT, status=status, description=description)
    async with bot(api) as b:
        for _ in range(2):
            with pytest.raises(error, match="(?i)" + description.split(": ", 1)[1]):
                await b.send_message(CHAT, "never")
        await b.send_message(CHAT + 1, "fine")
    assert [(s.chat_id, s.text) for s in api.sent] == [(CHAT + 1, "fine")]
    assert api.attempts("sendMessage") == 3


def test_delay_slows_a_method(api: FakeBotApi) -> None:
    """delay(method, s) holds every call of that method for s seconds."""
    api.delay("getMe", 0.5)
    started = time.monotonic()
    assert call(api, "getMe").json()["ok"]
    assert time.monotonic() - started >= 0.45


def test_stop_wakes_a_blocked_long_poll() -> None:
    """stop() returns promptly even while a getUpdates long poll is blocked."""
    fake = FakeBotApi(token=TOKEN).start()
    results: list[httpx.Response | Exception] = []

    def poll() -> None:
        try:
            results.append(call(fake, "getUpdates", timeout=30))
        except httpx.HTTPError as exc:
            results.append(exc)

    poller = threading.Thread(target=poll)
    poller.start()
    time.sleep(0.3)  # let the long poll block
    started = time.monotonic()
    fake.stop()
    poller.join(timeout=5)
    assert time.monotonic() - started < 3
    assert not poller.is_alive()
    [response] = results
    assert isinstance(response, httpx.Response)
    assert response.json() == {"ok": True, "result": []}


def test_wait_for_raises_helpful_assertion(api: FakeBotApi) -> None:
    """wait_for raises AssertionError naming the unmet condition after the timeout."""
    api.push_message(CHAT, "never read")
    with pytest.raises(AssertionError, match="reply expected"):
        api.wait_for(lambda a: bool(a.sent), timeout=0.2, message="reply expected")
