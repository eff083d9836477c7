"""Tests of :class:`ExtractiveSummarizer`: deterministic, bounded compression of turns."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.memory import (
    ConversationStateManager,
    ConversationTurn,
    ExtractiveSummarizer,
    SessionState,
    SummaryFold,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2


def turn(
    seq: int, user: str | None = None, answer: str | None = "Ok.", speaker: str | None = None
) -> ConversationTurn:
    return ConversationTurn(
        turn_id=f"trn_{seq:032x}",
        session_id=SID,
        seq=seq,
        user_text=user if user is not None else f"Point {seq}. Detail {seq}.",
        assistant_text=answer,
        speaker=speaker,
        created_at=T0,
    )


def run(summarizer: ExtractiveSummarizer, count: int) -> list[SummaryFold]:
    """Fold ``count`` turns one by one; return the fold after each."""
    folds: list[SummaryFold] = []
    summary, buffer = "", ()
    for seq in range(1, count + 1):
        result = summarizer.fold(summary, buffer, turn(seq))
        folds.append(result)
        summary, buffer = result.rolling_summary, result.summary_buffer
    return folds


def labels(lines: tuple[str, ...] | list[str]) -> list[str]:
    return [line.split()[0] for line in lines]


# -- one line per turn -----------------------------------------------------------------------------


def test_line_is_the_first_sentence_of_message_and_answer():
    """A turn's line is ``#seq speaker: first sentence -> first sentence of the answer``."""
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


# -- folding ---------------------------------------------------------------------------------------


def test_summary_folds_every_n_turns_keeping_the_last_raw_lines():
    """Every ``every_n`` turns all lines but the last ``keep_raw`` move into the summary."""
    summarizer = ExtractiveSummarizer(every_n=5, keep_raw=2)

    folds = run(summarizer, 12)

    for seq in range(1, 5):
        assert folds[seq - 1].rolling_summary == ""
        assert folds[seq - 1].last_summary_delta == ""
        assert labels(folds[seq - 1].summary_buffer) == [f"#{n}" for n in range(1, seq + 1)]
    fifth = folds[4]
    assert labels(fifth.rolling_summary.splitlines()) == ["#1", "#2", "#3"]
    assert labels(fifth.last_summary_delta.splitlines()) == ["#1", "#2", "#3"]
    assert labels(fifth.summary_buffer) == ["#4", "#5"]
    assert folds[5].last_summary_delta == ""  # a delta only on the folding turn
    tenth = folds[9]
    assert labels(tenth.last_summary_delta.splitlines()) == ["#4", "#5", "#6", "#7", "#8"]
    assert labels(tenth.rolling_summary.splitlines()) == [f"#{n}" for n in range(1, 9)]
    assert labels(tenth.summary_buffer) == ["#9", "#10"]
    assert labels(folds[11].summary_buffer) == ["#9", "#10", "#11", "#12"]


def test_fold_with_keep_raw_zero_empties_the_buffer():
    """With ``keep_raw=0`` every fold moves all pending lines into the summary."""
    folds = run(ExtractiveSummarizer(every_n=3, keep_raw=0), 3)

    assert folds[-1].summary_buffer == ()
    assert labels(folds[-1].rolling_summary.splitlines()) == ["#1", "#2", "#3"]


def test_rolling_summary_stays_bounded_after_1000_turns():
    """However long the chat, the summary stays within ``max_summary_chars``, newest kept."""
    summarizer = ExtractiveSummarizer(every_n=10, keep_raw=3, max_summary_chars=500)

    folds = run(summarizer, 1000)

    assert all(len(f.rolling_summary) <= 500 for f in folds)
    assert all(len(f.summary_buffer) <= 10 + 3 for f in folds)
    last = folds[-1]
    assert len(last.rolling_summary) > 500 - 40  # full: older lines were dropped
    lines = last.rolling_summary.splitlines()
    assert lines[-1].startswith("#997 ")  # the newest folded turn is kept
    assert labels(lines) == [f"#{n}" for n in range(998 - len(lines), 998)]
    assert labels(last.summary_buffer) == ["#998", "#999", "#1000"]


def test_rolling_summary_bounded_through_the_state_manager():
    """The session state's summary stays bounded after 1,000 turns with default settings."""
    summarizer = ExtractiveSummarizer()
    manager = ConversationStateManager(summarizer)
    state = SessionState(session_id=SID)

    for seq in range(1, 1001):
        state = manager.apply(state, turn(seq, user=f"Point {seq} " + "z" * 100 + ". More."))
        assert len(state.rolling_summary) <= summarizer.max_summary_chars

    assert len(state.rolling_summary) > summarizer.max_summary_chars - 200
    assert len(state.summary_buffer) == summarizer.keep_raw


def test_same_input_same_output():
    """Two runs over the same turns give identical folds at every step."""
    assert run(ExtractiveSummarizer(), 137) == run(ExtractiveSummarizer(), 137)
    summarizer = ExtractiveSummarizer(every_n=4, keep_raw=1)
    buffer = ("#1 user: a", "#2 user: b", "#3 user: c")
    assert summarizer.fold("old", buffer, turn(4)) == summarizer.fold("old", buffer, turn(4))


def test_pending_delta_joins_lines_without_folding():
    """``pending_delta`` is the lines joined in order; it changes no state."""
    summarizer = ExtractiveSummarizer()
    buffer = ("#1 user: a", "#2 user: b")

    assert summarizer.pending_delta(buffer) == "#1 user: a\n#2 user: b"
    assert summarizer.pending_delta(()) == ""
    assert buffer == ("#1 user: a", "#2 user: b")


def test_pending_delta_matches_what_the_next_fold_writes():
    """The delta of pending lines equals the delta a fold of those same lines produces."""
    summarizer = ExtractiveSummarizer(every_n=5, keep_raw=2)
    folds = run(summarizer, 4)
    buffer = folds[-1].summary_buffer

    fifth = summarizer.fold(folds[-1].rolling_summary, buffer, turn(5))

    assert fifth.last_summary_delta == summarizer.pending_delta(buffer[:3])


@pytest.mark.parametrize(("every_n", "keep_raw"), [(0, 3), (-1, 3), (10, -1)])
def test_summarizer_rejects_bad_settings(every_n, keep_raw):
    """``every_n`` below one or a negative ``keep_raw`` is a ValueError."""
    with pytest.raises(ValueError, match="every_n must be at least 1"):
        ExtractiveSummarizer(every_n=every_n, keep_raw=keep_raw)
