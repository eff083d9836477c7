"""What the rule-based concierge answers of the user's likes: "do I like jazz?" and "what kind
of music do I like?", from what they said they like, dislike or love best.

A kind asked about (music, food, films, sports...) is matched by a like's words: the kind's own
word ("Italian food"), the food groups of :mod:`agent.memory.rules.food_groups` (sushi is
food), or the words of :data:`_KINDS` (jazz is music). A kind no like is of is not told ("You
haven't told me what music you like"), rather than every like.

Tested by the "likes and dislikes" family of ``tests/test_everyday_phrasings.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.engines.rule_facts import NOT_TOLD, answer_line, own_facts
from agent.engines.rule_reading import Reading
from agent.memory.longterm.memory_slots import USER, in_second_person, parse_key
from agent.memory.rules.extraction import content_stems
from agent.memory.rules.food_groups import food_groups
from agent.memory.schemas import ConversationContextPacket, JobRef

__all__ = ["answer_like", "answer_like_kind"]

_F = re.IGNORECASE

# "do I like jazz?", with the thing asked about.
_ASK_LIKE = re.compile(
    r"^(?:(?:do|did) i (?:really )?(?:like|love|enjoy|hate|dislike)"
    r"|am i (?:really )?(?:into|a (?:big |huge )?fan of)) (?P<thing>.{1,80}?)\??$"
    # "is gardening something I enjoy?"
    r"|^(?:is|are) (?P<thing2>.{1,80}?) (?:something|anything|a thing) i (?:like|love|enjoy)\??$",
    _F,
)
# Each kind of thing a like may be of, and words of things of that kind.
_KINDS = {
    kind: content_stems(words)
    for kind, words in (
        ("music", "music jazz rock pop classical opera blues metal punk rap hip-hop hip hop "
         "country folk reggae techno house edm indie soul funk disco k-pop band bands song songs "
         "singer album concert gig"),
        ("food", "food cuisine dish dishes meal cooking"),
        ("drink", "drink drinks coffee tea beer wine juice cocktail"),
        ("film", "film films movie movies cinema comedy comedies horror thriller documentary "
         "documentaries drama sci-fi romcom anime musical musicals bollywood western"),
        ("book", "book books novel novels reading poetry fiction crime thriller fantasy"),
        ("sport", "sport sports football soccer tennis basketball rugby cricket golf running "
         "swimming cycling hiking skiing climbing yoga boxing surfing"),
        ("show", "show shows series tv television sitcom podcast drama dramas k-drama kdrama "
         "reality soap soaps netflix anime cartoons"),
        ("game", "game games gaming chess board puzzle video"),
    )
}  # fmt: skip
_KIND_WORDS = {"movie": "film", "cuisine": "food", "series": "show", "tv": "show"}
# "what kind of music do I like?", "what films do I enjoy?", with the kind.
_ASK_KIND = re.compile(
    r"^what (?:(?:kinds?|sorts?|types?|genres?) of )?(?P<kind>music|food|cuisine|drinks?|films?"
    r"|movies?|books?|sports?|shows?|series|tv|games?) (?:do i (?:like|love|enjoy|listen to|watch"
    r"|read|play)|am i (?:really )?into)\??$",
    _F,
)


def answer_like(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "do I like jazz?" from what the user said they like and dislike."""
    match = _ASK_LIKE.match(reading.text)
    if match is None:
        return None
    thing = match.group("thing") or match.group("thing2")
    wanted = content_stems(thing)
    for fact in reversed(reading.facts):
        name = parse_key(fact.key).name
        if parse_key(fact.key).subject != USER or name not in {"likes", "dislikes", "favourite"}:
            continue
        liked, _, less = fact.value.partition(" more than ")
        if wanted & content_stems(liked):
            answer = "No" if name == "dislikes" else "Yes"
            return f"{answer}, {answer_line(fact)[:1].lower()}{answer_line(fact)[1:]}"
        if less and wanted & content_stems(less):  # "do I like coffee?": tea more than it
            return answer_line(fact)
    return f"{NOT_TOLD} whether you like {in_second_person(thing)}."


def answer_like_kind(
    packet: ConversationContextPacket, reading: Reading, jobs: Sequence[JobRef]
) -> str | None:
    """Answer "what kind of music do I like?" with the likes of that kind, or say none was
    told."""
    match = _ASK_KIND.match(reading.text)
    if match is None:
        return None
    said = match.group("kind").casefold()
    kind = said.removesuffix("s") if said not in {"series"} else said
    kind = _KIND_WORDS.get(kind, kind)
    found = [
        f  # "my favourite band is Radiohead": music, by the favourite's thing
        for f in own_facts(reading, "likes", "favourite")
        if _is_of(f"{f.value} {parse_key(f.key).item}", kind)
    ]
    if not found:
        return f"{NOT_TOLD} what {said} you like yet."
    return " ".join(answer_line(f) for f in found)


def _is_of(value: str, kind: str) -> bool:
    if content_stems(value) & _KINDS.get(kind, frozenset()):
        return True
    return kind == "food" and bool(food_groups(value))
