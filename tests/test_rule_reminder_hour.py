"""Tests of agent/engines/rule_reminder_hour.py: a reminder at a bare hour ("tomorrow at 10") is
never guessed: the concierge asks morning or evening, and the next message that picks one sets
the reminder; any other message leaves the question (it lapses).

The conversation is the ``Chat`` of tests/test_rule_based.py (real state manager, real SQLite);
it starts at T0, 1 March 2025 10:32 UTC.
"""

from __future__ import annotations

import pytest

from tests.test_console_sessions import replies, run_console
from tests.test_rule_based import Chat

ASKED = "Is that tomorrow at 10:00 UTC (morning) or tomorrow at 22:00 UTC (evening)?"


@pytest.mark.parametrize(
    "request_",
    [
        "remind me tomorrow at 10 to call the plumber",
        "Remind me to call the plumber tomorrow at 10",
        "remind me 2morrow at 10 to call the plumber",
        "remind me at 10 tomorrow to call the plumber",
    ],
)
async def test_a_bare_hour_is_asked_not_refused_nor_guessed(db, request_):
    reply = await Chat(db).say(request_)
    assert reply.text == ASKED
    assert reply.intent == "ask_reminder_time"
    assert reply.job_refs == ()


@pytest.mark.parametrize(
    ("answer", "hour"),
    [
        ("10am", 10),
        ("am", 10),
        ("morning", 10),
        ("in the morning please", 10),
        ("the morning one", 10),
        ("10:00", 10),
        ("the first", 10),
        ("the evening one", 22),
        ("evening", 22),
        ("pm", 22),
        ("22:00", 22),
        ("10 pm", 22),
        ("make it 10pm", 22),
        ("at night", 22),
    ],
)
async def test_the_next_message_picking_one_sets_the_reminder(db, answer, hour):
    chat = Chat(db)
    await chat.say("remind me tomorrow at 10 to call the plumber")
    reply = await chat.say(answer)
    assert reply.intent == "set_reminder"
    assert reply.text == f"I'll remind you tomorrow at {hour:02d}:00 UTC to call the plumber."
    (job,) = reply.job_refs
    assert (job.due_at.day, job.due_at.hour, job.label) == (2, hour, "call the plumber")
    assert chat.state.pending_clarifications == ()


@pytest.mark.parametrize("other", ["what's my name?", "never mind", "thanks", "I love jazz"])
async def test_any_other_message_leaves_the_question_and_it_lapses(db, other):
    chat = Chat(db)
    await chat.say("remind me tomorrow at 10 to call the plumber")
    reply = await chat.say(other)
    assert reply.job_refs == ()
    assert "10:00" not in (reply.text or "")
    later = await chat.say("morning")  # the question has lapsed: no reminder now
    assert later.job_refs == ()


async def test_another_hour_answers_nothing(db):
    chat = Chat(db)
    await chat.say("remind me tomorrow at 10 to call the plumber")
    assert (await chat.say("7am")).job_refs == ()


@pytest.mark.parametrize(
    ("request_", "morning", "evening"),
    [
        ("remind me at half past 6 to start dinner", "06:30", "18:30"),
        ("remind me at quarter to 8 to walk the dog", "07:45", "19:45"),
        ("remind me tomorrow at a quarter past ten to call", "10:15", "22:15"),
    ],
)
async def test_a_spoken_bare_hour_keeps_its_minutes_in_the_question_and_the_answer(
    db, request_, morning, evening
):
    chat = Chat(db)
    asked = (await chat.say(request_)).text or ""
    assert f"{morning} UTC (morning)" in asked
    assert f"{evening} UTC (evening)" in asked
    reply = await chat.say("evening")
    (job,) = reply.job_refs
    assert f"{job.due_at:%H:%M}" == evening


@pytest.mark.parametrize(
    ("request_", "hour"),
    [
        ("remind me at 9 tomorrow morning to call the vet", 9),
        ("remind me tomorrow at 3 in the afternoon to call the vet", 15),
        ("remind me at 8 tonight to call the vet", 20),
    ],
)
async def test_a_bare_hour_said_with_its_part_of_the_day_is_set_at_once(db, request_, hour):
    reply = await Chat(db).say(request_)
    (job,) = reply.job_refs
    assert job.due_at.hour == hour


async def test_a_clock_said_in_full_is_set_at_once(db):
    reply = await Chat(db).say("remind me tomorrow at 10am to call the plumber")
    assert reply.text == "I'll remind you tomorrow at 10:00 UTC to call the plumber."


async def test_the_question_is_asked_in_the_users_zone(db):
    chat = Chat(db)
    await chat.say("my time zone is Tokyo")
    reply = await chat.say("remind me on Friday at 7 to water the plants")
    assert reply.text == (
        "Is that on 7 March at 07:00 Asia/Tokyo (morning) or on 7 March at 19:00 Asia/Tokyo"
        " (evening)?"
    )
    reply = await chat.say("evening")
    assert reply.text == "I'll remind you on 7 March at 19:00 Asia/Tokyo to water the plants."


def test_the_console_asks_the_hour_and_keeps_what_was_said_across_a_restart(launch):
    """``run_bot.py --console`` through a pipe, typed fast: the bare hour is asked and the next
    line sets it; after a restart on the same files the facts and the reminder are there."""
    out = run_console(
        launch,
        ["hey im Jake", "my sisters name is mia shes 16",
         "remind me 2morrow at 10 to call the plumber", "the morning one", "thx"],
    )  # fmt: skip
    said = replies(out)  # said[0] is the console's greeting
    assert said[1] == "Nice to meet you, Jake."
    assert said[2] == "Noted: your sister Mia is 16."
    assert said[3].startswith("Is that tomorrow at 10:00 UTC (morning) or tomorrow at 22:00")
    assert said[4].startswith("I'll remind you tomorrow at 10:00 UTC to call the plumber")
    assert said[5] == "You're welcome, Jake!"
    out = run_console(launch, ["how old is mia", "wat reminders do i have"])
    mia, reminders = replies(out)[1:3]
    assert mia == "Your sister Mia is 16."
    assert "call the plumber, tomorrow at 10:00 UTC" in reminders
