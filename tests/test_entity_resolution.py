"""Tests of the resolved entities: what "that task", "the reminder", "it" refer to."""

from __future__ import annotations

from agent.memory import JobRef, OpenLoop
from agent.memory.group_schemas import Decision, Proposal
from agent.memory.rules.entity_resolution import resolve_entities
from agent.memory.schemas import Topic

LOOP = OpenLoop(loop_id="loop-1-1", text="book the hotel", opened_turn=1)
JOB = JobRef(job_id="job_9", kind="reminder", label="call mom")
TOPIC = Topic(name="lisbon", weight=1.0, last_turn=1)


def resolve(previous=None, **fields):
    values = {"topics": (), "loops": (), "jobs": (), "proposals": (), "decisions": ()}
    values.update(fields)
    return resolve_entities(previous or {}, **values)


def test_a_new_job_takes_the_task_the_reminder_and_the_pronouns():
    """A reminder scheduled now is "that task", "the reminder" and "it"."""
    found = resolve(loops=(LOOP,), jobs=(JOB,), scheduled=(JOB,))

    assert found["that task"] == found["the reminder"] == found["it"] == "job_9"


def test_a_topic_steers_it_only_without_a_concrete_referent():
    """A topic mentioned now points "it" to itself unless "it" names a job, loop, proposal or
    decision still there; it never becomes "that task"."""
    assert resolve(topics=(TOPIC,), mentioned=("lisbon",))["it"] == "topic:lisbon"

    kept = resolve({"it": "job_9"}, topics=(TOPIC,), jobs=(JOB,), mentioned=("lisbon",))
    assert kept["it"] == "job_9"
    assert kept["that task"] == "job_9"


def test_a_vanished_target_falls_back_to_the_newest_of_its_kind():
    """A job that fired no longer resolves; "that task" and "it" fall back to the newest loop."""
    previous = {"that task": "job_9", "it": "job_9", "the reminder": "job_9"}
    newer = OpenLoop(loop_id="loop-4-1", text="pack", opened_turn=4)

    found = resolve(previous, loops=(LOOP, newer))

    assert found["that task"] == found["it"] == "loop-4-1"
    assert "the reminder" not in found


def test_proposals_and_decisions_are_named_by_their_phrases():
    """The latest proposal touched is "the proposal"; a decision is "the decision" and "it"."""
    proposal = Proposal(proposal_id="proposal-2", proposer="Ann", text="pizza", proposed_turn=2)
    decision = Decision(decision_id="decision-3", outcome="pizza", decided_by="Bo", decided_turn=3)

    found = resolve(
        proposals=(proposal,),
        decisions=(decision,),
        proposal_id="proposal-2",
        decision_id="decision-3",
    )

    assert found["the proposal"] == found["that idea"] == "proposal-2"
    assert found["the decision"] == found["it"] == "decision-3"


def test_nothing_to_refer_to_resolves_nothing():
    """An empty session resolves no phrase; the map never holds more than the fixed phrases."""
    assert resolve() == {}
    every = resolve(
        topics=(TOPIC,), loops=(LOOP,), jobs=(JOB,), scheduled=(JOB,), mentioned=("lisbon",)
    )
    assert len(every) <= 13
