"""Tests of agent/memory/rules/pronouns.py: "he", "she", "they" after a message that named
someone."""

from __future__ import annotations

import pytest

from agent.memory.rules.pronouns import resolve_name, resolve_pronoun
from agent.memory.schemas import Fact


@pytest.mark.parametrize(
    ("previous", "text", "resolved"),
    [
        ("my son is 12", "his name is Leo", "my son's name is Leo"),
        ("my wife's name is Clara", "she works at the hospital",
         "my wife Clara works at the hospital"),
        ("I have a dog called Rex", "he's 3", "my dog Rex is 3"),
        ("my sister Ana lives in Porto", "and she is a nurse", "and my sister Ana is a nurse"),
        ("my partner Sam is a chef", "they work at Nobu", "my partner Sam work at Nobu"),
        ("my friend Jo moved to Oslo", "her birthday is on 3 May",
         "my friend Jo's birthday is on 3 May"),
        ("my sister Ana lives in Porto", "how old is she?", "how old is Ana?"),
        ("I have a cat called Miso", "what does she like?", "what does Miso like?"),
        ("my son is 12", "what's his name?", "what's my son's name?"),
        ("what's my son's name?", "how old is he?", "how old is my son?"),
    ],
)  # fmt: skip
def test_the_pronoun_becomes_the_one_named_before(previous, text, resolved):
    assert resolve_pronoun(text, [previous]) == resolved


@pytest.mark.parametrize(
    ("previous", "text"),
    [
        ("my daughter is 7", "his name is Tom"),  # the role says she
        ("my brother lives in Rome", "she is a doctor"),
        ("I live in Lisbon", "he is 12"),  # nobody named
        ("my sister lives in Porto and my brother in Rome", "she is a nurse"),  # two people
        ("my son is 12", "I think he is tired"),  # not the message's opening
        (None, "he's 3"),
        ("my son is 12", "hello there"),
    ],
)
def test_no_one_is_put_in_place_of_a_pronoun_it_cannot_be(previous, text):
    assert resolve_pronoun(text, [] if previous is None else [previous]) == text


def test_a_pronoun_points_past_messages_that_name_no_one_but_not_past_two_people():
    said = ["what is his name?", "my son is 12"]  # newest first
    assert resolve_pronoun("how old is he?", said) == "how old is my son?"
    assert resolve_pronoun("how old is he?", ["my son and my brother came", *said]) == (
        "how old is he?"
    )


_KNOWN = (
    Fact(key="pet:dog rex", value="dog Rex", turn=1),
    Fact(key="relative:wife clara", value="wife Clara", turn=2),
    Fact(key="relative:friend sam", value="friend Sam", turn=3),
    Fact(key="relative:cousin sam", value="cousin Sam", turn=4),
)


@pytest.mark.parametrize(
    ("text", "resolved"),
    [
        ("Rex is 5", "my dog Rex is 5"),
        ("Clara works at the hospital", "my wife Clara works at the hospital"),
        ("Clara's birthday is on 3 May", "my wife Clara's birthday is on 3 May"),
        ("Sam is 30", "Sam is 30"),  # two people are called Sam
        ("Tom is 30", "Tom is 30"),  # no one known is
        ("Rex", "Rex"),
        ("London is lovely", "London is lovely"),
        # Typed in lower case: the name known, as it was told.
        ("clara's birthday is on 3 May", "my wife Clara's birthday is on 3 May"),
        ("rex is 5 now", "my dog Rex is 5 now"),
        ("it is raining", "it is raining"),
    ],
)
def test_a_name_that_opens_a_message_is_the_one_known_by_it(text, resolved):
    assert resolve_name(text, _KNOWN) == resolved
