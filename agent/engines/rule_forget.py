"""The rule-based concierge's "forget that ...": erasing long-term memories by what they say,
and the messages that said a detail in passing.

"forget that my sister lives in Porto" names the memories to erase; the reply carries their
ids (the lane erases them in the turn's transaction). "forget my locker code", "erase the wifi
password I gave you", "delete what I said about my ex", when no memory holds it, finds the
user's messages that do (the packet's recent and retrieved turns holding every word of the
request) and asks: "I found 2 messages about your locker code: “...” (25 Nov), “...”. Erase
them (yes or no)?" (a pending clarification; the reply's action names the turns). "yes" erases
them and the request itself (the lane erases the turns' text everywhere, ``Reply.erase_turns``);
"no" erases nothing; nothing found is said plainly. "forget everything" points to /forget;
"forget it" is no memory (it is "never mind"). Covered by ``tests/test_rule_based.py`` and
``tests/test_memory_erasure_model.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime

from agent.engines.rule_reading import ATTRIBUTE_STEMS, first_sentence, is_about_user
from agent.engines.rule_recall import Recollection, lines_saying, quote_said
from agent.memory.longterm.memory_schemas import Memory
from agent.memory.longterm.memory_slots import (
    USER,
    describe_memory,
    in_second_person,
    parse_key,
    role_and_name,
    slot_of,
)
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.rules.session_rules import PERSONAL_CHAT_TYPES
from agent.memory.rules.todo_closers import match_loop
from agent.memory.schemas import ConversationContextPacket, InboundMessage, Reply

__all__ = ["forget_reply"]

_F = re.IGNORECASE
# "forget that my sister lives in Porto", "please forget my sister", "delete my birthday"
_FORGET = re.compile(
    r"^(?:@\w+[,:]?\s+)?(?:please\s+|(?:can|could|would) you(?: please)?\s+)?"
    r"(?:forget|erase|delete|remove|wipe|don'?t remember|do not remember|stop remembering)\s+"
    r"(?:(?:the fact )?that\s+|about\s+|(?:what|everything|all|anything)\s+i(?:'ve)?\s+"
    r"(?:said|told you|wrote|mentioned|shared|sent you)\s+(?:about|on|regarding)\s+"
    # "forget everything about Sara", "delete all you know about my sister"
    r"|(?:everything|all|anything)\s+(?:(?:you\s+know|you\s+remember|you\s+have)\s+)?about\s+"
    r"(?!me\b))?"
    r"(?P<what>.+?)(?:\s+(?:that\s+|which\s+)?i(?:'ve)?\s+(?:gave|given|told|sent|said|"
    r"mentioned|shared|wrote|typed)(?:\s+(?:to\s+)?you)?(?:\s+(?:earlier|before|once|"
    r"yesterday|today))?)?[\s.!?]*$",
    _F,
)

# The verbs that also drop a to-do from the list ("remove call the vet").
_TODO_VERB = re.compile(r"^(?:please\s+)?(?:remove|delete|drop|scratch)\b", _F)

# What "forget ..." says that is no memory: a pronoun ("forget it": never mind), the list
# (to-dos and reminders have their own words).
_NOT_FORGETTABLE = re.compile(
    r"(?:it|that|this|them|about it)|.*\b(?:list|to-?dos?|tasks?|reminders?|alarms?|timers?)\b.*"
    r"|the\s+[\w' -]{1,60}?\s+one",  # "delete the oven one": a reminder
    _F,
)

# "forget everything": more than one memory at a time is a command, with a confirmation.
_FORGET_ALL = re.compile(
    r"(?:all of (?:it|this)|it all|this conversation|the conversation|our conversation|me"
    r"|(?:everything|all)(?: (?:that )?(?:you know|you remember|you have|i (?:said|told you)))?"
    r"(?: (?:about|of|on) me)?)",
    _F,
)

_HOW_TO_FORGET = (
    "To erase this whole conversation, send /forget (I'll ask first). To erase one thing I "
    "remember, say “forget that …” or use /facts forget N."
)

# Words of a request to forget that name no memory.
_FORGET_FILLER = content_stems("where what about who when which how i'm i've i'll i'd")

#: The action of a reply that asks whether to erase turns ("confirm_erase:3,7" names them).
_CONFIRM_ERASE = "confirm_erase:"
# How many of the messages found a question quotes.
_MOST_QUOTED = 5
_QUOTE_CHARS = 80
_STATEMENT = re.compile(r"\b(?:is|are|was|were|has|have|had)\b", _F)
_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
# The answer to "Erase them (yes or no)?": a short yes, or a no.
_YES = re.compile(
    r"^(?:yes|yep|yeah|yup|sure|ok|okay|please do|do it|go ahead)\b[\w\s,'!.]{0,30}$", _F
)
_NO = re.compile(r"^(?:no|nope|nah|don'?t|do not|cancel|keep (?:it|them)|never ?mind)\b", _F)

# In a group nothing is kept beyond its conversation: a member erases their own messages.
_NOTHING_IN_GROUP = (
    "I found nothing you said here {about}, so I erased nothing. (In a group I keep no "
    "long-term memory about anyone; /forget erases this group's conversation whole.)"
)


def forget_reply(
    packet: ConversationContextPacket, message: InboundMessage, text: str
) -> Reply | None:
    """Answer ``text`` if it asks to forget something, else return ``None``.

    Args:
        packet: the session before the message (its memories are what can be erased).
        message: the message (its chat type: only a personal chat has memories to erase).
        text: the message's text, normalised.
    """
    # In a group only the member who asked answers the question; in private, the user.
    group = message.chat_type not in PERSONAL_CHAT_TYPES
    answered = _erasure_answer(packet, text, message.speaker if group else None)
    if answered is not None:
        return answered
    forget = _FORGET.match(text)
    if forget is None:
        return None
    what = forget.group("what")
    if _FORGET_ALL.fullmatch(what):
        return Reply(text=_HOW_TO_FORGET, intent="forget_memory")
    if _NOT_FORGETTABLE.fullmatch(what):
        return None
    if _TODO_VERB.match(text) and match_loop(what, packet.open_loops) is not None:
        return None  # "remove call the vet": a to-do on the list, dropped as the list does
    return _forget(packet, message, what)


def _forget(packet: ConversationContextPacket, message: InboundMessage, what: str) -> Reply:
    """Erase what "forget that ..." names of the chat's current memories, and say what.

    The memories are matched by what the words state (a fact: "my sister lives in Porto" is
    the sister's home, if it is Porto), else by their words ("forget my sister", "forget where
    I live"). Nothing is erased unless something matches; the reply says which it is.
    """
    if message.chat_type not in PERSONAL_CHAT_TYPES:
        return _forget_own_words(packet, message, what)
    current = [m for m in packet.memories if m.valid_until is None]
    matched = _matching_memories(current, what)
    # The messages that said it (the memories' words, or the request's for a detail said in
    # passing: "where I live" is not "my sister lives in Lisbon"): erased once confirmed.
    lines = _lines_of(packet, what, matched)
    if not matched and not lines:
        return Reply(
            text=f"I found nothing you told me {_about(what)}, so I erased nothing. "
            "/facts lists what I remember.",
            intent="forget_memory",
        )
    asked = _ask_to_erase(what, lines, message.received_at, also=bool(matched))
    if not matched:
        return asked
    erased = "; ".join(describe_memory(m) for m in matched)
    # A memory a message said (not a /remember note) whose message is not found here.
    elsewhere = _SAID_ELSEWHERE if any(m.origin == "said" for m in matched) else ""
    return Reply(
        text=f"Done, I've forgotten: {erased}. {asked.text if lines else elsewhere}".rstrip(),
        intent="forget_memory",
        action_name=asked.action_name if lines else "forget_memory",
        forget_memories=tuple(m.memory_id for m in matched),
    )


# The memory goes; a message that said it, not found in this conversation, stays where it is.
_SAID_ELSEWHERE = (
    "I found no message here that says it: if an earlier conversation said it, the message "
    "stays there (/sessions lists them; /resume one, then /forget, erases it)."
)


def _forget_own_words(
    packet: ConversationContextPacket, message: InboundMessage, what: str
) -> Reply:
    """In a group: offer to erase the asker's own messages that said ``what`` (never another
    member's), or say that none did."""
    lines = _lines_saying(packet, what, message.speaker) if message.speaker else []
    if not lines:
        return Reply(text=_NOTHING_IN_GROUP.format(about=_about(what)), intent="forget_memory")
    return _ask_to_erase(what, lines, message.received_at, also=False, yours=True)


def _lines_of(
    packet: ConversationContextPacket, what: str, memories: Sequence[Memory]
) -> list[Recollection]:
    if not memories:
        return _lines_saying(packet, what, None)
    # A memory goes with its history: the messages that said its earlier values go too.
    slots = {slot_of(m.key) for m in memories}
    said = [*memories, *(m for m in packet.memories if m.valid_until and slot_of(m.key) in slots)]
    found = {
        line.seq: line
        for memory in said
        for line in lines_saying(packet, content_stems(memory.text), None)
    }
    return sorted(found.values(), key=lambda line: line.seq or 0)


def _lines_saying(
    packet: ConversationContextPacket, what: str, speaker: str | None
) -> list[Recollection]:
    """The lines of ``speaker`` (anyone's: ``None``) that hold every word of ``what``."""
    words = content_stems(what) - _FORGET_FILLER
    return lines_saying(packet, words, speaker) if words else []


def _ask_to_erase(
    what: str, lines: Sequence[Recollection], now: datetime, *, also: bool, yours: bool = False
) -> Reply:
    """Ask whether to erase the messages found: "I found 2 messages about your locker code:
    “...” (25 Nov), “...” (26 Nov). Erase them (yes or no)?"; the action names their seqs.
    ``also``: after memories were forgotten ("I also found ... Erase it too?"); ``yours``: a
    group member's own ("2 messages of yours")."""
    words = content_stems(what)
    quoted = [
        f"“{quote_said(line.said, words, _QUOTE_CHARS)}”"
        + (f" ({_day(line.when, now)})" if line.when else "")
        for line in lines[:_MOST_QUOTED]
    ]
    more = len(lines) - len(quoted)
    if more:
        quoted.append(f"and {more} more")
    found, them = ("1 message", "it") if len(lines) == 1 else (f"{len(lines)} messages", "them")
    found += " of yours" if yours else ""
    return Reply(
        text=f"I{' also' if also else ''} found {found} {_about(what)}: {', '.join(quoted)}. "
        f"Erase {them}{' too' if also else ''} (yes or no)?",
        intent="forget_memory",
        action_name=_CONFIRM_ERASE + ",".join(str(line.seq) for line in lines),
    )


def _about(what: str) -> str:
    # "about your locker code"; "saying your code is 4411" for a statement.
    said = in_second_person(first_sentence(what, _QUOTE_CHARS))
    states = _STATEMENT.search(said) or extract_facts(what, turn=0)
    return f"saying {said}" if states else f"about {said}"


def _day(when: date, now: datetime) -> str:
    year = "" if when.year == now.year else f" {when.year}"
    return f"{when.day} {_MONTHS[when.month - 1]}{year}"


def _erasure_answer(
    packet: ConversationContextPacket, text: str, speaker: str | None
) -> Reply | None:
    """Answer "yes" or "no" to "Erase them (yes or no)?": on yes the reply names the turns to
    erase, those found and the request itself (it may say the detail: "forget that my code
    is 4411"); ``None`` when no such question waits, ``text`` answers neither, or ``speaker``
    (a group member; ``None`` in private) is not the one who asked."""
    asked = {c.asked_turn for c in packet.pending_clarifications}
    turn = next(
        (
            t
            for t in reversed(packet.recent_turns)
            if t.seq in asked
            and (t.action_name or "").startswith(_CONFIRM_ERASE)
            and (speaker is None or t.speaker == speaker)
        ),
        None,
    )
    if turn is None or turn.action_name is None:
        return None
    if _NO.match(text):
        return Reply(text="OK, I erased nothing.", intent="forget_memory")
    if not _YES.match(text):
        return None
    seqs = [int(n) for n in turn.action_name.removeprefix(_CONFIRM_ERASE).split(",") if n]
    found, them = ("1 message", "it") if len(seqs) == 1 else (f"{len(seqs)} messages", "them")
    return Reply(
        text=f"Done: I erased {found}, and your request to erase {them}.",
        intent="forget_memory",
        action_name="erase_turns",
        erase_turns=(*seqs, turn.seq),
    )


def _matching_memories(memories: Sequence[Memory], what: str) -> list[Memory]:
    stated = extract_facts(what, turn=0)
    said_of = [f for f in stated if parse_key(f.key).attribute not in _NAMED]
    if said_of:  # "forget that my son Alfie is allergic to eggs": not Alfie himself
        stated = tuple(said_of)
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

    mine = is_about_user(what)
    found = []
    for memory in memories:
        if mine and memory.subject != USER:
            continue  # "forget where I live": not where my sister lives
        kept = stems_of(memory)
        if all(
            word in kept
            or bool(ATTRIBUTE_STEMS.get(word, frozenset()) & kept)
            # "forget my sister's name": who she is ("sister Ana"), not "my name"
            or (word in _NAME_WORDS and memory.attribute in _NAMED and len(words) > 1)
            for word in words
        ):
            found.append(memory)
    return found


# A relative's or a pet's memory is their name ("sister Ana"), asked for by these words.
_NAME_WORDS = content_stems("name names called")
_NAMED = frozenset({"relative", "pet"})


def _same_subject(said: str, kept: str) -> bool:
    # "my sister" or "Mia" is "sister Mia" when that is who the memory is about.
    if said.casefold() == kept.casefold():
        return True
    role, name = role_and_name(kept)
    return said.casefold() in {role.casefold(), name.casefold()}
