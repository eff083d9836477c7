"""What "it" is in a reminder: the thing the user just spoke of.

People ask for a reminder in the message after the thing: "my car needs a service by Friday",
then "remind me about it on Thursday morning"; "I need to renew my passport", then "remind me
to do that tomorrow at 9". :func:`spoken_of` gives such a reminder the words of what the
previous message said: the to-do it opened, the dated thing it told, or the statement itself
("... that your car needs a service by Friday"); "remind me to take them" after "I take my
tablets every morning" takes the tablets. A question or a request before it names nothing to
remind of: the reminder keeps its pronoun.

Tested by the "a reminder of what was just said" family of ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from agent.memory.longterm.memory_slots import USER, parse_key
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.rules.reminder_requests import ReminderRequest
from agent.memory.schemas import Fact, OpenLoop

__all__ = ["SPOKEN_OF", "spoken_of", "thing_of"]

#: What a reminder says of the thing just spoken of: "remind me about it", "... before that".
SPOKEN_OF = frozenset(
    {"it", "that", "this", "then", "that one", "this one", "the event", "do it", "do that",
     "do this"}
)  # fmt: skip
#: The kinds of facts that name a thing with a day.
DATED = frozenset({"event", "plan", "birthday"})
# A message that asks or bids rather than tells: nothing in it to be reminded that.
_NOT_TOLD = re.compile(
    r"\?\s*$|^(?:what|when|where|who|why|how|which|can|could|would|will|do|does|did|is|are"
    r"|remind|cancel|snooze|forget|delete|remove|please|/)\b",
    re.IGNORECASE,
)
# "take them", "call her": a deed done to what the message before named.
_DONE_TO = re.compile(r"(?P<verb>[a-z]+)\s+(?:them|it|her|him)", re.IGNORECASE)
# What a deed is done to, in the message before: "my blood pressure tablets", "the plumber".
_THING = (
    r"(?:my|the|our|his|her|their)\s+[\w' -]{1,40}?"
    r"(?=\s+(?:every|at|on|in|by|tomorrow|today|tonight|before|after|this|next)\b|[,.!?]|$)"
)
# The words that open a sentence with a capital only there ("I" and names keep theirs).
_LOWERED = frozenset({"my", "our", "the", "we", "it", "there", "a", "an", "his", "her", "their"})


def thing_of(fact: Fact) -> str:
    """What a dated fact is about, as the user would say it: "my dentist appointment", "my
    sister Mia's birthday", "a trip to Rome in August"."""
    parts = parse_key(fact.key)
    if parts.name == "birthday":
        return "my birthday" if parts.subject == USER else f"my {parts.subject}'s birthday"
    if parts.name == "event":
        return f"my {fact.value.split(' is ')[0]}"
    return fact.value


def spoken_of(
    request: ReminderRequest,
    previous: str | None,
    seq: int,
    loops: Sequence[OpenLoop],
) -> ReminderRequest:
    """Return ``request`` about what the message before it said, when its label is only a
    pronoun ("remind me about it at 5pm"); ``request`` as it is otherwise.

    Args:
        request: the reminder asked for.
        previous: the user's message before it (``None``: none in this session).
        seq: the seq of the turn asking.
        loops: the open loops (a to-do the previous turn opened is what "it" is).
    """
    if previous is None:
        return request
    done_to = _DONE_TO.fullmatch(request.label)
    if done_to is not None:  # "remind me to take them": what the message before took
        verb = done_to.group("verb")
        thing = re.search(rf"\b{re.escape(verb)}\s+(?P<thing>{_THING})", previous, re.IGNORECASE)
        if thing is not None:
            return replace(request, label=f"{verb} {thing.group('thing')}")
    if request.label.casefold() not in SPOKEN_OF:
        return request
    before = seq - 1
    opened = [lp for lp in loops if lp.opened_turn == before and lp.closed_turn is None]
    if opened:
        return replace(request, label=opened[-1].text, link="to")
    told = [f for f in extract_facts(previous, turn=before) if parse_key(f.key).name in DATED]
    if told:
        return replace(request, label=thing_of(told[-1]), link="about")
    said = previous.strip().rstrip(".!")
    if not said or _NOT_TOLD.search(said) or len(said) > 120:
        return request
    first, _, rest = said.partition(" ")
    if first.casefold() in _LOWERED:  # "My car needs ...": "that your car needs ..."
        said = f"{first.casefold()} {rest}"
    return replace(request, label=said, link="that")
