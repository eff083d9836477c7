"""How retrieval scores its candidates: the weights, the policy, and the ranking.

:mod:`agent.memory.conversation_retriever` fetches the candidates (searches of the turns,
summaries and memories); this module turns their signals into the score its docstring draws,
spreads a hit's strength to the turns next to it, and leaves out what a token budget could
never take. Pure functions of the candidates: no database. Tested in
``tests/test_conversation_retriever.py``.
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from agent.memory.longterm.memory_consolidator import DecayPolicy
from agent.memory.schemas import RetrievedItem, RetrievedKind, SessionState
from agent.utils.tokens import tokens_for_chars

__all__ = [
    "Candidate",
    "RetrievalPolicy",
    "RetrievalWeights",
    "fact_turns",
    "fuse",
    "loop_turns",
    "rank",
    "spread",
]

# What a turn before a hit inherits, relative to a turn after it (replies carry answers).
_BEFORE = 0.7


@dataclass(frozen=True, slots=True)
class RetrievalWeights:
    """The weights of the retrieval score.

    Seed 003's weights were the start: semantic 0.4 and keyword 0.3 (here BM25 against the
    new message and against the active topics), recency 0.2, importance 0.1, and 0.1 for open
    loops. On ``bench/memory_quality.py`` those lost to plain BM25 (the topics and recency of
    the moment pulled in turns unrelated to the question), so relevance to the message now
    dominates and the other signals break ties and fill in when the message matches nothing.
    Recency is off by default: at 0.1 it pulled the later sessions' turns above the earlier
    ones that answer (``bench/memory_quality.py``, all 999 questions: 0 found the evidence
    of 0.4 / 1.1 points more of them at 1,000 / 2,000 tokens, multi-hop 3.5 more); equal
    scores still go to the newer item, and the last turns are in every packet verbatim.
    """

    message: float = 1.0
    topics: float = 0.1
    recency: float = 0.0
    importance: float = 0.1
    open_loop: float = 0.1

    def __post_init__(self) -> None:
        values = (self.message, self.topics, self.recency, self.importance, self.open_loop)
        if min(values) < 0 or sum(values) <= 0:
            raise ValueError("retrieval weights must be non-negative and not all zero")


@dataclass(frozen=True, slots=True)
class RetrievalPolicy:
    """How candidates are gathered and scored.

    Attributes:
        weights: the score's weights.
        candidates: the fewest candidates each index returns per query.
        max_candidates: the most (the budget sizes the set between the two).
        recency_half_life_turns: turns back after which a turn's recency halves.
        min_score: candidates scoring below this are left out.
        turn_importance: the importance of an ordinary turn.
        fact_turn_importance: of a turn that stated a fact or carries a job.
        summary_importance: of a summary delta.
        speaker_boost: the BM25 strength of a turn is multiplied by this when the message
            names its speaker.
        neighbour_weight: the share of a hit's strength the turns next to it inherit (divided
            by the distance; the turns before it get 0.7 of that).
        neighbour_span: how many turns on each side of a hit inherit.
        neighbour_hits: the strongest hits whose neighbours inherit (20 built twice as many
            neighbours and found the evidence of one more question of 999 in
            bench/memory_quality.py).
        max_word_turns: a word found in more turns than this (in the whole index) is left out
            of every search: it says little, and ranking by it would cost more and more as the
            history grows. 1,000 kept bench/memory_quality.py's recall of 2,000 to the
            question (500 lost half a point) at half the cost of the words near the cap.
        fusion_k: the rank offset of reciprocal rank fusion (:func:`fuse`; 60 is the
            usual choice).
        semantic_weight: the semantic ranking's weight in the fusion (BM25's is 1).
        feedback_hits: the message's best BM25 hits whose vectors move its vector towards
            theirs before the semantic search (:meth:`SemanticSearch.search <agent.memory.
            semantic_search.SemanticSearch.search>`; 0: none).
        feedback: the weight of their mean vector there (the message's is 1).
        vector_wait: the seconds the semantic search waits, after the lexical searches, for
            the message's vector still being encoded (0: none; the search then goes from the
            feedback hits' vectors alone, and the reply does not wait for the encoder).
        decay: how memories decay (their recency and importance).
    """

    weights: RetrievalWeights = field(default_factory=RetrievalWeights)
    candidates: int = 40
    max_candidates: int = 400
    recency_half_life_turns: float = 200.0
    min_score: float = 0.0
    turn_importance: float = 0.5
    fact_turn_importance: float = 0.8
    summary_importance: float = 0.5
    speaker_boost: float = 1.5
    neighbour_weight: float = 0.6
    neighbour_span: int = 2
    neighbour_hits: int = 10
    max_word_turns: int = 1000
    fusion_k: int = 2
    semantic_weight: float = 1.0
    feedback_hits: int = 5
    feedback: float = 1.0
    vector_wait: float = 0.0
    decay: DecayPolicy = field(default_factory=DecayPolicy)

    def __post_init__(self) -> None:
        if self.candidates < 1 or self.max_candidates < self.candidates:
            raise ValueError("need 1 <= candidates <= max_candidates")
        if self.recency_half_life_turns <= 0:
            raise ValueError("recency_half_life_turns must be positive")
        if self.neighbour_span < 0 or self.neighbour_hits < 0 or self.neighbour_weight < 0:
            raise ValueError("neighbour_span, neighbour_hits and neighbour_weight must be >= 0")
        if self.vector_wait < 0:
            raise ValueError("vector_wait must be >= 0")


class _Ranked(NamedTuple):
    score: float  # rounded as the item shows it
    candidate: Candidate


@dataclass(slots=True)
class Candidate:
    """One thing a packet may carry (a turn, a summary delta or a memory) and its signals."""

    kind: RetrievedKind
    ref: str
    text: str
    seq: int | None
    speaker: str | None = None
    # Of ``text``, what a packet does not show on the item's line: a turn's seq, and its day
    # (a line of its own, shared by that day's turns).
    unlisted_chars: int = 0
    message: float = 0.0  # raw BM25 strength (-bm25) for the message query
    topics: float = 0.0  # ... for the topic query
    recency: float = 0.0
    importance: float = 0.0
    open_loop: float = 0.0


def rank(
    candidates: Iterable[Candidate],
    last_seq: int,
    state: SessionState | None,
    token_budget: int | None,
    policy: RetrievalPolicy,
) -> list[RetrievedItem]:
    """Score the candidates as :mod:`agent.memory.conversation_retriever` says; return them as
    items, best first (ties: the newer, then the reference), without those below
    ``min_score`` nor, with a ``token_budget``, those a first fit of it could never take."""
    pool = list(candidates)
    if not pool:
        return []
    weights = policy.weights
    best_message = max(c.message for c in pool) or 1.0
    best_topics = max(c.topics for c in pool) or 1.0
    first_loop = min(loop_turns(state), default=None)
    total = (
        weights.message + weights.topics + weights.recency + weights.importance
        + weights.open_loop
    )  # fmt: skip
    ranked: list[_Ranked] = []
    for c in pool:
        if c.kind != "memory" and c.seq is not None:
            c.recency = 0.5 ** (max(last_seq - c.seq, 0) / policy.recency_half_life_turns)
        if c.kind == "summary" and c.seq is not None and first_loop is not None:
            c.open_loop = 0.5 if first_loop <= c.seq else c.open_loop
        score = (
            weights.message * c.message / best_message
            + weights.topics * c.topics / best_topics
            + weights.recency * c.recency
            + weights.importance * c.importance
            + weights.open_loop * c.open_loop
        ) / total
        if score < policy.min_score or math.isnan(score):
            continue
        ranked.append(_Ranked(round(score, 4), c))
    # Best first; ties go to the newer item, then the reference (deterministic).
    ranked.sort(key=lambda r: (-r.score, -(r.candidate.seq or 0), r.candidate.ref))
    if token_budget is not None:
        ranked = _could_fit(ranked, token_budget)
    return [
        RetrievedItem(kind=c.kind, ref=c.ref, text=c.text, seq=c.seq, score=score)
        for score, c in ranked
    ]


def spread(
    strength: dict[int, float], before_seq: int | None, policy: RetrievalPolicy
) -> dict[int, float]:
    """Return what the turns next to the strongest hits inherit of their strength (see
    :attr:`RetrievalPolicy.neighbour_weight`); turns at or after ``before_seq`` inherit nothing."""
    inherited: dict[int, float] = {}
    top = sorted(strength.items(), key=lambda hit: (-hit[1], hit[0]))[: policy.neighbour_hits]
    for seq, value in top:
        for distance in range(1, policy.neighbour_span + 1):
            share = value * policy.neighbour_weight / distance
            for neighbour, side in ((seq + distance, 1.0), (seq - distance, _BEFORE)):
                if neighbour < 1 or (before_seq is not None and neighbour >= before_seq):
                    continue
                inherited[neighbour] = max(inherited.get(neighbour, 0.0), share * side)
    return inherited


def fuse(
    lexical: dict[int, float], semantic: Sequence[int], policy: RetrievalPolicy
) -> dict[int, float]:
    """Return the turns' strengths for the message as the fusion of two rankings: BM25's
    (``lexical``: seq -> strength) and the semantic search's (``semantic``: seqs, nearest
    first), by reciprocal rank fusion: ``1 / (k + rank)`` summed over the rankings that hold
    a turn, the semantic one weighted ``semantic_weight``. Ranks, not scores: BM25's and the
    cosine's scales do not compare. Scaled so that a turn first in both scores 1 per ranking.
    """
    k = policy.fusion_k
    fused: dict[int, float] = {}
    order = sorted(lexical.items(), key=lambda hit: (-hit[1], -hit[0]))
    for rank, (seq, _) in enumerate(order, start=1):
        fused[seq] = (k + 1) / (k + rank)
    for rank, seq in enumerate(semantic, start=1):
        fused[seq] = fused.get(seq, 0.0) + policy.semantic_weight * (k + 1) / (k + rank)
    return fused


def fact_turns(state: SessionState | None) -> set[int]:
    """Return the turns that stated one of the session's facts."""
    return set() if state is None else {fact.turn for fact in state.facts}


def loop_turns(state: SessionState | None) -> set[int]:
    """Return the turns that opened a loop still open or asked a question still pending."""
    if state is None:
        return set()
    opened = {loop.opened_turn for loop in state.open_loops}
    return opened | {c.asked_turn for c in state.pending_clarifications}


def _could_fit(ranked: list[_Ranked], budget: int) -> list[_Ranked]:
    """Return the ranked candidates a first fit of ``budget`` tokens could take, in order.

    :meth:`ConversationContextBuilder.build <agent.memory.conversation_context_builder.
    ConversationContextBuilder.build>` takes the retrieved items best first, each one that
    still fits after what the packet holds already (first fit). So an item is taken only if
    every item before it that costs no more was taken too (one left out found less room than
    this one needs), hence only if its cost plus theirs is within the budget, whatever the
    packet held before. The items that fail this can never be taken, and leaving them out
    changes nothing: a left-out item adds nothing to the packet. (This holds because none of
    the items is one the packet carries already: :meth:`ConversationRetriever.for_packet`
    leaves out the raw turns.)
    """
    kept: list[_Ranked] = []
    costs: list[int] = []  # the costs of the kept items, sorted
    never = budget + 1  # an item costing this much or more cannot be taken
    for entry in ranked:
        # A turn's day is a line shared by that day's turns: its own cost is its line's.
        cost = tokens_for_chars(len(entry.candidate.text) - entry.candidate.unlisted_chars)
        if cost >= never:
            continue
        if cost + sum(costs[: bisect_right(costs, cost)]) > budget:
            # Nor can any later item that costs as much: this one would have been before it.
            never = cost
            continue
        insort(costs, cost)
        kept.append(entry)
    return kept
