"""The rules that read the facts a user states, as data: one pattern per way of saying a fact,
first match wins (:data:`FACT_RULES`), and the words without which no rule reads a clause
(:data:`USER_CUE`). Read by :func:`agent.memory.rules.fact_extraction.extract_facts`; the value
after a rule's cue is read by :mod:`agent.memory.rules.fact_values` (``FactRule.kind``). The
dated things told of (events) are :mod:`agent.memory.rules.event_rules`', in this order.

Tested by ``tests/test_extraction.py`` and ``tests/test_everyday_phrasings.py`` (several
phrasings per family, written before the rule).
"""

from __future__ import annotations

import re

from agent.memory.rules.event_rules import EVENT_RULES
from agent.memory.rules.fact_patterns import (
    ADV,
    ANYMORE,
    BARE_TRAVEL,
    BIG,
    DAYS,
    DISLIKE,
    DURATION_COUNT,
    ENDED,
    GONE_FROM,
    LATELY,
    LEAD_TIME,
    LEARNING,
    LIVE,
    NEWS,
    NO_TEAM,
    NONE_OF,
    NOT_NOW,
    NOT_TAUGHT,
    SHIFTS,
    SINCE,
    THING,
    TO_SEE,
    TRAVEL,
    WHEN_OPENS,
    WORK,
    WORK_WHEN,
)
from agent.memory.rules.fact_rule import FactRule, rule
from agent.memory.rules.fact_words import (
    AWAY,
    BUSINESSES,
    CONDITIONS,
    COUNTED,
    DIETS,
    EVENTS,
    GOAL_VERBS,
    JOBS,
    LODGING,
    ONE_COUNTED,
    TRAITS,
)

__all__ = ["FACT_RULES", "USER_CUE"]

_F = re.IGNORECASE

# The first rule that reads a clause wins; order matters ("I'm from X" is no name).
FACT_RULES: tuple[FactRule, ...] = (
    # What no longer holds ends its slot's value: "I quit my job at Google", "I don't live in
    # Berlin anymore", "I'm no longer vegan" (memory_slots: ex_workplace is workplace's slot).
    rule("ex_workplace", rf"{GONE_FROM}my\s+(?:job|position|role|post|work)\s+(?:at|with|for)"
         r"\s+(?P<v>.+)", "place", cue=ENDED),
    # "I quit Acme", not "I left London": a company by its capital, left in words of work.
    rule("ex_workplace", r"\bi(?:'ve|\s+have)?(?:\s+just)?\s+(?:quit|resigned\s+from|retired"
         r"\s+from)\s+(?P<v>(?-i:[A-Z]).+)", "org", cue=ENDED),
    rule("ex_workplace", rf"\bi\s+{NOT_NOW}\s+work\s+(?:at|for)\s+(?P<v>.+?){ANYMORE}$",
         "place", cue=ENDED),
    rule("ex_workplace", r"\bi(?:'ve|\s+have)?(?:\s+just)?\s+(?:got\s+|been\s+)?(?:laid off"
         r"|fired|let go|made redundant|sacked)\s+(?:from|by|at)\s+(?P<v>.+)", "place",
         cue=ENDED),
    rule("ex_location", rf"\b(?:i|we)\s+{NOT_NOW}\s+live\s+in\s+(?P<v>.+?){ANYMORE}$",
         "place", cue=ENDED),
    # "I used to live in Rome", "I used to work at Google": what held, not what holds.
    rule("ex_location", r"\b(?:i|we)\s+used\s+to\s+live\s+in\s+(?P<v>.+)", "place", cue=ENDED),
    rule("ex_workplace", rf"\bi\s+used\s+to{WORK}\s+(?:at|for)\s+(?P<v>.+)", "place",
         cue=ENDED),
    rule("ex_location", r"\b(?:i|we)(?:'ve|\s+have)?(?:\s+just)?\s+moved\s+(?:away\s+from"
         r"|out\s+of)\s+(?P<v>.+)", "place", cue=ENDED),
    rule("ex_diet", rf"^(?:i'm|i am|im)\s+no longer\s+(?:an?\s+)?(?P<v>{DIETS})\b", "raw",
         cue=ENDED),
    rule("ex_diet", rf"^(?:i'm|i am|im)\s+not\s+(?:an?\s+)?(?P<v>{DIETS})\s+any\s?more\b",
         "raw", cue=ENDED),
    rule("ex_diet", rf"\bi(?:'ve|\s+have)?\s+(?:stopped|quit)\s+being\s+(?:an?\s+)?"
         rf"(?P<v>{DIETS})\b", "raw", cue=ENDED),
    rule("timezone", r"\bmy time\s*zone(?:'s|\s+is)\s+(?:now\s+)?(?P<v>.+)", "zone"),
    rule("timezone", r"\b(?:set|change|switch|update) my time\s*zone to\s+(?P<v>.+)", "zone"),
    rule("timezone", r"\bi(?:'m|\s+am)\s+(?:in|on)\s+(?:the\s+)?(?P<v>.+?)\s+time(?:zone)?"
         r"(?:\s+now)?$",
         "zone"),
    rule("name", r"\bmy name(?:'s|\s+is)\s+(?P<v>.+)", "name"),
    rule("name", r"\bcall me\s+(?P<v>.+)", "name", in_questions=True),
    rule("name", r"^(?:the\s+)?name(?:'s|\s+is)\s+(?P<v>.+)", "name"),
    rule(
        "name",
        r"\b(?:everyone|everybody|people|friends|my friends|they|most people)\s+calls?\s+me"
        r"\s+(?P<v>.+)",
        "name",
    ),
    rule("name", r"\bi go by\s+(?P<v>.+)", "name"),
    rule("name", r"\bi(?:'d)?\s+(?:prefer|like|rather)\s+(?:to\s+)?(?:be|being)\s+"
         r"(?:called|named)\s+(?P<v>.+)", "name"),
    rule("name", r"^(?:hi|hello|hey)?[,!. ]*i(?:'m|\s+am)\s+(?:called|named)\s+(?P<v>.+)", "name"),
    # "it's Sam here", "this is Priya speaking": a name, said as on the phone.
    rule("name", r"^(?:it's|it is|this is)\s+(?P<v>\S+\s+(?:here|speaking))[\s.!]*$",
         "strict_name"),
    # "I've booked the hotel for two nights in York", "we're staying at the Hilton in York next
    # weekend", "I'm staying in a cottage in Cornwall": a stay, where or when said (not "I
    # booked the hotel", nor "staying in tonight").
    rule("plan", r"^(?:i|we)(?:'ve|\s+have)?\s+(?:just\s+|finally\s+|already\s+|also\s+)?"
         r"(?:booked|reserved)\s+(?P<v>(?:a|an|the|our|my)\s+(?:[\w'&-]+\s+){0,2}?"
         rf"(?:{LODGING})\s+(?:in|at|for|on|near|from|this|next|tomorrow)\b.{{1,80}})$", "phrase",
         said="a stay at {v}"),
    rule("plan", r"^(?:i(?:'m|\s+am)|we(?:'re|\s+are))\s+(?:going\s+to\s+be\s+|also\s+|still"
         r"\s+)?staying\s+(?P<p>at|in)\s+(?P<v>(?:(?:a|an|the|our|my)\s+(?:[\w'&-]+\s+){0,2}?"
         rf"(?:{LODGING})|(?:the\s+)?(?-i:[A-Z])[\w'&-]*)\b.{{0,80}})$", "phrase",
         said="a stay {p} {v}"),
    *EVENT_RULES,
    rule("plan", rf"^(?:{LEAD_TIME})?(?:i(?:'m|\s+am)|we(?:'re|\s+are))\s+"
         rf"(?P<v>going\s+[^\W\d_]+ing\b.{{0,60}})$",
         "phrase"),
    # "we're going to the cinema tomorrow night", "I'm going out for dinner on Friday".
    rule("plan", rf"^(?:{LEAD_TIME})?(?:i(?:'m|\s+am)|we(?:'re|\s+are))\s+(?P<v>going\s+(?:to\s+"
         r"(?:the\s+)?(?:cinema|theatre|theater|movies|pictures|pub|gym|park|beach|zoo|museum|gallery"
         r"|match|game|concert|gig|party|restaurant|shops|races|football|opera|ballet|panto)|out)"
         rf"\b.{{0,40}}?\s+(?:{WHEN_OPENS})\b.{{0,40}})$", "phrase"),
    # "we're getting a dog next month", "I'm buying a new car in the spring": a thing ahead.
    rule("plan", rf"^(?:{LEAD_TIME})?(?:i(?:'m|\s+am)|we(?:'re|\s+are))\s+(?P<v>(?:getting|buying)"
         rf"\s+(?:a|an|our|my|some)\s+[\w' -]{{1,40}}?\s+(?:{WHEN_OPENS}|soon)\b.{{0,40}})$",
         "phrase"),
    # "I'm going to visit my parents at Christmas", "we're seeing Tom on Friday": a plan to see
    # someone, said with its time (without one, "I'm going to see what happens" is no plan).
    rule("plan", rf"^(?:{LEAD_TIME})?(?:i(?:'m|\s+am)|we(?:'re|\s+are)){ADV}\s+{TO_SEE}"
         r"[\w'-]+(?:\s+[\w'-]+){0,4}?\s+(?:(?:on|at|in|next|this|tomorrow|tonight|for|over"
         r"|during)\b|(?:mon|tues|wednes|thurs|fri|satur|sun)day\b).{0,40})$", "phrase"),
    # "we're moving to Bristol in March": a move ahead (not "I moved to ...": where one lives).
    rule("plan", rf"^(?:{LEAD_TIME})?(?:i(?:'m|\s+am)|we(?:'re|\s+are)){ADV}\s+(?P<v>moving\s+"
         r"(?:house\s+|back\s+)?to\s+\w.{0,60})$", "phrase"),
    # "we're moving house on Saturday", "I'm moving out next month": the move, when said.
    rule("plan", rf"^(?:{LEAD_TIME})?(?:i(?:'m|\s+am)|we(?:'re|\s+are)){ADV}\s+(?P<v>moving\s+"
         rf"(?:house|home|flat|out|in\s+together|in\s+with\s+[\w' ]{{1,30}}?)\s+{WHEN_OPENS}\b"
         r".{1,60})$", "phrase"),
    rule("plan", rf"^{LEAD_TIME}(?:i(?:'m|\s+am)|we(?:'re|\s+are)){ADV}\s+{TO_SEE}"
         r"[\w'-]+(?:\s+[\w'-]+){0,4})$", "phrase"),
    rule("age", r"^(?:i'm|i am|im)\s+(?P<v>\d{1,3})(?:\s*(?:years?\s+old|yo|y/o))?$", "raw"),
    rule("age", r"^i(?:'ve)?\s+(?:just\s+)?turned\s+(?P<v>\d{1,3})(?:\s+(?:today|this year))?$",
         "raw"),
    # "I'm vegetarian but I eat fish", "I'm vegan except for honey": what it allows, kept with it.
    rule("diet", rf"^(?:i'm|i am|im|we're|we are|i(?: have|'ve got)(?=\s+c[oe]*liac))"
         rf"(?:\s+an?)?\s+"
         rf"(?P<v>{DIETS})\b(?:,?\s+(?:except(?:\s+for)?|apart\s+from|other\s+than|but\s+i\s+"
         r"(?:still\s+|do\s+|also\s+)?(?:eat|drink))\s+(?P<but>[^\W\d_][\w -]{0,40}?)"
         r"(?:\s+(?:sometimes|occasionally|now\s+and\s+then|too|as\s+well|though))?\s*$)?", "raw"),
    # "I've been sober for 2 years", "we've been vegan since 2019": the diet, and how long.
    rule("diet", rf"^(?:i|we)(?:'ve|\s+have)\s+been\s+(?P<v>{DIETS})\s+(?:for|since)\b", "raw",
         alongside=True),
    # "I run a small bakery in Bristol", "I own a cafe": the business is the work.
    rule("job", r"^i(?:\s+(?:now|also|actually))?\s+(?P<v>(?:run|own|co-own|manage)\s+"
         rf"(?:a|an|my\s+own|our|the|my)\s+(?:[\w'&-]+\s+){{0,3}}?(?:{BUSINESSES})\b.*)","phrase"),
    rule("job", rf"^(?:i'm|i am|im)(?:\s+(?:now|currently|also))?\s+(?P<v>an?\s+(?:[\w-]+\s+)"
         rf"{{0,2}}?(?:{JOBS}))\b", "short",
         alongside=True),
    # Studies: "I'm a student at UCL" (where, not a workplace), "I study law", "I'm studying
    # medicine at Leeds".
    rule("school", r"^(?:i'm|i am|im)\s+(?:now\s+|currently\s+)?an?\s+(?:[\w-]+\s+){0,2}?"
         r"student\s+(?:at|in)\s+(?P<v>.+)", "place"),
    rule("study", r"^i(?:'m|\s+am)?\s+(?:now\s+|currently\s+)?(?:study|studying|majoring\s+in"
         r"|major\s+in|reading(?!\s+(?:a|an|the|this|that|my|some)\s))\s+(?!(?:for|hard|a\s+lot|at|with|abroad|online|tonight|today)\b)"
         r"(?P<v>[^\W\d_][\w -]{0,40}?)(?:\s+(?:at|in)\s+.+)?$", "short", alongside=True),
    rule("school", r"^i(?:'m|\s+am)?\s+(?:now\s+|currently\s+)?(?:study|studying)\s+.+?\s+at\s+"
         r"(?P<v>.+)", "place"),
    rule("workplace", rf"^(?:i'm|i am|im)(?:\s+(?:now|currently|also))?\s+an?\s+(?:[\w-]+\s+)"
         rf"{{0,2}}?(?:{JOBS})\s+(?:at|for)"
         r"\s+(?P<v>.+)", "place"),
    # "I'm a software developer from Gdansk": where they are from, after the job.
    rule("hometown", rf"^(?:i'm|i am|im)\s+an?\s+(?:[\w-]+\s+){{0,2}}?(?:{JOBS})\s+from\s+"
         r"(?P<v>.+)", "place"),
    # "we're going on holiday to Crete in June", "I'm going away to Cornwall": a trip too.
    rule("plan", rf"{TRAVEL}(?:go(?:ing)?|fly(?:ing)?|travel(?:l)?(?:ing)?|head(?:ing)?"
         r"|driv(?:e|ing)|off|sail(?:ing)?)(?:\s+away|\s+on\s+(?:a\s+|our\s+|my\s+)?(?:holiday"
         r"|vacation|honeymoon|getaway|break|road\s+trip))?\s+to\s+(?P<v>.+)", "trip"),
    rule("plan", rf"{TRAVEL}(?:a\s+|our\s+|my\s+)?trip\s+to\s+(?P<v>.+)", "trip"),
    rule("plan", r"\b(?:i|we)(?:'ll|\s+will)\s+be\s+in\s+(?P<v>.+)", "trip"),
    rule("name", r"^(?:i'm|i am|im)\s+(?P<v>.+)", "strict_name"),
    # "im jake btw": typed in lower case, a name known by where it stands (after a greeting:
    # _GREETED_NAME).
    rule("name", r"^(?:i'm|i am|im)\s+(?P<v>[^\W\d_]+)\s+(?:btw|by the way|here)\b",
         "casual_name"),
    # "im sam, 25, from manchester": a name, then an age.
    rule("name", r"^(?:i'm|i am|im)\s+(?P<v>[^\W\d_]+),\s*\d{1,2}\b", "casual_name",
         alongside=True),
    # "I just moved to Amsterdam for a new job at Booking": the workplace, and the move after it.
    rule("workplace", r"\b(?:moved|relocated|moving|relocating|came)\b[\w' ]{0,40}?\s+for\s+a\s+"
         r"(?:new\s+)?(?:job|role|position)\s+(?:at|with)\s+(?P<v>(?-i:[A-Z]).+)", "place",
         alongside=True),
    # "we've been together for 5 years", "I've lived here since 2019", "I've worked at the bank
    # for 20 years": how long something has held, as said.
    rule("lasting", r"^(?:i|we)(?:'ve|\s+have)\s+(?:now\s+|already\s+|actually\s+)?(?P<v>(?:been"
         r"|lived|worked|known|had|played|studied|taught|run|owned)\s+.{1,60}?\s+(?:for\s+"
         r"(?:about\s+|almost\s+|nearly\s+|over\s+|more\s+than\s+|the\s+(?:last|past)\s+)?"
         rf"(?:\d+|{DURATION_COUNT})\s+(?:years?|months?|weeks?|days?|decades?)"
         r"|since\s+\S.{0,30}))[.!]*$", "raw", alongside=True),
    # "I live with two flatmates, Zoe and Sam", "I live alone": who the user lives with.
    rule("household", r"^i\s+(?:still\s+)?live\s+(?P<v>(?:with\s+.+|alone|on\s+my\s+own"
         r"|by\s+myself))", "raw", alongside=True),
    # "we live in a small cottage in Harrogate": the place the home is in.
    rule("location", rf"\b(?:i|we){LIVE}\s+in\s+(?:an?|the|our|my)\s+(?:[\w-]+\s+){{0,3}}?"
         r"(?:house|home|flat|cottage|apartment|bungalow|village|town|city|suburb|place)"
         r"\s+(?:in|near|outside|just outside)\s+(?P<v>[A-Z].+)", "place"),
    rule("location", rf"\b(?:i|we){LIVE}\s+in\s+(?P<v>.+)", "place"),
    rule("location", rf"\b(?:i|we){LIVE}\s+at\s+(?P<v>\d{{1,4}}[a-z]?\s+[^\W\d_].+)", "short"),
    rule("location", rf"\b(?:i|we)(?:'ve|\s+have)?{ADV}\s+(?:moved|relocated)\s+(?:in)?to\s+"
         r"(?:an?|the|our|my)\s+(?:[\w-]+\s+){0,3}?(?:house|home|flat|cottage|apartment|place"
         r"|bungalow)\s+(?:in|near|outside|just outside)\s+(?P<v>[A-Z].+)", "place"),
    # "I recently relocated to Leeds", "I moved back to Cork"; "we've just moved to Turin" (not
    # "we moved to the garden": a home a "we" moves to is a name).
    rule("location", rf"\bwe(?:'ve|\s+have)?{ADV}{LATELY}\s+(?:moved|relocated)(?:\s+back)?"
         r"\s+to\s+(?!(?:an?|the|my|our|this|that|his|her|their)\s+(?-i:[a-z]))(?P<v>.+)",
         "place"),
    rule("location", rf"\bi(?:'ve|\s+have)?{ADV}{LATELY}\s+(?:moved|relocated)(?:\s+back)?"
         r"\s+to\s+(?!(?:an?|the|my)\s+(?:new\s+)?"
         r"(?:job|role|team|position|department|school|class|company|desk|office)\b)(?P<v>.+)",
         "place"),
    rule("location", r"\bmy (?:new |current |home )?address(?:'s|\s+is)\s+(?:now\s+)?(?P<v>.+)",
         "short"),
    # "I'm in New York this week for a conference", "I'm in Paris until Friday", "I'm away until
    # Monday", "I'm off on Friday", "I'm working from home tomorrow": a stay, not a home.
    rule("away", r"^i(?:'m|\s+am)\s+(?:currently\s+|now\s+)?(?P<v>(?:in|at)\s+(?-i:[A-Z])"
         r"[\w' -]{0,40}?\s+(?:until|till|til|this|next|for\s+the)\b.*"
         rf"|(?:{AWAY})\b.*|(?:off|working\s+from\s+home)\s+(?:on\s+[a-z]+day|tomorrow|today"
         r"|this\s+[a-z]+|next\s+[a-z]+|until\s+.+)\b.*)$", "short"),
    rule("hometown", rf"\bi(?:'m|\s+am|\s+come){ADV}\s+from\s+(?P<v>.+)", "place"),
    # "I am coming from Japan" (a learner's "I come from"); not "coming from the office".
    rule("hometown", r"\bi(?:'m|\s+am)\s+coming\s+from\s+(?P<v>(?-i:[A-Z]).+)", "place"),
    rule("plan", rf"\b(?:i(?:'m|\s+am)|we(?:'re|\s+are)){ADV}\s+planning\s+(?P<v>.+)", "phrase"),
    rule("plan", rf"\bi{ADV}\s+plan\s+(?P<v>to\s+.+)", "phrase"),
    rule("job", rf"\bi{ADV}{WORK}\s+as\s+(?P<v>.+?)(?:\s+(?:at|for|in)\s+.+)?$", "short",
         alongside=True),
    # When they work: "I work Monday to Friday, 9 to 5", "I work nights", "my hours are 8 to 4"
    # ("I work part-time at Tesco": the workplace too).
    rule("hours", rf"^i\s+(?:usually\s+|normally\s+|mostly\s+|now\s+|only\s+)?work\s+"
         rf"(?P<v>(?:{WORK_WHEN}).*?)(?:\s+now)?(?:\s+(?:at|for|as)\s+.+)?$",
         "short", alongside=True),
    rule("hours", r"^my\s+(?:working\s+|work\s+)?(?:hours|shifts?)\s+(?:is|are)\s+"
         r"(?P<v>.+)", "short"),
    # "I got moved to day shifts", "I've switched to part-time", "I'm on nights now", "I'm
    # working days now": when they work from now on (it replaces what was said before).
    rule("hours", r"^i(?:'ve|\s+have|'m|\s+am|\s+was)?(?:\s+(?:just|now|finally|recently))?"
         r"(?:\s+(?:got|been|gotten))?\s+(?:moved|switched|changed|transferred|put|swapped|went"
         rf"|gone)\s+(?:back\s+)?(?:on(?:\s*to)?|to)\s+(?P<v>{SHIFTS})(?:\s+now|{SINCE})?$",
         "short"),
    rule("hours", r"^i(?:'m|\s+am)\s+(?:now\s+|back\s+|still\s+)?(?:on|working)\s+"
         rf"(?P<v>{SHIFTS})(?:\s+now|{SINCE})?$", "short"),
    rule("workplace", rf"\bi{ADV}{WORK}\s+as\s+.+?\s+(?:at|for)\s+(?P<v>.+)", "place"),
    rule("job", r"\bmy (?:job|profession|occupation) is\s+(?P<v>.+)", "short"),
    # "I teach maths at a high school": a maths teacher, at a high school.
    rule("job", rf"\bi{ADV}\s+teach\s+(?P<v>(?!{NOT_TAUGHT})[^\W\d_][\w-]*"
         rf"(?:\s+(?!{NOT_TAUGHT})[^\W\d_][\w-]*)?)", "teacher", alongside=True),
    rule("workplace", rf"\bi{ADV}\s+teach\b(?:\s+[\w-]+){{0,2}}?\s+at\s+(?P<v>.+)", "place"),
    # "I work at Airbus as an engineer": the title said after the place.
    rule("job", rf"\bi{ADV}{WORK}\s+(?:at|for|in)\s+.+?\s+as\s+(?P<v>an?\s+.+)", "short",
         alongside=True),
    # "I work as a vet in Leeds", "I work in London as a nurse": the town one works in.
    rule("workplace", rf"\bi{ADV}{WORK}\s+(?:as\s+.+?\s+)?(?P<v>in\s+(?-i:[A-Z][a-z])[\w'-]*"
         r"(?:\s+(?-i:[A-Z])[\w'-]*)*)(?:\s+as\s+.+)?$", "short"),
    # "I work for a startup in London": the town kept with the place.
    rule("workplace", rf"\bi{ADV}{WORK}\s+(?:at|for)\s+(?!home\b)(?P<v>[^,;]{{1,60}}?\s+in\s+"
         r"(?-i:[A-Z][a-z][\w'-]*(?:\s+[A-Z][\w'-]*)?))\b", "short"),
    rule("workplace", rf"\bi{ADV}{WORK}\s+(?:at|for)\s+(?!home\b)(?P<v>.+)", "place"),
    rule("workplace", rf"\bi(?:'m|\s+am){ADV}\s+employed\s+(?:at|by)\s+(?P<v>.+)", "place"),
    rule("workplace", rf"\bi(?:'m|\s+am){ADV}\s+working\s+(?:at|for)\s+(?!home\b)(?P<v>.+)",
         "place"),
    rule("workplace", r"\bmy (?:employer|company|workplace) is\s+(?P<v>.+)", "place"),
    # "I have a part-time job at a cafe", "I've got a weekend job at the garden centre".
    rule("hours", r"^i(?:\s+have|'ve\s+got|\s+got)\s+an?\s+(?:new\s+)?"
         r"(?P<v>part[- ]time|full[- ]time)\s+job\b", "short", alongside=True),
    rule("workplace", r"^i(?:\s+have|'ve\s+got|\s+got)\s+an?\s+(?:new\s+)?(?:[\w-]+\s+){0,2}?job"
         r"\s+(?:at|in|with|for)\s+(?P<v>.+)", "place"),
    # Work said without a title: "I work in marketing" (a field, not "in London"), "I'm
    # retired", "I work from home".
    rule("job", rf"\bi{ADV}{WORK}\s+(?P<v>in\s+(?-i:(?![A-Z][a-z]))(?!(?:the|a|an|my)\b)"
         r"[\w&/-]+(?:\s+[\w&/-]+)?)(?:\s+(?:at|for)\s+.+)?$", "short", alongside=True),
    rule("workplace", rf"\bi{ADV}{WORK}\s+in\s+[\w&/ -]{{1,40}}?\s+(?:at|for)\s+(?P<v>.+)",
         "place"),
    rule("job", r"^(?:i'm|i am|im)\s+(?:now\s+|currently\s+)?(?P<v>self[- ]employed|retired"
         r"|unemployed|between jobs|out of work|a stay[- ]at[- ]home (?:mom|mum|dad|parent))\b",
         "raw"),
    rule("workplace", r"\bi\s+(?:mostly\s+|now\s+)?work\s+(?P<v>from\s+home)\s*[.!]*$", "raw"),
    # Work told as news: "I started a new job at Spotify", "I got hired by Acme", "I've
    # joined Google as a designer" (a company, by its capital: not "I joined a gym").
    rule("job", rf"{NEWS}(?:got|landed|started|taken|accepted)\s+(?:a\s+|my\s+)?(?:new\s+)?"
         rf"(?:job|position|role|post)\s+as\s+(?P<v>an?\s+.+?)(?:\s+(?:at|with|for)\s+.+)?$",
         "short", alongside=True),
    rule("workplace", rf"{NEWS}(?:got|landed|started|taken|accepted)\s+(?:a\s+|my\s+)?"
         r"(?:new\s+)?(?:job|position|role|post)\s+(?:as\s+.+?\s+)?(?:at|with|for)\s+(?P<v>.+)",
         "place"),
    rule("workplace", rf"{NEWS}(?:got\s+|been\s+)?hired\s+(?:by|at)\s+(?P<v>.+)", "place"),
    rule("job", rf"{NEWS}joined\s+[A-Z][\w&'-]*(?:\s+[A-Z][\w&'-]*)*\s+as\s+(?P<v>an?\s+.+)",
         "short", alongside=True),
    rule("workplace", rf"{NEWS}joined\s+(?P<v>[A-Z].+)", "org"),
    # "I started at Spotify last week", "I've just started working for Acme": a company, by
    # its capital (not "I started at 9").
    rule("workplace", rf"{NEWS}(?:started|began)\s+(?:working\s+|work\s+)?(?:at|for)\s+"
         r"(?P<v>(?-i:[A-Z]).+)", "org"),
    rule("favourite", r"\bmy (?:favou?rite|fave?|go-to)\s+(?P<k>[^\W\d_]+(?:\s[^\W\d_]+)?)\s+"
         r"(?:is|are)\s+(?P<v>.+)", "short"),
    rule("favourite", r"^(?!(?:that|this|it|these|those|which)\b)(?P<v>[^\W\d_][\w' -]{0,40}?)"
         r"\s+(?:is|are)\s+(?:definitely\s+)?my\s+(?:all-time\s+)?(?:favou?rite|fave?)\s+"
         r"(?P<k>[^\W\d_]+(?:\s[^\W\d_]+)?)$", "short"),
    # "I have 3 kids", "we've got two dogs": how many, before or without their names.
    rule("count", r"^(?:i|we)(?:\s+have|'ve)?(?:\s+got)?\s+(?P<v>\d{1,2}|two|three|four|five|six"
         rf"|seven|eight|nine|ten)\s+(?P<k>{COUNTED})\s*$", "raw"),
    # "I speak French and Spanish", "I'm fluent in German", "I can speak a little Japanese".
    rule("speaks", r"^i\s+(?:also\s+|can\s+(?:also\s+)?)?speak\s+(?P<v>(?:(?:a\s+little|some"
         r"|fluent|basic)\s+)?(?-i:[A-Z]).+)", "short"),
    rule("speaks", r"^i(?:'m|\s+am)\s+(?:also\s+)?fluent\s+in\s+(?P<v>(?-i:[A-Z]).+)", "short"),
    # "I'm a night owl", "I'm more of a morning person", "I'm left-handed": what one is like,
    # one value of each kind ("I'm a morning person" after "a night owl" says it anew).
    *(rule(f"trait:{kind}", r"^i(?:'m|\s+am)\s+(?:(?:quite|very|such|totally|definitely|really"
           rf"|always\s+been|more\s+of|a\s+bit\s+of)\s+)*(?P<v>(?:an?\s+)?(?:{said}))"
           r"(?:\s+(?:these\s+days|nowadays|now|really))?[.!]*$", "raw")
      for kind, said in TRAITS.items()),
    # "I have asthma", "I've got type 1 diabetes", "I'm diabetic": a condition lived with.
    rule("condition", rf"^i(?:'ve|\s+have)?(?:\s+got)?\s+(?P<v>{CONDITIONS})\b", "short"),
    *(rule("condition", rf"^i(?:'m|\s+am)\s+{said}\b", "short", said=condition)
      for said, condition in (("diabetic", "diabetes"), ("asthmatic", "asthma"),
                              ("epileptic", "epilepsy"))),
    # "I have a dog", "we've just adopted a kitten", "I have a younger sister": one, unnamed.
    rule("count", r"^(?:i|we)(?:\s+(?:also|now|still))?(?:\s+have|'ve|\s+have\s+got|'ve\s+got|"
         r"(?:'ve|\s+have)?\s+(?:just\s+)?(?:got|adopted|rescued))\s+(?:a|an|one)\s+(?:new\s+"
         rf"|little\s+|baby\s+|younger\s+|older\s+|big\s+)?(?P<k>{ONE_COUNTED})\s*[.!]*$", "raw",
         said="one"),
    # "I don't have any kids", "we have no pets", "I'm not allergic to anything": none of a kind.
    rule("count", r"^(?:i|we)(?:\s+(?:don't|do not|dont)\s+have(?:\s+any)?|\s+have\s+no"
         rf"|'ve\s+got\s+no|\s+have\s+got\s+no)\s+(?P<k>{NONE_OF})\s*$", "raw", said="no"),
    rule("count", r"^i(?:'m|\s+am)\s+not\s+allergic\s+to\s+anything\s*$(?P<k>)", "raw",
         said="no", item="allergies"),
    # "I support Arsenal", "I root for the Lakers", "I'm an Arsenal supporter": a team, by its
    # capital (not "I support the idea").
    rule("favourite:team", r"^i\s+(?:still\s+|also\s+)?(?:support|root\s+for|cheer\s+(?:for|on))"
         rf"\s+(?!{NO_TEAM})(?P<v>(?:the\s+)?(?-i:[A-Z])[\w' -]{{0,40}})$", "short"),
    rule("favourite:team", rf"^(?:i'm|i am|im)\s+an?\s+{BIG}(?!{NO_TEAM})(?P<v>(?-i:[A-Z])"
         r"[\w' -]{0,30}?)\s+(?:supporter|season[- ]ticket\s+holder)$", "short"),
    # "I'm a Taylor Swift fan", "I'm a big Marvel fan"
    rule("likes", rf"^(?:i'm|i am|im)\s+an?\s+{BIG}(?P<v>(?-i:[A-Z])[\w' -]{{0,30}}?)\s+fan$",
         "liked"),
    rule(
        "birthday",
        r"\bmy (?:birthday|bday|date of birth)(?:'s|\s+is)\s+(?:actually\s+|really\s+)?"
        r"(?:on\s+)?(?P<v>.+)",
        "short",
    ),
    rule("birthday", r"\bi was born on\s+(?P<v>.+)", "short"),
    # "it's my birthday today!": today's day of the year (fact_dates).
    rule("birthday", r"^(?:it'?s|today\s+is|today'?s)\s+my\s+birthday(?:\s+today)?[\s!.,]*$",
         "raw", said="today"),
    # "I was born in 1990", "I was born in Leeds in 1962": the year, and where.
    rule("born", r"\bi was born in\s+(?:[^\W\d][\w ]{0,40}?\s+in\s+)?(?P<v>(?:1[89]|20)\d\d)\b",
         "raw", alongside=True),
    rule("hometown", r"\bi was born in\s+(?!(?:1[89]|20)\d\d\b)(?P<v>.+)", "place"),
    # "I grew up in Cork", "I was raised in Kerala": where they are from.
    rule("hometown", r"\bi\s+(?:grew\s+up|was\s+(?:born\s+and\s+)?(?:raised|brought\s+up))\s+"
         r"in\s+(?!(?:the|a)\s+(?:countryside|city|village|house|family)\b)(?P<v>.+)", "place"),
    rule("allergy", rf"\bi(?:'m|\s+am){ADV}\s+allergic\s+to\s+(?P<v>.+)", "short"),
    rule("allergy", r"\bi(?:'ve|\s+have)(?:\s+got)?\s+(?:an?\s+)?(?:severe\s+|bad\s+|mild\s+)?"
         r"(?P<v>[^\W\d_]+(?:\s[^\W\d_]+)?)\s+allergy\b", "short"),
    rule(
        "avoid",
        rf"\bi{ADV}\s+(?:can't|cannot|can not|don't|do not|never)\s+"
        r"(?P<v>(?:eat|drink|have\s+(?:any\s+)?(?=(?:dairy|gluten|nuts|peanuts|eggs?|fish"
        r"|shellfish|seafood|meat|pork|beef|alcohol|lactose|wheat|caffeine|sugar|soy|sesame)\b))"
        r"\s*.+)",
        "short",
    ),
    # "I quit smoking last year", "I've given up drinking": what the user no longer does.
    *(rule("avoid", rf"^i(?:'ve|\s+have)?(?:\s+just)?\s+(?:quit|stopped|given\s+up|gave\s+up)\s+"
           rf"{habit}\b", "short", said=said) for habit, said in (("smoking", "smoke"),
                                                                ("drinking", "drink alcohol"),
                                                                ("vaping", "vape"))),
    rule(
        "decision", rf"\bi(?:'ve|\s+have)?{ADV}\s+decided\s+(?P<v>(?:to|that|on)\s+.+)", "phrase"
    ),
    rule("goal", r"\bmy (?:main |big |biggest )?(?:goal|dream|ambition|aim) is\s+(?P<v>.+)",
         "phrase"),
    rule("goal", rf"\bi(?:'d|{ADV}\s+would)\s+(?:really\s+)?(?:like|love)\s+"
         rf"(?P<v>to\s+{GOAL_VERBS}\b.+)", "phrase"),
    rule("goal", rf"\bi{ADV}\s+(?:want|hope|dream|aim)\s+(?P<v>to\s+{GOAL_VERBS}\b.+)", "phrase"),
    # "I'm saving up for a new laptop": a goal, to save for it.
    rule("goal", r"\bi(?:'m|\s+am|'ve\s+been|\s+have\s+been)\s+saving(?:\s+up)?\s+"
         r"(?P<v>(?:for|to)\s+.+)", "phrase", said="to save up {v}"),
    rule("goal", rf"\bi(?:'m|\s+am|'ve\s+been|\s+have\s+been){ADV}\s+(?:hoping|aiming|trying)\s+"
         rf"(?P<v>to\s+{GOAL_VERBS}\b.+)", "phrase"),
    # "I'm thinking of switching jobs", "we're considering getting a dog": not decided yet (the
    # value as said: "moving to Spain").
    rule("considering", r"\b(?:i(?:'m|\s+am|\s+was|'ve\s+been|\s+have\s+been)|we(?:'re|\s+are"
         r"|\s+were))(?:\s+(?:really|seriously|also|still))?\s+(?:thinking\s+(?:of|about)"
         r"|considering)\s+(?P<v>[^\W\d_]{2,}ing\b.*)", "phrase", said="{v}"),
    rule("routine", rf"^(?P<v>(?:every\s+{DAYS}|on\s+{DAYS}s)\b.{{0,30}}?\bi\s+.+)", "phrase"),
    # "bin day is Thursday", "recycling day is every other Monday": a day of the week's chore.
    rule("routine", rf"^(?P<v>(?:bin|bins|rubbish|recycling|garbage|trash|collection|cleaning"
         rf"|laundry|market|shopping)\s+day\s+is\s+(?:on\s+)?(?:every\s+(?:other\s+)?)?{DAYS}s?\b.*)",
         "phrase"),
    # "the bins go out on Wednesday nights", "our cleaner comes every Friday", "the recycling
    # is collected on Tuesdays": what happens at home on a day of the week.
    rule("routine", r"^(?P<v>(?:the|our|my)\s+[\w'-]+(?:\s+[\w'-]+)?\s+(?:go(?:es)?\s+out|comes?"
         r"|(?:is|are|gets?)\s+(?:collected|picked\s+up|delivered|emptied)|visits?|arrives?)\s+"
         rf"(?:every\s+(?:other\s+)?{DAYS}|on\s+{DAYS}s?)\b.*)", "phrase"),
    # "my 1:1 with Rachel is every Monday at 10", "our team call is on Tuesdays": one that repeats.
    rule("routine", rf"^(?P<v>(?:my|our)\s+[\w:'&-]+(?:\s+[\w:'&-]+){{0,4}}?\s+(?:is|are)\s+"
         rf"(?:every\s+(?:other\s+)?{DAYS}|on\s+{DAYS}s)\b.*)", "phrase"),
    rule("routine", r"^(?P<v>i\s+(?:usually|always|normally|regularly|typically)\s+"
         r"(?!(?:like|love|enjoy|hate|forget|wanted)\b).+)", "phrase"),
    # "I go to the gym on Mondays and Wednesdays", "I swim twice a week", "I run every other day",
    # "I work from home on Fridays", "I've got football every Tuesday night".
    rule("routine", rf"^(?P<v>(?:i'm\s+working|i(?:'ve|\s+have)\s+got|i\s+(?:go|play|do|have"
         r"|take|use|walk|visit|call|see|meet|train|swim|run|cycle|jog|work|practi[sc]e|volunteer"
         r"|study|cook|teach))\b.*"
         rf"\b(?:(?:every|each)\s+(?:other\s+)?{DAYS}|on\s+(?:{DAYS}s|weekdays)"
         r"|(?:once|twice|three times|four times|\d\s+times)\s+a\s+(?:day|week|month))\b.*)",
         "phrase"),
    rule("does", r"^i\s+(?:also\s+|still\s+)?(?P<v>(?:play|practise|practice)\s+(?!with\b).+)",
         "short"),
    # "I'm learning Japanese", "I started learning to code", "I'm taking guitar lessons".
    rule("learning", rf"\bi(?:'m|\s+am|'ve\s+been|\s+have\s+been)?{ADV}(?:\s+(?:started"
         r"|began|begun))?\s+learning\s+(?P<v>(?!(?:a\s+(?:lot|ton|bunch)|lots|tons|loads|so\s+much"
         r"|more|that|from|about\s+myself|new\s+things|things|stuff|something)\b)[^\W\d_].*)",
         "place", cue=LEARNING),
    rule("learning", rf"\bi(?:'m|\s+am)?{ADV}\s+(?:taking|take|started)\s+(?P<v>[^\W\d_]"
         r"[\w -]{0,30}?)\s+(?:lessons|classes|a\s+course)\b", "place", cue=LEARNING),
    rule("dislikes", rf"\bi{ADV}\s*{DISLIKE}\s+(?P<v>.+?)(?:\s+any\s?more)?$", "liked"),
    # "I prefer tea over coffee" (or "to coffee"), "I like tea more than coffee", "I'd rather
    # have tea than coffee": tea is liked, more than coffee (which is not said to be disliked).
    rule("likes", rf"\bi(?:{ADV}\s+(?:much\s+)?(?P<pref>prefer)|{ADV}\s+(?:like|love|enjoy)"
         r"|'d\s+rather(?:\s+have)?)\s+(?!(?:going|to|be|being|not)\b)"
         r"(?P<item>[^\W\d_][\w' -]{0,40}?)\s+(?:(?:a\s+lot\s+|much\s+|far\s+)?(?:more|better)"
         r"\s+than|over|rather than|than|instead of|(?(pref)to|(?!)))\s+"
         r"(?!(?:before|ever|usual|anything|everything|anyone|that|this|it|last)\b)"
         r"(?P<other>[^\W\d_][\w' -]{0,40}?)[.!]*$", "liked", said="{item} more than {other}"),
    rule("likes", rf"\bi{ADV}\s+(?:like|love|enjoy|adore)\s+(?P<v>.+)", "liked"),
    rule("likes", r"\bi(?:'ve|\s+have)?\s+(?:started|begun|come)\s+(?:to\s+)?(?:liking|loving"
         r"|enjoying|like|love|enjoy)\s+(?P<v>.+)", "liked"),
    rule("likes", r"\bi(?:'m|\s+am)\s+(?:a\s+)?(?:big\s+|huge\s+|great\s+)?fan\s+of\s+(?P<v>.+)",
         "liked"),
    rule("likes", r"\bi(?:'m|\s+am)\s+(?:really\s+|very\s+|so\s+)?into\s+(?P<v>.+)", "liked"),
    # "I'm obsessed with Korean dramas", "I'm hooked on Wordle", "I'm crazy about salsa".
    rule("likes", r"\bi(?:'m|\s+am)\s+(?:(?:a\s+bit|kind\s+of|totally|completely|so|really)\s+)?"
         r"(?:obsessed\s+with|hooked\s+on|crazy\s+about|mad\s+about|nuts\s+about"
         r"|passionate\s+about)\s+(?P<v>.+)", "liked"),
    rule("likes", rf"\bi{ADV}\s+(?:much\s+)?prefer\s+(?P<v>(?:to|going)\s.+|.+?)"
         r"(?:\s+(?:over|to|rather than|than|instead of)\s+.+)?$", "liked"),
    # A detail of the user's world no rule above reads: "my blood type is O negative", "the
    # wifi password at the cabin is pinecone42" (what it is called is its slot: detail_name).
    rule("detail", rf"^(?P<k>(?:my|our)\s+{THING})(?:\s+is|'s)\s+(?P<v>.+)$", "short"),
    rule("detail", rf"^(?P<k>the\s+{THING})\s+is\s+(?P<v>.+)$", "short"),
    # "change my locker number to 17", "update our door code to 4471": the detail, anew.
    rule("detail", r"^(?:please\s+)?(?:change|update|set)\s+(?P<k>(?:my|our)\s+(?!(?:[\w-]+\s+)?"
         rf"(?:reminders?|alarms?|timers?|name|time\s?zone)\b){THING})\s+to\s+"
         r"(?P<v>[^\s]*\d[^\s]*|[^\s]*@[^\s]*|[^\W\d_][\w-]*)$", "short"),
    # "I weigh 72kg", "I'm 180cm tall": the body's measures.
    rule("detail:weight", r"^i\s+(?:now\s+)?weigh\s+(?:about\s+|around\s+)?(?P<v>\d.{0,20})$",
         "short"),
    rule("detail:height", r"^i(?:'m|\s+am)\s+(?P<v>\d[\d.,']*\s*(?:cm|m|ft|feet|foot|in|inches"
         r"|\"|')?(?:\s*\d{1,2}\s*(?:in|inches|\"|'')?)?)\s+tall$", "short"),
    # "I parked on level 3, spot B12", "I've parked the car outside the bakery": where, for later.
    rule("detail:parking spot", r"^i(?:'ve|\s+have)?\s+(?:just\s+)?parked(?:\s+(?:the|my)\s+"
         r"(?:car|bike|van|scooter))?\s+(?P<v>(?:on|in|at|near|by|outside|behind|opposite"
         r"|next\s+to)\s+.+)$", "short"),
    # "I drive a blue Honda Civic": the car (not "a hard bargain", nor "a lot").
    rule("detail:car", r"^i\s+(?:now\s+|still\s+)?drive\s+(?P<v>(?:an?|the)\s+"
         r"(?!(?:hard|tough)\s+bargain|lot\b|bit\b|few\b|little\b|long\s+way).+)$", "short"),
)


# A word every rule of FACT_RULES matches as a whole word (the user speaks of themselves: "I",
# "I'm", "im", "my", "me", "we", "our", "name is ..."), or "the" or an event opening the clause
# ("the party is on Friday", "parents evening is on Thursday"): a clause without one is read by
# none of them.
USER_CUE = re.compile(
    rf"\b(?:i|im|my|me|name|we|our)\b|^the\s|{BARE_TRAVEL}"
    rf"|^(?:[\w'-]+\s+){{0,2}}?(?:{EVENTS})\s+(?:is|starts|begins)\s|^[\w'-]+\s+day\s+is\s"
    r"|^(?:it's|it is|this is)\s.*\s(?:here|speaking)\b",
    _F,
)
