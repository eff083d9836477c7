"""The base of every value object of the lane's contracts: frozen, no unknown fields.

A new value is made with ``model_copy(update=...)``; a field nobody declared is an error, not
a silent extra. Covered by the contract models' tests (``tests/test_conversation_memory.py``,
``tests/test_conversation_checkpoint.py``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Value"]


class Value(BaseModel):
    """A frozen pydantic model that forbids unknown fields (the lane's value objects)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
