"""Tests of agent/memory/rules/value_corrections.py: "actually it's Bath, not Bristol"."""

from __future__ import annotations

import pytest

from agent.memory.rules.value_corrections import correct_by_value
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
