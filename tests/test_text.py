"""Tests of agent/utils/text.py: the one tokeniser and the one stop-word list."""

from __future__ import annotations

import re

import pytest

from agent.memory.conversation_retriever import query_words
from agent.memory.conversation_store import match_query
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.topic_tracker import key_phrases
from agent.utils.text import (
    LETTER_WORD,
    LOOP_STOP_WORDS,
    QUESTION_WORDS,
    SEARCH_STOP_WORDS,
    TOPIC_STOP_WORDS,
    split_words,
    split_words_and_breaks,
)


def test_split_words_keeps_letters_digits_and_underscores_as_written():
    """A word is a run of letters, digits and underscores, in any script, case kept."""
    assert split_words("Call Zoë at 18:30, re: snake_case!") == [
        "Call",
        "Zoë",
        "at",
        "18",
        "30",
        "re",
        "snake_case",
    ]
    assert split_words("don't") == ["don", "t"]
    assert split_words("東京 über") == ["東京", "über"]


def test_split_words_can_split_underscores():
    """Asked to, underscores separate words (the loop rules compare words, not identifiers)."""
    assert split_words("book snake_case __x__", split_underscores=True) == [
        "book",
        "snake",
        "case",
        "x",
    ]


def test_a_search_query_keeps_an_identifier_as_one_quoted_phrase():
    """The query tokeniser keeps ``snake_case`` whole: FTS5 reads the quoted word as a phrase."""
    assert match_query("find snake_case") == '"find" OR "snake_case"'


def test_split_words_and_breaks_keeps_contractions_and_hyphens_and_marks_breaks():
    """Letter words keep inner apostrophes and hyphens; digits and punctuation are breaks."""
    assert list(split_words_and_breaks("don't book the to-do, 3 times")) == [
        "don't",
        "book",
        "the",
        "to-do",
        ",",
        "3",
        "times",
    ]


def test_split_words_and_breaks_is_lazy():
    """A reader that stops early does not tokenise the rest of a long text."""
    tokens = split_words_and_breaks("one two " * 10_000)
    assert next(tokens) == "one"
    assert next(tokens) == "two"


def test_letter_word_matches_names_with_hyphens_and_apostrophes():
    """The name rules read one LETTER_WORD per name: no digits, no underscores."""
    assert re.fullmatch(LETTER_WORD, "Jean-Luc")
    assert re.fullmatch(LETTER_WORD, "O'Brien")
    assert not re.fullmatch(LETTER_WORD, "R2D2")
    assert not re.fullmatch(LETTER_WORD, "snake_case")


def test_the_lists_share_the_function_words():
    """The commonest function words are in every stop-word list."""
    for word in ("the", "a", "my", "is", "with", "you"):
        assert word in SEARCH_STOP_WORDS
        assert word in TOPIC_STOP_WORDS
        assert word in LOOP_STOP_WORDS


@pytest.mark.parametrize(
    ("word", "search", "topic", "loop", "question"),
    [
        ("where", True, True, False, True),  # "where" is part of a to-do
        ("don", True, False, False, False),  # a tail only split_words leaves
        ("don't", False, True, False, False),  # a contraction as the topic reader sees it
        ("finished", False, False, True, False),  # completion says which to-do closes
        ("today", False, True, True, False),
        ("book", False, True, False, False),  # a common verb: searchable, no topic
        ("haha", False, True, False, False),  # laughter: searchable, no topic
        ("whether", False, True, False, True),
        ("lisbon", False, False, False, False),
        ("s", True, False, True, False),  # a possessive's tail: "my son's age" is the son's age
    ],
)
def test_each_reader_ignores_its_classes(word, search, topic, loop, question):
    """Each list is the union of the word classes its reader must ignore."""
    assert (word in SEARCH_STOP_WORDS) is search
    assert (word in TOPIC_STOP_WORDS) is topic
    assert (word in LOOP_STOP_WORDS) is loop
    assert (word in QUESTION_WORDS) is question


def test_list_sizes_are_pinned():
    """The lists keep their sizes: a word added to a class changes a reader's results."""
    assert len(SEARCH_STOP_WORDS) == 157
    assert len(TOPIC_STOP_WORDS) == 498
    assert len(LOOP_STOP_WORDS) == 80  # 79 and the possessive's "s"
    assert len(QUESTION_WORDS) == 20
    assert QUESTION_WORDS <= TOPIC_STOP_WORDS


def test_readers_use_the_lists():
    """Search, topics and loop stems drop their stop words."""
    assert query_words("Where did you book the hotel in Lisbon?") == ["book", "hotel", "lisbon"]
    assert key_phrases("I'm planning a trip to Lisbon") == ("trip", "lisbon")
    assert content_stems("I still need to book the hotel") == {"book", "hotel"}
