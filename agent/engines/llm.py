"""A reply engine backed by any OpenAI-compatible chat-completions endpoint.

OpenAI, Ollama, llama.cpp's server and vLLM all speak ``POST {base_url}/chat/completions``.
The model sees the rendered :class:`ConversationContextPacket` in its system prompt and the new
message as the user message: never the raw transcript, only what the packet carries.

In a group, the packet carries the member who writes (their previous position and key
contributions) and the group's decisions and undecided proposals. When an attempt timed out,
the retries send the brief context alone (:func:`~agent.memory.group_brief.render_brief`): a
prompt a slow model answers sooner, when it must decide quickly.

The model is an option, never a requirement (DESIGN.md section 1). Every failure of the
endpoint (timeouts, refused connections, 5xx, 429, malformed answers) ends in the offline
fallback engine's reply within a bounded time, so a turn is always answered. Actions with side
effects (reminders, to-dos) stay with the offline rules, so jobs and open loops stay
deterministic whatever the model says.

The API key is sent only in the ``Authorization`` header: it is never logged, and it is
redacted from any error text that is. The ``httpx`` logger logs request URLs at INFO; the entry
point raises it to WARNING (STYLE.md, logging).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from agent.engines.llm_client import ChatCompletionsClient, describe
from agent.errors import ReplyEngineError
from agent.memory import (
    ConversationContextPacket,
    InboundMessage,
    Reply,
    ReplyEngine,
    render_packet,
)
from agent.memory.group_brief import render_brief

__all__ = ["DEFAULT_DELEGATE_INTENTS", "OpenAICompatConcierge"]

logger = logging.getLogger(__name__)

#: Intents the offline rules own: their replies carry side effects (jobs, open loops, the
#: erasure of long-term memories), say that a reminder could not be set (a model must not
#: claim it was), or tell the time in the user's zone (a model has neither).
DEFAULT_DELEGATE_INTENTS: frozenset[str] = frozenset(
    {
        "set_reminder",
        "cancel_reminder",
        "add_todo",
        "close_todo",
        "reminder_unreadable",
        "ask_reminder_time",
        "forget_memory",
        "tell_time",
    }
)

_INSTRUCTIONS = (
    "You are a helpful Telegram assistant with memory of this conversation. "
    "The context below is what you remember of it: use it to answer. "
    "Be concise. If the context does not hold the answer, say so instead of guessing."
)
_BRIEF = "Time is short: the context is its brief (decisions, open proposals, last turns)."
_TEMPERATURE = 0.3
_RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))


class OpenAICompatConcierge(ChatCompletionsClient):
    """Answers with a chat-completions model; falls back to an offline engine on any failure.

    Each reply first asks ``fallback``: if its intent is one of ``delegate_intents``, that reply
    is returned and the model is not called. Otherwise the model is asked, with up to
    ``retries`` further attempts on timeouts, connection errors, 429 (honouring
    ``Retry-After`` up to ``max_backoff``) and 5xx, waiting ``backoff * 2**attempt`` between
    attempts (after a timeout, with the brief context of a group packet if it has one). A 4xx
    other than 429 is not retried. The whole sequence ends by
    ``timeout * (retries + 1) + max_backoff * retries`` seconds; after that, or on a malformed
    answer, the fallback's reply (with its intent) is returned.

    Use it as ``async with OpenAICompatConcierge(...) as concierge:`` or call
    :meth:`initialize` and :meth:`shutdown`; it owns one ``httpx.AsyncClient`` (see
    :class:`~agent.engines.llm_client.ChatCompletionsClient`).

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:11434/v1`` (a trailing ``/`` is fine).
        model: the model name sent with every request.
        api_key: sent as ``Authorization: Bearer``; ``None`` or empty sends no header.
        fallback: the offline engine answering when the model cannot.
        timeout: seconds one attempt may take.
        retries: further attempts after the first one fails in a retryable way.
        transport: an httpx transport to use instead of the network (tests, proxies).
        delegate_intents: fallback intents returned without asking the model.
        backoff: seconds before the first retry; doubled for each later one.
        max_backoff: the longest wait between two attempts, ``Retry-After`` included.

    Raises:
        ValueError: a negative or zero timing, or negative retries.
    """

    error = ReplyEngineError
    role = "LLM concierge"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        *,
        fallback: ReplyEngine,
        timeout: float = 20.0,
        retries: int = 2,
        transport: httpx.AsyncBaseTransport | None = None,
        delegate_intents: frozenset[str] = DEFAULT_DELEGATE_INTENTS,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
    ) -> None:
        if timeout <= 0 or retries < 0 or backoff < 0 or max_backoff < 0:
            raise ValueError("timeout must be positive; retries and backoffs not negative")
        super().__init__(base_url, model, api_key, timeout=timeout, transport=transport)
        self.fallback = fallback
        self.retries = retries
        self.delegate_intents = delegate_intents
        self.backoff = backoff
        self.max_backoff = max_backoff

    @property
    def deadline(self) -> float:
        """The most seconds one reply may spend on the endpoint before falling back."""
        return self.timeout * (self.retries + 1) + self.max_backoff * self.retries

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        """Answer ``message`` with the model, or with the fallback engine.

        Args:
            packet: the session's context; rendered into the system prompt.
            message: the new message; its text is the user message.

        Returns:
            ``Reply(text=..., intent="llm")`` from the model, else the fallback's reply.

        Raises:
            RuntimeError: the concierge is not initialized.
        """
        self._require_client()
        offline: Reply | None = None
        if self.delegate_intents:
            # The offline rules own actions with side effects: jobs and loops stay deterministic.
            offline = await self.fallback.reply(packet, message)
            if offline.intent in self.delegate_intents:
                logger.debug("intent %s handled by the offline rules", offline.intent)
                return offline
        try:
            text = await self._complete(
                self._prompt(packet, message), self._quick_prompt(packet, message)
            )
        except ReplyEngineError as exc:
            logger.warning("LLM endpoint failed, answering offline: %s", self._redact(str(exc)))
            return offline if offline is not None else await self.fallback.reply(packet, message)
        return Reply(text=text, intent="llm", action_name=None)

    def _prompt(self, packet: ConversationContextPacket, message: InboundMessage) -> dict[str, Any]:
        system = f"{_INSTRUCTIONS}\n\nContext:\n{render_packet(packet)}"
        logger.debug("asking %s: system prompt of %d characters", self.model, len(system))
        return self._payload(system, message.text, _TEMPERATURE)

    def _quick_prompt(
        self, packet: ConversationContextPacket, message: InboundMessage
    ) -> dict[str, Any] | None:
        """The prompt of the brief context, or ``None`` for a packet with no group state."""
        brief = render_brief(packet)
        if not brief:
            return None
        system = f"{_INSTRUCTIONS} {_BRIEF}\n\nContext:\n{brief}"
        return self._payload(system, message.text, _TEMPERATURE)

    async def _complete(self, payload: dict[str, Any], quick: dict[str, Any] | None) -> str:
        """Run the attempt sequence; return the model's text or raise ``ReplyEngineError``.

        After a timeout, the next attempts send ``quick`` (when there is one) instead.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deadline
        attempt = 0
        while True:
            remaining = deadline - loop.time()
            retry_after: float | None = None
            try:
                response = await self._post(payload, min(self.timeout, remaining))
            except (httpx.TransportError, TimeoutError) as exc:
                problem = describe(exc)
                if quick is not None and isinstance(exc, httpx.TimeoutException | TimeoutError):
                    payload = quick  # the model must decide quickly: the brief context only
            else:
                if response.is_success:
                    return self._content(response)
                problem = f"HTTP {response.status_code}"
                if response.status_code not in _RETRY_STATUSES:
                    raise ReplyEngineError(f"{problem}, not retried")
                retry_after = _retry_after(response)
            attempts = f"{attempt + 1} attempt{'s' if attempt else ''}"
            if attempt >= self.retries:
                raise ReplyEngineError(f"{problem} after {attempts}")
            wait = self.backoff * 2**attempt if retry_after is None else retry_after
            wait = min(wait, self.max_backoff)
            if loop.time() + wait >= deadline:
                raise ReplyEngineError(f"{problem}; deadline of {self.deadline:g}s reached")
            logger.debug("%s on attempt %d; retrying in %.2fs", problem, attempt + 1, wait)
            await asyncio.sleep(wait)
            attempt += 1


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds a 429/503 asks us to wait (delta-seconds or HTTP date), or ``None``."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)
