"""Erase a conversation everywhere: ``/forget`` in any chat and ``agent-memory forget``.

:meth:`ChatService.forget_everywhere <agent.chat.service.ChatService.forget_everywhere>` calls
it with the database the application wired. Tested by ``tests/test_conversation_memory.py``
(journal entries of every bot), ``tests/test_chat_service.py`` and the ``/forget`` tests of
``tests/test_telegram_bot.py`` and ``tests/test_cli.py``.
"""

from __future__ import annotations

from agent.chat.inbound_journal import InboundJournal
from agent.chat.job_table import JobTable
from agent.db import AnyDatabase
from agent.memory import ConversationLane

__all__ = ["forget_everywhere"]


async def forget_everywhere(lane: ConversationLane, db: AnyDatabase, session_id: str) -> int | None:
    """Erase a conversation and what the bot received of it.

    When it is its chat's open conversation, the chat's inbound journal entries go first (of
    every bot: their payloads hold the same text; the entry of the request itself and messages
    not yet tried stay, see :meth:`InboundJournal.forget_chat`), and so do its rows of the jobs
    table (the reminders' labels: they never fire); then the session, as
    :meth:`ConversationLane.forget_session` erases it, which ends by emptying the write-ahead
    log of both.

    Returns:
        How many journal entries were erased, or ``None`` if there is no such session.
    """
    session = await lane.inspector.session(session_id)
    if session is None:
        return None
    entries = 0
    if session.closed_at is None:
        for bot_id in await InboundJournal.bots_of_chat(db, session.chat_id):
            entries += await InboundJournal(db, bot_id).forget_chat(session.chat_id)
        await JobTable(db, "erasure").forget_chat(session.chat_id)
    await lane.forget_session(session_id)
    return entries
