"""The rule-based concierge's "forget that ...": erasing long-term memories by what they say.

"forget that my sister lives in Porto" names the memories to erase; the reply carries their
ids (the lane erases them in the turn's transaction). "forget everything" points to /forget;
"forget it" is no memory (it is "never mind"). Covered by ``tests/test_rule_based.py`` and
``tests/test_memory_erasure_model.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.engines.rule_reading import ATTRIBUTE_STEMS, first_sentence, is_about_user
from agent.engines.rule_recall import RECALL_THRESHOLD, recollect
from agent.memory.longterm.memory_schemas import Memory
from agent.memory.longterm.memory_slots import USER, describe_memory, parse_key, role_and_name
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.rules.session_rules import PERSONAL_CHAT_TYPES
from agent.memory.schemas import ConversationContextPacket, InboundMessage, Reply

__all__ = ["forget_reply"]

_F = re.IGNORECASE
# "forget that my sister lives in Porto", "please forget my sister", "delete my birthday"
_FORGET = re.compile(
    r"^(?:@\w+[,:]?\s+)?(?:please\s+|(?:can|could|would) you(?: please)?\s+)?"
    r"(?:forget|erase|delete|remove|wipe|don'?t remember|do not remember|stop remembering)\s+"
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
_FORGET_FILLER = content_stems("where what about who when which how")

_ONLY_SAID = (
    "I keep no fact like “{said}”, so there was none to erase. You did say it in this "
    "conversation, and I can still find it there: to erase that too, send /forget (it erases "
    "this whole conversation; I ask first)."
)

_FORGET_IN_GROUP = (
    "I keep no long-term memory about anyone in a group, so there is nothing of that kind to "
    "forget. /forget erases this group's conversation."
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
    forget = _FORGET.match(text)
    if forget is None:
        return None
    what = forget.group("what")
    if _FORGET_ALL.fullmatch(what):
        return Reply(text=_HOW_TO_FORGET, intent="forget_memory")
    if _NOT_FORGETTABLE.fullmatch(what):
        return None
    return _forget(packet, message, what)


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
        said = first_sentence(what, 80)
        found = recollect(packet, what)
        words = content_stems(what) - _FORGET_FILLER
        if (
            found is not None
            and found.seq is not None
            and found.score >= RECALL_THRESHOLD
            and words <= content_stems(found.said)
        ):
            # Said in passing: no memory to erase, but the conversation still holds it.
            return Reply(text=_ONLY_SAID.format(said=said), intent="forget_memory")
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

    mine = is_about_user(what)
    found = []
    for memory in memories:
        if mine and memory.subject != USER:
            continue  # "forget where I live": not where my sister lives
        kept = stems_of(memory)
        if all(
            word in kept or bool(ATTRIBUTE_STEMS.get(word, frozenset()) & kept) for word in words
        ):
            found.append(memory)
    return found


def _same_subject(said: str, kept: str) -> bool:
    # "my sister" is "sister Mia" when that is who the memory is about.
    if said.casefold() == kept.casefold():
        return True
    role, _ = role_and_name(kept)
    return said.casefold() == role.casefold()
