"""Tests of agent/memory/rules/informal_words.py: informal spellings are read as the standard
ones, whole words only; ordinary words and text without any come back unchanged; emoji are
read as pauses, and a message of emoji alone is kept."""

from __future__ import annotations

import time

import pytest

from agent.memory.rules.informal_words import respell, without_emoji


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
        ("my wife and I are expecting a baby in April", "we are expecting a baby in April"),
        ("me and my sister are going to Rome", "I'm going to Rome with my sister"),
        ("Tom and I are flying to Paris on Friday", "I'm flying to Paris with Tom on Friday"),
        ("our kids and I are off to the beach tomorrow morning, yay",
         "I'm off to the beach with our kids tomorrow morning, yay"),
        ("Alex and I are moving to Leeds", "we are moving to Leeds"),
        ("Tom and I are going to try sushi", "we are going to try sushi"),
        ("my gf's name is becky", "my girlfriend's name is becky"),
        ("whats my bfs job", "what's my boyfriend's job?"),
        ("my hubby and my bff", "my husband and my best friend"),
        ("ive got footy every tuesday", "I've got football every tuesday"),
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
        "cancel my Paris trip",  # a place's name, not a possessive
        "our Athens flight is on Friday",
        "what a day",  # an exclamation, no question
        "how nice",
        "do I like mushrooms?",
        "U2 is my favourite band",
        "the Ukulele is fun",
        "my husband Tom and I have a dog",  # who he is, said: kept
        "salt and pepper are fine",
        "",
    ],
)
def test_ordinary_words_are_left_as_typed(text):
    assert respell(text) == text


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("I have a bunny called Mochi 🐰 she's 2", "I have a bunny called Mochi, she's 2"),
        ("hiii 👋 I'm Zoe", "hiii, I'm Zoe"),
        ("I love pizza 🍕🍕", "I love pizza"),
        ("how old is Mochi? 🤔", "how old is Mochi?"),
        ("thanks! 🙏 see you", "thanks! see you"),
        ("👨‍👩‍👧 family day today", "family day today"),
        ("😊", "😊"),
        ("👍 👍", "👍 👍"),
        ("no emoji here", "no emoji here"),
    ],
)
def test_emoji_are_read_as_pauses(typed, read):
    assert without_emoji(typed) == read


def test_a_long_run_of_blanks_and_emoji_is_read_quickly():
    """Hostile input: Telegram's 4096 characters of blanks, emoji and words."""
    started = time.perf_counter()
    without_emoji("a" + " " * 2000 + "🙂" + " 🙂" * 1000 + "b")
    without_emoji(("x " * 1000 + "🙂") * 2)
    assert time.perf_counter() - started < 0.5
