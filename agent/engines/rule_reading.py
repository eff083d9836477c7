"""The rule-based concierge's reading of one message, and the phrasing its answers share.

:class:`Reading` is the current message read against the packet: what the session state will
become once the turn is committed (the concierge answers from both). The helpers say times and
sentences the same way in every answer. Covered by ``tests/test_rule_based.py`` (through
:class:`~agent.engines.rule_based.RuleBasedConcierge`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from agent.memory.rules.extraction import ReminderRequest
from agent.memory.rules.session_rules import LoopUpdate
from agent.memory.schemas import ConversationContextPacket, Fact, JobRef
from agent.utils.time_zones import DEFAULT_ZONE, zone_label

__all__ = ["Answer", "Reading", "due_order", "first_sentence", "say_when", "sentence", "utc"]

_MONTHS = (
    "January February March April May June July August September October November December"
).split()

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


@dataclass(frozen=True, slots=True)
class Reading:
    """The current message read against the packet: what the state will become.

    ``zone`` is the user's time zone (their ``timezone`` fact; UTC if they set none).
    """

    text: str
    now: datetime
    new_facts: tuple[Fact, ...]
    facts: tuple[Fact, ...]
    loops: LoopUpdate
    reminder: ReminderRequest | None
    zone: ZoneInfo = DEFAULT_ZONE


#: A question rule: the answer to the message if it asks what the rule answers, else ``None``.
#: It reads the packet, the reading and the reminders this reply schedules.
Answer = Callable[[ConversationContextPacket, Reading, Sequence[JobRef]], str | None]


def utc(moment: datetime) -> datetime:
    """Return ``moment`` in UTC (a naive time is taken to be UTC already)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def due_order(ref: JobRef) -> tuple[bool, datetime]:
    """Sort key of scheduled jobs: the soonest first, one without a time last."""
    due = ref.due_at
    return (due is None, utc(due) if due is not None else datetime.max.replace(tzinfo=UTC))


def say_when(due: datetime, now: datetime, zone: ZoneInfo = DEFAULT_ZONE) -> str:
    """Say when ``due`` is, seen from ``now``, on the clock of ``zone``: "at 18:30 UTC",
    "tomorrow at 08:00 Europe/Lisbon", "on 3 May at …"."""
    short = utc(due) - utc(now) < timedelta(minutes=1) and due.second
    due, now = utc(due).astimezone(zone), utc(now).astimezone(zone)
    clock = due.strftime("%H:%M:%S" if short else "%H:%M") + " " + zone_label(zone)
    if due.date() == now.date():
        return f"at {clock}"
    if due.date() == (now + timedelta(days=1)).date():
        return f"tomorrow at {clock}"
    day = f"{due.day} {_MONTHS[due.month - 1]}"
    return f"on {day} at {clock}" if due.year == now.year else f"on {day} {due.year} at {clock}"


def sentence(phrase: str) -> str:
    """Return ``phrase`` as a sentence: capitalised, with a full stop."""
    return phrase[:1].upper() + phrase[1:] + "."


def first_sentence(text: str, limit: int) -> str:
    """Return the first sentence of ``text``, cut to ``limit`` characters with "…".

    The same shape as the summarizer's lines, so raw and summarised turns read alike.
    """
    flat = _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0]
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
