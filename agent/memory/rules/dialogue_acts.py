"""Reading what a turn *does* beyond to-dos: commitments, requests, questions, clarifications.

The rules the state manager uses to open the open loops that are not to-dos (those are
:mod:`agent.memory.rules.extraction`'s) and to notice that the bot asked the user something:

- a commitment: "I'll send you the report", "I promise to call Bob", "let me check the times";
- a request: "can you check the train times?", "Bob, could you book the room?";
- a question: a user question of at least two content words (the state manager opens a loop
  for it only when the bot's reply did not answer it);
- a clarification: the bot's reply ends with a question ("Which hotel do you mean?"), or its
  intent says it asks one (:data:`CLARIFY_INTENTS`);
- a dismissal: "never mind", "forget it" (the user drops their last question or request).

And the reply intents that mark a turn: not understood (:data:`NOT_UNDERSTOOD_INTENTS`), help
or error texts (:data:`HELP_OR_ERROR_INTENTS`), questions kept open (:data:`KEPT_OPEN_INTENTS`).

All pure functions of their arguments, with patterns compiled once and anchored to a clause's
start, so a 4096-character message is read in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from agent.memory.rules.duties import RESOLUTION
from agent.memory.rules.extraction import Clause, clean_value, content_stems, normalize_text
from agent.utils.text import QUESTION_WORDS

__all__ = [
    "CLARIFY_INTENTS",
    "HELP_OR_ERROR_INTENTS",
    "KEPT_OPEN_INTENTS",
    "MEMORY_ERASURE_INTENTS",
    "NOT_UNDERSTOOD_INTENTS",
    "UNRETRIEVED_REPLY_INTENTS",
    "DialogueActs",
    "bot_question",
    "is_dismissal",
    "is_help_or_error",
    "question_stems",
    "read_acts",
]

#: Reply intents that mean "the bot asked the user to clarify", whatever the text ends with.
CLARIFY_INTENTS = frozenset(
    {"clarify", "clarification", "ask_clarification", "need_clarification", "needs_clarification"}
)
#: Reply intents that say the engine did not understand the message ("Sorry, I didn't
#: understand", "I couldn't read the time of that reminder", "I can only read text"): nothing
#: of the message acted, so its turn changes no state (the rule is read from the turn's
#: recorded intent, so the fold of the log agrees: I6).
NOT_UNDERSTOOD_INTENTS = frozenset({"unknown", "reminder_unreadable"})
#: Reply intents whose text is help or an error message, not conversation: such a reply is
#: never retrieved, summarised or promoted.
HELP_OR_ERROR_INTENTS = NOT_UNDERSTOOD_INTENTS | {"help"}
#: Reply intents of a request to forget a long-term memory ("forget that my sister lives in
#: Porto"): the request acts on long-term memory only, so its turn moves no session state, and
#: neither its words nor its reply (which names what was erased) are ever retrieved,
#: summarised or promoted.
MEMORY_ERASURE_INTENTS = frozenset({"forget_memory"})
#: Reply intents whose reply is never retrieved or summarised: help and error texts, and the
#: replies to erasure requests.
UNRETRIEVED_REPLY_INTENTS = HELP_OR_ERROR_INTENTS | MEMORY_ERASURE_INTENTS
#: Reply intents that say the bot could not answer the message's questions or do its requests
#: and keeps them open (the state opens a ``question`` or ``request`` loop for each).
KEPT_OPEN_INTENTS = frozenset({"kept_open"})
_F = re.IGNORECASE
_QUESTION_CHARS = 200

_COMMITMENT = re.compile(
    r"^(?:i(?:'ll|\s+will|\s+shall)(?:\s+(?:definitely|also|just|still|then|first|try\s+to))?"
    r"|i\s+(?:promise|commit|undertake)\s+to)\s+(?P<v>.+)",
    _F,
)
_LET_ME = re.compile(
    r"^let\s+me\s+(?P<v>(?:check|look|find|ask|confirm|verify|send|see|get\s+back|find\s+out)"
    r"\b.+)",
    _F,
)
# "I'll be late", "I'll think about it": a state or a maybe, not a promise.
_NOT_COMMITTED = re.compile(
    r"(?:be|never|not|probably|maybe|perhaps|think|see|remember|need|have|let\s+you\s+know\s+if"
    r"|take\s+(?:it|that)|pass)\b",
    _F,
)
_REQUEST = re.compile(
    r"^(?:[^\W\d_][\w'-]{0,30},\s*)?(?:can|could|would|will)\s+"
    r"(?:you|someone|somebody|anyone|anybody)(?:\s+please)?\s+(?P<v>.+)",
    _F,
)
# Requests the reminder and to-do rules already read, or that only ask for talk.
_NOT_A_REQUEST = re.compile(r"(?:remind\s+me|set\s+(?:a|an)\s+reminder|help\b|repeat\b)", _F)
# Asks for talk, not for something done: "could you tell me more about the trip?" (a question,
# if anything: kept open as one when the bot could not answer).
_TALK = re.compile(
    r"tell\s+(?:me|us)\s+(?:a\s+(?:bit|little)\s+)?(?:more\b|about\b|what\b|how\b|why\b)", _F
)
# A figure of speech or an offer, neither a request nor a question to keep: "can you believe
# it?", "would you like me to send it?".
_FIGURE = re.compile(
    r"^(?:[^\W\d_][\w'-]{0,30},\s*)?(?:can|could|would|will|do|did)\s+(?:you|ya)\s+(?:(?:even\s+)?"
    r"(?:believe|imagine)\s+(?:it|this|that|what|how)\b|(?:want|like)\s+(?:me|us)\s+to\b)",
    _F,
)
_DISMISSAL = re.compile(
    r"^(?:never\s*mind|nvm|forget\s+(?:it|that|about\s+it)|scratch\s+that|ignore\s+that"
    r"|doesn't\s+matter|no\s+matter)\b",
    _F,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# A question that invites talk rather than waits for a particular answer.
_INVITATION = re.compile(
    r"^(?:so,?\s*)?(?:what (?:else )?can i (?:do|help)|how (?:else )?can i help|(?:is there )?"
    r"anything else|how are you|how(?:'s| is) it going|what(?:'s| is) up|what would you like"
    r"|what(?:'s| is) on your mind|shall we (?:start|begin))\b",
    _F,
)


@dataclass(frozen=True, slots=True)
class DialogueActs:
    """What the clauses of one message open, besides to-dos.

    Attributes:
        commitments: what the speaker promised to do ("send you the report").
        requests: what they asked someone to do ("check the train times").
        questions: their questions about something ("when does the train leave?").
    """

    commitments: tuple[str, ...] = ()
    requests: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()


@lru_cache(maxsize=4096)
def question_stems(text: str) -> frozenset[str]:
    """Return the content-word stems of ``text`` without question words (what it is about).

    Cached (a pure function of the text): the open loops' texts are read again every turn.
    """
    # Single letters are the tails of contractions ("what's" -> "what", "s").
    return frozenset(w for w in content_stems(text) if len(w) > 1) - QUESTION_WORDS


def _value(raw: str) -> str:
    value = clean_value(raw)
    for head in ("to ", "that "):
        if value.lower().startswith(head):
            value = value[len(head) :]
    return value


def read_acts(clauses: Sequence[Clause]) -> DialogueActs:
    """Return the commitments, requests and questions of a message, each at most once.

    Args:
        clauses: the message cut by :func:`agent.memory.rules.extraction.split_clauses`.
    """
    commitments: list[str] = []
    requests: list[str] = []
    questions: list[str] = []
    for clause in clauses:
        text = clause.text
        if _FIGURE.match(text):
            continue
        request = _REQUEST.match(text)
        wanted = "" if request is None else _value(request.group("v"))
        if request is not None and not _TALK.match(wanted):
            if wanted and not _NOT_A_REQUEST.match(wanted) and wanted not in requests:
                requests.append(wanted)
            continue
        if clause.question:
            if len(question_stems(text)) >= 2:
                asked = clean_value(text, _QUESTION_CHARS - 1) + "?"
                if asked not in questions:
                    questions.append(asked)
            continue
        promise = _COMMITMENT.match(text) or _LET_ME.match(text)
        if promise is None:
            continue
        value = _value(promise.group("v"))
        said = _NOT_COMMITTED.match(value) or RESOLUTION.match(value)  # "I'll keep going"
        if value and not said and value not in commitments:
            commitments.append(value)
    return DialogueActs(tuple(commitments), tuple(requests), tuple(questions))


def is_help_or_error(intent: str | None) -> bool:
    """Tell whether a reply with ``intent`` is help or an error text (never retrieved,
    summarised or promoted): :data:`HELP_OR_ERROR_INTENTS`."""
    return intent in HELP_OR_ERROR_INTENTS


def is_dismissal(text: str) -> bool:
    """Tell whether the user drops what they asked: "never mind", "forget it", "nvm"."""
    return _DISMISSAL.match(normalize_text(text)) is not None


def bot_question(assistant_text: str | None, intent: str | None, user_text: str) -> str | None:
    """Return the question the bot's reply asks the user to answer, or ``None``.

    The reply asks when its last sentence ends with a question mark, or when ``intent`` is one
    of :data:`CLARIFY_INTENTS` (then the last sentence with a question mark, or the reply).
    Invitations ("What can I do for you?") and echoes of the user's own question ask nothing.
    A turn without a user message (the bot speaking on its own, e.g. a reminder firing) asks
    nothing either.

    Args:
        assistant_text: the bot's reply.
        intent: the reply's intent.
        user_text: the message the bot answered.
    """
    if not assistant_text or not user_text.strip():
        return None
    sentences = [s for s in _SENTENCE.split(normalize_text(assistant_text)) if s]
    if not sentences:
        return None
    clarify = intent in CLARIFY_INTENTS
    last = sentences[-1].rstrip(" \"')]*_")
    asked = last if last.endswith("?") else None
    if asked is None and clarify:
        asked = next((s for s in reversed(sentences) if s.rstrip().endswith("?")), sentences[-1])
    if asked is None:
        return None
    if not clarify and _INVITATION.match(asked):
        return None
    said = normalize_text(user_text).casefold()
    if said.endswith("?") and said in asked.casefold():
        return None  # the reply repeats the user's own question ("echo: still there?")
    if len(asked) > _QUESTION_CHARS:
        asked = asked[: _QUESTION_CHARS - 1].rstrip() + "…"
    return asked
