"""Tests of the topic rules: key phrases without NLP, weights that decay, bounded topics."""

from __future__ import annotations

import pytest

from agent.memory.rules.topic_tracker import TopicTracker, key_phrases
from agent.memory.schemas import Topic


@pytest.mark.parametrize(
    ("text", "phrases"),
    [
        ("I'm planning a trip to Lisbon in May", ("trip", "lisbon")),
        ("the hotel booking is next, then the flights", ("hotel booking", "flight")),
        ("Message number 7 about the project plan", ("message", "project plan")),
        ("meet at 5 near the old harbour cafes", ("harbour cafe",)),  # digits break phrases
        ("cheap Lisbon city centre hotel rooms", ("centre hotel room",)),  # at most 3 words
        ("Ada's cats and the cities", ("ada cat", "city")),
        ("+1 sounds good to me!", ()),
        ("the castle looked amazing", ("castle", "amazing")),  # a past tense names nothing
        ("I hate mornings", ("morning",)),  # nor does a feeling
        ("emailed Linda about the budget", ("linda", "budget")),
        ("I planted a seed in the red bed", ("seed", "red bed")),
        ("", ()),
    ],
)
def test_key_phrases_are_runs_of_content_words(text, phrases):
    """A phrase is a run of up to three content words between stop words, digits and
    punctuation, casefolded, its last word made singular."""
    assert key_phrases(text) == phrases


def test_key_phrases_of_a_long_message_are_capped():
    """A long message yields at most ``limit`` phrases, the first ones, each once."""
    text = ", ".join(f"topic{chr(97 + n)}" for n in range(20)) + ", topica"

    assert key_phrases(text, limit=4) == ("topica", "topicb", "topicc", "topicd")
    assert len(key_phrases(text * 200)) == 6  # a 4096-character flood is read, and capped


def test_weights_decay_each_turn_and_grow_when_mentioned():
    """Every turn multiplies weights by ``decay``; a mention adds ``boost`` and stamps the
    turn; weights are rounded to four decimals."""
    tracker = TopicTracker(decay=0.5, boost=1.0)
    topics = tracker.update((), ["lisbon"], seq=1)
    topics = tracker.update(topics, ["garden"], seq=2)

    assert topics == (
        Topic(name="garden", weight=1.0, last_turn=2),
        Topic(name="lisbon", weight=0.5, last_turn=1),
    )
    topics = tracker.update(topics, ["lisbon"], seq=3)
    assert topics[0] == Topic(name="lisbon", weight=1.25, last_turn=3)
    assert tracker.update(((Topic(name="x", weight=1 / 3),)), [], seq=4)[0].weight == 0.1667


def test_light_topics_leave_and_the_heaviest_stay():
    """Below ``min_weight`` a topic leaves; beyond ``max_topics`` the lightest go; equal
    weights go to the latest mentioned, then by name."""
    tracker = TopicTracker(decay=0.5, max_topics=2, min_weight=0.2)
    topics = tracker.update((), ["b", "a", "c"], seq=1)
    assert [t.name for t in topics] == ["a", "b"]

    topics = tracker.update(topics, [], seq=2)
    topics = tracker.update(topics, [], seq=3)
    assert [t.weight for t in topics] == [0.25, 0.25]
    assert tracker.update(topics, [], seq=4) == ()


@pytest.mark.parametrize(
    "options",
    [{"decay": 0}, {"decay": 1}, {"boost": 0}, {"max_topics": -1}, {"min_weight": -0.1}],
)
def test_bad_settings_are_refused(options):
    """A decay outside (0, 1), a boost not positive or negative bounds are a ValueError."""
    with pytest.raises(ValueError, match="decay must be between 0 and 1"):
        TopicTracker(**options)


@pytest.mark.parametrize(
    "text",
    ["Ah ha ha, yeah, JUST DOING IT!", "Wow, haha, bye!", "Come on, yay!", "Whoa, cheers, hugs"],
)
def test_laughter_cheers_and_goodbyes_are_no_topic(text):
    """Chat noise names no subject: /topics never lists "ah ha ha" or "bye"."""
    assert key_phrases(text) == ()


def test_a_group_member_named_is_no_topic_of_theirs():
    """Members call each other by name ("Hey Jon!"): the name is who is spoken to, not what
    the group talks about; the rest of the message still is."""
    from tests.test_deliberation import group

    state = group(
        [("Jon", "Hey Gina! I opened my dance studio"), ("Gina", "Jon pottery rocks, Jon!")]
    )

    names = {topic.name for topic in state.active_topics}
    assert names >= {"dance studio", "pottery rock"}
    assert not {word for name in names for word in name.split()} & {"jon", "gina"}
