"""Reading the facts a user states about themselves and the people and pets in their life:
"my name is Ada", "I live in Lisbon", "my sister Mia lives in Porto", "I have a cat called Miso".

A pure function of the text (no clock, no I/O), shared by the state manager (group sessions
record the facts on their state; I6: the same turns give the same facts), the promotion gate of
long-term memory, and the offline concierge, which acknowledges them. Keys follow
:mod:`agent.memory.longterm.memory_slots`. Text handling (normalisation, clauses, value cleaning) is
:mod:`agent.memory.rules.extraction`'s; reading a value after its cue,
:mod:`agent.memory.rules.fact_values`'; what is said of the people and pets in the user's life,
:mod:`agent.memory.rules.entity_facts`'. The rules themselves, one pattern per way of saying a
fact, are :mod:`agent.memory.rules.fact_rules`'.

Tested by ``tests/test_extraction.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from agent.memory.longterm.memory_slots import USER, fact_key, plural_of
from agent.memory.rules.entity_facts import read_entity_facts, read_several
from agent.memory.rules.extraction import Clause, normalize_text, split_clauses
from agent.memory.rules.fact_rules import FACT_RULES, USER_CUE
from agent.memory.rules.fact_values import PRONOUN_OBJECT, detail_name, fact_value
from agent.memory.rules.fact_words import EVENTS, PEOPLE, PETS
from agent.memory.schemas import Fact, FactMode

__all__ = ["PEOPLE", "PETS", "extract_facts"]

_F = re.IGNORECASE

# A clause of the user's about themselves, which may name someone too ("I live in Turin with
# my wife Giulia"): read by the user's rules as well as the entity rules.
_OF_SELF = re.compile(r"^(?:i|we)\s+(?:live|work|moved)\b", _F)
# "I quit my job at Boots, I'm at Lloyds now": a workplace said after leaving one.
_NEW_WORKPLACE = re.compile(
    r"\bi(?:'ve|\s+have)?\s+(?:just\s+)?(?:quit|left|changed|switched|(?:don't|no longer)\s+work)"
    r"\b[^.!?;]{0,60}?"
    r"(?:,\s*|\s+)(?:and\s+|so\s+|now\s+)?(?:i'm|i am)\s+(?:now\s+)?(?:at|with)\s+(?P<v>.{1,80})",
    _F,
)
# "I'm Tom, 41, living in Bristol", "I'm lactose intolerant and allergic to sesame": more said
# of the user after "I'm ...", each part read as if said with "I'm".
_LISTED = re.compile(
    r"^(?:(?:hi|hello|hey)\b[,!. ]*)?i(?:'m|\s+am)\s+[^,]{1,40}?(?:\s*,\s*|\s+and\s+)"
    r"(?P<rest>.{1,200})$",
    _F,
)
_LIST_PARTS = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+|(?<!\bapart)\s+(?=from\s)", _F)
# "I'm allergic to shellfish and so is Dev", "I have asthma, and so does my son": said of the
# user, then of someone else too.
_SO_IS = re.compile(
    r"^(?P<head>i(?P<be>'m|\s+am|\s+have)\s+.+?)\s*,?\s+and\s+so\s+(?:is|does|has)\s+"
    r"(?P<who>(?:my\s+)?[\w'-]+(?:\s+[\w'-]+)?)[.!]*$",
    _F,
)
# "move my dentist appointment to Friday at 3", "can you reschedule Ama's recital to the 9th":
# an event moved, asked (a reminder moved is the reminder rules').
_MOVE_IT = re.compile(
    r"^(?:please\s+|(?:can|could|would)\s+you\s+(?:please\s+)?)?(?:move|reschedule|push(?:\s+back)?"
    r"|postpone|shift|change)\s+(?P<what>(?:my|our|the|[A-Z][\w-]*'s?)\s+(?!.*\b(?:reminders?"
    r"|alarms?|timers?)\b).{1,80}?)\s+(?:to|till|until)\s+(?P<when>.{1,60}?)[?.!]*$",
    _F,
)
_EVENT_WORD = re.compile(rf"\b(?:{EVENTS})s?\b", _F)
# "I'm pregnant! due in June", "I'm 20 weeks pregnant and the baby's due on 3 March".
_PREGNANT_DUE = re.compile(
    r"\b(?:i(?:'m|\s+am)|we(?:'re|\s+are))\s+(?:\d{1,2}\s+weeks\s+)?pregnant\b[\s,!.;-]*(?:and\s+)?"
    r"(?:i'm\s+|i\s+am\s+|we're\s+|(?:the\s+)?baby(?:'s|\s+is)\s+|(?:it's|it\s+is)\s+)?due\s+"
    r"(?P<when>(?:in|on|at|next|this|around|early|late|mid)\b[^.!?;]{1,40}?)[.!\s]*$",
    _F,
)
# "I live in Leeds and work at the hospital", "I'm a teacher and live in Bath": a second fact
# of the user said without its "I" (not "work out", "have fun" and the like).
_AND_VERB = re.compile(
    r"^(?P<who>i|we)(?:'m|'re|\s+am|\s+are)?\s.+?(?P<cut>,?\s+and\s+)(?=(?:live|work(?!\s+(?:out"
    r"|on|hard|late|overtime)\b)|teach|study|grew\s+up|come\s+from|own|run\s+(?:a|an|my|our)"
    r"|have\s+(?:a|an|two|three|four|\d+)\s)\b)",
    _F,
)
# What a like, a plan or a goal is, and what names none: a word left hanging ("I love to."),
# an amount ("I'm planning a few"), or a verb, when "I love" was said of something else
# ("doing something I love is awesome").
_SAID_AS_A_THING = frozenset(
    {"likes", "dislikes", "plan", "goal", "considering", "does", "learning", "decision"}
)
_NO_THING = re.compile(
    r"(?:to|too|a\s+few|a\s+couple|a\s+lot|some|several|one|lots|many|more|it\s+all|every\s+day"
    r"|always)[.!?]*$|(?:is|was|are|were|has|had|will|would|can|could|makes|gets|keeps|helps"
    r"|brings|gives|means)\b",
    _F,
)
# How a fact was said: hedged ("I think I like jazz"), or correcting what was said before.
_HEDGE = re.compile(
    r"\b(?:i think|i guess|i suppose|i believe|i'm not sure|not sure|maybe|perhaps|probably"
    r"|possibly|might)\b",
    _F,
)
_CORRECTION = re.compile(
    r"\b(?:actually|correction|i meant|i mean|oops|my mistake|my bad|scratch that"
    r"|i misspoke|i was wrong|whoops)\b"
    r"|^(?:(?:oh|ah|hmm|um|uh|er)\b[\s,]*)?(?:no|nope|sorry|wait)\b",
    _F,
)

# "hey im jake": a name typed in lower case, known by the greeting before it (the clauses have
# lost it) and nothing but a comma, "btw" or "and" after it.
_GREETED_NAME = re.compile(
    r"^(?:hi|hello|hey|hiya|heya|yo|howdy)(?:\s+there)?\b[,!. ]*(?:i'm|i am|im)\s+"
    r"(?P<v>[^\W\d_]+)(?=[\s,.!]*$|\s*,|\s+(?:btw|by the way|here|and)\b)",
    _F,
)



@lru_cache(maxsize=256)  # the state rules, the gate and the summarizer all read each text
def extract_facts(text: str, *, turn: int) -> tuple[Fact, ...]:
    """Return the facts the user states in ``text``, in the order stated.

    About the user, keys are ``name``, ``age``, ``location``, ``hometown``, ``job``,
    ``workplace``, ``birthday``, ``born`` (a year), ``diet``, ``timezone`` (an IANA name),
    ``favourite:<thing>`` and ``detail:<thing>`` ("my blood type is O negative": ``detail:blood
    type``) (one value each) and ``plan``, ``goal``, ``decision``, ``likes``,
    ``dislikes``, ``allergy``, ``avoid``, ``routine``, ``learning``,
    ``relative``, ``pet`` (many values: the value is part of the key). About someone else the
    key starts with who they are: ``sister Mia/location``; naming them ("my sister Mia", "I
    have a cat called Miso") is a ``relative`` or ``pet`` fact. Questions state nothing ("do I
    like jazz?"), except "call me X". "I'm X" is a name only when X is capitalised and nothing
    but the name follows ("I'm Ada", not "I'm tired" or "I'm Planning a trip"). A fact in a
    hedged clause ("I think ...") is ``hedged``; in a message that corrects ("sorry, my
    birthday is actually on May 14") it is ``corrected``.

    Args:
        text: one user message.
        turn: the seq of the turn that states them (recorded on each fact).

    Returns:
        The facts, at most one per key (the last stated wins).
    """
    asked = _MOVE_IT.match(normalize_text(text))
    if asked is not None and _EVENT_WORD.search(asked.group("what")):  # "move my flight to ..."
        text = f"{asked.group('what')} got moved to {asked.group('when')}"
    normalized = normalize_text(text)
    found: dict[str, Fact] = {
        key: Fact(key=key, value=value, turn=turn) for key, value in read_several(normalized)
    }
    moved = _NEW_WORKPLACE.search(text)
    workplace = fact_value("place", moved.group("v")) if moved else None
    correcting = _CORRECTION.search(text) is not None
    for clause in _said_of_both(split_clauses(text, statements=True)):
        if clause.question:
            facts = _read_user_fact(clause, questions_only=True)
        else:
            facts = read_entity_facts(clause.text)
            if not facts or _OF_SELF.match(clause.text):  # "I live in Turin with my wife ..."
                facts = [*facts, *_read_user_fact(clause)]
        mode: FactMode = "stated"
        if _HEDGE.search(clause.text):
            mode = "hedged"
        elif correcting:
            mode = "corrected"
        listed = _LISTED.match(clause.text)
        for part in _LIST_PARTS.split(listed.group("rest")) if listed else ():
            if part and USER_CUE.search(part) is None:
                said = _read_user_fact(Clause(f"I'm {part}", question=False))
                facts = [*facts, *((k, v) for k, v in said if k != "name")]
        for key, value in facts:
            found.pop(key, None)
            found[key] = Fact(key=key, value=value, turn=turn, mode=mode)
    due = _PREGNANT_DUE.search(normalized)
    if due is not None and "event:baby" not in found:  # "I'm pregnant! due in June"
        found["event:baby"] = Fact(key="event:baby", value=f"baby is due {due['when']}", turn=turn)
    if workplace is not None:  # the new workplace says the old one ended
        found.pop("ex_workplace", None)
        found["workplace"] = Fact(key="workplace", value=workplace, turn=turn)
    greeted = _GREETED_NAME.match(normalized)
    name = fact_value("casual_name", greeted.group("v")) if greeted else None
    if name is not None and "name" not in found:
        found["name"] = Fact(key="name", value=name, turn=turn)
    return tuple(found.values())


def _read_user_fact(clause: Clause, *, questions_only: bool = False) -> list[tuple[str, str]]:
    # One fact per clause, the first rule's that reads it, and those of the rules before it
    # that let others read on ("I'm a nurse at the city hospital": a job and a workplace).
    found: list[tuple[str, str]] = []
    if USER_CUE.search(clause.text) is None:  # no rule can read it: none is tried
        return found
    cued: dict[re.Pattern[str], bool] = {}
    for rule in FACT_RULES:
        if questions_only and not rule.in_questions:
            continue
        if rule.cue is not None:
            if rule.cue not in cued:
                cued[rule.cue] = rule.cue.search(clause.text) is not None
            if not cued[rule.cue]:
                continue
        match = rule.pattern.search(clause.text)
        if match is None:
            continue
        attribute = rule.key
        liked = match.groupdict().get("item") or match.groupdict().get("v") or ""
        if attribute in {"likes", "dislikes"} and PRONOUN_OBJECT.match(liked):
            continue
        if attribute in _SAID_AS_A_THING and _NO_THING.match(liked.strip()):
            continue  # "I love to.", "I'm planning a few", "something I love is awesome"
        said = _said(match, rule.said, rule.item)
        if said is None:
            continue
        value = fact_value(rule.kind, said)
        if value is None:
            continue
        if attribute in {"favourite", "count"}:  # "my favourite film", "3 kids"
            kind = match.group("k") or rule.item or ""  # "not allergic to anything": allergies
            kind = " ".join(kind.casefold().split())
            if attribute == "count" and value == "one":  # "I have a dog": one of the dogs
                kind = plural_of(kind)
            attribute = f"{attribute}:{kind}"
        elif attribute == "detail":
            thing = detail_name(match.group("k"), match.group("v"))
            if thing is None:
                continue
            attribute = f"detail:{thing}"
        # An event's slot is the event, not its date: "my flight is now on the 15th" replaces.
        item = rule.item or (match.group("item") if "item" in rule.pattern.groupindex else value)
        found.append((fact_key(USER, attribute, item), value))
        if not rule.alongside:
            break
    return found


def _said_of_both(clauses: Sequence[Clause]) -> list[Clause]:
    """The clauses, "I'm allergic to shellfish and so is Dev" read as "I'm allergic to
    shellfish" and "Dev is allergic to shellfish"."""
    read: list[Clause] = []
    for clause in clauses:
        both = None if clause.question else _SO_IS.match(clause.text)
        if both is None:
            read += _said_with_one_subject(clause)
            continue
        verb = "has" if both.group("be").strip() == "have" else "is"
        rest = both.group("head")[both.end("be") :]
        read += [Clause(both.group("head"), question=False),
                 Clause(f"{both.group('who')} {verb}{rest}", question=False)]  # fmt: skip
    return read


def _said_with_one_subject(clause: Clause) -> list[Clause]:
    """The clause, "I live in Leeds and work at the hospital" read as "I live in Leeds" and "I
    work at the hospital"."""
    shared = None if clause.question else _AND_VERB.match(clause.text)
    if shared is None:
        return [clause]
    rest = clause.text[shared.end("cut") :]
    return [Clause(clause.text[: shared.start("cut")], question=False),
            Clause(f"{shared.group('who')} {rest}", question=False)]  # fmt: skip


# A plan said in its -ing form, said with "to": "visiting my sister" is "to visit my sister",
# "moving to Bristol" is "to move to Bristol".
_ING = re.compile(r"^(visit|see|stay|mov|gett|buy|go)ing\b", _F)
_TO_DO = {"visit": "to visit", "see": "to see", "stay": "to stay", "mov": "to move",
          "gett": "to get", "buy": "to buy", "go": "to go"}  # fmt: skip


def _said(match: re.Match[str], form: str | None = None, item: str | None = None) -> str | None:
    """What a rule's match states: its value, with the time said first ("this weekend I'm
    going hiking": "to go hiking this weekend"); an event said with its time ("I have a dinner
    on Friday": "dinner is on Friday"), none without one ("I have a meeting"), in the rule's
    ``form`` when it has one ("baby is due in March"), of the ``item`` the rule names when the
    text does not ("getting married in June": "wedding is in June")."""
    groups = match.groupdict()
    if item is not None:  # "getting married in June": the wedding
        groups["item"] = item
    lead = groups.get("lead")
    if "item" in groups and "when" in groups:
        when = groups["when"] or lead
        if when is None:
            return None
        if form is not None:  # "we're expecting a baby in March": "baby is due in March"
            return form.format(item=groups["item"], when=when)
        # "with my sister", or who was met ("meeting Tom for coffee": "coffee with Tom").
        who = groups.get("with") or groups.get("also") or ""
        extra = f" with {who.removeprefix('with ')}" if who else ""
        return f"{groups['item']}{extra} is {when}"
    if form is not None:  # "I don't have any kids": "no"; "tea over coffee": "tea more than ..."
        return form.format_map(groups)
    value = re.sub(r"^going\s+", "to go ", groups["v"], flags=_F)
    value = _ING.sub(lambda m: _TO_DO[m.group(1).casefold()], value)  # "visiting": "to visit"
    if groups.get("but"):  # what a diet allows: "vegetarian except fish"
        value = f"{value} except {groups['but']}"
    return f"{value} {lead}" if lead else value

