"""Webhook delivery for the fake Bot API: Telegram posting a bot's updates to its webhook,
through a round-robin load balancer in front of several workers.

:class:`WebhookDelivery` plays both parts at once. As Telegram does, it POSTs each update as
JSON with the ``X-Telegram-Bot-Api-Secret-Token`` header, sends updates in update_id order
with at most ``max_connections`` waiting for an answer, and repeats an update until an answer
with a 2xx status arrives (a non-2xx answer, a dropped connection or a timeout means "not
delivered"); after that answer the update is never sent again. As an nginx ``upstream`` does,
the updates go to the worker URLs in turn; a retry goes to the worker after the one that
failed, so that a dead worker cannot keep an update from the live ones.

Telegram's Bot API server (tdlib/telegram-bot-api, ``WebhookActor``) keeps a queue per chat for
messages (new, edited, channel posts) and one per user for callback queries, and sends the next
update of a queue only after a 2xx for the one before: so does this one (``per_chat=True``).
Updates of one chat still meet at two workers: a callback query beside a message, and a worker
that answered too late beside the one that got the retry. ``per_chat=False`` drops the queues
(any update may go beside another of its chat), a harsher load than Telegram's.

:meth:`FakeBotApi.deliver_webhooks <tests.fake_bot_api.FakeBotApi.deliver_webhooks>` starts
one for the fake's pushed updates. Covered by ``tests/test_webhook_delivery.py``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import urlsplit

__all__ = ["SECRET_HEADER", "Attempt", "WebhookDelivery", "telegram_queue"]

#: The header Telegram sends the webhook's secret token in.
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 (a header name, no secret)
_MESSAGE_KINDS = ("message", "edited_message", "channel_post", "edited_channel_post",
                  "business_message", "edited_business_message")


def telegram_queue(update: dict[str, Any]) -> Hashable:
    """The queue Telegram's Bot API server delivers ``update`` in: its chat's for a message,
    its sender's for a callback query, a queue of its own for anything else."""
    for kind in _MESSAGE_KINDS:
        chat = (update.get(kind) or {}).get("chat") or {}
        if "id" in chat:
            return ("chat", chat["id"])
    sender = (update.get("callback_query") or {}).get("from") or {}
    if "id" in sender:
        return ("user", sender["id"])
    return ("update", update["update_id"])


@dataclass(frozen=True)
class Attempt:
    """One POST of an update to a worker, and how it ended.

    Attributes:
        number: the attempt's place among all attempts (0, 1, 2, ... as they were sent).
        update_id: the update posted.
        url: the worker URL it went to.
        status: the HTTP status answered; ``None`` when no answer came.
        error: why no answer came (the exception's class name, e.g.
            ``ConnectionRefusedError``, ``TimeoutError``, ``RemoteDisconnected``).
    """

    number: int
    update_id: int
    url: str
    status: int | None
    error: str | None = None

    @property
    def delivered(self) -> bool:
        """Whether Telegram counts the update as delivered (a 2xx answer)."""
        return self.status is not None and 200 <= self.status < 300


@dataclass(eq=False)  # compared by identity: push_raw may push one update_id twice
class _Pending:
    """An update not delivered yet."""

    update_id: int
    body: bytes
    queue: Hashable
    sending: bool = False
    ready_at: float = 0.0  # monotonic time of the next attempt
    delay: float = 0.0  # the pause before this attempt (0: none failed yet)
    worker: int | None = None  # the next attempt's worker (None: the next in turn)


class WebhookDelivery:
    """POSTs updates to webhook URLs in turn until each is answered 2xx.

    Every public method is thread-safe.

    Args:
        urls: the workers' webhook URLs, one attempt each in turn.
        secret: the secret token sent with every request.
        max_connections: how many updates may wait for an answer at once (setWebhook's
            ``max_connections``).
        per_chat: send a chat's updates one at a time as Telegram does (see the module).
        timeout: seconds an attempt may take (connect, send, answer) before it counts as failed.
        retry_delay: the pause before an update's second attempt; it doubles for each
            further attempt, up to ``max_retry_delay``. The update waits without holding a
            connection, as with Telegram.
        max_retry_delay: the longest pause between two attempts of one update.
    """

    def __init__(self, urls: list[str], secret: str, *, max_connections: int = 3,
                 per_chat: bool = True, timeout: float = 10.0, retry_delay: float = 0.05,
                 max_retry_delay: float = 1.0) -> None:
        if not urls:
            raise ValueError("WebhookDelivery needs at least one worker URL")
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.urls = list(urls)
        self.secret = secret
        self.max_connections = max_connections
        self.per_chat = per_chat
        self.timeout = timeout
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self._cond = threading.Condition()
        # Held from choosing an update until its request is sent, so that the updates reach
        # the workers in the order chosen (update_id order, as Telegram sends them).
        self._dispatch = threading.Lock()
        self._stopping = threading.Event()
        self._pending: list[_Pending] = []  # in update_id order
        self._open: set[http.client.HTTPConnection] = set()
        self._attempts: list[Attempt] = []
        self._delivered: dict[int, str] = {}
        self._turn = 0  # the worker of the next first attempt, modulo len(urls)
        self._sent = 0  # attempts sent so far
        self._threads: list[threading.Thread] = []

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> Self:
        """Starts ``max_connections`` sender threads."""
        if self._threads:
            raise RuntimeError("WebhookDelivery already started")
        self._threads = [threading.Thread(target=self._sender, name=f"webhook-delivery-{i}",
                                          daemon=True) for i in range(self.max_connections)]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        """Stops sending: requests in flight are cut off (not delivered), threads are joined."""
        with self._cond:
            self._stopping.set()
            for conn in self._open:  # wakes a sender blocked on an answer
                if conn.sock is not None:
                    with contextlib.suppress(OSError):  # the worker may have closed it
                        conn.sock.shutdown(socket.SHUT_RDWR)
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()

    def push(self, update: dict[str, Any]) -> None:
        """Queues ``update`` (it needs an int update_id) behind the updates pushed before."""
        body = json.dumps(update, ensure_ascii=False).encode("utf-8")
        update_id = int(update["update_id"])
        queue = telegram_queue(update) if self.per_chat else ("update", update_id)
        with self._cond:
            self._pending.append(_Pending(update_id, body, queue))
            self._cond.notify_all()

    # ------------------------------------------------------------------ results
    @property
    def delivered_update_ids(self) -> set[int]:
        """The updates Telegram considers delivered (answered 2xx); never sent again."""
        with self._cond:
            return set(self._delivered)

    @property
    def delivered_by(self) -> dict[int, str]:
        """For each delivered update, the worker URL that answered 2xx."""
        with self._cond:
            return dict(self._delivered)

    @property
    def in_flight(self) -> set[int]:
        """The updates waiting for a worker's answer now."""
        with self._cond:
            return {p.update_id for p in self._pending if p.sending}

    @property
    def pending(self) -> set[int]:
        """The updates not delivered yet (in flight, waiting to be retried or not sent yet)."""
        with self._cond:
            return {p.update_id for p in self._pending}

    def attempts(self, update_id: int | None = None) -> list[Attempt]:
        """Finished attempts (of ``update_id``, or of all updates), in the order sent."""
        with self._cond:
            return sorted((a for a in self._attempts
                           if update_id is None or a.update_id == update_id),
                          key=lambda a: a.number)

    def wait_for(self, predicate: Callable[[WebhookDelivery], bool], timeout: float = 10.0,
                 message: str = "") -> None:
        """Blocks until ``predicate(delivery)`` holds, else raises AssertionError."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                if (remaining := deadline - time.monotonic()) <= 0:
                    recent = [(a.update_id, a.url, a.status, a.error) for a in self._attempts[-10:]]
                    pending = [(p.update_id, p.sending) for p in self._pending]
                    raise AssertionError(
                        f"condition not met within {timeout}s{': ' + message if message else ''}"
                        f"; pending (update_id, in flight)={pending}"
                        f" delivered={sorted(self._delivered)} recent attempts={recent}")
                self._cond.wait(remaining)

    def wait_until_delivered(self, update_id: int, timeout: float = 10.0) -> None:
        """Blocks until ``update_id`` was answered 2xx by a worker."""
        self.wait_for(lambda d: update_id in d._delivered, timeout,
                      f"update {update_id} was not delivered")

    # ------------------------------------------------------------------ sending
    def _sender(self) -> None:
        while True:
            with self._dispatch:
                if (pending := self._next()) is None:
                    return
                sent = self._send(pending)
            self._finish(pending, *sent)

    def _next(self) -> _Pending | None:
        """Waits for the earliest update that may be sent now; ``None`` once stopping."""
        with self._cond:
            while not self._stopping.is_set():
                now, seen = time.monotonic(), set()
                wake_at: float | None = None  # when the next retry is due
                for pending in self._pending:
                    if pending.queue in seen:
                        continue  # behind an earlier update of its queue
                    seen.add(pending.queue)
                    if pending.sending:
                        continue
                    if pending.ready_at <= now:
                        pending.sending = True
                        return pending
                    wake_at = min(wake_at or pending.ready_at, pending.ready_at)
                self._cond.wait(None if wake_at is None else wake_at - now)
            return None

    def _send(self, pending: _Pending
              ) -> tuple[int, int, http.client.HTTPConnection | BaseException]:
        """Connects to the update's next worker and sends the request; returns the attempt's
        number, the worker's index and the connection (or why it failed) for ``_finish``."""
        with self._cond:
            number, self._sent = self._sent, self._sent + 1
            if (worker := pending.worker) is None:
                worker, self._turn = self._turn % len(self.urls), self._turn + 1
        parts = urlsplit(self.urls[worker])
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port,
                                          timeout=self.timeout)
        try:
            conn.connect()
            with self._cond:
                if self._stopping.is_set():
                    raise ConnectionAbortedError("delivery stopped")
                self._open.add(conn)
            conn.request("POST", parts.path or "/", pending.body,
                         {"Content-Type": "application/json", SECRET_HEADER: self.secret,
                          "Connection": "close"})
        except (OSError, http.client.HTTPException) as exc:
            self._close(conn)
            return number, worker, exc
        return number, worker, conn

    def _finish(self, pending: _Pending, number: int, worker: int,
                sent: http.client.HTTPConnection | BaseException) -> None:
        """Reads the answer and records the attempt; a failed update is retried later."""
        status: int | None = None
        error = sent if isinstance(sent, BaseException) else None
        if isinstance(sent, http.client.HTTPConnection):
            try:
                response = sent.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as exc:
                error = exc
            finally:
                self._close(sent)
        url = self.urls[worker]
        attempt = Attempt(number, pending.update_id, url, status,
                          None if error is None else type(error).__name__)
        with self._cond:
            self._attempts.append(attempt)
            pending.sending = False
            if attempt.delivered:
                self._pending.remove(pending)
                self._delivered[pending.update_id] = url
            else:
                pending.delay = min(pending.delay * 2 or self.retry_delay, self.max_retry_delay)
                pending.ready_at = time.monotonic() + pending.delay
                pending.worker = (worker + 1) % len(self.urls)
            self._cond.notify_all()

    def _close(self, conn: http.client.HTTPConnection) -> None:
        with self._cond:
            self._open.discard(conn)
        conn.close()
