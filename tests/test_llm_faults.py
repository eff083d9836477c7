"""Slow or failing LLM endpoint (issue 6): the offline concierge answers, within the deadline.

:class:`~tests.fake_llm_api.FakeLLMApi` serves chat completions over real HTTP and answers the
messages that name someone with a fault: it hangs (never answers in time), answers 500, or
drops the connection. The tests drive a real :class:`~agent.memory.ConversationLane` with the
:class:`~agent.engines.llm.OpenAICompatConcierge` the settings build, and the real bot
(``run_bot.py`` in a subprocess) against the fake Bot API. The unit rules of the concierge
(retries, ``Retry-After``, malformed answers) are in ``test_llm.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from agent.app.wiring import open_concierge
from agent.config import Settings
from agent.engines.llm import OpenAICompatConcierge
from agent.memory import ConversationLane, InboundMessage
from tests.bot_harness import ANSWER_TIMEOUT, db_rows
from tests.fake_llm_api import Answer, FakeLLMApi

#: AGENT_LLM_TIMEOUT of these tests: seconds one request to the model may take. A hanging
#: model holds a reply for 3 of them plus two back-offs (0.5 s, 1 s): 7.5 s.
LLM_TIMEOUT = "2"
#: The messages the fake model fails on, by name in them: hangs past any timeout, 500, drop.
FAULTS = {
    "Hana": Answer(delay=60.0),
    "Bodo": Answer(status=500, body=b'{"error": "overloaded"}'),
    "Dora": Answer(drop=True),
}
MODEL_TEXT = "hello from the model"
#: The offline concierge's intent for "my name is ..." (the model's replies have "llm").
OFFLINE_INTENT = "state_fact"


@pytest.fixture
def llm() -> Iterator[FakeLLMApi]:
    """The fake model: fails on the names of :data:`FAULTS`, else says :data:`MODEL_TEXT`."""
    with FakeLLMApi(MODEL_TEXT) as fake:
        for name, answer in FAULTS.items():
            fake.when(name, answer)
        yield fake


def llm_env(llm: FakeLLMApi) -> dict[str, str]:
    """The variables that point a bot at the fake model."""
    return {
        "AGENT_LLM_BASE_URL": llm.base_url,
        "AGENT_LLM_MODEL": "test-model",
        "AGENT_LLM_TIMEOUT": LLM_TIMEOUT,
    }


async def concierge_of(env: dict[str, str], stack: AsyncExitStack) -> OpenAICompatConcierge:
    """The concierge a bot with these variables builds (the entry point's own wiring)."""
    concierge = await open_concierge(Settings(_env_file=None, **env), stack)
    assert isinstance(concierge, OpenAICompatConcierge)
    return concierge


def deadline_of(env: dict[str, str]) -> float:
    """Seconds the settings give the model before the offline concierge answers."""

    async def build() -> float:
        async with AsyncExitStack() as stack:
            return (await concierge_of(env, stack)).deadline

    return asyncio.run(build())


def model_requests(llm: FakeLLMApi, name: str) -> int:
    """How many requests carried a user message naming ``name``."""
    return sum(name in request.body["messages"][-1]["content"] for request in llm.requests)


def test_the_settings_bound_the_wait_for_a_failing_model(llm):
    """The deadline is 1 + 2 retries of AGENT_LLM_TIMEOUT plus at most two back-offs of 8 s:
    22 s for a 2 s timeout, 76 s for the default 20 s."""
    assert deadline_of(llm_env(llm)) == 3 * 2 + 2 * 8
    assert deadline_of({**llm_env(llm), "AGENT_LLM_TIMEOUT": "20"}) == 76


async def test_a_failing_model_leaves_one_turn_with_the_offline_reply(
    llm, lane: ConversationLane
):
    """Through the lane: a model that hangs, answers 500 or drops the connection is asked
    three times (1 + 2 retries), then the offline concierge's reply is committed as the turn,
    once; the update delivered again is the same turn and does not ask the model again."""
    async with AsyncExitStack() as stack:
        concierge = await concierge_of(llm_env(llm), stack)
        for chat, name in enumerate(FAULTS, start=1):
            message = InboundMessage(
                chat_id=chat, text=f"my name is {name}", user_id=chat, update_id=chat
            )
            async with asyncio.timeout(concierge.deadline + ANSWER_TIMEOUT):
                result = await lane.on_turn(message, concierge)
            assert (result.turn.assistant_text, result.turn.intent) == (
                f"Nice to meet you, {name}.",
                OFFLINE_INTENT,
            )
            assert model_requests(llm, name) == 3, name
            again = await lane.on_turn(message, concierge)
            assert again.duplicate
            assert again.turn.turn_id == result.turn.turn_id
            assert model_requests(llm, name) == 3, name
            history = await lane.inspector.history(chat, 10)
            assert [t.turn_id for t in history] == [result.turn.turn_id]
        answered = await lane.on_turn(
            InboundMessage(chat_id=9, text="how are you?", user_id=9, update_id=9), concierge
        )
    assert (answered.turn.assistant_text, answered.turn.intent) == (MODEL_TEXT, "llm")


def test_the_real_bot_answers_offline_when_the_model_hangs_fails_or_drops(
    llm, api, chats, polling_bot, tmp_path
):
    """End to end: each chat whose message the model fails on (hang, 500, dropped
    connection) gets the offline concierge's answer within the deadline the settings give;
    its turn is recorded once, with the offline intent. A chat the model answers meanwhile is
    not held up by the hanging one."""
    env = llm_env(llm)
    deadline = deadline_of(env)
    bot = polling_bot(**env)
    _, hana = chats.send(801, "my name is Hana")
    api.wait_for(lambda _: model_requests(llm, "Hana") >= 1, ANSWER_TIMEOUT, "model not asked")
    healthy = chats.ask(804, "how are you?")  # while the model hangs on chat 801
    assert healthy.text == MODEL_TEXT
    assert chats.answers_to(801, hana) == []
    chats.send(802, "my name is Bodo")
    chats.send(803, "my name is Dora")
    answers = {
        chat: chats.wait_for_message(chat, name, timeout=deadline + ANSWER_TIMEOUT)
        for chat, name in zip((801, 802, 803), FAULTS, strict=True)
    }
    bot.stop()

    db = tmp_path / "memory.db"
    for (chat, answer), name in zip(answers.items(), FAULTS, strict=True):
        assert answer.text == f"Nice to meet you, {name}."
        assert model_requests(llm, name) == 3, name
        assert _turns(db, chat) == [(f"my name is {name}", answer.text, OFFLINE_INTENT)]
    assert _turns(db, 804) == [("how are you?", MODEL_TEXT, "llm")]
    assert len(api.sent_messages()) == 4
    assert "Traceback" not in bot.stderr


def _turns(db: Path, chat_id: int) -> list[tuple[str, str, str]]:
    """(user_text, assistant_text, intent) of the chat's turns, in order."""
    return db_rows(
        db,
        "SELECT t.user_text, t.assistant_text, t.intent FROM conversation_turns t"
        " JOIN conversation_sessions s USING (session_id) WHERE s.chat_id = ? ORDER BY t.seq",
        (chat_id,),
    )
