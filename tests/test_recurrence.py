"""Tests of agent/memory/rules/recurrence.py: reminders that repeat, read and stepped on the
user's wall clock."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from agent.memory.rules.recurrence import fired, moved_to, next_occurrence, say_repeat
from agent.memory.rules.reminder_requests import parse_reminder
from agent.memory.schemas import JobRef, Repeat

# Friday 27 November 2026, 05:00 UTC.
NOW = datetime(2026, 11, 27, 5, 0, tzinfo=UTC)
LISBON = ZoneInfo("Europe/Lisbon")
NEW_YORK = ZoneInfo("America/New_York")


@pytest.mark.parametrize(
    ("text", "label", "said", "first"),
    [
        ("remind me every day at 8am to take my vitamins", "take my vitamins",
         "every day at 08:00", "2026-11-27 08:00"),
        ("remind me daily at 21:00 to floss", "floss", "every day at 21:00", "2026-11-27 21:00"),
        ("remind me to drink water every day", "drink water", "every day at 09:00",
         "2026-11-27 09:00"),
        ("remind me every morning to stretch", "stretch", "every day at 09:00",
         "2026-11-27 09:00"),
        ("remind me every evening at 7 to call mum", "call mum", "every day at 19:00",
         "2026-11-27 19:00"),
        ("every night at 10:30 remind me to lock the door", "lock the door",
         "every day at 22:30", "2026-11-27 22:30"),
        ("remind me every night at half past ten to lock the door", "lock the door",
         "every day at 22:30", "2026-11-27 22:30"),
        ("remind me every morning at 7:45 to feed the cat", "feed the cat",
         "every day at 07:45", "2026-11-27 07:45"),
        ("remind me every Sunday evening to plan the week", "plan the week",
         "every Sunday at 19:00", "2026-11-29 19:00"),
        ("remind me every day in the evening to walk the dog", "walk the dog",
         "every day at 19:00", "2026-11-27 19:00"),
        ("remind me every Friday afternoon at 4 to submit my timesheet", "submit my timesheet",
         "every Friday at 16:00", "2026-11-27 16:00"),
        ("remind me every Monday at 9am to put the bins out", "put the bins out",
         "every Monday at 09:00", "2026-11-30 09:00"),
        ("every Monday at 9am remind me to put the bins out", "put the bins out",
         "every Monday at 09:00", "2026-11-30 09:00"),
        ("remind me on Thursdays at 6pm to go to choir", "go to choir",
         "every Thursday at 18:00", "2026-12-03 18:00"),
        ("remind me every Friday to send the timesheet", "send the timesheet",
         "every Friday at 09:00", "2026-11-27 09:00"),
        ("remind me on weekdays at 7:30 to leave for the train", "leave for the train",
         "every weekday at 07:30", "2026-11-27 07:30"),
        ("remind me every working day at 5pm to log my hours", "log my hours",
         "every weekday at 17:00", "2026-11-27 17:00"),
        ("remind me every week to call grandma", "call grandma", "every Friday at 09:00",
         "2026-11-27 09:00"),
        ("remind me on the 1st of every month to pay rent", "pay rent",
         "every month on the 1st at 09:00", "2026-12-01 09:00"),
        ("remind me every month on the 15th to pay the credit card", "pay the credit card",
         "every month on the 15th at 09:00", "2026-12-15 09:00"),
        ("remind me on the 27th of each month at 6pm to send the invoice", "send the invoice",
         "every month on the 27th at 18:00", "2026-11-27 18:00"),
        ("remind me monthly to check the meter", "check the meter",
         "every month on the 27th at 09:00", "2026-11-27 09:00"),
        ("set a monthly reminder on the 1st to pay rent", "pay rent",
         "every month on the 1st at 09:00", "2026-12-01 09:00"),
        ("remind me every month to pay the rent", "pay the rent",
         "every month on the 27th at 09:00", "2026-11-27 09:00"),
        ("remind me every other day to water the plants", "water the plants",
         "every other day at 09:00", "2026-11-27 09:00"),
        ("remind me every 3 days at 8pm to change the filter", "change the filter",
         "every 3 days at 20:00", "2026-11-27 20:00"),
        ("remind me every other Monday to put the recycling out", "put the recycling out",
         "every other Monday at 09:00", "2026-11-30 09:00"),
        ("remind me every two weeks to clean the fridge", "clean the fridge",
         "every other Friday at 09:00", "2026-11-27 09:00"),
        ("fortnightly remind me to pay the cleaner", "pay the cleaner",
         "every other Friday at 09:00", "2026-11-27 09:00"),
        ("remind me every 3 weeks on Monday to water the cactus", "water the cactus",
         "every 3 weeks on Monday at 09:00", "2026-11-30 09:00"),
    ],
)  # fmt: skip
def test_a_repeating_reminder_is_read_with_its_rule_and_first_time(text, label, said, first):
    request = parse_reminder(text, NOW)
    assert request is not None
    assert request.repeat is not None
    assert request.label == label
    assert say_repeat(request.repeat) == said
    assert f"{request.due_at:%Y-%m-%d %H:%M}" == first


@pytest.mark.parametrize(
    "text",
    [
        "remind me every hour to drink water",
        "remind me every year on my birthday",
        "I go swimming every Monday",
        "every day is a gift",
    ],
)
def test_what_no_rule_reads_sets_no_repeating_reminder(text):
    request = parse_reminder(text, NOW)
    assert request is None or request.repeat is None


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("remind me tomorrow at 9am to write my daily report", "write my daily report"),
        ("remind me at 5pm to plan the weekly meeting", "plan the weekly meeting"),
    ],
)
def test_daily_said_of_a_thing_is_a_one_time_reminder_about_it(text, label):
    request = parse_reminder(text, NOW)
    assert request is not None
    assert request.repeat is None
    assert request.label == label


def test_daily_said_of_the_reminder_repeats_it():
    request = parse_reminder("remind me to floss daily", NOW)
    assert request is not None
    assert request.repeat == Repeat(every="day", at="09:00")


def test_a_bare_hour_is_asked_about_not_guessed():
    assert parse_reminder("remind me every day at 8 to walk the dog", NOW) is None
    request = parse_reminder("remind me every day at 8am to walk the dog", NOW)
    assert request is not None
    assert request.repeat is not None


def test_the_rule_keeps_the_zone_it_was_said_in():
    request = parse_reminder("remind me every day at 8am to take my pills", NOW, NEW_YORK)
    assert request is not None
    assert request.repeat == Repeat(
        every="day", at="08:00", zone="America/New_York"
    )
    assert request.due_at == datetime(2026, 11, 27, 13, 0, tzinfo=UTC)  # 08:00 in New York


def test_each_occurrence_is_at_the_wall_clock_time_across_a_change_of_summer_time():
    """Lisbon moves to summer time on Sunday 29 March 2026: 08:00 stays 08:00 on the clock."""
    rule = Repeat(every="day", at="08:00", zone="Europe/Lisbon")
    friday = datetime(2026, 3, 27, 8, 0, tzinfo=UTC)
    days = [friday]
    for _ in range(4):
        days.append(next_occurrence(rule, days[-1]))
    assert [f"{d.astimezone(LISBON):%a %H:%M}" for d in days] == [
        "Fri 08:00", "Sat 08:00", "Sun 08:00", "Mon 08:00", "Tue 08:00",
    ]  # fmt: skip
    assert days[2] - days[1] == timedelta(hours=23)  # Saturday to Sunday: clocks go forward


def test_weekdays_skip_the_weekend_and_weeks_keep_their_day():
    weekdays = Repeat(every="weekday", at="07:30")
    friday = datetime(2026, 11, 27, 7, 30, tzinfo=UTC)
    assert f"{next_occurrence(weekdays, friday):%a %d %H:%M}" == "Mon 30 07:30"
    weekly = Repeat(every="week", at="18:00", weekday=3)
    assert f"{next_occurrence(weekly, friday):%a %d %H:%M}" == "Thu 03 18:00"


def test_a_monthly_reminder_keeps_its_day_and_a_shorter_month_has_its_last():
    """The 31st: 31 December, 31 January, 28 February, 31 March; the 15th of a late firing
    skips the months it missed; moved to the 3rd, it is every month on the 3rd."""
    rule = Repeat(every="month", at="09:00", day=31)
    moment, days = NOW, []
    for _ in range(4):
        moment = next_occurrence(rule, moment)
        days.append(f"{moment:%d %b}")
    assert days == ["30 Nov", "31 Dec", "31 Jan", "28 Feb"]
    rent = JobRef(job_id="r1", kind="reminder", label="rent", due_at=NOW,
                  repeat=Repeat(every="month", at="09:00", day=15))  # fmt: skip
    _, following = fired(rent, NOW + timedelta(days=70), lambda: "r2")
    assert f"{following.due_at:%Y-%m-%d %H:%M}" == "2027-02-15 09:00"
    third = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    assert say_repeat(moved_to(rule, third)) == "every month on the 3rd at 09:00"


def test_a_skipping_series_keeps_its_beat_when_fired_late_or_moved():
    """Every other Monday from 30 Nov: 14 Dec, 28 Dec; fired a week late (on 21 Dec) it is the
    28th, not the 21st; moved to a Tuesday, every other Tuesday from that one."""
    rule = Repeat(every="week", at="09:00", weekday=0, interval=2, since=date(2026, 11, 30))
    first = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    assert f"{next_occurrence(rule, first):%d %b}" == "14 Dec"
    job = JobRef(job_id="b1", kind="reminder", label="bins", due_at=datetime(2026, 12, 14, 9,
                 tzinfo=UTC), repeat=rule)  # fmt: skip
    _, following = fired(job, datetime(2026, 12, 21, 10, 0, tzinfo=UTC), lambda: "b2")
    assert f"{following.due_at:%d %b}" == "28 Dec"
    moved = moved_to(rule, datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    assert say_repeat(moved) == "every other Tuesday at 09:00"
    assert f"{next_occurrence(moved, datetime(2026, 12, 1, 10, tzinfo=UTC)):%d %b}" == "15 Dec"
    every_third_day = Repeat(every="day", at="20:00", interval=3, since=date(2026, 11, 27))
    assert f"{next_occurrence(every_third_day, first):%d %b}" == "30 Nov"  # 27 + 3


def test_an_occurrence_skipped_is_passed_over_once_and_then_forgotten():
    """Every Monday at 08:00, 7 December skipped: fired on 30 November, the next is the 14th,
    and the skip, passed, is no longer carried; a monthly series skips a month the same way; a
    series moved to another day forgets the skips of the old one."""
    weekly = Repeat(every="week", at="08:00", weekday=0, skips=(date(2026, 12, 7),))
    job = JobRef(job_id="b1", kind="reminder", label="bins", repeat=weekly,
                 due_at=datetime(2026, 11, 30, 8, 0, tzinfo=UTC))  # fmt: skip
    _, following = fired(job, datetime(2026, 11, 30, 8, 0, 5, tzinfo=UTC), lambda: "b2")
    assert following.due_at == datetime(2026, 12, 14, 8, 0, tzinfo=UTC)
    assert following.repeat is not None
    assert following.repeat.skips == ()
    monthly = Repeat(every="month", at="09:00", day=1, skips=(date(2027, 1, 1),))
    assert f"{next_occurrence(monthly, NOW):%d %b %Y}" == "01 Dec 2026"
    assert f"{next_occurrence(monthly, datetime(2026, 12, 2, tzinfo=UTC)):%d %b %Y}" == (
        "01 Feb 2027"
    )
    assert moved_to(weekly, datetime(2026, 12, 1, 8, 0, tzinfo=UTC)).skips == ()


def test_firing_a_repeating_reminder_sets_the_next_one_and_a_late_one_skips_what_it_missed():
    rule = Repeat(every="day", at="08:00")
    job = JobRef(job_id="j1", kind="reminder", label="pills", due_at=NOW, repeat=rule)
    done, following = fired(job, NOW + timedelta(minutes=1), lambda: "j2")
    assert (done.job_id, done.status) == ("j1", "done")
    assert (following.job_id, following.status, following.label) == ("j2", "scheduled", "pills")
    assert following.due_at == datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
    three_days_late = NOW + timedelta(days=3, hours=5)
    _, following = fired(job, three_days_late, lambda: "j3")
    assert following.due_at == datetime(2026, 12, 1, 8, 0, tzinfo=UTC)  # not the missed ones
    one_time = job.model_copy(update={"repeat": None})
    assert fired(one_time, NOW, lambda: "j4") == (one_time.model_copy(update={"status": "done"}),)


def test_a_series_moved_keeps_repeating_at_its_new_time_and_day():
    daily = Repeat(every="day", at="08:00", zone="Europe/Lisbon")
    summer_evening = datetime(2026, 7, 1, 18, 0, tzinfo=UTC)  # 19:00 in Lisbon
    assert moved_to(daily, summer_evening) == daily.model_copy(update={"at": "19:00"})
    weekly = Repeat(every="week", at="09:00", weekday=0)
    tuesday = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    assert say_repeat(moved_to(weekly, tuesday)) == "every Tuesday at 09:00"
