"""``/timezone``: the zone a user's reminders and "what time is it?" are said in.

``/timezone Europe/Lisbon`` (or a city, ``/timezone New York``, or an offset, ``/timezone
UTC+2``) keeps the zone as the chat's long-term memory ``timezone`` (one value: a new zone
replaces the old one; ``/facts`` shows it, ``/facts forget`` removes it); the offline concierge
reads it from the packet. ``/timezone`` alone says which zone is in use (UTC by default). The
reminders already set keep their moment (a repeating one its rule's zone); the answer lists them
on the new clock, so that one meant on it can be moved.

Covered by ``tests/test_rule_reminders.py`` (as a user sends it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from agent.memory import ConversationLane, JobRef
from agent.memory.longterm.memory_slots import in_second_person
from agent.memory.rules.recurrence import say_repeat
from agent.utils.time_zones import find_zone, zone_label

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
    said = f"Your time zone is now {zone.key}: I'll read and say reminder times in it."
    jobs = [j for j in lane.chat_jobs(chat_id) if j.kind == "reminder" and j.due_at is not None]
    if not jobs:
        return said
    lines = "\n".join(_kept_line(job, zone) for job in jobs)
    return (
        f"{said}\nThe reminders set before keep their moment, on your clock now:\n{lines}\n"
        "Say e.g. “move it to 6pm” of one to set it on your clock instead."
    )


def _kept_line(job: JobRef, zone: ZoneInfo) -> str:
    """ "• pack your German books, every Tuesday at 18:00 UTC: next on Tue 1 Dec at 19:00"."""
    label = in_second_person(job.label) if job.label else "reminder"
    due = (job.due_at or datetime.now(UTC)).astimezone(zone)
    rule = ""
    if job.repeat is not None:
        rule = f", {say_repeat(job.repeat)} {zone_label(ZoneInfo(job.repeat.zone))}:"
    return f"• {label}{rule} next on {due:%a} {due.day} {due:%b} at {due:%H:%M}"
