"""The concierge: the engine that answers each message, and the offline rule-based one.

:class:`RuleBasedConcierge` is the default and needs no model, no network and no clock of its
own: its reply is a function of the :class:`~agent.memory.ConversationContextPacket` (the
session as it stood before this message) and the message itself, with the message's
``received_at`` as "now". Only the ids of the reminders it schedules are new each time.

What it understands (each reply names its ``intent``):

- facts the user states about themselves and the people and pets in their life ("my name is
  Ada", "I'm planning a trip to Lisbon in May", "my sister Mia lives in Porto"):
  ``state_fact``, saying "Noted" only for what long-term memory keeps for good (a hedge is
  kept unconfirmed, and the reply says so); questions about them, their history and several
  values ("what's my name?", "where did I live before?", "what are my plans?", "where does my
  sister live?"): ``ask_fact``; "what do you know about me?": ``list_facts``;
- "forget that my sister lives in Porto": ``forget_memory``, with the ids of the long-term
  memories it names on the reply (the lane erases them in the turn's transaction);
- to-dos ("remind me to book the hotel"): ``add_todo``; done ("I booked the hotel", "done 1"):
  ``close_todo``; "what is still open?": ``list_open``;
- timed reminders ("remind me in 10 minutes to call mom"): ``set_reminder``, with a
  ``schedule_reminder`` job ref that the adapter schedules after the turn is committed;
- promises ("I'll send you the report"): ``note_commitment``; an open question settled by a
  statement or dropped by "never mind": ``close_question``; a question it cannot answer or a
  request it cannot do, kept on the list: ``kept_open``; in a group, a proposal, vote or
  decision said to it: ``deliberation``;
- "what did we talk about?": ``recap``; "what did we decide?": ``list_decisions`` (a group's
  decisions and the proposals still open); in a group, "what did I say about X?":
  ``own_words`` and "what is still undecided?": ``list_undecided``; greetings and thanks:
  ``smalltalk``; ``help``;
- anything else, where no rule acted: ``unknown`` (``reminder_unreadable`` for a reminder
  whose time it cannot read), said honestly in at most 200 characters with one example and a
  pointer to /help. The state manager then changes nothing (it reads the turn's intent), so
  the bot never says it did not understand while acting on the message.

Facts, to-dos and loops in the current message are not in the packet yet (the lane records
them from the committed turn), so the concierge reads the message with the same rules
(:mod:`agent.memory.rules.extraction`, and the state's loop rules on a preview of the turn) and
answers from both. It never touches the database.

This module is the engine and its dispatch; the replies are grouped by what they are about:
:mod:`~agent.engines.rule_facts` (facts), :mod:`~agent.engines.rule_forget` ("forget that ..."),
:mod:`~agent.engines.rule_todos` (to-dos, reminders, promises, open questions),
:mod:`~agent.engines.rule_talk` (recap, decisions, help, small talk) and
:mod:`~agent.engines.rule_group` (a group member's own words, what is undecided), over the
reading of the message in :mod:`~agent.engines.rule_reading`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from agent.engines.rule_countdown import answer_days_until
from agent.engines.rule_details import answer_detail
from agent.engines.rule_diet import answer_can_have
from agent.engines.rule_facts import (
    NOT_TOLD,
    answer_about_you,
    answer_earlier,
    answer_fact,
    answer_name,
    answer_someone,
    fact_acks,
)
from agent.engines.rule_family import answer_family, answer_their_count
from agent.engines.rule_forget import forget_reply
from agent.engines.rule_group import (
    answer_needs,
    answer_own_words,
    answer_positions,
    answer_proposer,
    answer_stance,
    answer_undecided,
)
from agent.engines.rule_likes import answer_like, answer_like_kind
from agent.engines.rule_plans import (
    answer_event,
    answer_plans_when,
    answer_stay,
    answer_trip,
    answer_upcoming,
)
from agent.engines.rule_reading import (
    Answer,
    Reading,
    direct_question,
    say_when,
    singular_question,
    utc,
)
from agent.engines.rule_recall import answer_from_memory, answer_told, quote_memory
from agent.engines.rule_reminder_before import moved_with, reminder_before
from agent.engines.rule_reminder_hour import ASK_HOUR, answered_request, ask_hour, part_gone
from agent.engines.rule_reminder_referent import spoken_of
from agent.engines.rule_reminders import answer_reminder, answer_time, change_reminders
from agent.engines.rule_routines import answer_how_long, answer_medication, answer_routine
from agent.engines.rule_talk import (
    UNKNOWN,
    answer_decisions,
    answer_help,
    answer_last_time,
    answer_recap,
    celebrated,
    cheer,
    smalltalk,
)
from agent.engines.rule_todos import (
    REMINDER_FORMS,
    answer_open_items,
    dialogue_acks,
    kept_open,
    reminder_set,
    reminders_not_needed,
    said_done,
    scheduled_jobs,
    series_kept,
    todo_acks,
)
from agent.memory.longterm.memory_slots import in_second_person, memory_facts
from agent.memory.rules.deliberation import is_deliberation_move
from agent.memory.rules.dialogue_acts import HELP_OR_ERROR_INTENTS
from agent.memory.rules.extraction import Clause, each_time, normalize_text, split_clauses
from agent.memory.rules.fact_dates import said_from_now, zone_in
from agent.memory.rules.pronouns import resolve_name, resolve_pronoun, said_before
from agent.memory.rules.recurrence import say_repeat
from agent.memory.rules.reminder_requests import (
    ReminderRequest,
    is_reminder_request,
    parse_reminders,
)
from agent.memory.rules.session_rules import (
    GROUP_CHAT_TYPES,
    PERSONAL_CHAT_TYPES,
    LoopUpdate,
    member,
    merge_facts,
    update_open_loops,
)
from agent.memory.rules.value_corrections import read_said
from agent.memory.schemas import (
    ConversationContextPacket,
    InboundMessage,
    JobRef,
    Repeat,
    Reply,
)
from agent.memory.writer import PromotionPolicy
from agent.utils import ids

__all__ = ["RuleBasedConcierge"]

# Telegram caps a message at 4096 characters; stay clear of it.
_MAX_REPLY_CHARS = 4000

_NO_TEXT = "I can only read text for now. Try “my name is Ada”, or send /help to see what I can do."

# "remind me to call the bank", said without a time: a to-do, and how to have a reminder too.
_ASKS_REMINDER = re.compile(r"^(?:please\s+)?(?:remind|ping) me\b", re.IGNORECASE)
_SAY_WHEN = "Say when if you want a reminder too, e.g. “remind me tomorrow at 9am to …”."
# "remind me at 8 and 6pm": the 8 is morning or evening, and said only once.
_OTHER_HOUR = (
    "I couldn't tell whether the other time is morning or evening: say it again with am or pm"
    " and I'll set that one too."
)

# Reply intents that change the state, first: the reply is named after its side effect.
_SIDE_EFFECTS = (
    "set_reminder",
    ASK_HOUR,
    "cancel_reminder",
    "close_todo",
    "add_todo",
    "close_question",
    "note_commitment",
)

# The questions answered, in the order they are tried: the first rule that recognises the
# message answers it (someone's facts before the user's: "where does my sister live?").
# A group's two questions come first ("what's still open for a decision?" is no to-do).
_QUESTIONS: tuple[tuple[str, Answer], ...] = (
    ("own_words", answer_own_words),
    ("list_undecided", answer_undecided),
    ("list_undecided", answer_proposer),
    ("list_undecided", answer_stance),  # "who is against Porto?"
    ("list_undecided", answer_positions),  # "what's everyone's position?"
    ("ask_fact", answer_needs),  # "is anyone allergic to anything?", of a group's members
    ("ask_fact", answer_told),
    ("ask_fact", answer_their_count),
    ("ask_fact", answer_someone),
    ("ask_fact", answer_earlier),
    ("ask_fact", answer_name),
    ("tell_time", answer_time),
    ("list_open", answer_reminder),
    ("ask_fact", answer_upcoming),
    ("ask_fact", answer_days_until),
    ("list_open", answer_open_items),
    ("list_facts", answer_about_you),
    ("list_decisions", answer_decisions),
    ("recap", answer_last_time),
    ("recap", answer_recap),
    ("ask_fact", answer_like),
    ("ask_fact", answer_like_kind),
    ("ask_fact", answer_routine),  # "when do I go to the gym?" before a trip's question
    ("ask_fact", answer_medication),
    ("ask_fact", answer_how_long),
    ("ask_fact", answer_stay),  # "where am I staying in York?" before where one lives
    ("ask_fact", answer_event),
    ("ask_fact", answer_trip),
    ("ask_fact", answer_plans_when),
    ("ask_fact", answer_can_have),
    ("ask_fact", answer_detail),
    ("ask_fact", answer_family),
    ("ask_fact", answer_fact),
    ("help", answer_help),
)


class RuleBasedConcierge:
    """The offline concierge: deterministic rules, useful without any model.

    Args:
        job_ids: makes the id of each reminder it schedules (default :func:`agent.utils.ids.job_id`;
            tests pass a counter).
        promotion: the lane's promotion gate: the concierge says it noted a fact only when the
            gate keeps it (the same rule, applied to the same reading of the message).
    """

    def __init__(
        self,
        *,
        job_ids: Callable[[], str] = ids.job_id,
        promotion: PromotionPolicy | None = None,
    ) -> None:
        self._job_ids = job_ids
        self._promotion = promotion or PromotionPolicy()

    async def reply(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        """Answer ``message`` from ``packet`` and what the message itself says.

        Args:
            packet: the session before this message.
            message: the new message; its ``received_at`` is "now".

        Returns:
            The reply, with its intent; for a reminder, action ``schedule_reminder`` and the job.
        """
        # The rules are pure CPU over the packet and the message: a worker thread reads them,
        # and the event loop serves the other chats meanwhile (issue 20, bar 1).
        reply = await asyncio.to_thread(self._answer, packet, message)
        if reply.text and len(reply.text) > _MAX_REPLY_CHARS:
            reply = reply.model_copy(update={"text": reply.text[: _MAX_REPLY_CHARS - 1] + "…"})
        return reply

    def _answer(self, packet: ConversationContextPacket, message: InboundMessage) -> Reply:
        # "do you know where I work?" is read as "where do I work?".
        text = direct_question(normalize_text(message.text or ""))
        if message.chat_type in PERSONAL_CHAT_TYPES:  # "where do we live?": the user's home
            text = singular_question(text)
        if not text:
            return Reply(text=_NO_TEXT, intent="unknown")  # nothing to read: not understood
        # "10am", answering "Is that tomorrow at 10:00 (morning) or at 22:00 (evening)?", is
        # read as the reminder request with its hour said.
        text = answered_request(packet, text) or text
        forgotten = forget_reply(packet, message, text)
        if forgotten is not None:
            return forgotten
        seq = packet.turn_count + 1
        now = utc(message.received_at)
        # What earlier sessions taught (long-term memory), overridden by this session's facts:
        # in a group, those the member asking told about themselves (never another's).
        asker = member(message.speaker, message.user_id)
        mine = [f.model_copy(update={"speaker": None}) for f in packet.facts
                if f.speaker in (None, asker)]  # fmt: skip
        known = merge_facts(memory_facts(packet.memories), mine)
        before = said_before(packet.recent_turns)
        if message.chat_type in PERSONAL_CHAT_TYPES:  # "his name is Leo" after "my son is 12"
            text = resolve_name(resolve_pronoun(text, before, known), known)
        # "I have a test tomorrow" is kept with its date, read in the zone known so far; a name
        # put right ("sorry, her name is Anna") replaces the one it corrects.
        stated = read_said(
            text, known, next(iter(before), None), turn=seq, said_at=now, zone=zone_in(known)
        )
        new_facts = stated.facts
        known = tuple(f for f in known if f.key not in stated.replaced.values())
        facts = merge_facts(known, new_facts)
        zone = zone_in(facts)
        # "remind me a day before Sara's birthday": a reminder by a day the facts know.
        requested = parse_reminders(text, now, zone)  # "at 7am and 6pm": two
        reminder = requested[0] if requested else None
        ahead = reminder_before(text, facts, now, zone) if reminder is None else None
        if isinstance(ahead, ReminderRequest):
            reminder, ahead = ahead, None
        if reminder is not None:  # "remind me about it at 5": what the message before said
            previous = next(iter(before), None)
            reminder = spoken_of(reminder, previous, seq, packet.open_loops)
        reading = Reading(
            text=text,
            now=now,
            new_facts=new_facts,
            facts=facts,
            # As the state will fold it: in a group, the member puts right only their own.
            loops=update_open_loops(
                packet.open_loops,
                text,
                seq=seq,
                owner=asker if message.chat_type in GROUP_CHAT_TYPES else None,
            ),
            reminder=reminder,
            zone=zone,
        )
        parts: list[str] = []
        intents: list[str] = []
        jobs: tuple[JobRef, ...] = ()
        change = None if reminder or ahead else change_reminders(packet, reading)
        if reading.reminder is not None:
            request = reading.reminder
            jobs = (self._reminder(request.label, request.due_at, request.repeat),)
            parts.append(reminder_set(reading.reminder, now, zone))
            for second in requested[1:]:  # the same reminder at its second time
                again = replace(second, label=request.label, link=request.link)
                jobs += (self._reminder(again.label, again.due_at, again.repeat),)
                parts.append(reminder_set(again, now, zone))
            if 1 < len(each_time(text)) > len(requested):  # "at 8 and 6pm": the 8 asks which
                parts.append(_OTHER_HOUR)
            intents.append("set_reminder")
        elif change is not None:
            jobs = tuple(r.model_copy(update={"status": "cancelled"}) for r in change.cancelled)
            if change.due_at is not None:
                jobs += (self._reminder(change.label, change.due_at, change.repeat),)
            parts.append(change.text)
            intents.append(change.intent)
        elif ahead is not None:  # of a thing without a day known: say so, and how instead
            parts.append(ahead)
            intents.append("reminder_unreadable")
        elif (asked := ask_hour(text, now, zone)) is not None:
            parts.append(asked)  # "at 10": morning or evening?
            intents.append(ASK_HOUR)
        elif (gone := part_gone(text, now, zone)) is not None:
            parts.append(gone)  # "tonight", said at 23:00: at what time?
            intents.append("reminder_unreadable")
        elif is_reminder_request(text):
            parts.append(REMINDER_FORMS)
            intents.append("reminder_unreadable")
        done = [] if change or reading.reminder else reminders_not_needed(packet, reading)
        # "I finished marking the tests", on no list: its reminder's deed, not a missing to-do.
        loops = reading.loops
        deeds = [t for t in loops.unmatched if not any(said_done(ref, [t]) for ref in done)]
        if celebrated(text):  # "I finished my first marathon": news, on no list
            deeds = []
        parts.extend(todo_acks(replace(loops, unmatched=tuple(deeds)), intents))
        if loops.opened and _ASKS_REMINDER.match(text):  # "remind me to call the bank": when?
            parts.append(_SAY_WHEN)
        personal = message.chat_type in PERSONAL_CHAT_TYPES
        noted = fact_acks(
            known, reading.new_facts, intents, kept=self._promotion.keeps, personal=personal
        )
        cheered = cheer(reading) if noted else None  # "I got a job at Google!": news, noted
        parts.extend([cheered, *noted] if cheered else noted)
        if done:  # "I called the plumber", "cancel my flight": its reminder is not needed
            jobs += tuple(done)
            labels = "; ".join(in_second_person(ref.label) for ref in done)
            if parts:
                parts.append(f"I've cancelled its reminder too: {labels}.")
            else:  # the deed of a reminder set alone
                parts.append(f"Great, that's done: I've cancelled its reminder: {labels}.")
                intents.append("cancel_reminder")
        elif not parts and (kept := series_kept(packet, reading)):  # "I took my vitamins"
            lines = "; ".join(
                f"{in_second_person(r.label)}, {say_repeat(r.repeat)}" for r in kept if r.repeat
            )
            parts.append(f"Great! Your reminder goes on: {lines}.")
            intents.append("close_todo")
        scheduled = scheduled_jobs(packet, jobs)
        for ref, due in [] if change else moved_with(known, new_facts, scheduled, now, zone):
            # "my flight got moved to Saturday": its reminder moves with it
            jobs += (ref.model_copy(update={"status": "cancelled"}), self._reminder(ref.label, due))
            when = say_when(due, now, zone)
            parts.append(f"I've moved its reminder too: {in_second_person(ref.label)}, {when}.")
        clauses = split_clauses(message.text)
        parts.extend(dialogue_acks(packet, message, reading, clauses, intents))
        # A cancel or snooze is the answer ("cancel all my reminders" asks for no list).
        answer = None if change is not None else _question(packet, reading, jobs)
        if answer is not None and answer[1].startswith(NOT_TOLD):
            # No fact says it, but it may have been said in passing: quote it if so.
            quoted = quote_memory(packet, message.text or "", now, personal=personal, asker=asker)
            answer = answer if quoted is None else ("recall", quoted)
        if answer is not None:
            intents.append(answer[0])
            parts.append(answer[1])
        if not parts:
            intent, said = _unanswered(packet, message, reading, clauses)
            intents.append(intent)
            parts.append(said)
        return Reply(
            # A kept date is said from today: "tomorrow, Fri 27 Nov", "was on Tue 24 Nov".
            text=said_from_now("\n\n".join(parts), now, zone),
            intent=_main_intent(intents),
            action_name=_action(reading.loops, jobs),
            job_refs=jobs,
        )

    def _reminder(self, label: str, due_at: datetime, repeat: Repeat | None = None) -> JobRef:
        return JobRef(
            job_id=self._job_ids(),
            kind="reminder",
            label=label or "reminder",
            due_at=due_at,
            repeat=repeat,
        )


def _question(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> tuple[str, str] | None:
    for intent, answer in _QUESTIONS:
        said = answer(packet, reading, jobs)
        if said is not None:
            return intent, said
    return None


def _unanswered(
    packet: ConversationContextPacket,
    message: InboundMessage,
    reading: Reading,
    clauses: Sequence[Clause],
) -> tuple[str, str]:
    """Answer a message no rule acted on: small talk, a group's move, a question kept open,
    or, honestly and briefly, "I didn't understand" (then the turn changes no state)."""
    talk = smalltalk(packet, reading)
    if talk is not None:
        return talk
    if message.chat_type in GROUP_CHAT_TYPES and is_deliberation_move(message.text, clauses):
        return "deliberation", "Noted for the group. Ask “what did we decide?” to see where we are."
    # "remind me what I said about the budget" asks, without its question mark.
    made_direct = reading.text.endswith("?") and not (message.text or "").rstrip().endswith("?")
    if made_direct or any(clause.question for clause in clauses):
        personal = message.chat_type in PERSONAL_CHAT_TYPES
        asker = member(message.speaker, message.user_id)
        asked = reading.text if made_direct else message.text
        recalled = answer_from_memory(packet, asked, reading.now, personal=personal, asker=asker)
        if recalled is not None:
            return "recall", recalled
    kept = kept_open(packet, message, reading, clauses)
    if kept is not None:
        return "kept_open", kept
    return "unknown", UNKNOWN


def _main_intent(intents: Sequence[str]) -> str:
    # A reply is marked as help or an error (not understood, never summarised) only when all of
    # it is: if any rule acted, the message was understood and the turn is named after that.
    understood = [i for i in intents if i not in HELP_OR_ERROR_INTENTS]
    if not understood:
        return intents[0]
    if "reminder_unreadable" in intents:
        # The offline reply carries the reminder's error: a model must not answer it instead
        # (set_reminder is delegated to the offline rules).
        understood.append("set_reminder")
    # Side effects first (a reply that changes the state is named after the change), then the
    # question answered, then the facts acknowledged.
    ranked = sorted(understood, key=lambda i: (*_SIDE_EFFECTS, i).index(i))
    questions = [i for i in ranked if i != "state_fact"]
    return questions[0] if questions else ranked[0]


def _action(loops: LoopUpdate, jobs: Sequence[JobRef]) -> str | None:
    # The action names what changed: nothing changes when a to-do was already on the list.
    if any(job.status == "scheduled" for job in jobs):
        return "schedule_reminder"
    if jobs:
        return "cancel_reminder"
    if loops.closed:
        return "close_todo"
    return "add_todo" if loops.opened else None
