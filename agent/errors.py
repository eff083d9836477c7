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
    ├── ReplyEngineError       the reply engine (concierge) failed to answer
    └── SummarizerError        the optional model summarizer failed to summarise

Lookups that may miss return ``None``; operations on something that must exist raise.
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
    "MigrationError",
    "ReplyEngineError",
    "SessionNotFound",
    "StorageError",
    "SummarizerError",
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


class ReplyEngineError(AgentError):
    """The reply engine failed to produce an answer."""


class SummarizerError(AgentError):
    """The optional model summarizer failed; the extractive summary stays in use."""
