"""Deterministic, extractive compression of turns into a bounded rolling summary.

PRD-014 phase 3 and DESIGN.md section 4: no model, no randomness, no clock. Same turns in,
same summary out, byte for byte, so the state rebuilt from the turn log equals the live one
(I6).

How a session's summary moves, turn by turn (:meth:`ExtractiveSummarizer.fold`):

* Each turn adds one short line to ``summary_buffer`` (its first sentence and the first
  sentence of the answer: the packet's "recent turns, compressed") and its *summary items* to
  ``summary_items``: the **decisions** ("we agreed...", "let's go with...", ``[DECISION]``),
  the **facts** the user stated about themselves (:func:`~agent.memory.rules.fact_extraction.
  extract_facts`; a relative date as the date it names at the turn's time, in UTC), the
  **open questions** (asked and not answered: no reply, a reply that says
  it kept them open, or one that asks back: the rules by which the state opens a question loop
  or a clarification), and its best **key sentences** (those with the most content
  words; only what the people in the chat said, never the bot's own answers). A message is
  read up to Telegram's 4,096 characters, so a turn costs a few milliseconds at most. A turn
  whose reply is help or an error text (``HELP_OR_ERROR_INTENTS``: "I didn't understand",
  the help text) adds only the user's words to its line, and no items: the reply is not
  conversation, and a message not understood changes no state.
* Every ``every_n`` turns the turns not yet summarised, all but the last ``keep_raw`` (which
  the packet carries verbatim), are folded into a *delta*: every decision, fact and open
  question of those turns, then the key sentences ranked by topic weight (the state's
  ``active_topics``) and by term frequency within the window (a word many of the turns use
  weighs more), as many as fit in ``delta_chars``.
* The rolling summary is the list of deltas, oldest first, each under a header naming the
  turns it covers (``[turns 8-17]``). When it outgrows ``max_summary_chars`` the oldest deltas
  are compressed further into one *digest* (``[digest of turns 1-40]``): a summary of
  summaries that keeps their decisions, facts and open questions and only the best key sentence
  of each; facts restated later replace earlier ones. The oldest material goes first: the
  digest's key sentences, then (once every older delta is in the digest) its oldest open
  questions, then facts, and decisions last. So the rolling summary is bounded however long the
  chat runs, and what matters most is what stays longest.

Each fold is one *version* of the summary: :func:`agent.memory.writer.write_summary_version`
stores it in the version chain (``conversation_summaries``) in the transaction of the turn that
made it, so the chain's latest extractive text is always the state's ``rolling_summary``.

A summary line reads ``#12 Ada [decision]: let's go with Postgres`` (``[fact]``,
``[open question]``; a key sentence has no tag), so a person, the offline concierge and a model
can all read it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agent.memory.rules.dialogue_acts import (
    HELP_OR_ERROR_INTENTS,
    KEPT_OPEN_INTENTS,
    MEMORY_ERASURE_INTENTS,
    UNRETRIEVED_REPLY_INTENTS,
    bot_question,
)
from agent.memory.rules.extraction import content_stems, split_clauses
from agent.memory.rules.fact_dates import dated_facts
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.schemas import (
    ConversationTurn,
    SessionState,
    SummaryItem,
    SummaryItemKind,
    Topic,
)
from agent.memory.summaries.summary_segments import (
    PRIORITY,
    Segment,
    absorb,
    parse_summary,
    render_item,
    render_segments,
    same_item,
    shed,
)
from agent.utils.time_zones import DEFAULT_ZONE

__all__ = ["ExtractiveSummarizer", "Summarizer", "SummaryFold"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_SPACE = re.compile(r"\s+")
_F = re.IGNORECASE
# A clause that records a decision (the group-decision patterns of seed 000, and "[DECISION]").
_DECISION = re.compile(
    r"\[decision\]|^decision\s*[:-]|\b(?:we|i)(?:'ve|\s+have)?\s+(?:all\s+|finally\s+)?"
    r"(?:agreed|decided)\b|\blet'?s\s+go\s+with\b|\blet\s+us\s+go\s+with\b"
    r"|\bwe(?:'ll|\s+will|\s+are\s+going\s+to)\s+go\s+with\b|\bit'?s\s+(?:decided|settled)\b"
    r"|\bfinal\s+decision\b|\bagreed\s*[:,-]",
    _F,
)
# Words one of the decision patterns needs: a cheap test before the regex.
_DECISION_WORDS = ("decision", "decided", "agreed", "go with", "settled")
# The part of a message read for summary items: Telegram's longest message.
_SCAN_CHARS = 4096
# Characters a speaker name may not bring into a summary line (they delimit its parts).
_WHO_JUNK = re.compile(r"[\s:\[\]#]+")
# A topic word counts this much more than a word the window merely repeats.
_TOPIC_FACTOR = 10.0


@dataclass(frozen=True, slots=True)
class SummaryFold:
    """The summary part of a session state after one more turn.

    Attributes:
        rolling_summary: the bounded summary of every turn up to ``summarized_through``.
        summary_buffer: one line per turn not yet folded, oldest first.
        summary_items: the summary items of those turns.
        last_summary_delta: what this turn's fold added ("" when it did not fold).
        summary_version: how many folds the session has had (the chain's version).
        summarized_through: the seq of the last turn the rolling summary covers.
    """

    rolling_summary: str
    summary_buffer: tuple[str, ...]
    summary_items: tuple[SummaryItem, ...] = ()
    last_summary_delta: str = ""
    summary_version: int = 0
    summarized_through: int = 0

    def as_update(self) -> dict[str, object]:
        """Return the fold as a ``SessionState.model_copy(update=...)`` mapping."""
        return {
            "rolling_summary": self.rolling_summary,
            "summary_buffer": self.summary_buffer,
            "summary_items": self.summary_items,
            "last_summary_delta": self.last_summary_delta,
            "summary_version": self.summary_version,
            "summarized_through": self.summarized_through,
        }


class Summarizer(Protocol):
    """**Protocol:** turns conversation into summary text.

    Called by :class:`agent.memory.conversation_state_manager.ConversationStateManager` on
    every turn (``fold``) and by the lane at shutdown (``pending_delta``). Implementations must
    be deterministic and read nothing but their arguments: the state rebuilt from the turn log
    must equal the live one (I6).
    """

    def fold(self, state: SessionState, turn: ConversationTurn) -> SummaryFold:
        """Return the summary fields after ``turn``, given the state before it."""
        ...

    def pending_delta(self, state: SessionState) -> str:
        """Return the delta that would fold the turns not yet summarised, without folding."""
        ...


def _first_sentence(text: str, limit: int) -> str:
    flat = _SPACE.sub(" ", text[:_SCAN_CHARS]).strip()
    sentence = _SENTENCE_END.split(flat, maxsplit=1)[0]
    return _cap(sentence, limit)


def _cap(text: str, limit: int) -> str:
    text = _SPACE.sub(" ", text).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def _who(turn: ConversationTurn) -> str:
    who = _WHO_JUNK.sub(" ", turn.speaker or "").strip()[:40].strip()
    return who or "user"


def _is_decision(text: str) -> bool:
    folded = text.casefold()
    return any(word in folded for word in _DECISION_WORDS) and bool(_DECISION.search(text))


class ExtractiveSummarizer:
    """The default :class:`Summarizer`: extractive deltas every ``every_n`` turns, bounded.

    Args:
        every_n: fold the turns not yet summarised every this many turns.
        keep_raw: the newest turns never folded (they stay verbatim in the packet).
        line_chars: the longest a turn's buffer line may be.
        max_summary_chars: the most characters the rolling summary may hold.
        delta_chars: the most characters one delta may hold (default: 40% of
            ``max_summary_chars``).
        item_chars: the longest one summary item may be (at most half of ``delta_chars``).
        keys_per_turn: key sentences of each turn kept as candidates for the delta.
        items_per_turn: summary items of each turn kept at most (decisions first).

    Raises:
        ValueError: a setting out of range.
    """

    def __init__(
        self,
        *,
        every_n: int = 10,
        keep_raw: int = 3,
        line_chars: int = 160,
        max_summary_chars: int = 2000,
        delta_chars: int | None = None,
        item_chars: int = 200,
        keys_per_turn: int = 2,
        items_per_turn: int = 8,
    ) -> None:
        if every_n < 1 or keep_raw < 0:
            raise ValueError("every_n must be at least 1 and keep_raw at least 0")
        if max_summary_chars < 200:
            raise ValueError("max_summary_chars must be at least 200")
        delta_chars = max_summary_chars * 2 // 5 if delta_chars is None else delta_chars
        if not 60 <= delta_chars <= max_summary_chars - 20:
            raise ValueError("delta_chars must be at least 60 and fit in max_summary_chars")
        # An item leaves room in its delta for its line's prefix and the delta's header.
        item_chars = min(item_chars, delta_chars // 2)
        if item_chars < 20:
            raise ValueError("item_chars must be at least 20")
        self.every_n = every_n
        self.keep_raw = keep_raw
        self.line_chars = line_chars
        self.max_summary_chars = max_summary_chars
        self.delta_chars = delta_chars
        self.item_chars = item_chars
        self.keys_per_turn = keys_per_turn
        self.items_per_turn = items_per_turn

    # -- one turn --------------------------------------------------------------------------

    def line(self, turn: ConversationTurn) -> str:
        """Return the one-line form of a turn, e.g. ``#7 Ada: I moved to Lisbon. -> Noted.``;
        a help or error reply is left out (``#8 Ada: blorp``), and a request to forget a
        memory keeps none of its words."""
        who = turn.speaker or "user"
        if turn.intent in MEMORY_ERASURE_INTENTS:  # it names what was erased: not its words
            return f"#{turn.seq} {who}: (asked me to forget something)"
        said = _first_sentence(turn.user_text, self.line_chars)
        if turn.assistant_text and turn.intent not in HELP_OR_ERROR_INTENTS:
            said += " -> " + _first_sentence(turn.assistant_text, self.line_chars // 2)
        return f"#{turn.seq} {who}: {said}"

    def items(self, turn: ConversationTurn) -> tuple[SummaryItem, ...]:
        """Return what ``turn`` said that a summary may keep: decisions, facts, open
        questions and its best key sentences, at most ``items_per_turn``, decisions first.

        A question is open when the bot did not answer it: no reply, a reply that kept it open
        (``KEPT_OPEN_INTENTS``) or one that asks back (the state's pending clarification). A
        turn answered with help or an error text offers nothing.
        """
        if turn.intent in UNRETRIEVED_REPLY_INTENTS:
            return ()
        who = _who(turn)
        found: dict[SummaryItemKind, list[SummaryItem]] = {kind: [] for kind in PRIORITY}

        def add(kind: SummaryItemKind, text: str) -> None:
            found[kind].append(
                SummaryItem(seq=turn.seq, kind=kind, who=who, text=_cap(text, self.item_chars))
            )

        said = turn.user_text[:_SCAN_CHARS]
        facts = extract_facts(said, turn=turn.seq)
        # "test: test is on Fri 27 Nov", not "tomorrow": a summary is read on other days.
        for fact in dated_facts(facts, turn.created_at, DEFAULT_ZONE):
            # "name: Ada", "likes: jazz", "favourite colour: blue"
            label, _, detail = fact.key.partition(":")
            # "allergy: shellfish", not "allergy shellfish: shellfish" (a key holding its value)
            if detail and label not in {"likes", "dislikes"} and detail != fact.value.casefold():
                label = f"{label} {detail}"
            add("fact", f"{label}: {fact.value}")
        # The state's rules, not words of the reply: an answer that happens to contain "?"
        # or "don't know" ("I don't know your name yet") still answered.
        unanswered = (
            not turn.assistant_text
            or turn.intent in KEPT_OPEN_INTENTS
            or bot_question(turn.assistant_text, turn.intent, turn.user_text) is not None
        )
        keys: list[tuple[int, int, str]] = []
        for n, clause in enumerate(split_clauses(said)):
            # An item keeps its first item_chars: only they are read for words (a 4096-char
            # message costs about what a short one does).
            head = clause.text[: self.item_chars]
            if clause.question:
                if unanswered and len(content_stems(head)) >= 2:
                    add("question", clause.text + "?")
            elif _is_decision(clause.text):
                add("decision", clause.text)
            elif len(stems := content_stems(head)) >= 2 and not (
                facts and extract_facts(head, turn=turn.seq)  # a fact says it better
            ):
                keys.append((-len(stems), n, clause.text))
        for _, _, text in sorted(keys)[: self.keys_per_turn]:
            add("key", text)
        ranked = [item for kind in PRIORITY for item in found[kind]]
        return tuple(ranked[: self.items_per_turn])

    # -- folding ---------------------------------------------------------------------------

    def fold(self, state: SessionState, turn: ConversationTurn) -> SummaryFold:
        """Add the turn; every ``every_n`` turns fold all but the last ``keep_raw`` of the
        turns not yet summarised into the rolling summary as one new version.
        """
        lines = (*state.summary_buffer, self.line(turn))
        items = (*state.summary_items, *self.items(turn))
        if turn.seq % self.every_n != 0 or len(lines) <= self.keep_raw:
            return SummaryFold(
                state.rolling_summary,
                lines,
                items,
                "",
                state.summary_version,
                state.summarized_through,
            )
        to_seq = turn.seq - self.keep_raw
        segment = self._delta(
            [item for item in items if item.seq <= to_seq],
            state.active_topics,
            first=min(state.summarized_through + 1, to_seq),
            last=to_seq,
        )
        segments = [*parse_summary(state.rolling_summary), segment]
        return SummaryFold(
            rolling_summary=self._bounded(segments),
            summary_buffer=lines[len(lines) - self.keep_raw :] if self.keep_raw else (),
            summary_items=tuple(item for item in items if item.seq > to_seq),
            last_summary_delta=segment.render(),
            summary_version=state.summary_version + 1,
            summarized_through=to_seq,
        )

    def pending_delta(self, state: SessionState) -> str:
        """Return the delta that would fold the turns not yet summarised but the last
        ``keep_raw`` ("" when there are none); the state is not changed.
        """
        to_seq = state.turn_count - self.keep_raw
        if to_seq <= state.summarized_through:
            return ""
        segment = self._delta(
            [item for item in state.summary_items if item.seq <= to_seq],
            state.active_topics,
            first=state.summarized_through + 1,
            last=to_seq,
        )
        return segment.render()

    def _delta(
        self, items: Sequence[SummaryItem], topics: Sequence[Topic], *, first: int, last: int
    ) -> Segment:
        """Build the delta of a window: decisions, facts, open questions, then ranked keys."""
        by_kind: dict[SummaryItemKind, list[SummaryItem]] = {}
        for kind in PRIORITY[:-1]:
            # Said twice in the window, kept once: the latest saying (facts: the latest value).
            latest = {same_item(item): item for item in items if item.kind == kind}
            by_kind[kind] = sorted(latest.values(), key=lambda item: item.seq)
        seen: set[str] = set()
        by_kind["key"] = []
        for item in self._ranked_keys(items, topics):  # best first; a repeat is no news
            if item.text.casefold() not in seen:
                seen.add(item.text.casefold())
                by_kind["key"].append(item)
        segment = Segment(first, last)
        budget = self.delta_chars - len(segment.render())
        for kind in PRIORITY:  # what matters most is taken first
            for item in by_kind[kind]:
                cost = len(render_item(item)) + 1
                if cost <= budget:
                    budget -= cost
                    segment.items.append(item)
        return segment

    def _ranked_keys(
        self, items: Sequence[SummaryItem], topics: Sequence[Topic]
    ) -> list[SummaryItem]:
        """Key sentences, best first: topic weight, then the window's term frequency."""
        stems_of = [content_stems(item.text) for item in items]
        turns_with: dict[str, set[int]] = {}
        for item, stems in zip(items, stems_of, strict=True):
            for stem in stems:
                turns_with.setdefault(stem, set()).add(item.seq)
        topic_stems = [(content_stems(topic.name), topic.weight) for topic in topics]

        def score(n: int) -> float:
            stems = stems_of[n]
            if not stems:
                return 0.0
            topical = sum(
                weight * len(wanted & stems) / len(wanted)
                for wanted, weight in topic_stems
                if wanted
            )
            # How many of the window's turns use each word, damped for long sentences.
            frequent = sum(len(turns_with[stem]) for stem in sorted(stems)) / math.sqrt(len(stems))
            return _TOPIC_FACTOR * topical + frequent

        keys = [n for n, item in enumerate(items) if item.kind == "key"]
        keys.sort(key=lambda n: (-score(n), items[n].seq, n))
        return [items[n] for n in keys]

    def _bounded(self, segments: list[Segment]) -> str:
        """Render the segments within ``max_summary_chars``, compressing the oldest first."""
        while len(text := render_segments(segments)) > self.max_summary_chars:
            older = segments[:-1]
            if older and not older[0].digest:
                digest = Segment(older[0].first, older[0].last, digest=True)
                absorb(digest, older[0])  # the oldest delta becomes the digest...
                segments[0] = digest
            elif older and shed(older[0], newest=False, kinds=("key",)):
                continue  # the digest's oldest key sentence is the oldest detail
            elif len(older) >= 2:
                absorb(older[0], older[1])  # ...and absorbs the next oldest delta
                del segments[1]
            elif older and not shed(older[0], newest=False):
                del segments[0]  # an empty digest
            elif not older and not shed(segments[-1], newest=True):
                return text[: self.max_summary_chars]  # only a header left (cannot happen)
        return text
