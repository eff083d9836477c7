"""Tests of agent/memory/rules/value_corrections.py: "actually it's Bath, not Bristol"."""

from __future__ import annotations

import pytest

from agent.memory.rules.value_corrections import correct_by_value, correct_last
from agent.memory.schemas import Fact

_KNOWN = (
    Fact(key="location", value="Bristol", turn=1),
    Fact(key="event:dentist appointment", value="dentist appointment is on Monday at 3pm", turn=2),
    Fact(key="sister Ana/location", value="Lisbon", turn=3),
    Fact(key="likes:dogs", value="dogs", turn=4),
)


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("actually it's Bath, not Bristol", "location", "Bath"),
        ("Bath, not Bristol", "location", "Bath"),
        ("no, not Bristol - Bath", "location", "Bath"),
        ("sorry, I said Bristol but I meant Bath", "location", "Bath"),
        ("oops it's Tuesday not Monday", "event:dentist appointment",
         "dentist appointment is on Tuesday at 3pm"),
        ("I meant Porto, not Lisbon!", "sister Ana/location", "Porto"),
        ("No! It's BATH, not BRISTOL.", "location", "BATH"),
    ],
)  # fmt: skip
def test_the_newest_fact_holding_the_wrong_value_takes_the_right_one(text, key, value):
    assert correct_by_value(text, _KNOWN, turn=9) == (
        Fact(key=key, value=value, turn=9, mode="corrected"),
    )


@pytest.mark.parametrize(
    "text",
    [
        "it's Bath, not Leeds",  # nothing known holds the wrong value
        "cats, not dogs",  # a like's key is its value: a new one is another fact
        "I like cats, not dogs",  # a clause, not a value
        "Bristol, not Bristol",
        "not bad, thanks",
        "it's not Bristol",
        "the one in Bath, not the one near Bristolville",  # a word, not a part of one
    ],
)
def test_what_corrects_nothing_known_reads_nothing(text):
    assert correct_by_value(text, _KNOWN, turn=9) == ()


@pytest.mark.parametrize(
    ("previous", "text", "key", "value"),
    [
        ("my dentist appointment is on Tuesday", "no, it's on Wednesday",
         "event:dentist appointment", "dentist appointment is on Wednesday"),
        ("I live in Bristol", "sorry, it's Bath", "location", "Bath"),
        ("I live in Bristol", "no it's in Bath", "location", "Bath"),
        ("I'm 40", "wait, it's 41", "age", "41"),
    ],
)  # fmt: skip
def test_the_right_value_alone_corrects_what_the_message_before_stated(previous, text, key, value):
    assert correct_last(text, previous, turn=4) == (
        Fact(key=key, value=value, turn=4, mode="corrected"),
    )


@pytest.mark.parametrize(
    ("previous", "text"),
    [
        ("I live in Bristol", "it's Bath"),  # no correction opens it
        ("I live in Bristol", "no, it's raining today and I'm tired"),
        ("I like jazz", "no, it's blues"),  # a like's value is its key: not put right
        ("I live in Bristol and I work at Acme", "no, it's Bath"),  # which one?
        (None, "no, it's Bath"),
    ],
)
def test_nothing_is_corrected_where_it_cannot_be_told_what(previous, text):
    assert correct_last(text, previous, turn=4) == ()
