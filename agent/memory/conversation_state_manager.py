"""Session state: a deterministic function of the turn log (invariant I6).

:meth:`ConversationStateManager.apply` is the one rule that moves a :class:`SessionState`
forward by one turn. The lane applies it live; :meth:`ConversationStateManager.rebuild` folds
it over a whole turn log; both must give the same state, so ``apply`` reads nothing but its
arguments (no clock, no randomness, no database).
"""

from __future__ import annotations

from collections.abc import AsyncIterable

from agent.memory.conversation_summarizer import ExtractiveSummarizer, Summarizer
from agent.memory.schemas import ConversationTurn, JobRef, ResponseType, SessionState

__all__ = ["ConversationStateManager"]


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
        known = {ref.job_id for ref in state.active_job_refs}
        new_refs = tuple(
            JobRef(job_id=ref, kind=ref.partition(":")[0] if ":" in ref else "job")
            for ref in dict.fromkeys(turn.job_refs)
            if ref not in known
        )
        return state.model_copy(
            update={
                "status": "active",
                "turn_count": turn.seq,
                "last_intent": turn.intent,
                "last_response_type": _response_type(turn),
                "active_job_refs": state.active_job_refs + new_refs,
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
