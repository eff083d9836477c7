"""The pieces the fact rules are made of: how a user opens news of theirs, says when, travels,
lives, works, dislikes, leaves something behind, and names a detail. Each is a regular-expression
fragment (or a compiled cue) that :mod:`agent.memory.rules.fact_rules` puts into its patterns.

Tested through those rules by ``tests/test_extraction.py`` and
``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re

from agent.memory.rules.fact_words import COUNTED

__all__ = [
    "ADV",
    "ANYMORE",
    "BARE_TRAVEL",
    "BIG",
    "DAYS",
    "DISLIKE",
    "DURATION_COUNT",
    "ENDED",
    "GONE_FROM",
    "LATELY",
    "LEAD_TIME",
    "LEARNING",
    "LIVE",
    "NEWS",
    "NONE_OF",
    "NOT_NOW",
    "NOT_TAUGHT",
    "NO_TEAM",
    "SHIFTS",
    "SINCE",
    "THING",
    "TIME_BEGINS",
    "TO_SEE",
    "TRAVEL",
    "WEEKDAY_STEMS",
    "WHEN_OPENS",
    "WORK",
    "WORK_WHEN",
]

_F = re.IGNORECASE

ADV = (
    r"(?:\s+(?:really|also|actually|currently|now|still|just|do|absolutely|originally|severely"
    r"|very|highly|seriously|mildly|slightly|quite))?"
)
# When a plan is, said first: "this weekend I'm going hiking", "on Friday I have a dinner".
LEAD_TIME = (
    r"(?P<lead>(?:this|next|on|tomorrow|tonight|today|at the weekend|over the weekend)\b"
    r"[\w' ]{0,20}?),?\s+"
)
#: The days of the week, without their "day" ("mon", "wednes"), Monday first.
WEEKDAY_STEMS = "mon|tues|wednes|thurs|fri|satur|sun"
# What opens the time an event is said with: "on Friday", "tomorrow", "next week".
WHEN_OPENS = r"(?:on|at|in|next|this|tomorrow|tonight|today|the day after tomorrow)"
# Where what is said ends and its time begins, after a blank: "to Paris| on Friday", "the
# cinema| tomorrow night", "with Tom| the weekend of Sat 8 Mar", "the hotel| for two nights".
TIME_BEGINS = (
    rf"\s+(?:{WHEN_OPENS}|by|from|until|till|over|during|later|the\s+weekend"
    r"|for\s+(?:a|an|the|\d+|one|two|three|a\s+few)\s)\b"
)

# Seeing someone, opening a plan's value ("going to visit", "seeing"): not "going to see what".
TO_SEE = (
    r"(?:going\s+(?=to\s)|(?=(?:visiting|seeing|staying\s+with)\s))(?P<v>(?:to\s+(?:visit|see"
    r"|stay\s+with)|visiting|seeing|staying\s+with)\s+(?!(?:what|how|if|whether|it|that|about)"
    r"\b)"
)

# Who travels and how sure: "I'm going", "we're thinking of going", "we might go".
# "going to Tokyo next month ✈️": a trip said without its "I'm".
BARE_TRAVEL = r"^(?=(?:going|flying|heading|off|travell?ing|driving|sailing)\s+to\s)"
TRAVEL = (
    r"(?:\b(?:(?:i(?:'m|\s+am)|we(?:'re|\s+are)|(?:and\s+)?i\s+are|me\s+and\s+(?:my\s+)?[\w'-]+\s+are)"
    r"(?:\s+(?:thinking\s+(?:of|about)|considering"
    r"|planning\s+(?:to|on)|hoping\s+to|about\s+to|going\s+to))?"
    r"|(?:i|we)(?:'ll|\s+will|\s+might|\s+may))\s+"
    rf"|{BARE_TRAVEL})"
)
# "I", "I've", "I just", "I have now": how news of the user's opens.
NEWS = rf"\bi(?:'ve|\s+have)?{ADV}\s+"
# "I recently moved", "we finally moved": news said with when it came.
LATELY = r"(?:\s+(?:recently|finally|eventually|officially))?"
# The kinds one may say one has none of.
NONE_OF = rf"{COUNTED}|allergies|food allergies"
# When a routine comes round: "every morning", "on Sundays".
DAYS = r"(?:morning|evening|night|day|week(?:end)?|(?:mon|tues|wednes|thurs|fri|satur|sun)day)"
LIVE = (
    r"(?:(?:'m|\s+am)?" + ADV + r"\s+(?:living|based|residing)|" + ADV + r"\s+(?:live|reside)"
    r"|(?:'ve|\s+have)(?:\s+been)?" + ADV + r"\s+(?:lived|living))"  # "I've lived in Leeds since"
)
# What follows "I teach" that is no subject taught ("I teach at", "I teach them to swim").
NOT_TAUGHT = r"(?:at|in|for|to|on|with|them|him|her|it|kids|children|people|students)\b"
BIG = r"(?:big\s+|huge\s+|massive\s+|lifelong\s+|die[- ]hard\s+)?"
# What one supports that is no team: a cause, a party, an idea.
NO_TEAM = (
    r"(?:the\s+(?:idea|plan|proposal|decision|government|party|cause|motion|campaign)|Brexit|Labour"
    r"|Tory|Tories|Conservatives?|Democrats?|Republicans?|Trump|Biden)\b"
)
# A kind of shift: "night shifts", "the early shift".
_SHIFT_KIND = (
    r"(?:night|day|early|late|evening|morning|weekend|afternoon|graveyard)\s+shifts?"
)
# When someone works, as said after "I work": days, hours, shifts, part-time.
WORK_WHEN = (
    r"(?:from\s+)?(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|(?:on\s+)?week(?:days|ends)\b"
    rf"|nights\b|{_SHIFT_KIND}\b|shifts\b|days\b"
    r"|part[- ]time\b|full[- ]time\b|(?:from\s+)?\d{1,2}(?:[:.]\d\d)?\s*(?:am|pm)?\s*"
    r"(?:to|till|until|-|\u2013)\s*\d"
)
# Shifts one works, as said after "I'm on" or "moved to": "nights", "the early shift",
# "day shifts this month", "part-time" (not "days off").
SHIFTS = (
    r"(?:the\s+)?(?:nights|days(?!\s+off)|weekends|weekdays"
    rf"|{_SHIFT_KIND}|part[- ]time|full[- ]time)\b.*?"
)
# When a change was made, said after it ("moved to days last week"): not part of the value.
SINCE = (
    r"\s+(?:last\s+(?:week|month|year)|yesterday|recently|the\s+other\s+day|(?:a|one|two|three"
    r"|a\s+few|\d+)\s+(?:days?|weeks?|months?)\s+ago|since\s+\S.{0,30}|from\s+now\s+on)"
)
# Working, with the space after "I": "I work", "I'm working", "I've been working".
WORK = (
    r"(?:\s+work|'m\s+working|\s+am\s+working|(?:'ve|\s+have)\s+been\s+working)"
    r"(?:\s+(?:from home|remotely|part[- ]time|full[- ]time|freelance|nights|weekends|days"
    r"|evenings|mornings|shifts))?"
)
DISLIKE = (
    r"(?:(?:don't|do not|dont|no longer|don't really)\s+(?:like|love|enjoy)|hate|dislike"
    r"|(?:am|'m) not (?:liking|loving|enjoying)"
    r"|can't stand|cannot stand|can't bear|cannot bear|loathe|detest"
    r"|(?:'ve|\s+have)?\s*(?:gone|went)\s+off"
    r"|(?:am|'m) (?:no longer|not) (?:really |very |too |that |a big |terribly |particularly "
    r"|overly |all that |especially )?(?:a fan of|into|keen on"
    r"|fond of|big on|fan of))"
)

# Leaving a job: "I quit my job at", "I've just left Google", "I retired from the NHS".
GONE_FROM = (
    r"\bi(?:'ve|\s+have)?(?:\s+just)?\s+(?:quit|left|resigned\s+from|retired\s+from)\s+"
)
NOT_NOW = r"(?:don't|do not|dont|no longer)"
ENDED = re.compile(
    r"\b(?:quit|left|resigned|retired|don't|do not|dont|no longer|laid off|fired|let go"
    r"|redundant|sacked|moved|stopped|used to)\b|any\s?more",
    _F,
)
LEARNING = re.compile(r"learning|lessons|classes|course", _F)
ANYMORE = r"(?:\s+any\s?more)?"
# What a detail is called: "blood type", "wifi password at the cabin".
THING = (
    r"[^\W\d_][\w-]*(?:'s)?(?:\s+[^\W\d_][\w-]*){0,3}"
    r"(?:\s+(?:at|for|of|in|on)\s+(?:the|my|our)\s+[^\W\d_][\w-]*(?:\s+[^\W\d_][\w-]*)?"
    r"|\s+for\s+(?:the\s+)?\d+\s?(?:k|km|miles?)\b)?"  # "my PB for 10k"
)
# How many of a span of time, in words: "two years", "a few months", "a couple of weeks".
DURATION_COUNT = (
    r"a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|thirty"
    r"|a\s+few|a\s+couple(?:\s+of)?|several|many"
)
