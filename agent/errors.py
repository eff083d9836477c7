"""The exceptions this package raises, translated at its boundaries.

::

    AgentError
    ├── ConfigError            a setting is missing or malformed
    ├── StorageError           the database refused or failed an operation
    │   ├── DatabaseLocked     another process held the write lock past the timeout
    │   ├── DatabaseUnwritable the disk is full or read-only, or failed: nothing could commit
    │   └── MigrationError     a schema migration failed; nothing of it was applied
    ├── CheckpointError        a checkpoint file could not be written or read
    │   └── CheckpointCorrupt  a checkpoint file exists but is not a valid snapshot
    ├── SessionNotFound        a session that must exist does not
    ├── ArchiveError           a session export cannot be read or imported
    ├── DeliveryError          an outbox did not send a message
    │   ├── DeliveryFailed     not sent for now (network, server, the bot stopping): resend later
    │   └── DeliveryRefused    refused for good (the user blocked the bot, the chat is gone)
    ├── UnreadableUpdate       a journaled update's payload cannot be read back
    ├── ReplyEngineError       the reply engine (concierge) failed to answer
    └── SummarizerError        the optional model summarizer failed to summarise

Lookups that may miss return ``None``; operations on something that must exist raise.

Covered by the tests that expect each (``tests/test_config.py``, ``tests/test_disk_faults.py``,
``tests/test_chat_service.py``...).
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "ArchiveError",
    "CheckpointCorrupt",
    "CheckpointError",
    "ConfigError",
    "DatabaseLocked",
    "DatabaseUnwritable",
    "DeliveryError",
    "DeliveryFailed",
    "DeliveryRefused",
    "MigrationError",
    "ReplyEngineError",
    "SessionNotFound",
    "StorageError",
    "SummarizerError",
    "UnreadableUpdate",
]


class AgentError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(AgentError):
    """A setting is missing or malformed; the message names the variable to set."""


class StorageError(AgentError):
    """The database refused or failed an operation."""


class DatabaseLocked(StorageError):
    """Another process held the database write lock for longer than the lock timeout."""


class DatabaseUnwritable(StorageError):
    """The database refused a write: its disk is full or read-only, or reported an I/O error.

    Not the fault of the write: the same write may succeed once the disk recovers.
    """


class MigrationError(StorageError):
    """A schema migration failed and was rolled back."""


class CheckpointError(AgentError):
    """A checkpoint file could not be written or read."""


class CheckpointCorrupt(CheckpointError):
    """A checkpoint file exists but does not hold a valid snapshot of the expected version."""


class SessionNotFound(AgentError):
    """A session id that must exist is not in the database."""


class ArchiveError(AgentError):
    """A session export file is malformed, or does not fit the database it is imported into."""


class DeliveryError(AgentError):
    """An outbox (:class:`~agent.chat.outbox.Outbox`) did not send a message.

    Attributes:
        reason: why, for the log and the turn log (e.g. ``"Forbidden: bot was blocked"``).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DeliveryFailed(DeliveryError):
    """Not sent for now (the network, a server error, the bot stopping); sending it again later
    may work, so a turn's reply stays due."""


class DeliveryRefused(DeliveryError):
    """Refused for good (the user blocked the bot, the chat is gone); sending it again cannot
    work, so a turn's reply is never resent."""


class UnreadableUpdate(AgentError):
    """A journaled update's payload cannot be read back into an update; it is not retried
    differently, only counted as a failed attempt."""


class ReplyEngineError(AgentError):
    """The reply engine failed to produce an answer."""


class SummarizerError(AgentError):
    """The optional model summarizer failed; the extractive summary stays in use."""
