"""What the rule-based concierge answers a group member about the group's deliberation.

Four kinds of question, asked in a group (a packet with participants or a member writing;
elsewhere these rules stay silent and leave the message to the others):

- "what did I say about the budget?", "what was my position on the venue?", "where do I
  stand?", "did I say anything about catering?": ``own_words``; of another member by name,
  "what did Carol say about the venue?", "where does Carol stand?". The member's previous position
  and key contributions (the packet's :attr:`~agent.memory.schemas.ConversationContextPacket.
  member`), and what they said that the packet carries (the last turns, the retrieved turns,
  the compressed and summarised lines bearing their name), about the topic when one is named;
  an honest "nothing from you about it" when none of it is.
- "what is still undecided?", "what haven't we decided yet?", "what's left to decide?",
  "which proposals are still open?", "where do we stand?", "which options are on the table?":
  ``list_undecided``. The proposals still under discussion, who made them and who is for and
  against, or that nothing waits for a decision.
- "who proposed the rooftop?": the proposal named, who made it and where it stands.
- "is anyone allergic to anything?", "any dietary requirements?", "is anyone vegetarian?":
  ``ask_fact``. The allergies and diets each member told of themselves, named.

Covered by ``tests/test_rule_group.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from agent.engines.rule_reading import Reading, first_sentence, sentence
from agent.memory.group_brief import stances, undecided
from agent.memory.group_schemas import Participant
from agent.memory.longterm.memory_slots import describe_fact, fact_key, parse_key
from agent.memory.rules.deliberation import is_deliberation_move, participant_key
from agent.memory.rules.extraction import content_stems, split_clauses, without_mention
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef

__all__ = [
    "answer_needs",
    "answer_own_words",
    "answer_positions",
    "answer_proposer",
    "answer_stance",
    "answer_undecided",
]

_F = re.IGNORECASE
_MOST_SAID = 5
_SAID_CHARS = 160

_ASK_OWN = re.compile(
    r"\b(?:what\s+(?:did|have|had)\s+i\s+(?:just\s+|already\s+)?(?:say|said|suggest|suggested"
    r"|propose|proposed|think|thought|argue|argued|mention|mentioned|write|wrote|written)"
    r"|(?:remind\s+me|tell\s+me|recall)\s+what\s+i\s+(?:said|suggested|proposed|thought|wrote)"
    r"|did\s+i\s+(?:say|mention|suggest|propose)\s+anything"
    r"|what(?:'s|\s+is|\s+was|\s+were)\s+my\s+(?:previous\s+|last\s+|current\s+|own\s+)?"
    r"(?:position|stance|view|opinion|take|point|suggestion|proposal|contribution|objection"
    r"|vote)s?"
    r"|where\s+(?:do|did)\s+i\s+stand|my\s+(?:previous|last)\s+position)\b",
    _F,
)
# The same of another member, by name: "what did Carol say?", "what's Bob's position?",
# "where does Erin stand?".
# The name is any word here: only a member's name is answered ("what did you say?" is not).
_ASK_THEIRS = re.compile(
    r"\b(?:what\s+(?:did|has|had)\s+(?P<a>[^\W\d_][\w'-]*)\s+(?:just\s+|already\s+)?(?:say"
    r"|said|suggest|suggested|propose|proposed|think|thought|argue|argued|mention|mentioned|want"
    r"|wanted|write|wrote|written)"
    r"|what(?:'s|\s+is|\s+was|\s+were)\s+(?P<b>[^\W\d_][\w'-]*)'s\s+(?:previous\s+|last\s+"
    r"|current\s+)?(?:position|stance|view|opinion|take|point|suggestion|proposal|objection|vote)s?"
    r"|where\s+(?:does|did)\s+(?P<c>[^\W\d_][\w'-]*)\s+stand)\b",
    _F,
)
# What the members need of food: "is anyone allergic to anything?", "does anyone have
# allergies?", "any dietary requirements?", "is anyone vegetarian?", "who's vegan?".
_ASK_NEEDS = re.compile(
    r"^(?:(?:(?:is|are)\s+(?:any\s?one|anybody|any\s+of\s+(?:us|you|them))|who(?:'s|\s+is|\s+are))"
    r"\s+(?:(?P<allergic>allergic)(?:\s+to\s+(?P<thing>.{1,60}?))?|(?P<diet>vegan|vegetarian|veggie"
    r"|pescatarian|gluten[- ]free|lactose[- ]intolerant|coeliac|celiac|halal|kosher|teetotal))"
    r"|(?:do(?:es)?\s+(?:any\s?one|anybody|any\s+of\s+(?:us|you))\s+have\s+(?:any\s+)?"
    r"|(?:are\s+there\s+)?any\s+|what(?:'s|\s+are)\s+(?:the\s+|our\s+|everyone's\s+)?)"
    r"(?:food\s+)?(?:allergies|dietary\s+(?:requirements|needs|restrictions)))(?:\s+here)?\??$",
    _F,
)
# The topic named after the question: "... about the budget", "... on Friday's venue".
_TOPIC = re.compile(
    r"^\s*(?:so\s+far\s+|earlier\s+|before\s+)?(?:about|on|regarding|concerning|re|for"
    r"|with\s+regard\s+to)\s+(?P<topic>[^?!.]+)",
    _F,
)
_TOPIC_NOISE = content_stems("so far earlier before again today yesterday here anything it")

_ASK_UNDECIDED = re.compile(
    r"\bundecided\b|\bnot\s+(?:yet\s+|been\s+)?(?:decided|agreed|settled)\b"
    r"|\b(?:have|has)n'?t\s+(?:we\s+|been\s+|yet\s+)*(?:decided|agreed|settled)\b"
    r"|\b(?:left|need|needs|have|has|got)\s+to\s+(?:be\s+)?(?:decide|decided|agree|agreed"
    r"|settle|settled)\b|\bremains?\s+(?:to\s+be\s+|open\b)|\bup\s+in\s+the\s+air\b"
    r"|\b(?:open|active|pending|outstanding)\s+(?:proposals?|decisions?)\b"
    r"|\bproposals?\s+(?:are\s+|is\s+)?still\s+open\b|\bneeds?\s+a\s+decision\b"
    r"|\bstill\s+(?:under\s+discussion|being\s+discussed|on\s+the\s+table|open\s+for"
    r"\s+(?:a\s+)?(?:decision|discussion|debate|vote))"
    r"|\bwhat\s+are\s+we\s+still\s+(?:discussing|debating|deciding|voting\s+on)\b"
    # "where do we stand?", "which options are on the table?", "what are our options?"
    r"|\bwhere\s+(?:do|are)\s+we\s+(?:stand|at)\b|\bon\s+the\s+table\b"
    r"|\b(?:what|which)\s+(?:are\s+)?(?:the\s+|our\s+)?options\b",
    _F,
)

# "who proposed the rooftop?", "who suggested Lisbon?"
_ASK_PROPOSER = re.compile(
    r"^who\s+(?:proposed|suggested|came\s+up\s+with|wanted|brought\s+up)\s+(?P<what>.{1,80}?)"
    r"\s*\??$",
    _F,
)

# "who is against Porto?", "who's in favour of the rooftop?", "who supports Lisbon?"
_ASK_STANCE = re.compile(
    r"^who(?:'s|\s+is|\s+are|\s+was|\s+were)?\s+(?:(?P<con>against|opposed\s+to|not\s+keen\s+on)"
    r"|(?P<pro>for|in\s+favou?r\s+of|happy\s+with|ok(?:ay)?\s+with|keen\s+on))\s+"
    r"(?P<what>.{1,80}?)\s*\??$"
    r"|^who\s+(?:(?P<con2>opposes?|opposed|objected\s+to|disagreed\s+with|voted\s+against)"
    r"|(?P<pro2>supports?|supported|agreed\s+(?:with|to)|voted\s+for|backed|likes?|liked))\s+"
    r"(?P<what2>.{1,80}?)\s*\??$",
    _F,
)
# "what's everyone's position?", "where does everyone stand?", "what does everyone think?"
_ASK_POSITIONS = re.compile(
    r"\bwhat(?:'s|\s+is|\s+are)\s+every(?:one|body)'?s?\s+(?:positions?|views?|opinions?|takes?"
    r"|stances?)\b|\bwhere\s+does\s+every(?:one|body)\s+stand\b|\bwhat\s+does\s+every(?:one"
    r"|body)\s+(?:think|want)\b|\bwho\s+(?:thinks|wants)\s+what\b",
    _F,
)

# A line of the packet naming its speaker: a retrieved turn "#12 Ada (8 May 2023): ...", a
# compressed or summary line "#12 Ada: ..." or "#12 Ada [decision]: ...".
# A fact as a summary notes it ("allergy: shellfish", "favourite colour: blue"): not words.
_FACT_ITEM = re.compile(r"^[a-z][a-z ]{0,30}: ")
_LINE = re.compile(
    r"^#(?P<seq>\d+) (?P<who>[^:\n\[(]{1,80}?)(?: \((?P<date>[^)]{1,20})\))?"
    r"(?: \[[a-z ]{1,20}\])?: (?P<said>.+)$"
)


@dataclass(frozen=True, slots=True)
class _Said:
    """One thing the member said, where the packet has it."""

    seq: int
    text: str
    date: str = ""
    quoted: bool = True  # their words, not a summary's note of a fact ("allergy: shellfish")


def _is_group(packet: ConversationContextPacket) -> bool:
    return packet.member is not None or bool(packet.participants)


def answer_own_words(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what did I say about X?" in a group, or "what did Carol say about X?" of another
    member."""
    if not _is_group(packet):
        return None
    match = _ASK_OWN.search(reading.text)
    theirs = None if match is not None else _ASK_THEIRS.search(reading.text)
    if theirs is not None:
        name = next(g for g in theirs.groups() if g)
        named = [p for p in packet.participants if p.name.casefold() == name.casefold()]
        member = named[0] if named else None
        if member is None:
            return None  # no member of that name: another rule, or the quote, may answer
        match, voice = theirs, _Voice(member.name, f"{member.name}'s", f"{member.name} said")
    elif match is not None:
        member, voice = packet.member, _YOU
    else:
        return None
    about = _TOPIC.match(reading.text[match.end() :])
    topic = " ".join(about.group("topic").split()) if about else ""
    if member is None:
        return "I have nothing from you in this group yet: no position, no proposal."
    return _words_of(packet, member, topic, voice)


@dataclass(frozen=True, slots=True)
class _Voice:
    """How an answer names the member it is about: "you" to them, their name to others."""

    who: str  # "you", "Carol"
    whose: str  # "your", "Carol's"
    said: str  # "you said", "Carol said"


_YOU = _Voice("you", "your", "you said")


def _words_of(
    packet: ConversationContextPacket, member: Participant, topic: str, voice: _Voice
) -> str:
    """The member's previous position, key contributions and what they said that the packet
    carries, about ``topic`` when one is named."""
    wanted = content_stems(topic) - _TOPIC_NOISE
    points = [
        p
        for p in (member.last_position, *member.key_contributions)
        if p and (not wanted or wanted & content_stems(p))
    ]
    said = [
        s
        for s in _said_by(packet, member)
        if (not wanted or wanted & content_stems(s.text)) and not _restates(s.text, points)
    ]
    position = member.last_position if member.last_position in points else ""
    extra = [p for p in dict.fromkeys(points) if p != member.last_position]
    lines = [f"• {p}" for p in extra] + [_said_line(s) for s in said[-_MOST_SAID:]]
    whose = voice.whose[:1].upper() + voice.whose[1:]
    if wanted and not (position or lines):
        told = f"I have nothing from {voice.who} about {topic}."
        if member.last_position:
            told += f" {whose} previous position: {member.last_position}."
        return told
    sections = [f"{whose} previous position: {position}."] if position else []
    if wanted and lines:
        sections.append(f"About {topic}, {voice.said}:\n" + "\n".join(lines))
    elif lines:
        if extra:
            sections.append(f"{whose} key contributions:\n" + "\n".join(lines[: len(extra)]))
        if said:
            sections.append(f"What {voice.said} last:\n" + "\n".join(lines[len(extra) :]))
    if not sections:
        if voice is _YOU:
            return "You haven't taken a position here yet, and I keep nothing else you said."
        return f"{voice.who} hasn't taken a position here yet, and I keep nothing else they said."
    return "\n\n".join(sections)


def answer_undecided(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what is still undecided?" in a group."""
    if not _ASK_UNDECIDED.search(reading.text) or not _is_group(packet):
        return None
    waiting = undecided(packet.proposals)
    decided = len(packet.decisions)
    so_far = f"{decided} decision{'' if decided == 1 else 's'} so far" if decided else ""
    if not waiting:
        said = "Nothing is waiting for a decision: no proposal is open."
        if so_far:
            said += f" {so_far.capitalize()} (ask “what did we decide?”)."
        return said + " Propose something with “I propose …”."
    lines = [f"• {p.text}, proposed by {p.proposer} ({stances(p)})" for p in waiting]
    said = "Still undecided:\n" + "\n".join(lines)
    return said + (f"\n\n{so_far.capitalize()}: ask “what did we decide?”." if so_far else "")


def answer_proposer(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "who proposed the rooftop?" in a group: the proposal it names, its proposer and
    where it stands; ``None`` when it names none (another rule may answer)."""
    asked = _ASK_PROPOSER.match(reading.text)
    if asked is None or not _is_group(packet):
        return None
    wanted = content_stems(asked.group("what"))
    named = [p for p in packet.proposals if wanted and wanted <= content_stems(p.text)]
    if not named:
        return None
    return " ".join(
        f"{p.proposer} proposed {p.text} ({p.status if p.status != 'active' else stances(p)})."
        for p in named
    )


def answer_stance(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "who is against Porto?" in a group: the members for or against the proposal it
    names (its proposer is for it); ``None`` when it names none."""
    asked = _ASK_STANCE.match(reading.text)
    if asked is None or not _is_group(packet):
        return None
    wanted = content_stems(asked.group("what") or asked.group("what2"))
    named = [p for p in packet.proposals if wanted and wanted <= content_stems(p.text)]
    if not named:
        return None
    against = bool(asked.group("con") or asked.group("con2"))
    stance = "oppose" if against else "support"
    lines = []
    for proposal in named:
        who = [r.participant for r in proposal.reactions if r.stance == stance]
        if not against:
            who = [proposal.proposer, *(w for w in who if w != proposal.proposer)]
        said = f"{' and '.join(who)} {'is' if len(who) == 1 else 'are'}" if who else "Nobody is"
        where = f"proposed by {proposal.proposer}; {stances(proposal)}"
        lines.append(f"{said} {'against' if against else 'for'} {proposal.text} ({where}).")
    return " ".join(lines)


def answer_positions(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what's everyone's position?" in a group: each member's last position."""
    if _ASK_POSITIONS.search(reading.text) is None or not _is_group(packet):
        return None
    everyone = [*packet.participants, *([packet.member] if packet.member else [])]
    seen = {p.participant_id: p for p in everyone}  # the asker is the packet's member
    placed = sorted((p for p in seen.values() if p.last_position), key=lambda p: p.last_turn)
    if not placed:
        return "Nobody has taken a position yet: no proposal, vote or opinion so far."
    lines = "\n".join(f"• {p.name}: {p.last_position}" for p in placed)
    return f"Where everyone stands (their latest position):\n{lines}"


def answer_needs(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "is anyone allergic to anything?", "any dietary requirements?", "who's
    vegetarian?" in a group with what each member told of themselves (their allergies and
    diets, named), or say that no one told of any."""
    asked = _ASK_NEEDS.match(reading.text)
    if asked is None or not _is_group(packet):
        return None
    thing = asked.group("thing") or ""
    wanted = content_stems(thing) - content_stems("anything something food what")
    diets = asked.group("diet") or ""
    found = []
    for fact in packet.facts:
        name = parse_key(fact.key).name
        if fact.speaker is None or name not in {"allergy", "diet"}:
            continue
        if asked.group("allergic") and name != "allergy":  # "is anyone allergic?": allergies
            continue
        if diets and not (name == "diet" and content_stems(diets) & content_stems(fact.value)):
            continue
        if wanted and not (name == "allergy" and wanted & content_stems(fact.value)):
            continue
        said = Fact(key=fact_key(fact.speaker, name, fact.value), value=fact.value, turn=fact.turn)
        found.append(sentence(describe_fact(said)))
    if found:
        return " ".join(found)
    if diets:
        return f"No one here has told me they're {diets}."
    if asked.group("allergic"):
        return f"No one here has told me of an allergy{' to ' + thing if wanted else ''}."
    return "No one here has told me of an allergy or a diet."


def _restates(text: str, points: Sequence[str]) -> bool:
    """Whether ``text`` says what one of ``points`` says (most of the words of the shorter)."""
    words = content_stems(text)
    for point in points:
        theirs = content_stems(point)
        if 4 * len(words & theirs) >= 3 * min(len(words), len(theirs)) > 0:
            return True
    return False


def _statement(text: str) -> bool:
    """Whether ``text`` says something of the member's own: not a question to the bot ("what
    did I say?"), though a proposal asked as one ("what if we ...?") is."""
    text = text.strip()
    return not text.endswith("?") or is_deliberation_move(text, split_clauses(text))


def _said_line(said: _Said) -> str:
    when = f" ({said.date})" if said.date else ""
    text = without_mention(said.text)
    return f"• “{text}”{when}" if said.quoted else f"• {text}{when}"


def _said_by(packet: ConversationContextPacket, member: Participant) -> list[_Said]:
    """What ``member`` said that the packet carries, oldest first, one entry per turn."""
    found: dict[int, _Said] = {}
    for said in _lines_of(packet, member.name):
        found.setdefault(said.seq, said)
    for turn in packet.recent_turns:
        if participant_key(turn.user_id, turn.speaker) == member.participant_id:
            date = f"{turn.created_at.day} {turn.created_at:%b %Y}"
            found[turn.seq] = _Said(turn.seq, first_sentence(turn.user_text, _SAID_CHARS), date)
    return [found[seq] for seq in sorted(found) if _statement(found[seq].text)]


def _lines_of(packet: ConversationContextPacket, name: str) -> Iterator[_Said]:
    """The lines of the packet's retrieved turns, compressed turns and summary by ``name``;
    retrieved ones (with their date) first."""
    texts = [(item.text, False) for item in packet.retrieved if item.kind != "memory"]
    texts += [(line, False) for line in packet.recent_turn_summaries]
    texts.append((packet.rolling_session_summary, True))
    for text, summary in texts:
        for line in text.splitlines():
            match = _LINE.match(line.strip())
            if match is None or match.group("who") != name:
                continue
            said = match.group("said").split(" -> ", 1)[0]  # the bot's answer is not theirs
            noted = summary and _FACT_ITEM.match(said) is not None
            yield _Said(int(match.group("seq")), first_sentence(said, _SAID_CHARS),
                        match.group("date") or "", quoted=not noted)  # fmt: skip
