"""Token estimates: the one rule every budget in the package uses."""

from __future__ import annotations

__all__ = ["CHARS_PER_TOKEN", "estimate_tokens"]

#: The usual rule of thumb for English text with GPT-style tokenisers.
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str | None) -> int:
    """Estimate the tokens of ``text``: one per four characters, rounded up."""
    if not text:
        return 0
    return -(-len(text) // CHARS_PER_TOKEN)
