"""An event said again: which known event it is, and what of its day and time it keeps.

- Said by another name of one known event, it is that event: by its short name ("my flight
  got moved to the 13th" of "flight to Lisbon is on Sat 12 Dec"), or by a longer one ("my
  meeting with Sarah moved to 4" of "meeting with Sarah is on Sat 28 Nov at 15:00", kept as
  the meeting). Two events that either name could be are left apart: none is guessed.
- Moved to another day, it keeps its time ("my flight got moved to Saturday" of "on Fri 4 Dec
  at 18:00": "on Sat 5 Dec at 18:00").
- Moved to another time, it keeps its day ("my meeting moved to 4pm", "the dinner is now at
  8:30", "pushed back to half past four"): "on Sat 28 Nov at 16:00". An hour said without
  morning or evening is the one nearer the time it had ("4" of 15:00 is 16:00), or stays as
  said when it had none.
- A routine moved to another weekday ("ballet moved to Thursdays", "yoga is on Wednesdays now"
  of "I go to yoga on Mondays at 7") is that routine on the new day, in its place: the one
  known routine that names the thing and a weekday (two that could be are left as they are).

Pure functions of the fact and the facts known before it. Tested by ``tests/test_event_moves.py``
and the "an event moved" families of ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.memory.longterm.memory_slots import USER, fact_key, parse_key
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.fact_patterns import WEEKDAY_STEMS
from agent.memory.rules.fact_words import PEOPLE
from agent.memory.rules.reminder_time import spoken_clock
from agent.memory.schemas import Fact

__all__ = ["moved_event", "moved_routine", "moves_routine", "of_known_event"]

_F = re.IGNORECASE
# A kept day's time ("on Fri 4 Dec at 18:00"), and a day said without one ("on Sat 5 Dec").
_KEPT_DAY = r"\bon\s+[A-Z][a-z]{2}\s+\d{1,2}\s+[A-Z][a-z]{2}(?:\s+\d{4})?"
_KEPT_TIME = re.compile(rf"(?P<day>{_KEPT_DAY})(?:\s+at\s+(?P<h>\d{{2}}):(?P<m>\d{{2}}))?")
_KEPT_DAY_ONLY = re.compile(rf"{_KEPT_DAY}\s*$")
# A value that says only a time: "meeting with Sarah is 4pm", "... is now at 8:30" (a time
# said in words is put in figures first: "at 4+30" is half past four, morning or evening).
_TIME_ONLY = re.compile(
    r"^(?P<name>.+?)\s+(?:is|are)\s+(?:now\s+)?(?:at\s+)?(?P<h>\d{1,2})(?:[:.h+](?P<m>\d{2}))?"
    r"\s*(?P<mer>[ap]\.?m\.?)?\s*$",
    _F,
)
# What may follow an event's name in its longer name: "flight to Lisbon", "dinner with Tom".
_QUALIFIERS = frozenset({"to", "in", "at", "with", "for", "from"})


def _qualified(longer: str, name: str) -> bool:
    """Whether ``longer`` is ``name`` said with what it is to, with or for."""
    rest = longer[len(name) + 1 :] if longer.startswith(name + " ") else ""
    return rest.split(maxsplit=1)[0] in _QUALIFIERS if rest else False


def _whose_role(longer: str, name: str) -> bool:
    """Whether ``longer`` is ``name`` said with whose role it is: "daughter ama's recital" of
    "ama's recital"."""
    role = longer[: -len(name) - 1] if longer.endswith(" " + name) else ""
    return re.fullmatch(PEOPLE, role, _F) is not None if "'s " in name else False


def of_known_event(fact: Fact, known: Sequence[Fact]) -> Fact:
    """The fact, keyed and named as the one known event it is said of (see the module)."""
    parts = parse_key(fact.key)
    if parts.name != "event" or parts.subject != USER or any(f.key == fact.key for f in known):
        return fact
    name = parts.item
    events = [
        (f, k.item) for f in known if (k := parse_key(f.key)).name == "event" and k.subject == USER
    ]
    longer = [f for f, item in events if _qualified(item, name) or _whose_role(item, name)]
    shorter = [
        f for f, item in events if _qualified(name, item) and f.value.casefold().startswith(name)
    ]
    if len(longer) + len(shorter) != 1 or not fact.value.casefold().startswith(name):
        return fact
    if shorter:  # known by its short key: it keeps the name said now, the longer one
        return fact.model_copy(update={"key": shorter[0].key})
    (event,) = longer
    called = event.value[: len(parse_key(event.key).item)]  # "flight to Lisbon", as written
    return fact.model_copy(update={"key": event.key, "value": called + fact.value[len(name) :]})


def moved_event(fact: Fact, known: Sequence[Fact]) -> Fact:
    """The fact with the day or the time it keeps from the same event known before (see the
    module); the fact itself when it says both, or is no move of a known dated event."""
    if parse_key(fact.key).name != "event":
        return fact
    old = next((f for f in known if f.key == fact.key), None)
    kept = _KEPT_TIME.search(old.value) if old is not None else None
    if kept is None:
        return fact
    if _KEPT_DAY_ONLY.search(fact.value) is not None:
        if kept["h"] is None:
            return fact
        return fact.model_copy(update={"value": f"{fact.value} at {kept['h']}:{kept['m']}"})
    said = _TIME_ONLY.match(spoken_clock(fact.value))
    if said is None or not 0 <= int(said["h"]) <= 23:
        return fact
    hour, minute = int(said["h"]), int(said["m"] or 0)
    if minute > 59:
        return fact
    at = f"{hour:02d}:{minute:02d}"
    if said["mer"]:
        at = f"{hour % 12 + (12 if said['mer'][0].casefold() == 'p' else 0):02d}:{minute:02d}"
    elif 1 <= hour <= 12 and not said["h"].startswith("0"):  # "04:45" says which; "4" does not
        if kept["h"] is None:  # morning or evening, not known: as said
            at = f"{hour}:{minute:02d}" if said["m"] else str(hour)
        else:  # the one nearer the time it had
            was = int(kept["h"]) * 60 + int(kept["m"])
            hour = min((hour % 12, hour % 12 + 12), key=lambda h: abs(h * 60 + minute - was))
            at = f"{hour:02d}:{minute:02d}"
    return fact.model_copy(update={"value": f"{said['name']} is {kept['day']} at {at}"})


_WEEKDAY = rf"(?P<d>{WEEKDAY_STEMS})day(?P<s>s)?"
# "her ballet moved to Thursdays", "my yoga class has been moved to Wednesday", "football is
# on Saturdays now", "swimming is now on Fridays".
_ROUTINE_MOVED = re.compile(
    r"^(?:(?:actually|oh|so|ok|okay|and|fyi|btw)[\s,]+)*(?:(?:my|our)\s+[\w-]+'s\s+"
    r"|(?:my|our|his|her|their|the)\s+|(?-i:[A-Z])[\w-]*'s\s+)?(?P<thing>[\w' -]{2,40}?)"
    r"(?:\s+(?:has|have|'s|is|are|got|was|were))?(?:\s+been)?\s+(?:(?:moved|changed|switched"
    r"|shifted)\s+to|(?:now\s+)?on)\s+(?:to\s+)?"
    + _WEEKDAY
    + r"(?:\s+now|\s+from\s+now\s+on)?[.!]*$",
    _F,
)
_SAID_WEEKDAY = re.compile(rf"\b{_WEEKDAY}\b", _F)
# What a routine's thing may be said with ("ballet class", "swimming lessons").
_ROUTINE_WORDS = content_stems("class classes lesson lessons session sessions practice club")


def moves_routine(text: str) -> bool:
    """Whether ``text`` says a routine moved to another weekday ("ballet moved to Thursdays"):
    read against the routines known (:func:`moved_routine`)."""
    return _ROUTINE_MOVED.match(text.strip()) is not None


def moved_routine(
    text: str, known: Sequence[Fact], *, turn: int
) -> tuple[tuple[Fact, ...], dict[str, Fact]] | None:
    """ "ballet moved to Thursdays": the one known routine of ballet, on Thursdays, and the key
    it replaces (see the module); ``None`` when the text moves no known routine."""
    said = _ROUTINE_MOVED.match(text.strip())
    if said is None:
        return None
    wanted = content_stems(said["thing"]) - _ROUTINE_WORDS
    found = [
        f
        for f in known
        if parse_key(f.key).attribute in {"routine", "does"}
        and wanted
        and wanted <= content_stems(f.value)
        and _SAID_WEEKDAY.search(f.value)
    ]
    if len(found) != 1:
        return None
    (old,) = found
    was = _SAID_WEEKDAY.search(old.value)
    assert was is not None  # noqa: S101 - found above
    day = said["d"].capitalize() + "day" + ("s" if was["s"] else "")
    value = old.value[: was.start()] + day + old.value[was.end() :]
    parts = parse_key(old.key)
    moved = Fact(
        key=fact_key(parts.subject, parts.attribute, value),
        value=value,
        turn=turn,
        mode="corrected",
        speaker=old.speaker,
    )
    return (moved,), {moved.key: old}
