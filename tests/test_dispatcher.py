"""Tests of the per-chat work queue: in order within a chat, concurrent across chats.

Concurrency is made observable with ``asyncio.Event`` gates, never with timings; the
``asyncio.wait_for`` limits only turn a hang into a failure.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent.chat.dispatcher import ChatDispatcher

# Only a guard against hangs: every wait below ends as soon as its event happens.
HANG = 10.0


async def let_run() -> None:
    """Give every ready task many chances to run (a task that could start, starts)."""
    for _ in range(20):
        await asyncio.sleep(0)


class Recorder:
    """A handler that logs each item's start and end and holds it until its gate opens."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, object]] = []
        self.gates: dict[object, asyncio.Event] = {}
        self.running = 0
        self.max_running = 0

    def gate(self, item: object) -> asyncio.Event:
        return self.gates.setdefault(item, asyncio.Event())

    async def __call__(self, key: str, item: object) -> None:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.events.append(("start", key, item))
        try:
            await self.gate(item).wait()
        finally:
            self.running -= 1
        self.events.append(("end", key, item))

    def started(self, key: str | None = None) -> list[object]:
        return [i for e, k, i in self.events if e == "start" and key in (None, k)]

    def ended(self, key: str | None = None) -> list[object]:
        return [i for e, k, i in self.events if e == "end" and key in (None, k)]


async def test_items_of_one_key_run_strictly_in_order() -> None:
    """A chat's items run one at a time, in submission order, even if later ones are ready."""
    handle = Recorder()
    dispatcher: ChatDispatcher[str, int] = ChatDispatcher(handle)
    for item in range(4):
        dispatcher.submit("a", item)
    for item in (3, 2, 1):  # the later items could finish at once, if they were started
        handle.gate(item).set()
    await let_run()
    assert handle.started() == [0]
    assert dispatcher.busy_chats == 1
    handle.gate(0).set()
    await asyncio.wait_for(dispatcher.join(), HANG)
    assert handle.events == [(edge, "a", item) for item in range(4) for edge in ("start", "end")]
    assert handle.max_running == 1
    assert dispatcher.busy_chats == 0


async def test_different_keys_run_concurrently() -> None:
    """Two chats whose handlers each wait for the other to start can only finish together."""
    a_started, b_started = asyncio.Event(), asyncio.Event()
    done: list[str] = []

    async def handle(key: str, item: str) -> None:
        mine, other = (a_started, b_started) if key == "a" else (b_started, a_started)
        mine.set()
        await other.wait()  # never returns if the chats ran one after the other
        done.append(item)

    dispatcher: ChatDispatcher[str, str] = ChatDispatcher(handle)
    dispatcher.submit("a", "a1")
    dispatcher.submit("b", "b1")
    await asyncio.wait_for(dispatcher.join(), HANG)
    assert sorted(done) == ["a1", "b1"]


async def test_a_failing_item_is_logged_and_its_chat_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An exception in one item is logged with its traceback; the chat's next items run."""
    handled: list[tuple[str, int]] = []

    async def handle(key: str, item: int) -> None:
        if item == 1:
            raise ValueError("poison item")
        handled.append((key, item))

    dispatcher: ChatDispatcher[str, int] = ChatDispatcher(handle)
    with caplog.at_level(logging.ERROR, logger="agent.chat.dispatcher"):
        for item in range(3):
            dispatcher.submit("a", item)
        dispatcher.submit("b", 7)
        await asyncio.wait_for(dispatcher.join(), HANG)
    assert sorted(handled) == [("a", 0), ("a", 2), ("b", 7)]
    assert [i for k, i in handled if k == "a"] == [0, 2]
    failures = [r for r in caplog.records if r.exc_info is not None]
    assert len(failures) == 1
    assert "chat a" in failures[0].getMessage()
    assert isinstance(failures[0].exc_info[1], ValueError)  # type: ignore[index]
    # The chat is free again: new work for it runs.
    dispatcher.submit("a", 3)
    await asyncio.wait_for(dispatcher.join(), HANG)
    assert handled[-1] == ("a", 3)


async def test_join_waits_for_every_item_of_every_chat() -> None:
    """join() returns only once all queued items of all chats have been handled."""
    handle = Recorder()
    dispatcher: ChatDispatcher[str, str] = ChatDispatcher(handle)
    for key in ("a", "b", "c"):
        for n in (1, 2):
            dispatcher.submit(key, f"{key}{n}")
    joined = asyncio.create_task(dispatcher.join())
    for item in ("a1", "a2", "b1", "b2", "c1"):
        handle.gate(item).set()
        await let_run()
        assert not joined.done(), f"join() returned with {item!r} handled, c2 still waiting"
    assert dispatcher.busy_chats == 1
    handle.gate("c2").set()
    await asyncio.wait_for(joined, HANG)
    assert sorted(handle.ended()) == ["a1", "a2", "b1", "b2", "c1", "c2"]
    assert dispatcher.busy_chats == 0


async def test_join_on_an_idle_dispatcher_returns_at_once() -> None:
    """With nothing queued, join() does not wait."""
    dispatcher: ChatDispatcher[str, str] = ChatDispatcher(Recorder())
    await asyncio.wait_for(dispatcher.join(), HANG)


async def test_shutdown_finishes_queued_work_then_rejects_new_work() -> None:
    """shutdown() lets queued items finish; submit() afterwards (and during) raises a
    RuntimeError that says the dispatcher is shut down."""
    handle = Recorder()
    dispatcher: ChatDispatcher[str, str] = ChatDispatcher(handle)
    dispatcher.submit("a", "a1")
    dispatcher.submit("a", "a2")
    stopping = asyncio.create_task(dispatcher.shutdown())
    await let_run()
    assert not stopping.done()
    with pytest.raises(RuntimeError, match="shut down"):
        dispatcher.submit("a", "late, same chat")
    with pytest.raises(RuntimeError, match="shut down"):
        dispatcher.submit("b", "late, new chat")
    handle.gate("a1").set()
    handle.gate("a2").set()
    await asyncio.wait_for(stopping, HANG)
    assert handle.ended() == ["a1", "a2"]
    with pytest.raises(RuntimeError, match="no new work"):
        dispatcher.submit("a", "after")
    await asyncio.wait_for(dispatcher.shutdown(), HANG)  # idempotent


@pytest.mark.parametrize("cap", [1, 2])
async def test_max_concurrent_caps_the_chats_running_at_once(cap: int) -> None:
    """No more than ``max_concurrent`` chats run at once; the others wait their turn."""
    handle = Recorder()
    dispatcher: ChatDispatcher[str, str] = ChatDispatcher(handle, max_concurrent=cap)
    keys = ["a", "b", "c", "d"]
    for key in keys:
        dispatcher.submit(key, key)
    await let_run()
    assert handle.running == cap
    assert dispatcher.busy_chats == len(keys)
    for key in keys:
        handle.gate(key).set()
    await asyncio.wait_for(dispatcher.join(), HANG)
    assert handle.max_running == cap
    assert sorted(handle.ended()) == keys


async def test_past_the_cap_busy_chats_take_turns() -> None:
    """A chat whose queue never empties does not keep its slot: the chats waiting for one get
    it in turn, one item each, first come first served. (A worker holding its slot until its
    queue emptied left chats unanswered for minutes in the 1,000-chat throughput bench: the
    first 256 chats, each with its next message always queued, kept every slot.)"""
    handled: list[tuple[str, int]] = []
    last = 20

    async def handle(key: str, item: int) -> None:
        handled.append((key, item))
        await asyncio.sleep(0)
        if key in ("a", "b") and item < last:
            dispatcher.submit(key, item + 1)  # its next message is always queued

    dispatcher: ChatDispatcher[str, int] = ChatDispatcher(handle, max_concurrent=2)
    for key in "abcd":  # a and b take the two slots (their workers run first); c, d wait
        dispatcher.submit(key, 0)
    await asyncio.wait_for(dispatcher.join(), HANG)
    assert handled[:2] == [("a", 0), ("b", 0)]
    # c and d waited for one item of a and one of b, not for all of them.
    assert handled[2:4] == [("c", 0), ("d", 0)]
    assert [i for k, i in handled if k == "a"] == list(range(last + 1))
    assert [i for k, i in handled if k == "b"] == list(range(last + 1))
