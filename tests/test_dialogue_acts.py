"""Tests of the dialogue-act rules: commitments, requests, questions, clarifications."""

from __future__ import annotations

import pytest

from agent.memory.rules.dialogue_acts import (
    DialogueActs,
    bot_question,
    is_dismissal,
    question_stems,
    read_acts,
)
from agent.memory.rules.extraction import split_clauses


def acts(text: str) -> DialogueActs:
    return read_acts(split_clauses(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'll send you the report", DialogueActs(commitments=("send you the report",))),
        ("I will try to call Bob", DialogueActs(commitments=("call Bob",))),
        ("I promise to fix the sink", DialogueActs(commitments=("fix the sink",))),
        ("let me check the schedule", DialogueActs(commitments=("check the schedule",))),
        ("can you check the train times?", DialogueActs(requests=("check the train times",))),
        ("Carol, could you please book the room?", DialogueActs(requests=("book the room",))),
        ("could someone water the plants", DialogueActs(requests=("water the plants",))),
        ("when does the train leave?", DialogueActs(questions=("when does the train leave?",))),
        ("I'll be late", DialogueActs()),
        ("I'll think about it", DialogueActs()),
        ("I will not do that", DialogueActs()),
        ("can you remind me to buy milk?", DialogueActs()),  # a to-do, read elsewhere
        ("why?", DialogueActs()),  # no subject to keep open
        ("what's up?", DialogueActs()),
    ],
)  # fmt: skip
def test_read_acts(text, expected):
    """Promises, asks of someone and questions about something are read from clause starts."""
    assert acts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # resolutions and wishes: a way to be, never done
        "I'll keep pushing and working to make my dreams happen",
        "I'll do my best to make you proud",
        "I will try my best",
        "I'll keep that in mind as I continue my journey",
        "I'll always remember our camping trip",
        "I'll stay motivated and keep chasing those dreams",
        "I'll keep going",
        # talk, not something to do
        "can you believe it?",
        "Gina, you won't believe it - I got mentored yesterday!",
        "would you believe it, the shop was closed",
        "I'll keep on going",
        "would you like me to send it to you?",
        "do you want me to bring the salad",
        "Maria, could you tell me more about the challenges",
    ],
)
def test_resolutions_and_figures_of_speech_open_no_loop(text):
    """A promise is something that can be done and checked ("I'll send you the report");
    "I'll keep pushing" and "can you believe it?" open nothing."""
    assert acts(text) == DialogueActs()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'll keep you posted", DialogueActs(commitments=("keep you posted",))),
        ("I'll keep the seats for you", DialogueActs(commitments=("keep the seats for you",))),
        ("I'll do the dishes tonight", DialogueActs(commitments=("do the dishes tonight",))),
        ("could you tell me more about the hotel?", DialogueActs(
            questions=("could you tell me more about the hotel?",))),
        ("can you tell Bob about the party", DialogueActs(
            requests=("tell Bob about the party",))),
        ("can you believe me and send it anyway?", DialogueActs(
            requests=("believe me and send it anyway",))),
    ],
)  # fmt: skip
def test_a_promise_that_shares_a_word_with_those_is_still_one(text, expected):
    """Only resolutions and figures of speech are left out."""
    assert acts(text) == expected


def test_one_message_can_do_several_things():
    """Each clause is read: a promise and a question in one message, each once."""
    said = acts(
        "I'll book the flights. When does the reception open? When does the reception open?"
    )

    assert said == DialogueActs(
        commitments=("book the flights",), questions=("When does the reception open?",)
    )


def test_question_stems_drop_question_words_and_contraction_tails():
    """What a question is about: its content words without "what", "when", "'s"."""
    assert question_stems("what's the best area for hotels in Lisbon?") == {
        "best",
        "area",
        "hotel",
        "lisbon",
    }


@pytest.mark.parametrize(
    ("text", "dismissed"),
    [("never mind", True), ("Nevermind, thanks", True), ("forget it", True), ("nvm", True),
     ("don't forget it", False), ("I never mind the rain", False)],
)  # fmt: skip
def test_is_dismissal(text, dismissed):
    """ "Never mind", "forget it", "nvm" drop what was asked; the words inside a sentence do not."""
    assert is_dismissal(text) is dismissed


@pytest.mark.parametrize(
    ("answer", "intent", "user", "question"),
    [
        ("Sure. Which restaurant?", "llm", "book a table", "Which restaurant?"),
        ("Which one? Tell me “the first” or “the second”.", "clarify", "book it", "Which one?"),
        ("I need a date.", "needs_clarification", "book it", "I need a date."),
        ("How can I help?", "llm", "hi", None),
        ("How can I help?", "clarify", "hi", "How can I help?"),
        ("echo: still there?", "echo", "still there?", None),
        ("Done.", "llm", "book it", None),
        ("Which one?", "llm", "", None),  # the bot spoke on its own
        (None, None, "hello?", None),
    ],
)
def test_bot_question(answer, intent, user, question):
    """The reply's last sentence ending in "?" or a clarifying intent asks; invitations,
    echoes and turns without a user message do not."""
    assert bot_question(answer, intent, user) == question


def test_a_long_question_is_capped():
    """A question longer than 200 characters is kept to 200."""
    asked = bot_question("Which " + "very " * 80 + "long one?", "llm", "x")

    assert asked is not None
    assert len(asked) == 200
    assert asked.endswith("…")


def test_hostile_input_is_read():
    """A 4096-character message of one repeated word or symbol is read without trouble."""
    for text in ("can you " * 512, "I'll " * 800, "?" * 4096, "let me " * 585, "a," * 2048):
        assert isinstance(acts(text), DialogueActs)
