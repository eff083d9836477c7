"""The optional LLM summarizer: an OpenAI-compatible chat-completions model writes summaries.

It implements :class:`agent.memory.ModelSummarizer` and is run by
:class:`agent.memory.SummaryWorker` in the background, once per extractive summary version,
through the same endpoint settings as the LLM concierge (``AGENT_LLM_BASE_URL``,
``AGENT_LLM_MODEL``, ``AGENT_LLM_API_KEY``) when ``AGENT_LLM_SUMMARIZER`` is on. The model gets
the extractive rolling summary of the version and the raw turns it adds, and is asked for an
updated summary within a size limit. Its summary is offered to the reply engine beside the
extractive one (``ConversationContextPacket.llm_session_summary``) and never changes the
session state (I6); see :mod:`agent.memory.summaries.summary_worker`.

One attempt per version, bounded by ``timeout``: a failure (timeout, refused connection,
non-2xx, malformed answer) raises :class:`~agent.errors.SummarizerError`, the worker marks the
version's model summary ``failed``, and the extractive summary stays in use: there is no retry
storm behind a broken endpoint, and the next version tries again. The API key is sent only in
the ``Authorization`` header and redacted from every error text.
"""

from __future__ import annotations

import logging

import httpx

from agent.engines.llm_client import ChatCompletionsClient, describe
from agent.errors import SummarizerError
from agent.memory.rules.dialogue_acts import is_help_or_error
from agent.memory.summaries.summary_worker import SummaryRequest

__all__ = ["OpenAICompatSummarizer"]

logger = logging.getLogger(__name__)

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
        if turn.assistant_text and not is_help_or_error(turn.intent):  # not conversation
            lines.append(f"#{turn.seq} assistant: {turn.assistant_text[:_TURN_CHARS]}")
    return "\n".join(lines)


class OpenAICompatSummarizer(ChatCompletionsClient):
    """Summarises with a chat-completions model (OpenAI, Ollama, llama.cpp, vLLM).

    Use it as ``async with`` or call :meth:`initialize` and :meth:`shutdown` (the
    :class:`~agent.memory.SummaryWorker` does); it owns one ``httpx.AsyncClient`` (see
    :class:`~agent.engines.llm_client.ChatCompletionsClient`).

    Its arguments are those of :class:`~agent.engines.llm_client.ChatCompletionsClient`.
    """

    error = SummarizerError
    role = "LLM summarizer"

    async def summarize(self, request: SummaryRequest) -> str:
        """Return the model's summary of one version.

        Raises:
            RuntimeError: the summarizer is not initialized.
            SummarizerError: the endpoint failed or answered something unusable.
        """
        self._require_client()
        payload = self._payload(
            _INSTRUCTIONS.format(max_chars=request.max_chars), _prompt(request), _TEMPERATURE
        )
        try:
            response = await self._post(payload, self.timeout)
        except (httpx.HTTPError, TimeoutError) as exc:
            raise SummarizerError(self._redact(describe(exc))) from None
        if not response.is_success:
            raise SummarizerError(f"HTTP {response.status_code}")
        return self._content(response)
