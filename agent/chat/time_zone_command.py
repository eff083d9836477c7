"""``/timezone``: the zone a user's reminders and "what time is it?" are said in.

``/timezone Europe/Lisbon`` (or a city, ``/timezone New York``, or an offset, ``/timezone
UTC+2``) keeps the zone as the chat's long-term memory ``timezone`` (one value: a new zone
replaces the old one; ``/facts`` shows it, ``/facts forget`` removes it); the offline concierge
reads it from the packet. ``/timezone`` alone says which zone is in use (UTC by default).

Covered by ``tests/test_rule_reminders.py`` (as a user sends it).
"""

from __future__ import annotations

from agent.memory import ConversationLane
from agent.utils.time_zones import find_zone

__all__ = ["TIMEZONE_HELP", "time_zone_command"]

#: The command's line in /help.
TIMEZONE_HELP = "Your time zone for reminders and the time: /timezone Europe/Lisbon"

_EXAMPLES = "/timezone Europe/Lisbon, /timezone New York or /timezone UTC+2"


async def time_zone_command(lane: ConversationLane, chat_id: int, args: str) -> str:
    """Run ``/timezone args`` for ``chat_id``; return the answer.

    Args:
        lane: the memory lane (the zone is kept in its long-term memory).
        chat_id: the chat.
        args: the zone as typed, or nothing to ask which zone is in use.
    """
    if not args:
        kept = [m for m in await lane.inspector.facts(chat_id) if m.attribute == "timezone"]
        if not kept:
            return f"Your time zone is UTC (the default). Set yours with {_EXAMPLES}."
        return f"Your time zone is {kept[0].text}. Change it with /timezone <zone>."
    zone = find_zone(args)
    if zone is None:
        return f"I don't know the time zone “{args[:60]}”. Try {_EXAMPLES}."
    await lane.remember(chat_id, zone.key, attribute="timezone")
    return f"Your time zone is now {zone.key}: I'll read and say reminder times in it."
