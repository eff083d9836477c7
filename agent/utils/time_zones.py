"""A user's time zone: read from what they type, and said back the same way everywhere.

A user sets their zone with ``/timezone Europe/Lisbon`` or says "my time zone is Lisbon"; it is
kept as a long-term memory of the chat (attribute ``timezone``, the IANA name as its value).
Reminders are read and said in it, and "what time is it?" is answered in it; without one it is
UTC. What a user types is read by :func:`find_zone`: an IANA name in any case ("europe/lisbon"),
a city of the IANA database ("Lisbon", "new york"), or UTC / GMT with a whole-hour offset
("UTC+2", "GMT-5"). The zones come from the standard library's :mod:`zoneinfo` (the system's
database, or the ``tzdata`` package).

Tested by ``tests/test_time_zones.py``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

__all__ = ["DEFAULT_ZONE", "find_zone", "zone_label", "zone_of"]

#: The zone of a user who set none.
DEFAULT_ZONE = ZoneInfo("UTC")

_OFFSET = re.compile(r"(?:utc|gmt)\s*(?P<sign>[+-])\s*(?P<hours>\d{1,2})(?::?00)?", re.IGNORECASE)
_LONGEST = 60  # no zone name or city is longer


@lru_cache(maxsize=1)
def _by_lower_name() -> dict[str, str]:
    # Every IANA name and every city (the name's last part) in lower case, to the name. A city
    # found in several regions keeps the canonical one (Europe/ and America/ before the rest).
    names: dict[str, str] = {}
    for name in sorted(available_timezones(), key=lambda n: (n.startswith("Etc/"), n)):
        names.setdefault(name.casefold(), name)
        city = name.rsplit("/", 1)[-1].replace("_", " ").casefold()
        if "/" in name:
            names.setdefault(city, name)
    return names


def find_zone(text: str) -> ZoneInfo | None:
    """Return the zone ``text`` names, or ``None``.

    Args:
        text: what the user typed: ``Europe/Lisbon``, ``lisbon``, ``New York``, ``UTC+2``.
    """
    said = " ".join(text.strip().strip(".!").split())
    if not said or len(said) > _LONGEST:
        return None
    offset = _OFFSET.fullmatch(said)
    if offset is not None:
        hours = int(offset.group("hours"))
        if hours > 14:
            return None
        if hours == 0:
            return DEFAULT_ZONE
        # The Etc zones count the other way round: UTC+2 is Etc/GMT-2.
        sign = "-" if offset.group("sign") == "+" else "+"
        return ZoneInfo(f"Etc/GMT{sign}{hours}")
    if said.casefold() in {"utc", "gmt", "z"}:
        return DEFAULT_ZONE
    name = _by_lower_name().get(said.casefold().replace("_", " ")) or _by_lower_name().get(
        said.casefold()
    )
    return None if name is None else zone_of(name)


def zone_of(name: str | None) -> ZoneInfo:
    """Return the zone of a kept IANA name, or UTC for none (or one this system lacks)."""
    if not name:
        return DEFAULT_ZONE
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return DEFAULT_ZONE


def zone_label(zone: ZoneInfo) -> str:
    """Say a zone in a reply: ``UTC``, ``Europe/Lisbon``; an offset zone as ``UTC+2``."""
    key = zone.key
    if key in {"UTC", "Etc/UTC", "Etc/GMT"}:
        return "UTC"
    offset = re.fullmatch(r"Etc/GMT(?P<sign>[+-])(?P<hours>\d{1,2})", key)
    if offset is not None:
        sign = "-" if offset.group("sign") == "+" else "+"
        return f"UTC{sign}{offset.group('hours')}"
    return key
