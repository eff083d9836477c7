"""Who "he", "she", "they" or a bare name is, when the user named someone before.

People tell of someone over two messages: "my son is 12", then "his name is Leo"; "my wife's
name is Clara", then "she works at the hospital"; "I have a dog called Rex", then "how old is
he?" was never answerable. :func:`resolve_pronoun` puts the one the previous message named in
place of the pronoun that opens the message ("my son's name is Leo"), so that the fact rules
and the questions read it as if it had been said in one go. A pronoun whose gender the role
contradicts ("my daughter is 7", then "his name is ...") names no one, nor does a message
before that named nobody or several people. :func:`resolve_name` does the same for a name
that opens a message or a clause ("Rex is 5 now", or typed "rex is 5 now": "my dog Rex is 5
now") from the facts known. Pure functions of their arguments.

Tested by ``tests/test_pronouns.py`` and the "pets and relatives" family of
``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.memory.longterm.memory_slots import USER, parse_key, role_and_name
from agent.memory.rules.fact_extraction import PEOPLE, PETS, extract_facts
from agent.memory.rules.fact_words import ALIASES
from agent.memory.schemas import ConversationTurn, Fact

__all__ = [
    "opens_with_name",
    "opens_with_pronoun",
    "resolve_name",
    "resolve_pronoun",
    "said_before",
]

_F = re.IGNORECASE
# How many of the user's messages back a pronoun may point.
_LOOK_BACK = 3
_FEMALE = frozenset(
    """wife girlfriend fiancee fiancée mother mom mum mommy stepmother stepsister sister daughter
    grandmother grandma granny aunt niece mother-in-law daughter-in-law sister-in-law stepmum
    stepmom""".split()
)
_MALE = frozenset(
    """husband boyfriend fiance fiancé father dad daddy stepfather stepbrother brother son
    grandfather grandpa uncle nephew father-in-law son-in-law brother-in-law stepdad""".split()
)
# The pronoun that opens a message, and what it becomes: "he's" -> "<who> is", "his" -> "<who>'s".
_OPENING = re.compile(
    r"^(?:and\s+|oh\s+and\s+|also,?\s+"
    r"|(?:(?:no|nope|sorry|oops|actually|wait|my bad)\b[\s,!.-]*)+)?"
    r"(?P<p>he|she|they|his|her|their)"
    r"(?P<be>'s|'re|\s+is|\s+are|\s+was|\s+were)?(?=\s|$)",
    _F,
)
# A question's pronoun, wherever it is: "how old is she?", "what's his name?".
_ASKED = re.compile(r"^(?=.*\?\s*$).*?\b(?P<p>he|she|they|his|her|their)\b(?P<be>)", _F)
# A name that opens a statement about its bearer: "Rex is 5", "Clara's birthday is ...", or
# a clause of one: "Miso is 3 and Tofu is 5"; in any case (only a name known is resolved).
_NAME_FIRST = re.compile(
    r"(?:^|(?<=, )|(?<=; )|(?<=\band )|(?<=\bbut )|(?<=^actually )|(?<=^oh )|(?<=^also ))"
    r"(?P<name>[^\W\d_]{2,})(?=(?:'s\s|\s+(?:is|was|has|just|lives|works|loves|likes|hates"
    r"|turned|moved|got|plays|learns|is learning|doesn't|does|can't|never|goes|visits|phones"
    r"|calls)\b))"
)
# Each one a message speaks of: "my sister ... and my brother ...": two, no telling who.
# (Not what someone is: "she's a beagle".)
_ROLE = re.compile(rf"\b(?:my|our|(?<!\bis )(?<!'s )(?:a|an))\s+(?P<role>{PEOPLE}|{PETS})\b", _F)
# "her name is ...": of the one named before, a new name.
_RENAMES = re.compile(r"\s+(?:real\s+|actual\s+)?name\b", _F)
# Where one sentence of a message ends and the next begins (kept, to join them again).
_SENTENCE = re.compile(r"(?<=[.!?])(\s+)(?=\S)")
_OTHER_GENDER = {"he": _FEMALE, "his": _FEMALE, "she": _MALE, "her": _MALE}


def _named(previous: str) -> tuple[str | None, bool]:
    """The one label ("son", "sister Ana") a message said something of or named, and whether
    it spoke of several (no telling who)."""
    labels: list[str] = []
    for fact in extract_facts(previous, turn=0):
        key = parse_key(fact.key)
        if key.subject != USER:
            label = key.subject
        elif key.name in {"relative", "pet"}:
            label = fact.value
        else:
            continue
        if label not in labels:
            labels.append(label)
    # "my son Leo": named and said of under the same label; two people: no telling who.
    roles = {label.split()[0].casefold() for label in labels}
    mentioned = [ALIASES.get(m.group("role").casefold(), m.group("role").casefold())
                 for m in _ROLE.finditer(previous)]
    roles.update(mentioned)
    if len(roles) != 1:
        return None, len(roles) > 1
    return (labels[-1] if labels else mentioned[-1]), False  # "what's my son's name?": "son"


def _known_in(said: str, known: Sequence[Fact]) -> tuple[str | None, bool]:
    """The one of ``known`` (the people and pets told of) whose name ``said`` says, and
    whether it says several."""
    words = set(re.findall(r"[^\W\d_]+", said))
    labels = {
        fact.value
        for fact in known
        if parse_key(fact.key).name in {"relative", "pet"} and role_and_name(fact.value)[1] in words
    }
    return (next(iter(labels)) if len(labels) == 1 else None), len(labels) > 1


def opens_with_name(text: str) -> bool:
    """Whether ``text`` or a clause of it opens with a name :func:`resolve_name` may resolve
    (a cheap test before the facts known are gathered)."""
    return _NAME_FIRST.search(text) is not None


def resolve_name(text: str, known: Sequence[Fact]) -> str:
    """Return ``text`` with each name that opens it or one of its clauses ("Rex is 5",
    "Clara works at the hospital", "Miso is 3 and Tofu is 5") made the one the user named
    before ("my dog Rex is 5"), where ``known`` (their facts) names exactly one by it."""
    if not known or _NAME_FIRST.search(text) is None:  # most messages: nothing to gather
        return text
    labels: dict[str, set[str]] = {}
    for fact in known:
        if parse_key(fact.key).name in {"relative", "pet"}:
            labels.setdefault(role_and_name(fact.value)[1].casefold(), set()).add(fact.value)

    def label(match: re.Match[str]) -> str:
        bearers = labels.get(match.group("name").casefold(), set())
        return f"my {next(iter(bearers))}" if len(bearers) == 1 else match.group()

    return _NAME_FIRST.sub(label, text) if labels else text


def said_before(turns: Sequence[ConversationTurn]) -> list[str]:
    """The user's messages of the last few of ``turns`` (a packet's recent turns), newest
    first: where :func:`resolve_pronoun` looks for who a pronoun is."""
    return [turn.user_text for turn in reversed(turns[-_LOOK_BACK:])]


def opens_with_pronoun(text: str) -> bool:
    """Whether ``text`` has a pronoun :func:`resolve_pronoun` may resolve (a cheap test before
    the facts known are gathered)."""
    return (_OPENING.match(text) or _ASKED.match(text)) is not None


def resolve_pronoun(text: str, previous: Sequence[str], known: Sequence[Fact] = ()) -> str:
    """Return ``text`` with its pronoun replaced by the one the newest of ``previous`` (the
    user's messages before it, newest first) that speaks of someone named (``"his name is
    Leo"`` after ``"my son is 12"``: ``"my son's name is Leo"``), or names one of ``known``
    (the facts told: "her birthday is ..." after "I need a present for Asha", Asha being a
    daughter told of), or ``text`` as it is. A sentence of the message reads the ones before
    it first ("I just got a puppy! she's a beagle called Daisy")."""
    *sentences, last = _SENTENCE.split(text)
    if not sentences:
        return _resolved(text, previous, known)
    done: list[str] = []
    for sentence, gap in zip(sentences[::2], sentences[1::2], strict=True):
        done += [_resolved(sentence, [*done[-2::-2][:_LOOK_BACK], *previous], known), gap]
    return "".join([*done, _resolved(last, [*done[-2::-2][:_LOOK_BACK], *previous], known)])


def _resolved(text: str, previous: Sequence[str], known: Sequence[Fact]) -> str:
    opening = _OPENING.match(text)
    match = opening or _ASKED.match(text)
    if match is None:
        return text
    label = None
    for said in previous:
        label, several = _named(said)
        if label is None and not several:
            label, several = _known_in(said, known)
        if label is not None or several:
            break
    if label is None:
        return text
    pronoun = match.group("p").casefold()
    if label.split()[0].casefold() in _OTHER_GENDER.get(pronoun, frozenset()):
        return text
    # A question asks of someone by name ("what does Miso like?"), a statement says "my cat Miso".
    role, name = role_and_name(label)
    who = name if name and (opening is None or not role) else f"my {label}"
    if _RENAMES.match(text, match.end()):  # "sorry, her name is Anna": "my sister's name ..."
        who = f"my {role}"
    if pronoun in {"his", "her", "their"}:
        if match.group("be"):
            return text  # "his is ..." / "her's": not a pronoun before a thing of theirs
        said = f"{who}'s"
    else:
        said = f"{who} is" if match.group("be") else who
        if match.group("be") and match.group("be").strip().casefold() in {"was", "were"}:
            said = f"{who} was"
    return text[: match.start("p")] + said + text[match.end() :]
