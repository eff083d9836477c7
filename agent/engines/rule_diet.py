"""What the rule-based concierge answers of food and drink: "can I eat a burger?", "do I
eat meat?", from the user's allergies, what they avoid and their diet, by the food's words or
its group (:mod:`agent.memory.rules.food_groups`: a burger is meat, a latte has dairy).

Tested by the "allergies and constraints" and "what a diet or an allergy rules out" families
of ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.engines.rule_facts import answer_line, own_facts
from agent.engines.rule_reading import Reading
from agent.memory.longterm.memory_slots import USER, describe_fact, parse_key, role_and_name
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.food_groups import (
    food_groups,
    groups_left_out,
    groups_named,
    how_it_has,
    outside_groups,
)
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef

__all__ = ["answer_can_have"]

_F = re.IGNORECASE

# "can I eat peanuts?", "should I have the cheese?", with the thing asked about.
_ASK_CAN_HAVE = re.compile(
    r"^(?:can|could|may|should) i (?P<verb>eat|have|drink|take|try|order|get|grab)"
    r" (?P<thing>.{1,60}?)\??$",
    _F,
)
# "can Dev eat cake?", "can my son have peanuts?": asked of someone in the user's life.
_ASK_THEY_CAN = re.compile(
    r"^(?:can|could|may|should) (?:my |our )?(?P<who>(?!i\b|you\b|we\b)[^\W\d_]+)"
    r" (?P<verb>eat|have|drink|try) (?P<thing>.{1,60}?)\??$",
    _F,
)
# "who is allergic to peanuts?", "who's allergic to what?", "is anyone allergic to eggs?"
_ASK_WHO_ALLERGIC = re.compile(
    r"^(?:who(?:'s|\s+is|\s+are)|is\s+any\s?one|are\s+any\s+of\s+(?:us|them))\s+allergic"
    r"(?:\s+to\s+(?P<thing>.{1,60}?))?\??$",
    _F,
)
# Verbs of a question that is of food only when a fact rules the thing out ("can I get the
# wings?", not "can I get a taxi?").
_MAYBE_FOOD = frozenset({"order", "get", "grab"})
# "is sourdough ok for me?", "are peanut cookies safe for me to eat?", "is it ok if I eat
# satay?": asked as "can I have ...".
_ASK_OK = re.compile(
    r"^(?:is it (?:ok|okay|safe|fine|alright) (?:if|for) (?:i|me to) (?P<verb>eat|have|drink|try)"
    r" (?P<thing>.{1,60}?)|(?:is|are) (?P<thing2>.{1,60}?) (?:ok|okay|safe|fine|alright)"
    r" (?:for me|to (?:eat|have|drink))(?: to (?:eat|have|drink|try))?)\??$",
    _F,
)
# "is ice cream ok?": of food only when a fact rules the thing out (not "is the weather ok?").
_ASK_OK_BARE = re.compile(
    r"^(?:is|are) (?P<thing>.{1,60}?) (?:ok|okay|safe|fine|alright)(?: then)?\??$", _F
)
# "do I eat meat?", "do I drink milk?".
_ASK_DO_EAT = re.compile(r"^(?:do|should) i (?P<verb>eat|drink) (?P<thing>.{1,60}?)\??$", _F)
# What "can I have ..." asks for that is no food or drink ("your help", "a minute").
_NOT_FOOD = re.compile(
    r"^(?:your|my)\b|\b(?:help|question|word|minute|moment|second|reminder|break|look|chat"
    r"|call|go|try|day off|refund|discount|receipt|list)\b",
    _F,
)
#: The facts that say what a user should not eat or drink.
_CONSTRAINTS = ("allergy", "avoid", "diet")


def answer_can_have(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "can I eat peanuts?" or "do I eat meat?" from the user's allergies, what they
    avoid and their diet: "Better not." ("No." to "do I ...") with the fact that rules it out,
    by its words or by the food's group (:mod:`agent.memory.rules.food_groups`: a burger is
    meat); to "can I ...", what they told of their diet when nothing rules it out. ``None``
    when they told of none, or the thing is no food ("can I have your help?": another rule
    may answer)."""
    match = (
        _ASK_CAN_HAVE.match(reading.text)
        or _ASK_DO_EAT.match(reading.text)
        or _ASK_OK.match(reading.text)
        or _ASK_OK_BARE.match(reading.text)
    )
    if match is None:
        return _answer_they_can(reading) or _answer_who_allergic(reading)
    groups = match.groupdict()
    thing = groups["thing"] or groups.get("thing2") or ""
    # A diet no longer kept rules nothing out, and is said ("you're no longer vegetarian").
    told = own_facts(reading, *_CONSTRAINTS, "ex_diet")
    against = [
        line for f in told if f.key != "ex_diet" and (line := _rules_out(f, thing)) is not None
    ]
    asked_do = match.re is _ASK_DO_EAT
    if against:
        return ("No. " if asked_do else "Better not. ") + " ".join(against)
    allowed = [answer_line(f) for f in told if _allows(f, thing)]
    if allowed:  # "can I eat salmon?" of someone "vegetarian except fish"
        return "Yes. " + " ".join(allowed)
    verb = (groups.get("verb") or "eat").casefold()
    eats = verb in {"eat", "drink"}
    food = eats or not _NOT_FOOD.search(thing)
    # "is the weather ok?" asks nothing of food, nor "can I have your help?" or "a taxi".
    if match.re is _ASK_OK_BARE or asked_do or verb in _MAYBE_FOOD or not told or not food:
        return None
    return "Nothing you told me rules it out (" + "; ".join(describe_fact(f) for f in told) + ")."


def _answer_they_can(reading: Reading) -> str | None:
    """Answer "can Dev eat cake?" from what the user told of Dev's allergies, what Dev avoids
    and Dev's diet; ``None`` when nothing was told of them."""
    match = _ASK_THEY_CAN.match(reading.text)
    if match is None:
        return None
    who, thing = match.group("who").casefold(), match.group("thing")
    told = [
        f
        for f in reading.facts
        if (parts := parse_key(f.key)).subject != USER
        and parts.name in _CONSTRAINTS
        and who in {part.casefold() for part in (parts.subject, *role_and_name(parts.subject))}
    ]
    against = [line for f in told if (line := _rules_out(f, thing)) is not None]
    if against:
        return "Better not. " + " ".join(against)
    if not told:
        return None
    return "Nothing you told me rules it out (" + "; ".join(describe_fact(f) for f in told) + ")."


def _answer_who_allergic(reading: Reading) -> str | None:
    """Answer "who is allergic to peanuts?" with the allergies told of (the user's and those
    of the people in their life) that name it, or all of them for "who's allergic to what?"."""
    match = _ASK_WHO_ALLERGIC.match(reading.text)
    if match is None:
        return None
    thing = match.group("thing") or ""
    wanted = content_stems(thing) - content_stems("what anything something")
    allergies = [f for f in reading.facts if parse_key(f.key).name == "allergy"]
    found = [f for f in allergies if not wanted or wanted & content_stems(f.value)]
    if not found:
        return f"You haven't told me of anyone allergic{' to ' + thing if wanted else ''}."
    return " ".join(answer_line(f) for f in found)


def _allows(fact: Fact, thing: str) -> bool:
    """Whether ``fact`` is a diet that allows ``thing`` by name ("vegetarian except fish":
    salmon, by its group; "vegan except honey": honey, by its word)."""
    _, _, allowed = fact.value.casefold().partition(" except ")
    if parse_key(fact.key).name != "diet" or not allowed:
        return False
    groups = food_groups(allowed) | groups_named(allowed)
    return bool(food_groups(thing) & groups or content_stems(thing) & content_stems(allowed))


def _rules_out(fact: Fact, thing: str) -> str | None:
    """Say how ``fact`` (an allergy, something avoided, a diet) rules ``thing`` out, or
    ``None``. A fact that names a food group rules out what is of it (not "alcohol-free
    beer"); one that names none, what shares a word with it."""
    attribute = parse_key(fact.key).name
    left_out = groups_left_out(attribute, fact.value)
    # "allergic to shellfish and kiwi": a kiwi smoothie by its word, prawns by their group.
    words = outside_groups(fact.value) if left_out else fact.value
    shared = attribute != "diet" and content_stems(thing) & content_stems(words)
    hit = sorted(food_groups(thing) & left_out)
    if not hit:
        return answer_line(fact) if shared else None
    why = how_it_has(thing, hit[0])
    line = answer_line(fact)
    return f"{line.removesuffix('.')} ({why})." if why else line
