"""When a reminder is due: the phrases people say, read in their time zone.

Now is Wednesday 25 November 2026, 23:00 UTC in most cases (23:00 in Lisbon, which is on UTC
in winter; 00:00 on Thursday in Berlin).
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from agent.memory.rules.reminder_requests import is_reminder_request, parse_reminder
from agent.memory.rules.reminder_time import WHEN, due_instead, due_time, named_days

NOW = datetime(2026, 11, 25, 23, 0, tzinfo=UTC)  # a Wednesday
NOON = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
LISBON = ZoneInfo("Europe/Lisbon")
NEW_YORK = ZoneInfo("America/New_York")
UTC_ZONE = ZoneInfo("UTC")


def at(*parts: int, zone: ZoneInfo = UTC_ZONE) -> datetime:
    return datetime(*parts, tzinfo=zone).astimezone(UTC)


@pytest.mark.parametrize(
    ("phrase", "due"),
    [
        ("tomorrow at 8am", at(2026, 11, 26, 8, 0)),
        ("tomorrow 8am", at(2026, 11, 26, 8, 0)),
        ("tomorrow at 20:00", at(2026, 11, 26, 20, 0)),
        ("tomorrow", at(2026, 11, 26, 9, 0)),
        ("tomorrow morning", at(2026, 11, 26, 9, 0)),
        ("tomorrow evening", at(2026, 11, 26, 19, 0)),
        ("on Friday", at(2026, 11, 27, 9, 0)),
        ("friday at 6pm", at(2026, 11, 27, 18, 0)),
        ("on Friday at 18:30", at(2026, 11, 27, 18, 30)),
        ("next Monday", at(2026, 11, 30, 9, 0)),
        ("next monday at 9:15", at(2026, 11, 30, 9, 15)),
        ("sunday morning", at(2026, 11, 29, 9, 0)),
        ("the day after tomorrow at noon", at(2026, 11, 27, 12, 0)),
        ("on the 3rd of December at 5pm", at(2026, 12, 3, 17, 0)),
        ("on 3 May", at(2027, 5, 3, 9, 0)),
        ("December 24th at 7 p.m.", at(2026, 12, 24, 19, 0)),
        # a day of the month alone is the next one (dateparser reads "3rd" as March, and
        # "the 14th" in the past)
        ("on the 3rd", at(2026, 12, 3, 9, 0)),
        ("on the 14th at 8am", at(2026, 12, 14, 8, 0)),
        ("the 28th", at(2026, 11, 28, 9, 0)),
        ("on 3rd", at(2026, 12, 3, 9, 0)),
        ("on 24th December at 6pm", at(2026, 12, 24, 18, 0)),
        ("on the 3rd of May 2027", at(2027, 5, 3, 9, 0)),
        ("in 2 hours", NOW + timedelta(hours=2)),
        ("in 10 minutes", NOW + timedelta(minutes=10)),
        ("in half an hour", NOW + timedelta(minutes=30)),
        ("at 8am", at(2026, 11, 26, 8, 0)),
        ("at 23:30", at(2026, 11, 25, 23, 30)),
        # Months: the first of the month named, or the same day and time months on (the last
        # day of a shorter month).
        ("next month", at(2026, 12, 1, 9, 0)),
        ("in March", at(2027, 3, 1, 9, 0)),
        ("in a month", at(2026, 12, 25, 23, 0)),
        ("in 3 months", at(2027, 2, 25, 23, 0)),
        ("in six months", at(2027, 5, 25, 23, 0)),
        # The weekend after the coming one (Wednesday 25: this weekend is the 28th).
        ("next weekend", at(2026, 12, 5, 9, 0)),
        ("next week", at(2026, 12, 2, 9, 0)),
        # The same moment a day or a week on.
        ("this time tomorrow", NOW + timedelta(days=1)),
        ("this time next week", NOW + timedelta(days=7)),
    ],
)
def test_a_phrase_is_due_when_a_person_means(phrase, due):
    """Weekdays, "next", dates, months, parts of the day and delays; a day alone is at 09:00."""
    assert re.fullmatch(WHEN, phrase, re.IGNORECASE)
    assert due_time(phrase, NOW, UTC_ZONE) == due


@pytest.mark.parametrize("phrase", ["tonight", "this evening", "this afternoon"])
def test_a_part_of_today_already_over_is_not_tomorrows(phrase):
    """At 23:00 "this evening" is over: no time is guessed (the concierge asks for one), while
    "in the evening" is tomorrow's."""
    assert due_time(phrase, NOW, UTC_ZONE) is None
    assert due_time("in the evening", NOW, UTC_ZONE) == at(2026, 11, 26, 19, 0)


def test_a_month_later_of_the_31st_is_the_last_day_of_a_shorter_month():
    january_31 = datetime(2027, 1, 31, 10, 0, tzinfo=UTC)
    assert due_time("in a month", january_31, UTC_ZONE) == datetime(2027, 2, 28, 10, 0, tzinfo=UTC)
    assert due_time("in 13 months", january_31, UTC_ZONE) is None  # past a year


def test_the_day_of_the_month_said_on_that_day_after_its_hour_is_next_months():
    """ "on the 25th" at 23:00 on the 25th: the 25th of December, not refused as passed."""
    assert due_time("on the 25th", NOW, UTC_ZONE) == datetime(2026, 12, 25, 9, 0, tzinfo=UTC)
    assert due_time("on the 25th at 11:30pm", NOW, UTC_ZONE) == datetime(
        2026, 11, 25, 23, 30, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("phrase", "due"),
    [
        # Lisbon keeps UTC in winter and UTC+1 in summer: the offset of the day found.
        ("tomorrow at 8am", at(2026, 11, 26, 8, 0, zone=LISBON)),
        ("on 3 May at 10:00", at(2027, 5, 3, 10, 0, zone=LISBON)),
    ],
)
def test_a_phrase_is_read_on_the_users_wall_clock(phrase, due):
    """The clock time is the user's: 10:00 in Lisbon in May is 09:00 UTC."""
    assert due_time(phrase, NOW, LISBON) == due
    assert due_time("on 3 May at 10:00", NOW, LISBON) == datetime(2027, 5, 3, 9, 0, tzinfo=UTC)


def test_new_york_tonight_is_new_york_tonight():
    """At 23:00 UTC it is 18:00 in New York: "tonight at 9" is 21:00 there, 02:00 UTC."""
    assert due_time("tonight at 9", NOW, NEW_YORK) == datetime(2026, 11, 26, 2, 0, tzinfo=UTC)
    assert due_time("tonight", NOW, NEW_YORK) == datetime(2026, 11, 26, 2, 0, tzinfo=UTC)


def test_a_delay_is_an_hour_whatever_the_zone():
    """ "in 2 hours" is two hours of real time in any zone."""
    assert due_time("in 2 hours", NOW, NEW_YORK) == NOW + timedelta(hours=2)


def test_a_phrase_ending_in_utc_is_read_in_utc():
    assert due_time("at 18:30 utc", NOON, LISBON) == datetime(2026, 11, 25, 18, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    "phrase",
    [
        "today at 8am",  # passed at noon: not moved to tomorrow
        "this morning",  # over at noon: not tomorrow morning
        "at 6",  # morning or evening?
        "tomorrow at 9",
        "in 0 minutes",
        "in 400 days",
    ],
)
def test_a_passed_ambiguous_or_too_far_time_is_refused(phrase):
    assert due_time(phrase, NOON, UTC_ZONE) is None


@pytest.mark.parametrize(
    ("text", "label", "due"),
    [
        ("remind me tomorrow at 8am to take my vitamins", "take my vitamins",
         at(2026, 11, 26, 8, 0)),
        ("remind me on Friday to water the plants", "water the plants", at(2026, 11, 27, 9, 0)),
        ("Remind me next Monday at 9:30 to renew my passport", "renew my passport",
         at(2026, 11, 30, 9, 30)),
        ("can you remind me to call the bank tomorrow?", "call the bank", at(2026, 11, 26, 9, 0)),
        ("please remind me about the dentist on Thursday at 3pm", "the dentist",
         at(2026, 11, 26, 15, 0)),
        ("tomorrow at 7am, remind me to feed the cat", "feed the cat", at(2026, 11, 26, 7, 0)),
        ("set a reminder for the team call next Tuesday at 10am", "the team call",
         at(2026, 12, 1, 10, 0)),
        ("remind me at half past five pm to call dad", "call dad", at(2026, 11, 26, 17, 30)),
        ("remind me tomorrow at quarter to eight in the morning to leave", "leave",
         at(2026, 11, 26, 7, 45)),
        ("remind me at a quarter past 9am to stretch", "stretch", at(2026, 11, 26, 9, 15)),
        ("remind me at 7 o'clock pm to cook", "cook", at(2026, 11, 26, 19, 0)),
        ("remind me at half past seven tonight to call mum", "call mum", at(2026, 11, 26, 19, 30)),
        ("remind me at half 7 tonight to call mum", "call mum", at(2026, 11, 26, 19, 30)),
        ("remind me at half 6 in the evening to start dinner", "start dinner",
         at(2026, 11, 26, 18, 30)),
        ("remind me in a fortnight to check the tyres", "check the tyres",
         at(2026, 12, 9, 23, 0)),
        ("remind me in the morning to take out the bins", "take out the bins",
         at(2026, 11, 26, 9, 0)),
        ("remind me in the evening to call Jo", "call Jo", at(2026, 11, 26, 19, 0)),
        ("remind me next weekend to wash the car", "wash the car", at(2026, 12, 5, 9, 0)),
        ("remind me next month to renew my gym membership", "renew my gym membership",
         at(2026, 12, 1, 9, 0)),
        ("remind me in 3 months to check the boiler", "check the boiler",
         at(2027, 2, 25, 23, 0)),
        ("remind me in April to book the MOT", "book the MOT", at(2027, 4, 1, 9, 0)),
    ],
)  # fmt: skip
def test_a_reminder_request_in_natural_time(text, label, due):
    request = parse_reminder(text, NOW)
    assert request is not None
    assert (request.label, request.due_at) == (label, due)


def test_the_same_words_in_another_zone_are_another_moment():
    """ "tomorrow at 8am" for a user in New York is 13:00 UTC."""
    request = parse_reminder("remind me tomorrow at 8am to run", NOW, NEW_YORK)
    assert request is not None
    assert request.due_at == datetime(2026, 11, 26, 13, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    ["remind me to meet Bob at 5 Main Street", "remind me to buy a new phone", "tomorrow"],
)
def test_no_time_phrase_no_reminder(text):
    assert parse_reminder(text, NOW) is None


@pytest.mark.parametrize(
    "text",
    [
        "remind me at half past five to call dad",
        "remind me at quarter to 6 to go",
        "remind me at half 6 to start dinner",
    ],
)
def test_a_spoken_hour_nothing_disambiguates_is_a_reminder_refused(text):
    """ "half past five" is morning or evening: a reminder request (the bot asks for 5:30am or
    17:30), not a message it did not understand."""
    assert is_reminder_request(text)
    assert parse_reminder(text, NOW) is None


def test_a_hostile_phrase_is_read_quickly():
    text = "remind me " + "tomorrow at " * 300 + "to x" + " half past" * 400
    began = time.perf_counter()
    parse_reminder(text[:4096], NOW)
    assert time.perf_counter() - began < 1.0


def _at(*moment: int) -> datetime:
    return datetime(*moment, tzinfo=UTC)


@pytest.mark.parametrize(
    ("when", "before", "now", "zone", "expected"),
    [
        # A clock time alone: the one nearest the reminder's old time.
        ("11am", _at(2026, 11, 26, 9, 0), _at(2026, 11, 25, 10, 0), "UTC",
         _at(2026, 11, 26, 11, 0)),
        ("11:30pm", _at(2026, 11, 26, 0, 31), _at(2026, 11, 25, 23, 5), "UTC",
         _at(2026, 11, 25, 23, 30)),
        ("11am", _at(2026, 11, 30, 14, 30), _at(2026, 11, 25, 23, 0),
         "America/New_York", _at(2026, 11, 30, 16, 0)),
        # ... and the next one ahead when the reminder's day has it behind.
        ("8am", _at(2026, 11, 25, 23, 20), _at(2026, 11, 25, 23, 1), "UTC",
         _at(2026, 11, 26, 8, 0)),
        # A day alone keeps the reminder's time of day; both are read as said.
        ("Tuesday", _at(2026, 11, 30, 9, 30), _at(2026, 11, 25, 23, 0), "UTC",
         _at(2026, 12, 1, 9, 30)),
        ("Tuesday at 8am", _at(2026, 11, 30, 9, 30), _at(2026, 11, 25, 23, 0), "UTC",
         _at(2026, 12, 1, 8, 0)),
        ("in 2 hours", _at(2026, 11, 30, 9, 30), _at(2026, 11, 25, 23, 0), "UTC",
         _at(2026, 11, 26, 1, 0)),
    ],
)  # fmt: skip
def test_a_moved_reminder_keeps_what_the_move_does_not_say(when, before, now, zone, expected):
    assert due_instead(when, before, now, ZoneInfo(zone)) == expected


def test_a_move_to_no_time_is_none():
    now = _at(2026, 11, 25, 23, 0)
    assert due_instead("sometime", now + timedelta(hours=1), now, ZoneInfo("UTC")) is None


def test_in_the_morning_said_before_it_is_this_morning():
    """ "in the morning" said at 6am is this morning at 9; said in the evening, tomorrow's."""
    early = datetime(2026, 11, 25, 6, 0, tzinfo=UTC)
    request = parse_reminder("remind me in the morning to call", early)
    assert request is not None
    assert request.due_at == at(2026, 11, 25, 9, 0)


@pytest.mark.parametrize(
    ("said", "read"),
    [
        ("remind me on Christmas Eve to call grandma", "remind me on 24 December to call grandma"),
        ("remind me Halloween at 6pm", "remind me on 31 October at 6pm"),
        ("on New Year's Day remind me to rest", "on 1 January remind me to rest"),
        ("remind me this weekend to clean the car", "remind me on Saturday to clean the car"),
        ("remind me at the weekend", "remind me on Saturday"),
        ("remind me on Friday", "remind me on Friday"),
        ("I had a great Christmasy day", "I had a great Christmasy day"),
    ],
)
def test_a_day_named_by_its_name_is_said_as_its_date(said, read):
    assert named_days(said) == read
