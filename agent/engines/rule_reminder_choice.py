"""Which reminder a request names, and what a request does to the reminders: shared by the
rules that cancel, snooze, move and skip them (:mod:`agent.engines.rule_reminders`,
:mod:`agent.engines.rule_reminder_skip`).

A reminder is named by its number on the list ("reminder 2"), by all ("all my reminders"), by
the words of its label ("the oven one"), as the alarm set without words, or, said without any,
as the only one there is. Covered by ``tests/test_rule_reminders.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from agent.memory.longterm.memory_slots import in_second_person
from agent.memory.rules.extraction import content_stems
from agent.memory.schemas import ConversationContextPacket, JobRef, Repeat

__all__ = [
    "ALARM",
    "PLEASE",
    "ReminderChange",
    "active_reminders",
    "chosen_reminders",
    "last_set",
    "named_words",
    "to_label",
    "which_reminder",
]

_F = re.IGNORECASE

# Words that may open a request before it: "actually cancel ...", "oh and ...", "ok, ...".
_FILLER = r"(?:(?:actually|oh|ok|okay|also|and|so|hmm|right|no|wait|um|well|sorry)\b[\s,!.]*)*"
PLEASE = (
    rf"^{_FILLER}(?:please\s+|(?:can|could|would) you\s+(?:please\s+)?"
    r"|i\s+(?:want|need|would like|'d like)\s+(?:you\s+)?to\s+)?"
)

ALARM = re.compile(r"\b(?:alarm|timer)\b", _F)
_NUMBERED = re.compile(r"\breminders?\s*(?:#|no\.?|number)?\s*(?P<n>\d{1,3})\b", _F)
_ALL = re.compile(r"\b(?:all|every|each)\b", _F)
# Words of a cancel request that do not name a reminder.
_CANCEL_WORDS = content_stems(
    "cancel delete remove drop clear scrap forget call off turn stop kill undo the my a that "
    "this reminder reminders about to for please you can could would no longer needed is one "
    "alarm alarms timer timers it snooze delay postpone push back put defer move change "
    "reschedule shift set by again later another half an second seconds minute minutes hour "
    "hours day days min mins daily weekly repeating recurring skip next time week once"
)


@dataclass(frozen=True, slots=True)
class ReminderChange:
    """What a cancel or snooze request does: the reply, and the reminders changed.

    Attributes:
        text: the reply.
        intent: ``cancel_reminder`` or ``set_reminder`` (a snooze sets a reminder again).
        cancelled: the active reminders to cancel (their refs, as they stand).
        label: the snoozed reminder's label (with ``due_at``: the reminder to set).
        due_at: when the snoozed reminder fires again; ``None`` sets none.
        repeat: how the reminder set repeats: a series snoozed or moved goes on.
    """

    text: str
    intent: str
    cancelled: tuple[JobRef, ...] = ()
    label: str = ""
    due_at: datetime | None = None
    repeat: Repeat | None = None


def active_reminders(packet: ConversationContextPacket) -> list[JobRef]:
    return [ref for ref in packet.active_job_refs if ref.kind == "reminder"]


def last_set(packet: ConversationContextPacket) -> tuple[JobRef, ...]:
    """The reminders the bot's last reply set, still to fire; or the only one there is, when
    that reply listed them ("when will you remind me?", then "cancel that")."""
    last = packet.recent_turns[-1] if packet.recent_turns else None
    ids = {ref.job_id for ref in last.job_refs if ref.status == "scheduled"} if last else set()
    active = active_reminders(packet)
    if last is not None and last.intent == "list_open" and len(active) == 1:
        return tuple(active)
    return tuple(ref for ref in active if ref.job_id in ids)


def named_words(what: str) -> frozenset[str]:
    return frozenset(w for w in content_stems(what) - _CANCEL_WORDS if not w[:1].isdigit())


def chosen_reminders(active: list[JobRef], what: str) -> list[JobRef]:
    """The active reminders ``what`` names: by number, all, by their words, or the only one."""
    if not active:
        return []
    numbered = _NUMBERED.search(what)
    words = named_words(what)
    if numbered is not None:
        index = int(numbered.group("n")) - 1
        chosen = [active[index]] if 0 <= index < len(active) else []
    elif _ALL.search(what) is not None:
        return active
    elif words:
        scored = [(len(words & content_stems(ref.label)), ref) for ref in active]
        best = max(score for score, _ in scored)
        chosen = [ref for score, ref in scored if score == best and score > 0]
    elif ALARM.search(what):  # "cancel the alarm": the one set without words
        chosen = [ref for ref in active if ref.label in {"", "reminder"}]
    else:
        chosen = active if len(active) == 1 else []
    return chosen if len(chosen) == 1 else []  # two match as well: ask which


def which_reminder(active: list[JobRef], example: str) -> str:
    listing = "\n".join(
        f"{n}. {in_second_person(ref.label or 'reminder')}" for n, ref in enumerate(active, 1)
    )
    return f"Which reminder? Say e.g. “{example}”:\n" + listing


def to_label(ref: JobRef) -> str:
    """What a reminder is for, said after "I'll remind you ...": " to call Ana", or nothing
    for one set without words."""
    return f" to {in_second_person(ref.label)}" if ref.label not in {"", "reminder"} else ""
