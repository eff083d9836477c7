"""What the rule-based concierge says when no fact or to-do is at stake.

A recap of the conversation, a group's decisions, help, small talk (greetings, thanks, bye,
"never mind"), an unknown command, and the honest "I didn't understand" (:data:`UNKNOWN`).
Covered by ``tests/test_rule_based.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import emoji

from agent.engines.rule_facts import answer_line
from agent.engines.rule_reading import Reading, first_sentence
from agent.memory.longterm.memory_slots import memory_facts
from agent.memory.packet_lines import line_seq
from agent.memory.rules.dialogue_acts import is_dismissal
from agent.memory.schemas import ConversationContextPacket, JobRef

__all__ = [
    "UNKNOWN",
    "answer_decisions",
    "answer_help",
    "answer_last_time",
    "answer_recap",
    "celebrated",
    "smalltalk",
]

_F = re.IGNORECASE
_RECAP_LINES = 12

_CAPABILITIES = (
    "• remember what you tell me: “my name is Ada”, “I live in Lisbon”, “I'm planning a trip "
    "to Lisbon in May”\n"
    "• answer “what's my name?”, “what do you know about me?”, “what did we talk about?”\n"
    "• keep your to-do list: “remind me to book the hotel”, then “I booked the hotel” "
    "(or “done 1”); ask “what is still open?”\n"
    "• set reminders: “remind me in 10 minutes to call mom”, “remind me tomorrow at 8am to "
    "stretch”, “remind me every Monday at 9am to put the bins out”, “remind me a day before my "
    "flight”; then “cancel the stretch reminder” or “snooze it 10 minutes” (times in your zone: "
    "/timezone Europe/Lisbon)\n"
    "• answer from what you told me: “what's the cabin wifi password?” finds what you said"
)

# Titles said before a name ("Dr. Smith"): the greeting keeps the whole name.
_TITLES = frozenset({"dr", "mr", "mrs", "ms", "mx", "miss", "prof"})

_HELP = "I'm your offline concierge: no AI model, just rules I follow reliably. I can:\n"

# What a message not understood gets: at most 200 characters, one example, a pointer to /help.
UNKNOWN = (
    "Sorry, I didn't understand that, so I noted no fact (ask about it later and I'll look it "
    "up). Try “remind me in 10 minutes to call mom”, or send /help to see what I can do."
)

_UNKNOWN_COMMAND = "I don't know the command {}. Send /help to see the commands I know."

_ASK_RECAP = re.compile(
    r"\bwhat (?:did|have) we (?:talk|talked|discuss|discussed|chat|chatted|speak|spoken|said)\b"
    r"|\bwhat were we (?:talking|discussing)\b|\bwhere were we\b|\brecap\b|\bsummar(?:y|i[sz]e)\b",
    _F,
)

# "what did we talk about last time?", "do you remember our previous chat?": an earlier
# conversation, not this one ("what were we talking about before?" may be this one's).
_ASK_LAST_TIME = re.compile(
    r"\b(?:talk(?:ed|ing)?|discuss(?:ed|ing)?|chat(?:ted|ting)?|speak|spoke|say|said|remember"
    r"|recap)\b"
    r".*\b(?:last time|(?:our|the|that) (?:last|previous|earlier|other|old) (?:conversation|chat"
    r"|session|talk)s?)",
    _F,
)
_KEPT_ON_FILE = (
    "Earlier conversations are kept on file: /sessions lists them, /resume brings one back."
)

_ASK_DECISIONS = re.compile(
    r"\bwhat (?:did|have) (?:we|you (?:all|guys)) (?:decide|decided|agree|agreed|settle|settled)"
    r"|\bwhat (?:was|has been|got) (?:decided|agreed)|\b(?:any|the|our) decisions?\b(?: so far)?\?"
    r"|\bwhat are the decisions\b",
    _F,
)

_ASK_HELP = re.compile(
    r"^/?(?:help|start|menu|commands)\b|\bwhat can you do\b|\bhow do(?:es)? (?:this|you) work\b"
    r"|\bwhat are you (?:able to do|for|good at)\b"
    r"|^(?:can|could) you help(?: me| us)?(?: (?:out|please))?\s*[?!.]*$"
    r"|^i need (?:some )?help\s*[?!.]*$",
    _F,
)

_GREETING = re.compile(
    r"^(?:(?:hi+|hello+|hey+|hiya+|howdy|yo+|hallo|hola|salut|ciao|bonjour|greetings|heya+"
    r"|good (?:morning|afternoon|evening|day))\b|(?:morning|afternoon|evening)[!. ]*$)",
    _F,
)

_THANKS = re.compile(
    r"\b(?:thanks|thank you|thx|ty|cheers|much appreciated|many thanks|thank u)\b|^ta[!. ]*$"
    r"|^(?:i\s+)?(?:really\s+)?appreciate\s+(?:it|that|this|you)\b",
    _F,
)

_HOW_ARE_YOU = re.compile(
    r"\bhow are you\b|\bhow(?:'s| is) it going\b|^(?:what'?s up|wh?at'?s up|sup|wassup)\b", _F
)

# A message that only acknowledges ("ok", "cool", "got it"): a nod back.
_NOD = (
    r"(?:ok(?:ay)?|k|kk|cool|nice|great|good|fine|perfect|awesome|lovely|brilliant|alright"
    r"|all right|sure|got it|noted|sounds good|understood|right|yes|yep|yeah|good to know"
    r"|fair enough|makes sense|no worries|all good|i see|will do|ah|oh|aha|ha(?:ha)+|hah|wow"
    r"|he(?:he)+|hmm+|mhm|👍)"
)
# "lol ok": a laugh before a nod ("lol" alone says nothing to answer).
_ACKNOWLEDGE = re.compile(rf"^(?:(?:lol|lmao)[\s,.!]+)?{_NOD}(?:[\s,.!👍]+{_NOD})*[.!👍 ]*$", _F)
# "who are you?", "what's your name?", "are you a bot?": the concierge says what it is.
_ASK_WHO_YOU = re.compile(
    r"^(?:who (?:are|r) (?:you|u)|what(?:'s| is) your name|what are you|are (?:you|u) (?:a |an )?"
    r"(?:bot|robot|human|real|person|ai|machine|computer))\b[\s?!.]*$",
    _F,
)
_WHO_I_AM = "I'm your offline concierge: no AI, just rules. Say “help” to see what I can do."

# "can you remember things for me?", "will you remember this?": what keeping something takes.
_ASK_REMEMBER = re.compile(
    r"^(?:can|could|will|would|do|are) you (?:able to )?(?:remember|keep track of|store|save|note"
    r"|keep) (?:things|stuff|something|anything|notes|details|info|information|(?P<it>that|this"
    r"|it))"
    r"(?: for me)?\s*[?!.]*$",
    _F,
)
_I_REMEMBER = (
    "Yes: tell me (“my locker code is 4521”) and ask me later (“what's my locker code?”). "
    "I keep it across restarts, and “forget my locker code” erases it."
)

_I_KEEP = "Yes: I keep what you tell me, across restarts. Ask me about it any time."

_SAID_NO = re.compile(r"^(?:no|nope|nah|no thanks|no thank you)[\s.!]*$", _F)
_BYE = re.compile(
    rf"^(?:{_NOD}[\s,.!]+)?(?:bye|goodbye|good ?night|night|nite|see you|see ya|cya|later|ttyl"
    r"|talk (?:to you )?(?:later|soon)|speak soon|take care|catch you later|until next time"
    r"|have a (?:good|nice|great|lovely) (?:one|day|night|evening|weekend|afternoon)"
    r"|(?:i )?(?:gotta|got to|have to|must) (?:go|run)\b(?:[.!]*$)|bye for now)\b",
    _F,
)
# How one feels, said alone ("I'm really tired", "my day is going great"): a word back.
_FEELING = (
    r"^(?:(?:i'm|i am|im|i feel|i'm feeling|feeling|i've been|my day (?:is|was|has been)(?: going)?"
    r"|today (?:is|was|has been)|(?:it's|it has) been|what an?)\s+)(?:(?:a|an|so|really|very"
    r"|pretty|such an?|a bit|kind of|kinda|quite|super|totally|rather)\s+)*"
)
_FEELING_END = (
    r"(?:\s+(?:day|week|morning|evening|night))?(?:\s+(?:for|about)\s+(?:the\s+)?[\w'-]+)?"
    r"(?:\s+(?:at\s+work|today|now|lately|tonight|this week|again))*[\s.!😊🙂😀😄😢😞😩]*$"
)
# "I had a great day at work", "I had a rough day": how a day went.
_HAD_A = r"|^(?:i|we)\s+(?:had|have had|'ve had)\s+(?:a|an|such an?)\s+(?:(?:really|very|so)\s+)?"
_GOOD = (
    r"(?:great|good|amazing|awesome|fantastic|wonderful|lovely|happy|excited|fine"
    r"|brilliant|productive|relaxed|better|well)"
)
_GOOD_MOOD = re.compile(
    _FEELING + _GOOD + _FEELING_END + _HAD_A + _GOOD + r"\s+(?:day|week|time|evening|weekend)"
    + _FEELING_END,
    _F,
)
_BAD = (
    r"(?:tired|exhausted|sad|stressed|sick|ill|awful|terrible|bad|rough|horrible"
    r"|down|lonely|anxious|worried|upset|bored|miserable|unwell|overwhelmed|frustrated|nervous"
    r"|scared|homesick|burnt out|burned out"
    r"|long|tough|hard)"
)
_BAD_MOOD = re.compile(
    _FEELING + _BAD + _FEELING_END + _HAD_A + _BAD + r"\s+(?:day|week|time|evening|weekend)"
    + _FEELING_END + r"|^my (?:back|head|neck|knee|stomach|tooth|feet)"
    r"\s+(?:is killing me|hurts|is sore|aches)(?:\s+(?:after|when|from|since)\b[\w' ]{0,30})?"
    r"[\s.!]*$"
    r"|^my (?:allergies|hay ?fever|asthma|migraines?) (?:is|are) (?:(?:really|so|very) )?(?:bad"
    r"|awful|terrible|acting up|killing me|playing up)\b[\w ]{0,20}[\s.!]*$"
    r"|^(?:my\s+)?[\w' -]{1,30}?\s+(?:is|are)\s+driving\s+me\s+(?:crazy|mad|nuts|insane)\b"
    # "I need a break", "we badly need a holiday": worn out, not an errand.
    r"|^(?:i|we)\s+(?:really\s+|so\s+|badly\s+|just\s+)?need\s+(?:a\s+|some\s+|more\s+)?"
    r"(?:break|rest|holiday|vacation|hug|nap|day\s+off|sleep|time\s+off|drink|time)\b"
    r"[\w' ]{0,30}[\s.!]*$"
    # "I miss my family", "I miss home": missing someone far away.
    r"|^i\s+(?:really\s+|so\s+)?miss\s+(?:my|our|home\b)[\w' ]{0,40}[\s.!]*$"
    # Bad news of one's life: "I failed my exam", "I broke up with my boyfriend".
    r"|^(?:i|we)\s+(?:just\s+|finally\s+)?(?:failed\s+(?:my|the|our)\b|broke\s+up\s+with\b"
    r"|got\s+(?:dumped|rejected|fired|laid\s+off|made\s+redundant)\b|lost\s+(?:my|our)\s+"
    r"(?:job|wallet|phone|keys|grandma|grandmother|grandpa|grandfather|dog|cat|mum|mom|dad)\b"
    r"|didn't\s+get\s+(?:the|that)\s+(?:job|place|flat|house)\b)"
    # a loss: "my cat died last week", "our grandad passed away"
    r"|^(?:my|our)\s+(?:[\w'-]+\s+){0,3}?(?:died|passed\s+away|passed\s+on|is\s+gone)\b"
    # a loss or a mishap: "my bike was stolen", "our flight got cancelled"
    r"|^(?:my|our)\s+[\w' -]{1,30}?\s+(?:was|got|has\s+been|have\s+been|were)\s+(?:just\s+)?"
    r"(?:stolen|broken\s+into|cancell?ed|delayed|damaged|lost)\b"
    # hurt or ill: "I hurt my knee last week", "I've got a cold", "I have the flu"
    r"|^i(?:'ve|\s+have)?\s+(?:just\s+)?(?:hurt|injured|sprained|twisted|broke|broken|pulled"
    r"|strained|bruised)\s+my\b|^i(?:'ve|\s+have)?\s+(?:got\s+|caught\s+)?(?:a\s+(?:cold|fever"
    r"|migraine|bad\s+back|sore\s+throat|chest\s+infection)|the\s+flu|flu|covid)\b",
    _F,
)
# A workout done: "I ran 18k today", "just swam 2km", "I did a 5k this morning".
_WORKOUT = re.compile(
    r"^(?:i\s+)?(?:just\s+)?(?:ran|swam|cycled|rode|walked|hiked|rowed|did)\s+(?:an?\s+)?\d+"
    r"(?:[.,]\d+)?\s*(?:k|km|kms|miles?|m|laps?)\b",
    _F,
)
# Good news of one's life: "I got promoted!", "we just got engaged", "I passed my driving test".
_GOOD_NEWS = re.compile(
    r"^(?:i'm|i\s+am|we're|we\s+are)\s+(?:finally\s+)?(?:pregnant|expecting(?:\s+(?:a|our|my"
    r"|her)\s+(?:first\s+|second\s+|third\s+)?(?:baby|child))?|engaged)[\s.!🎉🥳]*$"
    r"|^(?:i|we)\s+(?:(?:just|finally|actually)\s+)?(?:got\s+(?:promoted|engaged|married|a\s+raise"
    r"|the\s+job|(?:a|my)\s+(?:new\s+|dream\s+|first\s+)?job\b|accepted|in\b)|passed\s+(?:my|the|our)\b|graduated\b|won\b|had\s+(?:a|the)\s+baby"
    r"|bought\s+(?:a|our|my)\s+(?:first\s+)?(?:house|home|flat)"
    # "I finished my first marathon", "I got a new PB"
    r"|(?:ran|finished|completed)\s+(?:my|a|the)\s+(?:first\s+)?(?:marathon|half\s+marathon"
    r"|half|race|triathlon|ultra)\b|(?:got|hit|set)\s+a\s+(?:new\s+)?(?:pb|pr|personal\s+best))",
    _F,
)
_BIRTHDAY_TODAY = re.compile(
    r"^(?:it'?s|today\s+is|today'?s)\s+my\s+birthday(?:\s+today)?\s*[!.🎂🎉🥳]*$", _F
)
# Going to sleep: a good night.
_TO_BED = re.compile(
    r"^(?:i'm\s+|im\s+|we're\s+|we\s+are\s+)?(?:going|off|heading)\s+to\s+(?:bed|sleep)\b"
    r"[\w ,.!]{0,20}$",
    _F,
)
# Praise of the bot, an apology, a pause: each gets a word back.
_OTHER_TALK = tuple(
    (re.compile(pattern, _F), said)
    for pattern, said in (
        (r"^(?:you(?:'re| are) (?:so |really |such )?(?:great|the best|awesome|amazing|a star"
         r"|brilliant|so helpful|helpful|a (?:lifesaver|life saver|legend|genius|gem|hero|champ))"
         r"|you rock|(?:nice|good) (?:one|job|work)|well done|good bot|love (?:you|it)"
         r"|(?:that's|that is|that was) (?:really |very |so |super )?(?:helpful|useful)"
         r"|that helps)\b", "Thank you! 😊"),
        (r"^(?:sorry|my bad|oops|apologies)\b(?:[\w ,'!.]{0,30})$", "No problem!"),
        (r"^(?:brb|be right back|hold on|hang on|one (?:sec|second|moment|minute)|wait a (?:sec"
         r"|second|minute))\b[\w ,.!]{0,12}$", "Sure, I'll be here."),
    )
)  # fmt: skip

# A summary line: "#12 Ada: ..." or, tagged by the summarizer, "#12 Ada [decision]: ...".
_SUMMARY_LINE = re.compile(
    r"#\d+ (?P<who>[^:\n\[]{1,80}?)(?: \[(?P<tag>[a-z ]{1,20})\])?: (?P<said>.*)"
)

# A turn as the packet's retrieved part renders it: "#4 Ada (27 Nov 2026): ...\n  bot: ...".
_RETRIEVED_TURN = re.compile(
    r"#\d+ (?P<who>[^:\n(]{1,80}?) \([^)\n]{1,40}\): (?P<said>[^\n]*)(?:\n\s*bot: (?P<bot>.*))?",
    re.DOTALL,
)

_RECAP_VERBS = {"decision": " decided", "fact": " told me", "open question": " asked"}


def celebrated(text: str) -> bool:
    """Whether ``text`` tells of something done to be glad of ("I finished my first marathon",
    "I did a 5k this morning"): news, not a to-do ticked off."""
    return bool(_GOOD_NEWS.match(text) or _WORKOUT.match(text))


def answer_decisions(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what did we decide?"."""
    return _decisions(packet) if _ASK_DECISIONS.search(reading.text) else None


def answer_recap(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what did we talk about?"."""
    return _recap(packet) if _ASK_RECAP.search(reading.text) else None


def answer_last_time(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what did we talk about last time?": what earlier conversations left in long-term
    memory (what this one said is not from before), and where those conversations are kept."""
    if _ASK_LAST_TIME.search(reading.text) is None:
        return None
    said_here = {fact.key for fact in packet.facts}
    earlier = [fact for fact in memory_facts(packet.memories) if fact.key not in said_here]
    if not earlier:
        return f"I remember nothing about you from earlier conversations. {_KEPT_ON_FILE}"
    lines = "\n".join(f"• {answer_line(fact)}" for fact in earlier)
    return f"From our earlier conversations I remember:\n{lines}\n{_KEPT_ON_FILE}"


def answer_help(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "help" and "what can you do?"."""
    return _HELP + _CAPABILITIES if _ASK_HELP.search(reading.text) else None


def _recap_line(line: str) -> str:
    match = _SUMMARY_LINE.match(line)
    if match is None:
        return f"• {line}"
    said = match.group("said")
    if said.startswith(" -> "):  # a turn of the bot alone (a reminder firing)
        return f"• me: {said[4:]}"
    who = "you" if match.group("who") == "user" else match.group("who")
    verb = _RECAP_VERBS.get(match.group("tag") or "", "")
    if match.group("tag") == "fact":  # "mom/birthday: 12 December": "mom's birthday: ..."
        said = re.sub(r"(?<=\w)/(?=\w)", "'s ", said)
    return f"• {who}{verb}: {said.replace(' -> ', ' → ')}"


def _recap(packet: ConversationContextPacket) -> str:
    # The conversation in order, each turn once, in whichever part of the packet carries it
    # (a turn retrieved is not repeated among the compressed ones): summary lines (not the
    # headers of its parts, "[turns 8-17]"), compressed lines, retrieved turns, the last turns.
    summary = packet.rolling_session_summary.splitlines()
    kept = [x for x in (*summary, *packet.recent_turn_summaries) if x.strip()]
    # A line without its turn's number keeps its place after the turn before it.
    by_seq: dict[float, str] = {}
    for x in kept:
        if not x.startswith("["):
            by_seq[line_seq(x) or max(by_seq, default=0) + 0.5] = _recap_line(x)
    for item in packet.retrieved:
        told = _RETRIEVED_TURN.match(item.text) if item.kind == "turn" else None
        if told is not None and item.seq is not None and item.seq not in by_seq:
            answer = f" -> {told.group('bot')}" if told.group("bot") else ""
            said = f"#{item.seq} {told.group('who')}: {told.group('said')}{answer}"
            by_seq[item.seq] = _recap_line(said)
    for turn in packet.recent_turns:
        answer = first_sentence(turn.assistant_text or "", 80)
        if not turn.user_text.strip():
            by_seq[turn.seq] = f"• me: {answer}"
            continue
        line = f"• {turn.speaker or 'you'}: {first_sentence(turn.user_text, 160)}"
        by_seq[turn.seq] = line + (f" → {answer}" if answer else "")
    lines = [line for _, line in sorted(by_seq.items())]
    if not lines:
        return "This is the start of our conversation: nothing to recap yet."
    head = "Here's what we talked about"
    if len(lines) > _RECAP_LINES:
        head += f" (the last {_RECAP_LINES} of {len(lines)} exchanges I keep)"
        lines = lines[-_RECAP_LINES:]
    said = head + ":\n" + "\n".join(lines)
    if packet.active_topics:
        said += "\n\nTopics: " + ", ".join(topic.name for topic in packet.active_topics) + "."
    return said


def _decisions(packet: ConversationContextPacket) -> str:
    """A group's decisions, newest last, and the proposals still under discussion."""
    sections: list[str] = []
    if packet.decisions:
        lines = []
        for decision in packet.decisions:
            who = ", ".join(decision.supporters) or decision.decided_by
            lines.append(f"• {decision.outcome} ({who})")
        sections.append("What was decided:\n" + "\n".join(lines))
    open_now = [p for p in packet.proposals if p.status == "active"]
    if open_now:
        lines = []
        for proposal in open_now:
            pro = sum(1 for r in proposal.reactions if r.stance == "support")
            con = sum(1 for r in proposal.reactions if r.stance == "oppose")
            lines.append(f"• {proposal.proposer}: {proposal.text} ({pro} for, {con} against)")
        sections.append("Still under discussion:\n" + "\n".join(lines))
    if not sections:
        return (
            "Nothing has been decided yet. In a group, say “we agreed on …”, “let's go with …” "
            "or “[DECISION] …” and I'll keep it."
        )
    return "\n\n".join(sections)


def _name(reading: Reading) -> str:
    # A greeting says the first name only: "Hi Harold!", not "Hi Harold Whitfield!"; a name
    # with its title, whole: "Thanks, Dr. Smith!".
    name = next((f.value for f in reading.facts if f.key == "name"), None)
    if name is None:
        return ""
    first, *rest = name.split()
    return f" {name}" if rest and first.rstrip(".").casefold() in _TITLES else f" {first}"


def cheer(reading: Reading) -> str | None:
    """ "Happy birthday!" or "Congratulations!" to good news ("it's my birthday today", "I got
    the job!"), said before what was noted of it too; ``None`` for other news."""
    name = _name(reading).replace(" ", ", ", 1)
    if _BIRTHDAY_TODAY.match(reading.text):
        return f"Happy birthday{name}! 🎂"
    if _GOOD_NEWS.match(reading.text):
        return f"Congratulations{name}! 🎉"
    return None


def smalltalk(packet: ConversationContextPacket, reading: Reading) -> tuple[str, str] | None:
    """Return the intent and answer of an unknown command or small talk, else ``None``."""
    text, name = reading.text, _name(reading)
    if text.startswith("/"):
        command = first_sentence(text.split()[0], 40)
        return "unknown", _UNKNOWN_COMMAND.format(command)
    if _GREETING.search(text):
        said = f"Hi{name}!"
        count = len(reading.loops.loops) + len(packet.active_job_refs)
        if packet.turn_count:
            said += " Good to see you again."
        if count:
            plural = "item is" if count == 1 else "items are"
            said += f" {count} {plural} still open: ask “what is still open?” to see them."
        elif packet.turn_count:
            said += " What can I do for you?"
        else:
            said += " What can I do for you? Say “help” to see what I can do."
        return "smalltalk", said
    if _HOW_ARE_YOU.search(text):
        return "smalltalk", "I'm doing well, thanks for asking! What can I do for you?"
    if _THANKS.search(text):
        return "smalltalk", f"You're welcome{name.replace(' ', ', ', 1)}!"
    if _TO_BED.search(text):
        return "smalltalk", f"Good night{name.replace(' ', ', ', 1)}! Sleep well."
    if _BYE.search(text):
        return "smalltalk", f"Bye{name.replace(' ', ', ', 1)}! I'll remember all this next time."
    cheered = cheer(reading)
    if cheered is not None:
        return "smalltalk", cheered
    if _GOOD_MOOD.search(text):
        return "smalltalk", "Glad to hear it! 😊"
    if _WORKOUT.match(text):
        return "smalltalk", "Nice work! 💪"
    if _BAD_MOOD.search(text):
        return "smalltalk", "Sorry to hear that. I'm here if you need anything."
    if is_dismissal(text):  # nothing of theirs left to drop (else dialogue_acks said so)
        return "smalltalk", "OK, never mind."
    if _ASK_WHO_YOU.match(text):
        return "smalltalk", _WHO_I_AM
    if asked := _ASK_REMEMBER.match(text):  # "this": what was just said is in the log
        return "smalltalk", _I_KEEP if asked.group("it") else _I_REMEMBER
    if _SAID_NO.match(text):  # a "no" with no question pending
        return "smalltalk", "OK."
    if _ACKNOWLEDGE.match(text) or emoji.purely_emoji(text.replace(" ", "")):
        return "smalltalk", "👍"  # "ok", "lol ok", "😊"
    answer = next((said for pattern, said in _OTHER_TALK if pattern.search(text)), None)
    return None if answer is None else ("smalltalk", answer)
