"""The concierge: the engine that answers each message, and the offline rule-based one.

:class:`RuleBasedConcierge` is the default and needs no model, no network and no clock of its
own: its reply is a function of the :class:`~agent.memory.ConversationContextPacket` (the
session as it stood before this message) and the message itself, with the message's
``received_at`` as "now". Only the ids of the reminders it schedules are new each time.

What it understands (each reply names its ``intent``):

- facts the user states about themselves and the people and pets in their life ("my name is
  Ada", "I'm planning a trip to Lisbon in May", "my sister Mia lives in Porto"):
  ``state_fact``, saying "Noted" only for what long-term memory keeps for good (a hedge is
  kept unconfirmed, and the reply says so); questions about them, their history and several
  values ("what's my name?", "where did I live before?", "what are my plans?", "where does my
  sister live?"): ``ask_fact``; "what do you know about me?": ``list_facts``;
- "forget that my sister lives in Porto": ``forget_memory``, with the ids of the long-term
  memories it names on the reply (the lane erases them in the turn's transaction);
- to-dos ("remind me to book the hotel"): ``add_todo``; done ("I booked the hotel", "done 1"):
  ``close_todo``; "what is still open?": ``list_open``;
- timed reminders ("remind me in 10 minutes to call mom"): ``set_reminder``, with a
  ``schedule_reminder`` job ref that the adapter schedules after the turn is committed;
- promises ("I'll send you the report"): ``note_commitment``; an open question settled by a
  statement or dropped by "never mind": ``close_question``; a question it cannot answer or a
  request it cannot do, kept on the list: ``kept_open``; in a group, a proposal, vote or
  decision said to it: ``deliberation``;
- "what did we talk about?": ``recap``; "what did we decide?": ``list_decisions`` (a group's
  decisions and the proposals still open); greetings and thanks: ``smalltalk``; ``help``;
- anything else, where no rule acted: ``unknown`` (``reminder_unreadable`` for a reminder
  whose time it cannot read), said honestly in at most 200 characters with one example and a
  pointer to /help. The state manager then changes nothing (it reads the turn's intent), so
  the bot never says it did not understand while acting on the message.

Facts, to-dos and loops in the current message are not in the packet yet (the lane records
them from the committed turn), so the concierge reads the message with the same rules
(:mod:`agent.memory.rules.extraction`, and the state's loop rules on a preview of the turn) and
answers from both. It never touches the database.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agent.memory.longterm.memory_slots import (
    USER,
    describe_fact,
    describe_memory,
    fact_key,
    in_second_person,
    parse_key,
    role_and_name,
    slot_of,
)
from agent.memory.rules.deliberation import is_deliberation_move
from agent.memory.rules.dialogue_acts import HELP_OR_ERROR_INTENTS, is_dismissal, read_acts
from agent.memory.rules.extraction import (
    Clause,
    ReminderRequest,
    content_stems,
    is_reminder_request,
    normalize_text,
    parse_reminder,
    split_clauses,
)
from agent.memory.rules.fact_extraction import PEOPLE, PETS, extract_facts
from agent.memory.rules.session_rules import (
    GROUP_CHAT_TYPES,
    PERSONAL_CHAT_TYPES,
    LoopUpdate,
    loop_owner,
    merge_facts,
    update_dialogue_loops,
    update_open_loops,
)
from agent.memory.schemas import (
    ConversationContextPacket,
    ConversationTurn,
    Fact,
    InboundMessage,
    JobRef,
    Memory,
    OpenLoop,
    Reply,
)
from agent.memory.writer import PromotionPolicy
from agent.utils import ids

__all__ = ["RuleBasedConcierge"]

# Telegram caps a message at 4096 characters; stay clear of it.
_MAX_REPLY_CHARS = 4000
_RECAP_LINES = 12
_MONTHS = (
    "January February March April May June July August September October November December"
).split()

_CAPABILITIES = (
    "• remember what you tell me: “my name is Ada”, “I live in Lisbon”, “I'm planning a trip "
    "to Lisbon in May”\n"
    "• answer “what's my name?”, “what do you know about me?”, “what did we talk about?”\n"
    "• keep your to-do list: “remind me to book the hotel”, then “I booked the hotel” "
    "(or “done 1”); ask “what is still open?”\n"
    "• set reminders: “remind me in 10 minutes to call mom”, “remind me at 18:30 to stretch” "
    "(times in UTC)"
)
_HELP = "I'm your offline concierge: no AI model, just rules I follow reliably. I can:\n"
# What a message not understood gets: at most 200 characters, one example, a pointer to /help.
_UNKNOWN = (
    "Sorry, I didn't understand that, so I noted nothing. Try “remind me in 10 minutes to call "
    "mom”, or send /help to see what I can do."
)
_NO_TEXT = "I can only read text for now. Try “my name is Ada”, or send /help to see what I can do."
_UNKNOWN_COMMAND = "I don't know the command {}. Send /help to see the commands I know."
_REMINDER_FORMS = (
    "I couldn't read the time of that reminder. Try “remind me in 10 minutes to call mom” "
    "(times in UTC, up to a year ahead), or see /help."
)
# Reply intents that change the state, first: the reply is named after its side effect.
_SIDE_EFFECTS = ("set_reminder", "close_todo", "add_todo", "close_question", "note_commitment")

_F = re.IGNORECASE
_ASK_NAME = re.compile(
    r"\b(?:what(?:'s| is) my (?:first |full )?name|who am i\b|do you (?:know|remember) (?:my "
    r"name|who i am)|what do you call me|say my name|what am i called)",
    _F,
)
_ASK_ABOUT_ME = re.compile(
    r"\bwhat (?:else )?(?:do|did) you (?:know|remember)(?: about me)?\b|\bwhat have i told you"
    r"|\btell me about (?:me|myself)\b|\bwhat do you know about me",
    _F,
)
_ASK_OPEN = re.compile(
    r"\bwhat(?:'s|\s+is|\s+are)?\s+(?:still\s+)?(?:open|pending|left to do)\b|\bon my (?:to-?do "
    r")?list\b|\b(?:my|the) (?:to-?do|task) list\b|\bshow (?:me )?my (?:list|to-?dos?|tasks|"
    r"reminders)\b|\bwhat do i (?:still )?(?:need|have) to do\b|\b(?:my|any|what) reminders\b"
    r"|\bopen loops\b|^(?:list|to-?dos?|tasks|reminders)$",
    _F,
)
_ASK_RECAP = re.compile(
    r"\bwhat (?:did|have) we (?:talk|talked|discuss|discussed|chat|chatted|speak|spoken|said)\b"
    r"|\bwhat were we (?:talking|discussing)\b|\bwhere were we\b|\brecap\b|\bsummar(?:y|i[sz]e)\b",
    _F,
)
_ASK_DECISIONS = re.compile(
    r"\bwhat (?:did|have) (?:we|you (?:all|guys)) (?:decide|decided|agree|agreed|settle|settled)"
    r"|\bwhat (?:was|has been|got) (?:decided|agreed)|\b(?:any|the|our) decisions?\b(?: so far)?\?"
    r"|\bwhat are the decisions\b",
    _F,
)
_ASK_HELP = re.compile(
    r"^/?(?:help|start|menu|commands)\b|\bwhat can you do\b|\bhow do(?:es)? (?:this|you) work\b"
    r"|\bwho are you\b|\bwhat are you\b",
    _F,
)
_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|howdy|yo|hallo|hola|salut|ciao|bonjour|greetings"
    r"|good (?:morning|afternoon|evening|day))\b",
    _F,
)
_THANKS = re.compile(r"\b(?:thanks|thank you|thx|ty|cheers|much appreciated)\b", _F)
_HOW_ARE_YOU = re.compile(r"\bhow are you\b|\bhow(?:'s| is) it going\b", _F)
_BYE = re.compile(r"^(?:bye|goodbye|good night|see you|see ya|cya|later)\b", _F)

# (question, fact keys asked for (a trailing ":" is a prefix), what is missing if unknown)
_ASK_FACTS: tuple[tuple[re.Pattern[str], tuple[str, ...], str], ...] = tuple(
    (re.compile(pattern, _F), tuple(keys.split()), missing)
    for pattern, keys, missing in (
        (r"\bwhere do i (?:live|stay)\b|\bwhere am i (?:living|based|staying)\b", "location",
         "where you live"),
        (r"\bwhere (?:am i|do i come) from\b|\bwhere was i born\b|\bmy hometown\b", "hometown",
         "where you're from"),
        (r"\bwhat am i planning\b|\bwhat(?:'s| is| are) my plans?\b|\bwhat (?:do|did) i plan\b",
         "plan:", "about your plans"),
        (r"\bwhat(?:'s| is| are) my (?:goals?|aims?)\b", "goal:", "about your goals"),
        (r"\bwhat (?:did|have) i decided?\b|\bwhat are my decisions\b", "decision:",
         "about decisions of yours"),
        (r"\bwhat am i allergic to\b|\bwhat are my allergies\b|\bam i allergic\b",
         "allergy:", "about allergies"),
        (r"\bwhat (?:can't|cannot|can i not|don't|shouldn't) i (?:eat|drink)\b"
         r"|\bwhat(?:'s| is) my diet\b|\bdietary\b", "allergy: avoid: diet",
         "about your diet"),
        (r"\bwhat (?:do i (?:dislike|hate)|don't i like)\b", "dislikes:", "what you don't like"),
        (r"\bwhat(?:'s| is| are) my (?:routines?|habits?)\b", "routine:", "about your routines"),
        (r"\bwhat (?:did i ask you to|have i asked you to|should you) remember\b"
         r"|\bmy notes\b", "note:", "anything to remember (say /remember …)"),
        (r"\bwhat pets? do i have\b|\bdo i have (?:any )?pets?\b|\bmy pets\b", "pet:",
         "about any pets"),
        (r"\bwho (?:is|are) (?:in )?my family\b|\bmy (?:family|relatives)\b", "relative:",
         "about your family and friends"),
        (r"\bwhere do i work\b|\bwhat(?:'s| is) my (?:job|work|profession)\b", "job workplace",
         "about your work"),
        (r"\bwhat do i do for (?:a )?(?:living|work)\b", "job", "your job"),
        (r"\bwhen(?:'s| is) my birthday\b|\bwhat(?:'s| is) my (?:birthday|bday)\b", "birthday",
         "your birthday"),
        (r"\bhow old am i\b|\bwhat(?:'s| is) my age\b", "age", "your age"),
        (r"\bwhat do i (?:like|love|enjoy)\b|\bwhat are my (?:hobbies|interests)\b", "likes:",
         "what you like"),
        (r"\bwhat(?:'s| is) my (?:favou?rite|fav) (?P<thing>[^\W\d_]+(?: [^\W\d_]+)?)",
         "favourite:", "your favourites"),
    )
)  # fmt: skip

_WHO = rf"(?P<who>(?:{PEOPLE}|{PETS}|[A-Z][^\W\d_]+))"
# (question about someone, the attribute asked for; "" for who they are)
_ASK_OTHER: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, _F), attribute)
    for pattern, attribute in (
        (rf"\bwhere (?:does|did) (?:my )?{_WHO} (?:live|stay|move)\b", "location"),
        (rf"\bwhere(?:'s| is) (?:my )?{_WHO} (?:living|based)\b", "location"),
        (rf"\bwhere (?:is|does) (?:my )?{_WHO} (?:from|come from)\b", "hometown"),
        (rf"\bwhere does (?:my )?{_WHO} work\b", "workplace"),
        (rf"\bwhat does (?:my )?{_WHO} do\b", "job"),
        (rf"\bwhat(?:'s| is) (?:my )?{_WHO}'s job\b", "job"),
        (rf"\bhow old is (?:my )?{_WHO}\b", "age"),
        (rf"\bwhen(?:'s| is) (?:my )?{_WHO}'s (?:birthday|bday)\b", "birthday"),
        (rf"\bwhat does (?:my )?{_WHO} (?:like|love|enjoy)\b", "likes"),
        (rf"\bwhat(?:'s| is) (?:the name of )?my {_WHO}(?:'s|s')? (?:name|called)\b", ""),
        (rf"\bwhat(?:'s| is) my {_WHO} called\b", ""),
        (rf"\bwho(?:'s| is) (?:my )?{_WHO}\b", ""),
        (rf"\b(?:tell me|what do you know) about (?:my )?{_WHO}\b", ""),
    )
)  # fmt: skip
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
# "forget that my sister lives in Porto", "please forget my sister", "delete my birthday"
_FORGET = re.compile(
    r"^(?:@\w+[,:]?\s+)?(?:please\s+|(?:can|could|would) you(?: please)?\s+)?"
    r"(?:forget|erase|delete|remove)\s+"
    r"(?:(?:the fact )?that\s+|about\s+|what i (?:said|told you) about\s+)?(?P<what>.+?)"
    r"[\s.!?]*$",
    _F,
)
# What "forget ..." says that is no memory: a pronoun ("forget it": never mind), the list
# (to-dos and reminders have their own words).
_NOT_FORGETTABLE = re.compile(
    r"(?:it|that|this|them|about it)|.*\b(?:list|to-?dos?|tasks?|reminders?)\b.*", _F
)
# "forget everything": more than one memory at a time is a command, with a confirmation.
_FORGET_ALL = re.compile(
    r"(?:everything|all|all of (?:it|this)|it all|this conversation|the conversation|our "
    r"conversation|(?:everything|all) (?:about me|you know|i (?:said|told you)))",
    _F,
)
_HOW_TO_FORGET = (
    "To erase this whole conversation, send /forget (I'll ask first). To erase one thing I "
    "remember, say “forget that …” or use /facts forget N."
)
# Words of a request to forget that name no memory, and words that name an attribute (as the
# stems the loop rules read words with: one tokeniser, one stop-word list).
_FORGET_FILLER = content_stems("where what about who when which how")
_ATTRIBUTE_STEMS: dict[str, frozenset[str]] = {
    stem: content_stems(attributes)
    for words, attributes in (
        ("live lives living home address", "location"),
        ("work works job", "job workplace"),
        ("plan plans", "plan"),
        ("like likes", "likes"),
        ("old", "age"),
    )
    for stem in content_stems(words)
}
_FORGET_IN_GROUP = (
    "I keep no long-term memory about anyone in a group, so there is nothing of that kind to "
    "forget. /forget erases this group's conversation."
)

# Words for an attribute in a question about its history.
_ATTRIBUTE_WORDS = {
    "home": "location", "address": "location", "city": "location", "place": "location",
    "work": "job", "profession": "job", "employer": "workplace", "company": "workplace",
    "bday": "birthday", "diet": "diet",
}  # fmt: skip
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
# A summary line: "#12 Ada: ..." or, tagged by the summarizer, "#12 Ada [decision]: ...".
_SUMMARY_LINE = re.compile(
    r"#\d+ (?P<who>[^:\n\[]{1,80}?)(?: \[(?P<tag>[a-z ]{1,20})\])?: (?P<said>.*)"
)
_RECAP_VERBS = {"decision": " decided", "fact": " told me", "open question": " asked"}


@dataclass(frozen=True, slots=True)
class _Reading:
    """The current message read against the packet: what the state will become."""

    text: str
    now: datetime
    new_facts: tuple[Fact, ...]
    facts: tuple[Fact, ...]
    loops: LoopUpdate
    reminder: ReminderRequest | None


class RuleBasedConcierge:
    """The offline concierge: deterministic rules, useful without any model.

    Args:
        job_ids: makes the id of each reminder it schedules (default :func:`agent.utils.ids.job_id`;
            tests pass a counter).
        promotion: the lane's promotion gate: the concierge says it noted a fact only when the
            gate keeps it (the same rule, applied to the same reading of the message).
    """

    def __init__(
        self,
        *,
        job_ids: Callable[[], str] = ids.job_id,
        promotion: PromotionPolicy | None = None,
    ) -> None:
        self._job_ids = job_ids
        self._promotion = promotion or PromotionPolicy()

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        """Answer ``message`` from ``packet`` and what the message itself says.

        Args:
            packet: the session before this message.
            message: the new message; its ``received_at`` is "now".

        Returns:
            The reply, with its intent; for a reminder, action ``schedule_reminder`` and the job.
        """
        reply = self._answer(packet, message)
        if reply.text and len(reply.text) > _MAX_REPLY_CHARS:
            reply = reply.model_copy(update={"text": reply.text[: _MAX_REPLY_CHARS - 1] + "…"})
        return reply

    def _answer(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        text = normalize_text(message.text or "")
        if not text:
            return Reply(text=_NO_TEXT, intent="unknown")  # nothing to read: not understood
        forget = _FORGET.match(text)
        if forget is not None and _FORGET_ALL.fullmatch(forget.group("what")):
            return Reply(text=_HOW_TO_FORGET, intent="forget_memory")
        if forget is not None and not _NOT_FORGETTABLE.fullmatch(forget.group("what")):
            return _forget(packet, message, forget.group("what"))
        seq = packet.turn_count + 1
        now = _utc(message.received_at)
        new_facts = extract_facts(text, turn=seq)
        # What earlier sessions taught (long-term memory), overridden by this session's facts.
        known = merge_facts(_remembered(packet), packet.facts)
        reading = _Reading(
            text=text,
            now=now,
            new_facts=new_facts,
            facts=merge_facts(known, new_facts),
            loops=update_open_loops(packet.open_loops, text, seq=seq),
            reminder=parse_reminder(text, now),
        )
        parts: list[str] = []
        intents: list[str] = []
        jobs: tuple[JobRef, ...] = ()
        if reading.reminder is not None:
            job = JobRef(
                job_id=self._job_ids(),
                kind="reminder",
                label=reading.reminder.label or "reminder",
                due_at=reading.reminder.due_at,
            )
            jobs = (job,)
            parts.append(_reminder_set(reading.reminder, now))
            intents.append("set_reminder")
        elif is_reminder_request(text):
            parts.append(_REMINDER_FORMS)
            intents.append("reminder_unreadable")
        parts.extend(_todo_acks(reading.loops, intents))
        personal = message.chat_type in PERSONAL_CHAT_TYPES
        parts.extend(
            _fact_acks(
                known, reading.new_facts, intents, kept=self._promotion.keeps, personal=personal
            )
        )
        clauses = split_clauses(message.text)
        parts.extend(_dialogue_acks(packet, message, reading, clauses, intents))
        answer = _question(packet, reading, jobs)
        if answer is not None:
            intents.append(answer[0])
            parts.append(answer[1])
        if not parts:
            intent, said = _unanswered(packet, message, reading, clauses)
            intents.append(intent)
            parts.append(said)
        return Reply(
            text="\n\n".join(parts),
            intent=_main_intent(intents),
            action_name=_action(reading.loops, jobs),
            job_refs=jobs,
        )


def _forget(packet: ConversationContextPacket, message: InboundMessage, what: str) -> Reply:
    """Erase what "forget that ..." names of the chat's current memories, and say what.

    The memories are matched by what the words state (a fact: "my sister lives in Porto" is
    the sister's home, if it is Porto), else by their words ("forget my sister", "forget where
    I live"). Nothing is erased unless something matches; the reply says which it is.
    """
    if message.chat_type not in PERSONAL_CHAT_TYPES:
        return Reply(text=_FORGET_IN_GROUP, intent="forget_memory")
    current = [m for m in packet.memories if m.valid_until is None]
    matched = _matching_memories(current, what)
    if not matched:
        said = _first_sentence(what, 80)
        return Reply(
            text=f"I don't remember anything like “{said}”, so I erased nothing. "
            "/facts lists what I remember.",
            intent="forget_memory",
        )
    erased = "; ".join(describe_memory(m) for m in matched)
    return Reply(
        text=f"Done, I've forgotten: {erased}.",
        intent="forget_memory",
        action_name="forget_memory",
        forget_memories=tuple(m.memory_id for m in matched),
    )


def _matching_memories(memories: Sequence[Memory], what: str) -> list[Memory]:
    stated = extract_facts(what, turn=0)
    if stated:
        wanted = [parse_key(f.key) for f in stated]
        values = {f.value.casefold() for f in stated}
        return [
            m
            for m in memories
            if m.text.casefold() in values
            and any(
                w.attribute == m.attribute and _same_subject(w.subject, m.subject) for w in wanted
            )
        ]
    words = content_stems(what) - _FORGET_FILLER
    if not words:
        return []

    def stems_of(memory: Memory) -> frozenset[str]:
        attributes = memory.attribute.replace(":", " ")
        return content_stems(f"{memory.subject} {attributes} {memory.text}")

    found = []
    for memory in memories:
        kept = stems_of(memory)
        if all(
            word in kept or bool(_ATTRIBUTE_STEMS.get(word, frozenset()) & kept)
            for word in words
        ):
            found.append(memory)
    return found


def _same_subject(said: str, kept: str) -> bool:
    # "my sister" is "sister Mia" when that is who the memory is about.
    if said.casefold() == kept.casefold():
        return True
    role, _ = role_and_name(kept)
    return said.casefold() == role.casefold()


def _remembered(packet: ConversationContextPacket) -> tuple[Fact, ...]:
    # The chat's current long-term memories, as the facts the rules read.
    # An unconfirmed one (said with a hedge) is read as hedged: answers say so.
    return tuple(
        Fact(
            key=fact_key(m.subject, m.attribute, m.text),
            value=m.text,
            turn=0,
            mode="hedged" if m.status == "candidate" else "stated",
        )
        for m in packet.memories
        if m.valid_until is None
    )


def _past(packet: ConversationContextPacket) -> list[Memory]:
    # Values the user replaced, most recently ended first.
    past = [m for m in packet.memories if m.valid_until is not None]
    return sorted(past, key=lambda m: m.valid_until or m.valid_from, reverse=True)


def _main_intent(intents: Sequence[str]) -> str:
    # A reply is marked as help or an error (not understood, never summarised) only when all of
    # it is: if any rule acted, the message was understood and the turn is named after that.
    understood = [i for i in intents if i not in HELP_OR_ERROR_INTENTS]
    if not understood:
        return intents[0]
    if "reminder_unreadable" in intents:
        # The offline reply carries the reminder's error: a model must not answer it instead
        # (set_reminder is delegated to the offline rules).
        understood.append("set_reminder")
    # Side effects first (a reply that changes the state is named after the change), then the
    # question answered, then the facts acknowledged.
    ranked = sorted(understood, key=lambda i: (*_SIDE_EFFECTS, i).index(i))
    questions = [i for i in ranked if i != "state_fact"]
    return questions[0] if questions else ranked[0]


def _action(loops: LoopUpdate, jobs: Sequence[JobRef]) -> str | None:
    # The action names what changed: nothing changes when a to-do was already on the list.
    if jobs:
        return "schedule_reminder"
    if loops.closed:
        return "close_todo"
    return "add_todo" if loops.opened else None


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _when(due: datetime, now: datetime) -> str:
    due = _utc(due)
    short = due - now < timedelta(minutes=1) and due.second
    clock = due.strftime("%H:%M:%S" if short else "%H:%M") + " UTC"
    if due.date() == now.date():
        return f"at {clock}"
    if due.date() == (now + timedelta(days=1)).date():
        return f"tomorrow at {clock}"
    day = f"{due.day} {_MONTHS[due.month - 1]}"
    return f"on {day} at {clock}" if due.year == now.year else f"on {day} {due.year} at {clock}"


def _reminder_set(reminder: ReminderRequest, now: datetime) -> str:
    when = _when(reminder.due_at, now)
    if not reminder.label:
        return f"I'll remind you {when}."
    return f"I'll remind you {when} {reminder.link} {in_second_person(reminder.label)}."


def _listing(items: Sequence[str]) -> str:
    quoted = [in_second_person(item) for item in items]
    return quoted[0] if len(quoted) == 1 else "; ".join(quoted)


def _todo_acks(loops: LoopUpdate, intents: list[str]) -> list[str]:
    said: list[str] = []
    if loops.closed:
        said.append(f"Great, I've ticked off: {_listing([lp.text for lp in loops.closed])}.")
        intents.append("close_todo")
    if loops.unmatched:
        missing = ", ".join(f"“{in_second_person(text)}”" for text in loops.unmatched)
        said.append(f"I couldn't find {missing} on your list. Ask “what is still open?” to see it.")
        intents.append("close_todo")
    if loops.opened:
        said.append(f"Added to your list: {_listing([lp.text for lp in loops.opened])}.")
        intents.append("add_todo")
    if loops.already_open:
        again = _listing([lp.text for lp in loops.already_open])
        said.append(f"That's already on your list: {again}.")
        intents.append("add_todo")
    return said


def _dialogue_preview(
    packet: ConversationContextPacket,
    message: InboundMessage,
    reading: _Reading,
    clauses: Sequence[Clause],
    intent: str,
) -> tuple[tuple[OpenLoop, ...], tuple[OpenLoop, ...]]:
    """Return the loops the state's dialogue rules will open and close for this message if
    the reply has ``intent``: the very rule the state manager applies to the committed turn,
    so what the reply says is what the state records."""
    seq = packet.turn_count + 1
    turn = ConversationTurn(
        turn_id="preview",
        session_id=packet.conversation_id,
        seq=seq,
        user_text=message.text,
        assistant_text="…",
        intent=intent,
        created_at=reading.now,
        user_id=message.user_id,
        speaker=message.speaker,
    )
    owner = loop_owner(turn, message.chat_type)
    loops, closed = update_dialogue_loops(reading.loops.loops, turn, clauses, owner=owner)
    opened = tuple(lp for lp in loops if lp.opened_turn == seq and lp.kind != "todo")
    return opened, closed


def _quoted(loops: Sequence[OpenLoop]) -> str:
    return "; ".join(f"“{lp.text}”" for lp in loops)


def _dialogue_acks(
    packet: ConversationContextPacket,
    message: InboundMessage,
    reading: _Reading,
    clauses: Sequence[Clause],
    intents: list[str],
) -> list[str]:
    """Acknowledge the promises the message makes and the open questions it settles."""
    # As if the reply kept things open: asking a question again does not answer it (it would,
    # with a reply that answers it); a statement that covers it or "never mind" does.
    opened, closed = _dialogue_preview(packet, message, reading, clauses, "kept_open")
    said: list[str] = []
    if closed:
        said.append(f"OK, that's off your list: {_quoted(closed)}.")
        intents.append("close_question")
    promised = [lp for lp in opened if lp.kind == "commitment"]  # opened whatever the reply
    if promised:
        said.append(f"Noted your promise: {_quoted(promised)}. Tell me when it's done.")
        intents.append("note_commitment")
    elif read_acts(clauses).commitments and not reading.loops.opened:
        said.append("You promised that already: it's on your list.")
        intents.append("note_commitment")
    return said


def _unanswered(
    packet: ConversationContextPacket,
    message: InboundMessage,
    reading: _Reading,
    clauses: Sequence[Clause],
) -> tuple[str, str]:
    """Answer a message no rule acted on: small talk, a group's move, a question kept open,
    or, honestly and briefly, "I didn't understand" (then the turn changes no state)."""
    talk = _smalltalk(packet, reading)
    if talk is not None:
        return talk
    if message.chat_type in GROUP_CHAT_TYPES and is_deliberation_move(message.text, clauses):
        return "deliberation", "Noted for the group. Ask “what did we decide?” to see where we are."
    acts = read_acts(clauses)
    if acts.questions or acts.requests:
        verb = "answer" if acts.questions else "do"
        kept, _ = _dialogue_preview(packet, message, reading, clauses, "kept_open")
        if not kept:
            return "kept_open", f"I still can't {verb} that offline: it stays on your list."
        return "kept_open", (
            f"I can't {verb} that offline, so I've kept it on your list: {_quoted(kept)}. "
            "Ask “what is still open?” to see it."
        )
    return "unknown", _UNKNOWN


def _sentence(phrase: str) -> str:
    return phrase[:1].upper() + phrase[1:] + "."


def _fact_acks(
    known: Sequence[Fact],
    new: Sequence[Fact],
    intents: list[str],
    *,
    kept: Callable[[Fact], bool],
    personal: bool,
) -> list[str]:
    # Say exactly what was kept: for good in a personal chat (long-term memory, across /new),
    # for this conversation in a group; a hedge is kept unconfirmed, and said to be.
    if not new:
        return []
    intents.append("state_fact")
    said: list[str] = []
    before = {slot_of(f.key): f for f in known}
    old_name = before["name"].value if "name" in before else None
    noted: list[str] = []
    unsure: list[str] = []
    for fact in new:
        if personal and not kept(fact):
            unsure.append(describe_fact(fact))
            continue
        if fact.key != "name":
            previous = before.get(slot_of(fact.key))
            phrase = describe_fact(fact)
            # "updated", not the old value: a reply that repeated it would keep it on file in
            # this conversation after its own was erased.
            if previous is not None and previous.value.casefold() != fact.value.casefold():
                phrase += " (updated)"
            noted.append(phrase)
        elif old_name is None:
            said.append(f"Nice to meet you, {fact.value}.")
        elif old_name == fact.value:
            said.append(f"I know, {fact.value}: you told me before.")
        else:
            said.append(f"Got it: I'll call you {fact.value} from now on.")
    if noted:
        corrected = any(f.mode == "corrected" for f in new)
        head = "Corrected" if corrected else "Noted" if personal else "Noted for this conversation"
        said.append(f"{head}: " + " and ".join(noted) + ".")
    if unsure:
        said.append(
            "I've kept “" + "” and “".join(unsure) + "” as unconfirmed: say it plainly, or "
            "confirm it with /facts, and I'll remember it for good."
        )
    return [" ".join(said)]


def _question(
    packet: ConversationContextPacket, reading: _Reading, jobs: Sequence[JobRef]
) -> tuple[str, str] | None:
    text = reading.text
    for pattern, attribute in _ASK_OTHER:
        match = pattern.search(text)
        if match is not None:
            about = _about_other(reading, match.group("who"), attribute)
            if about is not None:
                return "ask_fact", about
    for pattern, attributes in _ASK_PAST:
        match = pattern.search(text)
        if match is not None:
            return "ask_fact", _earlier(packet, reading, match, attributes)
    if _ASK_NAME.search(text):
        name = next((f.value for f in reading.facts if f.key == "name"), None)
        if name is None:
            return "ask_fact", "I don't know your name yet. Tell me with “my name is …”."
        return "ask_fact", f"Your name is {name}."
    if _ASK_OPEN.search(text):
        return "list_open", _open_items(packet, reading, jobs)
    if _ASK_ABOUT_ME.search(text):
        return "list_facts", _about_you(reading.facts)
    if _ASK_DECISIONS.search(text):
        return "list_decisions", _decisions(packet)
    if _ASK_RECAP.search(text):
        return "recap", _recap(packet)
    for pattern, keys, missing in _ASK_FACTS:
        match = pattern.search(text)
        if match is None:
            continue
        wanted = keys
        if "thing" in pattern.groupindex:
            thing = " ".join(match.group("thing").casefold().split())
            wanted, missing = (f"favourite:{thing}",), f"your favourite {thing}"
        found = [f for f in reading.facts if _key_matches(f.key, wanted)]
        if not found:
            return "ask_fact", f"You haven't told me {missing} yet."
        return "ask_fact", " ".join(_answer_line(f) for f in found)
    if _ASK_HELP.search(text):
        return "help", _HELP + _CAPABILITIES
    return None


def _is_about(label: str, who: str) -> bool:
    role, name = role_and_name(label)
    return who in {role.casefold(), name.casefold(), label.casefold()}


def _about_other(reading: _Reading, who: str, attribute: str) -> str | None:
    """Answer what is known of someone in the user's life (``attribute``; "" for all)."""
    who = " ".join(who.casefold().split())
    named = [
        f
        for f in reading.facts
        if parse_key(f.key).name in {"relative", "pet"} and _is_about(f.value, who)
    ]
    said = [
        f
        for f in reading.facts
        if parse_key(f.key).subject != USER
        and _is_about(parse_key(f.key).subject, who)
        and (not attribute or parse_key(f.key).name == attribute)
    ]
    found = (named if not attribute else []) + said
    if found:
        return " ".join(_sentence(describe_fact(f)) for f in found)
    known_role = re.fullmatch(rf"(?:{PEOPLE}|{PETS})", who, _F) is not None
    if not known_role and not named:
        return None  # "who is there?": not someone the user told about
    if named and attribute:
        names = " and ".join(role_and_name(f.value)[1] or f.value for f in named)
        return f"You haven't told me that about {names} yet."
    return f"You haven't told me about your {who} yet."


def _earlier(
    packet: ConversationContextPacket,
    reading: _Reading,
    match: re.Match[str],
    wanted: Sequence[str],
) -> str:
    """Answer what a value was before the user replaced it."""
    if not wanted:
        word = (match.group("attr") or match.group("attr2") or "").casefold()
        wanted = (_ATTRIBUTE_WORDS.get(word, word),)
    past = [m for m in _past(packet) if m.subject == USER and m.attribute in wanted]
    now = [
        f
        for f in reading.facts
        if parse_key(f.key).subject == USER and parse_key(f.key).name in wanted
    ]
    if not past:
        if now:
            current = " ".join(_sentence(describe_fact(f)) for f in now)
            return f"I don't know of an earlier one: {current}"
        return "You haven't told me about that yet."
    lines = []
    for memory in past:
        fact = Fact(key=fact_key(USER, memory.attribute, memory.text), value=memory.text, turn=0)
        until = memory.valid_until or memory.valid_from
        if until <= memory.valid_from:  # corrected: it was never true
            lines.append(f"You once told me {describe_fact(fact)}, then corrected it.")
        else:
            lines.append(f"Earlier you told me {describe_fact(fact)} (until {until:%d %B %Y}).")
    if now:
        lines.append("Now " + "; ".join(describe_fact(f) for f in now) + ".")
    return " ".join(lines)


def _key_matches(key: str, wanted: Sequence[str]) -> bool:
    return any(key.startswith(w) if w.endswith(":") else key == w for w in wanted)


def _about_you(facts: Sequence[Fact]) -> str:
    if not facts:
        return (
            "I don't know anything about you yet. Tell me, for example, “my name is Ada” or "
            "“I live in Lisbon”."
        )
    # Yourself first, then the people and pets in your life.
    ordered = sorted(facts, key=lambda f: parse_key(f.key).subject != USER)
    return "Here's what I know about you:\n" + "\n".join(f"• {_answer_line(f)}" for f in ordered)


def _answer_line(fact: Fact) -> str:
    # A fact in an answer; an unconfirmed one says so.
    said = describe_fact(fact)
    return _sentence(said + " (unconfirmed)" if fact.mode == "hedged" else said)


def _open_items(
    packet: ConversationContextPacket, reading: _Reading, jobs: Sequence[JobRef]
) -> str:
    sections: list[str] = []
    loops = reading.loops.loops
    if loops:
        numbered = [
            f"{n}. {in_second_person(loop.text)}{_LOOP_KINDS.get(loop.kind, '')}"
            for n, loop in enumerate(loops, start=1)
        ]
        sections.append("Your list:\n" + "\n".join(numbered))
    if packet.pending_clarifications:
        asked = [f"• {c.question}" for c in packet.pending_clarifications]
        sections.append("Waiting for your answer:\n" + "\n".join(asked))
    scheduled = [*packet.active_job_refs, *jobs]
    if scheduled:
        lines = []
        for ref in scheduled:
            label = in_second_person(ref.label or ref.job_id)
            if ref.due_at is None:
                lines.append(f"• {label}")
            elif _utc(ref.due_at) <= reading.now:
                lines.append(f"• {label} (was due {_when(ref.due_at, reading.now)})")
            else:
                lines.append(f"• {label}, {_when(ref.due_at, reading.now)}")
        title = "Reminders:" if all(r.kind == "reminder" for r in scheduled) else "Scheduled:"
        sections.append(title + "\n" + "\n".join(lines))
    if not sections:
        return "Nothing is open: your list is empty and no reminders are set."
    if loops:
        sections.append("Tell me when one is done, e.g. “done 1”.")
    return "\n\n".join(sections)


def _recap_line(line: str) -> str:
    match = _SUMMARY_LINE.match(line)
    if match is None:
        return f"• {line}"
    said = match.group("said")
    if said.startswith(" -> "):  # a turn of the bot alone (a reminder firing)
        return f"• me: {said[4:]}"
    who = "you" if match.group("who") == "user" else match.group("who")
    verb = _RECAP_VERBS.get(match.group("tag") or "", "")
    return f"• {who}{verb}: {said.replace(' -> ', ' → ')}"


def _first_sentence(text: str, limit: int) -> str:
    # The same shape as the summarizer's lines, so raw and summarised turns read alike.
    flat = _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0]
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _recap(packet: ConversationContextPacket) -> str:
    # Summary lines, not the headers of its parts ("[turns 8-17]").
    summary = packet.rolling_session_summary.splitlines()
    lines = [_recap_line(x) for x in summary if x.strip() and not x.startswith("[")]
    lines.extend(_recap_line(x) for x in packet.recent_turn_summaries)
    for turn in packet.recent_turns:
        answer = _first_sentence(turn.assistant_text or "", 80)
        if not turn.user_text.strip():
            lines.append(f"• me: {answer}")
            continue
        line = f"• {turn.speaker or 'you'}: {_first_sentence(turn.user_text, 160)}"
        lines.append(line + (f" → {answer}" if answer else ""))
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


_LOOP_KINDS = {"commitment": " (you promised)", "request": " (asked)", "question": " (unanswered)"}


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


def _name(reading: _Reading) -> str:
    name = next((f.value for f in reading.facts if f.key == "name"), None)
    return f" {name}" if name else ""


def _smalltalk(packet: ConversationContextPacket, reading: _Reading) -> tuple[str, str] | None:
    text, name = reading.text, _name(reading)
    if text.startswith("/"):
        command = _first_sentence(text.split()[0], 40)
        return "unknown", _UNKNOWN_COMMAND.format(command)
    if _GREETING.search(text):
        said = f"Hi{name}!"
        count = len(reading.loops.loops) + len(packet.active_job_refs)
        if packet.turn_count:
            said += " Good to see you again."
        if count:
            plural = "item is" if count == 1 else "items are"
            said += f" {count} {plural} still open: ask “what is still open?” to see them."
        else:
            said += " What can I do for you? Say “help” to see what I can do."
        return "smalltalk", said
    if _HOW_ARE_YOU.search(text):
        return "smalltalk", "I'm doing well, thanks for asking! What can I do for you?"
    if _THANKS.search(text):
        return "smalltalk", f"You're welcome{name.replace(' ', ', ', 1)}!"
    if _BYE.search(text):
        return "smalltalk", f"Bye{name.replace(' ', ', ', 1)}! I'll remember all this next time."
    if is_dismissal(text):  # nothing of theirs left to drop (else _dialogue_acks said so)
        return "smalltalk", "OK, never mind."
    return None
