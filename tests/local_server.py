"""The HTTP server the fakes of outside services (Bot API, LLM endpoint) run on 127.0.0.1."""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LocalServer"]


class LocalServer(ThreadingHTTPServer):
    """A threaded server on a free port of 127.0.0.1 that hands its handler ``api``.

    Args:
        api: the fake the handler serves (``handler.server.api``).
        handler: the request handler class.
    """

    daemon_threads = True
    block_on_close = False
    # Many clients connect at once (a bot's connection pool, 1,000 chats in the throughput
    # bench): the default listen backlog of 5 would reset some, which a real service never does.
    request_queue_size = 256

    def __init__(self, api: Any, handler: type[BaseHTTPRequestHandler]) -> None:
        self.api = api
        super().__init__(("127.0.0.1", 0), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client (a bot killed by a crash test) drops its connection."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)
