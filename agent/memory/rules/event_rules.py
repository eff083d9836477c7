"""The rules that read the dated things a user tells of, as data: an event on their calendar
("my flight to Berlin is on 14 March", "the report is due on Friday", "I have a job interview
on Monday at 10am", "I'm getting married in June"), or one moved ("my doctor's appointment got
moved to Thursday"). Part of :data:`agent.memory.rules.fact_rules.FACT_RULES`, in its order
(first match wins).

Tested by ``tests/test_extraction.py`` and the "plans and events" families of
``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

from agent.memory.rules.fact_patterns import ADV, LEAD_TIME, WEEKDAY_STEMS, WHEN_OPENS
from agent.memory.rules.fact_rule import FactRule, rule
from agent.memory.rules.fact_words import EVENTS

__all__ = ["EVENT_RULES"]

EVENT_RULES: tuple[FactRule, ...] = (
    # "my doctor's appointment got moved to Thursday": it is on Thursday now.
    rule(
        "event",
        rf"^(?:my|our|the) (?P<item>(?:[\w'-]+\s+){{0,2}}?(?:{EVENTS})\b.{{0,80}}?)\s+(?:(?:got|was"
        r"|has been|is being|'s been)\s+)?(?:moved|rescheduled|pushed(?:\s+back)?|postponed"
        r"|changed)\s+(?:to|till|until|for)\s+(?P<when>.{1,60})$",
        "phrase",
    ),
    # "my shift tomorrow starts at 7pm", "the meeting on Friday is at 10am": the day said first.
    rule("event", rf"^(?:my|our|the) (?P<item>(?:[\w'-]+\s+){{0,2}}?(?:{EVENTS}))\s+"
         r"(?P<day>tomorrow|today|tonight|on\s+[a-z]+day|this\s+[a-z]+|next\s+[a-z]+)\s+"
         r"(?:is|starts|begins|leaves|departs)\s+(?P<at>at\s+.{1,30})$", "phrase",
         said="{item} is {day} {at}"),
    rule(
        "event",
        rf"^(?:my|our) (?P<v>(?P<item>(?:[\w'-]+\s+){{0,2}}?(?:{EVENTS})s?\b.{{0,80}}?)\s"
        r"(?:is|are|leaves|departs|starts?|begins?|(?:got|was|has been|is being)\s+(?:moved"
        r"|rescheduled|pushed|postponed|changed)|moved)\s.+)$",
        "phrase",
    ),
    # "I'm training for a marathon in May", "studying for my exam on Friday": the event ahead.
    rule(
        "event",
        rf"^(?:{LEAD_TIME})?i(?:'m|\s+am){ADV}\s+(?:training|preparing|studying|revising|practi[cs]ing)"
        r"\s+for\s+(?:a|an|the|my)\s+(?P<item>(?:[\w'-]+\s+){0,2}?(?:marathon|race|triathlon|10k|5k"
        rf"|competition|tournament|match|championship|{EVENTS}))(?:\s+(?P<when>{WHEN_OPENS}\b.{{1,60}}))?$",
        "phrase",
    ),
    # "the party is this Saturday": an event said without "my", when it is said with its time.
    rule(
        "event",
        rf"^the (?P<item>(?:[\w'-]+\s+){{0,2}}?(?:{EVENTS})"
        r"(?:\s+(?:in|at|with|for)\s+[\w'-]+){0,2})\s+(?:is|are|starts|begins)\s+"
        r"(?:(?:booked|scheduled|planned|set|arranged)\s+for\s+)?"  # "the boiler service is
        rf"(?P<when>{WHEN_OPENS}\b.{{1,60}})$",  # booked for next Wednesday at 9"
        "phrase",
    ),
    # "I've booked the haircut for Saturday at 10", "we've booked a table at Nando's for 8pm
    # tomorrow": what was booked, and when (a to-do of booking it is closed by the same words).
    rule(
        "event",
        r"^(?:i(?:'ve|\s+have)?|we(?:'ve|\s+have)?)\s+(?:just\s+|finally\s+|now\s+)?(?:booked"
        r"|scheduled|arranged)\s+(?:a|an|the|my|our)\s+(?P<item>(?:[\w'-]+\s+){0,3}?[\w'-]+)\s+"
        rf"(?:for|on)\s+(?P<when>(?:(?:(?:{WEEKDAY_STEMS})day|tomorrow|tonight|today|next|this)\b"
        r"|the\s+\d|\d).{0,60})$",
        "phrase",
        said="{item} is {when}",
    ),
    # "my car is due for its MOT on the 15th", "the dog's due a check-up next week".
    rule("event", r"^(?:my|our|the)\s+[\w'-]+(?:'s|\s+is|\s+are)\s+due\s+(?:for\s+)?(?:its|an?|the"
         rf"|her|his|their)\s+(?P<item>(?:[\w'-]+\s+){{0,1}}?(?:{EVENTS}))\s+"
         rf"(?P<when>{WHEN_OPENS}\b.{{1,60}})$", "phrase"),
    # "the plumber is coming tomorrow between 8 and 12": someone who works on the home, their visit.
    rule("event", r"^the\s+(?P<item>plumber|electrician|cleaner|builders?|engineer|gas\s+engineer"
         r"|courier|delivery(?:\s+driver)?|gardener|decorator|handyman|painter|technician"
         r"|landlord|locksmith|window\s+cleaner)\s+(?:is|are)\s+(?:coming|due)(?:\s+(?:round|over))?"
         rf"\s+(?P<when>{WHEN_OPENS}\b.{{1,60}})$", "phrase", said="{item}'s visit is {when}"),
    # "parents evening is on Thursday at 6pm": without "the", when its time names a day or an hour
    # (not "lunch is on me").
    rule("event", rf"^(?P<item>(?:[\w'-]+\s+){{0,2}}?(?:{EVENTS}))\s+(?:is|starts|begins)\s+"
         r"(?P<when>(?:on|at|next|this|tomorrow|tonight|today)\b(?=.*(?:\d|(?:mon|tues|wednes"
         r"|thurs|fri|satur|sun)day|tomorrow|tonight|today|week)).{1,60})$", "phrase"),
    # "we're expecting a baby in March", "my wife is expecting our first child in May".
    rule(
        "event",
        r"^(?:i(?:'m|\s+am)|we(?:'re|\s+are)|my\s+(?:wife|partner|girlfriend)(?:'s|\s+is))\s+"
        r"expecting\s+(?:a|our|my|her)\s+(?:first\s+|second\s+|third\s+)?(?:baby|child)"
        rf"\s+(?P<when>{WHEN_OPENS}\b.{{1,60}}|(?:around|at the (?:start|end) of)\s.{{1,40}})$",
        "phrase",
        said="{item} is due {when}",
        item="baby",
    ),
    # "the report is due on Friday", "my essay is due tomorrow at noon": a deadline.
    rule("event", r"^(?:my|our|the)\s+(?P<item>(?:[\w'-]+\s+){0,3}?[\w'-]+)\s+(?:is|are)\s+due\s+"
         rf"(?P<when>(?:{WHEN_OPENS}|by)\b.{{1,60}})$", "phrase", said="{item} is due {when}"),
    # "my passport expires in June", "our lease runs out on the 30th", "my car insurance renews
    # on the 3rd of June", "my phone contract ends in August": when something runs out.
    rule("event", r"^(?:my|our|the)\s+(?P<v>(?P<item>(?:[\w'-]+\s+){0,2}?[\w'-]+)\s+(?:expires"
         r"|runs\s+out|is\s+up\s+for\s+renewal|renews|comes\s+up\s+for\s+renewal)"
         rf"\s+(?:{WHEN_OPENS}|by|before)\b.{{1,60}})$", "phrase"),
    rule("event", r"^(?:my|our)\s+(?P<v>(?P<item>(?:[\w'-]+\s+){0,2}?[\w'-]+)\s+(?:ends|finishes)"
         rf"\s+(?:{WHEN_OPENS}|by|before)\b.{{1,60}})$", "phrase"),
    # "I'm getting married in June", "we're getting married on the 14th": the wedding.
    rule(
        "event",
        r"^(?:i(?:'m|\s+am)|we(?:'re|\s+are))\s+(?:finally\s+)?getting\s+married\s+"
        rf"(?P<when>{WHEN_OPENS}\b.{{1,60}})$",
        "phrase",
        said="{item} is {when}",
        item="wedding",
    ),
    # "we fly out on the 3rd of April", "I'm flying home on Sunday": the flight.
    rule("event", r"^(?:i|we)(?:'m|\s+am|'re|\s+are)?\s+fly(?:ing)?\s+(?:out|off|home|back)\s+"
         rf"(?P<when>{WHEN_OPENS}\b.{{1,60}})$", "phrase", said="{item} is {when}", item="flight"),
    # "I'm on holiday from 10 to 20 December", "we'll be on leave next week".
    rule(
        "event",
        r"^(?:i(?:'m|\s+am)|we(?:'re|\s+are)|(?:i|we)(?:'ll|\s+will)\s+be)\s+(?:away\s+)?on\s+"
        r"(?P<item>holiday|vacation|(?:annual|parental|maternity|paternity|sick)\s+leave|leave)"
        r"\s+(?P<when>(?:from|next|this|on|until|till|in|tomorrow|all)\b.{1,60})$",
        "phrase",
    ),
    # "I'm meeting Tom for coffee tomorrow", "we're going for drinks with the team on Friday".
    rule(
        "event",
        rf"^(?:{LEAD_TIME})?(?:i(?:'m|\s+am)|we(?:'re|\s+are))\s+(?:(?:meeting|seeing)\s+"
        r"(?P<with>(?!(?:him|her|them|it|you)\b)(?:my\s+|the\s+)?[\w'-]+"
        r"(?:\s+and\s+(?:my\s+)?[\w'-]+)?)|going(?:\s+out)?)\s+for\s+"
        rf"(?:an?\s+)?(?P<item>(?:coffee|{EVENTS}))(?:\s+(?P<also>with\s.{{1,40}}?))?"
        rf"\s+(?P<when>{WHEN_OPENS}\b.{{0,60}})$",
        "phrase",
    ),
    # "I have a job interview on Monday at 10am", "I have lunch with Anna on Tuesday": the
    # event, then when it is.
    rule(
        "event",
        rf"^(?:{LEAD_TIME})?(?:i|we)(?:'ve|\s+have|(?:'re|'m|\s+are|\s+am)\s+having)?(?:\s+got)?"
        rf"\s+(?:(?:a|an|my|the|our)\s+|(?=(?:lunch|dinner|brunch|drinks|breakfast)\b))"
        rf"(?P<item>(?:[\w'-]+"
        rf"\s+){{0,2}}?(?:{EVENTS}))(?:\s+to\s+(?:go\s+to|attend))?(?:\s+(?P<with>with\s.{{1,40}}?))?"
        rf"(?:\s+(?P<when>{WHEN_OPENS}"
        r"\b.{0,60}))?$",
        "phrase",
    ),
)
