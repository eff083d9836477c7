"""Slow or failing Telegram (issue 6): the real bot against a fake Bot API that misbehaves.

Every test runs ``python run_bot.py`` in a subprocess against
:class:`~tests.fake_bot_api.FakeBotApi`, which answers chosen calls with 429 (flood control,
``parameters.retry_after``), 500 or 502, answers them later than the bot's timeout, drops the
connection without an answer, or refuses a chat for good (403, 400), and counts every call that
reaches it. The bot runs with short timeouts and back-offs (:data:`FAST`), so that an outage of
a few seconds spans many attempts and several redelivery passes. The tests look at what
Telegram would have shown the user, at the turn log and the journal, and at the bot's log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tests.bot_harness import (
    ANSWER_TIMEOUT,
    TOKEN_SECRET,
    BotProcess,
    FakeChats,
    bot_env,
    db_rows,
    free_port,
)
from tests.fake_bot_api import FakeBotApi

#: Seconds of AGENT_REDELIVER_INTERVAL below.
REDELIVER_INTERVAL = 1.0
#: A bot that gives up on a Bot API call after 1 s and retries soon (0.1 s, doubling).
FAST = {
    "AGENT_TELEGRAM_TIMEOUT": "1",
    "AGENT_TELEGRAM_BACKOFF": "0.1",
    "AGENT_REDELIVER_INTERVAL": str(REDELIVER_INTERVAL),
}
#: Attempts of one reply before it is left to the redelivery pass (the adapter's rule).
SEND_ATTEMPTS = 5
#: The Bot API methods a start and a poll call: all of them fail in a full outage.
OUTAGE = ("getMe", "setMyCommands", "deleteWebhook", "getUpdates", "sendMessage")

Turn = tuple[str, str, str, int | None, str | None]


def turns(db: Path, chat_id: int) -> list[Turn]:
    """(user_text, assistant_text, status, reply_message_id, delivery_error) of the chat's
    turns, in order."""
    return db_rows(
        db,
        "SELECT t.user_text, t.assistant_text, t.status, t.reply_message_id, t.delivery_error"
        " FROM conversation_turns t JOIN conversation_sessions s USING (session_id)"
        " WHERE s.chat_id = ? ORDER BY t.session_id, t.seq",
        (chat_id,),
    )


def journal_statuses(db: Path) -> list[str]:
    """The status of every inbound update the bot journaled, in update order."""
    return [row[0] for row in db_rows(db, "SELECT status FROM inbound_updates ORDER BY update_id")]


def log_lines(*bots: BotProcess, levels: tuple[str, ...] = ("WARNING", "ERROR")) -> list[str]:
    """The lines the bots logged at these levels."""
    return [
        line
        for bot in bots
        for line in bot.stderr.splitlines()
        if any(f" {level} " in line for level in levels)
    ]


def eventually(api: FakeBotApi, check: Callable[[], bool], message: str) -> None:
    """Wait until ``check()`` holds (re-checked every 50 ms), else fail with ``message``."""
    api.wait_for(lambda _: check(), ANSWER_TIMEOUT, message)


def answered_not_delivered(db: Path, chat_id: int, count: int) -> Callable[[], bool]:
    """Whether the chat has ``count`` turns, all answered and none delivered or refused."""

    def check() -> bool:
        rows = turns(db, chat_id)
        return len(rows) == count and all(row[2:] == ("answered", None, None) for row in rows)

    return check


def one_answer_each(chats: FakeChats, messages: list[tuple[int, int]]) -> Callable[[], bool]:
    """Whether each (chat_id, message_id) has had an answer."""
    return lambda: all(chats.answers_to(chat, mid) for chat, mid in messages)


# -- transient faults: retried per Telegram's rules ------------------------------------------

FAULTS: dict[str, tuple[Callable[[FakeBotApi], None], int]] = {
    # name: (what the fake does to the next sendMessage calls, how many of them fail)
    "429 retry_after 1": (lambda api: api.fail_next("sendMessage", 2, retry_after=1), 2),
    "500": (lambda api: api.fail_next("sendMessage", 3, status=500), 3),
    "502": (lambda api: api.fail_next("sendMessage", 3, status=502), 3),
    "dropped connection": (lambda api: api.drop_connections("sendMessage", 3), 3),
}


def test_a_reply_is_retried_through_flood_control_server_errors_and_drops(
    api, chats, polling_bot, tmp_path
):
    """Flood control (429), 500, 502 and dropped connections on sendMessage only delay a
    reply: it is retried until Telegram takes it (after a 429, no sooner than the retry_after
    Telegram names), it reaches the chat once, and its turn records the message id."""
    bot = polling_bot(**FAST)
    answers = {}
    for chat, (name, (inject, failures)) in enumerate(FAULTS.items(), start=101):
        before = api.attempts("sendMessage")
        inject(api)
        started = time.monotonic()
        answers[chat] = chats.ask(chat, f"hello, fault {name}")
        waited = time.monotonic() - started
        assert api.attempts("sendMessage") == before + failures + 1, name
        if name.startswith("429"):
            assert waited >= failures * 1.0, "a 429 was retried before its retry_after"
    bot.stop()
    db = tmp_path / "memory.db"
    for chat, answer in answers.items():
        assert chats.answers_to(chat, 1) == [answer]
        [(_, text, *delivery)] = turns(db, chat)
        assert (text, *delivery) == (answer.text, "delivered", answer.message_id, None)
    assert set(journal_statuses(db)) == {"done"}


def test_during_an_outage_replies_stay_answered_and_arrive_once_after_it(
    api, chats, polling_bot, tmp_path
):
    """While every sendMessage fails (502) the replies stay ``answered`` in the turn log, are
    retried in line and then by the redelivery pass, and the outage costs one warning line
    however many attempts fail; once Telegram recovers, every reply arrives once and its turn
    is ``delivered``, and nothing is sent again."""
    db = tmp_path / "memory.db"
    bot = polling_bot(**FAST)
    api.fail_always("sendMessage", status=502)
    said = ((201, "my name is Ada"), (202, "my name is Bob"), (201, "I live in Lisbon"))
    messages = [(chat, chats.send(chat, text)[1]) for chat, text in said]
    # Five attempts per reply in line, then at least three redelivery passes of one each.
    api.wait_for(lambda a: a.attempts("sendMessage") >= 3 * SEND_ATTEMPTS + 3 * 3, 60)
    assert answered_not_delivered(db, 201, 2)()
    assert answered_not_delivered(db, 202, 1)()
    assert journal_statuses(db) == ["done"] * 3  # journaled and processed: I1 holds meanwhile
    assert api.sent_messages() == []
    failed = api.attempts("sendMessage")

    api.heal("sendMessage")
    eventually(api, one_answer_each(chats, messages), "the replies never arrived")
    eventually(
        api,
        lambda: {row[2] for chat in (201, 202) for row in turns(db, chat)} == {"delivered"},
        "the delivered replies were not recorded",
    )
    time.sleep(3 * REDELIVER_INTERVAL)  # later passes find nothing to resend
    bot.stop()
    for chat, message_id in messages:
        [answer] = chats.answers_to(chat, message_id)
        assert (answer.text, "delivered", answer.message_id, None) in [
            row[1:] for row in turns(db, chat)
        ]
    assert len(api.sent_messages()) == 3
    problems = log_lines(bot)
    assert len(problems) == 1, problems
    assert "sending failed" in problems[0]
    assert "Bad Gateway" in problems[0]
    [recovered] = [line for line in bot.stderr.splitlines() if "sending works again" in line]
    assert int(recovered.split("after ")[1].split()[0]) >= failed


def test_replies_answered_during_an_outage_are_sent_after_restarts(
    api, chats, polling_bot, launch, tmp_path
):
    """I4 through an outage. A bot stopped (SIGTERM) while Telegram answers every send with a
    429 asking for two minutes stops without waiting them out. A bot started while every Bot
    API call fails (dropped connections) keeps retrying its start-up calls instead of exiting,
    and stops at once on SIGTERM too. The next one, started during the outage, serves as soon
    as Telegram recovers: every reply committed before, and the message that waited at
    Telegram meanwhile, arrive once, and every turn is ``delivered``."""
    db = tmp_path / "memory.db"
    first = polling_bot(**FAST)
    api.fail_always("sendMessage", status=429, retry_after=120)
    messages = [(301, chats.send(301, "my name is Ada")[1]), (302, chats.send(302, "hi")[1])]
    eventually(api, answered_not_delivered(db, 301, 1), "chat 301 was not answered")
    eventually(api, answered_not_delivered(db, 302, 1), "chat 302 was not answered")
    api.wait_for(lambda a: a.attempts("sendMessage") >= 2, 30, "the replies were never tried")
    first.stop(timeout=30)  # well before the 120 s Telegram asked to wait

    for method in OUTAGE:
        api.fail_always(method, status=None)
    for run in range(2):
        tried = api.attempts("getMe")
        bot = launch(api, **FAST)
        api.wait_for(lambda a, tried=tried: a.attempts("getMe") >= tried + 3, 30, "no retry")
        assert bot.alive
        if run == 0:
            bot.stop(timeout=30)
    messages.append((301, chats.send(301, "I live in Lisbon")[1]))  # waits at Telegram
    for method in OUTAGE:
        api.heal(method)
    bot.wait_until_polling(api)
    eventually(api, one_answer_each(chats, messages), "the replies never arrived")
    eventually(
        api,
        lambda: {row[2] for chat in (301, 302) for row in turns(db, chat)} == {"delivered"},
        "the delivered replies were not recorded",
    )
    bot.stop()
    assert all(len(chats.answers_to(chat, mid)) == 1 for chat, mid in messages)
    assert len(api.sent_messages()) == 3
    assert [len(turns(db, chat)) for chat in (301, 302)] == [2, 1]
    assert f"reaching Telegram at {api.base_url} failed" in bot.stderr
    assert "Traceback" not in bot.stderr


# -- refusals: final ---------------------------------------------------------------------


REFUSALS = {  # chat: (status, description) of Telegram's answer to every message to it
    401: (403, "Forbidden: bot was blocked by the user"),
    402: (400, "Bad Request: chat not found"),
}


def test_a_reply_refused_for_good_is_recorded_once_and_never_retried(
    api, chats, polling_bot, tmp_path
):
    """A reply Telegram refuses for good (403: the user blocked the bot; 400: the chat is
    gone) is tried once: its turn stays ``answered`` with Telegram's reason, one ERROR line
    names the chat and the reason, and neither the redelivery passes nor the next start send
    it again; other chats are served as usual."""
    db = tmp_path / "memory.db"
    first = polling_bot(**FAST)
    for chat, (status, description) in REFUSALS.items():
        api.refuse_chat(chat, status=status, description=description)
        chats.send(chat, "my name is Ada")
    eventually(
        api,
        lambda: all([row[4] is not None for row in turns(db, chat)] == [True] for chat in REFUSALS),
        "the refusals were not recorded",
    )
    time.sleep(3 * REDELIVER_INTERVAL)  # several redelivery passes
    first.stop()
    second = polling_bot(**FAST)  # start-up recovery must not resend them either
    assert "Bob" in chats.ask(403, "my name is Bob").text
    second.stop()

    assert api.attempts("sendMessage") == len(REFUSALS) + 1  # one each, and the answer to Bob
    problems = log_lines(first, second)
    assert len(problems) == len(REFUSALS), problems
    for chat, (_, description) in REFUSALS.items():
        reason = description.split(": ", 1)[1].lower()
        [(text, _, state, message_id, error)] = turns(db, chat)
        assert (text, state, message_id) == ("my name is Ada", "answered", None)
        assert reason in error.lower()
        [line] = [line for line in problems if f"chat_id={chat}" in line]
        assert " ERROR " in line
        assert reason in line.lower()
    assert [row[2] for row in turns(db, 403)] == ["delivered"]
    assert journal_statuses(db) == ["done"] * 3


# -- slow answers: beyond the bot's timeout --------------------------------------------------


def test_a_send_slower_than_the_timeout_is_retried_until_one_is_answered(
    api, chats, polling_bot, tmp_path
):
    """A sendMessage answered after the bot's timeout (1 s) may still have reached the chat:
    the bot cannot know, so it retries (at least once, DESIGN.md I4) until a send is
    answered in time. The turn is one turn, ``delivered`` with the id of the answered send;
    every extra copy the user saw comes from a send that timed out, and none comes after the
    delivery is recorded."""
    db = tmp_path / "memory.db"
    bot = polling_bot(**FAST)
    api.delay("sendMessage", 2.5)
    _, message_id = chats.send(501, "my name is Ada")
    api.wait_for(lambda a: chats.answers_to(501, message_id), 30, "no send reached the chat")
    api.wait_for(lambda a: a.attempts("sendMessage") >= 3, 30, "the timed-out send was not retried")
    api.delay("sendMessage", 0)
    eventually(api, lambda: turns(db, 501)[0][2] == "delivered", "the reply was never recorded")
    time.sleep(3 * REDELIVER_INTERVAL)  # a delivered reply is not sent again
    bot.stop()

    copies = chats.answers_to(501, message_id)
    [(_, text, _, recorded, _)] = turns(db, 501)
    assert recorded in {copy.message_id for copy in copies}
    assert {copy.text for copy in copies} == {text}
    # Every attempt but the answered one timed out: each may have reached the chat, no more.
    assert len(copies) <= api.attempts("sendMessage")
    assert len(copies) == len(api.sent_messages())


# -- polling: getUpdates failing ---------------------------------------------------------


def test_polling_through_errors_drops_and_slow_answers_loses_and_repeats_nothing(
    api, chats, polling_bot, tmp_path
):
    """getUpdates failing with 500, 502 and 429, dropping its connections, or answering after
    the bot's timeout (with updates the bot never reads) only delays the messages: each is
    answered once and is one turn, every update is confirmed to Telegram only once journaled,
    and each outage is one warning."""
    db = tmp_path / "memory.db"
    bot = polling_bot(**FAST)
    before = api.attempts("getUpdates")
    api.fail_next("getUpdates", 1, status=500)
    api.drop_connections("getUpdates", 1)
    api.fail_next("getUpdates", 1, status=502)
    api.fail_next("getUpdates", 1, status=429, retry_after=1)
    messages = [(601, chats.send(601, f"message {n}")[1]) for n in range(3)]
    eventually(api, one_answer_each(chats, messages), "the messages were not answered")
    assert api.attempts("getUpdates") >= before + 4

    # Slow: held 2.5 s, beyond the 1 s poll plus the 1 s timeout. The held poll still answers,
    # with the new update, after the bot gave up on it; the bot must ask for it again.
    slow = api.attempts("getUpdates")
    api.delay("getUpdates", 2.5)
    api.wait_for(lambda a: a.attempts("getUpdates") > slow, 30, "polling stopped")
    messages.append((602, chats.send(602, "while polling is slow")[1]))
    api.wait_for(lambda a: a.attempts("getUpdates") >= slow + 3, 30, "polling stopped")
    assert chats.answers_to(602, messages[-1][1]) == []
    api.delay("getUpdates", 0)
    eventually(api, one_answer_each(chats, messages), "the message sent meanwhile was lost")
    bot.stop()

    assert all(len(chats.answers_to(chat, mid)) == 1 for chat, mid in messages)
    assert [len(turns(db, chat)) for chat in (601, 602)] == [3, 1]
    assert journal_statuses(db) == ["done"] * 4
    journaled = {row[0] for row in db_rows(db, "SELECT update_id FROM inbound_updates")}
    assert api.confirmed_update_ids <= journaled == set(chats.update_ids)
    problems = log_lines(bot)
    assert len(problems) == 2, problems  # two outages, one line each
    assert all("polling failed" in line for line in problems)


def test_a_bot_api_url_with_nothing_listening_is_named_in_the_warning(tmp_path):
    """TELEGRAM_BASE_URL pointing where nothing listens: the bot keeps trying (it does not
    exit), its warning names that URL but never the token, and later failures stay quiet until
    the first "still failing" reminder (a minute in, tests/test_failure_streak.py); SIGTERM
    stops it cleanly."""
    closed = free_port()  # bound and released: nothing listens there
    url = f"http://127.0.0.1:{closed}/bot"
    env = bot_env(tmp_path, TELEGRAM_BASE_URL=url, **FAST)
    bot = BotProcess(tmp_path, env).start()
    try:
        deadline = time.monotonic() + 60
        while "reaching Telegram" not in bot.stderr:
            assert bot.alive, bot.stderr
            assert time.monotonic() < deadline, bot.stderr
            time.sleep(0.05)
        time.sleep(2)  # several more attempts (0.1 s back-off, doubling)
        assert bot.alive
        bot.stop()
    finally:
        bot.ensure_dead()
    warnings = [line for line in bot.stderr.splitlines() if " WARNING " in line]
    assert len(warnings) == 1, warnings
    assert warnings[0].endswith(
        f"agent.telegram.bot: reaching Telegram at {url} failed (NetworkError: httpx.ConnectError:"
        " All connection attempts failed); retrying until it answers"
    )
    assert TOKEN_SECRET not in bot.stderr
