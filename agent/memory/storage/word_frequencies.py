"""How many turns each query word occurs in, remembered between packets.

Retrieval leaves out of its searches the words found in more than a cap of turns (see
:meth:`agent.memory.conversation_retriever.ConversationRetriever.retrieve`): FTS5's bm25()
reads the whole posting list of every word it ranks by, so ranking by a common word costs more
and more as the history grows. Counting a word costs as much (its posting list, up to the
cap), and a chat's messages keep using the same words: counted on every packet, the counts
were the costliest statement of a packet at 100,000 turns (``bench/lane_cost.py``). So the
counts are kept, with the turn log's high-water mark at counting time, and a word is counted
again only when the turns written since could have changed what the count decides:

* a word in more than ``cap`` turns stays common; it is counted again once ``cap`` more turns
  were written (an erasure by another process may have made it rare again);
* a word in ``n <= cap`` turns (none included) stays searchable while ``n`` plus the turns
  written since is within ``cap``. A count of 0 may be 1 by now: the retriever searches for
  such a word anyway (it costs nothing), so a word first said after it was asked about is
  found without counting it again after every turn.

An erasure in this process (``/forget``, prune) forgets every count (:meth:`forget`): counts
only grow otherwise. The high-water mark comes with every count, so the mark of the previous
packet tells which words need counting in the same statement; the few whose margin the turns
written meanwhile used up are counted in a second one.
"""

from __future__ import annotations

from collections import OrderedDict

from agent.db import Snapshot
from agent.memory.conversation_store import ConversationStore

__all__ = ["WordFrequencies"]

#: Words whose counts are kept (the least recently used go first): ~100 bytes each.
DEFAULT_WORDS = 20_000


class WordFrequencies:
    """The number of turns (of every chat) each word occurs in, up to ``cap + 1``.

    Args:
        store: counts the words (:meth:`ConversationStore.word_counts`).
        cap: the count that decides (a word in more turns is common).
        size: how many words' counts are kept.
    """

    def __init__(self, store: ConversationStore, *, cap: int, size: int = DEFAULT_WORDS) -> None:
        if cap < 0 or size < 1:
            raise ValueError("need cap >= 0 and size >= 1")
        self._store = store
        self._cap = cap
        self._size = size
        self._known: OrderedDict[str, tuple[int, int]] = OrderedDict()  # word -> (count, mark)
        self._mark = 0  # the high-water mark of the last count

    def counts(self, conn: Snapshot, words: list[str]) -> dict[str, int]:
        """Return each word's count, as good as a fresh one for telling apart words in at
        most ``cap`` turns and in more (see the module docstring).

        Runs in the database's searcher thread (``conn``); :meth:`forget` may run meanwhile,
        in the event loop's: this call keeps to the counts it started with.
        """
        if not words:
            return {}
        known = self._known
        for word in words:  # used now: the last to make room for others
            if word in known:
                known.move_to_end(word)
        ask = [word for word in words if self._stale(known.get(word), self._mark)]
        high_water = self._count(conn, known, ask)
        again = [word for word in words if word not in ask and self._stale(known[word], high_water)]
        if again:
            self._count(conn, known, again)
        found = {word: known[word][0] for word in words}
        while len(known) > self._size:
            known.popitem(last=False)
        return found

    def forget(self) -> None:
        """Forget every count (turns were erased: counts may have gone down)."""
        self._known = OrderedDict()  # a new one: a count under way fills the old one

    def _stale(self, known: tuple[int, int] | None, mark: int) -> bool:
        if known is None:
            return True
        count, counted_at = known
        since = mark - counted_at
        if since < 0:  # turns were erased elsewhere and the marks went back
            return True
        if count > self._cap:
            return since > self._cap
        return count + since > self._cap

    def _count(
        self, conn: Snapshot, known: OrderedDict[str, tuple[int, int]], words: list[str]
    ) -> int:
        result = self._store.word_counts(conn, words, cap=self._cap)
        self._mark = result.high_water
        for word, count in result.counts.items():
            known[word] = (count, result.high_water)
            known.move_to_end(word)
        return result.high_water
