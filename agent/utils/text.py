"""Words of a text: the one tokeniser and the one stop-word list of the package.

Every rule that cuts a text into words does it here, in one of two ways that differ on purpose:

- :func:`split_words` gives the runs of word characters: letters, digits and, unless asked
  to split them, underscores. Search quotes each word of a query
  (``agent.memory.conversation_store``), and FTS5's default ``unicode61`` tokeniser reads a
  quoted ``"snake_case"`` as the phrase ``snake case``: a query keeps the underscore (one
  phrase, as written), while the loop rules split it
  (:func:`agent.memory.rules.extraction.content_stems` compares words).
- :func:`split_words_and_breaks` gives words made of letters, with their inner apostrophes
  and hyphens (``don't``, ``to-do``), and every other character that is not a space as a
  break: topics are runs of content words, and anything else (a digit, a comma) ends a run.
  :data:`LETTER_WORD` is its word, which the name rules
  (:mod:`agent.memory.rules.fact_extraction`) read too.

The stop words are one list, written once, in word classes; each reader ignores the classes
that mean nothing to it:

- :data:`SEARCH_STOP_WORDS`: what a search query drops (BM25 would match everything with
  them): the function words, the question words and the tails :func:`split_words` cuts from
  contractions (``don't`` -> ``don``, ``t``).
- :data:`TOPIC_STOP_WORDS`: words that never name a subject on their own (topics, and the
  group deliberation's matching): every class but the contraction tails and the completion
  words, with contractions whole as :func:`split_words_and_breaks` reads them.
- :data:`LOOP_STOP_WORDS`: what comparing a to-do with what is said of it ignores ("I still
  need to book the hotel" ~ "booked the hotel, finally"): the commonest function words and
  the words of progress and of completion (no question words: "where" is part of a to-do).
- :data:`QUESTION_WORDS`: what says nothing of what a question is about.

The lists differ because their readers must not change what they find (the full-text
search's recall, a chat's topics, which to-do a closer closes); ``tests/test_text.py`` pins
each list.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = [
    "LETTER_WORD",
    "LOOP_STOP_WORDS",
    "QUESTION_WORDS",
    "SEARCH_STOP_WORDS",
    "TOPIC_STOP_WORDS",
    "split_words",
    "split_words_and_breaks",
]

#: A word of letters with inner apostrophes or hyphens (``don't``, ``to-do``, ``Jean-Luc``).
LETTER_WORD = r"[^\W\d_]+(?:['-][^\W\d_]+)*"
_WORD = re.compile(r"\w+")
_WORD_WITHOUT_UNDERSCORE = re.compile(r"[^\W_]+")
_WORD_OR_BREAK = re.compile(rf"{LETTER_WORD}|[^\s]")


def split_words(text: str, *, split_underscores: bool = False) -> list[str]:
    """Return the runs of letters and digits of ``text``, in order, as written.

    Args:
        text: any text.
        split_underscores: cut ``snake_case`` into ``snake``, ``case`` (by default an
            underscore is part of a word, as in a search query: see the module docstring).
    """
    return (_WORD_WITHOUT_UNDERSCORE if split_underscores else _WORD).findall(text)


def split_words_and_breaks(text: str) -> Iterator[str]:
    """Yield the :data:`LETTER_WORD` words of ``text`` and, between them, each other
    character that is not a space (a digit, a comma: it ends a run of words), in order.

    Lazy: a reader that has what it needs stops reading a long text.
    """
    return (match.group() for match in _WORD_OR_BREAK.finditer(text))


def _class(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The word classes. Each word is written once; the lists at the bottom are unions of classes.
# The commonest function words: articles, personal pronouns, be / do / have / can / will, the
# commonest prepositions and adverbs (every list ignores them).
_FUNCTION_WORDS = _class(
    """a all also an and are at be been being by can could did do does doing for had has have
    here i in is it its just me my myself now of off on or please really should so some that
    the then there these this those to too up very was were will with would you your"""
)
# The other function words, and the verbs of saying and knowing that fill a question.
_MORE_FUNCTION_WORDS = _class(
    """about above after again am as because before below between both but down during each
    ever few from further having he her hers herself him himself his if into itself more most
    no nor not once only other our ours ourselves out over own remember said same say says she
    such than their theirs them themselves they thing things through under until we while
    yours yourself yourselves"""
)
# Question words (also function words: search drops them).
_QUESTION_WORDS = _class("any how know tell think what when where which who whom whose why")
# Question words that only a question's subject ignores.
_VAGUE_QUESTION_WORDS = _class("anybody anyone else somebody someone what's whether")
# What :func:`split_words` leaves of a contraction after its apostrophe, and the negated
# auxiliaries.
_CONTRACTION_TAILS = _class(
    "aren couldn d didn doesn don isn ll m re s shouldn t ve wasn weren won wouldn"
)
# Contractions written whole, as :func:`split_words_and_breaks` reads them.
_CONTRACTIONS = _class(
    """ain't aren't can't couldn't didn't doesn't don't everybody's hadn't hasn't haven't he's
    here's how's i'd i'll i'm i've isn't it's let's she's shouldn't that's there's they'd
    they'll they're they've wasn't we'd we'll we're we've weren't where's who's won't
    wouldn't y'all you'd you'll you're you've"""
)
# What is said around a to-do about its progress ("I still need to", "got it done today").
_PROGRESS_WORDS = _class(
    "already check checked done get gets got mine must need needs still today"
)
# What says a to-do is done ("finished", "ticked off").
_COMPLETION_WORDS = _class("complete completed finally finished sorted tick ticked")
# Chat words that name no subject: fillers, reactions, very common verbs and adjectives,
# numbers, time words and the bot's own vocabulary (reminders, lists, proposals).
_CHAT_WORDS = _class(
    """absolutely across actually against ago agree agreed almost along although always among
    another anything anyway anyways anywhere around ask asked asking asks away awesome back
    bad basically became become behind beside besides best better beyond big bit book booked
    bought bring btw buy call called cannot coming cool dear definitely different disagree
    early eight either enough even every everybody everyone everything exactly except find
    fine first five folks follow follows four fyi getting give given glad go goes going gone
    gonna good gotta great guys happen happened happens happy hello help hey hi high hmm
    hoping however idea ideas imo inside instead keep kind known large last late later least
    leave leaving less let like likely list literally little lol long looking lot lots low
    made make makes making many may maybe mean means meet met might moved much name names
    near nearby needed never new next nice nine nobody none nope nothing number numbers
    often oh ok okay old one onto others otherwise outside paid pay per perhaps planning pls
    plz pretty probably proposal propose put quite rather real remind reminder reminders
    right second see seem seems send sent seriously seven short since six small something
    sometimes soon sorry sound sounds start started stay staying stuff suggest suggestion
    sure take taking tells ten thank thanks thinking third tho though three thus thx to-do
    todo together told tomorrow tonight totally toward towards true try trying two ty upon
    us use used via wanna want wanted wants way well whatever whenever whole within without
    wondering work works yeah yep yes yesterday yet yup"""
)
# Laughter, cheers and goodbyes ("ah ha ha", "yay", "bye"): chat noise, no subject.
_INTERJECTIONS = _class(
    """ah aha ahh aw aww bye cheers come comes came congrats congratulations goodbye ha hah haha
    hahaha heh hehe hm huh hug hugs omg ugh uh um umm whoa woah wow yay yo"""
)

#: Words a search query drops: they match everything and mean nothing to BM25 (and reading
#: their posting lists would make a query's cost grow with the history).
SEARCH_STOP_WORDS = _FUNCTION_WORDS | _MORE_FUNCTION_WORDS | _QUESTION_WORDS | _CONTRACTION_TAILS
#: Words that never name a topic on their own (also what deliberation matching ignores).
TOPIC_STOP_WORDS = (
    _FUNCTION_WORDS
    | _MORE_FUNCTION_WORDS
    | _QUESTION_WORDS
    | _VAGUE_QUESTION_WORDS
    | _CONTRACTIONS
    | _PROGRESS_WORDS
    | _CHAT_WORDS
    | _INTERJECTIONS
)
#: Words that do not tell one to-do from another, nor a to-do from what is said of it (nor
#: does the "s" of a possessive: "my son's age" is the son's age).
LOOP_STOP_WORDS = _FUNCTION_WORDS | _PROGRESS_WORDS | _COMPLETION_WORDS | _class("s")
#: Question words and fillers that say nothing of what a question is about.
QUESTION_WORDS = _QUESTION_WORDS | _VAGUE_QUESTION_WORDS
