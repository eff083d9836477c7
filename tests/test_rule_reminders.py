"""Reminders in words through a real lane: set in natural time and in the user's zone, cancelled
and snoozed by name; "what time is it?" in the user's zone. A cancelled reminder never fires."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent.chat.commands import CommandCenter
from tests.test_rule_based_lane import CHAT, Conversation

# Wednesday 25 November 2026, 23:00 UTC (23:00 in Lisbon, 18:00 in New York).
T0 = datetime(2026, 11, 25, 23, 0, tzinfo=UTC)


def later(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


async def test_natural_times_are_set_and_said_back(lane):
    chat = Conversation(lane)
    assert await chat.reply("remind me tomorrow at 8am to take my vitamins", T0) == (
        "I'll remind you tomorrow at 08:00 UTC to take your vitamins."
    )
    assert await chat.reply("Remind me on Friday to water the plants", later(1)) == (
        "I'll remind you on 27 November at 09:00 UTC to water the plants."
    )
    result = await chat.say("can you remind me next Monday at 9:30 to renew my passport?", later(2))
    (job,) = result.turn.job_refs
    assert job.due_at == datetime(2026, 11, 30, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("setting", "zone"),
    [
        ("/timezone America/New_York", "America/New_York"),
        ("/timezone new york", "America/New_York"),
        ("my time zone is New York", "America/New_York"),
        ("I'm on New York time", "America/New_York"),
    ],
)
async def test_a_users_zone_moves_their_clock_times(lane, db, setting, zone):
    """Set by the command or in words, the zone is kept and reminders are read in it: 8am in
    New York is 13:00 UTC, and the reply says the user's clock."""
    chat = Conversation(lane)
    await chat.say("hello", T0)
    if setting.startswith("/"):
        name, _, args = setting[1:].partition(" ")
        said = (await CommandCenter(lane, db).run(CHAT, name, args)).text
        assert zone in said
    else:
        assert zone in await chat.reply(setting, later(1))
    result = await chat.say("remind me tomorrow at 8am to run", later(2))
    (job,) = result.turn.job_refs
    assert job.due_at == datetime(2026, 11, 26, 13, 0, tzinfo=UTC)
    assert result.turn.assistant_text == f"I'll remind you tomorrow at 08:00 {zone} to run."
    assert await chat.reply("what time is it?", later(3)) == (
        f"It's 18:03 on Wednesday 25 November 2026 ({zone})."
    )
    assert await chat.reply("what's my time zone?", later(4)) == f"Your time zone is {zone}."


@pytest.mark.parametrize(
    "question",
    ["what time is it?", "What's the time", "tell me the time please", "what's the date?"],
)
async def test_the_time_is_told_in_utc_until_a_zone_is_set(lane, question):
    said = await Conversation(lane).reply(question, T0)
    assert said.startswith("It's 23:00 on Wednesday 25 November 2026 (UTC).")
    assert "/timezone" in said


async def test_an_unknown_zone_is_refused_and_utc_stays(lane, db):
    commands = CommandCenter(lane, db)
    assert "I don't know the time zone" in (await commands.run(CHAT, "timezone", "Atlantis")).text
    assert "UTC (the default)" in (await commands.run(CHAT, "timezone")).text


@pytest.mark.parametrize(
    "cancel",
    [
        "cancel the oven reminder",
        "please delete my reminder about the oven",
        "remove the reminder to check the oven",
        "cancel reminder 2",
        "the oven reminder is no longer needed",
        "cancel the oven one",
        "turn off the oven alarm",
        "I want to cancel the oven reminder",
        "actually cancel the oven one",
        "oh and cancel the oven reminder",
        "ok, delete the oven reminder please",
        "no wait, scrap the oven one",
        "never mind the oven reminder",
        "I don't need the oven reminder anymore",
        "delete the oven one",
        "remove the oven alarm",
        "cancel that",  # the reminder just set
        "actually, cancel it",
        "scrap that one",
    ],
)
async def test_a_reminder_cancelled_in_words_never_fires(lane, cancel):
    chat = Conversation(lane)
    await chat.say("remind me in 2 hours to call mom", T0)
    (oven,) = (await chat.say("remind me in 1 hour to check the oven", later(1))).turn.job_refs
    result = await chat.say(cancel, later(2))
    assert result.turn.assistant_text == "Cancelled the reminder: check the oven."
    assert [(j.job_id, j.status) for j in result.turn.job_refs] == [(oven.job_id, "cancelled")]
    assert await lane.complete_job(CHAT, oven.job_id, "⏰ Reminder: check the oven") is None
    listed = await chat.reply("what reminders do I have?", later(3))
    assert "call mom" in listed
    assert "oven" not in listed


async def test_cancel_that_names_only_the_reminder_just_set(lane):
    """ "cancel that" cancels the reminder the bot's last reply set; after another message it
    names none (nothing is cancelled), unless the bot's reply listed the only one there is."""
    chat = Conversation(lane)
    await chat.say("remind me in 1 hour to check the oven", T0)
    await chat.say("I love jazz", later(1))
    result = await chat.say("cancel that", later(2))
    assert result.turn.job_refs == ()
    await chat.say("when will you remind me?", later(3))  # the only one, just listed
    listed = await chat.say("cancel that", later(4))
    assert listed.turn.assistant_text == "Cancelled the reminder: check the oven."


@pytest.mark.parametrize(
    "question", ["when will you remind me?", "what time will you remind me?", "what did I promise?"]
)
async def test_when_a_reminder_is_due_is_asked_in_other_words(lane, question):
    chat = Conversation(lane)
    await chat.say("remind me in 1 hour to check the oven", T0)
    await chat.say("I'll call the plumber tomorrow", later(1))
    said = await chat.reply(question, later(2))
    assert "check the oven, tomorrow at 00:00 UTC" in said
    assert "call the plumber tomorrow (you promised)" in said


async def test_cancel_asks_which_when_several_match_and_says_when_none_is_set(lane):
    chat = Conversation(lane)
    assert "no reminders set" in await chat.reply("cancel the reminder", T0)
    await chat.say("remind me in 2 hours to call mom", later(1))
    await chat.say("remind me in 1 hour to check the oven", later(2))
    said = await chat.reply("cancel the reminder", later(3))
    assert said.startswith("Which reminder?")
    assert "1. call mom" in said
    assert "2. check the oven" in said
    result = await chat.say("cancel all my reminders", later(4))
    assert {j.status for j in result.turn.job_refs} == {"cancelled"}
    assert len(result.turn.job_refs) == 2
    # The cancel is the whole answer: no list of what was just cancelled after it.
    assert result.turn.assistant_text == "Cancelled the reminders: call mom; check the oven."
    assert "no reminders are set" in await chat.reply("what are my reminders?", later(5))


async def test_reminders_are_listed_soonest_first_and_set_in_other_words(lane):
    chat = Conversation(lane)
    await chat.say("remind me on Friday to pay rent", T0)
    await chat.say("set a reminder for tomorrow morning to call the dentist", later(1))
    await chat.say("remind me in 20 minutes to check the oven", later(2))
    listed = await chat.reply("what are my reminders?", later(3))
    assert listed.index("check the oven") < listed.index("call the dentist")
    assert listed.index("call the dentist") < listed.index("pay rent")
    assert "call the dentist, tomorrow at 09:00 UTC" in listed


@pytest.mark.parametrize(
    ("snooze", "minutes"),
    [
        ("snooze it 10 minutes", 10),
        ("snooze", 10),
        ("snooze for 5 min", 5),
        ("Snooze it for half an hour", 30),
        ("remind me again in 15 minutes", 15),
    ],
)
async def test_a_fired_reminder_is_snoozed_by_the_delay_said(lane, snooze, minutes):
    chat = Conversation(lane)
    (job,) = (await chat.say("remind me in 1 minute to stretch", T0)).turn.job_refs
    assert await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: stretch") is not None
    result = await chat.say(snooze, later(2))
    (again,) = result.turn.job_refs
    assert (again.label, again.status) == ("stretch", "scheduled")
    assert again.job_id != job.job_id
    assert again.due_at == later(2) + timedelta(minutes=minutes)
    assert (result.turn.assistant_text or "").startswith("Snoozed: I'll remind you at 23:")


async def test_a_reminder_not_fired_yet_is_moved_by_a_snooze(lane):
    chat = Conversation(lane)
    (job,) = (await chat.say("remind me in 1 hour to check the oven", T0)).turn.job_refs
    result = await chat.say("snooze the oven reminder 10 minutes", later(1))
    moved, again = result.turn.job_refs
    assert (moved.job_id, moved.status) == (job.job_id, "cancelled")
    assert again.due_at == later(70)
    assert await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: check the oven") is None


async def test_snooze_it_is_the_reminder_just_set_or_moved_not_the_soonest(lane):
    """Two reminders; one is moved, then "snooze it 10 minutes": the one just moved."""
    chat = Conversation(lane)
    await chat.say("remind me in 1 hour to call the plumber", T0)
    await chat.say("remind me in 3 hours to pick up the kids", later(1))
    await chat.say("move it to 4am", later(2))
    result = await chat.say("snooze it 10 minutes", later(3))
    assert [(j.label, j.due_at) for j in result.turn.job_refs if j.status == "scheduled"] == [
        ("pick up the kids", datetime(2026, 11, 26, 4, 10, tzinfo=UTC))
    ]


async def test_nothing_to_snooze_is_said(lane):
    assert await Conversation(lane).reply("snooze it", T0) == "There is no reminder to snooze."


async def test_a_named_reminder_is_delayed_or_moved_to_a_time_in_words(lane):
    """"delay the X reminder by an hour" moves the one named, not the soonest; "move the X
    reminder to 8am" sets it at that time. The old one never fires."""
    chat = Conversation(lane)
    (mom,) = (await chat.say("remind me in 2 hours to call mom", T0)).turn.job_refs
    (oven,) = (await chat.say("remind me in 1 hour to check the oven", later(1))).turn.job_refs
    result = await chat.say("delay the mom reminder by an hour", later(2))
    moved, again = result.turn.job_refs
    assert (moved.job_id, moved.status) == (mom.job_id, "cancelled")
    assert (again.label, again.due_at) == ("call mom", later(180))
    result = await chat.say("postpone the oven reminder 30 minutes", later(3))
    assert [j.due_at for j in result.turn.job_refs if j.status == "scheduled"] == [later(91)]
    result = await chat.say("move the mom reminder to 8am tomorrow", later(4))
    assert result.turn.assistant_text == "Moved: I'll remind you tomorrow at 08:00 UTC to call mom."
    assert [j.due_at for j in result.turn.job_refs if j.status == "scheduled"] == [
        datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
    ]
    result = await chat.say("change the oven one to 11:30pm", later(5))
    assert [j.due_at for j in result.turn.job_refs if j.status == "scheduled"] == [later(30)]
    assert await lane.complete_job(CHAT, mom.job_id, "⏰ Reminder: call mom") is None
    assert await lane.complete_job(CHAT, oven.job_id, "⏰ Reminder: check the oven") is None
    listed = await chat.reply("what are my reminders?", later(6))
    assert listed.count("call mom") == 1
    assert listed.count("check the oven") == 1
    assert "I couldn't read" in await chat.reply("move the oven reminder to sometime", later(7))
    # A number alone is an hour, morning or evening: not read as a month (5 = May).
    assert "I couldn't read" in await chat.reply("move the oven reminder to 5", later(8))


@pytest.mark.parametrize(
    ("change", "due"),
    [
        ("change it to 11am", datetime(2026, 11, 30, 11, 0, tzinfo=UTC)),
        ("actually make it 10am", datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),
        ("make that 10:30", datetime(2026, 11, 30, 10, 30, tzinfo=UTC)),
        ("can you move it to 2pm?", datetime(2026, 11, 30, 14, 0, tzinfo=UTC)),
        ("move the hotel reminder to the evening", datetime(2026, 11, 30, 19, 0, tzinfo=UTC)),
        ("move it to Tuesday", datetime(2026, 12, 1, 9, 30, tzinfo=UTC)),
        ("no wait, make it Friday", datetime(2026, 11, 27, 9, 30, tzinfo=UTC)),
        ("change it to Tuesday at 8am", datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),
    ],
)
async def test_a_reminder_moved_to_a_time_keeps_its_day_and_to_a_day_keeps_its_time(
    lane, change, due
):
    """A reminder set for Monday at 9:30 moved to "11am" is on Monday at 11:00, not tomorrow;
    moved to "Tuesday" it is at 9:30 on Tuesday; "make it 10am" of the one just set moves it."""
    chat = Conversation(lane)
    (job,) = (await chat.say("remind me on Monday at 9:30 to book the hotel", T0)).turn.job_refs
    assert job.due_at == datetime(2026, 11, 30, 9, 30, tzinfo=UTC)
    result = await chat.say(change, later(1))
    assert [j.due_at for j in result.turn.job_refs if j.status == "scheduled"] == [due]
    assert (result.turn.assistant_text or "").startswith("Moved: I'll remind you")
    assert await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: book the hotel") is None


async def test_a_time_already_gone_on_the_reminder_s_day_is_the_next_one(lane):
    """Moving tonight's reminder to 8am (gone today) sets it for tomorrow at 8."""
    chat = Conversation(lane)
    (job,) = (await chat.say("remind me in 20 minutes to call Ana", T0)).turn.job_refs
    result = await chat.say("make it 8am", later(1))
    assert [j.due_at for j in result.turn.job_refs if j.status == "scheduled"] == [
        datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
    ]
    assert await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: call Ana") is None


@pytest.mark.parametrize(
    ("change", "minutes"),
    [("actually make it 30 minutes", 30), ("make it an hour", 60), ("make that 45 mins", 45),
     ("no wait, make it 2 hours", 120)],
)  # fmt: skip
async def test_make_it_a_length_of_time_is_that_long_from_now(lane, change, minutes):
    """ "remind me in 20 minutes ...", then "make it 30 minutes": 30 minutes from the message,
    not a day and a time read out of "30"."""
    chat = Conversation(lane)
    (job,) = (await chat.say("remind me in 20 minutes to check the laundry", T0)).turn.job_refs
    result = await chat.say(change, later(1))
    assert [j.due_at for j in result.turn.job_refs if j.status == "scheduled"] == [
        later(1) + timedelta(minutes=minutes)
    ]
    assert await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: check the laundry") is None


@pytest.mark.parametrize(
    "chat_text", ["make it quick", "make it so", "have it your way", "make it 2", "make it two"]
)
async def test_make_it_with_no_time_moves_no_reminder(lane, chat_text):
    chat = Conversation(lane)
    (job,) = (await chat.say("remind me in 20 minutes to call Ana", T0)).turn.job_refs
    result = await chat.say(chat_text, later(1))
    assert not (result.turn.assistant_text or "").startswith(("Moved", "I couldn't read"))
    assert [j.job_id for j in lane.chat_jobs(CHAT)] == [job.job_id]


async def test_a_zone_set_after_reminders_lists_them_on_the_new_clock_and_a_move_adopts_it(
    lane, db
):
    """Reminders set before /timezone keep their moment: the answer lists them on the new
    clock, the list names a series' own clock, and "move it to 6pm" sets it on the new one."""
    chat = Conversation(lane)
    await chat.say("remind me every Tuesday at 6pm to pack my German books", T0)
    await chat.say("remind me tomorrow at 9am to call mum", later(1))
    said = (await CommandCenter(lane, db).run(CHAT, "timezone", "Europe/Berlin")).text
    assert said == (
        "Your time zone is now Europe/Berlin: I'll read and say reminder times in it.\n"
        "The reminders set before keep their moment, on your clock now:\n"
        "• pack your German books, every Tuesday at 18:00 UTC: next on Tue 1 Dec at 19:00\n"
        "• call mum next on Thu 26 Nov at 10:00\n"
        "Say e.g. “move it to 6pm” of one to set it on your clock instead."
    )
    listed = await chat.reply("what reminders do I have?", later(2))
    assert "every Tuesday at 18:00 UTC (next: on 1 December at 19:00 Europe/Berlin)" in listed
    assert await chat.reply("move the German books reminder to 6pm", later(3)) == (
        "Moved: I'll remind you every Tuesday at 18:00 Europe/Berlin to pack your German books."
    )
    series = next(j for j in lane.chat_jobs(CHAT) if j.repeat is not None)
    assert series.due_at == datetime(2026, 12, 1, 17, 0, tzinfo=UTC)
    assert series.repeat is not None
    assert (series.repeat.zone, series.repeat.at) == ("Europe/Berlin", "18:00")


@pytest.mark.parametrize("asked", ["remind me to take the bins out tonight",
                                   "remind me this evening to call Jo"])  # fmt: skip
async def test_a_reminder_for_a_part_of_today_already_over_asks_the_time(lane, asked):
    """At 23:00 "tonight" has passed its usual hour (21:00): the reply says so and how to say
    the time, and sets nothing (not tomorrow's, not a guess)."""
    result = await Conversation(lane).say(asked, T0)
    part = "tonight" if "tonight" in asked else "this evening"
    assert result.turn.assistant_text == (
        f"It's already 23:00 UTC, past {part}'s usual hour: say the time, e.g. “remind me at "
        "12am to …”."
    )
    assert result.turn.job_refs == ()


@pytest.mark.parametrize(
    ("repeating", "said"),
    [
        ("remind me every morning to take vitamins", "every day at 09:00 UTC"),
        ("remind me every Monday at 9am to water the plants", "every Monday at 09:00 UTC"),
        ("set a daily reminder to stretch", "every day at 09:00 UTC"),
        ("set a weekly reminder to call grandma", "every Thursday at 09:00 UTC"),
    ],
)
async def test_a_repeating_reminder_is_set_as_its_next_occurrence_with_its_rule(
    lane, repeating, said
):
    result = await Conversation(lane).say(repeating, T0)
    assert said in (result.turn.assistant_text or "")
    [job] = result.turn.job_refs
    assert job.status == "scheduled"
    assert job.repeat is not None


@pytest.mark.parametrize(
    "repeating",
    [
        "remind me every year on my birthday",
        "remind me every hour to drink water",
        "set an hourly reminder to stretch",
    ],
)
async def test_a_repeat_no_rule_reads_is_refused_with_what_works(lane, repeating):
    result = await Conversation(lane).say(repeating, T0)
    assert "every day, weekday, week or month" in (result.turn.assistant_text or "")
    assert result.turn.job_refs == ()


@pytest.mark.parametrize(
    ("alarm", "due"),
    [
        ("set an alarm for 6:30am tomorrow", datetime(2026, 11, 26, 6, 30, tzinfo=UTC)),
        ("wake me up at 7am", datetime(2026, 11, 26, 7, 0, tzinfo=UTC)),
        ("set a timer for 10 minutes", later(10)),
    ],
)
async def test_an_alarm_or_a_timer_is_a_reminder(lane, alarm, due):
    chat = Conversation(lane)
    await chat.say("remind me in 2 hours to call mom", T0)
    result = await chat.say(alarm, T0)
    (job,) = result.turn.job_refs
    assert job.due_at == due
    assert (result.turn.assistant_text or "").startswith("I'll remind you")
    result = await chat.say("cancel the alarm", later(1))
    assert [(j.job_id, j.status) for j in result.turn.job_refs] == [(job.job_id, "cancelled")]


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("what time is it in Tokyo?", "It's 08:00 on Thursday 26 November 2026 in Tokyo"),
        ("what's the time in New York", "It's 18:00 on Wednesday 25 November 2026 in New York"),
        ("what time is it in Atlantis?", "I don't know the time zone of Atlantis"),
    ],
)
async def test_the_time_in_a_city_is_told_in_its_zone(lane, question, said):
    assert said in await Conversation(lane).reply(question, T0)


@pytest.mark.parametrize(
    ("request_text", "label", "due"),
    [
        ("ping me in 30 mins about the laundry", "the laundry", later(30)),
        ("nudge me in 2 hours to call the bank", "call the bank", later(120)),
        ("don't let me forget to call the bank tomorrow", "call the bank",
         datetime(2026, 11, 26, 9, 0, tzinfo=UTC)),
        ("make sure I remember to pay rent on Friday at 6pm", "pay rent",
         datetime(2026, 11, 27, 18, 0, tzinfo=UTC)),
        ("give me a nudge at 7am to go running", "go running",
         datetime(2026, 11, 26, 7, 0, tzinfo=UTC)),
    ],
)  # fmt: skip
async def test_a_reminder_asked_for_in_other_words_is_set(lane, request_text, label, due):
    result = await Conversation(lane).say(request_text, T0)
    (job,) = result.turn.job_refs
    assert (job.label, job.due_at) == (label, due)
    assert (result.turn.assistant_text or "").startswith("I'll remind you")


@pytest.mark.parametrize("question", ["reminders?", "my reminders?", "any reminders?", "Reminders"])
async def test_a_bare_word_asks_for_the_reminders(lane, question):
    chat = Conversation(lane)
    await chat.say("remind me in 20 minutes to check the oven", T0)
    assert "check the oven" in await chat.reply(question, later(1))


@pytest.mark.parametrize(
    "push", ["push the oven one back 15 minutes", "push it back 15 minutes", "put the oven "
             "reminder back 15 minutes"],
)
async def test_a_reminder_pushed_back_is_snoozed(lane, push):
    chat = Conversation(lane)
    (job,) = (await chat.say("remind me in 1 hour to check the oven", T0)).turn.job_refs
    result = await chat.say(push, later(1))
    moved, again = result.turn.job_refs
    assert (moved.job_id, moved.status) == (job.job_id, "cancelled")
    assert (again.label, again.status, again.due_at) == ("check the oven", "scheduled", later(75))


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("when's the swimming reminder?", "I'll remind you on 28 November at 10:00 UTC to book"),
        ("what time is my reminder to call Ana?", "I'll remind you tomorrow at 18:00 UTC to call"),
        ("is the swimming lessons reminder still set?", "on 28 November at 10:00 UTC"),
        ("did you set the reminder to call Ana?", "tomorrow at 18:00 UTC to call Ana."),
        ("when's the dentist reminder?", "I have no reminder about “dentist”. Your reminders:"),
        ("when's my reminder?", "Which one? Your reminders:\n• book swimming lessons, on 28"),
    ],
)
async def test_a_question_about_one_reminder_says_when_it_is_due(lane, question, answer):
    """Asked about a reminder by its words, the bot says when it fires (not "kept on your list");
    one it does not have is said so, with the ones it has."""
    chat = Conversation(lane)
    await chat.say("remind me on Saturday at 10am to book swimming lessons", T0)
    await chat.say("remind me tomorrow at 6pm to call Ana", later(1))
    said = await chat.reply(question, later(2))
    assert answer in said
    assert "kept it on your list" not in said
    assert len(lane.chat_jobs(CHAT)) == 2


async def test_a_question_about_a_reminder_with_none_set_says_so(lane):
    chat = Conversation(lane)
    assert await chat.reply("when's my reminder?", T0) == "You have no reminders set."


@pytest.mark.parametrize(
    ("change", "due"),
    [
        ("actually make it 11", datetime(2026, 11, 28, 11, 0, tzinfo=UTC)),
        ("make it nine", datetime(2026, 11, 28, 9, 0, tzinfo=UTC)),
        ("make that 12", datetime(2026, 11, 28, 12, 0, tzinfo=UTC)),
        ("move it to 8", datetime(2026, 11, 28, 8, 0, tzinfo=UTC)),
    ],
)
async def test_a_number_alone_moves_a_reminder_hours_away_to_the_nearest_such_hour(
    lane, change, due
):
    """"remind me on Saturday at 10am ...", then "make it 11": 11:00 that Saturday (not 23:00)."""
    chat = Conversation(lane)
    set_at_ten = await chat.say("remind me on Saturday at 10am to book swimming lessons", T0)
    (job,) = set_at_ten.turn.job_refs
    result = await chat.say(change, later(1))
    assert [j.due_at for j in result.turn.job_refs if j.status == "scheduled"] == [due]
    assert (result.turn.assistant_text or "").startswith("Moved: I'll remind you")
    assert await lane.complete_job(CHAT, job.job_id, "⏰ Reminder: book swimming lessons") is None


async def test_a_number_alone_of_a_reminder_minutes_away_asks_which_it_means(lane):
    chat = Conversation(lane)
    (job,) = (await chat.say("remind me in 20 minutes to call Ana", T0)).turn.job_refs
    said = await chat.reply("make it 2", later(1))
    assert said == "Make it 2 o'clock or in 2 hours? Say “make it 2pm” or “make it 2 hours”."
    assert [j.job_id for j in lane.chat_jobs(CHAT)] == [job.job_id]


async def test_a_question_about_a_reminder_still_asking_its_hour_says_how_to_set_it(lane):
    """"remind me on Saturday at 10 ..." waits on "morning or evening?": asked about, the
    reminder is said not to be set yet, with the request to send, its hour said."""
    chat = Conversation(lane)
    await chat.say("remind me on Saturday at 10 to book swimming lessons", T0)
    said = await chat.reply("when's the swimming reminder?", later(1))
    assert said == (
        "It isn't set yet: say it with am or pm, e.g. “remind me on Saturday at 10am to book "
        "swimming lessons”."
    )
    assert lane.chat_jobs(CHAT) == ()


async def test_what_is_on_a_day_lists_the_reminders_set_for_it(lane):
    """"what do I have on Tuesday?" lists the events told of and the reminders due that day,
    not those of other days."""
    chat = Conversation(lane)
    await chat.say("I have a dentist appointment on Tuesday at 3pm", T0)
    await chat.say("remind me on Tuesday at 9am to call the bank", later(1))
    await chat.say("remind me tomorrow at 8am to stretch", later(2))
    said = await chat.reply("what do I have on Tuesday?", later(3))
    assert said == (
        "Your dentist appointment is on Tue 1 Dec at 15:00.\n\n"
        "Reminders:\n• call the bank, on 1 December at 09:00 UTC"
    )
    assert await chat.reply("what am I doing tomorrow?", later(4)) == (
        "Reminders:\n• stretch, tomorrow at 08:00 UTC"
    )


@pytest.mark.parametrize(
    ("told", "asked", "due", "said"),
    [
        ("my wife Sara's birthday is on 12 April", "remind me a day before Sara's birthday",
         datetime(2027, 4, 11, 9, 0, tzinfo=UTC),
         "I'll remind you on 11 April 2027 at 09:00 UTC about Sara's birthday."),
        ("my flight to Oslo is on Friday at 6pm", "remind me 3 hours before my flight",
         datetime(2026, 11, 27, 15, 0, tzinfo=UTC),
         "I'll remind you on 27 November at 15:00 UTC about your flight."),
        ("my flight to Oslo is on Friday at 6pm", "remind me the night before the flight to pack",
         datetime(2026, 11, 26, 19, 0, tzinfo=UTC),
         "I'll remind you tomorrow at 19:00 UTC to pack."),
        ("I'm going to Rome on the 12th",
         "remind me two days before my trip to Rome to book a taxi",
         datetime(2026, 12, 10, 9, 0, tzinfo=UTC),
         "I'll remind you on 10 December at 09:00 UTC to book a taxi."),
        ("the school play is on 4 December", "please remind me on the morning of the school play",
         datetime(2026, 12, 4, 9, 0, tzinfo=UTC),
         "I'll remind you on 4 December at 09:00 UTC about the school play."),
        ("my dentist appointment is next Thursday",
         "remind me a week before my dentist appointment",
         None, "That would be due already"),
        ("my sister's birthday is on 3 May", "remind me an hour before my sister's birthday",
         None, "I don't know what time that is: your sister's birthday is 3 May."),
        ("I like jazz", "remind me the day before the party",
         None, "I don't know when the party is."),
        ("my exam is on the 14th of December", "remind me the day before",
         datetime(2026, 12, 13, 9, 0, tzinfo=UTC),
         "I'll remind you on 13 December at 09:00 UTC about your exam."),
    ],
)  # fmt: skip
async def test_a_reminder_is_set_by_what_it_comes_before(lane, told, asked, due, said):
    """ "remind me a day before Sara's birthday" finds the day among the facts told; a thing
    without a day (or a time, for hours), or a reminder due already, is said, and none is set.
    A reminder set says that alone (no word of another time to give)."""
    chat = Conversation(lane)
    await chat.say(told, T0)
    result = await chat.say(asked, later(1))
    if due:
        assert result.turn.assistant_text == said
    else:
        assert said in (result.turn.assistant_text or "")
    assert [j.due_at for j in result.turn.job_refs] == ([due] if due else [])


async def test_a_to_do_ticked_off_cancels_the_reminder_set_for_it(lane):
    """ "I called the plumber" ticks off the to-do and cancels the reminder to call the plumber
    (not one of something else): a reminder of what is done is not needed any more."""
    chat = Conversation(lane)
    await chat.say("I need to call the plumber", T0)
    (plumber,) = (await chat.say("remind me at 7pm to call the plumber", later(1))).turn.job_refs
    await chat.say("remind me in 2 hours to check the oven", later(2))
    result = await chat.say("I called the plumber", later(3))
    assert result.turn.assistant_text == (
        "Great, I've ticked off: call the plumber.\n\n"
        "I've cancelled its reminder too: call the plumber."
    )
    assert [(j.job_id, j.status) for j in result.turn.job_refs] == [
        (plumber.job_id, "cancelled")
    ]
    listed = await chat.reply("what reminders do I have?", later(4))
    assert "check the oven" in listed
    assert "plumber" not in listed


async def test_an_event_called_off_cancels_the_reminder_set_before_it(lane):
    """ "cancel my flight" ends the flight and the reminder set before it (not another)."""
    chat = Conversation(lane)
    await chat.say("my flight to Oslo is on Friday at 6pm", T0)
    (flight,) = (await chat.say("remind me 3 hours before my flight", later(1))).turn.job_refs
    await chat.say("remind me tomorrow at 8am to pack", later(2))
    result = await chat.say("cancel my flight", later(3))
    assert result.turn.assistant_text == (
        "Noted: your flight to Oslo is called off.\n\n"
        "I've cancelled its reminder too: your flight."
    )
    assert [(j.job_id, j.status) for j in result.turn.job_refs] == [(flight.job_id, "cancelled")]
    listed = await chat.reply("what reminders do I have?", later(4))
    assert "pack" in listed
    assert "flight" not in listed
    assert await chat.reply("how many days until my flight?", later(5)) == (
        "Your flight to Oslo is called off."
    )


async def test_an_event_moved_moves_the_reminders_set_before_it(lane):
    """ "my flight got moved to Sunday at 7pm": a reminder 3 hours before it is 3 hours before
    the new time, one 2 days before (at 09:00) is 2 days before the new day at 09:00; the old
    ones are cancelled, another reminder stays."""
    chat = Conversation(lane)
    await chat.say("my flight to Oslo is on the 4th at 6pm", T0)  # Fri 4 Dec
    (hours,) = (await chat.say("remind me 3 hours before my flight", later(1))).turn.job_refs
    (days,) = (await chat.say("remind me 2 days before my flight", later(2))).turn.job_refs
    await chat.say("remind me on Thursday at 8am to pack", later(3))
    assert (hours.due_at, days.due_at) == (
        datetime(2026, 12, 4, 15, 0, tzinfo=UTC),
        datetime(2026, 12, 2, 9, 0, tzinfo=UTC),
    )
    result = await chat.say("my flight to Oslo is now on the 6th at 7pm", later(4))
    said = result.turn.assistant_text or ""
    assert "I've moved its reminder too: your flight, on 6 December at 16:00 UTC." in said
    assert "I've moved its reminder too: your flight, on 4 December at 09:00 UTC." in said
    cancelled = {j.job_id for j in result.turn.job_refs if j.status == "cancelled"}
    assert cancelled == {hours.job_id, days.job_id}
    due = sorted(j.due_at for j in result.turn.job_refs if j.status == "scheduled")
    assert due == [
        datetime(2026, 12, 4, 9, 0, tzinfo=UTC),
        datetime(2026, 12, 6, 16, 0, tzinfo=UTC),
    ]
    listed = await chat.reply("what reminders do I have?", later(5))
    assert "pack" in listed
    assert listed.count("your flight") == 2
