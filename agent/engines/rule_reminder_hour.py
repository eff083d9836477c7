"""The rule-based concierge's question when a reminder's hour may be morning or evening.

"remind me tomorrow at 10 to call the plumber" says no am or pm, and a bare hour is never
guessed: the reply asks "Is that tomorrow at 10:00 UTC (morning) or tomorrow at 22:00 UTC
(evening)?" (intent :data:`ASK_HOUR`, a pending clarification like any question the bot asks).
The next message answers it when it picks one ("10am", "am", "morning", "the evening one",
"22:00", "pm", "the second"): :func:`answered_request` gives back the request with its hour
said, and the concierge reads that as if the user had written it ("remind me tomorrow at 10am
to call the plumber"). Any other message leaves the question; it lapses then, as every
clarification does. When only one reading lies ahead, or neither, the time is refused as
before. Covered by ``tests/test_rule_reminder_hour.py``.
"""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

from agent.engines.rule_reading import say_when
from agent.memory.rules.extraction import normalize_text
from agent.memory.rules.reminder_requests import is_reminder_request, parse_reminder
from agent.memory.rules.reminder_time import with_meridiem
from agent.memory.schemas import ConversationContextPacket, ConversationTurn
from agent.utils.time_zones import zone_label

__all__ = ["ASK_HOUR", "answered_request", "ask_hour", "hour_asked", "part_gone"]

#: The intent of the question "morning or evening?".
ASK_HOUR = "ask_reminder_time"

_F = re.IGNORECASE
# An answer is short: a pick, maybe with "please", "the ... one", "make it", "at".
_MOST_CHARS = 40
_EVENING = re.compile(
    r"(?<![a-z])(?:pm|p\.m\.?|evening|night|tonight|afternoon|second|latter|later one)(?!\w)", _F
)
_MORNING = re.compile(r"(?<![a-z])(?:am|a\.m\.?|morning|first|former|earlier one)(?!\w)", _F)
_NUMBER = re.compile(r"\d{1,2}")
_CLOCK = re.compile(r"\b(?P<h>\d{1,2}):\d{2}\b(?!\s*[ap]\.?m)", _F)


def ask_hour(text: str, now: datetime, zone: ZoneInfo) -> str | None:
    """The question to ask when ``text`` asks for a reminder at a bare hour ("tomorrow at 10")
    that may be either of two times ahead, or ``None``."""
    morning = with_meridiem(text, evening=False)
    evening = with_meridiem(text, evening=True)
    if morning is None or evening is None:
        return None
    early = parse_reminder(morning[0], now, zone)
    late = parse_reminder(evening[0], now, zone)
    if early is None or late is None:
        return None
    return (
        f"Is that {say_when(early.due_at, now, zone)} (morning) or "
        f"{say_when(late.due_at, now, zone)} (evening)?"
    )


# "tonight", "this evening": a part of today, which may be over when it is asked for.
_TODAYS_PART = re.compile(r"\b(?P<part>tonight|this\s+(?:morning|afternoon|evening))\b", _F)


def part_gone(text: str, now: datetime, zone: ZoneInfo) -> str | None:
    """What to say when ``text`` asks for a reminder "tonight" (or "this evening") without a
    time, and that part of the day's usual hour has passed: say the time, or ``None``."""
    said = _TODAYS_PART.search(text)
    if said is None or not is_reminder_request(text) or parse_reminder(text, now, zone):
        return None
    local = now.astimezone(zone)
    part = " ".join(said.group("part").casefold().split())
    return (
        f"It's already {local:%H:%M} {zone_label(zone)}, past {part}'s usual hour: say the "
        f"time, e.g. “remind me at {(local.hour + 1) % 12 or 12}"
        f"{'pm' if 11 <= local.hour < 23 else 'am'} to …”."
    )


def hour_asked(packet: ConversationContextPacket) -> ConversationTurn | None:
    """The turn whose reply still asks "morning or evening?" of a reminder, if any."""
    asked = {c.asked_turn for c in packet.pending_clarifications}
    return next(
        (t for t in reversed(packet.recent_turns) if t.seq in asked and t.intent == ASK_HOUR),
        None,
    )


def answered_request(packet: ConversationContextPacket, text: str) -> str | None:
    """The reminder request the question "morning or evening?" waits on, with its hour said as
    ``text`` picks ("10am" -> "remind me tomorrow at 10am to call the plumber"); ``None`` when
    no such question waits or ``text`` picks neither."""
    if len(text) > _MOST_CHARS or text.rstrip().endswith("?"):
        return None
    turn = hour_asked(packet)
    if turn is None:
        return None
    morning = with_meridiem(normalize_text(turn.user_text), evening=False)
    if morning is None:
        return None
    hour = morning[1]
    evening = _pick(text, hour)
    if evening is None:
        return None
    said = with_meridiem(normalize_text(turn.user_text), evening=evening)
    return None if said is None else said[0]


def _pick(text: str, hour: int) -> bool | None:
    """Whether ``text`` picks the evening (``True``), the morning (``False``) or neither."""
    numbers = {int(n) for n in _NUMBER.findall(text)} - {0}
    if numbers - {hour, hour + 12}:
        return None  # "7am" answers no question about 10
    if hour + 12 in numbers and hour != 12:
        return True  # "22:00"
    clock = _CLOCK.search(text)
    if clock is not None:
        return int(clock.group("h")) >= 12  # "10:00" is the morning
    evening, morning = _EVENING.search(text), _MORNING.search(text)
    if (evening is None) == (morning is None):
        return None
    return evening is not None
