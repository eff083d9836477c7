"""Tests of agent/memory/rules/event_moves.py: an event said again, by which name, and what of
its day and time it keeps."""

from __future__ import annotations

import pytest

from agent.memory.rules.event_moves import moved_event, of_known_event
from agent.memory.schemas import Fact


def _event(key: str, value: str) -> Fact:
    return Fact(key=f"event:{key}", value=value, turn=1)


_MEETING = _event("meeting", "meeting with Sarah is on Sat 28 Nov at 15:00")
_FLIGHT = _event("flight to lisbon", "flight to Lisbon is on Sat 12 Dec at 07:00")
_HAIRCUT = _event("haircut", "haircut is on Fri 4 Dec")


@pytest.mark.parametrize(
    ("said", "known", "key", "value"),
    [
        # a longer name of an event known by its short key: that event, named as said now
        (_event("meeting with sarah", "meeting with Sarah is 4"), [_MEETING], "event:meeting",
         "meeting with Sarah is 4"),
        # a short name of an event known by a longer one: that event, named as it was
        (_event("flight", "flight is on Sun 13 Dec"), [_FLIGHT], "event:flight to lisbon",
         "flight to Lisbon is on Sun 13 Dec"),
        # two events either name could be: none is guessed
        (_event("flight", "flight is on Sun 13 Dec"),
         [_FLIGHT, _event("flight to oslo", "flight to Oslo is on Mon 14 Dec")], "event:flight",
         "flight is on Sun 13 Dec"),
        # a longer name that is another event ("meeting about the budget") is not the meeting
        (_event("meeting about the budget", "meeting about the budget is 4"), [_MEETING],
         "event:meeting about the budget", "meeting about the budget is 4"),
        # the known event's words are not the new name's: another meeting
        (_event("meeting with tom", "meeting with Tom is 4"), [_MEETING],
         "event:meeting with tom", "meeting with Tom is 4"),
    ],
)  # fmt: skip
def test_an_event_said_by_another_name_is_the_one_known_event_it_names(said, known, key, value):
    fact = of_known_event(said, known)
    assert (fact.key, fact.value) == (key, value)


@pytest.mark.parametrize(
    ("value", "known", "kept"),
    [
        ("meeting with Sarah is 4", _MEETING, "meeting with Sarah is on Sat 28 Nov at 16:00"),
        ("meeting with Sarah is 4pm", _MEETING, "meeting with Sarah is on Sat 28 Nov at 16:00"),
        ("meeting with Sarah is 9 a.m.", _MEETING, "meeting with Sarah is on Sat 28 Nov at 09:00"),
        ("meeting with Sarah is now at 2:30", _MEETING,
         "meeting with Sarah is on Sat 28 Nov at 14:30"),
        ("meeting with Sarah is 17:45", _MEETING, "meeting with Sarah is on Sat 28 Nov at 17:45"),
        ("meeting with Sarah is half past four", _MEETING,
         "meeting with Sarah is on Sat 28 Nov at 16:30"),
        ("meeting with Sarah is a quarter to five in the morning", _MEETING,
         "meeting with Sarah is on Sat 28 Nov at 04:45"),
        # a day said: the time it had
        ("meeting with Sarah is on Mon 30 Nov", _MEETING,
         "meeting with Sarah is on Mon 30 Nov at 15:00"),
        # an hour without morning or evening, and no time known: as said
        ("haircut is 4", _HAIRCUT, "haircut is on Fri 4 Dec at 4"),
        ("haircut is at 4:15", _HAIRCUT, "haircut is on Fri 4 Dec at 4:15"),
        ("haircut is on Sat 5 Dec", _HAIRCUT, "haircut is on Sat 5 Dec"),
        # not a time: left as said
        ("meeting with Sarah is 45 minutes", _MEETING, "meeting with Sarah is 45 minutes"),
        ("meeting with Sarah is 4:75", _MEETING, "meeting with Sarah is 4:75"),
        ("meeting with Sarah is 31", _MEETING, "meeting with Sarah is 31"),
        ("meeting with Sarah is in the big room", _MEETING,
         "meeting with Sarah is in the big room"),
    ],
)  # fmt: skip
def test_an_event_moved_keeps_the_day_or_the_time_it_had(value, known, kept):
    said = Fact(key=known.key, value=value, turn=2)
    assert moved_event(said, [known]).value == kept


def test_an_event_not_known_before_is_left_as_said():
    said = _event("party", "party is 8pm")
    assert moved_event(said, [_MEETING]) == said
    assert of_known_event(said, [_MEETING]) == said
