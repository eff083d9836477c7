"""Tests of :class:`ExtractiveSummarizer`: deterministic, extractive, bounded compression."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from agent.memory import ConversationTurn, SessionState
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_summarizer import ExtractiveSummarizer, SummaryFold
from agent.memory.schemas import Topic

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2
HEADER = re.compile(r"^\[(digest of )?turns (\d+)-(\d+)\]$")


def turn(
    seq: int,
    user: str | None = None,
    answer: str | None = "Ok.",
    speaker: str | None = None,
    intent: str | None = None,
) -> ConversationTurn:
    return ConversationTurn(
        turn_id=f"trn_{seq:032x}",
        session_id=SID,
        seq=seq,
        user_text=user if user is not None else f"Point {seq} matters. Detail {seq} follows.",
        assistant_text=answer,
        intent=intent,
        speaker=speaker,
        created_at=T0,
    )


def run(
    summarizer: ExtractiveSummarizer,
    turns: list[ConversationTurn],
    state: SessionState | None = None,
) -> list[SessionState]:
    """Fold the turns one by one through the state manager; return the state after each."""
    manager = ConversationStateManager(summarizer)
    state = state or SessionState(session_id=SID)
    states = []
    for t in turns:
        state = manager.apply(state, t)
        states.append(state)
    return states


def fold_all(summarizer: ExtractiveSummarizer, turns: list[ConversationTurn]) -> list[SummaryFold]:
    """Fold the turns with the summarizer alone; return the fold after each."""
    state = SessionState(session_id=SID)
    folds = []
    for t in turns:
        fold = summarizer.fold(state, t)
        folds.append(fold)
        state = state.model_copy(update={**fold.as_update(), "turn_count": t.seq})
    return folds


def labels(lines: tuple[str, ...] | list[str]) -> list[str]:
    return [line.split()[0] for line in lines]


def headers(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if HEADER.match(line)]


def talk(count: int, start: int = 1) -> list[ConversationTurn]:
    """A long, varied chat: decisions, facts, questions and plain talk, by two speakers."""
    lines = [
        "We should compare hosting offers for the shop. The shop needs a new server.",
        "I live in Porto. The shop opens in June.",
        "Who pays for the domain renewal?",
        "The server migration takes a weekend. Backups run every night.",
        "Let's go with the cheaper hosting offer",
        "The newsletter goes out on Mondays. Mondays are busy for the shop.",
        "I like espresso",
        "thanks",
    ]
    return [
        turn(
            seq,
            f"{lines[seq % len(lines)]} Note {seq}.",
            answer="Sorry, I didn't understand that." if seq % 3 else "Noted.",
            speaker=("Ada", "Bo")[seq % 2],
        )
        for seq in range(start, start + count)
    ]


# -- one line per turn -----------------------------------------------------------------------------


def test_line_is_the_first_sentence_of_message_and_answer():
    """A turn's buffer line is ``#seq speaker: first sentence -> first sentence of the answer``."""
    summarizer = ExtractiveSummarizer()

    line = summarizer.line(turn(7, "I moved to Lisbon. It is sunny!", "Noted. Enjoy.", "Ada"))

    assert line == "#7 Ada: I moved to Lisbon. -> Noted."


def test_line_without_speaker_or_answer():
    """No speaker reads ``user``; a turn without an answer has no arrow."""
    line = ExtractiveSummarizer().line(turn(3, "hello there", answer=None))

    assert line == "#3 user: hello there"


def test_line_collapses_whitespace_and_truncates_long_sentences():
    """Whitespace runs become one space; a sentence over ``line_chars`` ends in an ellipsis."""
    summarizer = ExtractiveSummarizer(line_chars=20)

    line = summarizer.line(turn(1, "  a \n\n b\t" + "x" * 50, answer="y" * 30))

    said, answer = line.removeprefix("#1 user: ").split(" -> ")
    assert said == "a b " + "x" * 15 + "…"
    assert len(said) == 20
    assert answer == "y" * 9 + "…"
    assert len(answer) == 10


# -- what a turn offers the summary ----------------------------------------------------------------


def test_items_are_decisions_facts_open_questions_and_key_sentences():
    """A turn offers its decisions, its facts, its unanswered questions and its best key
    sentences, decisions first, each tagged with the turn and the speaker."""
    summarizer = ExtractiveSummarizer()
    said = (
        "My name is Ada. We agreed to ship on Friday. What is the budget for the launch? "
        "The launch party needs a venue near the station. ok"
    )

    kept = "I can't answer that offline, so I've kept it on your list."
    items = summarizer.items(turn(4, said, answer=kept, speaker="Ada", intent="kept_open"))

    assert [(i.kind, i.text) for i in items] == [
        ("decision", "We agreed to ship on Friday"),
        ("fact", "name: Ada"),
        ("question", "What is the budget for the launch?"),
        ("key", "The launch party needs a venue near the station"),
    ]
    assert {(i.seq, i.who) for i in items} == {(4, "Ada")}


def test_a_fact_whose_key_holds_its_value_says_the_value_once():
    """ "allergy: shellfish", not "allergy shellfish: shellfish"; a favourite keeps its thing
    ("favourite colour: blue")."""
    summarizer = ExtractiveSummarizer()
    facts = [
        i.text
        for said in ("I'm allergic to shellfish", "my favourite colour is blue")
        for i in summarizer.items(turn(2, said, speaker="Dev"))
        if i.kind == "fact"
    ]
    assert facts == ["allergy: shellfish", "favourite colour: blue"]


def test_an_answered_question_is_no_open_question():
    """A question is open by the state's rules: no reply, a reply that kept it open, or one
    that asks back. An answer is an answer even with a "?" or "don't know" in it; a turn
    answered with help or an error text offers nothing at all (its reply is not conversation,
    and a message not understood changes no state)."""
    summarizer = ExtractiveSummarizer()
    question = "When does the train to Lisbon leave?"
    replies = [
        ("At nine.", "llm", []),
        (None, None, ["question"]),
        ("Which train do you mean?", "llm", ["question"]),
        ("I can't answer that offline, so I've kept it on your list.", "kept_open", ["question"]),
        ("I don't know that, sorry.", "llm", []),
        ("At nine. Ask “what is still open?” to see your list.", "ask_fact", []),
        ("Sorry, I didn't understand that. Try “what's my name?” or /help.", "unknown", []),
        ("I'm your offline concierge. I answer “what's my name?”", "help", []),
    ]

    for answer, intent, kinds in replies:
        items = summarizer.items(turn(1, question, answer=answer, intent=intent))
        assert [i.kind for i in items] == kinds, answer


def test_decision_patterns():
    """ "we agreed", "let's go with", "we decided", "[DECISION]" and "decision:" record
    decisions; a question about a decision does not."""
    summarizer = ExtractiveSummarizer()
    decided = [
        "We agreed on Friday at 3",
        "Let's go with the blue design",
        "we've decided to move the launch",
        "[DECISION] Postgres for the database",
        "Decision: weekly releases",
    ]
    for text in decided:
        assert [i.kind for i in summarizer.items(turn(1, text))] == ["decision"], text
    assert summarizer.items(turn(1, "Have we decided on the venue?", answer=None))[0].kind == (
        "question"
    )


def test_key_sentences_are_what_people_said_never_the_bots_answers():
    """Key sentences come from the user's text only, at most ``keys_per_turn``, the ones with
    the most content words; the bot's answers and small talk are not summarised."""
    summarizer = ExtractiveSummarizer(keys_per_turn=1)
    said = "ok. The red bike has a broken chain and a flat tyre. The bike is old."

    items = summarizer.items(turn(1, said, answer="The repair shop opens at nine tomorrow."))

    assert [i.text for i in items] == ["The red bike has a broken chain and a flat tyre"]


def test_a_speaker_name_cannot_break_the_line_format():
    """Colons, brackets and newlines in a speaker name are blanked, so the summary parses back."""
    summarizer = ExtractiveSummarizer(every_n=1, keep_raw=0)

    (state,) = run(summarizer, [turn(1, "We agreed on the plan", speaker="[x]: #1\nevil")])

    assert state.rolling_summary == "[turns 1-1]\n#1 x 1 evil [decision]: We agreed on the plan"


# -- folding ---------------------------------------------------------------------------------------


def test_summary_folds_every_n_turns_keeping_the_last_raw_turns():
    """Every ``every_n`` turns all turns not yet summarised but the last ``keep_raw`` are folded:
    the delta names their range, the buffer and items keep only the raw turns, the version
    counts the folds."""
    summarizer = ExtractiveSummarizer(every_n=5, keep_raw=2)

    states = run(summarizer, [turn(seq) for seq in range(1, 13)])

    for state in states[:4]:
        assert (state.rolling_summary, state.last_summary_delta) == ("", "")
        assert (state.summary_version, state.summarized_through) == (0, 0)
    fifth = states[4]
    assert headers(fifth.last_summary_delta) == ["[turns 1-3]"]
    assert fifth.rolling_summary == fifth.last_summary_delta
    assert labels(fifth.summary_buffer) == ["#4", "#5"]
    assert {item.seq for item in fifth.summary_items} == {4, 5}
    assert (fifth.summary_version, fifth.summarized_through) == (1, 3)
    assert states[5].last_summary_delta == ""  # a delta only on the folding turn
    tenth = states[9]
    assert headers(tenth.last_summary_delta) == ["[turns 4-8]"]
    assert headers(tenth.rolling_summary) == ["[turns 1-3]", "[turns 4-8]"]
    assert tenth.rolling_summary.endswith(tenth.last_summary_delta)
    assert (tenth.summary_version, tenth.summarized_through) == (2, 8)
    assert labels(states[11].summary_buffer) == ["#9", "#10", "#11", "#12"]
    body = tenth.rolling_summary.splitlines()
    assert {line.split()[0] for line in body if not line.startswith("[")} == {
        f"#{n}" for n in range(1, 9)
    }


def test_fold_with_keep_raw_zero_empties_the_buffer():
    """With ``keep_raw=0`` every fold takes all pending turns."""
    state = run(ExtractiveSummarizer(every_n=3, keep_raw=0), [turn(seq) for seq in (1, 2, 3)])[-1]

    assert (state.summary_buffer, state.summary_items) == ((), ())
    assert headers(state.rolling_summary) == ["[turns 1-3]"]


def test_a_delta_keeps_decisions_facts_questions_first_then_ranked_key_sentences():
    """Within ``delta_chars``, a delta takes every decision, fact and open question of the
    window before any key sentence; key sentences follow, best first."""
    summarizer = ExtractiveSummarizer(every_n=4, keep_raw=0, max_summary_chars=1000)
    turns = [
        turn(1, "The garden shed needs a new roof before the winter storms arrive."),
        turn(2, "We agreed to paint the fence green"),
        turn(3, "My name is Ada", answer="Hi Ada."),
        turn(4, "Where do we store the garden tools?", answer=None),
    ]

    delta = run(summarizer, turns)[-1].last_summary_delta

    assert delta.splitlines() == [
        "[turns 1-4]",
        "#2 user [decision]: We agreed to paint the fence green",
        "#3 user [fact]: name: Ada",
        "#4 user [open question]: Where do we store the garden tools?",
        "#1 user: The garden shed needs a new roof before the winter storms arrive",
    ]
    assert len(delta) <= summarizer.delta_chars
    # With room for less, the key sentence is what goes.
    small = ExtractiveSummarizer(every_n=4, keep_raw=0, delta_chars=200)
    assert run(small, turns)[-1].last_summary_delta.splitlines() == delta.splitlines()[:-1]


def test_key_sentences_rank_by_topic_weight_then_term_frequency():
    """With active topics, a sentence on the heaviest topic ranks first; without, the words
    most of the window's turns use win (term frequency within the window)."""
    summarizer = ExtractiveSummarizer(every_n=3, keep_raw=0, keys_per_turn=1)
    turns = [
        turn(1, "The quarterly report needs fresh sales figures"),
        turn(2, "Sales figures came from the regional report"),
        turn(3, "The cat sleeps on the warm windowsill all afternoon"),
    ]
    items = tuple(item for t in turns[:2] for item in summarizer.items(t))
    plain = SessionState(session_id=SID, turn_count=2, summary_items=items)
    topics = (Topic(name="cat", weight=2.0), Topic(name="report", weight=0.5))

    by_frequency = summarizer.fold(plain, turns[2]).last_summary_delta.splitlines()
    by_topic = summarizer.fold(
        plain.model_copy(update={"active_topics": topics}), turns[2]
    ).last_summary_delta.splitlines()

    # "sales", "figures" and "report" are said in two of the three turns.
    assert by_frequency[1] == "#2 user: Sales figures came from the regional report"
    assert by_frequency[-1] == "#3 user: The cat sleeps on the warm windowsill all afternoon"
    assert by_topic[1] == "#3 user: The cat sleeps on the warm windowsill all afternoon"
    assert sorted(by_topic) == sorted(by_frequency)  # the same sentences, ranked otherwise


def test_rolling_summary_stays_bounded_and_compresses_into_a_digest():
    """However long the chat, the summary stays within ``max_summary_chars``; the oldest deltas
    are compressed into one digest at its head, and the newest delta stays whole."""
    summarizer = ExtractiveSummarizer(every_n=10, keep_raw=3, max_summary_chars=800)

    states = run(summarizer, talk(1000))

    assert all(len(state.rolling_summary) <= 800 for state in states)
    assert all(len(state.summary_buffer) <= 13 for state in states)
    assert all(len(state.summary_items) <= 13 * summarizer.items_per_turn for state in states)
    last = states[-1]
    assert len(last.rolling_summary) > 800 - 200  # full
    heads = headers(last.rolling_summary)
    assert heads[0].startswith("[digest of turns 1-")
    assert heads[-1] == "[turns 988-997]"
    assert last.rolling_summary.endswith(last.last_summary_delta)
    assert (last.summary_version, last.summarized_through) == (100, 997)
    assert labels(last.summary_buffer) == ["#998", "#999", "#1000"]


def test_decisions_facts_and_open_questions_survive_compression():
    """A decision, a fact and an open question of the first turns are still in the summary
    after 600 turns of plain talk, while the plain talk of those days is gone."""
    summarizer = ExtractiveSummarizer(every_n=10, keep_raw=3, max_summary_chars=1000)
    opening = [
        turn(1, "We agreed to launch the app in Lisbon", speaker="Ada"),
        turn(2, "I work as a pilot", speaker="Ada"),
        turn(3, "Who books the venue for the launch?", answer=None, speaker="Bo"),
        turn(4, "The early prototype crashed twice during the demo.", speaker="Bo"),
    ]
    chatter = [
        turn(seq, f"Chapter {seq} of the novel describes a storm over the harbour {seq}.")
        for seq in range(5, 601)
    ]

    summary = run(summarizer, opening + chatter)[-1].rolling_summary

    assert "#1 Ada [decision]: We agreed to launch the app in Lisbon" in summary
    assert "#2 Ada [fact]: job: a pilot" in summary
    assert "#3 Bo [open question]: Who books the venue for the launch?" in summary
    assert "prototype" not in summary  # plain talk of the first days compressed away
    assert "[digest of turns 1-" in summary
    assert len(summary) <= 1000


def test_a_restated_fact_replaces_the_old_one_in_the_digest():
    """Compressed into the digest, a fact restated later keeps only its newest value."""
    summarizer = ExtractiveSummarizer(every_n=5, keep_raw=0, max_summary_chars=400)
    turns = [turn(1, "I live in Porto")]
    turns += [turn(seq, f"Lots of words about gardening number {seq} today.") for seq in (2, 3)]
    turns += [turn(4, "I live in Lisbon"), turn(5, "Gardening again")]
    turns += [turn(seq, f"Rose {seq} and tulip {seq} grow well here.") for seq in range(6, 41)]

    summary = run(summarizer, turns)[-1].rolling_summary

    assert "[fact]: location: Lisbon" in summary
    assert "Porto" not in summary


def test_same_input_same_output():
    """Two runs over the same 1,000 turns give byte-identical summaries at every step."""
    first = run(ExtractiveSummarizer(), talk(1000))
    second = run(ExtractiveSummarizer(), talk(1000))

    assert [s.rolling_summary for s in first] == [s.rolling_summary for s in second]
    assert first == second


def test_pending_delta_matches_what_the_next_fold_writes():
    """The pending delta of the unsummarised turns equals the delta a fold of them produces;
    it changes no state."""
    summarizer = ExtractiveSummarizer(every_n=5, keep_raw=2)
    states = run(summarizer, talk(4))
    before = states[-1]

    pending = summarizer.pending_delta(before.model_copy(update={"turn_count": 5}))
    (fifth,) = run(summarizer, talk(1, start=5), before)

    assert pending == fifth.last_summary_delta
    assert summarizer.pending_delta(SessionState(session_id=SID)) == ""
    assert summarizer.pending_delta(states[1]) == ""  # only raw turns pending


def test_an_old_one_line_summary_is_read_and_kept_bounded():
    """A rolling summary of the older one-line-per-turn format is read as a digest, and the
    first fold on top of it keeps it within the bound."""
    summarizer = ExtractiveSummarizer(every_n=10, keep_raw=3, max_summary_chars=600)
    old_lines = [f"#{n} user: Older line {n} of the old format. -> Ok." for n in range(1, 30)]
    legacy = SessionState(
        session_id=SID,
        turn_count=39,
        rolling_summary="\n".join(old_lines)[-590:].split("\n", 1)[1],
        summary_buffer=tuple(summarizer.line(turn(n)) for n in range(37, 40)),
    )

    state = run(summarizer, [turn(40)], legacy)[0]

    assert len(state.rolling_summary) <= 600
    assert state.rolling_summary.startswith("[digest of turns ")
    assert "Older line 29 of the old format" in state.rolling_summary
    assert headers(state.last_summary_delta) == ["[turns 1-37]"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"every_n": 0}, "every_n must be at least 1"),
        ({"every_n": -1}, "every_n must be at least 1"),
        ({"keep_raw": -1}, "every_n must be at least 1"),
        ({"max_summary_chars": 199}, "max_summary_chars must be at least 200"),
        ({"delta_chars": 2000}, "delta_chars must be at least 60"),
        ({"delta_chars": 10}, "delta_chars must be at least 60"),
    ],
)
def test_summarizer_rejects_bad_settings(options, message):
    """Settings out of range are a ValueError that says which."""
    with pytest.raises(ValueError, match=message):
        ExtractiveSummarizer(**options)


@pytest.mark.parametrize("intent", ["unknown", "reminder_unreadable", "help"])
def test_a_help_or_error_reply_is_not_in_the_line(intent):
    """A turn answered with help or an error text keeps the user's words in its line, never
    the reply."""
    line = ExtractiveSummarizer().line(
        turn(5, "blorp the frobs", answer="Sorry, I didn't understand that.", intent=intent)
    )

    assert line == "#5 user: blorp the frobs"
