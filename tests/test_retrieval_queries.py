"""The words retrieval searches for (agent/memory/retrieval_queries.py): the expansion of a
question with the words of its first hits and the cues of what it asks about, alone and through
the retriever over a real SQLite file."""

from __future__ import annotations

import pytest

from agent.memory.conversation_retriever import ConversationRetriever, RetrievalPolicy
from agent.memory.retrieval_queries import (
    category_cues,
    expand_query,
    feedback_words,
    merge_expanded,
)
from agent.memory.schemas import SessionState
from tests.test_conversation_retriever import bulk_session, filler, retrieve


@pytest.mark.parametrize(
    ("asked", "cue"),
    [
        (["cities", "john"], "trip"),
        (["countries", "visited"], "vacation"),
        (["pets", "maria"], "dog"),
        (["instrument", "plays"], "guitar"),
        (["hobbies"], "enjoy"),
        (["career"], "job"),
    ],
)
def test_a_question_about_a_kind_of_thing_gets_the_words_said_of_it(asked, cue):
    cues = category_cues(asked)
    assert cue in cues
    assert not set(asked) & set(cues)  # the question's own words are not added twice


def test_a_question_about_no_kind_of_thing_gets_no_cues():
    assert category_cues(["weather", "tomorrow", "lisbon"]) == []


def _counts(table: dict[str, int]):
    return lambda words: {word: table[word] for word in words if word in table}


def test_feedback_words_are_those_of_the_strong_hits_neither_unique_nor_common():
    hits = [
        (["marathon", "lisbon", "april", "knees"], 4.0),
        (["lisbon", "knees", "medal"], 3.0),
        (["lisbon", "weather", "zeppelin"], 0.5),
    ]
    counts = {"lisbon": 6, "knees": 3, "april": 40, "medal": 1, "weather": 900, "zeppelin": 2}
    words = feedback_words(hits, ["marathon"], _counts(counts), terms=3, max_turns=100, common=1000)
    # "lisbon" and "knees" are in the strong hits and rare; "medal" is only in its hit,
    # "weather" in too many turns, "marathon" asked already.
    assert set(words[:2]) == {"lisbon", "knees"}
    assert not {"medal", "weather", "marathon"} & set(words)
    assert feedback_words(hits, [], _counts(counts), terms=0, max_turns=100, common=1000) == []


def test_the_expanded_query_keeps_the_message_first_and_never_adds_its_left_out_words():
    policy = RetrievalPolicy()
    hits = [(["chicago", "awesome", "went", "trip"], 2.0), (["trip", "chicago"], 1.5)]
    counts = {"chicago": 3, "awesome": 50, "went": 2000, "trip": 8, "vacation": 4, "flew": 0}
    query = expand_query(["cities"], hits, _counts(counts), policy, said=["john"])
    words = query.split()
    assert words[0] == "cities"
    assert {"chicago", "trip", "vacation"} <= set(words)
    # "went" is in too many turns, "flew" in none, "john" left out of the message's query.
    assert not {"went", "flew", "john"} & set(words)
    assert expand_query(["weather"], [], _counts(counts), policy) == ""


def test_expanded_hits_rank_below_the_messages_best_and_keep_their_larger_strength():
    merged = merge_expanded({1: 10.0, 2: 4.0}, {2: 30.0, 3: 60.0, 4: 6.0}, 0.5)
    assert merged[3] == pytest.approx(5.0)  # the expansion's best: half the message's best
    assert merged[2] == pytest.approx(4.0)  # 2.5 expanded: it keeps its own 4.0
    assert merged[4] == pytest.approx(0.5)
    assert max(merged, key=merged.__getitem__) == 1
    assert merge_expanded({1: 3.0}, {}, 0.5) == {1: 3.0}


async def test_a_turn_sharing_no_word_with_the_question_is_found_by_what_it_asks_about(db):
    """ "Which cities have I visited?" shares no word with "I was in Lisbon last spring, what a
    trip!": the cues of a question about places find it; without the expansion it is not."""
    texts = [filler(n) for n in range(1, 30)]
    texts[9] = "I was in Lisbon last spring, what a trip!"
    texts[19] = "The road trip along the coast took us to Porto."
    sid = await bulk_session(db, texts)
    state = SessionState(session_id=sid, turn_count=len(texts))
    question = {"session_id": sid, "text": "Which cities have I visited?", "state": state}

    refs = [item.ref for item in await retrieve(db, **question)]
    assert {"turn:10", "turn:20"} <= set(refs[:4])
    off = ConversationRetriever(policy=RetrievalPolicy(expansion_max_turns=0))
    refs = [item.ref for item in await retrieve(db, off, **question)]
    assert not {"turn:10", "turn:20"} & set(refs)


async def test_a_turn_sharing_a_rare_word_with_a_hit_is_found_after_it(db):
    """Asked about the marathon, the retriever finds the turn that says it, and then the turn
    that says where it was ("Lisbon") far from it: below the hit, found through the hit's words."""
    texts = [filler(n) for n in range(1, 40)]
    texts[4] = "I ran the Lisbon marathon in April."
    texts[30] = "My knees still hurt after Lisbon, never again!"
    sid = await bulk_session(db, texts)
    state = SessionState(session_id=sid, turn_count=len(texts))
    question = {"session_id": sid, "text": "How did the marathon go?", "state": state}

    refs = [item.ref for item in await retrieve(db, **question)]
    assert refs[0] == "turn:5"
    assert "turn:31" in refs
    off = ConversationRetriever(policy=RetrievalPolicy(expansion_terms=0))
    assert "turn:31" not in [item.ref for item in await retrieve(db, off, **question)]
