"""Tests of the rules that read one utterance (agent/memory/rules/extraction.py,
fact_extraction.py, fact_rules.py) and of how the state manager records what they read (facts,
open loops; I6).

All pure: no database, no clock (``now`` is passed in).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from agent.memory import ConversationTurn, OpenLoop, SessionState
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.rules.extraction import clean_value, content_stems, normalize_text, split_clauses
from agent.memory.rules.fact_extraction import extract_facts
from agent.memory.rules.reminder_requests import is_reminder_request, parse_reminder
from agent.memory.rules.session_rules import (
    MAX_FACTS,
    MAX_OPEN_LOOPS,
    merge_facts,
    update_open_loops,
)
from agent.memory.rules.todo_closers import Closer, extract_closers, list_left, match_loop
from agent.memory.rules.todo_openers import extract_openers
from agent.memory.schemas import Fact

NOW = datetime(2025, 3, 1, 10, 32, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2


def facts_of(text: str) -> dict[str, str]:
    return {fact.key: fact.value for fact in extract_facts(text, turn=1)}


def loop(loop_id: str, text: str, opened: int = 1) -> OpenLoop:
    return OpenLoop(loop_id=loop_id, text=text, opened_turn=opened)


# -- text ------------------------------------------------------------------------------------


def test_normalize_text_drops_invisible_marks_and_straightens_quotes():
    """NFKC, zero-width and bidi marks removed, curly quotes straight, blanks collapsed."""
    raw = "  I\u2019m\u200b  \u202e\uff21da\u200d \u201cok\u201d \n next "
    assert normalize_text(raw) == 'I\'m Ada "ok" \n next'


def test_clauses_end_at_sentences_but_not_inside_numbers_or_times():
    """A period ends a clause only before a space; "1.5", "18.30" and "p.m." survive."""
    clauses = split_clauses("Ok so remind me in 1.5 hours. What's up? at 6 p.m. we eat; fine")
    assert [(c.text, c.question) for c in clauses] == [
        ("remind me in 1.5 hours", False),
        ("What's up", True),
        ("at 6 p.m. we eat", False),
        ("fine", False),
    ]


def test_clauses_split_before_and_i():
    """A clause is cut before "and I need to X"; "call Bob and my mum" stays one."""
    assert [c.text for c in split_clauses("I need to call Bob and I have to buy milk")] == [
        "I need to call Bob",
        "I have to buy milk",
    ]
    assert [c.text for c in split_clauses("remind me to call Bob and my mum")] == [
        "remind me to call Bob and my mum"
    ]


def test_clean_value_trims_punctuation_emoji_please_and_length():
    """Trailing punctuation, emoji and "please" go; a long value is cut with an ellipsis."""
    assert clean_value("call mom please!! 🙏") == "call mom"
    long = clean_value("x" * 500, 50)
    assert len(long) == 50
    assert long.endswith("…")


# -- facts -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("my name is Ada", "name", "Ada"),
        ("My name's Ada Lovelace.", "name", "Ada Lovelace"),
        ("my name is ada", "name", "Ada"),
        ("call me Ada", "name", "Ada"),
        ("Could you call me Ada?", "name", "Ada"),
        ("I'm Ada", "name", "Ada"),
        ("Hi, I\u2019m Ada!", "name", "Ada"),
        ("my name is Zoë 😊", "name", "Zoë"),
        ("I'm 34 years old", "age", "34"),
        ("I live in Lisbon", "location", "Lisbon"),
        ("I currently live in São Paulo with my cat", "location", "São Paulo"),
        ("I moved to Berlin last year", "location", "Berlin"),
        ("I'm from Porto", "hometown", "Porto"),
        ("I'm planning a trip to Lisbon in May", "plan:a trip to lisbon in may",
         "a trip to Lisbon in May"),
        ("I plan to visit Rome", "plan:to visit rome", "to visit Rome"),
        ("I'm allergic to peanuts", "allergy:peanuts", "peanuts"),
        ("I'm vegetarian", "diet", "vegetarian"),
        ("I've decided to learn Portuguese", "decision:to learn portuguese",
         "to learn Portuguese"),
        ("my goal is to run a marathon", "goal:to run a marathon", "to run a marathon"),
        ("my brother works as a nurse", "brother/job", "a nurse"),
        ("my mum is a retired teacher", "mum/job", "a retired teacher"),
        ("my mum loves gardening", "mum/likes:gardening", "gardening"),
        ("I have a dog called Rex", "pet:dog rex", "dog Rex"),
        ("I work as a nurse", "job", "a nurse"),
        ("my train to Porto leaves at 9", "event:train to porto", "train to Porto leaves at 9"),
        ("I work at Google", "workplace", "Google"),
        ("I like jazz", "likes:jazz", "jazz"),
        ("I really love Sushi", "likes:sushi", "Sushi"),
        ("I don't like olives", "dislikes:olives", "olives"),
        ("my favourite colour is blue", "favourite:colour", "blue"),
        ("My favorite ice cream is mint", "favourite:ice cream", "mint"),
        ("my birthday is on 12 March", "birthday", "12 March"),
        ("I'm a nurse", "job", "a nurse"),  # a job, never a name
    ],
)
def test_a_stated_fact_is_read_into_its_slot(text, key, value):
    """Each way of stating a fact fills its stable slot with the value as the user wrote it."""
    assert facts_of(text) == {key: value}


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("I am Ada Lovelace, from London", {"name": "Ada Lovelace", "hometown": "London"}),
        ("I'm Tom, 41, living in Bristol", {"name": "Tom", "age": "41", "location": "Bristol"}),
        ("hi, I'm Ana, a nurse from Porto", {"name": "Ana", "job": "a nurse", "hometown": "Porto"}),
        ("I'm vegan and allergic to nuts", {"diet": "vegan", "allergy:nuts": "nuts"}),
        ("I'm tired, hungry and bored", {}),
    ],
)
def test_what_follows_i_am_is_read_as_said_with_it(text, facts):
    """ "I'm Tom, 41, living in Bristol": each part after the first is read as if said with
    "I'm" ("I'm 41", "I'm living in Bristol"); a part that is no fact adds none."""
    assert facts_of(text) == facts


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("MY NAME IS ADA", "name", "ADA"),
        ("Im 41", "age", "41"),
        ("Name's Bo", "name", "Bo"),
        ("everyone calls me Bo", "name", "Bo"),
        ("I go by Sam", "name", "Sam"),
        ("every morning I swim in the sea", "routine:every morning i swim in the sea",
         "every morning I swim in the sea"),
        ("i was born on 3 June", "birthday", "3 June"),
        ("Hey there. Actually, I've got a severe nut allergy!", "allergy:nut", "nut"),
        ("so yeah, I\u2019m really into bouldering", "likes:bouldering", "bouldering"),
        ("Set my timezone to Europe/Lisbon", "timezone", "Europe/Lisbon"),
    ],
)
def test_a_fact_is_read_however_its_speaker_is_written(text, key, value):
    """A fact is read whatever the case, spelling or place of the words by which the user
    speaks of themselves ("MY", "Im", "Name's", "calls me", "...I swim")."""
    facts = {fact.key: fact.value for fact in extract_facts(text, turn=1)}
    assert facts.get(key) == value


@pytest.mark.parametrize(
    "text",
    [
        "I'm tired",
        "I'm Tired",
        "I'm in Lisbon",
        "I'm Running late",
        "call me later",
        "call me when you land",
        "what's my name?",
        "do I like jazz?",
        "where do I live?",
        "I don't know",
        "I like it",
        "I love you",
        "I'd like a coffee",
        "the weather is nice",
        # Said in passing (sentences of long real chats), naming nothing of the speaker's.
        "I'm always here for you, Mel!",
        "I'm never here on Sundays",
        "Yeah, I love to. It's peaceful.",
        "I'm feeling inspired by autumn so I'm planning a few.",
        "Being my own boss and doing something I love is awesome",
        "I'm really grateful to have a job I enjoy every day.",
        "For example, reading makes writing even more fun",
        "I'm reading this book and I'm totally hooked!",
        "Networking plays a big role in getting endorsements",
        "Everyone loves it",
    ],
)
def test_no_fact_is_read_from_moods_questions_or_pronouns(text):
    """Moods are no names, questions state nothing, "I like it" names nothing."""
    assert facts_of(text) == {}


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("my blood type is O negative", "detail:blood type", "O negative"),
        ("My car is a blue Honda Civic", "detail:car", "a blue Honda Civic"),
        ("my shoe size is 42", "detail:shoe size", "42"),
        ("our wifi password is sunflower77", "detail:wifi password", "sunflower77"),
        ("the garage code is 4471", "detail:garage code", "4471"),
        ("the wifi password at the cabin is pinecone42",
         "detail:wifi password at the cabin", "pinecone42"),
        ("my star sign's Leo", "detail:star sign", "Leo"),
        ("my email is ana.silva@example.com", "detail:email", "ana.silva@example.com"),
        ("my locker number is B12, second floor", "detail:locker number", "B12, second floor"),
        ("my bank is Monzo", "detail:bank", "Monzo"),
        ("the new gym locker code is 5522", "detail:gym locker code", "5522"),
    ],
)  # fmt: skip
def test_a_detail_of_the_users_world_is_a_fact_of_its_own(text, key, value):
    """ "my blood type is O negative", "the garage code is 4471": a detail no other rule reads
    is kept in its own one-value slot, named by what it is ("the new ..." too), so that a new
    value replaces it."""
    assert facts_of(text) == {key: value}


@pytest.mark.parametrize(
    "text",
    [
        "my day is going great",
        "my back is killing me",
        "my phone is dead",
        "my internet is down again",
        "my point is that we should leave early",
        "my schedule is a mess this week",
        "my bad",
        "my question is simple",
        "the weather is nice",
        "the key is under the mat",
        "the food is a bit cold",
        "my life is a nightmare",
        "my head is the worst today",
        "my ex is called Dan and he owes me money",
        "is my blood type O negative?",
        "what's my shoe size?",
        "my name is <script>alert(1)</script>",  # no name, and no detail called "name"
    ],
)
def test_moods_states_and_questions_are_no_detail(text):
    """What is said of a day, a body, a mood or a passing state, and questions, keep no detail;
    "the X is Y" is a detail only for a code, a number or a password."""
    assert facts_of(text) == {}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("hey im jake", "Jake"),
        ("hi, i'm sarah!", "Sarah"),
        ("hello i am tomasz", "Tomasz"),
        ("im jake btw", "Jake"),
        ("i'm priya by the way", "Priya"),
        ("yo im dev, and i live in leeds", "Dev"),
    ],
)
def test_a_name_typed_in_lower_case_is_read_after_a_greeting_or_btw(text, name):
    """ "hey im jake": typed in lower case, a name is known by where it stands, after a greeting
    or before "btw", not by its capital."""
    assert facts_of(text).get("name") == name


@pytest.mark.parametrize(
    "text",
    [
        "hey im tired",
        "hi im back",
        "hey im stuck",
        "hello im new here",
        "hey im starving",
        "hi im broke",
        "hey im nervous",
        "hey im so tired",
        "im done btw",
        "im jake",
        "hey im kinda busy",
        "hi im pregnant",
        "hey im upset",
        "hey im exhausted lol",
    ],
)
def test_a_state_typed_in_lower_case_is_no_name(text):
    """ "hey im tired", "hi im stuck": a word of how one is, not a name; and "im jake" alone
    says too little to be told from "im done"."""
    assert "name" not in facts_of(text)


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I quit my job at Google", "ex_workplace", "Google"),
        ("I don't work at Acme anymore", "ex_workplace", "Acme"),
        ("I no longer work for the council", "ex_workplace", "the council"),
        ("I got laid off from Boeing last week", "ex_workplace", "Boeing"),
        ("I resigned from Google in March", "ex_workplace", "Google"),
        ("I've just left my job at the bank", "ex_workplace", "the bank"),
        ("I don't live in Berlin any more", "ex_location", "Berlin"),
        ("I no longer live in Leeds", "ex_location", "Leeds"),
        ("I moved away from Porto", "ex_location", "Porto"),
        ("I'm not vegetarian anymore", "ex_diet", "vegetarian"),
        ("I'm no longer vegan", "ex_diet", "vegan"),
        ("I stopped being vegetarian", "ex_diet", "vegetarian"),
    ],
)
def test_what_no_longer_holds_ends_its_slot(text, key, value):
    """ "I quit my job at Google", "I don't live in Berlin anymore": what held no longer does,
    a fact of the workplace's, home's or diet's slot that ends the one before."""
    assert facts_of(text) == {key: value}


@pytest.mark.parametrize(
    "text",
    ["I left my keys at home", "I quit smoking", "I left early", "I don't work on Fridays",
     "I left London last year",
     "I'm not vegetarian", "I don't live far from here"],
)  # fmt: skip
def test_leaving_look_alikes_end_nothing(text):
    """Leaving keys, a habit or a place for the day ends no workplace, home or diet."""
    assert not any(k.startswith("ex_") for k in facts_of(text))


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I'm learning Japanese", "learning:japanese", "Japanese"),
        ("I've been learning to play the piano", "learning:to play the piano",
         "to play the piano"),
        ("I started learning Spanish last month", "learning:spanish", "Spanish"),
        ("I'm currently learning how to code", "learning:how to code", "how to code"),
        ("I'm taking guitar lessons", "learning:guitar", "guitar"),
    ],
)  # fmt: skip
def test_what_the_user_is_learning_is_kept(text, key, value):
    """ "I'm learning Japanese", "I'm taking guitar lessons": what they learn, one fact each."""
    assert facts_of(text) == {key: value}


@pytest.mark.parametrize(
    "text",
    ["I'm learning a lot", "I'm learning a ton", "I'm learning new things every day",
     "I'm learning that patience matters", "we're learning from it",
     "I'm still learning", "I learned my lesson"],
)  # fmt: skip
def test_learning_from_life_is_no_subject_learned(text):
    """ "I'm learning a lot", "I learned my lesson": a way of speaking, no subject."""
    assert not any(k.startswith("learning") for k in facts_of(text))


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("I live in Leeds and work at the hospital",
         {"location": "Leeds", "workplace": "the hospital"}),
        ("I'm a teacher and live in Bath", {"job": "a teacher", "location": "Bath"}),
        ("I'm 34 and work in marketing", {"age": "34", "job": "in marketing"}),
        ("I grew up in Cork, and live in Dublin now", {"hometown": "Cork", "location": "Dublin"}),
        ("i live in york and teach at a primary school",
         {"location": "york", "workplace": "a primary school"}),
        ("I love to cook and work out a lot",
         {"likes:to cook and work out": "to cook and work out"}),
        ("I live with my parents and work part-time", {"household": "with my parents",
                                                       "hours": "part-time"}),
    ],
)
def test_a_second_fact_said_without_its_i_is_still_the_users(text, facts):
    """"I live in Leeds and work at the hospital": what follows "and" without a subject of its
    own is read as said with "I" ("I work at the hospital"); "work out" is no work."""
    assert facts_of(text) == facts


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("I work as a vet in Leeds", {"job": "a vet", "workplace": "in Leeds"}),
        ("I work in Leeds as a nurse", {"job": "a nurse", "workplace": "in Leeds"}),
        ("I work in London", {"workplace": "in London"}),
        ("I work as a nurse in the NHS", {"job": "a nurse"}),
        ("I work remotely for a startup in London", {"workplace": "a startup in London"}),
        ("I work for Google in Dublin, it's great", {"workplace": "Google in Dublin"}),
        ("I work at a cafe in town", {"workplace": "a cafe"}),
    ],
)
def test_the_town_one_works_in_is_where_one_works(text, facts):
    """"I work as a vet in Leeds": the town is the workplace, said "in Leeds" ("you work in
    Leeds"), beside the job."""
    assert facts_of(text) == facts


def test_a_job_said_with_its_workplace_is_two_facts():
    """"I work as a nurse at St Mary's" is a job and a workplace, so that a new workplace
    replaces the place without leaving it inside the job."""
    assert facts_of("I work as a nurse at St Mary's hospital") == {
        "job": "a nurse",
        "workplace": "St Mary's hospital",
    }
    assert facts_of("I work as a developer for Acme") == {"job": "a developer", "workplace": "Acme"}


def test_someone_is_given_a_job_only_for_a_word_of_work():
    """"my husband Raj is a pilot" gives Raj a job; "my dog Rex is a good boy" does not."""
    assert facts_of("my husband Raj is a pilot") == {
        "relative:husband raj": "husband Raj",
        "husband Raj/job": "a pilot",
    }
    assert facts_of("my dog Rex is a good boy") == {"pet:dog rex": "dog Rex"}


def test_several_named_at_once_are_each_a_pet_or_relative():
    """"I have two cats, Tom and Jerry" names two cats (the list spans the clauses); a number
    without names is how many there are, and things that are no one name nobody."""
    assert facts_of("I have 2 cats, Tom and Jerry") == {
        "pet:cat tom": "cat Tom",
        "pet:cat jerry": "cat Jerry",
    }
    assert facts_of("we have two children, Sam and Alex, and I live in Lisbon") == {
        "relative:child sam": "child Sam",
        "relative:child alex": "child Alex",
        "location": "Lisbon",
    }
    assert facts_of("I have two sisters named Ana, Bea, and Cat") == {
        "relative:sister ana": "sister Ana",
        "relative:sister bea": "sister Bea",
        "relative:sister cat": "sister Cat",
    }
    assert facts_of("I have two cats") == {"count:cats": "two"}  # how many, no one named
    assert facts_of("I have two meetings, Monday and Tuesday") == {}
    assert facts_of("I have two meetings") == {}


def test_an_event_keeps_its_slot_when_its_date_changes():
    """An event's slot is the event, so a new date replaces the old one."""
    assert facts_of("my flight to Tokyo is on 14 March") == {
        "event:flight to tokyo": "flight to Tokyo is on 14 March"
    }
    assert facts_of("my flight to Tokyo is now on 15 March") == {
        "event:flight to tokyo": "flight to Tokyo is now on 15 March"
    }


def test_several_facts_in_one_message_each_keep_their_turn():
    """A message can state several facts; each records the turn that stated it."""
    facts = extract_facts("I'm Ada and I live in Lisbon. My birthday is 3 May", turn=7)
    assert facts == (
        Fact(key="name", value="Ada", turn=7),
        Fact(key="location", value="Lisbon", turn=7),
        Fact(key="birthday", value="3 May", turn=7),
    )


def test_the_last_statement_of_a_slot_in_one_message_wins():
    """Within one message the last statement of a slot wins: Ada, then Bob, records Bob."""
    assert facts_of("my name is Ada. Actually, my name is Bob") == {"name": "Bob"}


@pytest.mark.parametrize(
    ("text", "liked"),
    [
        ("I love action and sci-fi movies, the effects are so cool", "action and sci-fi movies"),
        ("I like reading, watching movies, and exploring nature",
         "reading, watching movies, and exploring nature"),
        ("I love camping trips with my fam, 'cause nature brings us together",
         "camping trips with my fam"),
        ("I love aerial yoga, it's a great way to switch off", "aerial yoga"),
        ("I really like pottery - the creativity is awesome", "pottery"),
        ("I enjoy hiking so much", "hiking"),
        ("I like jazz a lot", "jazz"),
    ],
)  # fmt: skip
def test_a_like_is_what_is_liked_without_the_sentence_that_goes_on(text, liked):
    """The liked thing, whole: not cut at its eighth word ("the effects are so"), and not
    carrying the comment after it."""
    (value,) = (v for k, v in facts_of(text).items() if k.startswith("likes:"))
    assert value == liked


@pytest.mark.parametrize(
    "text",
    [
        "I love how you explained it",
        "I like your turtles so much",
        "I love to hear that",
        "I love the way the frosting turned out",
        "I love how it shows the togetherness and power you share",
        "I love when you give me movie recommendations",
        "I like the thought, Nate",
        "I love that you remember things",
        "I love it when you try something new and it actually works",
        "I love seeing them soak in the sun like this",
    ],
)
def test_a_reaction_or_a_compliment_is_no_like(text):
    """ "I love how you explained it" praises a moment or the listener: nothing to keep as
    what the user likes."""
    assert not [k for k in facts_of(text) if k.startswith(("likes", "dislikes"))]


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I'm allergic to cockroaches as well, so who knows if I'll be okay",
         "allergy:cockroaches", "cockroaches"),
        ("My goal is to run a marathon, it's been a dream for years",
         "goal:to run a marathon", "to run a marathon"),
        ("I'm allergic to shellfish - it's pretty bad", "allergy:shellfish", "shellfish"),
        ("I can't have dairy, so no ice cream for me", "avoid:have dairy", "have dairy"),
    ],
)  # fmt: skip
def test_a_fact_ends_where_a_comment_on_it_begins(text, key, value):
    """ "so who knows if I'll..." comments on the fact; the fact is what comes before it."""
    assert facts_of(text) == {key: value}


# -- to-dos ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "todos"),
    [
        ("remind me to book the hotel", ("book the hotel",)),
        ("Can you remind me to book the hotel?", ("book the hotel",)),
        ("I need to book the hotel.", ("book the hotel",)),
        ("I have to call my mum", ("call my mum",)),
        ("todo: buy milk", ("buy milk",)),
        ("To-do - buy milk", ("buy milk",)),
        ("don't let me forget to water the plants!", ("water the plants",)),
        ("add eggs to my shopping list", ("eggs",)),
        ("Ok so I need to call Bob. Also todo: email Alice", ("call Bob", "email Alice")),
        ("I need to book the hotel and I need to book the flight", ("book the hotel",
                                                                     "book the flight")),
        ("I need to buy milk, call the bank and pick up the kids",
         ("buy milk", "call the bank", "pick up the kids")),
        ("todo: email Sarah, then book flights", ("email Sarah", "book flights")),
        ("I have to buy milk, eggs and bread", ("buy milk, eggs and bread",)),
        ("I need to call Tom and Jerry", ("call Tom and Jerry",)),
        ("and buy milk", ("buy milk",)),
        ("oh and buy milk too", ("buy milk",)),
        ("plus call the bank as well", ("call the bank",)),
        ("also pay the rent too", ("pay the rent",)),
    ],
)  # fmt: skip
def test_openers_name_the_todo(text, todos):
    """Each opener form gives the to-do in the user's words."""
    assert extract_openers(text) == todos


@pytest.mark.parametrize(
    "text",
    [
        "remind me in 10 minutes to call mom",
        "remind me to call mom in 2 hours",
        "remind me at 6 to cook",  # a reminder with an unreadable time is still no to-do
        "do I need to book the hotel?",
        "I booked the hotel",
        "what do I have to do?",
        "and I went home",
        "and then we watched a movie",
        "and call it a day",
        "oh and cancel the oven reminder",
        "and cancel the oven one",
        "plus move the dentist reminder to 5pm",
    ],
)
def test_timed_reminders_and_questions_open_no_todo(text):
    """A reminder with a time becomes a job, not a to-do; a question opens nothing."""
    assert extract_openers(text) == ()


@pytest.mark.parametrize(
    "text",
    [
        # "must" of a guess, not of a duty
        "Must be awesome to see your stuff on display!",
        "Wow, must have been traumatizing for you guys.",
        "That must feel great",
        "it must be nice to live by the sea",
        "You must've been thrilled",
        "must have taken a lot of work",
        "I must have lost it on the bus",
        # a way of speaking, not something to do
        "I have to say, your advice was great",
        "I must admit I was nervous",
        "I have to agree with you there",
        "I need to tell you something funny",
        "I've got to hand it to you, that was clever",
        "gotta be honest, I loved it",
        # a way to be, never done and ticked off
        "Gotta stay resilient and focused, that's key!",
        "I have to keep pushing",
        "I need to stay positive",
        "I have to keep that in mind",
        "gotta keep my head up",
    ],
)
def test_guesses_ways_of_speaking_and_resolutions_open_no_todo(text):
    """A to-do is something to do and tick off: "must be nice" guesses, "I have to say"
    speaks, "I need to stay positive" resolves; none of them goes on the user's list."""
    assert extract_openers(text) == ()


@pytest.mark.parametrize(
    "text",
    [
        "Don't forget to take breaks and dance it out when you need to destress!",
        "Keep up the good work and don't forget your passion for dance.",
        "Rejections suck, but don't forget they don't define you.",
    ],
)
def test_dont_forget_said_to_others_is_their_business(text):
    """Said among members (a group message the bot only keeps), "don't forget to X" is advice
    to the others, not the speaker's to-do; said to the bot, it is one."""
    assert extract_openers(text, to_others=True) == ()
    assert extract_openers(text) != ()
    assert extract_openers("don't let me forget to call Bob", to_others=True) == ("call Bob",)


@pytest.mark.parametrize(
    ("text", "todos"),
    [
        ("I must call the plumber", ("call the plumber",)),
        ("I have to be at the station at 6", ("be at the station at 6",)),
        ("I need to keep the receipt", ("keep the receipt",)),
        ("I need to tell my boss about the trip", ("tell my boss about the trip",)),
        ("I have to stay home on Friday for the delivery", ("stay home on Friday for the "
                                                           "delivery",)),
    ],
)  # fmt: skip
def test_a_duty_that_shares_a_word_with_those_is_still_a_todo(text, todos):
    """Only the guess, the way of speaking and the resolution are left out: a plain duty with
    the same verbs ("keep the receipt", "tell my boss") is still a to-do."""
    assert extract_openers(text) == todos


@pytest.mark.parametrize(
    ("text", "closer"),
    [
        ("I booked the hotel", Closer("booked the hotel", explicit=False)),
        ("I've just booked the hotel!", Closer("booked the hotel", explicit=False)),
        ("I called mom", Closer("called mom", explicit=False)),
        ("done: book the hotel", Closer("book the hotel", explicit=True)),
        ("finished the report", Closer("the report", explicit=True)),
        ("the hotel is booked", Closer("the hotel", explicit=True)),
        ("I did the shopping", Closer("the shopping", explicit=True)),
        ("I managed to call mom", Closer("call mom", explicit=True)),
        ("done 2", Closer("2", explicit=True)),
    ],
)
def test_closers_say_what_is_done(text, closer):
    """Each closer form gives what is done, and whether it was said as a completion."""
    assert extract_closers(text) == (closer,)


@pytest.mark.parametrize(
    "text",
    [
        "I did not book the hotel",
        "I didn't book the hotel",
        "did I book the hotel?",
        "I need to book the hotel",
        "I wanted to book the hotel",
        "I moved to Lisbon",
        "I got to go",
        "I have to call mom",
    ],
)
def test_negations_intentions_and_questions_close_nothing(text):
    """Not done, wanting to do, and asking whether it is done close nothing."""
    assert extract_closers(text) == ()


def test_content_stems_ignore_tense_articles_and_pronouns():
    """Tense, plural, case, articles and pronouns do not change the stems; mum is mom."""
    assert content_stems("booked the hotel") == {"book", "hotel"}
    assert content_stems("Book the Hotels") == {"book", "hotel"}
    assert content_stems("called my mum") == content_stems("call mom")


LOOPS = [
    loop("a", "book the hotel", 1),
    loop("b", "call my mum", 2),
    loop("c", "book the hotel in Lisbon", 3),
]


@pytest.mark.parametrize(
    ("closer", "loop_id"),
    [
        ("booked the hotel", "a"),
        ("hotel", "a"),  # a subset of the loop's words; ties go to the oldest
        ("called mom", "b"),
        ("booked the hotel in Lisbon", "c"),
        ("2", "b"),
        ("booked a flight to Lisbon", None),  # shares words, but neither holds the other
        ("it", None),
        ("7", None),
        ("bought bread", None),
    ],
)
def test_match_loop_by_stems_or_number(closer, loop_id):
    """A closer matches the loop whose stems hold it or are held by it; "n" is the n-th."""
    found = match_loop(closer, LOOPS)
    assert (found.loop_id if found else None) == loop_id


@pytest.mark.parametrize(
    ("todo", "closer", "left"),
    [
        ("buy eggs, milk and bread", "got the milk", ("milk", "buy eggs and bread")),
        ("buy eggs, milk and bread", "bought the eggs and the bread",
         ("eggs and bread", "buy milk")),
        ("call mom and dad", "called dad", ("dad", "call mom")),
        ("pick up the kids and the dog", "picked up the dog", ("the dog", "pick up the kids")),
        ("finish the report and the slides", "finished the report",
         ("the report", "finish the slides")),
        ("buy eggs, milk, bread and cheese", "got bread", ("bread", "buy eggs, milk and cheese")),
        ("milk, eggs and bread", "got the eggs", ("eggs", "milk and bread")),  # no verb
        # the whole list done, nothing of it named, or something else named: no list left
        ("buy eggs, milk and bread", "got eggs, milk and bread", None),
        ("buy eggs, milk and bread", "did the shopping", None),
        ("buy eggs, milk and bread", "got the milk and cheese", None),
        # no list of things: one to-do
        ("finish the report on sales and marketing", "finished the report", None),
        ("book the hotel", "booked the hotel", None),
    ],
)  # fmt: skip
def test_a_to_do_said_as_a_list_loses_the_things_done(todo, closer, left):
    """"got the milk" of "buy eggs, milk and bread" leaves "buy eggs and bread"."""
    assert list_left(todo, closer) == left


async def test_the_state_keeps_what_is_left_of_a_list_and_rebuilds_the_same():
    """The state's loop reads what is left; rebuilding from the turn log gives the same (I6)."""
    manager = ConversationStateManager()
    texts = ["I need to buy eggs, milk and bread", "got the milk", "bought the bread"]
    turns = [user_turn(seq, text) for seq, text in enumerate(texts, start=1)]
    state = SessionState(session_id=SID)
    for turn in turns:
        state = manager.apply(state, turn)
        if turn.seq == 2:
            assert [lp.text for lp in state.open_loops] == ["buy eggs and bread"]
    assert [lp.text for lp in state.open_loops] == ["buy eggs"]

    async def log():
        for turn in turns:
            yield turn

    rebuilt = await ConversationStateManager().rebuild(SID, log())
    assert rebuilt.log_view() == state.log_view()


# -- reminders ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label", "delay"),
    [
        ("remind me in 10 minutes to call mom", "call mom", timedelta(minutes=10)),
        ("remind me to call mom in 2 hours", "call mom", timedelta(hours=2)),
        ("in 30 seconds remind me to stretch", "stretch", timedelta(seconds=30)),
        ("In 10 minutes, remind me to stretch.", "stretch", timedelta(minutes=10)),
        ("remind me in 10min to stretch 🙏", "stretch", timedelta(minutes=10)),
        ("remind me in half an hour to check the oven", "check the oven", timedelta(minutes=30)),
        ("Remind me in ten minutes about the meeting", "the meeting", timedelta(minutes=10)),
        ("remind me in 1.5 hours to leave", "leave", timedelta(minutes=90)),
        ("remind me in 2 weeks that my passport expires", "my passport expires",
         timedelta(weeks=2)),
        ("set a reminder for the dentist in 2 days", "the dentist", timedelta(days=2)),
        ("hey can you remind me in 5 mins to check the pasta please?", "check the pasta",
         timedelta(minutes=5)),
        ("remind me in an hour", "", timedelta(hours=1)),
    ],
)  # fmt: skip
def test_a_delayed_reminder_is_due_after_its_delay(text, label, delay):
    """Every delay form gives the label and ``now + delay``."""
    request = parse_reminder(text, NOW)
    assert request is not None
    assert (request.label, request.due_at) == (label, NOW + delay)
    assert is_reminder_request(text)


@pytest.mark.parametrize(
    ("text", "due"),
    [
        ("remind me at 18:30 to take out the trash", datetime(2025, 3, 1, 18, 30, tzinfo=UTC)),
        ("remind me at 9:00 to water the plants", datetime(2025, 3, 2, 9, 0, tzinfo=UTC)),
        ("remind me at 10:32 to x", datetime(2025, 3, 2, 10, 32, tzinfo=UTC)),
        ("Remind me at 6pm to cook.", datetime(2025, 3, 1, 18, 0, tzinfo=UTC)),
        ("remind me at 6 p.m. to cook", datetime(2025, 3, 1, 18, 0, tzinfo=UTC)),
        ("remind me at 12am to sleep", datetime(2025, 3, 2, 0, 0, tzinfo=UTC)),
        ("remind me at noon to eat", datetime(2025, 3, 1, 12, 0, tzinfo=UTC)),
        ("at 18.30 remind me to stretch", datetime(2025, 3, 1, 18, 30, tzinfo=UTC)),
    ],
)
def test_a_clock_time_reminder_is_due_at_its_next_occurrence_in_utc(text, due):
    """A clock time is UTC: today if still ahead, else tomorrow (now itself is not ahead)."""
    request = parse_reminder(text, NOW)
    assert request is not None
    assert request.due_at == due


@pytest.mark.parametrize(
    ("text", "label", "link", "due"),
    [
        ("set a reminder for tomorrow morning: dentist", "dentist", "about",
         datetime(2025, 3, 2, 9, 0, tzinfo=UTC)),
        ("set a reminder for Friday at 5pm - call grandma", "call grandma", "to",
         datetime(2025, 3, 7, 17, 0, tzinfo=UTC)),
        ("remind me tomorrow at 9am: pack the camera", "pack the camera", "to",
         datetime(2025, 3, 2, 9, 0, tzinfo=UTC)),
        ("remind me tomorrow 9am gym", "gym", "about", datetime(2025, 3, 2, 9, 0, tzinfo=UTC)),
    ],
)  # fmt: skip
def test_a_reminder_said_with_its_time_first_and_its_label_after_a_colon(text, label, link, due):
    """What to remind of, after a colon or a dash: "to" it when it opens with a to-do's verb."""
    request = parse_reminder(text, NOW)
    assert request is not None
    assert (request.label, request.link, request.due_at) == (label, link, due)


@pytest.mark.parametrize(
    ("text", "due"),
    [
        ("remind me in an hour and a half to stretch", NOW + timedelta(minutes=90)),
        ("remind me in 2 and a half hours to leave", NOW + timedelta(minutes=150)),
        ("remind me in two hours and a half to leave", NOW + timedelta(minutes=150)),
        ("remind me in 10 to check the rice", NOW + timedelta(minutes=10)),
        ("remind me after lunch to call the bank", datetime(2025, 3, 1, 13, 30, tzinfo=UTC)),
        ("remind me at lunchtime to eat", datetime(2025, 3, 1, 12, 30, tzinfo=UTC)),
        ("remind me end of day to send the report", datetime(2025, 3, 1, 17, 0, tzinfo=UTC)),
        ("remind me tomorrow after work to go to the gym",
         datetime(2025, 3, 2, 18, 0, tzinfo=UTC)),
        ("remind me first thing tomorrow to call the school",
         datetime(2025, 3, 2, 9, 0, tzinfo=UTC)),
    ],
)  # fmt: skip
def test_a_time_said_by_what_happens_then_or_a_delay_said_short_is_read(text, due):
    """ "after lunch" is 13:30, "end of day" 17:00, "first thing" 09:00; "in an hour and a
    half" is 90 minutes and a chat's "in 10" is 10 minutes."""
    request = parse_reminder(text, NOW)
    assert request is not None
    assert request.due_at == due


@pytest.mark.parametrize(
    "text",
    [
        "remind me in 0 minutes to x",
        "remind me in 400 days to x",
        "remind me at 6 to x",  # morning or evening?
        "remind me at 25:00 to x",
        "remind me at 13pm to x",
    ],
)
def test_an_impossible_time_is_a_reminder_request_without_a_reminder(text):
    """Out-of-range or ambiguous times give no reminder, but are recognised as asking for one."""
    assert parse_reminder(text, NOW) is None
    assert is_reminder_request(text)


@pytest.mark.parametrize(
    "text",
    ["remind me to call mom", "remind me to meet Bob at 5 Main Street", "in 10 minutes", "hello"],
)
def test_no_time_no_reminder(text):
    """Without a time it is no reminder request (a to-do at most)."""
    assert parse_reminder(text, NOW) is None
    assert not is_reminder_request(text)


def test_reminder_time_is_utc_whatever_now_is_given_in():
    """A naive ``now`` is UTC; an aware one is converted, and "at 18:30" stays 18:30 UTC."""
    naive = parse_reminder("remind me in 1 minute to x", NOW.replace(tzinfo=None))
    lisbon_summer = timezone(timedelta(hours=1))
    aware = parse_reminder("remind me at 18:30 to x", NOW.astimezone(lisbon_summer))
    assert naive is not None
    assert naive.due_at == NOW + timedelta(minutes=1)
    assert aware is not None
    assert aware.due_at == datetime(2025, 3, 1, 18, 30, tzinfo=UTC)


# -- bad input ---------------------------------------------------------------------------------

ADVERSARIAL = [
    "a" * 4096,
    ". " * 2048,
    "." * 4095 + "x",
    "remind me " * 409,
    "remind me to " * 315,
    "in 5 minutes remind me to " * 157,
    "I'm " * 1024,
    "in 1 " * 819,
    "done: " * 682,
    "my name is " * 372,
    "!?" * 2048,
    "🙂" * 4096,
    "\u200b" * 4096,
    "I need to " * 409,
    "x is " * 819,
    ", and I " * 512,
    "remind me in " + "9" * 4083,
    "I'm " + "A" * 4092,
    "p.m. " * 819,
    "مرحبا اسمي " * 372,
    "I live in a" + ", " * 2040 + "b",  # a value's tail words ("lol") read from its end
    "I love " + ",," * 2040 + " lol",
    "we're going to Rome" + " " * 4000 + "x",
    "we have two kids, " + "Ana (7), " * 455 + "x",  # several named with their ages
    "my kids are " + "Ana, 7, " * 512,
    "I quit " + "my job at x " * 340 + "now",  # a workplace said after leaving one
    "a " + "golden " * 585 + "retriever named Rex",
    "my sister is coming " + "over " * 800 + "on Friday",  # a visit
    "I'm Tom, " + "41, " * 1000,  # parts said after "I'm"
    "I'm " + "x and " * 800 + "y",
    "I can't have " + "any " * 800 + "dairy",
    "my partner is a " + "chef " * 800 + "at Fern",  # where someone works, after their job
    "I'm flying to Lisbon" + " and" * 1300 + " back",
    "I'm not " + "really " * 580 + "keen on it",
    "I play " + "with " * 800 + "x",  # what the user does for fun
    "it's " + "Sam " * 800 + "x",  # a name said as on the phone
    "I'm going to Paris" + " to the" * 580,  # a value cut short on "the"
    "we're having a " + "big " * 800 + "party",
    "oh and " * 585 + "also buy milk",  # one more to-do, said after one
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda t: repr(t[:12]))
def test_long_hostile_text_is_read_quickly(text):
    """4096 characters of repetition, emoji, RTL or invisible marks are read in well under a
    second by every rule (no catastrophic backtracking)."""
    text = text[:4096]
    loops = [loop(f"l{n}", f"task number {n} with words", n) for n in range(MAX_OPEN_LOOPS)]
    start = time.perf_counter()
    extract_facts(text, turn=1)
    extract_openers(text)
    extract_closers(text)
    parse_reminder(text, NOW)
    update_open_loops(loops, text, seq=99)
    assert time.perf_counter() - start < 1.0


def test_values_stay_bounded_on_long_text():
    """A 4000-character to-do is kept, cut to 200 characters."""
    (todo,) = extract_openers("remind me to " + "x" * 4000)
    assert len(todo) == 200


# -- what the state records ----------------------------------------------------------------------


def test_merge_facts_replaces_a_restated_slot_and_keeps_the_newest_last():
    """The same key replaces the old fact and moves to the end."""
    old = (Fact(key="name", value="Ada", turn=1), Fact(key="location", value="Lisbon", turn=2))
    merged = merge_facts(old, [Fact(key="name", value="Bob", turn=5)])
    assert merged == (old[1], Fact(key="name", value="Bob", turn=5))


def test_liking_and_disliking_the_same_thing_replace_each_other():
    """Disliking jazz after liking it leaves only the dislike (and the other way round)."""
    liked = merge_facts((), extract_facts("I like jazz", turn=1))
    assert [f.key for f in merge_facts(liked, extract_facts("I hate jazz", turn=2))] == [
        "dislikes:jazz"
    ]
    # "actually", "anyway", "though": said around the value, not part of it
    disliked = merge_facts((), extract_facts("I don't like coffee anymore", turn=3))
    again = merge_facts(disliked, extract_facts("I love coffee actually", turn=4))
    assert [(f.key, f.value) for f in again] == [("likes:coffee", "coffee")]


def test_facts_are_bounded():
    """Beyond the limit the oldest facts are dropped."""
    facts = [Fact(key=f"likes:{n}", value=str(n), turn=n) for n in range(MAX_FACTS + 10)]
    merged = merge_facts((), facts)
    assert len(merged) == MAX_FACTS
    assert merged[0].value == "10"


def test_update_open_loops_closes_first_then_opens_with_deterministic_ids():
    """Closers apply before openers: the hotel closes, the flight opens as loop-<seq>-1."""
    update = update_open_loops(
        [loop("loop-1-1", "book the hotel")],
        "I booked the hotel and I need to book the flight",
        seq=4,
    )
    assert [lp.loop_id for lp in update.closed] == ["loop-1-1"]
    assert update.closed[0].closed_turn == 4
    assert update.loops == (loop("loop-4-1", "book the flight", 4),)
    assert update.opened == update.loops


def test_update_open_loops_reports_restated_and_unmatched():
    """A to-do already open is not added twice; "done: X" with no such loop is unmatched."""
    update = update_open_loops(
        [loop("loop-1-1", "book the hotel")], "todo: book hotel. done: walk the dog", seq=2
    )
    assert update.loops == (loop("loop-1-1", "book the hotel"),)
    assert update.already_open == update.loops
    assert update.unmatched == ("walk the dog",)


def test_open_loops_are_bounded():
    """Beyond the limit the oldest open loops are dropped."""
    loops = [loop(f"l{n}", f"task {n}", n) for n in range(MAX_OPEN_LOOPS)]
    update = update_open_loops(loops, "todo: one more thing", seq=100)
    assert len(update.loops) == MAX_OPEN_LOOPS
    assert update.loops[-1].text == "one more thing"
    assert update.loops[0].loop_id == "l1"


def user_turn(seq: int, text: str, **fields: object) -> ConversationTurn:
    return ConversationTurn(
        turn_id=f"trn_{seq:032x}",
        session_id=SID,
        seq=seq,
        user_text=text,
        assistant_text="ok",
        created_at=NOW + timedelta(minutes=seq),
        **fields,
    )


CONVERSATION = [
    "Hi, I'm Ada",
    "I'm planning a trip to Lisbon in May",
    "remind me to book the hotel",
    "I need to call my mum and I have to buy milk",
    "remind me in 10 minutes to call mom",
    "I booked the hotel",
    "my name is Ada Lovelace",
    "done 2",
    "what is still open?",
]


def test_state_manager_records_facts_and_open_loops_from_user_text():
    """In a group, apply() keeps the facts stated (same key replaces) and only the loops still
    open; a timed reminder opens no loop."""
    manager = ConversationStateManager()
    state = SessionState(session_id=SID, chat_type="group")
    for seq, text in enumerate(CONVERSATION, start=1):
        state = manager.apply(state, user_turn(seq, text))

    assert [(f.key, f.value, f.turn) for f in state.facts] == [
        ("plan:a trip to lisbon in may", "a trip to Lisbon in May", 2),
        ("name", "Ada Lovelace", 7),
    ]
    assert state.open_loops == (loop("loop-4-1", "call my mum", 4),)


def test_a_personal_chat_keeps_its_facts_in_long_term_memory_not_in_the_state():
    """In a private chat the facts go to long-term memory only (the one place they are kept,
    updated and erased), so the state and its checkpoint hold none."""
    manager = ConversationStateManager()
    state = SessionState(session_id=SID, chat_type="private")
    for seq, text in enumerate(CONVERSATION, start=1):
        state = manager.apply(state, user_turn(seq, text))
    assert state.facts == ()
    assert state.open_loops == (loop("loop-4-1", "call my mum", 4),)


async def test_rebuilding_from_the_log_gives_the_same_facts_and_loops():
    """Folding the same turns again (rebuild) gives an equal state: the rules read only the
    turn (I6)."""
    manager = ConversationStateManager()
    turns = [user_turn(seq, text) for seq, text in enumerate(CONVERSATION, start=1)]
    live = SessionState(session_id=SID)
    for turn in turns:
        live = manager.apply(live, turn)

    async def log():
        for turn in turns:
            yield turn

    rebuilt = await ConversationStateManager().rebuild(SID, log())
    assert rebuilt.log_view() == live.log_view()
