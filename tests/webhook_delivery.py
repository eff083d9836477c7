"""Webhook delivery for the fake Bot API: Telegram posting a bot's updates to its webhook,
through a round-robin load balancer in front of several workers.

:class:`WebhookDelivery` plays both parts at once. As Telegram does, it POSTs each update as
JSON with the ``X-Telegram-Bot-Api-Secret-Token`` header, sends a bot's updates in update_id
order with at most ``max_connections`` of them in flight, and repeats an update until an
answer with a 2xx status arrives (a non-2xx answer, a dropped connection or a timeout means
"not delivered"); after that answer the update is never sent again. As an nginx ``upstream``
does, each attempt goes to the next worker URL in one rotation shared by all updates, so a
retry goes to the next worker. With several updates in flight, two updates of one chat can
be at two workers at once: the workers' per-chat ordering has to cope with that.

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
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import urlsplit

__all__ = ["SECRET_HEADER", "Attempt", "WebhookDelivery"]

#: The header Telegram sends the webhook's secret token in.
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 (a header name, no secret)


@dataclass(frozen=True)
class Attempt:
    """One POST of an update to a worker, and how it ended.

    Attributes:
        number: the attempt's place in the rotation (0, 1, 2, ... over all updates).
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


class WebhookDelivery:
    """POSTs updates to webhook URLs in round-robin order until each is answered 2xx.

    Every public method is thread-safe.

    Args:
        urls: the workers' webhook URLs, one attempt each in turn.
        secret: the secret token sent with every request.
        max_connections: how many updates may be in flight at once (setWebhook's
            ``max_connections``); 1 sends each update only after the one before was delivered.
        timeout: seconds an attempt may take (connect, send, answer) before it counts as failed.
        retry_delay: the pause before an update's second attempt; it doubles for each
            further attempt, up to ``max_retry_delay``.
        max_retry_delay: the longest pause between two attempts of one update.
    """

    def __init__(self, urls: list[str], secret: str, *, max_connections: int = 3,
                 timeout: float = 10.0, retry_delay: float = 0.05,
                 max_retry_delay: float = 1.0) -> None:
        if not urls:
            raise ValueError("WebhookDelivery needs at least one worker URL")
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.urls = list(urls)
        self.secret = secret
        self.max_connections = max_connections
        self.timeout = timeout
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self._cond = threading.Condition()
        # Held from taking the next update until its first request is sent, so that the
        # updates reach the workers in update_id order (as Telegram sends them).
        self._dispatch = threading.Lock()
        self._stopping = threading.Event()
        self._queue: deque[tuple[int, bytes]] = deque()
        self._in_flight: set[int] = set()
        self._open: set[http.client.HTTPConnection] = set()
        self._attempts: list[Attempt] = []
        self._delivered: dict[int, str] = {}
        self._turn = 0
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
        with self._cond:
            self._queue.append((int(update["update_id"]), body))
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
        """The updates being posted or waiting for their next attempt."""
        with self._cond:
            return set(self._in_flight)

    @property
    def pending(self) -> int:
        """How many updates are not delivered yet (queued or in flight)."""
        with self._cond:
            return len(self._queue) + len(self._in_flight)

    def attempts(self, update_id: int | None = None) -> list[Attempt]:
        """Finished attempts (of ``update_id``, or of all updates), in rotation order."""
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
                    queued = [update_id for update_id, _ in self._queue]
                    raise AssertionError(
                        f"condition not met within {timeout}s{': ' + message if message else ''}"
                        f"; queued={queued} in flight={sorted(self._in_flight)}"
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
                if (item := self._next_update()) is None:
                    return
                update_id, body = item
                attempt = self._send(update_id, body)
            delay = self.retry_delay
            while not self._finish(update_id, *attempt):
                if self._stopping.wait(delay):
                    return
                delay = min(delay * 2, self.max_retry_delay)
                attempt = self._send(update_id, body)

    def _next_update(self) -> tuple[int, bytes] | None:
        with self._cond:
            while not self._queue:
                if self._stopping.is_set():
                    return None
                self._cond.wait()
            if self._stopping.is_set():
                return None
            update_id, body = self._queue.popleft()
            self._in_flight.add(update_id)
            return update_id, body

    def _send(self, update_id: int, body: bytes
              ) -> tuple[int, str, http.client.HTTPConnection | BaseException]:
        """Connects to the next worker and sends the request; returns what ``_finish`` reads."""
        with self._cond:
            number, self._turn = self._turn, self._turn + 1
        url = self.urls[number % len(self.urls)]
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port,
                                          timeout=self.timeout)
        try:
            conn.connect()
            with self._cond:
                if self._stopping.is_set():
                    raise ConnectionAbortedError("delivery stopped")
                self._open.add(conn)
            conn.request("POST", parts.path or "/", body,
                         {"Content-Type": "application/json", SECRET_HEADER: self.secret,
                          "Connection": "close"})
        except (OSError, http.client.HTTPException) as exc:
            self._close(conn)
            return number, url, exc
        return number, url, conn

    def _finish(self, update_id: int, number: int, url: str,
                sent: http.client.HTTPConnection | BaseException) -> bool:
        """Reads the answer and records the attempt; returns whether the update was delivered."""
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
        attempt = Attempt(number, update_id, url, status,
                          None if error is None else type(error).__name__)
        with self._cond:
            self._attempts.append(attempt)
            if attempt.delivered:
                self._in_flight.discard(update_id)
                self._delivered[update_id] = url
            self._cond.notify_all()
        return attempt.delivered

    def _close(self, conn: http.client.HTTPConnection) -> None:
        with self._cond:
            self._open.discard(conn)
        conn.close()
