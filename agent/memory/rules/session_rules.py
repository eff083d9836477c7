"""The rules of one turn that the session state and the rule-based concierge share.

What the user says moves the session state by these rules
(:class:`~agent.memory.conversation_state_manager.ConversationStateManager`), and the offline
concierge (:mod:`agent.engines.rule_based`) runs the same rules on a preview of the turn, so
what it acknowledges is what the state records:

- facts restated replace the old ones, per slot (:func:`merge_facts`);
- to-dos open and close, or lose the things of their list that are done
  (:func:`update_open_loops`);
- commitments, requests and questions open, and answers or "never mind" close them
  (:func:`update_dialogue_loops`);
- the bot's questions wait for the person asked (:func:`update_clarifications`);
- in a group, loops belong to whoever opened them (:func:`loop_owner`).

Every rule reads nothing but its arguments (invariant I6: the fold of the turn log gives the
same state as the live path). Tested in ``tests/test_session_rules.py`` and, through the
state, in ``tests/test_conversation_state_manager.py`` and ``tests/test_extraction.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from agent.memory.longterm.memory_slots import slot_of
from agent.memory.rules.dialogue_acts import (
    KEPT_OPEN_INTENTS,
    bot_question,
    is_dismissal,
    question_stems,
    read_acts,
)
from agent.memory.rules.extraction import Clause, content_stems, normalize_text
from agent.memory.rules.todo_closers import EVERYTHING, extract_closers, list_left, match_loop
from agent.memory.rules.todo_openers import extract_openers
from agent.memory.schemas import (
    ChatType,
    ConversationTurn,
    Fact,
    OpenLoop,
    PendingClarification,
)

__all__ = [
    "CARRIED_LOOP_KINDS",
    "GROUP_CHAT_TYPES",
    "MAX_CLARIFICATIONS",
    "MAX_FACTS",
    "MAX_OPEN_LOOPS",
    "PERSONAL_CHAT_TYPES",
    "LoopUpdate",
    "loop_owner",
    "member",
    "merge_facts",
    "update_clarifications",
    "update_dialogue_loops",
    "update_open_loops",
]

#: The most facts a session state keeps (the newest win).
MAX_FACTS = 50
#: The most open loops a session state keeps (the newest win).
MAX_OPEN_LOOPS = 50
#: The most pending clarifications kept (the newest).
MAX_CLARIFICATIONS = 5
#: Chat types whose sessions track participants, proposals and decisions.
GROUP_CHAT_TYPES = frozenset({"group", "supergroup"})
#: Chats that are one person: what they say about themselves goes to long-term memory (the
#: one place it is kept, updated and erased), not to the session state's facts.
PERSONAL_CHAT_TYPES = frozenset({"private", "console"})
#: Open loops that belong to the chat, not the session: ``/new`` and ``/resume`` carry them
#: (unanswered questions and requests stay with the conversation that asked them).
CARRIED_LOOP_KINDS = frozenset({"todo", "commitment"})
# Loops a later answer or "never mind" can close (to-dos and promises need a closer).
_ASKED_KINDS = frozenset({"question", "request"})


def merge_facts(
    existing: Sequence[Fact], new: Iterable[Fact], *, limit: int = MAX_FACTS
) -> tuple[Fact, ...]:
    """Return ``existing`` updated with ``new``: a key restated replaces the old fact.

    Facts of one slot replace each other (:func:`~agent.memory.longterm.memory_slots.slot_of`:
    liking and disliking the same item too), in a group only those of the same member (their
    ``speaker``). The newest fact comes last; beyond ``limit`` the oldest are dropped, so the set
    stays bounded however long the chat runs.

    Args:
        existing: the facts before, oldest first.
        new: the facts just stated.
        limit: the most facts kept.
    """
    merged = {(fact.speaker, slot_of(fact.key)): fact for fact in existing}
    for fact in new:
        slot = (fact.speaker, slot_of(fact.key))
        merged.pop(slot, None)
        merged[slot] = fact
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
        removed: the closed loops the user dropped ("remove X from my list"), not did.
        narrowed: to-dos said as a list of which some things are done, each as (what is done,
            the loop as it now reads): ("milk", "buy eggs and bread") for "got the milk".
        deeds: everything it said was done, a loop's or not ("called the bank"): what a
            reminder set for it is matched with.
        which: the to-dos a bare "done" may mean, when several are open (none was closed).
    """

    loops: tuple[OpenLoop, ...]
    opened: tuple[OpenLoop, ...] = ()
    closed: tuple[OpenLoop, ...] = ()
    already_open: tuple[OpenLoop, ...] = ()
    unmatched: tuple[str, ...] = ()
    removed: tuple[OpenLoop, ...] = ()
    narrowed: tuple[tuple[str, OpenLoop], ...] = ()
    deeds: tuple[str, ...] = ()
    which: tuple[OpenLoop, ...] = ()


def update_open_loops(
    loops: Sequence[OpenLoop],
    text: str,
    *,
    seq: int,
    limit: int = MAX_OPEN_LOOPS,
    to_others: bool = False,
    owner: str | None = None,
) -> LoopUpdate:
    """Apply one utterance to the open loops: close what it says is done, open its to-dos.

    Closers are applied first ("I booked the hotel, now I need to book the flight"). A new loop
    gets the deterministic id ``loop-<seq>-<n>``. Beyond ``limit`` the oldest loops are dropped.

    Args:
        loops: the open loops before the utterance.
        text: the user's message.
        seq: the seq of its turn.
        limit: the most loops kept.
        to_others: said to others than the bot (a group message the bot only keeps).
        owner: who speaks, in a group: "scratch that, ..." puts right only their own to-do.
    """
    remaining = list(loops)
    closed: list[OpenLoop] = []
    removed: list[OpenLoop] = []
    unmatched: list[str] = []
    narrowed: list[tuple[str, OpenLoop]] = []
    closers = extract_closers(text)
    for closer in closers:
        whole = closer.text.casefold()
        # "I've finished everything", "I bought it all": every to-do
        if whole in _ALL_DONE or whole.partition(" ")[2] in _ALL_DONE:
            hits = [lp for lp in remaining if lp.kind in CARRIED_LOOP_KINDS]
        else:
            hit = match_loop(closer.text, remaining)
            hits = [] if hit is None else [hit]
            left = None if hit is None or closer.removal else list_left(hit.text, closer.text)
            if hit is not None and left is not None:  # "got the milk": eggs and bread are left
                now = hit.model_copy(update={"text": left[1]})
                remaining[remaining.index(hit)] = now
                narrowed.append((left[0], now))
                hits = []
        for hit in hits:
            remaining.remove(hit)
            closed.append(hit.model_copy(update={"closed_turn": seq}))
            if closer.removal:
                removed.append(closed[-1])
        said = closer.text.strip().isdecimal() or content_stems(closer.text)
        if not hits and closer.explicit and said and closer.text.casefold() not in EVERYTHING:
            # "done: the hotel" with no such loop deserves a reply; "I did it" does not.
            unmatched.append(closer.text)
    which: list[OpenLoop] = []
    if not closed and _BARE_DONE.match(normalize_text(text)):  # "done!": the one to-do open
        which = [lp for lp in remaining if lp.kind in CARRIED_LOOP_KINDS and lp.owner == owner]
        if len(which) == 1:
            remaining.remove(which[0])
            closed.append(which[0].model_copy(update={"closed_turn": seq}))
            which = []
    opened: list[OpenLoop] = []
    already: list[OpenLoop] = []
    for n, todo in enumerate(extract_openers(text, to_others=to_others), start=1):
        stems = content_stems(todo) or frozenset({todo.casefold()})
        same = next((lp for lp in remaining if content_stems(lp.text) == stems), None)
        if same is not None:
            already.append(same)
            continue
        opened.append(OpenLoop(loop_id=f"loop-{seq}-{n}", text=todo, opened_turn=seq))
    if not opened and not closers and (more := _MORE_ITEM.match(normalize_text(text))):
        # "also bread" after "add milk and eggs to my list": that to-do, one thing longer
        last = [lp for lp in remaining if lp.opened_turn == seq - 1 and lp.owner == owner]
        if len(last) == 1 and last[0].kind in CARRIED_LOOP_KINDS:
            remaining.remove(last[0])
            longer = _one_more(last[0].text, more.group("v") or more.group("w"))
            opened.append(OpenLoop(loop_id=f"loop-{seq}-1", text=longer, opened_turn=seq))
    instead = _put_right_todo(remaining, text, seq, owner) if opened else None
    if instead is not None:  # "scratch that, I need to call Karen": not "email Karen"
        remaining.remove(instead)
        closed.append(instead.model_copy(update={"closed_turn": seq}))
        removed.append(closed[-1])
    kept = (*remaining, *opened)
    return LoopUpdate(
        loops=kept[-limit:] if limit > 0 else (),
        opened=tuple(opened),
        closed=tuple(closed),
        already_open=tuple(already),
        unmatched=tuple(unmatched),
        removed=tuple(removed),
        narrowed=tuple(narrowed),
        deeds=tuple(closer.text for closer in closers if not closer.removal),
        which=tuple(which),
    )


# Every to-do, as a deed said done names it: "I've finished everything", "I bought it all".
_ALL_DONE = EVERYTHING | {"it all"}
# "also bread", "and some cheese", "oh and bin bags", "bread too": one more thing for the to-do
# just added (a deed said so is a to-do of its own: todo_openers).
_THING = (
    r"(?!(?:see|what|that|this|then|so|if|when|but|tell|ask|let|not|no|yes|yeah|yep|ok|okay|sure"
    r"|great|good|nice|cool|thanks|thank|lol|haha|same)\b)"
    r"(?!.*\b(?:i|i'm|me|my|we|us|our|you|your|he|him|his|she|her|they|them|their|it)\b)"
    r"[^\W\d_][\w'-]*(?:\s+[\w'-]+){0,2}?"
)
_MORE_ITEM = re.compile(
    rf"^(?:oh[\s,]+)?(?:and|also|plus|and also)\s+(?P<v>{_THING})(?:\s+too)?[.!]*$"
    rf"|^(?P<w>{_THING})\s+too[.!]*$",
    re.IGNORECASE,
)


def _one_more(listed: str, thing: str) -> str:
    """``listed`` ("milk and eggs") with ``thing`` at its end: "milk, eggs and bread"."""
    head, _, last = listed.rpartition(" and ")
    return f"{head}, {last} and {thing}" if head else f"{listed} and {thing}"


# "done", "that's done", "I did it": of the one to-do open, if only one is.
_BARE_DONE = re.compile(
    r"^(?:(?:ok(?:ay)?|right|yes|yep)[,!. ]+)?(?:done|finished|completed|sorted|did it|i did it"
    r"|i've done it|that's done|it's done|all sorted|done and done|job done)[.!👍✅ ]*$",
    re.IGNORECASE,
)
# A to-do said again in other words, putting right the one the message before added.
_INSTEAD = re.compile(
    r"^(?:scratch that|no wait|wait no|sorry|oops|actually|i mean|i meant|correction|my bad)\b",
    re.IGNORECASE,
)


def _put_right_todo(
    loops: Sequence[OpenLoop], text: str, seq: int, owner: str | None
) -> OpenLoop | None:
    """The to-do the message before opened that ``text`` puts right ("scratch that, I need to
    call Karen" after "I need to email Karen"), of the same ``owner``, or ``None``."""
    if _INSTEAD.match(normalize_text(text)) is None:
        return None
    last = [
        lp for lp in loops
        if lp.opened_turn == seq - 1 and lp.kind in CARRIED_LOOP_KINDS and lp.owner == owner
    ]  # fmt: skip
    return last[-1] if len(last) == 1 else None


def _handled(turn: ConversationTurn) -> bool:
    """Whether the bot answered the message (not silent, not "I've kept your question open")."""
    return bool(turn.assistant_text) and turn.intent not in KEPT_OPEN_INTENTS


@lru_cache(maxsize=4096)  # pure; the open loops' texts are compared again every turn
def _loop_stems(text: str) -> frozenset[str]:
    return content_stems(text) or frozenset({text.casefold()})


def _covers(said: frozenset[str], asked: frozenset[str]) -> bool:
    """Whether words ``said`` answer a question about ``asked``: most of its subject words."""
    common = len(said & asked)
    return common >= 2 and 2 * common >= len(asked)


def update_dialogue_loops(
    loops: Sequence[OpenLoop],
    turn: ConversationTurn,
    clauses: Sequence[Clause],
    *,
    owner: str | None = None,
    first_n: int = 1,
) -> tuple[tuple[OpenLoop, ...], tuple[OpenLoop, ...]]:
    """Close the questions and requests a turn answers; open its commitments, requests, questions.

    Closing comes first, and only loops opened before the turn close: a question or request is
    answered when the message asks it again and the bot handles it, a question also when a
    statement of the message (or the bot's handled reply) covers most of its subject words;
    "never mind" drops the newest question or request (of ``owner``, in a group). Then the
    message opens a ``commitment`` for each promise, a ``request`` for each ask the bot did not
    handle, and a ``question`` for each question it kept open (intent ``kept_open``); one with
    the words of a loop already open is not opened twice. New ids are ``loop-<seq>-<n>`` from
    ``n = first_n``.

    Args:
        loops: the open loops after the to-do rules (:func:`update_open_loops`).
        turn: the turn.
        clauses: ``turn.user_text`` cut into clauses.
        owner: who speaks, recorded on the loops opened (group chats).
        first_n: the number of the first new loop id (after the to-dos the turn opened).

    Returns:
        The open loops (oldest first) and the loops closed (``closed_turn`` set).
    """
    seq = turn.seq
    handled = _handled(turn)
    acts = read_acts(clauses)
    remaining = list(loops)
    closed: list[OpenLoop] = []
    asked = [lp for lp in remaining if lp.kind in _ASKED_KINDS]
    if asked and clauses:
        said = frozenset().union(*(question_stems(c.text) for c in clauses if not c.question))
        if handled and any(lp.kind == "question" for lp in asked):
            said |= question_stems(turn.assistant_text or "")
        again = [question_stems(text) for text in (*acts.questions, *acts.requests)]
        for loop in asked:
            wanted = question_stems(loop.text)
            repeated = handled and any(_covers(a, wanted) or a == wanted for a in again)
            if repeated or (loop.kind == "question" and _covers(said, wanted)):
                remaining.remove(loop)
                closed.append(loop.model_copy(update={"closed_turn": seq}))
    if asked and is_dismissal(turn.user_text):  # "scratch that" leaves no clause to read
        mine = [lp for lp in remaining if lp.kind in _ASKED_KINDS and lp.owner == owner]
        if mine:
            remaining.remove(mine[-1])
            closed.append(mine[-1].model_copy(update={"closed_turn": seq}))
    new: list[tuple[str, str]] = [("commitment", text) for text in acts.commitments]
    if not handled:
        new += [("request", text) for text in acts.requests]
    if bool(turn.assistant_text) and not handled:
        new += [("question", text) for text in acts.questions]
    known = {_loop_stems(lp.text) for lp in remaining} if new else set()
    n = first_n
    for kind, text in new:
        stems = _loop_stems(text)
        if stems in known:
            continue
        known.add(stems)
        remaining.append(
            OpenLoop(loop_id=f"loop-{seq}-{n}", text=text, kind=kind, opened_turn=seq, owner=owner)
        )
        n += 1
    return tuple(remaining), tuple(closed)


def update_clarifications(
    pending: Sequence[PendingClarification], turn: ConversationTurn, *, owner: str | None = None
) -> tuple[tuple[PendingClarification, ...], PendingClarification | None]:
    """Drop the clarifications the turn's message answers; add the one its reply asks.

    Any message of the person asked (``owner``; anyone for ``asked_of=None``) answers what was
    asked of them; a turn without a user message (a reminder firing) answers nothing. The reply
    asks when :func:`~agent.memory.rules.dialogue_acts.bot_question` finds a question in it.

    Returns:
        The pending clarifications (at most :data:`MAX_CLARIFICATIONS`, newest last) and the
        one the reply asked, if any.
    """
    kept = list(pending)
    if turn.user_text.strip():
        kept = [c for c in kept if c.asked_of is not None and c.asked_of != owner]
    question = bot_question(turn.assistant_text, turn.intent, turn.user_text)
    asked = None
    if question is not None:
        asked = PendingClarification(question=question, asked_turn=turn.seq, asked_of=owner)
        kept.append(asked)
    return tuple(kept[-MAX_CLARIFICATIONS:]), asked


def member(speaker: str | None, user_id: int | None) -> str | None:
    """Return how a group member is named: their name, else ``user <id>`` (``None``: nobody)."""
    if speaker:
        return speaker
    return None if user_id is None else f"user {user_id}"


def loop_owner(turn: ConversationTurn, chat_type: ChatType) -> str | None:
    """Return who owns the loops and facts ``turn`` opens: its speaker in a group, nobody in
    private."""
    return member(turn.speaker, turn.user_id) if chat_type in GROUP_CHAT_TYPES else None
