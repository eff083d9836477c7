"""Skipping one occurrence of a repeating reminder in words, through a real lane: the next one
or a later day's; and "what's my next reminder?" (agent/engines/rule_reminder_skip.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from tests.test_rule_based_lane import CHAT, Conversation

# Wednesday 25 November 2026, 23:00 UTC; the bins go out every Monday at 08:00 (the first on
# Monday 30 November).
T0 = datetime(2026, 11, 25, 23, 0, tzinfo=UTC)
BINS = "remind me every Monday at 8am to put the bins out"
FIRST = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def later(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.mark.parametrize(
    "skip",
    [
        "skip the next bins reminder",
        "skip the bins reminder this week",
        "please skip the next one",
        "can you skip the bins on Monday?",
        "don't remind me about the bins this week",
        "no need to remind me to put the bins out on Monday",
        "skip next Monday's bins reminder",
    ],
)
async def test_the_next_occurrence_skipped_goes_on_from_the_one_after(lane, skip):
    chat = Conversation(lane)
    (series,) = (await chat.say(BINS, T0)).turn.job_refs
    await chat.say("remind me in 2 hours to call mum", later(1))  # one-time: not skippable
    result = await chat.say(skip, later(2))
    assert result.turn.assistant_text == (
        "Skipped the one on 30 November at 08:00 UTC: I'll remind you next on 7 December at "
        "08:00 UTC to put the bins out (every Monday at 08:00 UTC)."
    )
    cancelled, following = result.turn.job_refs
    assert (cancelled.job_id, cancelled.status) == (series.job_id, "cancelled")
    assert (following.label, following.status) == ("put the bins out", "scheduled")
    assert following.due_at == FIRST + timedelta(days=7)
    assert following.repeat == series.repeat
    labels = {j.label for j in lane.chat_jobs(CHAT)}
    assert labels == {"put the bins out", "call mum"}  # nothing else set or dropped


async def test_a_later_occurrence_skipped_is_kept_on_the_series_until_it_passes(lane):
    chat = Conversation(lane)
    await chat.say(BINS, T0)
    result = await chat.say("skip the bins on the 14th", later(1))
    assert result.turn.assistant_text == (
        "Skipped the one on Monday 14 December: I'll still remind you on 30 November at 08:00 "
        "UTC to put the bins out (every Monday at 08:00 UTC)."
    )
    (series,) = lane.chat_jobs(CHAT)
    assert series.due_at == FIRST
    assert series.repeat is not None
    assert series.repeat.skips == (date(2026, 12, 14),)
    again = await chat.reply("skip it on 21 December", later(2))
    assert again.startswith("Skipped the one on Monday 21 December")
    (series,) = lane.chat_jobs(CHAT)
    assert series.repeat is not None
    assert series.repeat.skips == (date(2026, 12, 14), date(2026, 12, 21))


async def test_a_day_the_series_does_not_fall_on_skips_nothing(lane):
    chat = Conversation(lane)
    (series,) = (await chat.say(BINS, T0)).turn.job_refs
    result = await chat.say("skip the bins reminder on Tuesday", later(1))
    assert result.turn.assistant_text == (
        "Your reminder to put the bins out is every Monday at 08:00 UTC: none falls on Tuesday 1 "
        "December."
    )
    assert result.turn.job_refs == ()
    assert [j.job_id for j in lane.chat_jobs(CHAT)] == [series.job_id]


async def test_a_one_time_reminder_skipped_is_cancelled(lane):
    chat = Conversation(lane)
    (once,) = (await chat.say("remind me tomorrow at 6pm to call the vet", T0)).turn.job_refs
    result = await chat.say("skip the vet reminder", later(1))
    assert result.turn.assistant_text == (
        "Cancelled the reminder: call the vet (it was set only once)."
    )
    assert [(j.job_id, j.status) for j in result.turn.job_refs] == [(once.job_id, "cancelled")]
    assert lane.chat_jobs(CHAT) == ()


async def test_two_series_and_no_name_ask_which(lane):
    chat = Conversation(lane)
    await chat.say(BINS, T0)
    await chat.say("remind me every day at 9pm to floss", later(1))
    said = await chat.reply("skip the next one", later(2))
    assert said.startswith("Which reminder? Say e.g. “skip reminder 1”")
    assert len(lane.chat_jobs(CHAT)) == 2
    assert (await chat.reply("skip the flossing reminder tomorrow", later(3))).startswith(
        "Skipped the one tomorrow at 21:00 UTC: I'll remind you next on 27 November at 21:00"
    )


async def test_asking_not_to_be_reminded_sets_no_reminder(lane):
    """ "don't remind me about the bins next Monday" with nothing set: no reminder "about the
    bins" is set by mistake."""
    result = await Conversation(lane).say("don't remind me about the bins next Monday", T0)
    assert result.turn.assistant_text == "You have no reminders set, so there is nothing to skip."
    assert result.turn.job_refs == ()


@pytest.mark.parametrize(
    "question",
    ["what's my next reminder?", "when is the next reminder?", "what reminder is next?",
     "when will you next remind me?"],
)  # fmt: skip
async def test_the_next_reminder_is_the_one_due_soonest(lane, question):
    chat = Conversation(lane)
    await chat.say(BINS, T0)
    await chat.say("remind me tomorrow at 6pm to call the vet", later(1))
    assert await chat.reply(question, later(2)) == (
        "Your next reminder is tomorrow at 18:00 UTC to call the vet."
    )
