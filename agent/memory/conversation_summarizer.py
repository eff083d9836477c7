"""Deterministic compression of turns into summary lines and a bounded rolling summary.

Phase 1 of PRD-014: no model, no randomness. Each turn becomes one short line (the first
sentence of what was said and of the answer). Every ``every_n`` turns the lines of the oldest
turns, all but the last ``keep_raw``, are folded into the rolling summary as one *delta*; the
rolling summary keeps its newest lines within ``max_summary_chars``, so its size is bounded
however long the chat runs. Same turns in, same summary out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agent.memory.schemas import ConversationTurn

__all__ = ["ExtractiveSummarizer", "Summarizer", "SummaryFold"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class SummaryFold:
    """The summary part of a session state after one more turn."""

    rolling_summary: str
    summary_buffer: tuple[str, ...]
    last_summary_delta: str


class Summarizer(Protocol):
    """**Protocol:** turns conversation into summary text.

    Called by :class:`agent.memory.conversation_state_manager.ConversationStateManager` on
    every turn (``fold``) and by the lane at shutdown (``pending_delta``). Implementations must
    be deterministic: the state rebuilt from the turn log must equal the live one (I6).
    """

    def fold(
        self, rolling_summary: str, buffer: Sequence[str], turn: ConversationTurn
    ) -> SummaryFold:
        """Return the summary fields after ``turn``."""
        ...

    def pending_delta(self, buffer: Sequence[str]) -> str:
        """Return the delta that would fold the not yet summarised lines, without folding."""
        ...


def _first_sentence(text: str, limit: int) -> str:
    flat = _SPACE.sub(" ", text).strip()
    sentence = _SENTENCE_END.split(flat, maxsplit=1)[0]
    if len(sentence) > limit:
        sentence = sentence[: limit - 1].rstrip() + "…"
    return sentence


class ExtractiveSummarizer:
    """The default :class:`Summarizer`: first sentences, folded every ``every_n`` turns.

    Args:
        every_n: fold the buffer into the rolling summary every this many turns.
        keep_raw: the newest turns never folded (they stay verbatim in the packet).
        line_chars: the longest a turn's line may be.
        max_summary_chars: the rolling summary drops its oldest lines beyond this size.
    """

    def __init__(
        self,
        *,
        every_n: int = 10,
        keep_raw: int = 3,
        line_chars: int = 160,
        max_summary_chars: int = 2000,
    ) -> None:
        if every_n < 1 or keep_raw < 0:
            raise ValueError("every_n must be at least 1 and keep_raw at least 0")
        self.every_n = every_n
        self.keep_raw = keep_raw
        self.line_chars = line_chars
        self.max_summary_chars = max_summary_chars

    def line(self, turn: ConversationTurn) -> str:
        """Return the one-line form of a turn, e.g. ``Ada: I moved to Lisbon. -> Noted.``."""
        who = turn.speaker or "user"
        said = _first_sentence(turn.user_text, self.line_chars)
        if turn.assistant_text:
            said += " -> " + _first_sentence(turn.assistant_text, self.line_chars // 2)
        return f"#{turn.seq} {who}: {said}"

    def fold(
        self, rolling_summary: str, buffer: Sequence[str], turn: ConversationTurn
    ) -> SummaryFold:
        """Add the turn's line; every ``every_n`` turns fold the oldest lines into the summary."""
        lines = (*buffer, self.line(turn))
        if turn.seq % self.every_n != 0 or len(lines) <= self.keep_raw:
            return SummaryFold(rolling_summary, lines, "")
        cut = len(lines) - self.keep_raw
        delta = self.pending_delta(lines[:cut])
        return SummaryFold(self._bounded(rolling_summary, delta), lines[cut:], delta)

    def pending_delta(self, buffer: Sequence[str]) -> str:
        """Return the delta made of ``buffer``'s lines: one line per turn, in order."""
        return "\n".join(buffer)

    def _bounded(self, summary: str, delta: str) -> str:
        lines = [*summary.splitlines(), *delta.splitlines()]
        kept: list[str] = []
        size = 0
        for text in reversed(lines):
            size += len(text) + 1
            if size > self.max_summary_chars:
                break
            kept.append(text)
        return "\n".join(reversed(kept))
