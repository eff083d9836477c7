"""The text of a rolling summary: segments of item lines, parsed, merged and shed.

A rolling summary is a list of segments, each a header (``[turns 8-17]``, or ``[digest of
turns 1-7]`` for the compressed older part) and its item lines (``#12 Ada [decision]: ...``).
:class:`~agent.memory.conversation_summarizer.ExtractiveSummarizer` folds turns into it with
these helpers. Covered by ``tests/test_conversation_summarizer.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agent.memory.schemas import SummaryItem, SummaryItemKind

__all__ = [
    "PRIORITY",
    "Segment",
    "absorb",
    "parse_summary",
    "render_item",
    "render_segments",
    "same_item",
    "shed",
]

_TAGS: dict[SummaryItemKind, str] = {
    "decision": " [decision]",
    "fact": " [fact]",
    "question": " [open question]",
    "key": "",
}
_KIND_OF_TAG = {tag.strip(" []"): kind for kind, tag in _TAGS.items() if tag}
_LINE = re.compile(
    r"^#(?P<seq>\d+) (?P<who>[^\n:\[\]]{1,80}?)(?: \[(?P<tag>decision|fact|open question)\])?:"
    r" (?P<text>.*)$"
)
_HEADER = re.compile(r"^\[(?P<digest>digest of )?turns (?P<first>\d+)-(?P<last>\d+)\]$")
# Which items a full summary sheds first: key sentences, then questions, facts, decisions.
_SHED_ORDER: tuple[SummaryItemKind, ...] = ("key", "question", "fact", "decision")
#: The order of a digest's items: decisions, facts, open questions, key sentences.
PRIORITY: tuple[SummaryItemKind, ...] = ("decision", "fact", "question", "key")


@dataclass(slots=True)
class Segment:
    """One delta of the rolling summary (or the digest of several), parsed or being built."""

    first: int
    last: int
    items: list[SummaryItem] = field(default_factory=list)
    digest: bool = False

    def render(self) -> str:
        head = f"[{'digest of ' if self.digest else ''}turns {self.first}-{self.last}]"
        return "\n".join([head, *(render_item(item) for item in self.items)])


def render_item(item: SummaryItem) -> str:
    """Return the summary line of ``item``: ``#12 Ada [decision]: ...``."""
    return f"#{item.seq} {item.who}{_TAGS[item.kind]}: {item.text}"


def parse_summary(summary: str) -> list[Segment]:
    """Read a rolling summary back into its segments (lines of older formats become keys)."""
    segments: list[Segment] = []
    for line in summary.splitlines():
        header = _HEADER.match(line)
        if header is not None:
            first, last = int(header["first"]), int(header["last"])
            segments.append(Segment(first, last, digest=header["digest"] is not None))
            continue
        match = _LINE.match(line)
        if match is None:
            continue  # not a summary line (a hand-edited state): nothing to keep
        seq = int(match["seq"])
        kind = _KIND_OF_TAG.get(match["tag"] or "", "key")
        if not segments:  # lines before any header: a summary of the older one-line format
            segments.append(Segment(seq, seq, digest=True))
        segment = segments[-1]
        segment.items.append(SummaryItem(seq=seq, kind=kind, who=match["who"], text=match["text"]))
        segment.first, segment.last = min(segment.first, seq), max(segment.last, seq)
    return segments


def render_segments(segments: Iterable[Segment]) -> str:
    """Return the text of a rolling summary made of ``segments``."""
    return "\n".join(segment.render() for segment in segments)


def _fact_slot(item: SummaryItem) -> str:
    # A restated fact replaces the earlier one ("location: Lisbon" after "location: Paris");
    # likes and dislikes are each their own fact.
    label, _, _ = item.text.partition(": ")
    return item.text if label in {"likes", "dislikes"} else label


def same_item(item: SummaryItem) -> str:
    """Return what makes two items the same statement (a fact: its slot; else its text)."""
    if item.kind == "fact":
        return "fact:" + _fact_slot(item)
    return f"{item.kind}:{item.text.casefold()}"


def absorb(digest: Segment, segment: Segment) -> None:
    """Compress ``segment`` into ``digest``: its decisions, facts and open questions, and of
    its key sentences only the best."""
    keys = [item for item in segment.items if item.kind == "key"][:1]  # in rank order
    kept = [item for item in segment.items if item.kind != "key"] + keys
    merged: dict[str, SummaryItem] = {}
    for n, item in enumerate([*digest.items, *kept]):
        if item.kind == "key":
            merged[f"#{n}"] = item  # every key sentence is its own
            continue
        merged.pop(same_item(item), None)  # the newest statement wins
        merged[same_item(item)] = item
    digest.items = sorted(merged.values(), key=lambda i: (PRIORITY.index(i.kind), i.seq))
    digest.first = min(digest.first, segment.first)
    digest.last = max(digest.last, segment.last)


def shed(
    segment: Segment, *, newest: bool, kinds: Sequence[SummaryItemKind] = _SHED_ORDER
) -> bool:
    """Drop the item a full summary misses least; return whether one was dropped."""
    for kind in kinds:
        positions = [n for n, item in enumerate(segment.items) if item.kind == kind]
        if positions:
            # The digest sheds its oldest; the newest delta its lowest-ranked key sentence.
            del segment.items[positions[-1] if newest and kind == "key" else positions[0]]
            return True
    return False
