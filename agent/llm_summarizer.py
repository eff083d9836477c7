"""The optional LLM summarizer: an OpenAI-compatible chat-completions model writes summaries.

It implements :class:`agent.memory.ModelSummarizer` and is run by
:class:`agent.memory.SummaryWorker` in the background, once per extractive summary version,
through the same endpoint settings as the LLM concierge (``AGENT_LLM_BASE_URL``,
``AGENT_LLM_MODEL``, ``AGENT_LLM_API_KEY``) when ``AGENT_LLM_SUMMARIZER`` is on. The model gets
the extractive rolling summary of the version and the raw turns it adds, and is asked for an
updated summary within a size limit. Its summary is offered to the reply engine beside the
extractive one (``ConversationContextPacket.llm_session_summary``) and never changes the
session state (I6); see :mod:`agent.memory.summary_worker`.

One attempt per version, bounded by ``timeout``: a failure (timeout, refused connection,
non-2xx, malformed answer) raises :class:`~agent.errors.SummarizerError`, the worker marks the
version's model summary ``failed``, and the extractive summary stays in use: there is no retry
storm behind a broken endpoint, and the next version tries again. The API key is sent only in
the ``Authorization`` header and redacted from every error text.
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Any, Self

import httpx

from agent.errors import SummarizerError
from agent.memory import SummaryRequest

__all__ = ["OpenAICompatSummarizer"]

logger = logging.getLogger(__name__)

_ENDPOINT = "chat/completions"
_TEMPERATURE = 0.2
# The most characters of one message the prompt carries (a 4096-character message is cut).
_TURN_CHARS = 1000
_INSTRUCTIONS = (
    "You keep the running summary of a conversation. You get the current summary, made "
    "automatically (lines tagged [decision], [fact] and [open question] must be kept), and the "
    "latest messages. Write the updated summary: every decision, every fact about the people, "
    "every question still open, and the gist of what was discussed; drop small talk. Never "
    "invent anything. Use short plain sentences or bullet points, at most {max_chars} "
    "characters. Answer with the summary only."
)


def _prompt(request: SummaryRequest) -> str:
    lines = [
        "Current summary:",
        request.extractive_summary or "(none yet)",
        "",
        f"Latest messages (turns {request.from_seq}-{request.to_seq}):",
    ]
    for turn in request.turns:
        if turn.user_text.strip():
            lines.append(f"#{turn.seq} {turn.speaker or 'user'}: {turn.user_text[:_TURN_CHARS]}")
        if turn.assistant_text:
            lines.append(f"#{turn.seq} assistant: {turn.assistant_text[:_TURN_CHARS]}")
    return "\n".join(lines)


class OpenAICompatSummarizer:
    """Summarises with a chat-completions model (OpenAI, Ollama, llama.cpp, vLLM).

    Use it as ``async with`` or call :meth:`initialize` and :meth:`shutdown` (the
    :class:`~agent.memory.SummaryWorker` does); it owns one ``httpx.AsyncClient``.

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:11434/v1``.
        model: the model name sent with every request.
        api_key: sent as ``Authorization: Bearer``; ``None`` or empty sends no header.
        timeout: seconds one request may take.
        transport: an httpx transport to use instead of the network (proxies, tests).

    Raises:
        ValueError: a timeout that is not positive.
    """

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
        logger.info("LLM summarizer ready: model %s at %s", self.model, self.base_url)

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

    async def summarize(self, request: SummaryRequest) -> str:
        """Return the model's summary of one version.

        Raises:
            RuntimeError: the summarizer is not initialized.
            SummarizerError: the endpoint failed or answered something unusable.
        """
        if self._client is None:
            raise RuntimeError(
                "OpenAICompatSummarizer is not initialized; await initialize() or use async with"
            )
        payload = {
            "model": self.model,
            "messages": [
                {
                    "role": "system",
                    "content": _INSTRUCTIONS.format(max_chars=request.max_chars),
                },
                {"role": "user", "content": _prompt(request)},
            ],
            "temperature": _TEMPERATURE,
        }
        try:
            # httpx's timeout bounds each read; this bounds the whole request.
            async with asyncio.timeout(self.timeout):
                response = await self._client.post(_ENDPOINT, json=payload)
        except (httpx.HTTPError, TimeoutError) as exc:
            problem = type(exc).__name__ + (f": {exc}" if str(exc) else "")
            raise SummarizerError(self._redact(problem)) from None
        if not response.is_success:
            raise SummarizerError(f"HTTP {response.status_code}")
        return _content(response)

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key else text


def _content(response: httpx.Response) -> str:
    """Return the first choice's text of a completion, or raise ``SummarizerError``."""
    try:
        data: Any = response.json()
    except ValueError as exc:
        raise SummarizerError("malformed response: not JSON") from exc
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise SummarizerError("malformed response: no choices[0].message.content") from exc
    if not isinstance(content, str) or not content.strip():
        raise SummarizerError("malformed response: empty content")
    return content.strip()
