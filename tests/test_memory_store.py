"""Long-term memory, model version 2, through the real lane and the offline concierge: what a
user tells the bot is kept, superseded with its history, added beside, and erased exactly."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from agent.chat.commands import CommandCenter
from agent.db import Database, load_schema_text, parse_migrations
from agent.engines.rule_based import RuleBasedConcierge
from agent.memory import CheckpointWriter, ConversationLane, InboundMessage
from agent.memory.longterm.memory_store import SqliteMemoryStore

CHAT = 77
T0 = datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC)


class Chat:
    """Says numbered messages and runs commands in one private chat."""

    def __init__(self, lane: ConversationLane, db: Database, chat_id: int = CHAT) -> None:
        self.lane = lane
        self.chat_id = chat_id
        self.commands = CommandCenter(lane, db)
        self._updates = itertools.count(1)
        self.concierge = RuleBasedConcierge()

    async def say(self, text: str) -> str:
        update = next(self._updates)
        message = InboundMessage(
            chat_id=self.chat_id,
            text=text,
            user_id=self.chat_id,
            update_id=update + 1000 * self.chat_id,
            received_at=T0 + timedelta(minutes=update),
        )
        result = await self.lane.on_turn(message, self.concierge)
        return result.turn.assistant_text or ""

    async def command(self, name: str, args: str = "") -> str:
        return (await self.commands.run(self.chat_id, name, args)).text

    async def forget_conversation(self) -> None:
        sid = self.lane.session_id_for_chat(self.chat_id)
        assert sid is not None
        await self.lane.forget_session(sid)

    async def current(self) -> dict[str, str]:
        return {m.key: m.text for m in await self.lane.inspector.facts(self.chat_id)}


async def test_forget_of_a_session_restores_the_value_it_superseded(lane, db):
    """The privacy defect of issue 16: a name said only in the erased session goes, and the
    name said before it is current again."""
    chat = Chat(lane, db)
    await chat.say("my name is Ada")
    await chat.command("new")
    await chat.say("my name is Grace")
    assert (await chat.current())["name"] == "Grace"
    await chat.forget_conversation()
    assert (await chat.current())["name"] == "Ada"
    assert "Your name is Ada." in await chat.say("what's my name?")
    rows = await db.fetchall("SELECT text FROM memories")
    assert "Grace" not in {row["text"] for row in rows}
    hits = await db.fetchall("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'grace'")
    assert hits == []


async def test_a_memory_said_in_two_sessions_survives_forgetting_one(lane, db):
    """A memory goes only when every turn that stated it is erased."""
    chat = Chat(lane, db)
    await chat.say("I live in Lisbon")
    await chat.command("new")
    await chat.say("I live in Lisbon")
    await chat.forget_conversation()
    assert (await chat.current())["location"] == "Lisbon"


async def test_a_new_home_supersedes_the_old_one_which_stays_as_history(lane, db):
    """One-value attributes are superseded: the old value gets valid_until and a supersedes
    relation, answers "where did I live before?", and was true at an earlier time."""
    chat = Chat(lane, db)
    await chat.say("I live in Berlin")
    await chat.say("I moved to Munich")
    assert "where you live" not in await chat.say("where do I live?")
    assert "Munich" in await chat.say("where do I live?")
    before = await chat.say("where did I live before?")
    assert "Berlin" in before
    assert "Munich" in before
    history = await lane.inspector.facts(CHAT, history=True)
    old = next(m for m in history if m.text == "Berlin")
    new = next(m for m in history if m.text == "Munich")
    assert old.valid_until is not None
    assert new.valid_until is None
    relations = await db.fetchall("SELECT memory_id, relation, other_id FROM memory_relations")
    assert [tuple(r) for r in relations] == [(new.memory_id, "supersedes", old.memory_id)]
    then = await lane.inspector.facts_as_of(CHAT, old.valid_from)
    assert [m.text for m in then if m.attribute == "location"] == ["Berlin"]


async def test_plans_and_likes_accumulate(lane, db):
    """Many-value attributes add a value beside the others: a second plan keeps the first."""
    chat = Chat(lane, db)
    await chat.say("I'm planning a trip to Lisbon in May")
    await chat.say("I'm also planning a dinner party on Friday")
    await chat.say("I love jazz and I like hiking")
    plans = await chat.say("what are my plans?")
    assert "Lisbon" in plans
    assert "dinner party" in plans
    about = await chat.say("what do you know about me?")
    for said in ("Lisbon", "dinner party", "jazz", "hiking"):
        assert said in about


async def test_people_and_pets_are_remembered_and_asked_about(lane, db):
    """Statements about someone in the user's life are kept with that someone as subject."""
    chat = Chat(lane, db)
    await chat.say("my sister Mia lives in Porto")
    await chat.say("I have a cat called Miso")
    await chat.say("my brother works as a nurse")
    await chat.command("new")
    assert "Porto" in await chat.say("where does my sister live?")
    assert "Miso" in await chat.say("what's my cat's name?")
    assert "nurse" in await chat.say("what does my brother do?")
    assert "Porto" in await chat.say("who is Mia?")
    assert "haven't told me" in await chat.say("where does my uncle live?")


async def test_a_correction_supersedes_as_if_the_old_value_was_never_true(lane, db):
    """ "Sorry, my birthday is actually on May 14" replaces the old value from its start."""
    chat = Chat(lane, db)
    await chat.say("my birthday is on May 4")
    reply = await chat.say("sorry, my birthday is actually on May 14")
    assert reply.startswith("Corrected")
    history = await lane.inspector.facts(CHAT, history=True)
    old = next(m for m in history if m.text == "May 4")
    new = next(m for m in history if m.text == "May 14")
    assert old.valid_until == old.valid_from
    assert new.valid_from == old.valid_from
    assert [m.text for m in await lane.inspector.facts_as_of(CHAT, new.valid_from)] == ["May 14"]


async def test_what_the_bot_says_it_noted_survives_new(lane, db):
    """Point 2: every fact acknowledged as "Noted" is in long-term memory after /new; a
    hedge is said to be unconfirmed, listed so, and confirmed by /facts confirm."""
    chat = Chat(lane, db)
    for text in ("my favourite food is ramen", "I'm allergic to peanuts", "I'm vegetarian"):
        assert (await chat.say(text)).startswith("Noted")
    assert "unconfirmed" in await chat.say("I think I like opera")
    await chat.command("new")
    assert "ramen" in await chat.say("what's my favourite food?")
    assert "peanuts" in await chat.say("what am I allergic to?")
    assert "You like opera (unconfirmed)." in await chat.say("what do I like?")
    listing = await chat.command("facts")
    line = next(x for x in listing.splitlines() if "opera" in x)
    assert "unconfirmed" in line
    number = line.split(".")[0]
    assert "Confirmed" in await chat.command("facts", f"confirm {number}")
    assert "unconfirmed" not in await chat.command("facts")
    assert "You like opera." in await chat.say("what do I like?")


async def test_facts_forget_erases_a_memory_its_history_and_index_rows(lane, db):
    """/facts forget N removes the memory, its history and relations from the tables and the
    full-text index, and says what it erased."""
    chat = Chat(lane, db)
    await chat.say("I live in Berlin")
    await chat.say("I moved to Munich")
    await chat.say("my name is Ada")
    listing = await chat.command("facts")
    line = next(x for x in listing.splitlines() if "Munich" in x)
    reply = await chat.command("facts", "forget " + line.split(".")[0])
    assert "Munich" in reply
    assert "location" not in await chat.current()
    texts = {r["text"] for r in await db.fetchall("SELECT text FROM memories")}
    assert texts == {"Ada"}
    assert await db.fetchall("SELECT * FROM memory_relations") == []
    for word in ("berlin", "munich"):
        rows = await db.fetchall(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (word,)
        )
        assert rows == []
    assert "no fact number 9" in await chat.command("facts", "forget 9")
    assert "Usage" in await chat.command("facts", "forget everything")


async def test_remember_keeps_a_note_verbatim_across_forget(lane, db):
    """/remember stores a note as the user wrote it; erasing a conversation leaves it."""
    chat = Chat(lane, db)
    await chat.say("hello")
    assert "passport" in await chat.command("remember", "my passport number ends in 42")
    await chat.forget_conversation()
    listing = await chat.command("facts")
    assert "your passport number ends in 42" in listing
    assert "Usage" in await chat.command("remember")


async def test_memories_never_cross_chats(lane, db):
    """One chat's memories, commands and erasures never reach another chat."""
    ada, bob = Chat(lane, db, 1), Chat(lane, db, 2)
    await ada.say("my name is Ada")
    await bob.say("my name is Bob")
    listing = await bob.command("facts")
    assert "Ada" not in listing
    await bob.command("facts", "forget 1")
    assert (await ada.current())["name"] == "Ada"


async def test_the_v2_migration_keeps_every_memory_of_version_1(db_path):
    """Migration 0011 rebuilds the memories table: every v1 row stays (current, with its
    sources and index entry); a plan's value joins its key, so later plans add beside it; an
    erasure then works as in v2."""
    version_1 = [m for m in parse_migrations(load_schema_text()) if m.version <= 10]
    stamp = "2025-01-01T00:00:00.000000Z"
    rows = [
        ("m1", "fact", "name", "Ada"),
        ("m2", "goal", "plan", "a trip to Lisbon"),
        ("m3", "preference", "likes:jazz", "jazz"),
        ("m4", "preference", "favourite:food", "ramen"),
    ]
    async with Database(db_path, migrations=version_1) as db:

        async def seed(tx):
            await tx.execute(
                "INSERT INTO conversation_sessions (session_id, chat_id, state, created_at,"
                " updated_at) VALUES ('ses_1', 7, '{}', ?, ?)",
                (stamp, stamp),
            )
            for memory_id, kind, key, text in rows:
                await tx.execute(
                    "INSERT INTO memories (memory_id, chat_id, kind, key, text, confidence,"
                    " importance, status, created_at, updated_at, last_accessed_at)"
                    " VALUES (?, 7, ?, ?, ?, 0.9, 0.5, 'active', ?, ?, ?)",
                    (memory_id, kind, key, text, stamp, stamp, stamp),
                )
                await tx.execute("INSERT INTO memory_sources VALUES (?, 'ses_1', 1)", (memory_id,))

        await db.write(seed)

    async with Database(db_path) as db:
        lane = ConversationLane(db, CheckpointWriter(db_path.parent / "checkpoints"))
        memories = {m.memory_id: m for m in await lane.inspector.facts(7)}
        assert {k: (m.attribute, m.key, m.text) for k, m in memories.items()} == {
            "m1": ("name", "name", "Ada"),
            "m2": ("plan", "plan:a trip to lisbon", "a trip to Lisbon"),
            "m3": ("likes", "likes:jazz", "jazz"),
            "m4": ("favourite:food", "favourite:food", "ramen"),
        }
        assert all(m.valid_until is None and m.subject == "user" for m in memories.values())
        sources = await db.fetchall("SELECT memory_id FROM memory_sources ORDER BY memory_id")
        assert [r["memory_id"] for r in sources] == ["m1", "m2", "m3", "m4"]
        (hits,) = await db.read(
            partial(SqliteMemoryStore().search, chat_id=7, queries=["lisbon"], limit=3)
        )
        assert [m.memory_id for m, _ in hits] == ["m2"]
        await db.write(lambda tx: tx.execute("DELETE FROM conversation_sessions"))
        assert await lane.inspector.facts(7) == []


async def test_forget_in_plain_words_erases_the_matching_memory_and_says_what(lane, db):
    """ "Forget that my sister lives in Porto" erases that memory at once (no confirmation
    round) and names it; words that match nothing erase nothing and say so; the request
    promotes nothing, moves no session state, and its words are never retrieved."""
    chat = Chat(lane, db)
    await chat.say("my sister Mia lives in Porto")
    await chat.say("I have a cat called Miso")
    await chat.say("I live in Berlin")
    assert "erased nothing" in await chat.say("forget that my sister lives in Lisbon")
    assert "Porto" in await chat.say("where does my sister live?")
    reply = await chat.say("forget that my sister lives in Porto")
    done, _, offer = reply.partition(" I also found ")
    assert done == "Done, I've forgotten: your sister Mia lives in Porto."
    assert offer.startswith("1 message saying your sister lives in Porto: “my sister Mia lives")
    assert offer.endswith("Erase it too (yes or no)?")
    assert await chat.say("no") == "OK, I erased nothing."
    assert "Porto" not in await chat.say("where does my sister live?")
    assert "Porto" not in {m.text for m in await lane.inspector.facts(CHAT, history=True)}
    hits = await db.fetchall("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'porto'")
    assert hits == []
    found = await lane.inspector.recall(CHAT, "forget")
    assert [item for item in found if item.kind == "turn"] == []
    assert "Miso" in await chat.say("forget my cat")
    assert "Berlin" in await chat.say("please forget where I live")
    assert await chat.current() == {"relative:sister mia": "sister Mia"}
    assert "/forget" in await chat.say("forget everything")
    assert await chat.current() == {"relative:sister mia": "sister Mia"}


@pytest.mark.parametrize(
    "forget",
    ["forget that Alfie is allergic to eggs", "forget that my son Alfie is allergic to eggs",
     "please forget that my son is allergic to eggs"],
)  # fmt: skip
async def test_forget_a_fact_of_someone_by_name_or_role_erases_it_and_keeps_them(lane, db, forget):
    """A fact of someone named, forgotten by their name, their role or both: that fact goes,
    the person (and what else is known of them) stays."""
    chat = Chat(lane, db)
    await chat.say("I have a little boy called Alfie, he's 2")
    await chat.say("he's allergic to eggs")
    assert (await chat.say(forget)).startswith(
        "Done, I've forgotten: your son Alfie is allergic to eggs."
    )
    assert await chat.current() == {"relative:son alfie": "son Alfie", "son Alfie/age": "2"}


async def test_forget_of_something_said_in_passing_offers_to_erase_the_messages(lane, db):
    """A detail no fact keeps ("the spare key is under the blue flowerpot") is still in the
    conversation, and quoted when asked: "forget the spare key" quotes the message that said it
    and asks before erasing it (tests/test_turn_erasure.py erases); what was never said is
    "erased nothing"."""
    chat = Chat(lane, db)
    await chat.say("the spare key is under the blue flowerpot")
    assert "flowerpot" in await chat.say("where did I leave the spare key?")
    reply = await chat.say("forget the spare key")
    assert reply.startswith(
        "I found 1 message about the spare key: “the spare key is under the blue flowerpot”"
    )
    assert reply.endswith("Erase it (yes or no)?")
    assert "erased nothing" in await chat.say("forget my bike lock code")


async def test_a_detail_is_kept_across_conversations_and_forgotten_with_its_history(lane, db):
    """ "my locker code is 4512" is a fact of its own: noted, replaced by a new code, answered
    in the next conversation; "forget my locker code" forgets it with its earlier value, and
    offers to erase the messages that said either."""
    chat = Chat(lane, db)
    assert await chat.say("my locker code is 4512") == "Noted: your locker code is 4512."
    assert "7788" in await chat.say("the new locker code is 7788")
    await chat.command("new")
    assert "7788" in await chat.say("what's my locker code?")
    assert "4512" not in await chat.say("what's my locker code?")
    await chat.say("my locker code is 9900, they changed it again")
    reply = await chat.say("forget my locker code")
    assert reply.startswith("Done, I've forgotten: your locker code is 9900.")
    assert reply.endswith("Erase it too (yes or no)?")
    history = await lane.inspector.facts(CHAT, history=True)
    assert [m for m in history if m.attribute == "detail:locker code"] == []


async def test_what_no_longer_holds_ends_its_value_and_a_new_one_ends_that(lane, db):
    """ "I quit my job at Google" ends the workplace (history, with a contradicts relation) and
    is the slot's current memory, so no reply says "you work at Google"; a new workplace later
    ends that in turn."""
    chat = Chat(lane, db)
    await chat.say("I work at Google")
    assert await chat.say("I quit my job at Google") == "Noted: you no longer work at Google."
    await chat.command("new")
    assert await chat.say("where do I work?") == "You no longer work at Google."
    current = {m.attribute: m.text for m in await lane.inspector.facts(CHAT)}
    assert current == {"ex_workplace": "Google"}
    relations = {r["relation"] for r in await db.fetchall("SELECT * FROM memory_relations")}
    assert relations == {"contradicts"}
    await chat.say("I work at Spotify")
    assert await chat.say("where do I work?") == "You work at Spotify."
    history = await lane.inspector.facts(CHAT, history=True)
    assert sorted((m.attribute, m.text, m.valid_until is None) for m in history) == [
        ("ex_workplace", "Google", False),
        ("workplace", "Google", False),
        ("workplace", "Spotify", True),
    ]


async def test_saying_the_opposite_contradicts_and_facts_about_someone_relate_to_them(lane, db):
    """ "I don't like jazz" ends "I like jazz" with a contradicts relation (one slot, the later
    wins, the earlier is history); a fact about someone is related_to the memory naming them;
    erasing the dislike's conversation brings the like back."""
    chat = Chat(lane, db)
    await chat.say("I like jazz")
    await chat.command("new")
    await chat.say("I don't like jazz")
    await chat.say("my sister Mia lives in Porto")
    current = {m.attribute: m for m in await lane.inspector.facts(CHAT)}
    assert "likes" not in current
    relations = {
        (r["relation"], r["memory_id"], r["other_id"])
        for r in await db.fetchall("SELECT * FROM memory_relations")
    }
    history = await lane.inspector.facts(CHAT, history=True)
    like = next(m for m in history if m.attribute == "likes")
    assert ("contradicts", current["dislikes"].memory_id, like.memory_id) in relations
    assert ("related_to", current["location"].memory_id, current["relative"].memory_id) in relations
    assert "don't like jazz" in await chat.say("what do you know about me?")
    await chat.forget_conversation()
    assert {m.attribute for m in await lane.inspector.facts(CHAT)} == {"likes"}


async def test_forget_what_is_mine_erases_mine_not_someone_elses(lane, db):
    """ "forget where I live" is the user's home, not their sister's; "don't remember my
    allergy" forgets; "delete everything you know about me" says how (a command, confirmed)."""
    chat = Chat(lane, db)
    await chat.say("I live in Porto")
    await chat.say("my sister Mia lives in Lisbon")
    await chat.say("I'm allergic to nuts")
    mine = await chat.say("forget where I live")
    assert mine.startswith("Done, I've forgotten: you live in Porto. I also found 1 message ")
    assert "Lisbon" not in mine
    assert "Lisbon" in await chat.say("where does Mia live?")
    assert "nuts" in await chat.say("don't remember my allergy")
    assert "nuts" not in await chat.say("what am I allergic to?")
    assert "/forget" in await chat.say("delete everything you know about me")
    assert await chat.current() == {
        "relative:sister mia": "sister Mia",
        "sister Mia/location": "Lisbon",
    }
