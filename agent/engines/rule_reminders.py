"""What the rule-based concierge does with reminders once set, and with the clock.

- "cancel the oven reminder", "delete my reminder about the dentist", "cancel reminder 2",
  "turn off the oven alarm", "cancel the oven one", "cancel the reminder" (when there is one),
  "cancel all reminders": the reminders named are put on the reply as ``cancelled`` (the lane
  drops them from the session's active jobs in the turn's commit, and a cancelled reminder
  never fires);
- "snooze it 10 minutes", "snooze for an hour", "remind me again in 5 minutes", "delay the oven
  reminder by an hour": the reminder named, or the one that just fired, comes back after the
  delay (10 minutes if none is said); one not fired yet is moved by the delay;
- "move the oven reminder to 7pm", "change it to tomorrow at 9": set at that time instead;
- "skip the next bins reminder": one occurrence of a series passed over
  (:mod:`agent.engines.rule_reminder_skip`);
- "remind me every hour ...": refused, saying what repeats (every day, weekday, week, month);
- "what time is it?", "what's the date?", "what's my time zone?": answered in the user's time
  zone (UTC until they set one with ``/timezone``); "what time is it in Tokyo?" in Tokyo's.

Each phrasing family is a tuple of patterns (data), tried in order. Covered by
``tests/test_rule_reminders.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from agent.engines.rule_reading import Reading, say_when, utc
from agent.engines.rule_reminder_choice import (
    ALARM,
    PLEASE,
    ReminderChange,
    active_reminders,
    chosen_reminders,
    last_set,
    named_words,
    to_label,
    which_reminder,
)
from agent.engines.rule_reminder_hour import hour_asked
from agent.engines.rule_reminder_skip import answer_next_reminder, skip_reminder
from agent.memory.longterm.memory_slots import in_second_person
from agent.memory.rules.recurrence import moved_to, repeat_said, say_repeat
from agent.memory.rules.reminder_time import due_instead, due_time, read_delay, with_meridiem
from agent.memory.schemas import ConversationContextPacket, JobRef
from agent.utils.time_zones import DEFAULT_ZONE, find_zone, zone_label

__all__ = ["answer_reminder", "answer_time", "change_reminders"]

_F = re.IGNORECASE
_SNOOZE_DEFAULT = timedelta(minutes=10)

# What names a reminder in a request: "the oven reminder", "the alarm", "the oven one".
_REMINDER = r"(?:\breminders?\b|\balarms?\b|\btimers?\b|\bthe\s+[\w' -]{1,60}?\s+one\b)"
_CANCEL: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, _F)
    for pattern in (
        rf"{PLEASE}(?:cancel|delete|remove|drop|clear|scrap|forget(?: about)?|call off|turn off"
        rf"|stop|kill|undo|never ?mind|get rid of|ditch)\s+(?P<what>(?=.{{0,200}}?{_REMINDER})"
        r".{0,300}?)[\s.!?]*$",
        rf"{PLEASE}i\s+(?:don't|do not|no longer)\s+need\s+(?P<what>(?=.{{0,200}}?{_REMINDER})"
        r".{0,300}?)(?:\s+any\s?(?:more|longer))?[\s.!?]*$",
        r"^(?P<what>(?:the|my)\s+.{0,200}?\breminders?\b.{0,100}?)\s+(?:is|isn't|is not)\s+"
        r"(?:cancelled|canceled|off|needed|necessary|no longer needed)[\s.!?]*$",
    )
)
# "cancel that", "scrap it": the reminder the bot just set.
_CANCEL_THAT = re.compile(
    rf"{PLEASE}(?:cancel|delete|remove|scrap|undo|drop|forget)\s+(?:that|it|this)(?:\s+one)?"
    r"(?:\s+(?:please|again))?[\s.!?]*$",
    _F,
)
# "snooze it", "delay that": the reminder just set or moved.
_IT = re.compile(r"\s*(?:it|that|this)\b", _F)
_SNOOZE: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, _F)
    for pattern in (
        rf"{PLEASE}(?:snooze|delay|postpone|push back|put off|defer)\b(?P<rest>.{{0,120}})$",
        # "push the oven one back 15 minutes", "put it back an hour"
        rf"{PLEASE}(?:push|put|move|set)\s+(?P<rest>(?:it|that|this|(?=.{{0,120}}?{_REMINDER})"
        r".{1,120}?)\s+back\b.{0,60})$",
        r"^(?:please\s+)?remind me (?:again|later)\b(?!\s+(?:to|about|that)\b)(?P<rest>.{0,120})$",
    )
)
# "move the oven reminder to 7pm", "change it to tomorrow at 9".
_MOVE = re.compile(
    rf"{PLEASE}(?:move|change|reschedule|shift|push|set)\s+(?P<what>it|that|(?=.{{0,120}}?"
    rf"{_REMINDER}).{{1,120}}?)\s+(?:to|for|till|until)\s+(?P<when>.{{1,80}}?)[\s.!?]*$",
    _F,
)
# "make it 10am", "actually make that Tuesday": the reminder just set, at another time.
_MAKE_IT = re.compile(
    rf"{PLEASE}(?:make|have|put)\s+(?P<what>it|that)\s+(?:for\s+|at\s+|on\s+)?"
    r"(?P<when>.{1,80}?)[\s.!?]*$",
    _F,
)
# "remind me every month ...", "an hourly reminder": repeats that are not read (recurrence).
_REPEATING = re.compile(
    r"\b(?:remind me|reminders?|alarms?|wake me)\b.*\b(?:every|each)\s+(?:other\s+)?(?:day|morning"
    r"|afternoon|evening|night|week|weekday|weekend|month|year|hour|monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday|\d+\s+\w+)\b|\b(?:daily|weekly|monthly|hourly|recurring"
    r"|repeating)\s+(?:reminders?|alarms?)\b",
    _F,
)
_ONE_TIME = (
    "I can repeat a reminder every day, weekday, week or month, e.g. “remind me every Monday "
    "at 9am to put the bins out” or “on the 1st of every month”; not every year or hour yet."
)
_AMOUNT = re.compile(
    r"(?:in|for|by|another)?\s*(?P<n>\d{1,4}(?:[.,]\d{1,2})?\s*|half an?\s+|an?\s+|[a-z]+\s+)"
    r"(?P<u>s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)\b",
    _F,
)

# "when's the swimming reminder?", "what time is my reminder to call Ana?", "is the oven alarm
# set?": one reminder asked about, by its words.
_ASK_REMINDER: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, _F)
    for pattern in (
        r"\b(?:when|what\s+time|what\s+day)(?:'s|\s+is|\s+will)?\s+(?:the|my)\s+"
        r"(?P<what>(?:[\w'-]+\s+){0,4}?)(?:reminder|alarm|timer)\b(?P<rest>[^?]{0,80})",
        r"\b(?:is|are)\s+(?:the|my)\s+(?P<what>(?:[\w'-]+\s+){0,4}?)(?:reminder|alarm|timer)"
        r"(?P<rest>[^?]{0,80}?)\s+(?:still\s+)?(?:set|on)\s*[?.!]*$",
        r"\bdid\s+you\s+set\s+(?:the|my|a)\s+(?P<what>(?:[\w'-]+\s+){0,4}?)(?:reminder|alarm"
        r"|timer)(?P<rest>[^?]{0,80})",
    )
)

_ASK_TIME = re.compile(
    r"\bwhat(?:'s|\s+is)?\s+the\s+time\b|\bwhat\s+time\s+(?:is\s+it|it\s+is)\b"
    r"|\b(?:tell me|do you know)\s+the\s+time\b"
    # "local time?", not "we land at 3pm local time"
    r"|^(?!(?:i|we|my|our|they|he|she|it)\b).*?\b(?:the\s+)?(?:current|local)\s+time\b"
    r"|\bwhat(?:'s|\s+is)\s+(?:the\s+|today's\s+)?date\b|\bwhat\s+day\s+is\s+(?:it|today)\b",
    _F,
)
_TOMORROW = re.compile(r"\b(?:day|date)\b.*\btomorrow\b", _F)
# "what time is it in Tokyo?": the place asked about (not "in my time zone").
_IN_PLACE = re.compile(
    r"\bin\s+(?!my\b|your\b|here\b|the\s+morning\b)(?P<place>[^\W\d_][\w .'/-]{0,40}?)"
    r"\s*(?:right now|now|today)?\s*[?.!]*$",
    _F,
)
_ASK_ZONE = re.compile(r"\bwhat(?:'s|\s+is)\s+my\s+time\s*zone\b|\bwhich\s+time\s*zone\b", _F)

_WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_MONTHS = (
    "January February March April May June July August September October November December"
).split()


def change_reminders(packet: ConversationContextPacket, reading: Reading) -> ReminderChange | None:
    """Cancel, snooze or move the reminders ``reading`` names (or refuse a repeating one), or
    return ``None`` if it asks none of these."""
    if _REPEATING.search(reading.text) and repeat_said(reading.text) is None:
        return ReminderChange(_ONE_TIME, "reminder_unreadable")
    just_set = last_set(packet)
    if just_set and _CANCEL_THAT.match(reading.text):  # "cancel that", of the one just set
        names = "; ".join(in_second_person(ref.label or "reminder") for ref in just_set)
        plural = "reminders" if len(just_set) > 1 else "reminder"
        return ReminderChange(f"Cancelled the {plural}: {names}.", "cancel_reminder", just_set)
    skipped = skip_reminder(packet, reading)
    if skipped is not None:
        return skipped
    for pattern in _CANCEL:
        match = pattern.match(reading.text)
        if match is not None:
            return _cancel(packet, match.group("what"))
    for pattern in _SNOOZE:
        match = pattern.match(reading.text)
        if match is not None:
            return _snooze(packet, reading, match.group("rest"))
    match = _MOVE.match(reading.text)
    if match is not None and active_reminders(packet):
        return _move(packet, reading, match.group("what"), match.group("when"))
    match = _MAKE_IT.match(reading.text)
    if match is None or not active_reminders(packet):
        return None
    what, when = match.group("what"), match.group("when")
    if _reads_as_time(when, reading, packet):
        return _move(packet, reading, what, when)
    bare = _BARE_NUMBER.fullmatch(when)
    if bare is not None:  # "make it 2" of a reminder minutes away: 2pm, or in 2 hours?
        said = bare.group("n").casefold()
        n = _HOUR_WORDS.index(said) + 1 if said in _HOUR_WORDS else int(said)
        return ReminderChange(
            f"Make it {n} o'clock or in {n} hours? Say “make it {n}pm” or “make it {n} hours”.",
            "reminder_unreadable",
        )
    return None


# A number alone ("make it 2", "two") is an hour, never a month or a day: of a reminder hours
# away ("remind me on Saturday at 10", then "make it 11"), the one nearest its time (11:00, not
# 23:00); of one minutes away ("in 20 minutes", then "make it 2") nothing says which.
_HOUR_WORDS = "one two three four five six seven eight nine ten eleven twelve".split()
_BARE_NUMBER = re.compile(rf"\s*(?P<n>\d{{1,2}}|{'|'.join(_HOUR_WORDS)})\s*", _F)
_HOURS_AWAY = timedelta(hours=2)


def _hours_away(due: datetime | None, now: datetime) -> bool:
    """Whether a reminder due at ``due`` is far enough away that a number alone ("make it 11")
    can only mean an hour of its day, not a length of time."""
    return due is not None and utc(due) - utc(now) > _HOURS_AWAY


def _time_phrases(when: str) -> tuple[str, ...]:
    """The phrases ``when`` may be read as: itself, or after "at" ("make it 10am", "9:30"); a
    length of time is a delay from now ("make it 30 minutes": "in 30 minutes"); a number alone
    is that hour in the morning and in the evening."""
    if read_delay(f"in {when.strip()}") is not None:
        return (f"in {when.strip()}",)
    bare = _BARE_NUMBER.fullmatch(when)
    if bare is None:
        return (when, f"at {when}")
    number = bare.group("n").casefold()
    hour = _HOUR_WORDS.index(number) + 1 if number in _HOUR_WORDS else int(number)
    return (f"at {hour}am", f"at {hour}pm") if 1 <= hour <= 12 else (f"at {hour}",)


def _reads_as_time(when: str, reading: Reading, packet: ConversationContextPacket) -> bool:
    """Whether ``when`` says a time ("10am", "Friday"): "make it quick" moves nothing, nor does
    a number alone unless every reminder it may move is hours away."""
    if _BARE_NUMBER.fullmatch(when) is not None:
        return all(_hours_away(ref.due_at, reading.now) for ref in active_reminders(packet))
    return any(
        due_time(said, reading.now, reading.zone) is not None for said in _time_phrases(when)
    )


def answer_reminder(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "when's the swimming reminder?": when the reminder it names is due (or the only
    one, asked without words), or that no reminder is about that."""
    if "remind" not in reading.text.casefold() and ALARM.search(reading.text) is None:
        return None  # most messages: no pattern to try
    soonest = answer_next_reminder(packet, reading)
    if soonest is not None:
        return soonest
    match = next((m for p in _ASK_REMINDER if (m := p.search(reading.text)) is not None), None)
    if match is None:
        return None
    active = active_reminders(packet)
    what = f"{match.group('what')} {match.group('rest')}"
    chosen = chosen_reminders(active, what)
    if chosen:
        ref = chosen[0]
        when = say_when(utc(ref.due_at or reading.now), reading.now, reading.zone)
        label = to_label(ref)
        return f"I'll remind you {when}{label}."
    if not active:
        waiting = hour_asked(packet)
        morning = None if waiting is None else with_meridiem(waiting.user_text, evening=False)
        if morning is not None:  # "remind me on Saturday at 10 ...": morning or evening?
            return f"It isn't set yet: say it with am or pm, e.g. “{morning[0]}”."
        return "You have no reminders set."
    said = " ".join(what.split())
    listing = "\n".join(
        f"• {in_second_person(ref.label or 'reminder')}, "
        f"{say_when(utc(ref.due_at or reading.now), reading.now, reading.zone)}"
        for ref in active
    )
    lead = f"I have no reminder about “{said}”." if named_words(what) else "Which one?"
    return f"{lead} Your reminders:\n{listing}"


def answer_time(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what time is it?" and "what's my time zone?" in the user's zone."""
    lowered = reading.text.casefold()
    if "time" not in lowered and "date" not in lowered and "day" not in lowered:
        return None  # most messages: no pattern to try
    zone, label = reading.zone, zone_label(reading.zone)
    unset = "" if zone != DEFAULT_ZONE else _set_zone_hint(reading)
    if _ASK_ZONE.search(reading.text):
        if zone == DEFAULT_ZONE:
            return "I use UTC for you: you haven't set a time zone." + unset
        return f"Your time zone is {label}."
    if not _ASK_TIME.search(reading.text):
        return None
    place = _IN_PLACE.search(reading.text)
    if place is not None:
        there = find_zone(place.group("place"))
        if there is None:
            return (
                f"I don't know the time zone of {place.group('place')}. Ask about a big city "
                "near it, or a zone such as Asia/Kolkata."
            )
        return f"It's {_clock(reading.now, there)} in {place.group('place')} ({there.key})."
    if _TOMORROW.search(reading.text):  # "what day is it tomorrow?", "what's the date tomorrow?"
        return f"Tomorrow is {_day(reading.now.astimezone(zone) + timedelta(days=1))}."
    return f"It's {_clock(reading.now, zone)} ({label}).{unset}"


def _set_zone_hint(reading: Reading) -> str:
    """How to set a time zone: the one of where the user lives, when it is known ("You live in
    Lisbon: /timezone Lisbon sets Europe/Lisbon")."""
    home = next((f.value for f in reading.facts if f.key == "location"), None)
    there = None if home is None else find_zone(home)
    if home is None or there is None or there == DEFAULT_ZONE:
        return " Set yours with /timezone, e.g. /timezone Europe/Lisbon."
    return f" You live in {home}: /timezone {home} sets {there.key}."


def _clock(now: datetime, zone: ZoneInfo) -> str:
    """"08:00 on Thursday 26 November 2026": ``now`` on the clock of ``zone``."""
    local = now.astimezone(zone)
    return f"{local:%H:%M} on {_day(local)}"


def _day(local: datetime) -> str:
    """"Thursday 26 November 2026": the day of ``local``."""
    return f"{_WEEKDAYS[local.weekday()]} {local.day} {_MONTHS[local.month - 1]} {local.year}"


def _cancel(packet: ConversationContextPacket, what: str) -> ReminderChange:
    active = active_reminders(packet)
    if not active:
        return ReminderChange("You have no reminders set, so there is nothing to cancel.",
                              "cancel_reminder")  # fmt: skip
    chosen = chosen_reminders(active, what)
    if not chosen:
        return ReminderChange(which_reminder(active, "cancel reminder 1"), "cancel_reminder")
    names = "; ".join(in_second_person(ref.label or "reminder") for ref in chosen)
    plural = "reminders" if len(chosen) > 1 else "reminder"
    return ReminderChange(f"Cancelled the {plural}: {names}.", "cancel_reminder", tuple(chosen))


def _delay(rest: str) -> timedelta | None:
    amount = _AMOUNT.search(rest)
    if amount is None:
        return _SNOOZE_DEFAULT
    return read_delay(f"in {amount.group('n').strip()} {amount.group('u')}")


def _last_fired(packet: ConversationContextPacket) -> JobRef | None:
    for turn in reversed(packet.recent_turns):
        fired = [r for r in turn.job_refs if r.kind == "reminder" and r.status == "done"]
        if fired:
            return fired[-1]
    return None


def _snooze(packet: ConversationContextPacket, reading: Reading, rest: str) -> ReminderChange:
    delay = _delay(rest)
    if delay is None:
        return ReminderChange(
            "I couldn't read how long to snooze. Try “snooze 10 minutes”.", "reminder_unreadable"
        )
    fired = _last_fired(packet)
    active = sorted(active_reminders(packet), key=lambda r: utc(r.due_at or reading.now))
    named = chosen_reminders(active, rest) if named_words(rest) else []
    just_set = last_set(packet)
    if not named and len(just_set) == 1 and _IT.match(rest):
        named = list(just_set)  # "snooze it 10 minutes" of the one just set or moved
    if named:  # "delay the oven reminder by an hour": that one, not the soonest
        fired, active = None, named
    cancelled: tuple[JobRef, ...] = ()
    if fired is not None:
        label, due = fired.label, reading.now + delay
    elif active:
        first = active[0]
        label, due, cancelled = first.label, utc(first.due_at or reading.now) + delay, (first,)
    else:
        return ReminderChange("There is no reminder to snooze.", "cancel_reminder")
    when = say_when(due, reading.now, reading.zone)
    said = f"Snoozed: I'll remind you {when}" + (
        f" to {in_second_person(label)}." if label else "."
    )
    repeat = cancelled[0].repeat if cancelled else None  # this one late, the series as it was
    return ReminderChange(said, "set_reminder", cancelled, label, due, repeat)


def _move(
    packet: ConversationContextPacket, reading: Reading, what: str, when: str
) -> ReminderChange:
    """Set the reminder ``what`` names (or the only one, or the one that just fired, for "it")
    at the time ``when`` says instead."""
    active = active_reminders(packet)
    fired = _last_fired(packet)
    just_set = last_set(packet)
    if what.casefold() in {"it", "that"}:
        chosen = (
            list(just_set) if len(just_set) == 1
            else [fired] if fired is not None
            else active if len(active) == 1
            else []
        )  # fmt: skip
    else:
        chosen = chosen_reminders(active, what)
    if not chosen:
        return ReminderChange(which_reminder(active, "move reminder 1 to 7pm"), "cancel_reminder")
    ref = chosen[0]
    # A time alone keeps the reminder's day, a day alone its time ("change it to 11am").
    before = ref.due_at if ref.due_at is not None and ref.status == "scheduled" else None
    read = [
        due_time(said, reading.now, reading.zone) if before is None
        else due_instead(said, before, reading.now, reading.zone)
        for said in _time_phrases(when)
    ]  # fmt: skip
    due = next((d for d in read if d is not None), None)
    if _BARE_NUMBER.fullmatch(when) is not None:  # "make it 11": the hour nearest its time
        hours_away = _hours_away(before, reading.now)
        nearest = (d for d in read if d is not None and hours_away)
        due = min(nearest, key=lambda d: abs(d - (before or d)), default=None)
    if due is None:
        return ReminderChange(
            f"I couldn't read “{when}” as a time. Try “move the reminder to 7pm” or “to "
            "tomorrow at 9am”.",
            "reminder_unreadable",
        )
    when = say_when(due, reading.now, reading.zone)
    cancelled = (ref,) if ref.status == "scheduled" else ()
    moved = cancelled and ref.repeat is not None
    repeat = moved_to(ref.repeat, due, reading.zone.key) if moved and ref.repeat else None
    if repeat is not None:  # the series moves: "every day at 19:00 UTC ..., the next one ..."
        when = f"{say_repeat(repeat)} {zone_label(reading.zone)}"
    said = f"Moved: I'll remind you {when}" + (
        f" to {in_second_person(ref.label)}." if ref.label else "."
    )
    return ReminderChange(said, "set_reminder", cancelled, ref.label, due, repeat)
