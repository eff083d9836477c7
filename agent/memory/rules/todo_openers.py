"""Reading the to-dos an utterance opens: "remind me to book the hotel", "I need to call the
bank", "todo: buy milk", "and also pay the rent", "and buy milk".

A pure function of the text, as the rest of :mod:`agent.memory.rules.extraction` (its clauses,
normalisation and values); what is done is read there (``extract_closers``), what is a duty at
all in :mod:`agent.memory.rules.duties`. Tested by ``tests/test_extraction.py``.
"""

from __future__ import annotations

import re

from agent.memory.rules.duties import is_duty
from agent.memory.rules.extraction import (
    NOT_REMIND,
    Clause,
    clean_value,
    match_reminder,
    normalize_text,
    split_clauses,
)
from agent.memory.rules.fact_words import PEOPLE

__all__ = ["extract_openers", "is_deed"]

_F = re.IGNORECASE

_REMIND_TODO = re.compile(
    r"\bremind me\s+(?:later\s+|sometime\s+|at\s+some\s+point\s+|soon\s+)?(?:to|about)\s+"
    r"(?P<v>.+)",
    _F,
)
_NO_FORGET = re.compile(
    r"\b(?:don't|do not|dont)\s+(?P<me>let me\s+)?forget\s+(?:to\s+|about\s+)?(?P<v>.+)", _F
)
_OPENERS = (
    re.compile(
        r"^(?:(?:i|we)(?:\s+(?:really|still|also|just|definitely))?\s+)?(?:need to|have to"
        r"|(?P<must>must)|'ve got to|have got to|gotta|got to)\s+(?P<v>.+)",
        _F,
    ),
    re.compile(r"^(?:todo|to-do|to do)\s*[:-]\s*(?P<v>.+)", _F),
)
# "I need new running shoes", "we need a new kettle", "I need a haircut": a thing to get,
# new or from an errand ("I need a break", "I need a new start" are none).
_NEED_THING = re.compile(
    r"^(?:i|we)(?:\s+(?:really|still|also|just|definitely|badly|desperately|urgently))?\s+need"
    r"\s+(?P<v>(?:(?:a|an|some)\s+)?(?:new|more|spare|fresh)\s+(?!(?:start|beginning|challenge"
    r"|perspective|direction|chapter|life|outlook|approach|ideas?|friends?|hobby|adventure"
    r"|experiences?|routine|energy|motivation|inspiration|time|sleep|rest|space|patience|practice"
    r"|exercise|support|help|fun|balance|focus|confidence|air|money|hours|me\s+time)\b)"
    r"[^\W\d_][\w' -]{0,50}"
    r"|(?:a|an)\s+(?:(?:dentist|doctor|doctor's|dentist's|gp|vet|eye|hair)\s+)?(?:haircut|trim"
    r"|appointment|check-?up|eye\s+test|mot|passport|visa|babysitter|plumber|electrician"
    r"|mechanic|present|gift|birthday\s+card|card|ticket|prescription|refill|charger"
    r"|battery|lawyer|accountant|dentist|tutor|cleaner)\b[\w' -]{0,40})[.!]*$",
    _F,
)
# "we're out of coffee", "I've run out of shampoo", "we're low on milk": a thing to buy
# (not "I'm out of ideas", "we're out of time").
_RUN_OUT = re.compile(
    r"^(?:i|we)(?:'re|'m|\s+are|\s+am|'ve|\s+have)?(?:\s+(?:just|nearly|almost|completely|totally))?"
    r"\s+(?:(?:run|ran|running)\s+out\s+of|out\s+of|(?:running\s+)?low\s+on)\s+"
    r"(?P<v>(?!(?:ideas|time|breath|patience|luck|shape|work|the\s+office|town|options|money"
    r"|energy|steam|touch|practice|control|order|sorts|my\s+depth|my\s+mind|here|there|sync"
    r"|space|battery|data)\b)[^\W\d_][\w' -]{0,40}?)[.!]*$",
    _F,
)
# "add coffee to the list", "can you put bin bags on our shopping list?" (asked, or not).
_ADD_TO_LIST = re.compile(
    r"^(?:please\s+|(?:can|could) you\s+)?(?:add|put)\s+(?P<v>(?!(?:it|that|this|them)\s).+?)"
    r"\s+(?:to|on(?:to)?)\s+(?:my|the|our)\s+(?:[\w-]+\s+)?list(?:\s+please)?[\s.!?]*$",
    _F,
)
# Where a list of to-dos said at once is cut: before each part that starts with a verb
# ("buy milk, call the bank and pick up the kids"; not "buy milk, eggs and bread").
_TODO_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|then\s+)?|\s+(?:and|then)\s+(?:then\s+)?", _F)
# Verbs of a to-do that also open talk ("and see what happens", "and take it easy") or change
# a reminder ("and cancel the oven one").
_NOT_ERRANDS = frozenset("go see do get take make find read move plan change cut cancel".split())
# The verbs a to-do opens with ("call the bank", "pick up the kids").
_TODO_VERBS = frozenset(
    """buy call pick send email book pay clean fix write finish check get take make bring return
    renew order schedule cancel file submit prepare pack wash water feed walk visit meet reply
    text ring phone print sign read review update find sort tidy cook bake do go see ask tell
    post mail drop collect fill charge install move plan organize organise practice practise
    study clear empty hoover vacuum mow repair replace refill transfer apply register confirm
    arrange wrap grab iron change cut paint pickup shop""".split()
)
# "my boss wants me to send the slides", "Sara asked me to book the table": theirs to ask, the
# user's to do.
_ASKED_OF_ME = re.compile(
    rf"^(?P<who>my\s+(?:{PEOPLE})|(?-i:[A-Z][a-z]+))\s+(?:wants|needs|asked|has\s+asked"
    r"|is\s+asking|expects|told)\s+me\s+to\s+(?P<v>(?:" + "|".join(_TODO_VERBS) + r")\b.+)",
    _F,
)
# Who asked, in what they asked: "call her", "send him the file".
_ASKER = re.compile(r"\b(?:her|him|them)\b", _F)
# "my boss wants the slides by Wednesday": a thing owed someone by when.
_OWED = re.compile(
    rf"^(?P<who>my\s+(?:{PEOPLE})|(?-i:[A-Z][a-z]+))\s+(?:wants|needs|is\s+expecting"
    r"|expects|asked\s+for|has\s+asked\s+for)\s+"
    r"(?P<thing>(?:the|my|a|an|our|some)\s+[\w' -]{1,40}?)\s+(?P<by>by\s+\S.{0,40})$",
    _F,
)
# "and also book swimming lessons": one more to-do, said after one ("also call me Sam" is none).
_ALSO = re.compile(r"^(?:(?:oh|and|plus)[\s,]+)*also\b", _F)
# "I should pay the electricity bill by the 30th": a to-do when a to-do's verb follows ("I
# should probably sleep" is none).
_SHOULD = re.compile(
    rf"^(?:i|we)(?:\s+(?:really|still|also|definitely))?\s+should\s+(?P<v>(?:{'|'.join(_TODO_VERBS)})\b.+)",
    _F,
)
_VERB_FIRST = re.compile(rf"^(?!call me\b)(?P<v>(?:{'|'.join(_TODO_VERBS)})\b.+)", _F)
# "and buy milk", "plus call the bank": one more errand after "and" alone, by an errand's verb
# (not "and see what happens", "and call it a day").
_AND_MORE = re.compile(r"^(?:oh[\s,]+)?(?:and|plus)\b", _F)
_ERRAND_FIRST = re.compile(
    rf"^(?!call (?:me|it)\b|.*\b(?:reminders?|alarm|timer)\b)"
    rf"(?P<v>(?:{'|'.join(_TODO_VERBS - _NOT_ERRANDS)})\b.+)",
    _F,
)
# "buy milk too": what the to-do ends with that says it is one more.
_TOO = re.compile(r"\s+(?:too|as well)$", _F)
_LEAVING = frozenset({"go", "run", "leave", "go now", "run now", "dash", "head off", "sleep"})


def is_deed(label: str) -> bool:
    """Whether ``label`` opens with a to-do's verb ("call grandma", not "dentist"): what a
    reminder of it is "to" do rather than "about"."""
    first = label.split(maxsplit=1)[0].casefold() if label.strip() else ""
    return first in _TODO_VERBS


def _reminder_clause(clause: Clause) -> bool:
    return match_reminder(clause.text) is not None


def extract_openers(text: str, *, to_others: bool = False) -> tuple[str, ...]:
    """Return the to-dos ``text`` opens, e.g. ``book the hotel`` for "remind me to book the hotel".

    Openers: "remind me to X", "don't let me forget to X", "I need to X", "I have to X", "I
    should X" (X opening with a to-do's verb), "I need new X" (get new X), "we're out of X"
    (buy X), "todo: X", "add X to my list" (asked or not),
    "and also X" (X opening with a to-do's verb), "my boss wants me to X", "my boss wants X by
    Friday". A reminder with a time ("remind me in 10
    minutes to X") opens no to-do: it becomes a job. "I need to X?" (a question) opens nothing;
    "can you remind me to X?" does. Nor does a guess ("must be nice"),
    a way of speaking ("I have to say") or a resolution ("I need to stay positive",
    :data:`RESOLUTION`): none is something to do and tick off. Said ``to_others`` (members of
    a group, not the bot), "don't forget to X" is advice to them, not the speaker's to-do.
    """
    found: list[str] = []
    clauses = split_clauses(text)
    said = normalize_text(text)
    also = bool(clauses) and _ALSO.match(said) is not None
    and_more = bool(clauses) and not also and _AND_MORE.match(said) is not None
    refused = NOT_REMIND.search(said) is not None  # "don't remind me about the bins today"
    for clause in clauses:
        if _reminder_clause(clause) or (refused and "remind" in clause.text.casefold()):
            continue
        match = (
            _REMIND_TODO.search(clause.text)
            or _no_forget(clause.text, to_others)
            or _ADD_TO_LIST.match(clause.text)
        )
        if match is None and not clause.question:
            owed = _OWED.match(clause.text)
            if owed is not None:  # "the slides for my boss by Wednesday"
                who = re.sub(r"^my\b", "my", owed.group("who"), flags=_F)  # "My boss": my boss
                _add(found, clean_value(f"{owed.group('thing')} for {who} {owed.group('by')}"))
                continue
            openers = (*_OPENERS, _SHOULD, _ASKED_OF_ME, _NEED_THING, _RUN_OUT)
            match = next((m for p in openers if (m := p.match(clause.text))), None)
            if match is None and also and clause is clauses[0]:
                match = _VERB_FIRST.match(clause.text)
            if match is None and and_more and clause is clauses[0]:
                match = _ERRAND_FIRST.match(_AND_MORE.sub("", clause.text).lstrip(" ,"))
        must = match is not None and bool(match.groupdict().get("must"))
        if match is None or not is_duty(match.group("v"), after_must=must):
            continue
        said_to_do = clean_value(match.group("v"))
        if match.re is _NEED_THING:  # "I need new shoes": get new shoes
            said_to_do = f"get {said_to_do}"
        elif match.re is _RUN_OUT:  # "we're out of coffee": buy coffee
            said_to_do = f"buy {said_to_do}"
        if match.re is _ASKED_OF_ME:  # "my mum wants me to call her": call my mum
            said_to_do = _ASKER.sub(match.group("who"), said_to_do, count=1)
        for value in _several_todos(_TOO.sub("", said_to_do)):
            _add(found, value)
    return tuple(found)


def _add(found: list[str], value: str) -> None:
    """Add ``value`` to the to-dos ``found``, once; "gotta go" is a goodbye, not a to-do."""
    said = value.casefold()
    if value and said not in _LEAVING and said not in {v.casefold() for v in found}:
        found.append(value)


def _no_forget(text: str, to_others: bool) -> re.Match[str] | None:
    match = _NO_FORGET.search(text)  # "don't forget to X" said to others is theirs
    return None if match is None or (to_others and match.group("me") is None) else match


def _several_todos(value: str) -> list[str]:
    """Cut "buy milk, call the bank and pick up the kids" into its to-dos."""
    items, start = [], 0
    for separator in _TODO_SEPARATOR.finditer(value):
        following = value[separator.end() :].split(maxsplit=1)
        if len(following) == 2 and following[0].casefold() in _TODO_VERBS:
            items.append(value[start : separator.start()])
            start = separator.end()
    return [*items, value[start:]]
