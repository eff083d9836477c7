"""What the rule-based concierge says of to-dos, reminders, promises and open questions.

The to-do rules and the dialogue rules (:mod:`agent.memory.rules.session_rules`) run on a
preview of the turn, so the acknowledgement says what the state will record: a reminder set
(:func:`reminder_set`), to-dos added or ticked off (:func:`todo_acks`), a promise noted or a
question settled (:func:`dialogue_acks`), a question or request kept open (:func:`kept_open`);
"what is still open?" lists them with the reminders (:func:`answer_open_items`). Covered by
``tests/test_rule_based.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from agent.engines.rule_reading import Reading, due_order, say_when, utc
from agent.memory.longterm.memory_slots import in_second_person, parse_key
from agent.memory.rules.dialogue_acts import read_acts
from agent.memory.rules.extraction import Clause, content_stems
from agent.memory.rules.recurrence import say_repeat
from agent.memory.rules.reminder_requests import ReminderRequest
from agent.memory.rules.session_rules import LoopUpdate, loop_owner, update_dialogue_loops
from agent.memory.rules.todo_closers import match_loop, names_its_thing
from agent.memory.schemas import (
    ConversationContextPacket,
    ConversationTurn,
    InboundMessage,
    JobRef,
    OpenLoop,
)
from agent.utils.time_zones import zone_label

__all__ = [
    "REMINDER_FORMS",
    "answer_open_items",
    "dialogue_acks",
    "job_line",
    "kept_open",
    "reminder_set",
    "reminders_not_needed",
    "said_done",
    "scheduled_jobs",
    "series_kept",
    "todo_acks",
]

_F = re.IGNORECASE
#: What a reminder whose time cannot be read gets.
REMINDER_FORMS = (
    "I couldn't read the time of that reminder (a bare hour is morning or evening: say 6am or "
    "18:00). Try “remind me in 10 minutes to call mom”, or see /help."
)

_ASK_OPEN = re.compile(
    r"\bwhat(?:'s|\s+is|\s+are)?\s+(?:still\s+)?(?:open|pending|left(?: to do)?|remaining)\b"
    r"|\b(?:anything|something|what)\s+(?:else\s+)?(?:left|remaining)\b|\bwhat else do (?:i|we) "
    r"(?:need|have) to do\b|\bwhat remains\b"
    r"|\bon (?:my|our|the) (?:to-?do |shopping )?list\b"
    r"|\b(?:my|our|the) (?:to-?do|task) list\b|\bshow (?:me |us )?(?:my|our|the) "
    r"(?:list|to-?dos?|tasks|reminders)\b|\bwhat do (?:i|we) (?:still )?(?:need|have) to do\b"
    r"|\bwhat (?:do|should) (?:i|we) (?:still )?(?:need to |have to )?(?:buy|get|pick up)\??$"
    r"|\b(?:my|our|any|what) reminders\b|\bwho(?:'s|\s+is)\s+doing\s+what\b"
    r"|\bopen loops\b|^(?:(?:my|our|the)\s+)?(?:(?:to-?do |shopping )?list|to-?dos?|tasks"
    r"|reminders)\s*[?!.]*$"
    r"|\b(?:when|what time) (?:will|are) you (?:going to )?remind(?:ing)? me\b"
    r"|\bwhat (?:did|have) i promised?\b|\bmy promises\b",
    _F,
)

# A question about the list itself, not only the reminders.
_NAMES_LIST = re.compile(r"\b(?:list|to-?dos?|tasks?|left|open|remaining|remains)\b", _F)

# "add coffee to my to-do list", "put eggs on the list": a to-do said, no list asked for.
_ADDING = re.compile(r"^(?:please\s+|(?:can|could) you\s+)?(?:add|put)\b", _F)

_LOOP_KINDS = {"commitment": " (you promised)", "request": " (asked)", "question": " (unanswered)"}


def answer_open_items(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what is still open?": the list, the questions waiting, the reminders."""
    if _ADDING.match(reading.text) or not _ASK_OPEN.search(reading.text):
        return None
    return _open_items(packet, reading, jobs)


def kept_open(
    packet: ConversationContextPacket,
    message: InboundMessage,
    reading: Reading,
    clauses: Sequence[Clause],
) -> str | None:
    """Say that a question or request the rules cannot answer is kept on the list, or return
    ``None`` when the message asks nothing."""
    acts = read_acts(clauses)
    if not (acts.questions or acts.requests):
        return None
    verb = "answer" if acts.questions else "do"
    kept, _ = _dialogue_preview(packet, message, reading, clauses, "kept_open")
    if not kept:
        return f"I still can't {verb} that offline: it stays on your list."
    return (
        f"I can't {verb} that offline, so I've kept it on your list: {_quoted(kept)}. "
        "Ask “what is still open?” to see it."
    )


def reminder_set(reminder: ReminderRequest, now: datetime, zone: ZoneInfo) -> str:
    """Say that ``reminder`` is set, and when (on the clock of ``zone``): a repeating one says
    its rule and its first time ("every day at 08:00 UTC ..., the first one tomorrow")."""
    when = say_when(reminder.due_at, now, zone)
    what = f" {reminder.link} {in_second_person(reminder.label)}" if reminder.label else ""
    if reminder.repeat is None:
        return f"I'll remind you {when}{what}."
    rule = f"{say_repeat(reminder.repeat)} {zone_label(zone)}"
    first = _today(when)
    return f"I'll remind you {rule}{what}; the first one {first}. Say “cancel it” to stop them."


def _today(when: str) -> str:
    """A time said as :func:`say_when` says today's, with its day: "today at 08:00 UTC"."""
    return f"today {when}" if when.startswith("at ") else when


def _listing(items: Sequence[str]) -> str:
    quoted = [in_second_person(item) for item in items]
    return quoted[0] if len(quoted) == 1 else "; ".join(quoted)


def todo_acks(loops: LoopUpdate, intents: list[str]) -> list[str]:
    """Acknowledge the to-dos ticked off, not found, added or already listed (and name the
    intents in ``intents``)."""
    said: list[str] = []
    done = [lp for lp in loops.closed if lp not in loops.removed]
    if done:
        said.append(f"Great, I've ticked off: {_listing([lp.text for lp in done])}.")
        intents.append("close_todo")
    for part, left in loops.narrowed:
        said.append(f"Great, I've ticked off {part}. Still on your list: {left.text}.")
        intents.append("close_todo")
    if loops.removed:
        said.append(f"Removed from your list: {_listing([lp.text for lp in loops.removed])}.")
        intents.append("close_todo")
    if loops.unmatched:
        missing = ", ".join(f"“{in_second_person(text)}”" for text in loops.unmatched)
        said.append(f"I couldn't find {missing} on your list. Ask “what is still open?” to see it.")
        intents.append("close_todo")
    if loops.which:  # "done", with several open
        listed = "; ".join(
            f"{n}. {in_second_person(lp.text)}" for n, lp in enumerate(loops.which, 1)
        )
        said.append(f"Which one is done? {listed}. Say “done 1” (or its words).")
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
    reading: Reading,
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


def dialogue_acks(
    packet: ConversationContextPacket,
    message: InboundMessage,
    reading: Reading,
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


def _item(loop: OpenLoop, group: bool) -> str:
    # In a group each item is its member's, in their words ("Bob: buy my boots (promised)").
    kind = _LOOP_KINDS.get(loop.kind, "")
    if not group:
        return in_second_person(loop.text) + kind
    said = f"{loop.owner}: {loop.text}" if loop.owner else loop.text
    return said + kind.replace("you ", "")


def scheduled_jobs(packet: ConversationContextPacket, jobs: Sequence[JobRef]) -> list[JobRef]:
    """The jobs still set, this turn's changes over the packet's (a cancelled reminder is
    gone), soonest first."""
    by_id = {ref.job_id: ref for ref in [*packet.active_job_refs, *jobs]}
    return sorted((ref for ref in by_id.values() if ref.status != "cancelled"), key=due_order)


def said_done(ref: JobRef, deeds: Sequence[str]) -> bool:
    """Whether one of ``deeds``, said done ("I finished marking the tests", "I called the
    bank"), is what reminder ``ref`` is for ("mark the tests", "call the bank")."""
    label = OpenLoop(loop_id=ref.job_id, text=ref.label, opened_turn=0)
    # A deed said with what it was done to: "I called her" may be of another call.
    named = [deed for deed in deeds if names_its_thing(deed)]
    return bool(ref.label) and any(match_loop(deed, [label]) is label for deed in named)


def reminders_not_needed(packet: ConversationContextPacket, reading: Reading) -> list[JobRef]:
    """The reminders set for a to-do this message ticks off ("I called the plumber": the
    reminder to call the plumber), for a deed it says done that is on no list ("I called the
    bank": the reminder was set alone), or for a plan or event it calls off ("cancel my
    flight": the reminder about the flight), cancelled: they are no longer needed. A repeating
    one is never among them (:func:`series_kept`)."""
    done = [lp for lp in reading.loops.closed if lp not in reading.loops.removed]
    ended = [
        content_stems(f.value)
        for f in reading.new_facts
        if parse_key(f.key).name in {"ex_event", "ex_plan"}
    ]

    def of_what_ended(label: str) -> bool:
        said = content_stems(label)
        return bool(said) and any(said <= words or words <= said for words in ended if words)

    return [
        ref.model_copy(update={"status": "cancelled"})
        for ref in scheduled_jobs(packet, ())
        if ref.kind == "reminder"
        and ref.repeat is None  # "I took my vitamins": today's, not the series
        and utc(ref.due_at or reading.now) > reading.now
        and (
            of_what_ended(ref.label)
            or any(match_loop(ref.label, [lp]) is lp for lp in done)
            or said_done(ref, reading.loops.deeds)
        )
    ]


def series_kept(packet: ConversationContextPacket, reading: Reading) -> list[JobRef]:
    """The repeating reminders whose deed the message says is done ("I took my vitamins" of
    "every day at 08:00 to take my vitamins"): kept, the series goes on."""
    return [
        ref
        for ref in scheduled_jobs(packet, ())
        if ref.kind == "reminder" and ref.repeat is not None and said_done(ref, reading.loops.deeds)
    ]


def job_line(ref: JobRef, reading: Reading) -> str:
    """A scheduled job as a line of a list: "• call mom, tomorrow at 19:00 UTC"."""
    label = in_second_person(ref.label or ref.job_id)
    if ref.due_at is None:
        return f"• {label}"
    when = say_when(ref.due_at, reading.now, reading.zone)
    if ref.repeat is not None:  # "• take your vitamins, every day at 08:00 (next: tomorrow ...)"
        rule = say_repeat(ref.repeat)
        if ref.repeat.zone != reading.zone.key:  # set on another clock: say which
            rule += f" {zone_label(ZoneInfo(ref.repeat.zone))}"
        return f"• {label}, {rule} (next: {_today(when)})"
    return f"• {label} (was due {when})" if utc(ref.due_at) <= reading.now else f"• {label}, {when}"


def _open_items(packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]) -> str:
    sections: list[str] = []
    loops = reading.loops.loops
    if loops:
        group = any(loop.owner for loop in loops)
        numbered = [f"{n}. {_item(loop, group)}" for n, loop in enumerate(loops, start=1)]
        title = "The group's list:" if group else "Your list:"
        sections.append(title + "\n" + "\n".join(numbered))
    if packet.pending_clarifications:
        asked = [f"• {c.question}" for c in packet.pending_clarifications]
        sections.append("Waiting for your answer:\n" + "\n".join(asked))
    scheduled = scheduled_jobs(packet, jobs)
    if scheduled:
        lines = [job_line(ref, reading) for ref in scheduled]
        title = "Reminders:" if all(r.kind == "reminder" for r in scheduled) else "Scheduled:"
        sections.append(title + "\n" + "\n".join(lines))
    whose = "the group's" if packet.participants else "your"
    if not sections:
        return f"Nothing is open: {whose} list is empty and no reminders are set."
    if not loops and _NAMES_LIST.search(reading.text):  # "what's on my list?": say it is empty
        sections.insert(0, f"{whose[:1].upper()}{whose[1:]} list is empty.")
    if loops:
        sections.append("Tell me when one is done, e.g. “done 1”.")
    return "\n\n".join(sections)
