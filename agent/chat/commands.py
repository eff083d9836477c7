"""The bot's slash commands, independent of the transport (Telegram or the terminal).

Commands are control messages, not conversation: they read or manage the memory but are not
turns of it (a ``/history`` is not something to summarise). Each returns a
:class:`CommandReply`; the Telegram adapter and the console render it their own way.

Covered by ``tests/test_telegram_sessions.py``, ``tests/test_console_sessions.py``,
``tests/test_memory_commands.py``, ``tests/test_chat_service.py`` (each command as sent).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime

from agent.chat.erasure import forget_everywhere
from agent.chat.time_zone_command import TIMEZONE_HELP, time_zone_command
from agent.db import AnyDatabase
from agent.errors import SessionNotFound
from agent.memory import (
    ChatSession,
    ConversationLane,
    ConversationTurn,
    JobRef,
    Memory,
    OpenLoop,
    RetrievedItem,
    SessionSwitch,
    describe_memory,
    render_packet,
)
from agent.memory.longterm.memory_slots import in_second_person
from agent.memory.packet_lines import fact_line
from agent.memory.rules.recurrence import say_repeat

__all__ = ["COMMANDS", "CommandCenter", "CommandReply"]

#: Every command with its one-line description (sent to Telegram with setMyCommands).
COMMANDS: dict[str, str] = {
    "start": "Say hello and see what I can do",
    "help": "What I can do and the commands",
    "memory": "The context I would answer your next message with",
    "history": "The last messages of this conversation: /history 10",
    "topics": "Topics and facts I keep for this conversation",
    "loops": "Open to-dos, pending questions and reminders",
    "recall": "Search this conversation: /recall hotel",
    "facts": "What I remember about you: /facts all, /facts forget 2, /facts confirm 2",
    "remember": "Keep a note for good: /remember my passport number ends in 42",
    "new": "Start a fresh conversation (what you told me about yourself stays)",
    "sessions": "This chat's conversations, numbered",
    "resume": "Go back to an earlier conversation: /resume 2",
    "clear": "Take this conversation's history out of my context (kept on file)",
    "save": "When this conversation was last saved",
    "forget": "Erase this conversation everywhere (asks first)",
    "export": "Send this conversation's checkpoint file",
    "stats": "Numbers about this conversation",
    "timezone": TIMEZONE_HELP,
}

_HISTORY_DEFAULT = 10
_SESSIONS_SHOWN = 20
_FIRST_WORDS = 60
_HISTORY_MAX = 50
_RECALL_HITS = 5
_EXCERPT = 200

_HELP = (
    "I'm a bot with a memory that survives restarts and crashes. Talk to me and try:\n"
    '- tell me things: "my name is Ada", "I\'m planning a trip to Lisbon in May"\n'
    '- ask: "what\'s my name?", "what do you know about me?", "what did we talk about?"\n'
    '- to-dos: "remind me to book the hotel", later "I booked the hotel"\n'
    '- reminders: "remind me in 10 minutes to call mom"\n'
    '- forget one thing: "forget that my sister lives in Porto", or /facts forget 2\n\nCommands:\n'
    + "\n".join(f"/{name} - {text}" for name, text in COMMANDS.items())
)


@dataclass(frozen=True, slots=True)
class CommandReply:
    """What a command answers.

    Attributes:
        text: the message to show.
        document: ``(file name, bytes)`` to send as a file, if any.
        confirm_forget: the session id the user must confirm erasing (the adapter shows a
            button; the console asks for ``/forget yes``).
    """

    text: str
    document: tuple[str, bytes] | None = None
    confirm_forget: str | None = None


def _count(text: str) -> int | None:
    """Return the count ``text`` spells in the decimal digits of any script, else ``None``.

    Past six significant digits it is only "very many": ``int()`` refuses strings of more than
    4,300 digits, and no count that large means anything different here.
    """
    if not text.isdecimal():
        return None
    digits = "".join(str(unicodedata.decimal(char)) for char in text).lstrip("0")
    return int(digits or "0") if len(digits) <= 6 else 10**6


def _excerpt(text: str | None) -> str:
    flat = re.sub(r"\s+", " ", text or "").strip()
    return flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 1] + "…"


def _turn_lines(turn: ConversationTurn) -> list[str]:
    lines = []
    if turn.user_text:
        lines.append(f"#{turn.seq} {turn.speaker or 'you'}: {_excerpt(turn.user_text)}")
    if turn.assistant_text:
        lines.append(f"#{turn.seq} bot: {_excerpt(turn.assistant_text)}")
    return lines


_LOOP_LABELS = {"commitment": "promised", "request": "asked for", "question": "unanswered"}


def _loop_line(loop: OpenLoop) -> str:
    return f"- {_LOOP_LABELS.get(loop.kind, 'to do')}: {in_second_person(loop.text)}"


def _job_line(job: JobRef) -> str:
    due = f" at {job.due_at:%Y-%m-%d %H:%M} UTC" if job.due_at else ""
    if job.repeat is not None:  # "- reminder: take your pills, every day at 08:00 (next at ...)"
        due = f", {say_repeat(job.repeat)} (next{due})"
    return f"- reminder: {in_second_person(job.label) if job.label else job.job_id}{due}"


def _time(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def _carried(switch: SessionSwitch) -> str:
    lines = [_loop_line(lp) for lp in switch.loops] + [_job_line(job) for job in switch.jobs]
    if not lines:
        return ""
    return "\nCarried over (still open, reminders still fire on time):\n" + "\n".join(lines)


def _plural(count: int, noun: str) -> str:
    return f"1 {noun}" if count == 1 else f"{count} {noun}s"


def _reminders(count: int) -> str:
    return _plural(count, "reminder")


def _session_line(entry: ChatSession) -> str:
    words = _excerpt(entry.first_words)
    if len(words) > _FIRST_WORDS:
        words = words[: _FIRST_WORDS - 1] + "…"
    mark = " (current)" if entry.current else ""
    return (
        f"{entry.number}.{mark} started {_time(entry.started)}, {_plural(entry.turns, 'turn')}, "
        f"last active {_time(entry.last_active)}" + (f': "{words}"' if words else "")
    )


def _recall_line(item: RetrievedItem) -> str:
    label = "remembered: " if item.kind == "memory" else ""
    lines = item.text.splitlines() or [""]
    text = " / ".join(_excerpt(line) for line in lines)
    return f"- {label}{text} [{item.score:.2f}]"


_FACTS_HINT = " Forget one with /facts forget N; /facts all shows earlier values too."
_FACTS_USAGE = (
    "Usage: /facts (what I remember about you), /facts all (with earlier values), "
    "/facts forget N, /facts confirm N (N from the /facts list)."
)
_KIND_TITLES = {
    "fact": "About you",
    "entity": "People and pets",
    "preference": "Likes and preferences",
    "goal": "Plans and goals",
    "decision": "Decisions",
    "constraint": "Constraints",
    "procedure": "Routines",
}


def _section(memory: Memory) -> str:
    return memory.kind if memory.about_user else "entity"


def _in_order(memories: list[Memory]) -> list[Memory]:
    """The current memories in the order ``/facts`` numbers them (N of ``/facts forget N``)."""
    order = list(_KIND_TITLES)
    current = [m for m in memories if m.valid_until is None]
    return sorted(current, key=lambda m: order.index(_section(m)))


def _facts_listing(memories: list[Memory], *, history: bool) -> str:
    current = _in_order(memories)
    if not current:
        return (
            "I don't remember anything about you yet. Tell me, e.g. “my name is Ada”, or keep a "
            "note with /remember."
        )
    lines: list[str] = []
    for number, memory in enumerate(current, start=1):
        section = _KIND_TITLES[_section(memory)]
        if number == 1 or section != _KIND_TITLES[_section(current[number - 2])]:
            lines.append(f"{section}:")
        unconfirmed = (
            f" (unconfirmed: /facts confirm {number})" if memory.status == "candidate" else ""
        )
        lines.append(f"{number}. {describe_memory(memory)}{unconfirmed}")
        if history:
            lines.extend(_earlier_lines(memory, memories))
    return "What I remember about you:\n" + "\n".join(lines) + "\n\n" + _FACTS_HINT.strip()


def _earlier_lines(memory: Memory, group: list[Memory]) -> list[str]:
    earlier = [m for m in group if m.key == memory.key and m.valid_until is not None]
    lines = []
    for old in sorted(earlier, key=lambda m: m.valid_from, reverse=True):
        until = old.valid_until or old.valid_from
        if until <= old.valid_from:
            lines.append(f"   was: {describe_memory(old)} (corrected)")
        else:
            span = f"{old.valid_from:%d %b %Y} to {until:%d %b %Y}"
            lines.append(f"   was: {describe_memory(old)} ({span})")
    return lines


def _erased(memories: list[Memory]) -> str:
    return "; ".join(describe_memory(m) for m in memories)


class CommandCenter:
    """Runs commands against the memory lane for one chat at a time.

    Args:
        lane: the hydrated memory lane (commands that change the memory go through it).
        db: the database of the inbound journal (``/forget`` erases the chat's entries).
    """

    def __init__(self, lane: ConversationLane, db: AnyDatabase) -> None:
        self.lane = lane
        self.inspector = lane.inspector  # what the commands read goes through it
        self._db = db

    async def run(self, chat_id: int, name: str, args: str = "") -> CommandReply:
        """Run ``/name args`` for ``chat_id``; an unknown name gets a helpful answer."""
        name = name.lower()
        if name not in COMMANDS:
            return CommandReply(f"I don't know /{name}. Try /help for the commands I know.")
        handler = getattr(self, f"_cmd_{name}")
        reply: CommandReply = await handler(chat_id, args.strip())
        return reply

    async def _cmd_start(self, chat_id: int, args: str) -> CommandReply:
        return CommandReply("Hello! " + _HELP)

    async def _cmd_help(self, chat_id: int, args: str) -> CommandReply:
        return CommandReply(_HELP)

    async def _cmd_memory(self, chat_id: int, args: str) -> CommandReply:
        # With retrieval, as a reply to the chat's last message would have it.
        packet = await self.inspector.context(chat_id)
        if packet is None:
            return CommandReply("I have no memory of this chat yet. Say something!")
        return CommandReply(
            f"{render_packet(packet)}\n\n(about {packet.token_estimate} tokens, "
            f"compiled {packet.context_compiled_at:%Y-%m-%d %H:%M:%S} UTC)"
        )

    async def _cmd_history(self, chat_id: int, args: str) -> CommandReply:
        count = _count(args) if args else _HISTORY_DEFAULT
        if count is None or count < 1:
            return CommandReply(
                f"Usage: /history [n] with n from 1 to {_HISTORY_MAX}, e.g. /history 10."
            )
        turns = await self.inspector.history(chat_id, min(count, _HISTORY_MAX))
        if not turns:
            return CommandReply("Nothing yet: this conversation has no messages.")
        lines = [line for turn in turns for line in _turn_lines(turn)]
        note = f" (at most {_HISTORY_MAX})" if count > _HISTORY_MAX else ""
        return CommandReply(f"The last {_plural(len(turns), 'turn')}{note}:\n" + "\n".join(lines))

    async def _cmd_topics(self, chat_id: int, args: str) -> CommandReply:
        packet = await self.inspector.packet(chat_id)
        remembered = [m for m in packet.memories if m.valid_until is None] if packet else []
        if packet is None or not (packet.active_topics or packet.facts or remembered):
            return CommandReply("No topics yet. Tell me about yourself or your plans.")
        lines = [f"- {topic.name}" for topic in packet.active_topics]
        lines += [fact_line(fact) for fact in packet.facts]  # "- Ada: location: Porto"
        lines += [f"- {describe_memory(memory)}" for memory in remembered]
        return CommandReply("What I keep for this conversation:\n" + "\n".join(lines))

    async def _cmd_loops(self, chat_id: int, args: str) -> CommandReply:
        packet = await self.inspector.packet(chat_id)
        if packet is None:
            return CommandReply("Nothing open.")
        lines = [_loop_line(lp) for lp in packet.open_loops]
        lines += [f"- waiting for your answer: {c.question}" for c in packet.pending_clarifications]
        lines += [_job_line(job) for job in packet.active_job_refs]
        if not lines:
            return CommandReply("Nothing open: no to-dos, questions or reminders.")
        return CommandReply("Still open:\n" + "\n".join(lines))

    async def _cmd_recall(self, chat_id: int, args: str) -> CommandReply:
        if not args:
            return CommandReply("Usage: /recall <words>, for example /recall hotel.")
        # The retriever that fills packets, so /recall shows what a reply could draw on.
        items = await self.inspector.recall(chat_id, args, _RECALL_HITS)
        if not items:
            return CommandReply(f"Nothing in this conversation matches {_excerpt(args)!r}.")
        lines = [_recall_line(item) for item in items]
        return CommandReply("Best matches (score 0-1):\n" + "\n".join(lines))

    async def _cmd_facts(self, chat_id: int, args: str) -> CommandReply:
        words = args.split()
        action = words[0].lower() if words else ""
        if action in {"", "all"} and len(words) <= 1:
            history = action == "all"
            memories = await self.inspector.facts(chat_id, history=history)
            return CommandReply(_facts_listing(memories, history=history))
        number = _count(words[1]) if len(words) == 2 else None
        if action not in {"forget", "confirm"} or number is None:
            return CommandReply(_FACTS_USAGE)
        current = _in_order(await self.inspector.facts(chat_id))
        if not 1 <= number <= len(current):
            return CommandReply(
                f"There is no fact number {number}: /facts lists {len(current)}." + _FACTS_HINT
            )
        memory = current[number - 1]
        if action == "confirm":
            confirmed = await self.lane.confirm_memory(chat_id, memory.memory_id)
            if confirmed is None:
                return CommandReply("That fact changed meanwhile; see /facts.")
            return CommandReply(f"Confirmed: {describe_memory(confirmed)}. I'll keep it for good.")
        erased = await self.lane.forget_memories(chat_id, [memory.memory_id])
        if not erased:
            return CommandReply("That fact is already gone; see /facts.")
        return CommandReply("Forgotten, with its history: " + _erased(erased) + ".")

    async def _cmd_remember(self, chat_id: int, args: str) -> CommandReply:
        if not args:
            return CommandReply(
                "Usage: /remember <text>, e.g. /remember my passport number ends in 42. "
                "I keep it word for word until you /facts forget it."
            )
        try:
            memory = await self.lane.remember(chat_id, args)
        except ValueError as exc:
            return CommandReply(f"I can't keep that note: {exc}.")
        return CommandReply(f"I'll remember: {memory.text}")

    async def _cmd_timezone(self, chat_id: int, args: str) -> CommandReply:
        return CommandReply(await time_zone_command(self.lane, chat_id, args))

    async def _cmd_new(self, chat_id: int, args: str) -> CommandReply:
        switch = await self.lane.new_session(chat_id)
        if switch is None:
            return CommandReply("This is already a fresh conversation.")
        return CommandReply(
            "Started a fresh conversation. The previous one is kept on file (/sessions lists it)."
            + _carried(switch)
        )

    async def _cmd_sessions(self, chat_id: int, args: str) -> CommandReply:
        sessions = await self.inspector.chat_sessions(chat_id)
        if not sessions:
            return CommandReply("No conversations yet. Say something!")
        shown = sessions[-_SESSIONS_SHOWN:]
        older = len(sessions) - len(shown)
        note = f"\n(and {older} older ones: /resume takes their numbers too)" if older else ""
        current = next((entry.number for entry in sessions if entry.current), None)
        hint = "" if current is None else f" You are in conversation {current}."
        return CommandReply(
            "This chat's conversations, oldest first (/resume N goes back to one)."
            + hint
            + "\n"
            + "\n".join(_session_line(entry) for entry in shown)
            + note
        )

    async def _cmd_resume(self, chat_id: int, args: str) -> CommandReply:
        number = _count(args) if args else None
        if number is None:
            return CommandReply(
                "Usage: /resume N, where N is a conversation's number in /sessions, e.g. /resume 1."
            )
        sessions = await self.inspector.chat_sessions(chat_id)
        entry = next((e for e in sessions if e.number == number), None)
        if entry is None:
            have = f"numbers 1 to {len(sessions)}" if sessions else "no conversations yet"
            return CommandReply(f"There is no conversation {number}: this chat has {have}.")
        if entry.current:
            return CommandReply(f"Conversation {number} is already the current one.")
        try:
            switch = await self.lane.resume_session(chat_id, entry.session_id)
        except SessionNotFound:
            return CommandReply(f"Conversation {number} is no longer on file; see /sessions.")
        return CommandReply(
            f"Back to conversation {number} (started {_time(entry.started)}, "
            f"{_plural(entry.turns, 'turn')}): it goes on where it stopped."
            + ("" if switch.closed is None else " The one you were in is kept on file.")
            + _carried(switch)
        )

    async def _cmd_clear(self, chat_id: int, args: str) -> CommandReply:
        if args:  # a stray word must not clear by accident
            return CommandReply(
                "Usage: /clear, with nothing after it: it takes this conversation's history "
                "out of my context (it stays on file)."
            )
        cleared = await self.lane.clear_session(chat_id)
        if cleared is None:
            return CommandReply("Nothing to clear: this chat has no conversation yet.")
        if cleared == 0:
            return CommandReply("Nothing to clear: nothing was said since the last /clear.")
        return CommandReply(
            f"Cleared {cleared} turns from my context: I go on from here without them. They stay "
            "on file (/recall searches them, /history shows them); your open to-dos, reminders "
            "and what you told me about yourself stay too."
        )

    async def _cmd_save(self, chat_id: int, args: str) -> CommandReply:
        report = await self.inspector.save_report(chat_id)
        if report is None:
            return CommandReply("Nothing to save yet: this chat has no open conversation.")
        commit = (
            "no message yet"
            if report.last_commit is None
            else f"{report.last_commit:%Y-%m-%d %H:%M:%S} UTC (turn {report.turns})"
        )
        checkpoint = (
            "not written (the disk refused it; it is written again as soon as it can be)"
            if report.checkpoint_written is None
            else f"{report.checkpoint_written:%Y-%m-%d %H:%M:%S} UTC ({report.session_id}.json)"
        )
        return CommandReply(
            "Everything is saved as it happens: each message is committed to the database "
            "before I answer, and the checkpoint file is written right after.\n"
            f"Last commit: {commit}\nLast checkpoint: {checkpoint}"
        )

    async def _cmd_forget(self, chat_id: int, args: str) -> CommandReply:
        sid = self.lane.session_id_for_chat(chat_id)
        if sid is None:
            return CommandReply("There is nothing to forget in this chat.")
        jobs = self.lane.chat_jobs(chat_id)
        cancels = (
            f" It also cancels {_reminders(len(jobs))}:\n" + "\n".join(map(_job_line, jobs))
            if jobs
            else ""
        )
        return CommandReply(
            "Erase this conversation everywhere (messages, summaries, checkpoint)? "
            "This cannot be undone." + cancels,
            confirm_forget=sid,
        )

    async def confirm_forget(self, chat_id: int, session_id: str) -> CommandReply:
        """Erase ``session_id`` if it is still the chat's conversation (the confirmed /forget).

        Its reminders go with it: they never fire (the reply lists them).
        """
        if self.lane.session_id_for_chat(chat_id) != session_id:
            return CommandReply("That conversation is no longer current; nothing was erased.")
        jobs = self.lane.chat_jobs(chat_id)
        await forget_everywhere(self.lane, self._db, session_id)
        cancelled = (
            f"\nCancelled {_reminders(len(jobs))}:\n" + "\n".join(map(_job_line, jobs))
            if jobs
            else ""
        )
        return CommandReply("Done: I have forgotten this conversation." + cancelled)

    async def _cmd_export(self, chat_id: int, args: str) -> CommandReply:
        sid = self.lane.session_id_for_chat(chat_id)
        if sid is None:
            return CommandReply("Nothing to export yet.")
        data = self.inspector.checkpoint_bytes(sid)
        return CommandReply("The checkpoint of this conversation:", document=(f"{sid}.json", data))

    async def _cmd_stats(self, chat_id: int, args: str) -> CommandReply:
        packet = await self.inspector.packet(chat_id)
        if packet is None:
            return CommandReply("No conversation yet.")
        # A group's facts are its session's; a person's, long-term memories (/facts).
        facts = len(packet.facts) + len(await self.inspector.facts(chat_id))
        return CommandReply(
            f"Turns: {packet.turn_count}\n"
            f"Open loops: {len(packet.open_loops)}\n"
            f"Reminders: {len(packet.active_job_refs)}\n"
            f"Facts: {facts}\n"
            f"Context packet: about {packet.token_estimate} tokens "
            f"(budget {self.inspector.token_budget})"
        )
