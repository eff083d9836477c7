"""A fake OpenAI-compatible chat-completions server for tests, over real HTTP on 127.0.0.1.

It runs a ``ThreadingHTTPServer`` on a free port in a daemon thread. Every POST is recorded
(path, headers, JSON body) and answered with the :class:`Answer` of the first rule
(:meth:`FakeLLMApi.when`) its user message matches, else with the next scripted one, or with a
completion saying :attr:`FakeLLMApi.default_text` once the script is empty. An answer may come
late, trickle in, or never come (the connection dropped).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Self

from tests.local_server import LocalServer

JsonDict = dict[str, Any]


def completion(text: str) -> JsonDict:
    """Return a minimal chat-completions response body whose answer is ``text``."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            },
        ],
    }


@dataclass(frozen=True)
class Answer:
    """One scripted response: a status, a body (JSON-encoded unless bytes), headers, a delay.

    ``drip`` sends the headers at once and then the body one byte every ``drip`` seconds;
    ``drop`` closes the connection without any answer.
    """

    status: int = 200
    body: JsonDict | bytes = field(default_factory=lambda: completion("scripted"))
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drip: float = 0.0
    drop: bool = False


@dataclass(frozen=True)
class Request:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: JsonDict


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default access log on stderr."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        if len(raw) < length:
            return  # the client died in mid-request (a crash test killed it)
        answer = self.server.api._record(
            Request(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw))
        )
        # A delayed answer wakes early when the server stops, so no thread outlives the test.
        stopping = self.server.api._stopping
        if answer.delay and stopping.wait(answer.delay):
            return
        if answer.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        body = answer.body if isinstance(answer.body, bytes) else json.dumps(answer.body).encode()
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            chunks = [body[i : i + 1] for i in range(len(body))] if answer.drip else [body]
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
                if answer.drip and stopping.wait(answer.drip):
                    return
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): that is what the test provoked


class FakeLLMApi:
    """An in-process fake chat-completions endpoint; use it as a context manager.

    Args:
        default_text: the answer once the script is exhausted.
    """

    def __init__(self, default_text: str = "hello from the model") -> None:
        self.default_text = default_text
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._script: deque[Answer] = deque()
        self._rules: list[tuple[str, Answer]] = []
        self._requests: list[Request] = []
        self._server: LocalServer | None = None

    @property
    def base_url(self) -> str:
        """The API root to configure, e.g. ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("FakeLLMApi is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> list[Request]:
        """The requests received so far, in order."""
        with self._lock:
            return list(self._requests)

    def script(self, *answers: Answer) -> None:
        """Queue answers for the next requests, in order."""
        with self._lock:
            self._script.extend(answers)

    def when(self, contains: str, answer: Answer) -> None:
        """Answer every request whose user message contains ``contains`` with ``answer``."""
        with self._lock:
            self._rules.append((contains, answer))

    def _record(self, request: Request) -> Answer:
        messages = request.body.get("messages", [])
        user = " ".join(str(m.get("content")) for m in messages if m.get("role") == "user")
        with self._lock:
            self._requests.append(request)
            for contains, answer in self._rules:
                if contains in user:
                    return answer
            if self._script:
                return self._script.popleft()
        return Answer(body=completion(self.default_text))

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve on a daemon thread."""
        self._stopping.clear()
        self._server = LocalServer(self, _Handler)
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-llm-api",
            daemon=True,
        ).start()
        return self

    def stop(self) -> None:
        """Stop serving, wake delayed answers and close the socket."""
        server, self._server = self._server, None
        if server is not None:
            self._stopping.set()
            server.shutdown()
            server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
