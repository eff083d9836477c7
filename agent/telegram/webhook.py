"""Webhook mode: an HTTP endpoint that journals each update before answering 200 (I1).

python-telegram-bot's own webhook server answers 200 as soon as the update is queued in memory,
so a crash can lose it. This one checks Telegram's secret token on every request (403 and
nothing recorded without it), commits the update to the inbound journal, and only then answers.

Covered by ``tests/test_telegram_bot.py`` (webhook mode).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from urllib.parse import urlsplit

import orjson
import tornado.httpserver
import tornado.web
from telegram import Bot

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.chat.storage_backlog import REFUSALS
from agent.telegram.payloads import entry_from_json

__all__ = ["WebhookServer"]

logger = logging.getLogger(__name__)

_SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 (a header name, no secret)
# Telegram's updates are small; a larger body is not from Telegram.
_MAX_BODY = 1024 * 1024


class _UpdateHandler(tornado.web.RequestHandler):
    def initialize(self, server: WebhookServer) -> None:
        self.server = server

    async def post(self) -> None:
        supplied = self.request.headers.get(_SECRET_HEADER, "")
        if not hmac.compare_digest(supplied.encode(), self.server.secret.encode()):
            logger.warning("webhook request without the right secret token; refused")
            self.set_status(403)
            return
        try:
            data = orjson.loads(self.request.body)
        except orjson.JSONDecodeError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("update_id"), int):
            logger.warning("webhook request with a body that is not an update; refused")
            self.set_status(400)
            return
        # Journaled as Telegram sent it, readable or not: an update python-telegram-bot
        # cannot parse is recorded as failed when processed, not refused (Telegram would
        # send it again and again). I1: Telegram sees 200 only after the journal commit.
        entry = entry_from_json(data, self.server.bot)
        try:
            fresh = await self.server.journal.record([entry])
        except REFUSALS as exc:
            # Telegram delivers it again later (the database logs why it refuses writes).
            logger.debug("update %s not journaled: %s", entry.update_id, exc)
            self.set_status(503)
            return
        for entry in fresh:
            self.server.on_entry(entry)
        if not fresh and self.server.on_known is not None:
            self.server.on_known(entry)
        self.set_status(200)


class WebhookServer:
    """Serves the webhook at the path of ``url`` on ``listen:port``.

    Args:
        url: the public webhook URL registered with Telegram (its path is served).
        listen: the address to bind.
        port: the port to bind.
        secret: the secret token Telegram must send with every request.
        bot: the initialised bot (to parse updates).
        journal: where updates are committed before the 200.
        on_entry: called with each newly journaled update.
        on_known: called with an update that was journaled already (``None``: ignored).
    """

    def __init__(
        self,
        *,
        url: str,
        listen: str,
        port: int,
        secret: str,
        bot: Bot,
        journal: InboundJournal,
        on_entry: Callable[[JournalEntry], None],
        on_known: Callable[[JournalEntry], None] | None = None,
    ) -> None:
        self.url = url
        self.path = urlsplit(url).path or "/"
        self.listen = listen
        self.port = port
        self.secret = secret
        self.bot = bot
        self.journal = journal
        self.on_entry = on_entry
        self.on_known = on_known
        self._server: tornado.httpserver.HTTPServer | None = None

    async def start(self) -> None:
        """Bind and serve (the ``setWebhook`` call is the caller's)."""
        app = tornado.web.Application([(self.path, _UpdateHandler, {"server": self})])
        self._server = tornado.httpserver.HTTPServer(app, max_body_size=_MAX_BODY)
        self._server.listen(self.port, address=self.listen)
        logger.info("webhook listening on %s:%d%s", self.listen, self.port, self.path)

    async def stop(self) -> None:
        """Stop accepting requests and close open connections. Idempotent."""
        if self._server is not None:
            self._server.stop()
            await self._server.close_all_connections()
            self._server = None
