"""The HTTP side of an OpenAI-compatible chat-completions endpoint, shared by our model users.

OpenAI, Ollama, llama.cpp's server and vLLM all speak ``POST {base_url}/chat/completions``.
:class:`ChatCompletionsClient` owns one ``httpx.AsyncClient`` for such an endpoint: it builds
the request, sends the API key only in the ``Authorization`` header, reads the first choice's
text out of the answer and redacts the key from error text. What to do when a call fails
(retry, fall back, give up) is each subclass's business: the
:class:`~agent.engines.llm.OpenAICompatConcierge` retries and falls back to offline rules,
the :class:`~agent.engines.llm_summarizer.OpenAICompatSummarizer` tries once.

Covered by ``tests/test_llm.py``, ``tests/test_llm_faults.py`` and
``tests/test_llm_summarizer.py`` (over HTTP, against ``tests/fake_llm_api.py``).
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Any, ClassVar, Self

import httpx

from agent.errors import AgentError

__all__ = ["ChatCompletionsClient", "describe"]

logger = logging.getLogger(__name__)

_ENDPOINT = "chat/completions"


class ChatCompletionsClient:
    """One chat-completions endpoint behind one ``httpx.AsyncClient``; a base class.

    Use a subclass as ``async with`` or call :meth:`initialize` and :meth:`shutdown`.
    Subclasses set :attr:`error` (the exception malformed answers raise) and :attr:`role`
    (how the lifecycle log line names them).

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:11434/v1`` (a trailing ``/`` is fine).
        model: the model name sent with every request.
        api_key: sent as ``Authorization: Bearer``; ``None`` or empty sends no header.
        timeout: seconds one request may take.
        transport: an httpx transport to use instead of the network (tests, proxies).

    Raises:
        ValueError: a timeout that is not positive.
    """

    #: Raised by :meth:`_content` for an answer without usable text.
    error: ClassVar[type[AgentError]] = AgentError
    #: Names the subclass in the "ready" log line.
    role: ClassVar[str] = "LLM client"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        *,
        timeout: float = 20.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.base_url = base_url.rstrip("/") + "/"
        self.model = model
        self.timeout = timeout
        self._api_key = api_key or None
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    async def initialize(self) -> None:
        """Open the HTTP client. Idempotent."""
        if self._client is not None:
            return
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(self.timeout),
            transport=self._transport,
        )
        logger.info("%s ready: model %s at %s", self.role, self.model, self.base_url)

    async def shutdown(self) -> None:
        """Close the HTTP client. Idempotent."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> Self:
        try:
            await self.initialize()
        except BaseException:
            await self.shutdown()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()

    def _require_client(self) -> httpx.AsyncClient:
        """Return the open HTTP client.

        Raises:
            RuntimeError: :meth:`initialize` has not run, or :meth:`shutdown` has.
        """
        if self._client is None:
            raise RuntimeError(
                f"{type(self).__name__} is not initialized; await initialize() or use async with"
            )
        return self._client

    def _payload(self, system: str, user: str, temperature: float) -> dict[str, Any]:
        """Return a request body: one system message, one user message."""
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": temperature,
        }

    async def _post(self, payload: dict[str, Any], within: float) -> httpx.Response:
        """Send one request; ``within`` seconds bound the whole of it.

        Raises:
            RuntimeError: the client is not initialized.
            httpx.HTTPError: the request failed on the way (the caller decides what follows).
            TimeoutError: ``within`` seconds passed first.
        """
        client = self._require_client()
        # httpx's timeout bounds each read; this bounds the whole request.
        async with asyncio.timeout(within):
            return await client.post(_ENDPOINT, json=payload)

    def _content(self, response: httpx.Response) -> str:
        """Return the first choice's text of a completion, or raise :attr:`error`."""
        try:
            data: Any = response.json()
        except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise self.error("malformed response: not JSON") from exc
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise self.error("malformed response: no choices[0].message.content") from exc
        if not isinstance(content, str) or not content.strip():
            raise self.error("malformed response: empty content")
        return content.strip()

    def _redact(self, text: str) -> str:
        """Return ``text`` with the API key replaced by ``[redacted]``."""
        return text.replace(self._api_key, "[redacted]") if self._api_key else text


def describe(exc: BaseException) -> str:
    """Return ``"ExcType: message"`` (or just the type when the message is empty) for logs."""
    return type(exc).__name__ + (f": {exc}" if str(exc) else "")
