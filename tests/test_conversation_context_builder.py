"""Tests of :class:`ConversationContextBuilder`: priorities, budget, and size bound of packets.

The budget counts the text :func:`render_packet` makes of a packet (what a reply engine
receives): titles, headers and newlines included. The costs below spell that text out.
"""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.db import Database
from agent.memory import (
    CheckpointWriter,
    ConversationLane,
    ConversationTurn,
    InboundMessage,
    JobRef,
    OpenLoop,
    SessionState,
    render_packet,
)
from agent.memory.conversation_context_builder import ConversationContextBuilder
from agent.memory.conversation_state_manager import ConversationStateManager
from agent.memory.conversation_summarizer import ExtractiveSummarizer
from agent.memory.group_schemas import Decision, Participant, Proposal, Reaction
from agent.memory.packet_lines import earlier_line, earlier_line_floor, render_turn
from agent.memory.schemas import Fact, Memory, PendingClarification, RetrievedItem, Topic, dump_json
from agent.utils.ids import session_id
from agent.utils.tokens import estimate_tokens, tokens_for_chars
from tests.hostile import texts

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SID = "ses_" + "0123456789abcdef" * 2

LOOP = OpenLoop(loop_id="l1", text="L" * 40, opened_turn=1)
QUESTION = PendingClarification(question="Q" * 40, asked_turn=4)


def chars(*lines: str) -> int:
    """What lines add to a rendered packet: each line and its newline."""
    return sum(len(line) + 1 for line in lines)


def smallest_budget(line_chars: int) -> int:
    """The smallest budget whose text holds lines costing ``line_chars`` (the last newline is
    not in the text)."""
    return tokens_for_chars(line_chars - 1)


def turn(seq: int, user: str | None = None, answer: str | None = None) -> ConversationTurn:
    """Turn ``seq``: a 40-char message and a 40-char answer unless told otherwise."""
    return ConversationTurn(
        turn_id=f"trn_{seq:032x}",
        session_id=SID,
        seq=seq,
        user_text=user if user is not None else f"u{seq:03d}".ljust(40, "."),
        assistant_text=answer if answer is not None else f"a{seq:03d}".ljust(40, "."),
        created_at=T0,
    )


def line(label: str) -> str:
    """A 40-char compressed line."""
    return label.ljust(40, ".")


RECENT = [turn(seq) for seq in range(1, 9)]  # the builder takes only the last 3: 6, 7, 8
# Compressed lines of turns 1-8 (the last three are the raw turns); older ones are summarised.
BUFFER = tuple(line(f"#{seq} buffered") for seq in range(1, 9))
SUMMARY_LINES = [line(f"summary line {n}") for n in range(1, 6)]

# The cost of each part, as render_packet writes it.
TITLE = chars(f"Conversation {SID} (8 turns)")
PRIORITY_ONE = TITLE + chars("Open loops:", f"- {LOOP.text}")
PRIORITY_ONE += chars("Waiting for the user to answer:", f"- {QUESTION.question}")
TURNS = chars("Last turns, verbatim:")
TURN = chars("user: " + "u".ljust(40), "assistant: " + "a".ljust(40))
COMPRESSED = chars("Recent turns, compressed:")
SUMMARY = chars("Summary of earlier conversation:")
LINE = chars("l" * 40)


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


def assert_counts_the_rendered_text(packet, budget: int) -> None:
    """The packet's estimate is its rendered text's, within the budget."""
    assert packet.token_estimate == estimate_tokens(render_packet(packet))
    assert packet.token_estimate <= budget


def test_open_loops_and_clarifications_come_first():
    """Room for the open loops and clarifications and 20 characters: they are carried, nothing
    else (the smallest section, a line under its header, takes 67)."""
    budget = smallest_budget(PRIORITY_ONE) + 5

    packet = build(budget)

    assert packet.open_loops == (LOOP,)
    assert packet.pending_clarifications == (QUESTION,)
    assert packet.recent_turns == ()
    assert packet.recent_turn_summaries == ()
    assert packet.rolling_session_summary == ""
    assert_counts_the_rendered_text(packet, budget)


def test_open_loops_beyond_the_budget_are_cut_newest_kept():
    """The budget is a hard limit: when not all open loops fit, the newest that fit are kept,
    the clarifications first, and the text stays within the budget."""
    loops = tuple(
        OpenLoop(loop_id=f"l{n}", text=f"loop {n} ".ljust(200, "x"), opened_turn=n)
        for n in range(1, 21)
    )
    state = tight_state(open_loops=loops)

    packet = build(400, state)

    assert packet.pending_clarifications == (QUESTION,)
    assert 0 < len(packet.open_loops) < len(loops)
    assert packet.open_loops == loops[-len(packet.open_loops) :]
    assert_counts_the_rendered_text(packet, 400)
    assert build(400 + 60, state).open_loops == loops[-len(packet.open_loops) - 1 :]


@pytest.mark.parametrize(
    ("needed", "raw", "compressed", "summary"),
    [
        # Room for one turn and a line: the newest turn raw, the one before it compressed.
        (PRIORITY_ONE + TURNS + TURN + COMPRESSED + LINE, [8], ["#7"], []),
        # Room for two turns, and not for a line more.
        (PRIORITY_ONE + TURNS + 2 * TURN, [7, 8], [], []),
        # Three turns and two lines: the newest unsummarised lines before the raw turns.
        (PRIORITY_ONE + TURNS + 3 * TURN + COMPRESSED + 2 * LINE, [6, 7, 8], ["#4", "#5"], []),
        # All five unsummarised lines and the two newest lines of the rolling summary.
        (
            PRIORITY_ONE + TURNS + 3 * TURN + COMPRESSED + 5 * LINE + SUMMARY + 2 * LINE,
            [6, 7, 8],
            ["#1", "#2", "#3", "#4", "#5"],
            [4, 5],
        ),
        # Everything.
        (40_000, [6, 7, 8], ["#1", "#2", "#3", "#4", "#5"], [1, 2, 3, 4, 5]),
    ],
)
def test_priority_order_under_a_tight_budget(needed, raw, compressed, summary):
    """Loops first, then newest raw turns, then newest compressed lines, then the summary; at
    the smallest budget whose rendered text holds them, nothing more fits."""
    budget = smallest_budget(needed)

    packet = build(budget)

    assert packet.open_loops == (LOOP,)
    assert packet.pending_clarifications == (QUESTION,)
    assert [t.seq for t in packet.recent_turns] == raw
    assert [s.split()[0] for s in packet.recent_turn_summaries] == compressed
    assert packet.rolling_session_summary == "\n".join(SUMMARY_LINES[n - 1] for n in summary)
    assert_counts_the_rendered_text(packet, budget)
    if needed < 40_000:
        assert packet.token_estimate == budget


def test_compressed_lines_of_raw_turns_are_not_repeated():
    """The buffer's last lines belong to the raw turns in the packet and are not added twice."""
    packet = build(budget=10_000)

    texts = [t.user_text for t in packet.recent_turns]
    assert len(texts) == 3
    assert not any(s.startswith(("#6 ", "#7 ", "#8 ")) for s in packet.recent_turn_summaries)


def test_a_retrieved_turn_is_not_repeated_in_short_nor_in_the_summary():
    """A turn the packet carries verbatim among the retrieved ones is in that section only: its
    compressed line and its summary lines are left out, and the room goes to the rest."""
    summary = "[turns 1-4]\n#2 user [fact]: the castle looked grim\n#3 user: we left at dawn"
    state = tight_state(rolling_summary=summary)
    old = turn(2, user="The castle looked grim in the rain")
    retrieved = [RetrievedItem(kind="turn", ref="turn:2", text=render_turn(old), seq=2, score=1)]
    for seq in (4, 5):  # two turns still in the buffer, retrieved too
        retrieved.append(
            RetrievedItem(kind="turn", ref=f"turn:{seq}", text=render_turn(turn(seq)), seq=seq,
                          score=0.5)
        )  # fmt: skip
    builder = ConversationContextBuilder(token_budget=10_000, recent_turns=3)
    packet = builder.build(state, RECENT, now=T0, retrieved=retrieved)

    assert [item.seq for item in packet.retrieved] == [2, 4, 5]
    assert [s[:3] for s in packet.recent_turn_summaries] == ["#1 ", "#3 "]
    assert packet.rolling_session_summary == "[turns 1-4]\n#3 user: we left at dawn"
    rendered = render_packet(packet)
    assert rendered.count("castle looked grim") == 1
    assert_counts_the_rendered_text(packet, 10_000)


def test_retrieved_turns_are_grouped_under_the_day_they_were_said():
    """Each retrieved turn reads ``Ada: ...`` (no seq: a token or two of every line) under one
    ``On <day>:`` line per day, in conversation order; the cost counts each day's line once."""
    days = {3: T0, 4: T0, 9: T0.replace(month=5, day=8)}
    retrieved = [
        RetrievedItem(
            kind="turn",
            ref=f"turn:{seq}",
            text=render_turn(turn(seq).model_copy(update={"created_at": day, "speaker": "Ada"})),
            seq=seq,
            score=1 / seq,
        )
        for seq, day in days.items()
    ]
    builder = ConversationContextBuilder(token_budget=10_000, recent_turns=0)
    packet = builder.build(SessionState(session_id=SID, turn_count=12), [], now=T0,
                           retrieved=retrieved)  # fmt: skip

    lines = render_packet(packet).splitlines()
    start = lines.index("Relevant earlier in this conversation:")
    assert lines[start + 1] == "On 1 Mar 2025:"
    assert lines[start + 2].startswith("Ada: u003")
    assert lines[start + 4].startswith("Ada: u004")
    assert lines[start + 6] == "On 8 May 2025:"
    assert lines[start + 7].startswith("Ada: u009")
    assert_counts_the_rendered_text(packet, 10_000)


@given(
    seq=st.integers(1, 10**12),
    speaker=st.none() | texts(max_size=60),
    said=texts(max_size=300),
    answer=st.none() | texts(max_size=100),
    day=st.datetimes(timezones=st.just(UTC)),
    other=texts(max_size=200),
)
def test_a_retrieved_lines_floor_never_exceeds_its_line(seq, speaker, said, answer, day, other):
    """The packet passes over a retrieved item whose line cannot fit without splitting its
    day off; the length it reads that from is never more than the line's, whatever the turn
    (any seq, speaker or day) and whatever a text that is no rendered turn holds."""
    rendered = turn(seq, said, answer).model_copy(update={"speaker": speaker, "created_at": day})
    for kind, text in (("turn", render_turn(rendered)), ("turn", other), ("summary", other)):
        item = RetrievedItem(kind=kind, ref=f"{kind}:{seq}", text=text, seq=seq)
        assert earlier_line_floor(item) <= len(earlier_line(item)[1])


def test_a_retrieved_turn_too_long_for_the_room_left_leaves_it_to_a_shorter_one():
    """First fit: a retrieved turn longer than what is left is passed over, and a shorter one
    ranked after it still comes."""

    def item(seq: int, words: str) -> RetrievedItem:
        said = turn(seq, words).model_copy(update={"speaker": "Ada"})
        return RetrievedItem(kind="turn", ref=f"turn:{seq}", text=render_turn(said), seq=seq)

    long, short = item(3, "x" * 400), item(4, "short and sweet")
    builder = ConversationContextBuilder(token_budget=60, recent_turns=0)
    packet = builder.build(SessionState(session_id=SID, turn_count=12), [], now=T0,
                           retrieved=[long, short])  # fmt: skip
    assert [i.ref for i in packet.retrieved] == ["turn:4"]
    assert_counts_the_rendered_text(packet, 60)


def test_a_fact_whose_key_holds_its_value_says_it_once():
    """``likes:jazz`` = ``jazz`` reads ``- likes: jazz``, and so does a value said in other
    case (``likes:miles davis`` = ``Miles Davis``); a detail reads as what it is (``- blood
    type: O negative``); other facts read ``key: value``."""
    facts = (
        Fact(key="likes:jazz", value="jazz", turn=1),
        Fact(key="name", value="Ada", turn=2),
        Fact(key="likes:miles davis", value="Miles Davis", turn=3),
        Fact(key="detail:blood type", value="O negative", turn=4),
    )
    builder = ConversationContextBuilder(token_budget=10_000, recent_turns=0)
    packet = builder.build(SessionState(session_id=SID, turn_count=2, facts=facts), [], now=T0)

    lines = render_packet(packet).splitlines()
    assert "- likes: jazz" in lines
    assert "- name: Ada" in lines
    assert "- likes: Miles Davis" in lines
    assert "- blood type: O negative" in lines
    assert_counts_the_rendered_text(packet, 10_000)


@pytest.mark.parametrize("budget", [32, 33, 57, 99, 150, 333, 2000])
def test_token_estimate_is_the_rendered_texts_and_never_exceeds_the_budget(budget):
    """The estimate is that of the text an engine receives, headers included, within budget."""
    state = tight_state(open_loops=(), pending_clarifications=())

    packet = build(budget, state)

    assert_counts_the_rendered_text(packet, budget)


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
    assert_counts_the_rendered_text(packet, 10_000)


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
    """A packet of a new session renders as its title only, and costs what the title does."""
    packet = ConversationContextBuilder().build(SessionState(session_id=SID), [], now=T0)

    assert render_packet(packet) == f"Conversation {SID} (0 turns)"
    assert packet.token_estimate == estimate_tokens(f"Conversation {SID} (0 turns)")


def test_model_summary_comes_last_and_only_whole():
    """A model's summary is carried when the rest leaves room for it whole, never cut."""
    text = "The group chose Lisbon in May.\nAda books the hotel."
    full = build(10_000)
    room_for_it = full.token_estimate + estimate_tokens("\n" + text) + 10
    builder = ConversationContextBuilder(token_budget=room_for_it, recent_turns=3)

    carried = builder.build(tight_state(), RECENT, now=T0, llm_summary=text)
    tight = ConversationContextBuilder(token_budget=full.token_estimate, recent_turns=3)
    left_out = tight.build(tight_state(), RECENT, now=T0, llm_summary=text)

    assert carried.llm_session_summary == text
    assert "The same, as a model summarised it:\n" + text in render_packet(carried)
    assert_counts_the_rendered_text(carried, room_for_it)
    assert left_out.llm_session_summary == ""
    assert left_out == full.model_copy(update={"token_estimate": left_out.token_estimate})
    assert_counts_the_rendered_text(left_out, full.token_estimate)


def test_builder_rejects_bad_settings():
    """A budget below 32 tokens (the title needs room) or a negative turn count is a
    ValueError."""
    with pytest.raises(ValueError, match="token_budget must be at least 32"):
        ConversationContextBuilder(token_budget=31)
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
        assert_counts_the_rendered_text(packet, budget)
        assert len(packet.recent_turns) == 3
        assert len(packet.recent_turn_summaries) <= summarizer.every_n + summarizer.keep_raw
        assert len(packet.rolling_session_summary) <= summarizer.max_summary_chars
        # Every character of the text, headings and newlines included, costs a quarter token.
        assert packet_size(packet) <= 4 * budget
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


# -- the budget counts the rendered text, whatever the state ---------------------------------------

_SHORT = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)


@st.composite
def packet_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """A random session state, last turns, memories, retrieved items and model summary."""
    few = {"min_size": 0, "max_size": 5}
    turn_count = draw(st.integers(0, 10**6))
    loops = draw(
        st.lists(
            st.builds(
                OpenLoop,
                loop_id=st.from_regex(r"loop-[0-9]{1,4}", fullmatch=True),
                text=texts(max_size=120),
                kind=st.sampled_from(["todo", "commitment", "request", "question"]),
                opened_turn=st.integers(1, 99),
                owner=st.none() | _SHORT,
            ),
            **few,
        )
    )
    jobs = draw(
        st.lists(
            st.builds(
                JobRef,
                job_id=st.from_regex(r"reminder:[0-9]{1,4}", fullmatch=True),
                kind=st.just("reminder"),
                label=_SHORT,
            ),
            **few,
        )
    )
    proposals = draw(
        st.lists(
            st.builds(
                Proposal,
                proposal_id=st.from_regex(r"prop-[0-9]{1,3}", fullmatch=True),
                proposer=_SHORT,
                text=texts(max_size=80),
                proposed_turn=st.integers(1, 99),
                reactions=st.lists(
                    st.builds(
                        Reaction,
                        participant=_SHORT,
                        stance=st.sampled_from(["support", "oppose", "neutral"]),
                        turn=st.integers(1, 99),
                    ),
                    max_size=3,
                ).map(tuple),
            ),
            **few,
        )
    )
    decisions = draw(
        st.lists(
            st.builds(
                Decision,
                decision_id=st.from_regex(r"dec-[0-9]{1,3}", fullmatch=True),
                outcome=texts(max_size=80),
                decided_by=_SHORT,
                decided_turn=st.integers(1, 99),
                supporters=st.lists(_SHORT, max_size=3).map(tuple),
            ),
            **few,
        )
    )
    topics = draw(st.lists(st.builds(Topic, name=_SHORT), max_size=8))
    targets = [lp.loop_id for lp in loops] + [j.job_id for j in jobs]
    targets += [p.proposal_id for p in proposals] + [d.decision_id for d in decisions]
    targets += [f"topic:{t.name}" for t in topics] + ["topic:elsewhere"]
    state = SessionState(
        session_id=session_id(),
        chat_type=draw(st.sampled_from(["private", "group"])),
        turn_count=turn_count,
        open_loops=tuple(loops),
        pending_clarifications=tuple(
            draw(
                st.lists(
                    st.builds(
                        PendingClarification, question=texts(max_size=80), asked_turn=st.just(1)
                    ),
                    max_size=5,
                )
            )
        ),
        active_job_refs=tuple(jobs),
        facts=tuple(
            draw(st.lists(st.builds(Fact, key=_SHORT, value=texts(max_size=60), turn=st.just(1))))
        ),
        decisions=tuple(decisions),
        proposals=tuple(proposals),
        participants=tuple(
            draw(
                st.lists(
                    st.builds(
                        Participant,
                        participant_id=_SHORT,
                        name=_SHORT,
                        message_count=st.integers(0, 999),
                        last_position=texts(max_size=60),
                    ),
                    **few,
                )
            )
        ),
        active_topics=tuple(topics),
        resolved_entities=draw(st.dictionaries(_SHORT, st.sampled_from(targets), max_size=6)),
        summary_buffer=tuple(draw(st.lists(texts(max_size=160), max_size=13))),
        rolling_summary=draw(texts(max_size=2000)),
    )
    recent = [
        ConversationTurn(
            turn_id=f"trn_{seq:032x}",
            session_id=state.session_id,
            seq=seq,
            user_text=draw(texts(max_size=200)),
            assistant_text=draw(st.none() | texts(max_size=200)),
            speaker=draw(st.none() | _SHORT),
            created_at=T0,
        )
        for seq in range(max(turn_count - draw(st.integers(0, 5)) + 1, 1), turn_count + 1)
    ]
    memories = [
        Memory(
            memory_id=f"mem_{n}",
            chat_id=1,
            kind="fact",
            subject=draw(st.just("user") | _SHORT),
            attribute=draw(_SHORT),
            key=draw(_SHORT),
            text=draw(texts(max_size=120)),
            confidence=0.9,
            importance=0.5,
            status=draw(st.sampled_from(["active", "candidate"])),
            valid_from=T0,
            valid_until=draw(st.none() | st.just(T0)),
            created_at=T0,
            updated_at=T0,
            last_accessed_at=T0,
        )
        for n in range(draw(st.integers(0, 6)))
    ]
    retrieved = draw(
        st.lists(
            st.one_of(
                st.builds(
                    RetrievedItem,
                    kind=st.just("turn"),
                    ref=st.integers(1, turn_count + 1).map(lambda seq: f"turn:{seq}"),
                    text=texts(max_size=300),
                    seq=st.integers(1, 99),
                ),
                st.builds(
                    RetrievedItem,
                    kind=st.just("summary"),
                    ref=st.integers(1, 9).map(lambda n: f"summary:{n}"),
                    text=texts(max_size=300),
                    seq=st.integers(1, 99),
                ),
                st.builds(
                    RetrievedItem,
                    kind=st.just("memory"),
                    ref=st.integers(0, 9).map(lambda n: f"mem_{n}"),
                    text=texts(max_size=120),
                ),
            ),
            max_size=12,
        )
    )
    return {
        "builder": ConversationContextBuilder(
            token_budget=draw(st.integers(32, 3000)),
            recent_turns=draw(st.integers(0, 5)),
            state_share=draw(st.floats(0, 1)),
        ),
        "state": state,
        "recent": recent,
        "memories": memories,
        "retrieved": retrieved,
        "llm_summary": draw(st.just("") | texts(max_size=600)),
    }


@given(packet_inputs())
def test_rendered_packet_never_exceeds_the_budget_whatever_the_state(inputs):
    """For any state, turns, memories and retrieved items (odd characters, line separators,
    4,096-character texts), the text an engine receives is within the budget, and the packet's
    estimate is that text's."""
    builder = inputs.pop("builder")
    state, recent = inputs.pop("state"), inputs.pop("recent")

    packet = builder.build(state, recent, now=T0, **inputs)

    assert_counts_the_rendered_text(packet, builder.token_budget)
    assert set(packet.open_loops) <= set(state.open_loops)


# -- ... and over real conversations (LoCoMo) ------------------------------------------------------

LOCOMO = Path("/work/shared/data/locomo-dev.json")
needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not at {LOCOMO}")


def locomo_turns(sample: dict[str, Any], sid: str) -> list[ConversationTurn]:
    """A LoCoMo conversation as one group chat's turns, both speakers members, no replies."""
    conversation = sample["conversation"]
    numbers = sorted(
        int(key.split("_")[1])
        for key, value in conversation.items()
        if key.startswith("session_") and isinstance(value, list)
    )
    utterances = [u for n in numbers for u in conversation[f"session_{n}"]]
    return [
        ConversationTurn(
            turn_id=f"trn_{seq:032x}",
            session_id=sid,
            seq=seq,
            user_text=f"{u['text']} [shares an image: {u['blip_caption']}]"
            if u.get("blip_caption")
            else u["text"],
            speaker=u["speaker"],
            created_at=T0,
            status="recorded",
        )
        for seq, u in enumerate(utterances, start=1)
    ]


@functools.cache
def locomo_states() -> list[tuple[list[ConversationTurn], list[SessionState]]]:
    """Each LoCoMo conversation's turns and the state after each turn (the real rules)."""
    folded = []
    for sample in json.loads(LOCOMO.read_text(encoding="utf-8")):
        manager = ConversationStateManager(ExtractiveSummarizer())
        state = SessionState(session_id=session_id(), chat_type="group")
        turns = locomo_turns(sample, state.session_id)
        states = []
        for t in turns:
            state = manager.apply(state, t)
            states.append(state)
        folded.append((turns, states))
    return folded


@needs_locomo
@given(
    conversation=st.integers(0, 99),
    position=st.floats(0, 1),
    budget=st.integers(32, 4000),
    recent_turns=st.integers(0, 5),
    picks=st.lists(st.floats(0, 1), max_size=40),
)
def test_rendered_packet_never_exceeds_the_budget_over_locomo_turns(
    conversation, position, budget, recent_turns, picks
):
    """At any point of a real group chat (LoCoMo), with older turns retrieved as the retriever
    renders them, the rendered packet is within the budget and its estimate is exact."""
    turns, states = locomo_states()[conversation % len(locomo_states())]
    at = int(position * (len(turns) - 1))
    older = turns[:at] or turns[:1]
    retrieved = [
        RetrievedItem(kind="turn", ref=f"turn:{t.seq}", text=render_turn(t), seq=t.seq)
        for t in (older[int(pick * (len(older) - 1))] for pick in picks)
    ]
    builder = ConversationContextBuilder(token_budget=budget, recent_turns=recent_turns)

    packet = builder.build(states[at], turns[: at + 1], now=T0, retrieved=retrieved)

    assert_counts_the_rendered_text(packet, budget)


@needs_locomo
async def test_lane_packets_of_locomo_questions_stay_within_the_budget(
    db_path, checkpoint_dir, engine
):
    """Through the real lane (turn path, FTS5 retrieval, memories), the packet a LoCoMo
    question gets renders within the budget at every budget, its estimate exact."""
    sample = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]
    chat_id = -4242
    lane = ConversationLane(
        await Database(db_path, durability="process").open(), CheckpointWriter(checkpoint_dir)
    )
    try:
        await lane.hydrate()
        for n, t in enumerate(locomo_turns(sample, "")[:300], start=1):
            message = InboundMessage(
                chat_id=chat_id,
                text=t.user_text,
                chat_type="group",
                speaker=t.speaker,
                update_id=n,
                wants_reply=False,
                received_at=T0,
            )
            await lane.on_turn(message, engine)
    finally:
        await lane.shutdown()
    questions = [str(qa["question"]) for qa in sample["qa"]][::10]
    for budget in (100, 1000, 2000):
        lane = ConversationLane(
            await Database(db_path, durability="process").open(),
            CheckpointWriter(checkpoint_dir),
            builder=ConversationContextBuilder(token_budget=budget),
        )
        try:
            await lane.hydrate()
            for question in questions:
                packet = await lane.inspector.context(chat_id, question)
                assert packet is not None
                assert packet.retrieved or budget < 1000  # the budget is used, not left empty
                assert_counts_the_rendered_text(packet, budget)
        finally:
            await lane.shutdown()
