"""Session state: a deterministic function of the turn log (invariant I6).

:meth:`ConversationStateManager.apply` is the one rule that moves a :class:`SessionState`
forward by one turn. The lane applies it live; :meth:`ConversationStateManager.rebuild` folds
it over a whole turn log; both must give the same state, so ``apply`` reads nothing but its
arguments (no clock, no randomness, no database).

What the user says moves the state by rules shared with the offline concierge, so what it
acknowledges is what the state records (:mod:`agent.memory.rules.session_rules`): facts they
state about themselves (in groups only: in a personal chat they go to long-term memory, the
one place they are kept, updated and erased), to-dos they open and close. Reminders are not
read from the text: the reply engine schedules them as job refs on the turn.

A message the reply engine did not understand (its turn's intent is one of
:data:`~agent.memory.rules.dialogue_acts.NOT_UNDERSTOOD_INTENTS`, e.g. ``unknown``) changes nothing
but the turn count and the last intent and response type: no loop opens or closes, no fact,
topic or clarification moves, and the summary keeps only the user's words. The reply said it
did not understand, so the state must not act as if it had; the rule reads the intent recorded
on the turn, so the fold of the log agrees (I6).

The other rules of a turn (DESIGN.md section 4), each bounded, none reading the history:

- **topics**: key phrases of what people say, decayed each turn and boosted when mentioned
  (:class:`~agent.memory.rules.topic_tracker.TopicTracker`);
- **open loops** beyond to-dos
  (:func:`~agent.memory.rules.session_rules.update_dialogue_loops`): commitments ("I'll send
  you the report"), requests ("can you check X?") the bot did not handle, and user questions its
  reply did not answer (it kept them open: intent ``kept_open``). A loop is closed by a closer
  ("I sent the report", "done 2"), a question by a later statement or handled re-ask that
  covers it, the newest question or request by "never mind". A closed loop leaves
  ``open_loops`` with its ``closed_turn`` set and stays in ``closed_loops`` (the last
  :data:`MAX_CLOSED_LOOPS`) for audit;
- **pending clarifications**
  (:func:`~agent.memory.rules.session_rules.update_clarifications`): the bot's reply asked the
  user something; the next message of that user answers it. While one is pending the status is
  ``awaiting_clarification`` and the turn's response type ``clarification``; otherwise the
  status is ``active``. Start-up marks sessions ``resuming`` (lifecycle, outside the fold);
  the next turn's ``apply`` sets the status again from the state;
- **resolved entities** ("that task", "the reminder", "it" -> a job, loop, proposal or
  decision id, or ``topic:<name>``): :func:`~agent.memory.rules.entity_resolution.resolve_entities`;
- in **group chats** (``state.chat_type`` ``group`` or ``supergroup``): participants,
  proposals with reactions and decisions
  (:class:`~agent.memory.rules.deliberation.DeliberationTracker`);
- **session commands** recorded on a bot-side turn (:class:`~agent.memory.schemas.
  SessionControl`): a ``carry`` turn replaces the session's to-dos, commitments and jobs with
  the chat's (the loops get the ids ``loop-<seq>-<n>`` of the carry turn); a ``clear`` turn
  empties what the packet shows of the turns before it (topics, facts, clarifications,
  references, group deliberation, unanswered questions, the summaries: a new, empty summary
  version) and keeps the to-dos, commitments and jobs.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Sequence

from agent.memory.conversation_summarizer import ExtractiveSummarizer, Summarizer
from agent.memory.rules.deliberation import DeliberationTracker
from agent.memory.rules.dialogue_acts import MEMORY_ERASURE_INTENTS, NOT_UNDERSTOOD_INTENTS
from agent.memory.rules.entity_resolution import resolve_entities
from agent.memory.rules.extraction import split_clauses
from agent.memory.rules.fact_dates import dated_facts, zone_in
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.rules.session_rules import (
    CARRIED_LOOP_KINDS,
    GROUP_CHAT_TYPES,
    MAX_OPEN_LOOPS,
    PERSONAL_CHAT_TYPES,
    loop_owner,
    merge_facts,
    update_clarifications,
    update_dialogue_loops,
    update_open_loops,
)
from agent.memory.rules.topic_tracker import TopicTracker, key_phrases
from agent.memory.rules.value_corrections import correct_by_value
from agent.memory.schemas import (
    ChatType,
    ConversationTurn,
    JobRef,
    ResponseType,
    SessionControl,
    SessionState,
    SessionStatus,
)

__all__ = ["MAX_CLOSED_LOOPS", "ConversationStateManager"]

#: The most closed loops kept for audit (the latest closed).
MAX_CLOSED_LOOPS = 10


def _unnamed(phrase: str, names: frozenset[str]) -> str:
    """Return ``phrase`` without the words of group members' ``names`` ("" if nothing is left)."""
    return " ".join(word for word in phrase.split() if word not in names)


def _response_type(turn: ConversationTurn, *, clarification: bool = False) -> ResponseType:
    if not turn.assistant_text:
        return "none"
    if clarification:
        return "clarification"
    return "action" if turn.action_name else "text"


def _update_jobs(
    active: Sequence[JobRef], refs: Sequence[JobRef]
) -> tuple[tuple[JobRef, ...], tuple[JobRef, ...]]:
    """Return the active jobs after a turn's job refs, and those it newly scheduled."""
    jobs = {ref.job_id: ref for ref in active}
    scheduled: list[JobRef] = []
    for ref in refs:
        if ref.status != "scheduled":
            jobs.pop(ref.job_id, None)
        elif ref.job_id not in jobs:
            jobs[ref.job_id] = ref
            scheduled.append(ref)
    return tuple(jobs.values()), tuple(scheduled)


def _carried(state: SessionState, control: SessionControl, seq: int) -> SessionState:
    """Return ``state`` with the chat's to-dos, commitments and jobs a carry turn brings.

    The jobs come in as the turn's ``job_refs`` (the fold adds them); the loops get ids of the
    carry turn, so that none collides with a loop the session opens later.
    """
    kept = tuple(lp for lp in state.open_loops if lp.kind not in CARRIED_LOOP_KINDS)
    carried = tuple(
        lp.model_copy(
            update={"loop_id": f"loop-{seq}-{n}", "opened_turn": seq, "closed_turn": None}
        )
        for n, lp in enumerate(control.loops, start=1)
    )
    return state.model_copy(
        update={"open_loops": (*kept, *carried)[-MAX_OPEN_LOOPS:], "active_job_refs": ()}
    )


def _cleared(state: SessionState, turn: ConversationTurn) -> SessionState:
    """Return the state after a ``clear`` turn: what the packet shows of earlier turns is gone.

    The rolling summary restarts empty as a new version of the chain (its latest extractive
    version stays the state's summary), covering everything up to the clear.
    """
    return state.model_copy(
        update={
            "status": "active",
            "turn_count": turn.seq,
            "last_intent": turn.intent,
            "last_response_type": "none",
            "active_topics": (),
            "pending_clarifications": (),
            "facts": (),
            "open_loops": tuple(lp for lp in state.open_loops if lp.kind in CARRIED_LOOP_KINDS),
            "resolved_entities": {},
            "participants": (),
            "proposals": (),
            "decisions": (),
            "rolling_summary": "",
            "summary_buffer": (),
            "summary_items": (),
            "last_summary_delta": "",
            "summary_version": state.summary_version + 1,
            "summarized_through": turn.seq,
            "cleared_through": turn.seq,
        }
    )


class ConversationStateManager:
    """Moves session states forward, one turn at a time.

    Args:
        summarizer: folds turns into the rolling summary; default :class:`ExtractiveSummarizer`.
        topics: keeps the active topics; default :class:`TopicTracker`.
        deliberation: tracks group participants, proposals and decisions; default
            :class:`DeliberationTracker`.
    """

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        *,
        topics: TopicTracker | None = None,
        deliberation: DeliberationTracker | None = None,
    ) -> None:
        self.summarizer = summarizer or ExtractiveSummarizer()
        self.topics = topics or TopicTracker()
        self.deliberation = deliberation or DeliberationTracker()

    def apply(self, state: SessionState, turn: ConversationTurn) -> SessionState:
        """Return the state after ``turn``.

        Facts, to-dos, commitments, requests, questions, topics and (in groups) the
        deliberation come from ``turn.user_text`` and its speaker; clarifications and answered
        questions from the reply (``assistant_text`` and ``intent``); job refs from
        ``turn.job_refs``; the summary from the summarizer. Nothing else is read, and the cost
        does not depend on the history's length (every part of the state is bounded). A turn
        whose intent says the message was not understood moves only the turn count, the last
        intent and response type, and the summary.

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
        if turn.control is not None and turn.control.kind == "clear":
            return _cleared(state, turn)
        if turn.control is not None:  # carry: the chat's open items replace the session's
            state = _carried(state, turn.control, turn.seq)
        summary = self.summarizer.fold(state, turn)
        seq = turn.seq
        if turn.intent in NOT_UNDERSTOOD_INTENTS or turn.intent in MEMORY_ERASURE_INTENTS:
            # The reply said it did not understand, or the message asked to forget a long-term
            # memory (it acts there, not on the session): nothing of the message acts here.
            # Only what an erasure asks back ("Erase them (yes or no)?") is a clarification,
            # and the next message of whoever asked for it answers it.
            pending = state.pending_clarifications
            if turn.intent in MEMORY_ERASURE_INTENTS:
                owner = loop_owner(turn, state.chat_type)
                pending, _ = update_clarifications(pending, turn, owner=owner)
            still: SessionStatus = "awaiting_clarification" if pending else "active"
            return state.model_copy(
                update={
                    "pending_clarifications": pending,
                    "status": still,
                    "turn_count": seq,
                    "last_intent": turn.intent,
                    "last_response_type": _response_type(turn),
                    **summary.as_update(),
                }
            )
        group = state.chat_type in GROUP_CHAT_TYPES
        owner = loop_owner(turn, state.chat_type)
        clauses = split_clauses(turn.user_text) if turn.user_text.strip() else ()
        facts = state.facts
        if state.chat_type not in PERSONAL_CHAT_TYPES:
            # In a group, what a member says about themselves is theirs: it corrects and
            # replaces only their own facts (``owner``: nobody outside groups).
            theirs = [fact for fact in facts if fact.speaker == owner]
            said = extract_facts(turn.user_text, turn=seq) or correct_by_value(
                turn.user_text, theirs, turn=seq
            )
            # I6: dated at the turn's own time, so that a replay of the log gives the same.
            dated = dated_facts(said, turn.created_at, zone_in(theirs))
            facts = merge_facts(facts, (f.model_copy(update={"speaker": owner}) for f in dated))
        # A group message the bot only keeps is said to the other members.
        todos = update_open_loops(
            state.open_loops,
            turn.user_text,
            seq=seq,
            to_others=group and not turn.assistant_text,
            owner=owner,
        )
        todo_loops = todos.loops
        if owner is not None:  # in a group, a to-do belongs to whoever said it
            todo_loops = tuple(
                lp.model_copy(update={"owner": owner}) if lp.opened_turn == seq else lp
                for lp in todo_loops
            )
        loops, answered = update_dialogue_loops(
            todo_loops, turn, clauses, owner=owner, first_n=len(todos.opened) + 1
        )
        loops = loops[-MAX_OPEN_LOOPS:]
        closed = (*state.closed_loops, *todos.closed, *answered)[-MAX_CLOSED_LOOPS:]
        jobs, scheduled = _update_jobs(state.active_job_refs, turn.job_refs)
        pending, asked = update_clarifications(state.pending_clarifications, turn, owner=owner)
        participants, proposals, decisions = state.participants, state.proposals, state.decisions
        proposal_id = decision_id = None
        if group:
            moved = self.deliberation.apply(participants, proposals, decisions, turn, clauses)
            participants, proposals, decisions = (
                moved.participants,
                moved.proposals,
                moved.decisions,
            )
            proposal_id, decision_id = moved.proposal_id, moved.decision_id
        # Members call each other by name ("Hey Jon!"): who is spoken to is no topic.
        names = frozenset(word for p in participants for word in p.name.casefold().split())
        phrases = key_phrases(turn.user_text) if clauses else ()
        mentioned = tuple(dict.fromkeys(filter(None, (_unnamed(p, names) for p in phrases))))
        topics = tuple(
            t for t in self.topics.update(state.active_topics, mentioned, seq=seq)
            if _unnamed(t.name, names)
        )  # fmt: skip
        entities = resolve_entities(
            state.resolved_entities,
            topics=topics,
            loops=loops,
            jobs=jobs,
            proposals=proposals,
            decisions=decisions,
            mentioned=mentioned,
            opened_loops=tuple(lp for lp in loops if lp.opened_turn == seq),
            scheduled=scheduled,
            proposal_id=proposal_id,
            decision_id=decision_id,
        )
        status: SessionStatus = "awaiting_clarification" if pending else "active"
        return state.model_copy(
            update={
                "status": status,
                "turn_count": seq,
                "last_intent": turn.intent,
                "last_response_type": _response_type(turn, clarification=asked is not None),
                "active_topics": topics,
                "pending_clarifications": pending,
                "active_job_refs": jobs,
                "facts": facts,
                "open_loops": loops,
                "closed_loops": closed,
                "resolved_entities": entities,
                "participants": participants,
                "proposals": proposals,
                "decisions": decisions,
                **summary.as_update(),
            }
        )

    async def rebuild(
        self,
        session_id: str,
        turns: AsyncIterable[ConversationTurn],
        *,
        chat_type: ChatType = "private",
    ) -> SessionState:
        """Fold the whole turn log of a session into its state (slow: reads every turn).

        Args:
            session_id: the session.
            turns: its turns, in order.
            chat_type: the session's chat type (the fold starts from a state of that type).
        """
        state = SessionState(session_id=session_id, chat_type=chat_type)
        async for turn in turns:
            state = self.apply(state, turn)
        return state
