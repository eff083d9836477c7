"""Informal spellings read as the words they stand for: "im" is "I'm", "wats" is "what's",
"2morrow" is "tomorrow", "my sisters name" is "my sister's name", and "do i like mushrooms"
without its question mark is still a question. Emoji are read as the pauses they are
(:func:`without_emoji`): "I have a bunny called Mochi 🐰 she's 2" is "... Mochi, she's 2";
"I love pizza 🍕" is "I love pizza"; a message of emoji alone stays as it is (a nod: "👍").

People typing fast on a phone write lowercase, without apostrophes and with a few common
shortenings; every rule is written for the standard spelling, so the text is respelled once, in
:func:`agent.memory.rules.extraction.normalize_text`, before any rule reads it. What is kept in
the log is what the user typed. The table is data: a shortening goes in only if it cannot be an
ordinary English word in a message to an assistant ("ill", "id", "lets", "were" and "well" stay
as typed), and only whole words are replaced.

Tested by ``tests/test_informal_words.py``.
"""

from __future__ import annotations

import re

import emoji

from agent.memory.rules.fact_patterns import TIME_BEGINS

__all__ = ["respell", "without_emoji"]

#: Whole words (any case) and the standard spelling the rules read.
_WORDS: dict[str, str] = {
    # apostrophes left out
    "im": "I'm",
    "ive": "I've",
    "dont": "don't",
    "doesnt": "doesn't",
    "didnt": "didn't",
    "cant": "can't",
    "isnt": "isn't",
    "arent": "aren't",
    "wasnt": "wasn't",
    "havent": "haven't",
    "shouldnt": "shouldn't",
    "wouldnt": "wouldn't",
    "couldnt": "couldn't",
    "shes": "she's",
    "hes": "he's",
    "theyre": "they're",
    "youre": "you're",
    "whats": "what's",
    "whens": "when's",
    "wheres": "where's",
    "whos": "who's",
    "hows": "how's",
    "thats": "that's",
    # shortenings
    "wat": "what",
    "wats": "what's",
    "wot": "what",
    "u": "you",
    "ur": "your",
    "pls": "please",
    "plz": "please",
    "abt": "about",
    "b4": "before",
    "gf": "girlfriend",
    "gf's": "girlfriend's",
    "gfs": "girlfriend's",
    "bf": "boyfriend",
    "bf's": "boyfriend's",
    "bfs": "boyfriend's",
    "bff": "best friend",
    "hubby": "husband",
    "footy": "football",
    "bday": "birthday",
    "b-day": "birthday",
    "bc": "because",
    "cuz": "because",
    "coz": "because",
    "gonna": "going to",
    "wanna": "want to",
    "yrs": "years",
    "hrs": "hours",
    "2day": "today",
    "2nite": "tonight",
    "tonite": "tonight",
    "tmr": "tomorrow",
    "tmrw": "tomorrow",
    "tmrow": "tomorrow",
    "2morrow": "tomorrow",
    "2moro": "tomorrow",
    "2mrw": "tomorrow",
    "tomoz": "tomorrow",
    "tomorow": "tomorrow",
    "tommorow": "tomorrow",
    "tommorrow": "tomorrow",
    # days of the week, shortened (not "wed", "sat", "sun", "mon": words too; see _SHORT_DAY)
    "tue": "Tuesday",
    "tues": "Tuesday",
    "weds": "Wednesday",
    "thu": "Thursday",
    "thur": "Thursday",
    "thurs": "Thursday",
    "fri": "Friday",
}
_WORD = re.compile(
    r"(?<![\w'])(?:"
    + "|".join(re.escape(w) for w in sorted(_WORDS, key=len, reverse=True))
    + r")(?![\w'])",
    re.IGNORECASE,
)
# The words a text is looked up by before the alternation above runs over it (a set lookup
# per word instead of the alternation at every position).
_TOKEN = re.compile(r"[\w'-]+")
# Phrases learners of English say for others: "I am having a cat" (I have), "remember me to
# call" (remind me), "which time is now?" / "what time is now?" (what time is it); each after
# a word it holds, looked for before the phrase.
_PHRASES = (
    (
        "having",
        re.compile(r"\b(i|we)\s+am\s+having\s+(?=(?:an?|one|two|three|\d)\s)", re.IGNORECASE),
        r"\1 have ",
    ),
    (
        "having",
        re.compile(r"\b(i|we)\s+are\s+having\s+(?=(?:an?|one|two|three|\d)\s)", re.IGNORECASE),
        r"\1 have ",
    ),
    (
        "remember",
        re.compile(r"\bremember\s+me\s+(?=to\s|about\s|in\s|at\s|on\s|tomorrow\b)", re.IGNORECASE),
        "remind me ",
    ),
    (
        " is ",
        re.compile(r"^(?:which|what)\s+(?:time|hour)\s+is\s+(?:now|it now)\b", re.IGNORECASE),
        "what time is it",
    ),
    # "I'm married to Siobhan": who the spouse is ("engaged to": the fiancé).
    (
        " to ",
        re.compile(
            r"^i(?:'m|\s+am)\s+(?:happily\s+)?married\s+to\s+(?=(?-i:[A-Z]))", re.IGNORECASE
        ),
        "my spouse is ",
    ),
    (
        " to ",
        re.compile(r"^i(?:'m|\s+am)\s+engaged\s+to\s+(?=(?-i:[A-Z]))", re.IGNORECASE),
        "my fiancé is ",
    ),
    # "Tom and I are going to Paris on Friday", "me and my sister are flying to Rome": the
    # user's trip, with whom (to the sentence's end, or a comma before another clause).
    (
        " and ",
        re.compile(
            r"^(?:(?P<who>(?:my|our)\s+[\w-]+|(?-i:[A-Z])[\w-]+)\s+and\s+i|me\s+and\s+"
            r"(?P<other>my\s+[\w-]+|(?-i:[A-Z])[\w-]+))\s+are\s+(?P<trip>(?:going|flying|travell?ing"
            r"|heading|driving|off)\s+(?:to\s+(?=(?-i:[A-Z])|(?:the|a|an|my|our|his|her|their|lunch|dinner"
            r"|brunch|school|work|uni|college|church|town)\b)|for\s|on\s)"
            r"(?:[^.!?\n;,]|,(?!\s+(?-i:[a-z])))*)",
            re.IGNORECASE,
        ),
        lambda m: _with(m["trip"].rstrip(), m["who"] or m["other"]),
    ),
    # "my wife and I are expecting a baby", "Alex and I are moving": we (not when the other is
    # named by role and name: "my husband Tom and I").
    (
        " and ",
        re.compile(
            r"^(?:(?:my|our)\s+[\w-]+\s+and\s+i|me\s+and\s+my\s+[\w-]+|(?-i:[A-Z])[\w-]+\s+and\s+i)\s+"
            r"(?=(?:are|were|have|will|had)\b)",
            re.IGNORECASE,
        ),
        "we ",
    ),
)
_TRIP_TIME = re.compile(TIME_BEGINS, re.IGNORECASE)


def _with(trip: str, who: str) -> str:
    """ "going to Paris on Friday" with Tom: "I'm going to Paris with Tom on Friday"."""
    verb, _, rest = trip.partition(" ")
    when = _TRIP_TIME.search(rest, pos=rest.find(" ") + 1)
    cut = len(rest) if when is None else when.start()
    return f"I'm {verb} {rest[:cut]} with {who}{rest[cut:]}"


# "i" alone is "I" ("i have a dog", "i'm"), not the "i" of "i.e." or "Wi-Fi".
_I = re.compile(r"(?<![\w.'-])i(?=[\s']|$)")
# A possessive without its apostrophe, before what a person has: "my sisters name",
# "my dogs birthday", "wats my moms age" (not a place's name: "my Paris trip").
_POSSESSIVE = re.compile(
    r"\b(my|your|our|his|her|their)\s+((?-i:[a-z]{2,20}?))s\s+"
    r"(?=(?:name|age|birthday|job|school|teacher|phone|number|email|address|allergy|allergies"
    r"|favou?rite|flight|trip|party|appointment|wedding)\b)",
    re.IGNORECASE,
)

# A question asked without its question mark: "do I like mushrooms", "when is my exam",
# "how old is Mia" (a statement never opens like this: "what a day" and "how nice" do not match).
_QUESTION = re.compile(
    r"^(?:(?:do|does|did|am|is|are|was|were|have|has|can|could|should|will|would)\s+"
    r"(?:i|my|we|our|you|your)\b"
    r"|(?:what|when|where|who|whose|which|how)(?:'s|'re|\s+(?:is|are|was|were|do|does|did|am|can"
    r"|should|will|time|old|many|much|long|day|date))\b)[^\n]*(?<![.!?])$",
    re.IGNORECASE,
)


# "wed", "sat", "sun", "mon" are days only where a day goes: after "on", "by", "next", ... or
# before a time of day ("remind me wed night", "by sat", "every mon at 9").
_SHORT_DAY = re.compile(
    r"\b(?P<before>(?:on|by|until|till|next|this|every|me|before|after) )(?P<d>wed|sat|sun|mon)\b"
    r"|\b(?P<e>wed|sat|sun|mon)(?= (?:night|morning|evening|afternoon|at \d))",
    re.IGNORECASE,
)
_DAY_NAMES = {"wed": "Wednesday", "sat": "Saturday", "sun": "Sunday", "mon": "Monday"}


def _day(match: re.Match[str]) -> str:
    return (match["before"] or "") + _DAY_NAMES[(match["d"] or match["e"]).casefold()]


def respell(text: str) -> str:
    """``text`` with its informal spellings replaced by the standard ones ("wats my sisters
    name" -> "what's my sister's name"); text without any comes back unchanged."""
    if not _WORDS.keys().isdisjoint(_TOKEN.findall(text.casefold())):  # most texts have none
        text = _WORD.sub(lambda m: _keep_case(m.group(0), _WORDS[m.group(0).casefold()]), text)
    text = _POSSESSIVE.sub(r"\1 \2's ", _I.sub("I", text))
    text = _SHORT_DAY.sub(_day, text)
    lowered = text.casefold()
    for word, phrase, standard in _PHRASES:
        if word in lowered:
            text = phrase.sub(standard, text)
    return text + "?" if _QUESTION.match(text) else text


def _keep_case(said: str, standard: str) -> str:
    """``standard`` capitalised as ``said`` was ("Wats" -> "What's"); "I" stays capital."""
    if said[:1].isupper() and not standard.startswith("I"):
        return standard[:1].upper() + standard[1:]
    return standard


# Blanks and the punctuation an emoji may sit between: "Mochi 🐰 she's 2", "thanks! 🙏 bye".
_PAUSE = re.compile(r"(?<!\s)\s*\x00[\s\x00]*")


def without_emoji(text: str) -> str:
    """``text`` with its emoji read as pauses: dropped at either end, a comma between words
    (none after punctuation); a message of emoji (and blanks) alone comes back unchanged."""
    # Every emoji is outside ASCII: most messages are read without the library's per-character
    # tokenizer (which cost a turn's state rules 0.3 ms).
    if text.isascii() or not emoji.emoji_count(text):
        return text
    marked = emoji.replace_emoji(text, replace="\x00")
    inner = marked.strip("\x00 \t\n")
    if not inner:
        return text

    def pause(match: re.Match[str]) -> str:
        before = inner[: match.start()].rstrip()
        return " " if before[-1:] in {".", "!", "?", ",", ";", ":"} else ", "

    return _PAUSE.sub(pause, inner).strip()
