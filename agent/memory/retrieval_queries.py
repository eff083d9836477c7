"""The words retrieval's searches ask for: a message's, the speakers', the topics', and more.

:class:`~agent.memory.conversation_retriever.ConversationRetriever` searches the session's
turns, summaries and memories for a message's content words (:func:`query_words`), for the
active topics (:func:`topic_names`), and ranks higher a turn said by someone the message names
(:func:`name_words`).

A question often shares no word with the turn that answers it ("which cities has John been
to?" against "I was in Chicago, it was awesome!"). So the turns are searched a second time
for the message's words and more (:func:`expand_query`), and that search's hits are merged
below the first's (:func:`merge_expanded`). The more words come from two general sources:

* **Pseudo-relevance feedback** (RM3-like, :func:`feedback_words`): the words of the first
  search's best hits, each weighted by the strength of the hits that hold it and by its
  rarity (inverse turn frequency); the heaviest few that the message lacks. A word in one turn
  only finds nothing new, and a word in many says little: both are left out.
* **Category cues** (:func:`category_cues`): a question about a kind of thing ("which
  cities", "what hobbies", "her pets") is expanded with the everyday words people use when
  they talk of things of that kind ("trip", "visited"; "enjoy", "class"; "dog", "vet"). A
  small general lexicon, one row per kind, not fitted to any question set.

Pure functions: no database. Tested in ``tests/test_retrieval_queries.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from agent.db.search import QUERY_WORDS
from agent.utils.text import SEARCH_STOP_WORDS, split_words

if TYPE_CHECKING:
    from agent.memory.retrieval_ranking import RetrievalPolicy
    from agent.memory.schemas import SessionState

__all__ = [
    "category_cues",
    "expand_query",
    "feedback_words",
    "merge_expanded",
    "name_words",
    "query_words",
    "topic_names",
]

# Topics that make the topic query, heaviest first.
_QUERY_TOPICS = 5

# A kind of thing a question may ask about (any of its words), and the words said of it.
_CATEGORIES: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = tuple(
    (frozenset(asks.split()), tuple(cues.split()))
    for asks, cues in (
        (
            "city cities place places country countries travel traveled travelled trip trips"
            " visited visit location locations abroad",
            "trip travel visited went vacation city country flew road town abroad",
        ),
        (
            "hobby hobbies activity activities pastime pastimes relax free fun enjoy",
            "love enjoy hobby fun class playing painting hiking relax",
        ),
        ("book books read reading novel novels author", "book read reading novel author library"),
        ("pet pets animal animals dog dogs cat cats", "dog cat pet puppy kitten vet"),
        (
            "kids children child family son sons daughter daughters husband wife parents siblings",
            "kids son daughter husband wife family mom dad brother sister",
        ),
        (
            "music instrument instruments song songs band bands concert concerts",
            "music guitar piano violin song band concert playing",
        ),
        (
            "food foods dish dishes cook cooking recipe recipes eat meal meals",
            "cook recipe bake dinner food dish delicious",
        ),
        ("sport sports game games team exercise", "play game team match practice gym running"),
        (
            "job jobs work career profession company business",
            "job work career company business boss office",
        ),
        (
            "event events attend attended participated festival conference",
            "event attended festival conference workshop meeting",
        ),
        ("art paint painting paintings artwork draw drawing", "painting art draw canvas sculpture"),
        ("friend friends", "friend friends met buddy"),
        ("movie movies film films show shows", "movie film watched show series"),
    )
)


def query_words(text: str) -> list[str]:
    """Return the content words of ``text``, lowercased, in order, without repeats.

    Function words are dropped; what remains is searched for word by word (see
    :func:`agent.db.search.match_query`), so no FTS5 syntax survives.
    """
    words = (word.lower() for word in split_words(text))
    # Years and other long numbers are content; "3" or "10" alone are not.
    kept = [
        word
        for word in words
        if word not in SEARCH_STOP_WORDS and not (word.isdigit() and len(word) < 3)
    ]
    return list(dict.fromkeys(kept))[:QUERY_WORDS]


@lru_cache(maxsize=1024)
def name_words(speaker: str | None) -> frozenset[str]:
    """Return the words of a speaker's name a message may name them by (cached: a chat has
    few speakers, and each hit of each packet asks)."""
    if not speaker:
        return frozenset()
    return frozenset(word for word in query_words(speaker) if len(word) > 2)


def topic_names(state: SessionState | None) -> list[str]:
    """Return the names of the session's heaviest active topics (the topic query's)."""
    if state is None:
        return []
    topics = sorted(state.active_topics, key=lambda t: (-t.weight, t.name))[:_QUERY_TOPICS]
    return [topic.name for topic in topics]


def expand_query(
    asked: Sequence[str],
    hits: Sequence[tuple[Sequence[str], float]],
    count: Callable[[list[str]], Mapping[str, int]],
    policy: RetrievalPolicy,
    *,
    said: Sequence[str] = (),
) -> str:
    """Return the message's query expanded (its words, then the added ones, at most
    ``QUERY_WORDS``), or ``""`` when nothing is added.

    Args:
        asked: the words of the message's query.
        hits: its first search's best hits: each turn's content words and BM25 strength.
        count: the number of turns each of some words is in (:class:`~agent.memory.storage.
            word_frequencies.WordFrequencies`).
        policy: how many feedback words (``expansion_terms``) and how rare
            (``expansion_max_turns``; their rarity is against ``max_word_turns``).
        said: the message's other words, which its query left out (too common): never added.

    A cue or feedback word found in more than ``expansion_max_turns`` turns is not added, nor
    one found in none: bm25() reads the documents of every word it ranks by, so the added
    words cost at most that many each, whatever the history's length.
    """
    extra = feedback_words(
        hits,
        [*asked, *said],
        count,
        terms=policy.expansion_terms,
        max_turns=policy.expansion_max_turns,
        common=policy.max_word_turns,
    )
    cues = category_cues([*asked, *said])
    counts = count(cues) if cues else {}
    extra += [cue for cue in cues if 0 < counts.get(cue, 0) <= policy.expansion_max_turns]
    if not extra:
        return ""
    return " ".join(list(dict.fromkeys([*asked, *extra]))[:QUERY_WORDS])


def category_cues(words: Iterable[str]) -> list[str]:
    """Return the cue words of every kind of thing ``words`` (lowercase) ask about, in the
    lexicon's order, without repeats and without ``words`` themselves."""
    asked = set(words)
    cues = [
        cue
        for kinds, said in _CATEGORIES
        if not kinds.isdisjoint(asked)
        for cue in said
        if cue not in asked
    ]
    return list(dict.fromkeys(cues))


def feedback_words(
    hits: Sequence[tuple[Sequence[str], float]],
    asked: Iterable[str],
    count: Callable[[list[str]], Mapping[str, int]],
    *,
    terms: int,
    max_turns: int,
    common: int,
) -> list[str]:
    """Return at most ``terms`` words to add to a query, heaviest first (RM3-like).

    Args:
        hits: the first search's best hits: each turn's content words and its strength.
        asked: the words of the query already.
        count: the number of turns each of some words is in (a word missing: left out).
        terms: how many words to return at most.
        max_turns: a word in more turns than this says too little to be added.
        common: the count of turns at which a word says nothing (its rarity's scale).

    A word's weight is the sum of the relative strengths of the hits that hold it, times
    ``log(1 + common / turns)``. Words of letters only, of three letters or more, found in at
    least two turns (one: the hit itself) and at most ``max_turns``.
    """
    if not hits or terms < 1:
        return []
    best = max(strength for _, strength in hits) or 1.0
    skip = set(asked)
    relevance: dict[str, float] = {}
    for words, strength in hits:
        for word in set(words) - skip:
            if len(word) > 2 and word.isalpha():
                relevance[word] = relevance.get(word, 0.0) + strength / best
    counts = count(list(relevance))
    weighted = [
        (relevance[word] * math.log(1 + common / turns), word)
        for word in relevance
        if 2 <= (turns := counts.get(word, 0)) <= max_turns
    ]
    weighted.sort(key=lambda entry: (-entry[0], entry[1]))
    return [word for _, word in weighted[:terms]]


def merge_expanded(
    strength: dict[int, float], expanded: Mapping[int, float], share: float
) -> dict[int, float]:
    """Return the message's turn strengths (``strength``: seq -> BM25 strength) with the
    expanded search's hits (``expanded``: the same, for the expanded query) merged in: each
    scaled so that the expanded search's best scores ``share`` of the first search's best, a
    turn keeping the larger of its two strengths. The expanded query's hits rank below the
    message's own best ones, whatever the longer query's BM25 scale."""
    if not expanded:
        return strength
    best = max(strength.values(), default=0.0) or max(expanded.values())
    scale = share * best / (max(expanded.values()) or 1.0)
    merged = dict(strength)
    for seq, value in expanded.items():
        merged[seq] = max(merged.get(seq, 0.0), value * scale)
    return merged
