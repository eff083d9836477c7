"""OpenAICompatConcierge against a fake chat-completions server over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from agent.engines.llm import OpenAICompatConcierge
from agent.memory import (
    ConversationContextPacket,
    ConversationTurn,
    InboundMessage,
    Reply,
    SessionState,
    render_packet,
)
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.schemas import Fact
from tests.fake_llm_api import Answer, FakeLLMApi, completion

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
API_KEY = "sk-test-secret-4242"
LOGGER = "agent.engines.llm"


class FixedEngine:
    """The offline fallback of these tests: always the same reply, counting its calls."""

    def __init__(self, intent: str = "unknown") -> None:
        self.intent = intent
        self.calls = 0

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        self.calls += 1
        return Reply(text="offline", intent=self.intent)


def ten_turn_packet() -> ConversationContextPacket:
    """A packet of a 10-turn session that carries only the last 3 turns verbatim."""
    turns = [
        ConversationTurn(
            turn_id=f"t{i}",
            session_id="s1",
            seq=i,
            created_at=NOW,
            user_text=f"message {i} mentions word{i:02d}x",
            assistant_text=f"noted {i}",
        )
        for i in range(1, 11)
    ]
    state = SessionState(
        session_id="s1", turn_count=10, facts=(Fact(key="name", value="Ada", turn=1),)
    )
    return ConversationContextBuilder(recent_turns=3).build(state, turns, now=NOW)


MESSAGE = InboundMessage(chat_id=1, text="what is my name?", user_id=7)


@pytest.fixture
def api() -> Iterator[FakeLLMApi]:
    with FakeLLMApi() as server:
        yield server


def concierge(
    base_url: str, fallback: FixedEngine | None = None, **kwargs
) -> OpenAICompatConcierge:
    options = {"timeout": 5.0, "retries": 2, "backoff": 0.01, "max_backoff": 2.0, **kwargs}
    api_key = options.pop("api_key", None)
    return OpenAICompatConcierge(
        base_url, "test-model", api_key, fallback=fallback or FixedEngine(), **options
    )


async def test_reply_is_the_models_text_and_the_prompt_carries_only_the_packet(api):
    """The model's stripped text is the reply; the system prompt is the packet, not the log."""
    api.script(Answer(body=completion("  Your name is Ada.\n")))
    packet = ten_turn_packet()
    async with concierge(api.base_url) as llm:
        reply = await llm.reply(packet, MESSAGE)
    assert reply == Reply(text="Your name is Ada.", intent="llm", action_name=None)
    [request] = api.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model"
    assert request.body["temperature"] == 0.3
    system, user = request.body["messages"]
    assert (system["role"], user) == ("system", {"role": "user", "content": "what is my name?"})
    assert render_packet(packet) in system["content"]
    assert "name: Ada" in system["content"]
    assert all(f"word{i:02d}x" in system["content"] for i in (8, 9, 10))
    assert not any(f"word{i:02d}x" in system["content"] for i in range(1, 8))


@pytest.mark.parametrize(
    ("api_key", "expected"), [(None, None), ("", None), (API_KEY, f"Bearer {API_KEY}")]
)
async def test_authorization_header_is_sent_only_with_an_api_key(api, api_key, expected):
    """``Authorization: Bearer <key>`` goes out only when a key is configured."""
    async with concierge(api.base_url, api_key=api_key) as llm:
        await llm.reply(ten_turn_packet(), MESSAGE)
    assert api.requests[0].headers.get("authorization") == expected


@pytest.mark.parametrize("suffix", ["", "/"])
async def test_base_url_with_or_without_trailing_slash_hits_chat_completions(api, suffix):
    """``{base_url}/chat/completions`` is joined without losing or doubling a path segment."""
    async with concierge(api.base_url + suffix) as llm:
        assert (await llm.reply(ten_turn_packet(), MESSAGE)).text == "hello from the model"
    assert [r.path for r in api.requests] == ["/v1/chat/completions"]


async def test_server_error_then_success_is_retried(api):
    """A 500 is retried, and the next attempt's answer is the reply."""
    api.script(Answer(status=500, body=b"boom"), Answer(body=completion("second time lucky")))
    async with concierge(api.base_url) as llm:
        reply = await llm.reply(ten_turn_packet(), MESSAGE)
    assert (reply.text, reply.intent) == ("second time lucky", "llm")
    assert len(api.requests) == 2


async def test_persistent_server_error_falls_back_with_its_intent_and_no_secret_logged(api, caplog):
    """After 1 + retries failed attempts the fallback's reply (intent kept) is returned."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    api.script(*[Answer(status=503, body=b"down")] * 3)
    fallback = FixedEngine(intent="smalltalk")
    async with concierge(api.base_url, fallback, api_key=API_KEY) as llm:
        reply = await llm.reply(ten_turn_packet(), MESSAGE)
    assert reply == Reply(text="offline", intent="smalltalk")
    assert len(api.requests) == 3
    assert fallback.calls == 1  # asked once, before the model; its reply is reused
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "HTTP 503" in warnings[0]
    assert API_KEY not in caplog.text
    loud = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    assert "word09x" not in loud
    assert "what is my name" not in loud


async def test_timeout_falls_back_within_a_bounded_time(api):
    """A server slower than the timeout ends in the fallback, within the total deadline."""
    api.script(*[Answer(delay=5.0)] * 2)
    async with concierge(api.base_url, timeout=0.3, retries=1, max_backoff=0.1) as llm:
        started = time.monotonic()
        reply = await llm.reply(ten_turn_packet(), MESSAGE)
        elapsed = time.monotonic() - started
    assert reply.text == "offline"
    assert len(api.requests) == 2
    assert elapsed < 10 * 0.3


async def test_dropped_connections_are_retried_then_fall_back(api):
    """A server that closes the connection without answering is retried like a timeout, and
    after 1 + retries attempts the fallback answers."""
    api.script(*[Answer(drop=True)] * 3)
    async with concierge(api.base_url) as llm:
        reply = await llm.reply(ten_turn_packet(), MESSAGE)
    assert reply.text == "offline"
    assert len(api.requests) == 3


async def test_an_answer_trickling_in_past_the_timeout_falls_back(api):
    """An answer whose bytes arrive one by one, each well within the timeout but the whole far
    beyond it, is cut off at the timeout (it bounds the whole request, not each read)."""
    drip = 0.05
    api.script(Answer(drip=drip))
    async with concierge(api.base_url, timeout=0.5, retries=0) as llm:
        started = time.monotonic()
        reply = await llm.reply(ten_turn_packet(), MESSAGE)
        elapsed = time.monotonic() - started
    assert reply.text == "offline"
    whole = drip * len(json.dumps(completion("scripted")))  # the trickle's own length
    assert elapsed < whole / 2


async def test_connection_refused_falls_back():
    """An endpoint nobody listens on ends in the fallback, not in an exception."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with concierge(f"http://127.0.0.1:{port}/v1", retries=1) as llm:
        assert (await llm.reply(ten_turn_packet(), MESSAGE)).text == "offline"


async def test_429_retry_after_is_honoured(api):
    """A 429 is retried after the ``Retry-After`` seconds, not the (shorter) backoff."""
    api.script(Answer(status=429, body=b"{}", headers={"Retry-After": "1"}))
    async with concierge(api.base_url) as llm:
        started = time.monotonic()
        reply = await llm.reply(ten_turn_packet(), MESSAGE)
        elapsed = time.monotonic() - started
    assert reply.intent == "llm"
    assert len(api.requests) == 2
    assert elapsed >= 0.9


async def test_429_retry_after_is_capped(api):
    """A ``Retry-After`` beyond ``max_backoff`` waits only ``max_backoff``."""
    api.script(Answer(status=429, body=b"{}", headers={"Retry-After": "3600"}))
    async with concierge(api.base_url, max_backoff=0.2) as llm:
        started = time.monotonic()
        reply = await llm.reply(ten_turn_packet(), MESSAGE)
    assert reply.intent == "llm"
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    "body",
    [
        b"this is not json",
        {"choices": []},
        {"object": "chat.completion"},
        {"choices": [{"message": {"role": "assistant", "content": "   "}}]},
        {"choices": [{"message": {"role": "assistant", "content": None}}]},
    ],
    ids=["invalid-json", "no-choices", "no-choices-key", "blank-content", "null-content"],
)
async def test_malformed_response_falls_back_without_retrying(api, body):
    """A 200 without usable content is answered offline at once (no retry)."""
    api.script(Answer(body=body))
    async with concierge(api.base_url) as llm:
        reply = await llm.reply(ten_turn_packet(), MESSAGE)
    assert reply == Reply(text="offline", intent="unknown")
    assert len(api.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_client_error_other_than_429_is_not_retried(api, status):
    """A 4xx other than 429 falls back after one attempt."""
    api.script(Answer(status=status, body=b'{"error": "nope"}'))
    async with concierge(api.base_url) as llm:
        assert (await llm.reply(ten_turn_packet(), MESSAGE)).text == "offline"
    assert len(api.requests) == 1


@pytest.mark.parametrize(
    "intent", ["set_reminder", "cancel_reminder", "add_todo", "close_todo", "tell_time"]
)
async def test_delegate_intents_skip_the_model(api, intent):
    """A fallback reply with a delegated intent is returned; the model is never called."""
    async with concierge(api.base_url, FixedEngine(intent=intent)) as llm:
        reply = await llm.reply(ten_turn_packet(), MESSAGE)
    assert reply == Reply(text="offline", intent=intent)
    assert api.requests == []


async def test_empty_delegate_intents_asks_the_fallback_only_on_failure(api):
    """With no delegated intents the fallback is asked only when the model fails."""
    fallback = FixedEngine(intent="set_reminder")
    api.script(Answer(status=401, body=b"{}"))
    async with concierge(api.base_url, fallback, delegate_intents=frozenset()) as llm:
        assert (await llm.reply(ten_turn_packet(), MESSAGE)).intent == "set_reminder"
        assert fallback.calls == 1
        assert (await llm.reply(ten_turn_packet(), MESSAGE)).intent == "llm"
    assert fallback.calls == 1


async def test_lifecycle_is_idempotent_and_reply_needs_initialize(api):
    """initialize/shutdown may repeat; reply before initialize is a RuntimeError."""
    llm = concierge(api.base_url)
    with pytest.raises(RuntimeError, match="initialize"):
        await llm.reply(ten_turn_packet(), MESSAGE)
    await llm.initialize()
    await llm.initialize()
    assert (await llm.reply(ten_turn_packet(), MESSAGE)).intent == "llm"
    await llm.shutdown()
    await llm.shutdown()
    with pytest.raises(RuntimeError, match="initialize"):
        await llm.reply(ten_turn_packet(), MESSAGE)
