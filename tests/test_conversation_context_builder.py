"""Tests of :class:`ConversationContextBuilder`: priorities, budget, and size bound of packets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.memory import (
    ConversationContextBuilder,
    ConversationStateManager,
    ConversationTurn,
    ExtractiveSummarizer,
    JobRef,
    OpenLoop,
    PendingClarification,
    SessionState,
    render_packet,
)
from agent.memory.schemas import dump_json
from agent.utils.tokens import estimate_tokens

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2

# Every text below has a length divisible by 4, so its token estimate is exact: 40 chars = 10.
LOOP = OpenLoop(loop_id="l1", text="L" * 40, opened_turn=1)  # 10 tokens
QUESTION = PendingClarification(question="Q" * 40, asked_turn=4)  # 10 tokens
PRIORITY_ONE = 20


def turn(seq: int, user: str | None = None, answer: str | None = None) -> ConversationTurn:
    """Turn ``seq``: 20 tokens (a 40-char message and a 40-char answer) unless told otherwise."""
    return ConversationTurn(
        turn_id=f"trn_{seq:032x}",
        session_id=SID,
        seq=seq,
        user_text=user if user is not None else f"u{seq:03d}".ljust(40, "."),
        assistant_text=answer if answer is not None else f"a{seq:03d}".ljust(40, "."),
        created_at=T0,
    )


def line(label: str) -> str:
    """A 40-char compressed line (10 tokens)."""
    return label.ljust(40, ".")


RECENT = [turn(seq) for seq in range(1, 9)]  # the builder takes only the last 3: 6, 7, 8
# Compressed lines of turns 1-8 (the last three are the raw turns); older ones are summarised.
BUFFER = tuple(line(f"#{seq} buffered") for seq in range(1, 9))
SUMMARY_LINES = [line(f"summary line {n}") for n in range(1, 6)]


def tight_state(**changes: object) -> SessionState:
    state = SessionState(
        session_id=SID,
        turn_count=8,
        open_loops=(LOOP,),
        pending_clarifications=(QUESTION,),
        summary_buffer=BUFFER,
        rolling_summary="\n".join(SUMMARY_LINES),
    )
    return state.model_copy(update=changes)


def build(budget: int, state: SessionState | None = None):
    builder = ConversationContextBuilder(token_budget=budget, recent_turns=3)
    return builder.build(state or tight_state(), RECENT, now=T0)


def test_open_loops_and_clarifications_are_always_included():
    """Open loops and clarifications are carried even when they alone exceed the budget."""
    packet = build(budget=5)

    assert packet.open_loops == (LOOP,)
    assert packet.pending_clarifications == (QUESTION,)
    assert packet.recent_turns == ()
    assert packet.recent_turn_summaries == ()
    assert packet.rolling_session_summary == ""
    assert packet.token_estimate == PRIORITY_ONE


@pytest.mark.parametrize(
    ("budget", "raw", "compressed", "summary"),
    [
        # Room for one and a half turns: the newest turn raw, the one before it compressed.
        (PRIORITY_ONE + 30, [8], ["#7"], []),
        # Nine tokens short of a third turn, and a line (10) does not fit either.
        (PRIORITY_ONE + 49, [7, 8], [], []),
        # Three turns and two lines: the newest unsummarised lines before the raw turns.
        (PRIORITY_ONE + 60 + 20, [6, 7, 8], ["#4", "#5"], []),
        # All five unsummarised lines and the two newest lines of the rolling summary.
        (PRIORITY_ONE + 60 + 50 + 20, [6, 7, 8], ["#1", "#2", "#3", "#4", "#5"], [4, 5]),
        # Everything.
        (10_000, [6, 7, 8], ["#1", "#2", "#3", "#4", "#5"], [1, 2, 3, 4, 5]),
    ],
)
def test_priority_order_under_a_tight_budget(budget, raw, compressed, summary):
    """Loops first, then newest raw turns, then newest compressed lines, then the summary."""
    packet = build(budget)

    assert packet.open_loops == (LOOP,)
    assert packet.pending_clarifications == (QUESTION,)
    assert [t.seq for t in packet.recent_turns] == raw
    assert [s.split()[0] for s in packet.recent_turn_summaries] == compressed
    assert packet.rolling_session_summary == "\n".join(SUMMARY_LINES[n - 1] for n in summary)
    expected = PRIORITY_ONE + 20 * len(raw) + 10 * len(compressed) + 10 * len(summary)
    assert packet.token_estimate == expected
    assert packet.token_estimate <= budget


def test_compressed_lines_of_raw_turns_are_not_repeated():
    """The buffer's last lines belong to the raw turns in the packet and are not added twice."""
    packet = build(budget=10_000)

    texts = [t.user_text for t in packet.recent_turns]
    assert len(texts) == 3
    assert not any(s.startswith(("#6 ", "#7 ", "#8 ")) for s in packet.recent_turn_summaries)


@pytest.mark.parametrize("budget", [1, 25, 57, 99, 150, 333, 2000])
def test_token_estimate_never_exceeds_the_budget(budget):
    """Without open loops, the packet's token estimate is at most the budget."""
    state = tight_state(open_loops=(), pending_clarifications=())

    packet = build(budget, state)

    assert packet.token_estimate <= budget
    content = [t.user_text for t in packet.recent_turns]
    content += [t.assistant_text or "" for t in packet.recent_turns]
    content += list(packet.recent_turn_summaries)
    content += packet.rolling_session_summary.splitlines()
    assert packet.token_estimate == sum(estimate_tokens(text) for text in content)


def test_packet_carries_state_fields():
    """The packet names its session and carries status, jobs, turn count and compile time."""
    refs = (JobRef(job_id="reminder:1", kind="reminder", label="call mum at 5"),)
    state = tight_state(status="resuming", active_job_refs=refs, last_response_type="action")

    packet = build(10_000, state)

    assert packet.conversation_id == SID
    assert packet.session_status == "resuming"
    assert packet.active_job_refs == refs
    assert packet.last_response_type == "action"
    assert packet.turn_count == 8
    assert packet.context_compiled_at == T0
    assert packet.token_estimate == PRIORITY_ONE + estimate_tokens("call mum at 5") + 60 + 50 + 50


def test_render_packet_contains_every_section():
    """The rendered packet has a titled section for each part, raw turns last."""
    refs = (JobRef(job_id="reminder:1", kind="reminder", label="call mum at 5"),)
    packet = build(10_000, tight_state(active_job_refs=refs))

    rendered = render_packet(packet)

    headings = [
        f"Conversation {SID} (8 turns)",
        "Open loops:",
        "Waiting for the user to answer:",
        "Scheduled jobs:",
        "Summary of earlier conversation:",
        "Recent turns, compressed:",
        "Last turns, verbatim:",
    ]
    positions = [rendered.index(heading) for heading in headings]
    assert positions == sorted(positions)
    assert f"- {LOOP.text}" in rendered
    assert f"- {QUESTION.question}" in rendered
    assert "- call mum at 5" in rendered
    assert SUMMARY_LINES[0] in rendered
    assert BUFFER[0] in rendered
    assert f"user: {RECENT[-1].user_text}" in rendered
    assert f"assistant: {RECENT[-1].assistant_text}" in rendered
    assert RECENT[0].user_text not in rendered


def test_render_packet_of_an_empty_session_is_one_line():
    """A packet of a new session renders as its title only."""
    packet = ConversationContextBuilder().build(SessionState(session_id=SID), [], now=T0)

    assert render_packet(packet) == f"Conversation {SID} (0 turns)"
    assert packet.token_estimate == 0


def test_builder_rejects_bad_settings():
    """A budget below one token or a negative turn count is a ValueError."""
    with pytest.raises(ValueError, match="token_budget must be positive"):
        ConversationContextBuilder(token_budget=0)
    with pytest.raises(ValueError, match="recent_turns not negative"):
        ConversationContextBuilder(recent_turns=-1)


# -- packet size does not grow with the history ----------------------------------------------------


def talk_turn(seq: int) -> ConversationTurn:
    return ConversationTurn(
        turn_id=f"trn_{seq:032x}",
        session_id=SID,
        seq=seq,
        user_text=f"Message number {seq} about the project plan. Some more detail follows here.",
        assistant_text=f"Noted item {seq}. I will keep it in mind.",
        created_at=T0,
    )


def state_after(turns: list[ConversationTurn], start: SessionState) -> SessionState:
    manager = ConversationStateManager(ExtractiveSummarizer(every_n=10, keep_raw=3))
    state = start
    for t in turns:
        state = manager.apply(state, t)
    return state


def packet_size(packet) -> int:
    return len(render_packet(packet))


def test_packet_size_is_bounded_whatever_the_history_length():
    """A packet after 100,000 turns is no bigger than the budget allows, like one after 10."""
    budget = 2000
    builder = ConversationContextBuilder(token_budget=budget, recent_turns=3)
    summarizer = ExtractiveSummarizer(every_n=10, keep_raw=3)

    short_turns = [talk_turn(seq) for seq in range(1, 11)]
    short = state_after(short_turns, SessionState(session_id=SID))

    # 100,000 turns, simulated: the rolling summary at its bound, then ten real turns on top.
    summary_lines: list[str] = []
    size = 0
    seq = 99_987
    while size + 80 <= summarizer.max_summary_chars:
        text = summarizer.line(talk_turn(seq))[:79]
        summary_lines.insert(0, text)
        size += len(text) + 1
        seq -= 1
    long_start = SessionState(
        session_id=SID,
        turn_count=99_990,
        rolling_summary="\n".join(summary_lines),
        summary_buffer=tuple(summarizer.line(talk_turn(n)) for n in range(99_988, 99_991)),
    )
    long_turns = [talk_turn(seq) for seq in range(99_991, 100_001)]
    long = state_after(long_turns, long_start)
    assert long.turn_count == 100_000
    assert len(long.rolling_summary) <= summarizer.max_summary_chars
    assert len(long.rolling_summary) > summarizer.max_summary_chars - 200  # at its bound

    short_packet = builder.build(short, short_turns, now=T0)
    long_packet = builder.build(long, long_turns, now=T0)

    for packet in (short_packet, long_packet):
        assert packet.token_estimate <= budget
        assert len(packet.recent_turns) == 3
        assert len(packet.recent_turn_summaries) <= summarizer.every_n + summarizer.keep_raw
        assert len(packet.rolling_session_summary) <= summarizer.max_summary_chars
        # Every character of content costs a quarter token; headings add a fixed amount.
        assert packet_size(packet) <= 4 * budget + 400
        assert len(dump_json(packet)) <= 4 * budget + 4000
    assert long_packet.turn_count == 100_000
    assert [t.seq for t in long_packet.recent_turns] == [99_998, 99_999, 100_000]
    # The long packet is larger only by what the bounded summary holds, not by its history.
    assert (
        packet_size(long_packet) - packet_size(short_packet) <= summarizer.max_summary_chars + 200
    )


def test_builder_reads_only_the_last_turns_it_is_given():
    """Handing the builder a long turn list yields the same packet as its last turns alone."""
    many = [talk_turn(seq) for seq in range(1, 1001)]
    state = state_after(many, SessionState(session_id=SID))
    builder = ConversationContextBuilder(recent_turns=3)

    assert builder.build(state, many, now=T0) == builder.build(state, many[-3:], now=T0)
