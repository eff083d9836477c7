"""What the rule-based concierge says of facts: acknowledgements and answers.

Facts the user states ("my name is Ada", "my sister Mia lives in Porto") are acknowledged as
kept (:func:`fact_acks`); questions about them are answered from the reading's facts (this
session's, over the chat's long-term memories): their name, what is known about them,
someone in their life, a value they replaced, one of their facts. Each ``answer_*`` function is
an :data:`~agent.engines.rule_reading.Answer`. Covered by ``tests/test_rule_based.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from agent.engines.fact_questions import FACT_QUESTIONS, PLURAL, SOMEONE_QUESTIONS
from agent.engines.rule_reading import Reading, joined_of, sentence
from agent.memory.longterm.memory_schemas import Memory
from agent.memory.longterm.memory_slots import (
    USER,
    describe_fact,
    fact_key,
    parse_key,
    plural_of,
    role_and_name,
    singular_of,
    slot_of,
)
from agent.memory.rules.fact_extraction import PEOPLE, PETS
from agent.memory.rules.fact_words import ALIASES
from agent.memory.rules.value_corrections import HISTORY
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef

__all__ = [
    "NOT_TOLD",
    "answer_about_you",
    "answer_earlier",
    "answer_fact",
    "answer_line",
    "answer_name",
    "answer_someone",
    "fact_acks",
    "none_said",
    "own_facts",
]

#: How an answer that no fact covers begins ("You haven't told me where you live yet.").
NOT_TOLD = "You haven't told me"

_F = re.IGNORECASE
_ASK_NAME = re.compile(
    r"\b(?:what(?:'s| is) my (?:first |full )?name|who am i(?=\s*[?!.]*$)"
    r"|do you (?:know|remember) (?:my name|who i am)"
    r"|what (?:do|should|will|would|can) you call me|say my name|what am i called"
    r"|how (?:do|should|will|would) you (?:call|address) me)",
    _F,
)

_ASK_ABOUT_ME = re.compile(
    r"\bwhat (?:else )?(?:do|did) you (?:know|remember)(?: about me)?\b(?!\s+about\b)"
    r"|\bwhat have i told you\b(?!\s+about\s+(?!me\b))"
    r"|\btell me (?:something |anything |more )?about (?:me|myself)\b|\bwhat do you know about me"
    r"|^(?:do|did) you (?:(?:still )?remember|know) (?:me|who i am)\b",
    _F,
)

# A favourite's thing in other words: "film" is "movie", "TV show" is "show".
_SAME_THING = {
    word: tuple(w for w in group if w != word)
    for group in (("film", "movie"), ("show", "tv show", "series", "tv series"), ("book", "novel"),
                  ("song", "track", "tune"), ("band", "group"), ("food", "dish", "meal"))
    for word in group
}  # fmt: skip


# A wife or a husband asked about, told of as a spouse ("I'm married to Siobhan").
_SPOUSE = {"wife": "spouse", "husband": "spouse"}
_NAMING = frozenset({"relative", "pet"})
# A pet's role ("cat", "golden retriever"): what "my pets" asks of.
_ANIMAL = re.compile(PETS, _F)

# What else answers a question about someone: "how old is my son?" by the year he was born.
_ASKED_AS = {"age": ("age", "born"), "born": ("born", "birthday"), "gift": ("likes",),
             "food": ("diet", "allergy", "avoid", "dislikes")}  # fmt: skip

# (question about an earlier value, the attributes asked for)
_ASK_PAST: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, _F), tuple(attributes.split()))
    for pattern, attributes in (
        (r"\bwhere (?:did i (?:use to |used to )?live|was i living|have i lived|did i live)\b"
         r"|\bmy (?:old|previous|former|last) (?:home|address|city|place)\b", "location"),
        (r"\bwhere did i (?:use to |used to )?work\b|\bwhat (?:did i (?:use to |used to )?do"
         r"|was my (?:old |previous |former |last )?job)\b", "job workplace"),
        (r"\bwhat (?:was|were) my (?:old|previous|former|last) (?P<attr>[^\W\d_]+)\b"
         r"|\bwhat (?:was|were) my (?P<attr2>[^\W\d_]+) before\b", ""),
    )
)  # fmt: skip

# Words for an attribute in a question about its history.
_ATTRIBUTE_WORDS = {
    "home": "location", "address": "location", "city": "location", "place": "location",
    "work": "job", "profession": "job", "employer": "workplace", "company": "workplace",
    "bday": "birthday", "diet": "diet",
}  # fmt: skip


def answer_someone(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer what is known of someone in the user's life ("where does my sister live?")."""
    for pattern, attribute in SOMEONE_QUESTIONS:
        match = pattern.search(reading.text)
        if match is not None:
            found = match.groupdict()
            who = found.get("who") or found.get("who2") or ""
            role = found.get("role") or found.get("role2")  # "Leo's teacher": one of Leo's
            about = _about_other(reading, who, attribute, role)
            if about is not None and not (attribute == "gift" and about.startswith(NOT_TOLD)):
                return about  # a present with no likes known: a question kept open
    return None


def answer_earlier(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer what a value was before ("where did I live before?")."""
    for pattern, attributes in _ASK_PAST:
        match = pattern.search(reading.text)
        if match is not None:
            return _earlier(packet, reading, match, attributes)
    return None


def answer_name(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what's my name?"."""
    if not _ASK_NAME.search(reading.text):
        return None
    name = next((f.value for f in reading.facts if f.key == "name"), None)
    if name is None:
        return "I don't know your name yet. Tell me with “my name is …”."
    return f"Your name is {name}."


def answer_about_you(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what do you know about me?"."""
    return _about_you(reading.facts) if _ASK_ABOUT_ME.search(reading.text) else None


def answer_fact(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer a question about one kind of fact ("where do I live?", "what are my plans?");
    a statement of the user's ("I miss my family in Cairo") asks none."""
    if _STATEMENT.match(reading.text):
        return None
    for pattern, keys, missing in FACT_QUESTIONS:
        match = pattern.search(reading.text)
        if match is None:
            continue
        wanted = keys
        if "thing" in pattern.groupindex:
            thing = " ".join(match.group("thing").casefold().split())
            wanted = tuple(f"favourite:{spelt}" for spelt in _spellings(thing))
            missing = f"your favourite {thing}"
        found = [f for f in reading.facts if _key_matches(f.key, wanted)]
        if not found:
            none = none_said(reading, *(_NONE_OF.get(key, ()) for key in wanted))
            return sentence(describe_fact(none)) if none else f"{NOT_TOLD} {missing} yet."
        return " ".join(answer_line(f) for f in _job_with_workplace(found))
    return None


def _job_with_workplace(found: list[Fact]) -> list[Fact]:
    """The facts, the user's job and workplace said as one ("you work as a nurse at the
    hospital", "... in Leeds") when both are known and sure."""
    job = next((f for f in found if f.key == "job" and f.mode != "hedged"), None)
    place = next((f for f in found if f.key == "workplace" and f.mode != "hedged"), None)
    if job is None or place is None or not _TITLE.match(job.value):
        return found
    where = place.value if place.value.startswith(("in ", "from ")) else f"at {place.value}"
    both = job.model_copy(update={"value": f"{job.value} {where}"})
    return [both if f is job else f for f in found if f is not place]


# A job said by its title ("a nurse"), which a workplace can follow.
_TITLE = re.compile(r"an?\s", re.IGNORECASE)


def _past(packet: ConversationContextPacket) -> list[Memory]:
    # Values the user replaced, most recently ended first.
    past = [m for m in packet.memories if m.valid_until is not None]
    return sorted(past, key=lambda m: m.valid_until or m.valid_from, reverse=True)


def fact_acks(
    known: Sequence[Fact],
    new: Sequence[Fact],
    intents: list[str],
    *,
    kept: Callable[[Fact], bool],
    personal: bool,
) -> list[str]:
    """Acknowledge the facts ``new`` states (and add ``state_fact`` to ``intents``).

    Say exactly what was kept: for good in a personal chat (long-term memory, across /new),
    for this conversation in a group; a hedge is kept unconfirmed, and said to be.
    """
    if not new:
        return []
    intents.append("state_fact")
    said: list[str] = []
    before = {slot_of(f.key): f for f in known}
    if "job" not in before and "workplace" not in before:  # "you work as a vet at the zoo"
        new = _job_with_workplace(list(new))
    old_name = before["name"].value if "name" in before else None
    noted: list[tuple[str, str]] = []  # (subject, phrase)
    unsure: list[str] = []
    named_together = _named_together(new)
    for fact in new:
        if personal and not kept(fact):
            unsure.append(describe_fact(fact))
            continue
        again = before.get(slot_of(fact.key))
        known_again = again is not None and again.value == fact.value
        if len(new) > 1 and known_again and parse_key(fact.key).name in {"relative", "pet"}:
            continue  # "Ava's school play is on Thursday": Ava is known, the play is news
        if fact.key in named_together:
            if named_together[fact.key]:
                noted.append((USER, named_together[fact.key]))
            continue
        if fact.key != "name":
            previous = before.get(slot_of(fact.key))
            phrase = describe_fact(fact)
            # "updated", not the old value: a reply that repeated it would keep it on file in
            # this conversation after its own was erased.
            ended = parse_key(fact.key).name.startswith("ex_")  # what it ends is no update
            if previous and not ended and previous.value.casefold() != fact.value.casefold():
                phrase += " (updated)"
            noted.append((parse_key(fact.key).subject, phrase))
        elif old_name is None:
            said.append(f"Nice to meet you, {fact.value}.")
        elif old_name == fact.value:
            said.append(f"I know, {fact.value}: you told me before.")
        else:
            said.append(f"Got it: I'll call you {fact.value} from now on.")
    if noted:
        corrected = any(f.mode == "corrected" for f in new)
        head = "Corrected" if corrected else "Noted" if personal else "Noted for this conversation"
        said.append(f"{head}: {joined_of(noted)}.")
    if unsure:
        said.append(
            "I've kept “" + "” and “".join(unsure) + "” as unconfirmed: say it plainly, or "
            "confirm it with /facts, and I'll remember it for good."
        )
    return [" ".join(said)]


def _named_together(new: Sequence[Fact]) -> dict[str, str]:
    """How to say the people and pets a message names: by key, the phrase of the first of a
    role ("your cats are called Miso and Tofu"), "" for the others of it and for one whom
    another fact of the message names already ("your wife Giulia works at the bank")."""
    spoken_of = {parse_key(f.key).subject for f in new}
    roles: dict[str, list[Fact]] = {}
    phrases: dict[str, str] = {}
    for fact in new:
        if parse_key(fact.key).name not in {"relative", "pet"}:
            continue
        if fact.value in spoken_of:
            phrases[fact.key] = ""
        else:
            roles.setdefault(role_and_name(fact.value)[0], []).append(fact)
    for role, named in roles.items():
        if len(named) > 1 and all(role_and_name(f.value)[1] for f in named):
            names = [role_and_name(f.value)[1] for f in named]
            many = plural_of(role)
            phrases.update((f.key, "") for f in named)
            phrases[named[0].key] = (
                f"your {many} are called {', '.join(names[:-1])} and {names[-1]}"
            )
    return phrases


def _is_about(label: str, who: str) -> bool:
    role, name = role_and_name(label)
    # "how old are my kids?" of "my daughter Meera", "how many pets?" of "my cat Luna"
    kids = {"kid", "child", "son", "daughter", "twin"}
    return who in {role.casefold(), name.casefold(), label.casefold()} or (
        who in {"kid", "child"} and role in kids
    ) or (who == "pet" and _ANIMAL.fullmatch(role) is not None)


_NUMBERS = {w: str(n) for n, w in enumerate("zero one two three four five six seven eight nine ten"
                                           .split())}
# A statement of the user's, not a question: "I miss my family", "we visited my family".
_STATEMENT = re.compile(r"^(?:i|i'm|i've|i'd|i'll|we|we're|we've|we'd|we'll)\b(?!.*\?\s*$)", _F)
# What "I don't have any ..." says none of, for the questions of a kind of fact.
_NONE_OF = {
    "allergy:": ("allergies", "food allergies"),
    "pet:": ("pets", "dogs", "cats"),
}
# Words for one kind said as a count ("3 kids") and asked of ("how many children?").
_SAME_KIND = {"child": "kid", "grandchild": "grandkid"}


def _counted(reading: Reading, who: str) -> Fact | None:
    """The user's "I have 3 kids" of the kind ``who`` (singular), or ``None``."""
    kind = _SAME_KIND.get(who, who)
    for fact in reversed(reading.facts):
        parts = parse_key(fact.key)
        if parts.subject != USER or parts.name != "count":
            continue
        one = singular_of(parts.item)
        if _SAME_KIND.get(one, one) == kind:
            return fact
    return None


def none_said(reading: Reading, *kinds: Sequence[str]) -> Fact | None:
    """The user's latest "I don't have any kids" of one of ``kinds`` ("kids", "pets"), or
    ``None``."""
    wanted = {kind for words in kinds for kind in words}
    for fact in reversed(reading.facts):
        parts = parse_key(fact.key)
        if parts.subject == USER and parts.name == "count" and fact.value == "no":
            if parts.item in wanted:
                return fact
    return None


def _unnamed_roles(reading: Reading, named: Sequence[Fact]) -> set[str]:
    """The roles of the ones ``named`` that no one else has, and their names: what was said of
    "my son" before his name ("my son's birthday is June 2nd", then "my son is called Leo") is
    said of Leo when he is the only son named, and what was said of "Sara" of "my sister Sara"."""
    roles = [role_and_name(f.value)[0] for f in reading.facts if parse_key(f.key).name in _NAMING]
    names = {role_and_name(f.value)[1] for f in named} - {""}
    return names | {role for f in named if roles.count(role := role_and_name(f.value)[0]) == 1}


def _about_other(
    reading: Reading, who: str, attribute: str, role: str | None = None
) -> str | None:
    """Answer what is known of someone in the user's life (``attribute``; "" for all; of
    their relatives, the one of ``role`` when given: "Leo's teacher")."""
    said_as = who
    who = " ".join(who.casefold().split())
    who = singular_of(who) if re.fullmatch(PLURAL, who, _F) else who
    who = ALIASES.get(who, who)  # "my boys": the sons told of
    also = _SPOUSE.get(who, who)  # "my wife": the spouse told of, if that is who was

    def of_them(said: str) -> bool:
        return _is_about(said, who) or _is_about(said, also)

    named = [f for f in reading.facts if parse_key(f.key).name in _NAMING and of_them(f.value)]
    if attribute == "count":  # "how many kids do I have?": the ones told of, by name
        many = plural_of(who)
        counted = _counted(reading, who)
        if named and counted is not None and counted.value == "no":  # one named since
            counted = None
        if not named and counted is None:
            return f"{NOT_TOLD} about any {many} yet."
        each = [role_and_name(f.value)[1] or f.value for f in named]
        listed = " and ".join([", ".join(each[:-1]), each[-1]] if len(each) > 1 else each)
        if counted is not None and _NUMBERS.get(counted.value, counted.value) != str(len(named)):
            # "I have 3 kids", and one named: the number said, and the names known
            return sentence(describe_fact(counted) + (f" ({listed} by name)" if named else ""))
        return f"You have {len(named)} {many if len(named) > 1 else who}: {listed}."
    if attribute == "name":  # "what's my son's name?": the ones named, or not told
        named = [f for f in named if role_and_name(f.value)[1]]
        together = _named_together(named)  # "your dogs are called Max and Bella"
        if named:
            return " ".join(
                sentence(together.get(f.key) or describe_fact(f))
                for f in named
                if together.get(f.key) != ""
            )
        return f"{NOT_TOLD} your {who}'s name yet."
    unnamed = _unnamed_roles(reading, named)
    said = [
        f
        for f in reading.facts
        if parse_key(f.key).subject != USER
        and (of_them(parse_key(f.key).subject) or parse_key(f.key).subject in unnamed)
        and (not attribute or parse_key(f.key).name in _ASKED_AS.get(attribute, (attribute,)))
        and (role is None or role_and_name(f.value)[0].casefold() == role.casefold())
    ]
    found = (named if not attribute else []) + said
    if found:
        return " ".join(sentence(describe_fact(f)) for f in found)
    known_role = re.fullmatch(rf"(?:{PEOPLE}|{PETS})", who, _F) is not None
    if not known_role and not named:
        # "how old is Poppy?" of no one named: not told (what was said in passing is quoted);
        # "who is there?": not someone at all.
        return f"{NOT_TOLD} about {said_as} yet." if said_as[:1].isupper() else None
    if named and attribute:
        names = " and ".join(role_and_name(f.value)[1] or f.value for f in named)
        return f"{NOT_TOLD} that about {names} yet."
    return f"{NOT_TOLD} about your {who} yet."


def _earlier(
    packet: ConversationContextPacket,
    reading: Reading,
    match: re.Match[str],
    wanted: Sequence[str],
) -> str:
    """Answer what a value was before the user replaced it."""
    if not wanted:
        word = (match.group("attr") or match.group("attr2") or "").casefold()
        wanted = (_ATTRIBUTE_WORDS.get(word, word),)
    # What tells of a place or a work before: an end ("I no longer live in Rome": ex_location),
    # kept as the history it tells when another place is known ("lived").
    history = {ended: kept for ended, kept in HISTORY.items()
               if ended.removeprefix("ex_") in wanted}  # fmt: skip
    past = [
        m for m in _past(packet) if m.subject == USER and m.attribute in {*wanted, *history}
    ]
    now = [
        f
        for f in reading.facts
        if parse_key(f.key).subject == USER and parse_key(f.key).name in wanted
    ]
    # "I used to live in Rome", "I no longer work at Google": told as history, kept as said.
    told = own_facts(reading, *history, *history.values())
    if not past and not told:
        if now:
            current = " ".join(sentence(describe_fact(f)) for f in now)
            return f"I don't know of an earlier one: {current}"
        return f"{NOT_TOLD} about that yet."
    lines = []
    for memory in past:
        attribute = history.get(memory.attribute, memory.attribute)
        fact = Fact(key=fact_key(USER, attribute, memory.text), value=memory.text, turn=0)
        until = memory.valid_until or memory.valid_from
        if attribute != memory.attribute:  # "I used to work at Google", since replaced
            lines.append(sentence(describe_fact(fact)))
        elif until <= memory.valid_from:  # corrected: it was never true
            lines.append(f"You once told me {describe_fact(fact)}, then corrected it.")
        else:
            lines.append(f"Earlier you told me {describe_fact(fact)} (until {until:%d %B %Y}).")
    lines += [sentence(describe_fact(f)) for f in told]
    if now:
        lines.append("Now " + "; ".join(describe_fact(f) for f in now) + ".")
    return " ".join(lines)


def own_facts(reading: Reading, *attributes: str) -> list[Fact]:
    """The user's own facts (not someone else's) of ``attributes``, in the reading's order."""
    return [
        f
        for f in reading.facts
        if (key := parse_key(f.key)).subject == USER and key.name in attributes
    ]


def _spellings(thing: str) -> set[str]:
    """``thing`` in British and American spelling ("colour", "color"), and in the other words
    for it ("film", "movie")."""
    american = re.sub(r"(?<=\w{3})our\b", "or", thing)
    spelt = {thing, american, re.sub(r"(?<=\w{3})or\b", "our", american)}
    return spelt | {other for word in spelt for other in _SAME_THING.get(word, ())}


def _key_matches(key: str, wanted: Sequence[str]) -> bool:
    return any(
        key.startswith(w.rstrip("*")) if w.endswith((":", "*")) else key == w for w in wanted
    )


def _about_you(facts: Sequence[Fact]) -> str:
    if not facts:
        return (
            "I don't know anything about you yet. Tell me, for example, “my name is Ada” or "
            "“I live in Lisbon”."
        )
    # Yourself first (your name leads), then the people and pets in your life; one named in a
    # fact about them ("your partner Sam works as a vet") needs no line of its own ("... is
    # called Sam").
    spoken_of = {parse_key(f.key).subject for f in facts}
    kept = [
        f
        for f in facts
        if not (parse_key(f.key).name in {"relative", "pet"} and f.value in spoken_of)
    ]
    ordered = sorted(kept, key=lambda f: (parse_key(f.key).subject != USER, f.key != "name"))
    together = _named_together(ordered)  # "your cats are called Bella and Luna", once
    lines = [
        f"• {sentence(together[f.key]) if together.get(f.key) else answer_line(f)}"
        for f in _job_with_workplace(ordered)
        if together.get(f.key) != ""
    ]
    return "Here's what I know about you:\n" + "\n".join(lines)


def answer_line(fact: Fact) -> str:
    # A fact in an answer; an unconfirmed one says so.
    said = describe_fact(fact)
    return sentence(said + " (unconfirmed)" if fact.mode == "hedged" else said)
