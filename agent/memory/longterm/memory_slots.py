"""What a long-term memory is about: its subject, attribute and slot (memory model, version 2).

A fact's ``key`` (on the session state, from :mod:`agent.memory.rules.fact_extraction`) names what
it is about in one string: ``[<subject>/]<attribute>[:<item>]``.

- ``subject`` is left out for the user; for someone or something in their life it is the
  entity's label as said, e.g. ``sister Mia/location``.
- A *one-value* attribute (``name``, ``location``, ``job``...) holds one value at a time: a new
  value supersedes the old one. ``favourite:<thing>`` and ``detail:<thing>`` (what the user
  said their blood type, garage code or car is) are one-value per thing.
- A *many-value* attribute (``plan``, ``likes``, ``relative``, ``pet``, ``note``...) adds each
  value beside the others: the key carries the value itself as its item (``plan:a trip to
  lisbon``), so two plans are two keys.

The *slot* of a memory is its key, except that liking and disliking one thing share a slot
(``likes:jazz``): "I don't like jazz" supersedes "I like jazz", and the relation between the
two is ``contradicts``; so do what held and its end (``workplace`` and ``ex_workplace``: "I
quit my job at Google"). At most one memory of a slot is current; the others are its history.

Covered by ``tests/test_memory_store.py`` and ``tests/test_memory_erasure_model.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from agent.memory.longterm.memory_schemas import Memory, MemoryKind
from agent.memory.schemas import Fact

__all__ = [
    "PLURALS",
    "USER",
    "KeyParts",
    "SlotRule",
    "attribute_of",
    "describe_fact",
    "describe_memory",
    "fact_key",
    "in_second_person",
    "memory_facts",
    "parse_key",
    "plural_of",
    "render_memory",
    "role_and_name",
    "singular_of",
    "slot_of",
    "whose",
]

#: The subject of what the user says about themselves.
USER = "user"


@dataclass(frozen=True, slots=True)
class SlotRule:
    """How one attribute of a memory behaves.

    Attributes:
        kind: the memory's kind (seed 003's seven).
        many: several values at once (added), or one (superseded).
        importance: how much it matters when a packet has room for only a few memories.
        you: how the bot says it of the user (``{v}`` is the value, ``{item}`` the qualifier).
        other: how the bot says it of someone else (``{s}`` is the subject).
    """

    kind: MemoryKind
    many: bool
    importance: float
    you: str
    other: str


_ATTRIBUTES: dict[str, SlotRule] = {
    "name": SlotRule("fact", False, 1.0, "your name is {v}", "{s}'s name is {v}"),
    "age": SlotRule("fact", False, 0.5, "you're {v}", "{s} is {v}"),
    "location": SlotRule("fact", False, 0.7, "you live in {v}", "{s} lives in {v}"),
    "hometown": SlotRule("fact", False, 0.5, "you're from {v}", "{s} is from {v}"),
    "job": SlotRule("fact", False, 0.7, "you work as {v}", "{s} works as {v}"),
    "workplace": SlotRule("fact", False, 0.6, "you work at {v}", "{s} works at {v}"),
    # What and where one studies: "law", "UCL".
    "study": SlotRule("fact", False, 0.6, "you study {v}", "{s} studies {v}"),
    "school": SlotRule("fact", False, 0.6, "you study at {v}", "{s} studies at {v}"),
    # When: "Monday to Friday, 9 to 5", "nights", "part-time".
    "hours": SlotRule("fact", False, 0.5, "you work {v}", "{s} works {v}"),
    # What no longer holds, in the slot of what held: "I quit my job at Google".
    "ex_workplace": SlotRule(
        "fact", False, 0.6, "you no longer work at {v}", "{s} no longer works at {v}"
    ),
    "ex_location": SlotRule(
        "fact", False, 0.6, "you no longer live in {v}", "{s} no longer lives in {v}"
    ),
    # Where one lived or worked before, said while another place is the one known: history,
    # beside it ("I used to live in Bristol" of someone who lives in Bath).
    "lived": SlotRule("fact", True, 0.4, "you used to live in {v}", "{s} used to live in {v}"),
    "worked": SlotRule("fact", True, 0.4, "you used to work at {v}", "{s} used to work at {v}"),
    "birthday": SlotRule("fact", False, 0.6, "your birthday is {v}", "{s}'s birthday is {v}"),
    "born": SlotRule("fact", False, 0.5, "you were born in {v}", "{s} was born in {v}"),
    # A pet's breed: "a labrador".
    "breed": SlotRule("entity", False, 0.4, "you're {v}", "{s} is {v}"),
    # Away for a while: "on holiday until Mon 30 Nov", "off sick this week".
    "away": SlotRule("fact", False, 0.5, "you're {v}", "{s} is {v}"),
    "favourite": SlotRule(
        "preference", False, 0.5, "your favourite {item} is {v}", "{s}'s favourite {item} is {v}"
    ),
    "diet": SlotRule("constraint", False, 0.7, "you're {v}", "{s} is {v}"),
    "ex_diet": SlotRule("constraint", False, 0.6, "you're no longer {v}", "{s} is no longer {v}"),
    "plan": SlotRule("goal", True, 0.8, "you're planning {v}", "{s} is planning {v}"),
    # A plan or event called off, in the slot of what it ends: "cancel my Paris trip".
    "ex_plan": SlotRule(
        "goal", True, 0.6, "you're no longer planning {v}", "{s} is no longer planning {v}"
    ),
    "ex_event": SlotRule("goal", True, 0.6, "your {v} is called off", "{s}'s {v} is called off"),
    # "flight to Berlin is on 14 March": a dated thing on the user's calendar.
    "event": SlotRule("goal", True, 0.8, "your {v}", "{s}'s {v}"),
    "goal": SlotRule("goal", True, 0.7, "your goal is {v}", "{s}'s goal is {v}"),
    # Not decided yet: "switching jobs", "getting a dog".
    "considering": SlotRule("goal", True, 0.6, "you're thinking of {v}", "{s} is thinking of {v}"),
    "decision": SlotRule("decision", True, 0.7, "you decided {v}", "{s} decided {v}"),
    "likes": SlotRule("preference", True, 0.4, "you like {v}", "{s} likes {v}"),
    "dislikes": SlotRule("preference", True, 0.4, "you don't like {v}", "{s} doesn't like {v}"),
    "allergy": SlotRule(
        "constraint", True, 0.8, "you're allergic to {v}", "{s} is allergic to {v}"
    ),
    # What one is like, one of each kind ("trait:chronotype"): "a night owl", "left-handed".
    "trait": SlotRule("fact", False, 0.4, "you're {v}", "{s} is {v}"),
    # The languages one speaks: "French and Spanish", "a little Japanese".
    "speaks": SlotRule("fact", True, 0.5, "you speak {v}", "{s} speaks {v}"),
    # A health condition: "asthma", "type 1 diabetes", "diabetic" (said as the user said it).
    "condition": SlotRule("constraint", True, 0.8, "you have {v}", "{s} has {v}"),
    "avoid": SlotRule("constraint", True, 0.6, "you don't {v}", "{s} doesn't {v}"),
    # Who the user lives with: "with two flatmates, Zoe and Sam", "alone".
    "household": SlotRule("fact", False, 0.6, "you live {v}", "{s} lives {v}"),
    # How long something has held: "been together for 5 years", "lived here since 2019".
    "lasting": SlotRule("fact", True, 0.5, "you've {v}", "{s} has {v}"),
    "routine": SlotRule("procedure", True, 0.5, "your routine: {v}", "{s}'s routine: {v}"),
    # What someone does for fun, said with its verb: "play the guitar", "plays the violin".
    "does": SlotRule("preference", True, 0.4, "you {v}", "{s} {v}"),
    "learning": SlotRule("preference", True, 0.5, "you're learning {v}", "{s} is learning {v}"),
    "relative": SlotRule("entity", True, 0.7, "your {v}", "{s}'s {v}"),
    "pet": SlotRule("entity", True, 0.6, "your {v}", "{s}'s {v}"),
    # How many of a kind: "3" kids (count:kids), told before or without their names.
    "count": SlotRule("entity", False, 0.6, "you have {v} {item}", "{s} has {v} {item}"),
    "note": SlotRule("fact", True, 0.6, "{v}", "{s}: {v}"),
    # A detail of the user's world: "blood type" is "O negative" (detail:blood type).
    "detail": SlotRule("fact", False, 0.5, "your {item} is {v}", "{s}'s {item} is {v}"),
    # An IANA name (agent.utils.time_zones): reminders and the time are said in it.
    "timezone": SlotRule("fact", False, 1.0, "your time zone is {v}", "{s}'s time zone is {v}"),
}
# Attributes whose item names what they hold: "favourite:food", "detail:blood type".
_NAMED_BY_ITEM = frozenset({"favourite", "detail", "count", "trait"})
# One slot for the two sides of one thing: the later one supersedes (contradicts) the other.
_SHARED_SLOT = {
    "dislikes": "likes",
    "ex_workplace": "workplace",
    "ex_location": "location",
    "ex_diet": "diet",
    "ex_plan": "plan",
    "ex_event": "event",
}
_DEFAULT = SlotRule("fact", False, 0.5, "{attr}: {v}", "{s}'s {attr}: {v}")


@dataclass(frozen=True, slots=True)
class KeyParts:
    """A key taken apart: ``subject`` (:data:`USER` for the user), ``attribute`` (with a
    favourite's thing: ``favourite:food``), and ``item`` (a favourite's thing, or a many-value
    attribute's value in lower case; empty otherwise)."""

    subject: str
    attribute: str
    item: str

    @property
    def name(self) -> str:
        """Return the attribute's name without a favourite's thing: ``favourite``."""
        return self.attribute.partition(":")[0]


def attribute_of(name: str) -> SlotRule:
    """Return how attribute ``name`` (``favourite:food`` counts as ``favourite``) behaves."""
    return _ATTRIBUTES.get(name.partition(":")[0], _DEFAULT)


def parse_key(key: str) -> KeyParts:
    """Take a fact's key apart (see the module docstring)."""
    subject, slash, rest = key.partition("/")
    if not slash or ":" in subject:  # a subject is a label, never an attribute or a value
        subject, rest = USER, key
    head, colon, item = rest.partition(":")
    if not colon:
        return KeyParts(subject, rest, "")
    if attribute_of(head).many:
        return KeyParts(subject, head, item)
    return KeyParts(subject, rest, item)


def fact_key(subject: str, attribute: str, value: str) -> str:
    """Return the key of a fact: ``subject`` says ``attribute`` is ``value``."""
    rest = attribute
    if attribute_of(attribute).many:
        rest = f"{attribute}:{' '.join(value.casefold().split())}"
    return rest if subject == USER else f"{subject}/{rest}"


def slot_of(key: str) -> str:
    """Return the slot of a fact's key: the key, one for both sides of a like/dislike."""
    parts = parse_key(key)
    shared = _SHARED_SLOT.get(parts.attribute)
    if shared is None:
        return key
    rest = f"{shared}:{parts.item}" if parts.item else shared
    return rest if parts.subject == USER else f"{parts.subject}/{rest}"


_FIRST_PERSON = re.compile(
    r"\b(?:i am|i was|i'm|i've|i'll|i'd|myself|mine|my|me|i|ourselves|ours|our)\b", re.IGNORECASE
)
_SECOND_PERSON = {
    "i am": "you are", "i was": "you were",  # "where I am": "where you are"
    "i'm": "you're", "i've": "you've", "i'll": "you'll", "i'd": "you'd", "myself": "yourself",
    "mine": "yours", "my": "your", "me": "you", "i": "you",
    "ourselves": "yourselves", "ours": "yours", "our": "your",
}  # fmt: skip


def in_second_person(text: str) -> str:
    """Turn the user's words to the second person: "call my mom" -> "call your mom"."""
    return _FIRST_PERSON.sub(lambda m: _SECOND_PERSON[m.group(0).lower()], text)


def role_and_name(label: str) -> tuple[str, str]:
    """Split an entity's label: "sister Mia" -> ("sister", "Mia"); "sister" -> ("sister", "")."""
    words = label.split()
    for n, word in enumerate(words):
        if word[:1].isupper():
            return " ".join(words[:n]), " ".join(words[n:])
    return label, ""


#: The people and pets whose plural is not the word and "s" ("child": "children").
PLURALS = {
    "child": "children", "grandchild": "grandchildren", "puppy": "puppies", "bunny": "bunnies",
    "pony": "ponies", "baby": "babies", "mouse": "mice", "goldfish": "goldfish",
}  # fmt: skip
_SINGULARS = {many: one for one, many in PLURALS.items()}


def plural_of(kind: str) -> str:
    """The plural a count is kept under and several are named by: "dog" -> "dogs", "child" ->
    "children"."""
    return PLURALS.get(kind, f"{kind}s")


def singular_of(kinds: str) -> str:
    """One of ``kinds``: "dogs" -> "dog", "children" -> "child", "goldfish" -> "goldfish"."""
    return _SINGULARS.get(kinds) or kinds.removesuffix("s")


def whose(subject: str) -> str:
    """How the bot names someone of the user's: "your sister Mia", "your dog"; someone told
    of by their name alone is that name ("Sara")."""
    return subject if not role_and_name(subject)[0] else f"your {subject}"


# Someone's, by their name alone: "Ben's wedding", "James' party".
_SOMEONES = re.compile(r"[A-Z][^\W\d_]+(?:'s|')\s")
# Work said as a business one has: "run a small bakery", "own a cafe".
_RUNS = re.compile(r"(?:run|own|co-own|manage)\s")
# A job or workplace said without a title or a place: "in marketing", "retired", "from home";
# being a student.
_WORK_AS_SAID = re.compile(
    r"(?:in|from)\s|(?:self[- ]employed|retired|unemployed|between jobs|out of work|a stay)"
    r"|an?\s+(?:[\w-]+\s+){0,2}?student\b",  # "you're a law student", not "you work as"
    re.IGNORECASE,
)


def describe_fact(fact: Fact) -> str:
    """Say a fact to the user, in the second person: "you live in Porto", "your sister Mia
    lives in Porto", "your cat is called Miso"."""
    parts = parse_key(fact.key)
    attribute = attribute_of(parts.attribute)
    if parts.name in {"relative", "pet"}:
        role, name = role_and_name(fact.value)
        if parts.subject != USER:  # "your daughter Mia's teacher is called Mrs Brown"
            who = whose(parts.subject)
            return f"{who}'s {role} is called {name}" if name else f"{who} has a {role}"
        return f"your {role} is called {name}" if name else f"you have a {role}"
    item = parts.item if parts.name in _NAMED_BY_ITEM else ""
    if parts.name == "count" and fact.value == "one":  # "you have a dog"
        item = singular_of(item)
        if parts.subject == USER:
            return attribute.you.format(v="an" if item[:1] in "aeiou" else "a", item=item)
        return attribute.other.format(s=whose(parts.subject), v="one", item=item)
    value = in_second_person(fact.value)
    if parts.name == "job" and _RUNS.match(value):  # "you run a small bakery in Bristol"
        verb, rest = value.split(maxsplit=1)
        return f"you {value}" if parts.subject == USER else f"{whose(parts.subject)} {verb}s {rest}"
    if parts.name in {"job", "workplace"} and _WORK_AS_SAID.match(value):
        # Work said without a title: "you work in marketing", "you're retired".
        working = value.startswith(("in ", "from "))
        if parts.subject == USER:
            return f"you work {value}" if working else f"you're {value}"
        return f"{whose(parts.subject)} {'works' if working else 'is'} {value}"
    if parts.name == "location" and value[:1].isdigit():  # an address: "at 12 Elm Street"
        who = "you live" if parts.subject == USER else f"{whose(parts.subject)} lives"
        return f"{who} at {value}"
    if parts.name == "event" and _SOMEONES.match(value):  # "Ben's wedding is in June"
        return value
    if parts.subject == USER:
        return attribute.you.format(v=value, item=item, attr=parts.attribute)
    return attribute.other.format(
        s=whose(parts.subject), v=value, item=item, attr=parts.attribute
    )


def describe_memory(memory: Memory) -> str:
    """Say a long-term memory to the user (as :func:`describe_fact`)."""
    key = fact_key(memory.subject, memory.attribute, memory.text)
    return describe_fact(Fact(key=key, value=memory.text, turn=0))


def memory_facts(memories: Iterable[Memory]) -> tuple[Fact, ...]:
    """Return the current ones of ``memories`` as the facts rules read.

    A fact's key is its memory's (an event's is the event: ``event:flight to tokyo``), unless
    that is the slot it shares with another attribute (a dislike is kept in its like's slot).
    An unconfirmed memory (said with a hedge) is a hedged fact. The user's own facts come
    first, then those of the people in their life, each oldest first (by when it became true),
    as a session's do: the rules read the last said as the one that holds ("I don't like sushi
    any more" after "my favourite food is sushi").
    """
    return tuple(
        Fact(
            key=m.key
            if parse_key(m.key).attribute == m.attribute
            else fact_key(m.subject, m.attribute, m.text),
            value=m.text,
            turn=0,
            mode="hedged" if m.status == "candidate" else "stated",
        )
        for m in sorted(memories, key=lambda m: (not m.about_user, m.valid_from, m.created_at))
        if m.valid_until is None
    )


def render_memory(memory: Memory) -> str:
    """Return a memory as a packet shows it to a reply engine: ``location: Porto``,
    ``sister Mia, location: Porto``; a superseded value says until when it held, an unconfirmed
    one says so."""
    attribute = memory.attribute.replace(":", " ")
    about = attribute if memory.about_user else f"{memory.subject}, {attribute}"
    line = f"{about}: {memory.text}"
    if memory.valid_until is not None:
        line += f" (until {memory.valid_until:%Y-%m-%d})"
    if memory.status == "candidate":
        line += " (unconfirmed)"
    return line
