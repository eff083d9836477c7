"""Tests of :class:`OpenAICompatSummarizer` against a local fake endpoint, over real HTTP."""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import pytest

from agent.engines.llm_summarizer import OpenAICompatSummarizer
from agent.errors import SummarizerError
from agent.memory import ConversationTurn
from agent.memory.summaries.summary_worker import SummaryRequest
from tests.fake_llm_api import Answer, FakeLLMApi, completion

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2


def request(**fields: object) -> SummaryRequest:
    turns = (
        ConversationTurn(
            turn_id="trn_" + "1" * 32,
            session_id=SID,
            seq=8,
            user_text="We agreed on Friday. " + "x" * 3000,
            assistant_text="Great, Friday it is.",
            speaker="Ada",
            created_at=T0,
        ),
    )
    values: dict[str, object] = {
        "session_id": SID,
        "version": 2,
        "from_seq": 8,
        "to_seq": 8,
        "extractive_summary": "[turns 8-8]\n#8 Ada [decision]: We agreed on Friday",
        "turns": turns,
        "max_chars": 500,
    }
    values.update(fields)
    return SummaryRequest(**values)  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_the_request_carries_the_summary_and_the_turns_and_the_answer_comes_back():
    """One chat-completions request: the extractive summary and the version's turns (each cut
    to 1,000 characters) in the prompt, the size limit in the instructions, the key in the
    header only; the answer's text, stripped, is the summary."""
    with FakeLLMApi("  Ada and Bo meet on Friday.  ") as api:
        async with OpenAICompatSummarizer(api.base_url, "tiny", "sk-secret") as model:
            text = await model.summarize(request())

    assert text == "Ada and Bo meet on Friday."
    (sent,) = api.requests
    assert sent.headers["authorization"] == "Bearer sk-secret"
    system, user = sent.body["messages"]
    assert "at most 500 characters" in system["content"]
    assert user["content"].startswith("Current summary:\n[turns 8-8]\n#8 Ada [decision]")
    assert "Latest messages (turns 8-8):" in user["content"]
    assert "#8 assistant: Great, Friday it is." in user["content"]
    said = next(line for line in user["content"].splitlines() if line.startswith("#8 Ada: "))
    assert len(said) == len("#8 Ada: ") + 1000
    assert "sk-secret" not in str(sent.body)


async def test_no_key_sends_no_authorization_header():
    """Without an API key no ``Authorization`` header is sent (local endpoints need none)."""
    with FakeLLMApi() as api:
        async with OpenAICompatSummarizer(api.base_url + "/", "tiny", None) as model:
            await model.summarize(request(extractive_summary=""))

    (sent,) = api.requests
    assert "authorization" not in sent.headers
    assert "(none yet)" in sent.body["messages"][1]["content"]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (Answer(status=503), "HTTP 503"),
        (Answer(status=401), "HTTP 401"),
        (Answer(body=b"<html>"), "not JSON"),
        (Answer(body={"choices": []}), "no choices"),
        (Answer(body=completion("")), "empty content"),
    ],
)
async def test_a_bad_answer_is_a_summarizer_error(answer, error):
    """A non-2xx status or an unusable body raises SummarizerError (no retry: the next
    version tries again)."""
    with FakeLLMApi() as api:
        api.script(answer)
        async with OpenAICompatSummarizer(api.base_url, "tiny", None) as model:
            with pytest.raises(SummarizerError, match=error):
                await model.summarize(request())
        assert len(api.requests) == 1


async def test_a_slow_endpoint_times_out():
    """A request slower than ``timeout`` raises SummarizerError in about that time."""
    with FakeLLMApi() as api:
        api.script(Answer(delay=5))
        async with OpenAICompatSummarizer(api.base_url, "tiny", None, timeout=0.2) as model:
            with pytest.raises(SummarizerError, match="Timeout"):
                await model.summarize(request())


async def test_a_refused_connection_is_a_summarizer_error_without_the_key():
    """A refused connection raises SummarizerError, and the key never shows in its text."""
    url = f"http://sk-secret@127.0.0.1:{free_port()}/v1"
    async with OpenAICompatSummarizer(url, "tiny", "sk-secret", timeout=2) as model:
        with pytest.raises(SummarizerError) as caught:
            await model.summarize(request())

    assert "sk-secret" not in str(caught.value)


async def test_misuse_is_a_builtin_error_with_a_fix():
    """Summarising before ``initialize`` is a RuntimeError saying so; a bad timeout a
    ValueError."""
    model = OpenAICompatSummarizer("http://127.0.0.1:9/v1", "tiny", None)
    with pytest.raises(RuntimeError, match="await initialize"):
        await model.summarize(request())
    with pytest.raises(ValueError, match="timeout must be positive"):
        OpenAICompatSummarizer("http://127.0.0.1:9/v1", "tiny", None, timeout=0)
    await model.shutdown()  # idempotent, never opened
