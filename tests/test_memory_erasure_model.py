"""Model-based property test of long-term memory (issue 16, point 4): random sequences of
statements, ``/new``, ``/forget``, ``/facts forget`` and restarts, each step checked against a
small reference model of what the bot must remember, and the disk searched for what it must
have erased.

The reference model is a list of statements (session, slot, value, order). What is current is
read from the statements still standing: the latest of a one-value slot, every value of a
many-value one. ``/forget`` of a session takes its statements away; ``/facts forget`` takes
every statement of the memory's slot away. Nothing else about the store's mechanics (sources,
supersede links, restore triggers) is in the model.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from agent.chat.commands import CommandCenter
from agent.db import Database
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage
from agent.memory.longterm.memory_slots import fact_key, slot_of
from tests.hostile import every_table_text, files_containing

CHAT = 31
# Made-up words: no stemmer or tokenizer changes them, and no other text holds them.
VALUES = {
    "name": ("Zorblax", "Quintov"),  # one value at a time: superseded
    "location": ("Plumbrik", "Vexhavn"),
    "likes": ("skradlux", "fennimox"),  # many values: side by side
}
SAY = {
    "name": "my name is {}",
    "location": "I live in {}",
    "likes": "I like {}",
}


@dataclass
class Statement:
    session: int
    attribute: str
    value: str
    order: int
    standing: bool = True

    @property
    def key(self) -> str:
        return fact_key("user", self.attribute, self.value)

    @property
    def word(self) -> str:
        return self.value.split()[-1].lower()


class LongTermMemory(RuleBasedStateMachine):
    """The bot's long-term memory of one private chat against the reference model."""

    @initialize()
    def open(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.root = Path(tempfile.mkdtemp(prefix="memory-model-"))
        self.lane = self._run(self._open_lane())
        self.updates = 0
        self.statements: list[Statement] = []
        self.session = 0  # the reference's number of the chat's open session
        self.talked: set[int] = set()  # sessions with at least one turn
        self.erased: set[int] = set()

    def teardown(self) -> None:
        if hasattr(self, "lane"):
            self._run(self.lane.shutdown())
            self.loop.close()
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, coroutine):
        return self.loop.run_until_complete(coroutine)

    async def _open_lane(self) -> ConversationLane:
        self.db = await Database(self.root / "memory.db").open()
        lane = ConversationLane(self.db, CheckpointWriter(self.root / "checkpoints"))
        await lane.hydrate()
        return lane

    # -- what the user does -------------------------------------------------------------------

    @rule(attribute=st.sampled_from(sorted(VALUES)), data=st.data())
    def say(self, attribute: str, data: st.DataObject) -> None:
        value = data.draw(st.sampled_from(VALUES[attribute]))
        self.updates += 1
        message = InboundMessage(
            chat_id=CHAT, text=SAY[attribute].format(value), update_id=self.updates
        )
        self._run(self.lane.on_turn(message, RuleBasedConcierge()))
        self.statements.append(Statement(self.session, attribute, value, self.updates))
        self.talked.add(self.session)

    @rule()
    def new(self) -> None:
        self._run(CommandCenter(self.lane, self.db).run(CHAT, "new"))
        if self.session in self.talked:
            self.session += 1

    @rule()
    def forget(self) -> None:
        sid = self.lane.session_id_for_chat(CHAT)
        if sid is None:
            return
        assert self._run(self.lane.forget_session(sid))
        for statement in self.statements:
            if statement.session == self.session:
                statement.standing = False
        self.erased.add(self.session)
        self.session += 1
        self._check_erased_sessions_left_nothing()

    @rule(data=st.data())
    def facts_forget(self, data: st.DataObject) -> None:
        current = self._run(self.lane.inspector.facts(CHAT))
        if not current:
            return
        number = data.draw(st.integers(1, len(current)))
        erased = self._listed(current)[number - 1]
        reply = self._run(CommandCenter(self.lane, self.db).run(CHAT, "facts", f"forget {number}"))
        assert reply.text.startswith("Forgotten")
        for statement in self.statements:
            if slot_of(statement.key) == erased.key:
                statement.standing = False
        self._check_forgotten_memories_left_no_index()

    @rule()
    def restart(self) -> None:
        self._run(self.lane.shutdown())
        self.lane = self._run(self._open_lane())

    # -- what must hold -----------------------------------------------------------------------

    @invariant()
    def the_bots_facts_are_the_models(self) -> None:
        if not hasattr(self, "lane"):
            return
        remembered = {m.key: m.text for m in self._run(self.lane.inspector.facts(CHAT))}
        assert remembered == self._expected()

    def _expected(self) -> dict[str, str]:
        expected: dict[str, str] = {}
        for statement in sorted(self.statements, key=lambda s: s.order):
            if statement.standing:
                expected[statement.key] = statement.value  # the latest of a slot wins
        return expected

    def _listed(self, current):
        # /facts numbers what it lists in its own order: take the same order from its text.
        text = self._run(CommandCenter(self.lane, self.db).run(CHAT, "facts")).text
        order = []
        for line in text.splitlines():
            head, _, rest = line.partition(". ")
            if head.isdigit():
                order.append(next(m for m in current if m.text.lower() in rest.lower()))
        return order

    def _check_erased_sessions_left_nothing(self) -> None:
        standing = {s.word for s in self.statements if s.session not in self.erased}
        gone = {s.word for s in self.statements if s.session in self.erased} - standing
        if not gone:
            return
        tables = self._run(every_table_text(self.db))
        assert [(t, w) for t, text in tables.items() for w in gone if w in text] == []
        needles = [w.encode() for w in gone] + [w[-5:].encode() for w in gone]
        assert files_containing(self.root, *needles) == []

    def _check_forgotten_memories_left_no_index(self) -> None:
        kept = {s.word for s in self.statements if s.standing}
        gone = {s.word for s in self.statements if not s.standing} - kept
        tables = self._run(every_table_text(self.db))
        memory_tables = {t: x for t, x in tables.items() if t.startswith("memor")}
        # The index stores words prefix-compressed: their ends are searched for too.
        needles = {w for w in gone} | {w[-5:] for w in gone}
        assert [(t, w) for t, text in memory_tables.items() for w in needles if w in text] == []


LongTermMemory.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_long_term_memory_matches_the_reference_model = LongTermMemory.TestCase
