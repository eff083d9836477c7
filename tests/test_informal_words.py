"""Tests of agent/memory/rules/informal_words.py: informal spellings are read as the standard
ones, whole words only; ordinary words and text without any come back unchanged."""

from __future__ import annotations

import pytest

from agent.memory.rules.informal_words import respell


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("wats my sisters name", "what's my sister's name?"),
        ("im vegan btw", "I'm vegan btw"),
        ("remind me 2morrow 9am gym", "remind me tomorrow 9am gym"),
        ("remind me tmrw at 7pm to call mom", "remind me tomorrow at 7pm to call mom"),
        ("do i like mushrooms", "do I like mushrooms?"),
        ("how old is mia", "how old is mia?"),
        ("wat time is it", "what time is it?"),
        ("Wats up", "What's up?"),
        ("i dont eat meat", "I don't eat meat"),
        ("whens my dogs birthday", "when's my dog's birthday?"),
        ("ive got a exam on monday", "I've got a exam on monday"),
        ("u can call me jo", "you can call me jo"),
        ("what's ur name", "what's your name?"),
        ("im gonna visit paris", "I'm going to visit paris"),
    ],
)
def test_an_informal_spelling_is_read_as_the_standard_one(typed, read):
    assert respell(typed) == read


@pytest.mark.parametrize(
    "text",
    [
        "I feel ill today",  # "ill" is a word
        "well, we were there",
        "let's go, it lets me in",
        "I like Wi-Fi i.e. the internet",
        "my parents live in Leeds",  # a plural, not a possessive
        "what a day",  # an exclamation, no question
        "how nice",
        "do I like mushrooms?",
        "U2 is my favourite band",
        "the Ukulele is fun",
        "",
    ],
)
def test_ordinary_words_are_left_as_typed(text):
    assert respell(text) == text
