"""What the cost benchmarks feed the lane: LoCoMo's utterances, or a few stand-ins without it.

The data is read from ``../shared/data/`` (CC BY-NC 4.0; never copied into the repository).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

#: The LoCoMo conversations, beside the repository.
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
#: The clock the benchmarks' bulk-inserted histories start at.
T0 = datetime(2024, 1, 1, tzinfo=UTC)
#: Messages used when the data file is missing.
FALLBACK_TEXTS = [
    "I went hiking in the mountains last weekend with my sister.",
    "We are planning a trip to Lisbon in May, the hotel is booked.",
    "My painting class starts next Tuesday, I can't wait.",
    "The kids loved the museum, especially the dinosaur room.",
    "Work has been busy, the new project launches next month.",
]


def utterances(path: Path = DATA) -> list[str]:
    """Every utterance of the LoCoMo file at ``path``, in order; the stand-ins without it."""
    if not path.exists():
        # Said every time: figures measured on five sentences are not LoCoMo's.
        print(
            f"bench: no LoCoMo file at {path}; feeding {len(FALLBACK_TEXTS)} stand-in sentences"
            " (pass --data)",
            file=sys.stderr,
        )
        return FALLBACK_TEXTS
    texts: list[str] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        for key, value in sample["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                texts.extend(str(u.get("text", "")) for u in value if u.get("text"))
    return texts or FALLBACK_TEXTS
