"""Token estimates: the one rule every budget in the package uses.

Covered by ``tests/test_conversation_context_builder.py``.
"""

from __future__ import annotations

__all__ = ["CHARS_PER_TOKEN", "estimate_tokens", "tokens_for_chars"]

#: The usual rule of thumb for English text with GPT-style tokenisers.
CHARS_PER_TOKEN = 4


def tokens_for_chars(chars: int) -> int:
    """Estimate the tokens of a text of ``chars`` characters: one per four, rounded up."""
    return -(-max(chars, 0) // CHARS_PER_TOKEN)


def estimate_tokens(text: str | None) -> int:
    """Estimate the tokens of ``text``: one per four characters, rounded up."""
    return tokens_for_chars(len(text)) if text else 0
