"""The word counts retrieval keeps between packets (word_frequencies.py), over a real file.

The counts must decide what fresh counts would (a word in at most the cap of turns, none
included, or in more) however turns are written between two packets, and must not be counted
again while nothing written could change that: the statements the reader runs are watched with
SQLite's trace callback.
"""

from __future__ import annotations

import random
from datetime import timedelta
from functools import partial
from typing import Any

from agent.db import Database
from agent.memory import ConversationTurn
from agent.memory.conversation_store import SqliteConversationStore
from agent.memory.storage.word_frequencies import WordFrequencies
from agent.utils import ids
from tests.clock import T0

CAP = 5
VOCABULARY = ["apple", "kayak", "lighthouse", "zeppelin", "walnut", "harbour"]


class Log:
    """Writes turns to one session of a real database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.store = SqliteConversationStore()
        self.session_id = ids.session_id()
        self.seq = 0

    async def say(self, *texts: str) -> None:
        async def work(tx: Any) -> None:
            if self.seq == 0:
                await self.store.create_session(
                    tx, session_id=self.session_id, chat_id=1, chat_type="private",
                    user_id=None, title=None, now=T0,
                )  # fmt: skip
            for text in texts:
                self.seq += 1
                await self.store.append_turn(
                    tx,
                    ConversationTurn(
                        turn_id=ids.turn_id(),
                        session_id=self.session_id,
                        seq=self.seq,
                        user_text=text,
                        created_at=T0 + timedelta(minutes=self.seq),
                        status="recorded",
                    ),
                )

        await self.db.write(work)


def _class(count: int) -> str:
    return "searchable" if count <= CAP else "common"


async def test_kept_counts_decide_as_fresh_counts_would_while_turns_are_written(db):
    """Between packets, turns saying random words are written (one, or a burst of many);
    after each, the kept counts put every word in the class a fresh count puts it in: in at
    most the cap of turns (none included), or in more."""
    log = Log(db)
    frequencies = WordFrequencies(log.store, cap=CAP)
    rng = random.Random(20261125)
    await log.say("the walk began")
    for _ in range(60):
        burst = rng.choice((0, 1, 1, 2, CAP + 3))
        await log.say(*(" ".join(rng.sample(VOCABULARY, 2)) for _ in range(burst)))
        asked = rng.sample(VOCABULARY, rng.randint(1, len(VOCABULARY)))
        kept = await db.read(partial(frequencies.counts, words=asked))
        fresh = (await db.read(partial(log.store.word_counts, words=asked, cap=CAP))).counts
        assert {w: _class(c) for w, c in kept.items()} == {w: _class(c) for w, c in fresh.items()}
    assert {_class(c) for c in kept.values()} == {"common"}  # the run got that far


async def test_a_common_word_is_counted_again_only_after_cap_more_turns(db):
    """Once a word is known to be in more turns than the cap, packets do not count it again
    until as many turns as the cap were written since (an erasure elsewhere may have made it
    rare); nor a word in no turn, which is searched for anyway, until it could be common."""
    log = Log(db)
    frequencies = WordFrequencies(log.store, cap=CAP)
    await log.say(*(["kayak trip"] * (CAP + 1)))
    statements: list[str] = []
    await db.read(lambda conn: conn.connection.set_trace_callback(statements.append))

    def counted(word: str) -> int:
        return sum(f'"{word}"' in sql for sql in statements)

    for turn in range(CAP + 1):
        assert await db.read(partial(frequencies.counts, words=["kayak", "walnut"])) == {
            "kayak": CAP + 1,
            "walnut": 0,
        }
        await log.say(f"plain talk {turn}")
    assert counted("kayak") == 1  # the first packet's count; the rest kept it
    assert counted("walnut") == 1
    await db.read(partial(frequencies.counts, words=["kayak", "walnut"]))
    assert counted("kayak") == 2  # cap + 1 turns later
    assert counted("walnut") == 2


async def test_after_an_erasure_the_counts_are_forgotten(db):
    """Erasing turns can make a common word rare again: forget() drops every kept count,
    so the next packet counts anew."""
    log = Log(db)
    frequencies = WordFrequencies(log.store, cap=CAP)
    await log.say(*(["harbour walk"] * (CAP + 3)))
    assert await db.read(partial(frequencies.counts, words=["harbour"])) == {"harbour": CAP + 1}

    async def erase(tx: Any) -> None:
        sql = "DELETE FROM conversation_sessions WHERE session_id = ?"
        await tx.execute(sql, (log.session_id,))

    await db.write(erase)
    frequencies.forget()
    assert await db.read(partial(frequencies.counts, words=["harbour"])) == {"harbour": 0}
