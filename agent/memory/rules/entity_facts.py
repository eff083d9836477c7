"""Reading what a user says of the people and pets in their life: "my sister Mia lives in
Porto", "my cat's name is Miso", "I have a dog called Rex", "I have two cats, Tom and Jerry",
"two kids, Oliver who is 9 and Poppy who is 6"; a pet said by its breed is the animal ("a golden
retriever named Biscuit": a dog).

The facts that name someone are ``relative`` or ``pet`` facts (``relative:sister mia``); what is
said of them is keyed by who they are (``sister Mia/location``). Someone named without who they
are to the user ("Sara's birthday is on the 12th of May", "Oliver has football on Tuesdays") is
keyed by the name alone (``Sara/birthday``) until the user says ("Sara is my sister"); someone
of theirs ("Mia's teacher is Mrs Brown") is a relative of theirs. Pure functions of the text,
called by :func:`agent.memory.rules.fact_extraction.extract_facts`.

Tested by ``tests/test_extraction.py`` and the "pets and relatives" family of
``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re

from agent.memory.longterm.memory_slots import USER, fact_key
from agent.memory.rules.fact_values import NAME, PRONOUN_OBJECT, fact_value
from agent.memory.rules.fact_words import (
    ALIASES,
    AWAY,
    BREEDS,
    CONDITIONS,
    COUNTED,
    DIETS,
    EVENTS,
    JOBS,
    NAME_STOP,
    NOT_NAMES,
    PEOPLE,
    PETS,
)

__all__ = ["read_entity_facts", "read_several"]

_F = re.IGNORECASE

_WHO = rf"(?P<rel>{PEOPLE}|{PETS})"
_BREED = "|".join(sorted(BREEDS, key=len, reverse=True))
_PET = re.compile(rf"(?:{PETS})$", _F)
# Someone's name after their role: capitalised words ("my sister Mia", "my friend Ann Lee").
# "my best friend is Jake": a name that ends the clause after "is".
_CALLED = (
    r"(?:'s name is|s' name is| is called| is named|'s called|'s named| called| named"
    # "I have a cat, her name is Luna", "a son and his name is Leo"
    r"|,?\s+(?:and\s+)?(?:her|his|its|their)\s+name(?:'s|\s+is)"
    # "I have a cat, she's called Pixel", "a son and he is named Leo"
    r"|,?\s+(?:and\s+)?(?:she|he|it)(?:'s|\s+is)\s+(?:called|named)|,"
    r"| is(?=\s+(?-i:[A-Z])[^\W\d_]+(?:\s+(?-i:[A-Z])[^\W\d_]+)?(?:\s*[.!]*$|,|\s+and\s)))?"
)
# "a dog too", "a cat as well": said after who they are, before their name.
_TOO = re.compile(r"^\s+(?:too|as\s+well|also)\b", _F)
# "turns 7 on Saturday", "is turning 40 next Friday": the day of their birthday.
_TURNS_ON = re.compile(
    r"^(?:turns|is\s+turning|will\s+turn|will\s+be)\s+\d{1,3}\s+(?:on\s+)?(?P<day>(?:next\s+)?"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow|today|the\s+\d{1,2}(?:st|nd|rd|th)"
    r"(?:\s+of\s+[a-z]+)?)$",
    _F,
)
# "my puppy is a beagle called Daisy": the breed said before the name.
_BREED_CALLED = re.compile(rf"\s+is\s+an?\s+(?P<breed>{_BREED})(?=\s+(?:called|named)\s)", _F)
# "O'Brien" and "Mary-Jane" are names; the "'s" of "Ava's birthday" is not part of one.
_ENTITY_NAME = re.compile(
    r"\s*([A-Z][^\W\d_]+(?:(?:'(?!s\b)|-)[^\W\d_]+)*)(?:\s+([A-Z][^\W\d_]+))?"
)
# What is said of someone: (predicate, attribute, how the value is read).
# An age said of someone: "5", "5 years old", "5 now", "10 weeks old".
_AGE = (
    r"\d{1,3}(?:\s*(?:years?\s+old|yo|(?:weeks?|months?)(?:\s+old)?))?"
    r"(?:\s+(?:now|already|today|this year|last (?:week|month|year)|recently|yesterday|actually))?"
)
# When a birthday comes that an age is turned on: "tomorrow", "next month", "on Friday".
_SOON = (
    r"(?:today|tomorrow|this\s+(?:week|weekend|month|year)|next\s+(?:week|month|year|[a-z]+day)"
    r"|on\s+[\w ]{1,20}|in\s+[a-z]+)"
)
_OTHER_PREDICATES: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(pattern, _F), attribute, kind)
    for pattern, attribute, kind in (
        (r"(?:lives|is living|is based|resides|has moved|moved|relocated)\s+(?:in|to|at(?=\s+\d))"
         r"\s+", "location", "place"),
        (r"(?:is|comes) from\s+", "hometown", "place"),
        (r"works as\s+", "job", "short"),
        # "Alex works nights", "my mum works part-time": when they work.
        (r"works\s+(?=(?:nights|days|evenings|mornings|weekends|weekdays|shifts|night\s+shifts"
         r"|part[- ]time|full[- ]time|from\s+\d|(?:mon|tues|wednes|thurs|fri|satur|sun)days?)\b)",
         "hours", "short"),
        (rf"is (?=an?\s+(?:[\w-]+\s+){{0,2}}?(?:{JOBS})\b)", "job", "place"),
        (r"(?:works|is working) (?:at|for)\s+", "workplace", "place"),
        (r"(?:birthday|bday) is\s+(?:on\s+)?", "birthday", "short"),
        (r"was born in\s+(?=(?:19|20)\d\d\b)", "born", "year"),
        (r"(?:job|profession|occupation) is\s+", "job", "short"),
        (r"age is\s+(?=\d{1,3}$)", "age", "raw"),
        (rf"is (?:actually |now |really |just )?(?={_AGE}$)", "age", "age"),
        (rf"(?:has )?(?:just )?turned\s+(?={_AGE}$)", "age", "age"),
        # "my son turns 5 tomorrow", "she's turning 40 next month": the age they are turning.
        (rf"(?:turns|is turning|will turn|will be)\s+(?=\d{{1,3}}\s+{_SOON}$)", "age", "age"),
        # "Biscuit is a labrador": a pet's breed.
        (rf"is (?=an?\s+(?:{_BREED})\b)", "breed", "short"),
        (r"is allergic to\s+", "allergy", "short"),
        (r"(?:also\s+)?speaks\s+(?=(?-i:[A-Z]))", "speaks", "short"),  # "speaks Portuguese"
        (rf"(?:has|has\s+got)\s+(?=(?:{CONDITIONS})\b)", "condition", "short"),  # "has asthma"
        (rf"is (?:a\s+|an\s+)?(?=(?:{DIETS})\b)", "diet", "short"),  # "my sister is vegan"
        # "Priya is on holiday until Monday", "my boss is off sick this week": away a while.
        (rf"is (?=(?:{AWAY})\b)", "away", "short"),
        (r"(?:doesn't|does not) like\s+|hates\s+|dislikes\s+", "dislikes", "short"),
        # "Dev doesn't eat pork", "my mum can't drink milk": what they keep away from.
        (r"(?:doesn't|does not|can't|cannot|won't|never)\s+(?=(?:eat|drink)\s)", "avoid", "short"),
        (r"(?:really\s+)?(?:likes|loves|enjoys|adores)\s+", "likes", "short"),
        (r"(?=(?:plays|is learning|learns|practises|practices)\s)", "does", "short"),
        # "Mira has swimming on Tuesdays at 5pm", "Leo goes to judo every Friday", "David phones
        # me every Sunday": a routine.
        (r"(?=(?:has|have|goes|go|does|do|plays?|takes?|swims?|trains?|attends?|phones?|calls?"
         r"|rings?|visits?|comes?|delivers?)(?:\s+[\w' -]{2,40}?)?\s+(?:on\s+"
         r"(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day(?:s|\s+(?:mornings|afternoons|evenings"
         r"|nights))|weekends|weekdays)|every\s+[a-z]+"
         r"|(?:once|twice|\d\s+times)\s+a\s+week)\b)", "does", "short"),
    )
)  # fmt: skip
# An age said before who they are: "my 3 year old daughter", "a 10-year-old dog", "my 7 yo son".
_YEARS_OLD = r"(?:[\s-]*(?:years?|yrs?)[\s-]*old|\s*yo)"
_AGED = rf"(?:(?P<aged>\d{{1,3}}){_YEARS_OLD}\s+)?"
# "my kids have swimming on Saturdays": several at once, said of all of them.
_ENTITY = re.compile(
    rf"\b(?:my|our) {_AGED}(?P<rel>{PEOPLE}|{PETS}|kids|children|grand(?:kids|children|parents))\b",
    _F,
)
# "I have a dog called Rex"; "(and) a golden retriever named Biscuit" said after it; "got a
# cat called Pixel", "just adopted a rabbit named Clover" (the "I" left out).
_HAVE_ENTITY = re.compile(
    r"(?:\b(?:i|we)(?:\s+(?:also|now|still|even))?(?:\s+have|'ve got|\s+have got|'ve"
    r"|(?:'ve|\s+have)?\s+(?:just\s+)?(?:got|adopted|rescued|bought))\s+"
    r"|^(?:(?:just|also)\s+)?(?:got|adopted|rescued)\s+"
    r"|^(?=(?:an?|one)\s+[\w ]{1,30}?\s+(?:called|named)\s))"
    rf"(?:an?|one|two|three)\s+(?:new\s+|little\s+|baby\s+)?{_AGED}{_WHO}\b",
    _F,
)
# One of several named: "Leo", with an age said after the name: "Leo who is 7", "Leo (7)",
# "Leo, 7,".
_ONE = (
    r"[A-Z][^\W\d_]+(?:\s+who(?:'s|\s+is)\s+\d{1,3}|\s*\(\d{1,3}\)"
    r"|,\s*\d{1,3}(?=\s*,|\s+and\b|\s*$))?"
)
# "I have two cats, Tom and Jerry", "we've got 3 kids: Ana, Leo and Mia", "twin boys, Arjun
# and Dev": several named at once.
_HAVE_SEVERAL = re.compile(
    rf"(?i:(?:\b(?:i|we)(?:\s+have|'ve got|\s+have got|'ve|\s+live\s+with)"
    rf"(?:\s+(?:\d|two|three|four|five|six))?"
    rf"|\b(?:my|our)(?:\s+(?:two|three|four|\d))?)\s+(?:twin\s+(?=boys|girls|sons|daughters))?"
    rf"(?P<rel>grandchildren|children|twins|{PEOPLE}|{PETS})"
    r"(?:e?s)?\b(?:\s*[,:]|\s+(?:are\s+)?(?:called|named)|\s+are)?)\s+"
    rf"(?P<names>{_ONE}(?:(?:\s*,\s*|\s+and\s+|\s*,\s*and\s+){_ONE})+)",
)
# "..., they're 7", "who are both 7": one age said of all of them, after their names.
_ALL_AGED = re.compile(
    r"\s*,?\s*(?:and\s+)?(?:they(?:'re|\s+are)|who\s+are|both\s+are|are)\s+(?:both\s+|all\s+)?"
    r"(?P<age>\d{1,3})(?:\s+years?\s+old)?\b",
    _F,
)
# Each one of several named, with the age said after the name if any.
_NAMED_AGED = re.compile(r"([A-Z][^\W\d_]+)(?:\s+who(?:'s|\s+is)\s+|\s*\(|,\s*)?(\d{1,3})?")
# "part-time at the library": where someone works, after when.
_HOURS_AT = re.compile(r"\s(?:at|for)\s+(?P<v>.+)", _F)
# "a chef at a restaurant called Fern": where someone works, after their job.
_JOB_AT = re.compile(r"^an?\s+(?:[\w-]+\s+){0,3}?(?:at|for)\s+(?P<v>.+)", _F)
# "my parents are visiting from 3 to 7 September", "my mum's visiting next weekend": their
# visit, an event of the user's.
_VISIT = re.compile(
    r"(?:(?:is|are)\s+)?(?:coming(?:\s+(?:over|round|home|to\s+(?:visit|stay)))?|visiting"
    r"|staying\s+with\s+(?:me|us))(?:\s+(?:me|us))?\s+(?P<when>(?:on|at|in|next|this|tomorrow"
    r"|tonight|today|from|for)\b.{1,60})$",
    _F,
)
# "... and works as", "..., and she's 70": where one thing said of someone ends and the next begins.
_AND = re.compile(r"\s*,?\s+and\s+", _F)
# "is a 12 year old tabby", "is a 30-year-old engineer": an age said before what they are.
_AGED_AS = re.compile(rf"is an?\s+(?P<n>\d{{1,3}}){_YEARS_OLD}\b", _F)
# "..., she's 4", "and he is 5": what follows a name said of the one named.
_PRONOUN_IS = re.compile(r"^(?:and\s+)?(?:she|he|it|they|who|which)(?:'s|\s+is|\s+are)\s+", _F)
# "Ava's school play is on Thursday at 6pm": an event of theirs on the user's calendar.
_THEIR_EVENT = re.compile(
    rf"^(?P<item>(?:[\w'-]+\s+){{0,2}}?(?:{EVENTS})(?P<many>s)?)\s+"
    r"(?:is|are|starts?|begins?|lands|arrives|leaves|departs|takes\s+off|gets\s+in)\s+"
    r"(?P<when>(?:on|at|in|next|this|tomorrow|tonight|today|the day after tomorrow)\b.{1,60})$",
    _F,
)
# "Ava's school play got moved to Friday", "Ama's dentist was pushed back to 4pm": moved.
_THEIR_EVENT_MOVED = re.compile(
    rf"^(?P<item>(?:[\w'-]+\s+){{0,2}}?(?:{EVENTS})(?P<many>s)?)\s+(?:(?:got|was|has\s+been|is)"
    r"\s+)?(?:moved|rescheduled|pushed(?:\s+back)?|postponed|changed|brought\s+forward)\s+"
    r"(?:to|till|until|for)\s+(?P<when>.{1,60})$",
    _F,
)
# "Mia has a piano recital on Saturday at 3pm": their event, said with its time.
_HAS_EVENT = re.compile(
    rf"^has\s+(?:a|an|her|his|their|got\s+an?)\s+(?P<item>(?:[\w'-]+\s+){{0,2}}?(?:{EVENTS})(?P<many>s)?)\s+"
    r"(?P<when>(?:on|at|in|next|this|tomorrow|tonight|today|the day after tomorrow)\b.{1,60})$",
    _F,
)
# "Luis is getting married in June", "my sister is having a baby in May": their wedding, a baby due.
_LIFE_EVENT = re.compile(
    r"^is\s+(?:(?P<wedding>getting\s+married)|having\s+(?:a|her|his|their)\s+"
    r"(?:first\s+|second\s+)?baby|expecting\s+(?:a|her|his|their)\s+(?:first\s+|second\s+)?baby)\s+"
    r"(?P<when>(?:on|in|next|this|at the (?:start|end) of)\b.{1,60})$",
    _F,
)
# "Emma has two kids", "my brother has 3 dogs": how many of a kind they have.
_HAS_COUNT = re.compile(
    r"^(?:has|has\s+got|'s\s+got)\s+(?P<v>\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)\s+"
    rf"(?P<k>{COUNTED})[.!]*$",
    _F,
)
# A name that opens a clause, with what is said of them after it: "Sara's birthday ...", "Oliver
# has ...".
_NAMED_ALONE = re.compile(r"^(?P<name>[A-Z][^\W\d_]+(?:-[A-Z][^\W\d_]+)?)(?=(?:'s)?\s)")
# Who someone is, said as their name: "Mum's birthday is on Friday", "Grandma lives in Cork".
_ROLE_ALONE = re.compile(
    r"^(?:mum|mom|mummy|mommy|dad|daddy|grandma|granny|gran|nan|nana|grandpa|grandad|granddad)"
    r"(?=(?:'s)?\s)",
    _F,
)
# "Mia's teacher is Mrs Brown", "my son's best friend is called Jake": someone of theirs.
_THEIR_ONE = re.compile(
    rf"^'s\s+(?P<rel>{PEOPLE}|{PETS})\s+(?:is|'s)\s+(?:called\s+|named\s+)?"
    r"(?P<name>(?-i:(?:(?:Mrs|Mr|Ms|Miss|Mx|Dr|Prof)\s+)?[A-Z][^\W\d_]+(?:\s+[A-Z][^\W\d_]+)?))"
    r"[.!]*$",
    _F,
)
# A routine's verb said of several ("they deliver"), and how it is said of one.
_PLAIN_VERB = re.compile(r"^(?:have|go|do|play|take|swim|train|attend|phone|call|ring|visit|come"
                         r"|deliver)\b")
_THIRD_PERSON = {"have": "has", "go": "goes", "do": "does"}
# "Sara is my sister", "Rex's our dog": who someone named is to the user.
_IS_MY = re.compile(
    rf"^(?P<name>[A-Z][^\W\d_]+)(?i:(?:'s|\s+is)\s+(?:my|our)\s+(?:little\s+|big\s+)?{_WHO})"
    r"[.!]*$"
)
# Words that open a sentence in capitals and name no one: "Everyone loves it", "This is from".
_NOT_SOMEONE = frozenset(
    """It This That These Those There Here He She They We You Everyone Everybody Nobody Noone
    Someone Somebody Anyone Anybody Each Both Neither Either One Nothing Everything What Which
    Who Why How Where Whatever My Our Your His Her Their Its""".split()
)
# The point after a title before a name ("Dr. Patel"), which would end the sentence.
_TITLE_DOT = re.compile(r"\b(Dr|Mr|Mrs|Ms|Mx|Prof)\.(?=\s+[A-Z])")
# "she's 12, not 11": the value put right, not part of the new one.
_NOT_OLD = re.compile(r"(?:,\s*(?:and\s+)?|\s+)not\s+(?:\d{1,3}|[^\W\d_][^,]{0,40}?)\s*[.!]*$", _F)
# "... Tom who lives in Dublin", "Rex, that loves walks": who the rest is said of.
_PRONOUN_DOES = re.compile(r"^(?:and\s+)?(?:she|he|it|they|who|which|that)\s+(?=\w)", _F)


def read_several(text: str) -> list[tuple[str, str]]:
    """Read "I have two cats, Tom and Jerry": one ``pet`` or ``relative`` fact for each name
    (from the whole message: its list of names spans what the clauses cut apart)."""
    several = _HAVE_SEVERAL.search(text)
    if several is None:
        return []
    role = " ".join(several.group("rel").casefold().split())
    role = {"children": "child", "grandchildren": "grandchild", "twins": "twin"}.get(role, role)
    role = ALIASES.get(role, role)
    attribute = "pet" if _PET.match(role) else "relative"
    named = [m.groups() for m in _NAMED_AGED.finditer(several.group("names"))]
    if any(name.casefold() in NOT_NAMES for name, _ in named):
        return []  # "my parents are French and Italian"
    facts = [(fact_key(USER, attribute, f"{role} {name}"), f"{role} {name}") for name, _ in named]
    # "Oliver who is 9 and Poppy who is 6": the ages, after the names; "they're 7": all of them.
    together = _ALL_AGED.match(text, several.end())
    if together is not None:
        named = [(name, age or together.group("age")) for name, age in named]
    facts += [(fact_key(f"{role} {name}", "age", age), age) for name, age in named if age]
    return facts


def read_entity_facts(text: str) -> list[tuple[str, str]]:
    """Read "my sister Mia lives in Porto", "my cat's name is Miso", "I have a dog called Rex".

    Returns the fact that names someone (``relative`` or ``pet``), when a name is given, and
    the fact said about them; nothing when the clause is not about someone of the user's.
    """
    text = _TITLE_DOT.sub(r"\1", text)  # "my doctor is Dr. Patel": the name is "Dr Patel"
    who = _IS_MY.match(text)
    if who is not None and not _not_someone(who.group("name")):  # "Sara is my sister"
        role = " ".join(who.group("rel").casefold().split())
        role = ALIASES.get(role, role)
        label = f"{role} {who.group('name')}"
        return [(fact_key(USER, "pet" if _PET.match(role) else "relative", label), label)]
    match = _ENTITY.search(text) or _HAVE_ENTITY.search(text)
    if match is None:
        return _named_alone(text)
    role = " ".join(match.group("rel").casefold().split())
    role = ALIASES.get(role, role)  # "my golden retriever Biscuit": a dog; "my boy": a son
    rest = _TOO.sub("", text[match.end() :])  # "we have a dog too, Rex"
    breed = _BREED_CALLED.match(rest)
    if breed is not None:  # "my puppy is a beagle called Daisy": a beagle, and her name
        rest = rest[breed.end("breed") :]
    called = re.match(_CALLED, rest, _F)
    after = rest[called.end() :] if called else rest
    name_match = _ENTITY_NAME.match(after)
    name = None
    if name_match is not None:
        words = [w for w in name_match.groups() if w]
        first = words[0].casefold() if words else ""
        if first and first not in NOT_NAMES and first not in NAME_STOP:
            name = " ".join(words)
            after = after[name_match.end() :]
    elif called is not None and called.group().strip(" ,"):
        # "my cat is called miso": a name in lower case after an explicit "called".
        plain = NAME.match(after.strip())
        if plain is not None:
            name = plain.group(1).title()
            after = after.strip()[plain.end(1) :]
    subject = f"{role} {name}" if name else role
    facts: list[tuple[str, str]] = []
    if name is not None:
        attribute = "pet" if _PET.match(role) else "relative"
        facts.append((fact_key(USER, attribute, subject), subject))
    if match.group("aged"):  # "my 3 year old daughter Zoe"
        facts.append((fact_key(subject, "age", match.group("aged")), match.group("aged")))
    if breed is not None:
        value = f"a {breed.group('breed').casefold()}"
        facts.append((fact_key(subject, "breed", value), value))
    return [*facts, *_said_of(subject, after.lstrip(" ,"))]


def _named_alone(text: str) -> list[tuple[str, str]]:
    """Read what is said of someone named without who they are to the user ("Sara's birthday
    is on the 12th of May", "Oliver has football on Tuesdays"), keyed by the name alone; a
    role said without "my" ("Mum's birthday is on Friday") is the user's."""
    role = _ROLE_ALONE.match(text)
    if role is not None:
        return read_entity_facts(f"my {role.group().casefold()}{text[role.end() :]}")
    alone = _NAMED_ALONE.match(text)
    if alone is None:
        return []
    name = alone.group("name")
    if _not_someone(name):
        return []
    return _said_of(name, text[alone.end() :].lstrip())


def _not_someone(name: str) -> bool:
    """Whether ``name`` opens a sentence without naming anyone: "This", "Everyone", "Networking"
    (a doing, not a name)."""
    folded = name.casefold()
    told = folded in NOT_NAMES or folded in NAME_STOP or name in _NOT_SOMEONE
    return told or folded.endswith("ing")


def _said_of(subject: str, rest: str) -> list[tuple[str, str]]:
    """The facts ``rest`` says of ``subject`` ("sister Mia", "dog", "Sara"): "'s birthday is
    ...", "lives in Porto and works as an architect", "has two kids", "is getting married in
    June"."""
    facts: list[tuple[str, str]] = []
    theirs = _THEIR_ONE.match(rest)
    if theirs is not None:  # "Mia's teacher is Mrs Brown": someone of theirs, by name
        role = ALIASES.get(theirs.group("rel").casefold(), theirs.group("rel").casefold())
        label = f"{role} {theirs.group('name')}"
        return [(fact_key(subject, "pet" if _PET.match(role) else "relative", label), label)]
    # "my mom's birthday is ...": what follows the possessive is said of them.
    if rest.startswith("'s ") and _predicate_at(f"is {rest[3:]}"):  # "Mia's allergic": Mia is
        rest = f"is {rest[3:]}"
    said = _PRONOUN_DOES.sub("", _PRONOUN_IS.sub("is ", rest.removeprefix("'s ")))
    said = _NOT_OLD.sub("", said)
    event = (
        _THEIR_EVENT.match(said) or _THEIR_EVENT_MOVED.match(said)
        if rest.startswith("'s ")
        else _HAS_EVENT.match(said)
    )
    if event is not None:  # "my daughter Ava's school play is on Thursday"
        item = f"{subject}'s {event.group('item')}"
        verb = "are" if event.group("many") else "is"  # "Daisy's vaccinations are on ..."
        facts.append((fact_key(USER, "event", item), f"{item} {verb} {event.group('when')}"))
        return facts
    count = _HAS_COUNT.match(said)
    if count is not None:  # "my sister has two kids": how many, of a kind
        kind = " ".join(count.group("k").casefold().split())
        facts.append((fact_key(subject, f"count:{kind}", count.group("v")), count.group("v")))
        return facts
    life = _LIFE_EVENT.match(said)
    if life is not None:  # "your brother Luis's wedding is in June"
        what, verb = ("wedding", "is") if life.group("wedding") else ("baby", "is due")
        item = f"{subject}'s {what}"
        facts.append((fact_key(USER, "event", item), f"{item} {verb} {life.group('when')}"))
        return facts
    visit = _VISIT.match(said)
    if visit is not None:  # "your sister Ana's visit is next weekend"
        item = f"{subject}' visit" if subject.endswith("s") else f"{subject}'s visit"
        facts.append((fact_key(USER, "event", item), f"{item} is {visit.group('when')}"))
        return facts
    for part in _said_parts(said):
        aged = _AGED_AS.match(part)
        if aged is not None:  # "is a 12 year old tabby", and whatever else it is
            facts.append((fact_key(subject, "age", aged.group("n")), aged.group("n")))
        turning = _TURNS_ON.match(part)
        if turning is not None:  # "turns 7 on Saturday": that is their birthday too
            day = turning.group("day")
            facts.append((fact_key(subject, "birthday", day), day))
        for predicate, attribute, kind in _OTHER_PREDICATES:
            found = predicate.match(part)
            if found is None:
                continue
            said_of = part[found.end() :]
            if attribute == "hours":  # "part-time at the library": when, then where
                said_of = _HOURS_AT.split(said_of, maxsplit=1)[0]
            if attribute == "does" and not subject.endswith("s"):  # "(they) deliver": "delivers"
                said_of = _PLAIN_VERB.sub(lambda m: _THIRD_PERSON.get(m[0], f"{m[0]}s"), said_of)
            value = fact_value(kind, said_of)
            if value is not None and not PRONOUN_OBJECT.fullmatch(value):
                facts.append((fact_key(subject, attribute, value), value))
            at = {"job": _JOB_AT, "hours": _HOURS_AT}.get(attribute)
            where = None if at is None else at.search(part[found.end() :])
            place = fact_value("place", where.group("v")) if where else None
            if place is not None:  # "is a chef at a restaurant called Fern": where, too
                facts.append((fact_key(subject, "workplace", place), place))
            break
    return facts


def _predicate_at(text: str) -> bool:
    return any(predicate.match(text) for predicate, _, _ in _OTHER_PREDICATES)


def _said_parts(said: str) -> list[str]:
    """``said`` cut where "and" goes on with another thing said of them ("lives in Vienna and
    works as an architect", "is 3 and loves tennis balls", "lives in Leeds and she's 70"), not
    inside one value ("loves cats and dogs")."""
    parts: list[str] = []
    searched = 0
    while (joint := _AND.search(said, searched)) is not None:
        rest = _PRONOUN_DOES.sub("", _PRONOUN_IS.sub("is ", said[joint.end() :]))
        if joint.start() > 0 and _predicate_at(rest):
            parts.append(said[: joint.start()])
            said, searched = rest, 0
        else:
            searched = joint.end()
    return [*parts, said]
