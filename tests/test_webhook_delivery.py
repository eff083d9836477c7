"""Tests of the fake's webhook delivery (:mod:`tests.webhook_delivery`): the fake Bot API
posting pushed updates round-robin to worker webhooks, as Telegram behind an nginx upstream.

The workers are real HTTP servers on 127.0.0.1 that answer 200, answer 500, close the
connection without an answer or hold the request; a dead worker is a port nobody listens on.
The last test runs the real bot in webhook mode behind the delivery.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest

from tests.bot_harness import FakeChats, db_rows, free_port
from tests.fake_bot_api import FakeBotApi
from tests.local_server import LocalServer
from tests.webhook_delivery import SECRET_HEADER, WebhookDelivery

SECRET = "lb-s3cret"  # noqa: S105 (the test's own)


class _WorkerHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silences the access log."""

    def do_POST(self) -> None:
        self.server.api.serve(self)


class Worker:
    """A webhook endpoint on a free port of 127.0.0.1 that records what reaches it.

    Args:
        behaviour: ``"ok"`` answers 200, ``"error"`` answers 500, ``"drop"`` closes the
            connection without answering, ``"hold"`` answers 200 once :meth:`release` lets
            the update go (or the test ends).
        port: the port to bind (a free one by default).
    """

    def __init__(self, behaviour: str = "ok", port: int = 0) -> None:
        self.behaviour = behaviour
        self._cond = threading.Condition()
        self._released: set[int] = set()
        self._closing = False
        #: (update_id, secret header, content type, body) of every request, in arrival order.
        self.received: list[tuple[int, str | None, str | None, dict[str, Any]]] = []
        self._holding: set[int] = set()
        self._server = _bind(self, port) if port else LocalServer(self, _WorkerHandler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        update_id = body["update_id"]
        with self._cond:
            self.received.append((update_id, handler.headers.get(SECRET_HEADER),
                                  handler.headers.get("Content-Type"), body))
            if self.behaviour == "hold":
                self._holding.add(update_id)
                self._cond.wait_for(lambda: update_id in self._released or self._closing)
                self._holding.discard(update_id)
        if self.behaviour == "drop":
            handler.close_connection = True
            return
        handler.send_response(500 if self.behaviour == "error" else 200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def release(self, update_id: int) -> None:
        """Lets a held update be answered 200."""
        with self._cond:
            self._released.add(update_id)
            self._cond.notify_all()

    @property
    def holding(self) -> set[int]:
        """The update ids being held now."""
        with self._cond:
            return set(self._holding)

    @property
    def ids(self) -> list[int]:
        """The update ids received, in arrival order."""
        with self._cond:
            return [update_id for update_id, *_ in self.received]

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _bind(worker: Worker, port: int) -> LocalServer:
    """A LocalServer for ``worker`` on ``port`` (LocalServer itself takes a free one)."""

    class _OnPort(LocalServer):
        allow_reuse_address = True

        def server_bind(self) -> None:
            self.server_address = ("127.0.0.1", port)
            super().server_bind()

    return _OnPort(worker, _WorkerHandler)


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    """Started workers (append to it), closed at the end."""
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.close()


def _holding(workers: list[Worker], count: int, timeout: float = 10.0) -> set[int]:
    """Waits until the workers hold ``count`` updates between them; returns their ids."""
    deadline = time.monotonic() + timeout
    while True:
        held = set().union(*(worker.holding for worker in workers))
        if len(held) >= count:
            return held
        assert time.monotonic() < deadline, f"held {held}, not {count} updates"
        time.sleep(0.01)


def _dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/hook"


def test_updates_go_round_robin_as_json_with_the_secret(api: FakeBotApi, workers) -> None:
    """Each update is posted once, as JSON with the secret header, to the next worker in turn:
    w0, w1, w2, w0, ... as an nginx upstream does; each counts as delivered by its worker."""
    workers.extend(Worker() for _ in range(3))
    delivery = api.deliver_webhooks([w.url for w in workers], SECRET, max_connections=1)
    ids = [api.push_message(1001 + i % 2, f"message {i}") for i in range(6)]
    for update_id in ids:
        delivery.wait_until_delivered(update_id)

    assert delivery.delivered_by == {u: workers[i % 3].url for i, u in enumerate(ids)}
    assert [(a.update_id, a.status) for a in delivery.attempts()] == [(u, 200) for u in ids]
    assert [w.ids for w in workers] == [ids[0::3], ids[1::3], ids[2::3]]
    for worker in workers:
        for update_id, secret, content_type, body in worker.received:
            assert (secret, content_type) == (SECRET, "application/json")
            assert body["update_id"] == update_id
            assert body["message"]["text"] == f"message {ids.index(update_id)}"
    assert delivery.pending == set()


def test_a_failed_attempt_is_retried_at_the_next_worker_until_one_answers_200(
    api: FakeBotApi, workers
) -> None:
    """A 500, a connection closed without an answer and a worker that is not listening are
    each "not delivered": the update goes on to the worker after the one that failed it until
    one answers 200. The next update starts at the next worker in turn."""
    workers.extend([Worker("error"), Worker("drop"), Worker()])
    urls = [workers[0].url, workers[1].url, _dead_url(), workers[2].url]
    delivery = api.deliver_webhooks(urls, SECRET, max_connections=1)
    first = api.push_message(1001, "hello")
    delivery.wait_until_delivered(first)
    second = api.push_message(1001, "again")
    delivery.wait_until_delivered(second)

    outcomes = [(a.update_id, a.url, a.status, a.error) for a in delivery.attempts()]
    assert outcomes == [
        (first, urls[0], 500, None),
        (first, urls[1], None, "RemoteDisconnected"),
        (first, urls[2], None, "ConnectionRefusedError"),
        (first, urls[3], 200, None),
        (second, urls[1], None, "RemoteDisconnected"),
        (second, urls[2], None, "ConnectionRefusedError"),
        (second, urls[3], 200, None),
    ]
    assert delivery.delivered_by == {first: urls[3], second: urls[3]}
    assert (workers[0].ids, workers[1].ids, workers[2].ids) == (
        [first], [first, second], [first, second])


def test_a_dead_worker_is_retried_until_it_listens_again(api: FakeBotApi, workers) -> None:
    """With its only worker down, an update is tried again and again (with a growing pause,
    no 200 no delivery) and is delivered once the worker listens again on its port."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    delivery = api.deliver_webhooks([url], SECRET, max_connections=1, max_retry_delay=0.2)
    update_id = api.push_message(1001, "are you there?")
    delivery.wait_for(lambda d: len(d.attempts(update_id)) >= 3, message="no retries")
    assert delivery.delivered_update_ids == set()
    assert delivery.pending == {update_id}

    workers.append(Worker(port=port))
    delivery.wait_until_delivered(update_id)
    attempts = delivery.attempts(update_id)
    assert [a.error for a in attempts[:-1]] == ["ConnectionRefusedError"] * (len(attempts) - 1)
    assert attempts[-1].status == 200
    assert workers[0].ids == [update_id]


def test_a_worker_that_answers_too_late_has_not_delivered(api: FakeBotApi, workers) -> None:
    """An attempt without an answer within the timeout counts as failed and the update goes
    to the next worker, although the slow worker did receive it (the bot's journal is what
    makes that second copy harmless)."""
    workers.extend([Worker("hold"), Worker()])
    delivery = api.deliver_webhooks([w.url for w in workers], SECRET, max_connections=1,
                                    timeout=1.0)
    update_id = api.push_message(1001, "slow")
    delivery.wait_until_delivered(update_id)

    assert [(a.url, a.status, a.error) for a in delivery.attempts(update_id)] == [
        (workers[0].url, None, "TimeoutError"),
        (workers[1].url, 200, None),
    ]
    assert (workers[0].ids, workers[1].ids) == ([update_id], [update_id])


def test_a_chat_has_one_update_in_flight_and_chats_go_side_by_side(
    api: FakeBotApi, workers
) -> None:
    """As Telegram's Bot API server does: a chat's messages go one at a time, the next after
    a 200 for the one before, while other chats and a user's button presses (a queue of
    their own) are sent beside them, at most ``max_connections`` waiting at once."""
    workers.extend([Worker("hold"), Worker("hold")])
    delivery = api.deliver_webhooks([w.url for w in workers], SECRET, max_connections=3)
    a1, a2 = api.push_message(1001, "a1"), api.push_message(1001, "a2")
    b1, b2 = api.push_message(1002, "b1"), api.push_message(1002, "b2")
    press = api.push_callback_query(1001, 1001, "yes", message_id=1000)
    c1 = api.push_message(1003, "c1")

    assert _holding(workers, 3) == {a1, b1, press} == delivery.in_flight  # c1 waits
    workers[0].release(a1)
    workers[1].release(a1)
    delivery.wait_until_delivered(a1)
    assert _holding(workers, 3) == {a2, b1, press}  # a2 before c1: in update_id order
    for update_id in (a2, b1, press, b2, c1):
        workers[0].release(update_id)
        workers[1].release(update_id)
    for update_id in (a2, b1, press, b2, c1):
        delivery.wait_until_delivered(update_id)
    firsts = [a.update_id for a in delivery.attempts()]
    assert firsts.index(a2) > firsts.index(a1)
    assert firsts.index(b2) > firsts.index(b1)
    assert sorted(firsts) == sorted([a1, a2, b1, b2, press, c1])


def test_without_chat_queues_a_chat_is_at_two_workers_at_once(api: FakeBotApi, workers) -> None:
    """``per_chat=False`` (harsher than Telegram): updates leave in update_id order and at
    most ``max_connections`` wait for an answer; the waiting ones are the earliest
    undelivered, two of one chat at two workers, and a 200 for any lets the next one go."""
    workers.extend([Worker("hold"), Worker("hold")])
    delivery = api.deliver_webhooks([w.url for w in workers], SECRET, max_connections=3,
                                    per_chat=False)
    ids = [api.push_message(1001, f"message {i}") for i in range(6)]
    assert _holding(workers, 3) == set(ids[:3])
    assert delivery.in_flight == set(ids[:3])
    assert set(workers[0].ids) & set(workers[1].ids) == set()  # one chat, two workers
    info = httpx.post(f"{api.base_url}{api.token}/getWebhookInfo", timeout=10).json()
    assert info["result"]["pending_update_count"] == 6

    workers[1].release(ids[1])
    delivery.wait_until_delivered(ids[1])
    assert _holding(workers, 3) == {ids[0], ids[2], ids[3]}
    for update_id in ids:
        for worker in workers:
            worker.release(update_id)
    for update_id in ids:
        delivery.wait_until_delivered(update_id)

    firsts = [a.update_id for a in delivery.attempts()]
    assert firsts == ids  # one attempt each, sent in update_id order
    assert sorted(workers[0].ids + workers[1].ids) == ids


def test_a_chat_waits_for_its_failing_update_and_other_chats_do_not(
    api: FakeBotApi, workers
) -> None:
    """A failed update waits for its retry without holding a connection: the next update of
    its chat waits behind it, another chat's update goes first (one connection here)."""
    workers.append(Worker())
    dead = _dead_url()
    a1, a2 = api.push_message(1001, "a1"), api.push_message(1001, "a2")
    b1 = api.push_message(1002, "b1")
    delivery = api.deliver_webhooks([dead, workers[0].url], SECRET, max_connections=1,
                                    retry_delay=0.5)
    delivery.wait_until_delivered(a2)
    assert [(a.update_id, a.url) for a in delivery.attempts()] == [
        (a1, dead), (b1, workers[0].url), (a1, workers[0].url), (a2, dead),
        (a2, workers[0].url)]
    assert workers[0].ids == [b1, a1, a2]


@pytest.mark.parametrize("per_chat", [True, False])
def test_no_update_is_posted_again_after_a_200(api: FakeBotApi, workers, per_chat) -> None:
    """Many updates in flight at healthy and failing workers: every update is answered 200
    exactly once, the workers saw exactly the attempts the delivery counted, each chat's
    updates were delivered in order (with chat queues), and an update pushed before the
    delivery started is delivered too."""
    early = api.push_message(1000, "pushed before the webhook was set")
    workers.extend([Worker(), Worker("error"), Worker(), Worker("drop")])
    delivery = api.deliver_webhooks([w.url for w in workers], SECRET, max_connections=5,
                                    per_chat=per_chat)
    ids = [early] + [api.push_message(1001 + i % 4, f"message {i}") for i in range(40)]
    for update_id in ids:
        delivery.wait_until_delivered(update_id)

    healthy = workers[0].ids + workers[2].ids
    assert sorted(healthy) == ids  # exactly one 200 per update
    attempts = delivery.attempts()
    assert sorted(a.update_id for a in attempts if a.delivered) == ids
    assert len(attempts) == sum(len(w.ids) for w in workers)
    if per_chat:
        for chat in range(4):  # the 200s of a chat came in update_id order
            chat_ids = ids[1 + chat :: 4]
            delivered = [a.update_id for a in attempts if a.delivered and a.update_id in chat_ids]
            assert delivered == chat_ids


def test_get_updates_conflicts_while_webhooks_are_delivered(api: FakeBotApi, workers) -> None:
    """As with Telegram, polling is refused (409) while updates go to a webhook."""
    workers.append(Worker())
    api.deliver_webhooks([workers[0].url], SECRET)
    answer = httpx.post(f"{api.base_url}{api.token}/getUpdates", json={}, timeout=10)
    assert answer.status_code == 409
    assert "webhook is active" in answer.json()["description"]
    with pytest.raises(RuntimeError, match="already started"):
        api.deliver_webhooks([workers[0].url], SECRET)


def test_stop_cuts_off_requests_in_flight_and_joins_the_threads(workers) -> None:
    """Stopping the fake stops its delivery promptly, even with a request held by a worker
    (it is not delivered), and joins every sender thread."""
    workers.append(Worker("hold"))
    api = FakeBotApi().start()
    delivery = api.deliver_webhooks([workers[0].url], SECRET, max_connections=2)
    held = api.push_message(1001, "held")
    api.push_message(1002, "held too")
    _holding(workers, 2)
    api.push_message(1003, "queued")

    started = time.monotonic()
    api.stop()
    assert time.monotonic() - started < 2.0
    assert not [t for t in threading.enumerate() if t.name.startswith("webhook-delivery")]
    assert delivery.delivered_update_ids == set()
    assert held in delivery.pending
    assert len(delivery.pending) == 3


def test_a_delivery_needs_workers_and_a_connection() -> None:
    """Misuse is refused with a sentence."""
    with pytest.raises(ValueError, match="worker URL"):
        WebhookDelivery([], SECRET)
    with pytest.raises(ValueError, match="max_connections"):
        WebhookDelivery(["http://127.0.0.1:1/hook"], SECRET, max_connections=0)


def test_the_bot_in_webhook_mode_answers_updates_from_the_load_balancer(
    api: FakeBotApi, launch, tmp_path, workers
) -> None:
    """The real bot in webhook mode, behind a rotation with a dead worker and a failing one:
    the conversation goes on as with polling (the retries reach the bot), several chats at
    once are answered, a burst in one chat becomes turns in its order, every update is
    journaled once and counted delivered by the bot."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram-hook"
    bot = launch(api, AGENT_WEBHOOK_URL=url, AGENT_WEBHOOK_LISTEN="127.0.0.1",
                 AGENT_WEBHOOK_PORT=str(port), AGENT_WEBHOOK_SECRET=SECRET)
    bot.wait_until_up()
    workers.append(Worker("error"))
    delivery = api.deliver_webhooks([url, _dead_url(), workers[0].url], SECRET)
    chats = FakeChats(api)

    assert "Ada" in chats.ask(5001, "my name is Ada").text
    assert "Lisbon" in chats.ask(5001, "I'm planning a trip to Lisbon in May").text
    assert "Your name is Ada" in chats.ask(5001, "what's my name?").text
    burst = {chat: chats.send(chat, f"my name is Bea {chat}")[1] for chat in (5002, 5003, 5004)}
    notes = [chats.send(5005, f"note number {i}")[1] for i in range(8)]
    for chat, message_id in [*burst.items(), *((5005, m) for m in notes)]:
        api.wait_for(lambda a, c=chat, m=message_id: bool(chats.answers_to(c, m)),
                     message=f"no answer to message {message_id} in chat {chat}")

    ids = chats.update_ids
    for update_id in ids:
        delivery.wait_until_delivered(update_id)
    assert delivery.delivered_by == dict.fromkeys(ids, url)
    assert all(len(delivery.attempts(u)) >= 1 for u in ids)
    assert any(a.error == "ConnectionRefusedError" for a in delivery.attempts())
    assert api.calls("setWebhook")[0]["url"] == url
    bot.stop()
    db = tmp_path / "memory.db"
    assert db_rows(db, "SELECT update_id, status FROM inbound_updates ORDER BY update_id") == [
        (u, "done") for u in ids
    ]
    assert db_rows(db, "SELECT count(*) FROM conversation_turns") == [(len(ids),)]
    in_order = db_rows(db, "SELECT t.user_text FROM conversation_turns t JOIN "
                           "conversation_sessions s USING (session_id) WHERE s.chat_id = 5005 "
                           "ORDER BY t.seq")
    assert in_order == [(f"note number {i}",) for i in range(8)]  # a chat's queue kept order
