"""What the bot could not write while the database refused writes, kept until it can.

When the disk under the database is full, read-only or failing (or another process holds the
write lock past the timeout), writes fail with :data:`REFUSALS`. Nothing committed is lost, and
the bot neither drops a message nor confirms it as handled:

* an update whose turn could not be committed stays ``pending`` in the inbound journal and is
  *held* here; :meth:`StorageBacklog.retry` processes it again once writes commit (its user got
  one apology meanwhile: :meth:`StorageBacklog.first_apology`);
* a bookkeeping write that failed *after* its effect (a reply sent but not recorded as
  delivered, an update processed but not marked done) is *deferred* here and written by
  ``retry``, so that the effect is not repeated (no second reply);
* an update the journal could not store at all is not confirmed to Telegram, which keeps it
  (the poller fetches it again): it only gets its apology.

A maintenance job calls ``retry`` periodically. The database logs the first refused write and
the first commit after them; what is held here is logged at debug level only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable

from agent.chat.inbound_journal import InboundJournal, JournalEntry
from agent.errors import DatabaseLocked, DatabaseUnwritable

__all__ = ["APOLOGY", "REFUSALS", "StorageBacklog"]

logger = logging.getLogger(__name__)

#: The errors of a database that refuses writes for a while: the write was not at fault.
REFUSALS = (DatabaseUnwritable, DatabaseLocked)
#: What a user whose message cannot be recorded is told (once per message).
APOLOGY = (
    "Sorry, I can't save messages right now (a storage problem on my side), so I can't "
    "answer yet. I'll answer this one as soon as I can."
)


class StorageBacklog:
    """Held updates and deferred writes, retried once the database accepts writes again.

    Args:
        journal: the inbound journal (held updates are re-read from it, still pending).
        submit: queues a journal entry for processing, behind its chat's other work.
    """

    def __init__(self, journal: InboundJournal, submit: Callable[[JournalEntry], None]) -> None:
        self._journal = journal
        self._submit = submit
        self._held: set[int] = set()
        self._deferred: dict[Hashable, Callable[[], Awaitable[object]]] = {}
        self._apologised: set[int] = set()

    def __len__(self) -> int:
        """How many updates are held and writes deferred."""
        return len(self._held) + len(self._deferred)

    def hold(self, update_id: int) -> None:
        """Keep an update (journaled, still pending) to process again in :meth:`retry`."""
        self._held.add(update_id)

    def defer(self, key: Hashable, write: Callable[[], Awaitable[object]]) -> None:
        """Run ``write`` in :meth:`retry` (once; a later deferral under ``key`` replaces it)."""
        self._deferred[key] = write

    def is_deferred(self, key: Hashable) -> bool:
        """Whether a write is deferred under ``key``."""
        return key in self._deferred

    def first_apology(self, update_id: int) -> bool:
        """Return ``True`` the first time it is asked about an update, ``False`` until
        :meth:`handled` says the update was handled."""
        if update_id in self._apologised:
            return False
        self._apologised.add(update_id)
        return True

    def handled(self, update_id: int) -> None:
        """Forget an update that was handled at last."""
        self._apologised.discard(update_id)

    async def retry(self) -> None:
        """Run the deferred writes, then queue the held updates again; a maintenance job.

        Stops at the first write the database still refuses (a held update that it refuses
        again is held again).
        """
        for key, write in list(self._deferred.items()):
            try:
                await write()
            except REFUSALS as exc:
                logger.debug("the database still refuses writes (%s); %d waiting", exc, len(self))
                return
            del self._deferred[key]
        if self._held:
            pending = {entry.update_id: entry for entry in await self._journal.pending()}
            held, self._held = self._held, set()
            # One that is no longer pending was handled meanwhile (e.g. after a restart).
            for update_id in sorted(held & pending.keys()):
                self._submit(pending[update_id])
            logger.debug("processing %d held updates again", len(held & pending.keys()))
