"""Active topics: the key phrases of what people say, weighted by how recently they said them.

No NLP model: a phrase is a run of content words (at most three) between stop words, digits and
punctuation, so "I'm planning a trip to Lisbon, the hotel booking is next" gives ``trip``,
``lisbon``, ``hotel booking``. On every turn each topic's weight is multiplied by ``decay`` and
each phrase the turn mentions gains ``boost``; the ``max_topics`` heaviest stay. Ties go to the
topic mentioned last, then to the name, so the same turns always give the same topics (I6).
Only what people say counts (``user_text``), never the bot's own replies.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agent.memory.rules.extraction import normalize_text
from agent.memory.schemas import Topic
from agent.utils.text import TOPIC_STOP_WORDS, split_words_and_breaks

__all__ = ["MAX_PHRASES_PER_TURN", "TopicTracker", "key_phrases"]

_MAX_PHRASE_WORDS = 3
#: Phrases read from one message at most (a long message does not flood the topics).
MAX_PHRASES_PER_TURN = 6


# Verbs of feeling and seeing, which name no subject: "I hate mornings" is about mornings.
_FEELINGS = frozenset(
    "hate hates love loves enjoy enjoys adore feel feels felt seem seems went saw".split()
)


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if (len(word) > 5 and word.endswith("oes")) or (
        len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses"))
    ):
        return word[:-2]  # tomatoes, matches, dishes, boxes, classes (not shoes)
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _past_tense(word: str) -> bool:
    # "the castle looked great": "looked" is in no phrase that names a subject ("seed" is).
    return len(word) > 4 and word.endswith("ed") and not word.endswith("eed")


def _phrases(words: list[str]) -> str | None:
    if not words:
        return None
    run = words[-_MAX_PHRASE_WORDS:]  # the head noun of an English phrase comes last
    run[-1] = _singular(run[-1])
    return " ".join(run)


def key_phrases(text: str, *, limit: int = MAX_PHRASES_PER_TURN) -> tuple[str, ...]:
    """Return the key phrases of ``text``, casefolded, in order of first mention.

    Args:
        text: what someone said (any length, any script).
        limit: the most phrases returned (the first ones).

    Returns:
        Distinct phrases of one to three content words, e.g. ``("trip", "lisbon")`` for
        "I'm planning a trip to Lisbon".
    """
    found: list[str] = []
    run: list[str] = []
    for word in split_words_and_breaks(normalize_text(text).casefold()):
        if word.endswith("'s"):
            word = word[:-2]
        if (
            len(word) >= 2
            and word[0].isalpha()
            and word not in TOPIC_STOP_WORDS
            and word not in _FEELINGS
            and not _past_tense(word)
        ):
            run.append(word)
            continue
        phrase = _phrases(run)
        run = []
        if phrase is not None and phrase not in found:
            found.append(phrase)
            if len(found) >= limit:
                return tuple(found)
    phrase = _phrases(run)
    if phrase is not None and phrase not in found and len(found) < limit:
        found.append(phrase)
    return tuple(found)


class TopicTracker:
    """Keeps the active topics of a session: decayed each turn, boosted when mentioned.

    Args:
        decay: each topic's weight is multiplied by this on every turn (0 < decay < 1).
        boost: what a mention adds to a topic's weight (a new topic starts at it).
        max_topics: the most topics kept (the heaviest).
        min_weight: a topic lighter than this is dropped (talk has long moved on).
    """

    def __init__(
        self,
        *,
        decay: float = 0.85,
        boost: float = 1.0,
        max_topics: int = 8,
        min_weight: float = 0.05,
    ) -> None:
        if not 0 < decay < 1 or boost <= 0 or max_topics < 0 or min_weight < 0:
            raise ValueError(
                "decay must be between 0 and 1, boost positive, max_topics and min_weight not "
                "negative"
            )
        self.decay = decay
        self.boost = boost
        self.max_topics = max_topics
        self.min_weight = min_weight

    def update(
        self, topics: Sequence[Topic], mentioned: Iterable[str], *, seq: int
    ) -> tuple[Topic, ...]:
        """Return the topics after turn ``seq``, which mentioned the phrases ``mentioned``.

        Weights are rounded to four decimals, so that a state read back from its JSON is equal
        to the live one and the checkpoint file stays readable.
        """
        weights = {t.name: (t.weight * self.decay, t.last_turn) for t in topics}
        for name in mentioned:
            weight, _ = weights.get(name, (0.0, seq))
            weights[name] = (weight + self.boost, seq)
        ranked = sorted(weights.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
        return tuple(
            Topic(name=name, weight=round(weight, 4), last_turn=last)
            for name, (weight, last) in ranked[: self.max_topics]
            if weight >= self.min_weight
        )
