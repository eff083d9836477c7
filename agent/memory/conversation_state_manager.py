"""Session state: a deterministic function of the turn log (invariant I6).

:meth:`ConversationStateManager.apply` is the one rule that moves a :class:`SessionState`
forward by one turn. The lane applies it live; :meth:`ConversationStateManager.rebuild` folds
it over a whole turn log; both must give the same state, so ``apply`` reads nothing but its
arguments (no clock, no randomness, no database).

What the user says moves the state by rules shared with the offline concierge (so what it
acknowledges is what the state records): facts they state about themselves
(:func:`merge_facts`), to-dos they open and close (:func:`update_open_loops`). Reminders are
not read from the text: the reply engine schedules them as job refs on the turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable, Sequence
from dataclasses import dataclass

from agent.memory.conversation_summarizer import ExtractiveSummarizer, Summarizer
from agent.memory.extraction import content_stems, extract_closers, extract_openers, match_loop
from agent.memory.fact_extraction import extract_facts
from agent.memory.schemas import ConversationTurn, Fact, OpenLoop, ResponseType, SessionState

__all__ = [
    "MAX_FACTS",
    "MAX_OPEN_LOOPS",
    "ConversationStateManager",
    "LoopUpdate",
    "merge_facts",
    "update_open_loops",
]

#: The most facts a session state keeps (the newest win).
MAX_FACTS = 50
#: The most open loops a session state keeps (the newest win).
MAX_OPEN_LOOPS = 50


def _opposite(key: str) -> str | None:
    kind, sep, item = key.partition(":")
    if not sep or kind not in {"likes", "dislikes"}:
        return None
    return f"{'dislikes' if kind == 'likes' else 'likes'}:{item}"


def merge_facts(
    existing: Sequence[Fact], new: Iterable[Fact], *, limit: int = MAX_FACTS
) -> tuple[Fact, ...]:
    """Return ``existing`` updated with ``new``: a key restated replaces the old fact.

    Liking and disliking the same item replace each other. The newest fact comes last; beyond
    ``limit`` the oldest are dropped, so the set stays bounded however long the chat runs.

    Args:
        existing: the facts before, oldest first.
        new: the facts just stated.
        limit: the most facts kept.
    """
    merged = {fact.key: fact for fact in existing}
    for fact in new:
        merged.pop(fact.key, None)
        opposite = _opposite(fact.key)
        if opposite is not None:
            merged.pop(opposite, None)
        merged[fact.key] = fact
    return tuple(merged.values())[-limit:] if limit > 0 else ()


@dataclass(frozen=True, slots=True)
class LoopUpdate:
    """The open loops after one utterance, and what changed.

    Attributes:
        loops: the loops still open, oldest first (closed ones have left).
        opened: loops the utterance opened.
        closed: loops it closed (with ``closed_turn`` set).
        already_open: to-dos it restated that were open already.
        unmatched: explicit closers ("done: X") that matched no open loop.
    """

    loops: tuple[OpenLoop, ...]
    opened: tuple[OpenLoop, ...] = ()
    closed: tuple[OpenLoop, ...] = ()
    already_open: tuple[OpenLoop, ...] = ()
    unmatched: tuple[str, ...] = ()


def update_open_loops(
    loops: Sequence[OpenLoop], text: str, *, seq: int, limit: int = MAX_OPEN_LOOPS
) -> LoopUpdate:
    """Apply one utterance to the open loops: close what it says is done, open its to-dos.

    Closers are applied first ("I booked the hotel, now I need to book the flight"). A new loop
    gets the deterministic id ``loop-<seq>-<n>``. Beyond ``limit`` the oldest loops are dropped.

    Args:
        loops: the open loops before the utterance.
        text: the user's message.
        seq: the seq of its turn.
        limit: the most loops kept.
    """
    remaining = list(loops)
    closed: list[OpenLoop] = []
    unmatched: list[str] = []
    for closer in extract_closers(text):
        hit = match_loop(closer.text, remaining)
        if hit is not None:
            remaining.remove(hit)
            closed.append(hit.model_copy(update={"closed_turn": seq}))
        elif closer.explicit and (closer.text.strip().isdecimal() or content_stems(closer.text)):
            # "done: the hotel" with no such loop deserves a reply; "I did it" does not.
            unmatched.append(closer.text)
    opened: list[OpenLoop] = []
    already: list[OpenLoop] = []
    for n, todo in enumerate(extract_openers(text), start=1):
        stems = content_stems(todo) or frozenset({todo.casefold()})
        same = next((lp for lp in remaining if content_stems(lp.text) == stems), None)
        if same is not None:
            already.append(same)
            continue
        opened.append(OpenLoop(loop_id=f"loop-{seq}-{n}", text=todo, opened_turn=seq))
    kept = (*remaining, *opened)
    return LoopUpdate(
        loops=kept[-limit:] if limit > 0 else (),
        opened=tuple(opened),
        closed=tuple(closed),
        already_open=tuple(already),
        unmatched=tuple(unmatched),
    )


def _response_type(turn: ConversationTurn) -> ResponseType:
    if not turn.assistant_text:
        return "none"
    return "action" if turn.action_name else "text"


class ConversationStateManager:
    """Moves session states forward, one turn at a time.

    Args:
        summarizer: folds turns into the rolling summary; default :class:`ExtractiveSummarizer`.
    """

    def __init__(self, summarizer: Summarizer | None = None) -> None:
        self.summarizer = summarizer or ExtractiveSummarizer()

    def apply(self, state: SessionState, turn: ConversationTurn) -> SessionState:
        """Return the state after ``turn``.

        Facts and to-dos come from ``turn.user_text``, job refs from ``turn.job_refs``, the
        summary from the summarizer; nothing else is read.

        Raises:
            ValueError: the turn belongs to another session or is not the next one.
        """
        if turn.session_id != state.session_id:
            raise ValueError(f"turn {turn.turn_id} is not of session {state.session_id}")
        if turn.seq != state.turn_count + 1:
            raise ValueError(
                f"turn {turn.turn_id} has seq {turn.seq}; session {state.session_id} expects "
                f"{state.turn_count + 1}"
            )
        summary = self.summarizer.fold(state.rolling_summary, state.summary_buffer, turn)
        facts = merge_facts(state.facts, extract_facts(turn.user_text, turn=turn.seq))
        loops = update_open_loops(state.open_loops, turn.user_text, seq=turn.seq).loops
        jobs = {ref.job_id: ref for ref in state.active_job_refs}
        for ref in turn.job_refs:
            if ref.status == "scheduled":
                jobs.setdefault(ref.job_id, ref)
            else:
                jobs.pop(ref.job_id, None)
        return state.model_copy(
            update={
                "status": "active",
                "turn_count": turn.seq,
                "last_intent": turn.intent,
                "last_response_type": _response_type(turn),
                "active_job_refs": tuple(jobs.values()),
                "facts": facts,
                "open_loops": loops,
                "rolling_summary": summary.rolling_summary,
                "summary_buffer": summary.summary_buffer,
                "last_summary_delta": summary.last_summary_delta,
            }
        )

    async def rebuild(
        self, session_id: str, turns: AsyncIterable[ConversationTurn]
    ) -> SessionState:
        """Fold the whole turn log of a session into its state (slow: reads every turn)."""
        state = SessionState(session_id=session_id)
        async for turn in turns:
            state = self.apply(state, turn)
        return state
