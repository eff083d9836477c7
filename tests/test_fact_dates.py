"""Tests of agent/memory/rules/fact_dates.py: relative dates kept as dates, said from today."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from agent.memory.rules.fact_dates import (
    absolute_dates,
    dated_facts,
    kept_day,
    said_from_now,
    same_time,
    zone_in,
)
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.schemas import Fact

# Thursday 26 November 2026, 14:00 UTC.
NOW = datetime(2026, 11, 26, 14, 0, tzinfo=UTC)
UTC_ZONE = ZoneInfo("UTC")


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("test is tomorrow", "test is on Fri 27 Nov"),
        ("dentist appointment is next Tuesday", "dentist appointment is on Tue 1 Dec"),
        ("appointment is on Tuesday at 3pm", "appointment is on Tue 1 Dec at 15:00"),
        ("party is this Saturday", "party is on Sat 28 Nov"),
        ("a trip to Rome in two weeks", "a trip to Rome on Thu 10 Dec"),
        ("a trip to Rome in 2 weeks' time", "a trip to Rome on Thu 10 Dec"),
        ("wedding is in a fortnight", "wedding is on Thu 10 Dec"),
        ("exam is in 3 days", "exam is on Sun 29 Nov"),
        ("call is in 2 hours", "call is on Thu 26 Nov at 16:00"),
        ("interview is at 10am tomorrow", "interview is on Fri 27 Nov at 10:00"),
        ("dinner is tonight", "dinner is on Thu 26 Nov at night"),
        ("dinner is tomorrow evening", "dinner is on Fri 27 Nov in the evening"),
        ("exam is the day after tomorrow", "exam is on Sat 28 Nov"),
        ("test was yesterday", "test was on Wed 25 Nov"),
        ("to go hiking this weekend", "to go hiking the weekend of Sat 28 Nov"),
        ("to paint the kitchen next weekend", "to paint the kitchen the weekend of Sat 5 Dec"),
        ("meeting is next week", "meeting is the week of Mon 30 Nov"),
        ("to paint the kitchen next month", "to paint the kitchen in December"),
        ("exam is in 3 months", "exam is in February 2027"),
        ("to move house next year", "to move house in 2027"),
        ("trip is in six weeks", "trip is on Thu 7 Jan 2027"),
        # an hour said without morning or evening is kept as said, after the day
        ("exam is next Tuesday at 10", "exam is on Tue 1 Dec at 10"),
        ("call is tomorrow at 3", "call is on Fri 27 Nov at 3"),
        # a day of the calendar without its year: the next one, today's included
        ("dentist appointment is on the 14th", "dentist appointment is on Mon 14 Dec"),
        ("party is on the 26th", "party is on Thu 26 Nov"),
        ("party is on the 25th", "party is on Fri 25 Dec"),
        ("flight to Berlin is on 14 March", "flight to Berlin is on Sun 14 Mar 2027"),
        ("a trip to Rome on Dec 20th", "a trip to Rome on Sun 20 Dec"),
        ("flight is on the 3rd of March at 6pm", "flight is on Wed 3 Mar 2027 at 18:00"),
        ("dinner is on the 30th at 7", "dinner is on Mon 30 Nov at 7"),
        ("wedding is on the 31st", "wedding is on Thu 31 Dec"),
    ],
)
def test_a_relative_date_is_replaced_by_the_date_it_names(said, kept):
    assert absolute_dates(said, NOW, UTC_ZONE) == kept


@pytest.mark.parametrize(
    "said",
    [
        "flight to Berlin is on 14 March 2027",
        "a trip to Japan in August",
        "meeting is at 3pm",
        "a trip to Oslo in May",
        "I read 3 books in may",
    ],
)
def test_a_date_said_absolutely_stays_as_said(said):
    assert absolute_dates(said, NOW, UTC_ZONE) == said


@pytest.mark.parametrize("said", ["my birthday is on the 3rd of June", "birthday is 14 March"])
def test_a_birthday_keeps_its_day_of_the_year(said):
    """A birthday is every year's: its day is kept as said, without a weekday or a year."""
    assert absolute_dates(said, NOW, UTC_ZONE, calendar=False) == said


def test_a_relative_date_is_read_on_the_users_wall_clock():
    """At 23:30 UTC on Thursday it is already Friday in Tokyo: "tomorrow" is Saturday there."""
    late = NOW.replace(hour=23, minute=30)
    assert absolute_dates("test is tomorrow", late, UTC_ZONE) == "test is on Fri 27 Nov"
    assert absolute_dates("test is tomorrow", late, ZoneInfo("Asia/Tokyo")) == (
        "test is on Sat 28 Nov"
    )


def test_a_naive_time_is_taken_as_utc():
    naive = NOW.replace(tzinfo=None)
    assert absolute_dates("test is tomorrow", naive, UTC_ZONE) == "test is on Fri 27 Nov"


def test_an_hour_nothing_disambiguates_is_kept_as_said():
    """ "at 6" may be morning or evening: the day is kept as the date it names (next week
    "Tuesday" would name another), the hour as the user said it."""
    said = "appointment is on Tuesday at 6"
    assert absolute_dates(said, NOW, UTC_ZONE) == "appointment is on Tue 1 Dec at 6"


def test_only_dated_kinds_are_dated_and_a_plan_is_keyed_by_its_date():
    """A plan's key holds its value: the same words said two weeks apart are two plans. A
    routine ("every Monday") or a like keeps its words."""
    said = extract_facts("I'm flying to Rome next Friday", turn=3)
    (first,) = dated_facts(said, NOW, UTC_ZONE)
    (second,) = dated_facts(said, NOW + timedelta(days=14), UTC_ZONE)
    assert first.value == "a trip to Rome on Fri 27 Nov"
    assert first.key == "plan:a trip to rome on fri 27 nov"
    assert second.key == "plan:a trip to rome on fri 11 dec"
    assert first.turn == 3
    routine = Fact(key="routine:swim on monday", value="swim on Monday", turn=1)
    likes = Fact(key="likes:brunch tomorrow", value="brunch tomorrow", turn=1)
    assert dated_facts([routine, likes], NOW, UTC_ZONE) == (routine, likes)
    event = extract_facts("my dentist appointment is tomorrow", turn=1)
    assert [f.key for f in dated_facts(event, NOW, UTC_ZONE)] == ["event:dentist appointment"]


@pytest.mark.parametrize(
    ("kept", "days_later", "said"),
    [
        ("test is on Fri 27 Nov", 0, "test is tomorrow, Fri 27 Nov"),
        ("test is on Fri 27 Nov", 1, "test is today"),
        ("test is on Fri 27 Nov", 2, "test was on Fri 27 Nov"),
        ("tests are on Fri 27 Nov", 9, "tests were on Fri 27 Nov"),
        ("test is on Tue 1 Dec at 15:00", 0, "test is on Tue 1 Dec at 15:00"),
        ("test is on Fri 27 Nov at 10:00", 0, "test is tomorrow, Fri 27 Nov at 10:00"),
        ("test is on Fri 27 Nov at 10:00", 1, "test is today at 10:00"),
        ("dinner is on Thu 26 Nov at night", 0, "dinner is tonight"),
        ("a trip to Rome on Fri 27 Nov", 3, "a trip to Rome on Fri 27 Nov, now past"),
        ("flight to Berlin is on 14 March", 0, "flight to Berlin is on 14 March"),
        ("trip is on Thu 7 Jan 2027", 42, "trip is today"),
    ],
)
def test_a_kept_date_is_said_from_today(kept, days_later, said):
    assert said_from_now(kept, NOW + timedelta(days=days_later), UTC_ZONE) == said


def test_a_kept_date_without_its_year_is_the_one_whose_weekday_fits():
    """ "Fri 1 Jan" read in December 2026 is 1 January 2027 (a Friday), said as tomorrow."""
    eve = datetime(2026, 12, 31, 12, 0, tzinfo=UTC)
    assert said_from_now("party is on Fri 1 Jan", eve, UTC_ZONE) == "party is tomorrow, Fri 1 Jan"
    assert said_from_now("party is on Mon 1 Jan", eve, UTC_ZONE) == "party is on Mon 1 Jan"


@pytest.mark.parametrize(
    ("asked", "value", "same"),
    [
        ("for Friday", "dinner is on Fri 27 Nov", True),
        ("for Saturday", "dinner is on Fri 27 Nov", False),
        ("tomorrow", "dinner is on Fri 27 Nov at 19:00", True),
        ("this weekend", "to go hiking on Sat 28 Nov", True),
        ("this weekend", "to go hiking the weekend of Sat 28 Nov", True),
        ("next week", "meeting is on Wed 2 Dec", True),
        ("next week", "meeting is on Fri 27 Nov", False),
        ("in August", "a trip to Japan in August", True),
        ("in March", "flight to Tokyo is on Sat 13 Mar 2027", True),
        ("in April", "flight to Tokyo is on Sat 13 Mar 2027", False),
        ("for a while", "a trip to Japan in August", None),
    ],
)
def test_a_time_asked_relatively_is_matched_by_its_days(asked, value, same):
    assert same_time(asked, value, NOW, UTC_ZONE) is same


def test_a_weekday_said_by_name_finds_the_date_kept_from_it():
    pattern = kept_day("Monday")
    assert pattern is not None
    assert pattern.search("appointment is on Mon 30 Nov at 15:00") is not None
    assert pattern.search("appointment is on Tue 1 Dec") is None
    assert kept_day("Bristol") is None
    assert kept_day("Monkey") is None


def test_the_zone_is_the_timezone_fact_or_utc():
    assert zone_in([Fact(key="timezone", value="Asia/Tokyo", turn=1)]) == ZoneInfo("Asia/Tokyo")
    assert zone_in([Fact(key="name", value="Ada", turn=1)]) == UTC_ZONE
