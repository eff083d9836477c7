"""Answering a question about a kind of family: "do I have any siblings?", "who are my
parents?", "do I have children?". The user's ``relative`` facts whose role is of that kind
(a brother and a sister are siblings; a son, a daughter or a kid are children), said by role
("Your brothers are called Tom and Jack."), that the user has none ("I don't have any kids"),
or that none was told.

And how many of a kind someone in the user's life has ("how many kids does Emma have?").

Covered by the "pets and relatives" family of ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.engines.rule_facts import none_said
from agent.engines.rule_reading import Reading, sentence
from agent.memory.longterm.memory_slots import (
    USER,
    describe_fact,
    parse_key,
    plural_of,
    role_and_name,
)
from agent.memory.rules.fact_words import COUNTED
from agent.memory.schemas import ConversationContextPacket, JobRef

__all__ = ["answer_family", "answer_their_count"]

# Each kind of family, by the words a question names it with, and the roles it holds.
_SIBLINGS = "brother sister twin sibling stepbrother stepsister".split()
_CHILDREN = "son daughter kid child twin stepson stepdaughter".split()
_GRANDCHILDREN = "grandson granddaughter grandchild grandkid".split()
_KINDS = {
    "siblings": _SIBLINGS,
    "brothers and sisters": _SIBLINGS,
    "parents": "mom mum mother dad father stepmom stepmum stepdad".split(),
    "children": _CHILDREN,
    "kids": _CHILDREN,
    "grandparents": "grandma grandpa grandmother grandfather granny grandad nan nana".split(),
    "grandchildren": _GRANDCHILDREN,
    "grandkids": _GRANDCHILDREN,
}
_ASK_FAMILY = re.compile(
    r"^(?:(?P<do>do|have)\s+i\s+(?:have|got)\s+(?:any\s+)?|who\s+are\s+my\s+|what\s+are\s+my\s+)"
    rf"(?P<kind>{'|'.join(_KINDS)})(?:'?\s+names?|\s+called)?\s*\??$",
    re.IGNORECASE,
)
# The words of one kind, as a count or its question may say it ("I don't have any kids": no
# children either; "how many children does Emma have?" of "she has two kids").
_SAME = {
    "kids": ("kids", "children"), "children": ("kids", "children"),
    "siblings": ("siblings",), "brothers and sisters": ("siblings",),
    "grandkids": ("grandkids", "grandchildren"), "grandchildren": ("grandkids", "grandchildren"),
}  # fmt: skip


def answer_family(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "do I have any siblings?", "who are my parents?"."""
    asked = _ASK_FAMILY.match(reading.text)
    if asked is None:
        return None
    kind = " ".join(asked.group("kind").casefold().split())
    roles = _KINDS[kind]
    named: dict[str, list[str]] = {}
    for fact in reading.facts:
        key = parse_key(fact.key)
        role, name = role_and_name(fact.value)
        if key.subject == USER and key.name == "relative" and role in roles and name:
            named.setdefault(role, []).append(name)
    if not named:
        counted = [  # "I have a younger sister": one, unnamed
            f
            for f in reading.facts
            if parse_key(f.key).subject == USER and parse_key(f.key).name == "count"
            and parse_key(f.key).item in {plural_of(role) for role in roles} and f.value != "no"
        ]
        if counted:
            said = " ".join(sentence(describe_fact(f)) for f in counted)
            return f"Yes: {said[0].lower()}{said[1:]}" if asked.group("do") else said
        none = none_said(reading, _SAME.get(kind, (kind,)))
        if none is not None:  # "I don't have any kids"
            return (
                f"No: {describe_fact(none)}."
                if asked.group("do")
                else sentence(describe_fact(none))
            )
        return f"You haven't told me about any {kind}."
    # In the order of the kind's roles, names alphabetically: the same answer every time.
    lines = [_called(role, sorted(named[role])) for role in roles if role in named]
    if asked.group("do"):
        return "Yes: " + "; ".join(line[0].lower() + line[1:] for line in lines) + "."
    return " ".join(f"{line}." for line in lines)


def _called(role: str, names: list[str]) -> str:
    if len(names) == 1:
        return f"Your {role} is called {names[0]}"
    plural = plural_of(role)
    return f"Your {plural} are called {', '.join(names[:-1])} and {names[-1]}"


# "how many kids does Emma have?", "how many dogs has my brother got?"
_ASK_THEIR_COUNT = re.compile(
    rf"^how many (?P<k>{COUNTED}) (?:does|has) (?:my )?(?P<who>[\w' ]{{1,30}}?)"
    r" (?:have|got)\s*\??$",
    re.IGNORECASE,
)


def answer_their_count(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "how many kids does Emma have?" with what the user told of Emma's ("she has two
    kids"); ``None`` when nothing was (the quote from memory may have it)."""
    asked = _ASK_THEIR_COUNT.match(reading.text)
    if asked is None:
        return None
    kind = asked.group("k").casefold()
    kinds = set(_SAME.get(kind, (kind,)))
    who = asked.group("who").casefold()
    for fact in reversed(reading.facts):
        key = parse_key(fact.key)
        if key.subject == USER or key.name != "count" or key.item not in kinds:
            continue
        if who in {word.casefold() for word in role_and_name(key.subject) if word}:
            return sentence(describe_fact(fact))
    return None
