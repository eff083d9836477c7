"""What "that task", "the reminder", "it" refer to: the session's resolved entities.

After every turn the state maps a fixed set of referring phrases to what they most recently
point to (the packet's ``resolved_entities_map``, so the reply engine reads "cancel that task"
as "cancel job_..."):

============================================  ==============================================
phrase                                        points to
============================================  ==============================================
"that task", "the task", "this task"          the latest to-do / request / promise or job
"the reminder", "that reminder", "my          the latest reminder job
reminder"
"the proposal", "that proposal", "that idea"  the latest proposal made or reacted to (groups)
"the decision", "that decision"               the latest decision (groups)
"it", "that"                                  the latest of all these; else the heaviest
                                              topic the last message mentioned
============================================  ==============================================

Targets are ids: a job id, a loop id (``loop-<seq>-<n>``), ``proposal-<seq>``,
``decision-<seq>``, or ``topic:<name>``. A concrete target (job, loop, proposal, decision) is
replaced only by a newer concrete one; a topic only steers "it" and "that" when they point to
no concrete target. A target that leaves the state (a job done, a loop closed, a topic
decayed) is replaced by the newest remaining one of its kind. A pure function: same state and
turn, same map (I6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent.memory.group_schemas import Decision, Proposal
from agent.memory.schemas import JobRef, OpenLoop, Topic

__all__ = [
    "DECISION_PHRASES",
    "PRONOUNS",
    "PROPOSAL_PHRASES",
    "REMINDER_PHRASES",
    "TASK_PHRASES",
    "resolve_entities",
]

PRONOUNS = ("it", "that")
TASK_PHRASES = ("that task", "the task", "this task")
REMINDER_PHRASES = ("the reminder", "that reminder", "my reminder")
PROPOSAL_PHRASES = ("the proposal", "that proposal", "that idea")
DECISION_PHRASES = ("the decision", "that decision")
_TOPIC = "topic:"


def _last(ids: Sequence[str]) -> str | None:
    return ids[-1] if ids else None


def resolve_entities(
    previous: Mapping[str, str],
    *,
    topics: Sequence[Topic],
    loops: Sequence[OpenLoop],
    jobs: Sequence[JobRef],
    proposals: Sequence[Proposal],
    decisions: Sequence[Decision],
    mentioned: Sequence[str] = (),
    opened_loops: Sequence[OpenLoop] = (),
    scheduled: Sequence[JobRef] = (),
    proposal_id: str | None = None,
    decision_id: str | None = None,
) -> dict[str, str]:
    """Return the resolved entities after a turn.

    Args:
        previous: the map before the turn.
        topics: the active topics after it (heaviest first).
        loops: the open loops after it.
        jobs: the active jobs after it.
        proposals: the proposals after it.
        decisions: the decisions after it.
        mentioned: the key phrases the turn's message mentioned.
        opened_loops: the loops the turn opened.
        scheduled: the jobs the turn scheduled.
        proposal_id: the proposal the turn made or reacted to.
        decision_id: the decision the turn recorded.
    """
    loop_ids = [lp.loop_id for lp in loops]
    job_ids = [job.job_id for job in jobs]
    reminder_ids = [job.job_id for job in jobs if job.kind == "reminder"]
    active_ids = [p.proposal_id for p in proposals if p.status == "active"]
    decision_ids = [d.decision_id for d in decisions]
    topic_ids = [_TOPIC + t.name for t in topics]
    valid = {
        *loop_ids,
        *job_ids,
        *(p.proposal_id for p in proposals),
        *decision_ids,
        *topic_ids,
    }
    found = {phrase: target for phrase, target in previous.items() if target in valid}

    def point(phrases: Sequence[str], target: str) -> None:
        for phrase in phrases:
            found[phrase] = target

    # Topics first (the weakest), then in order of concreteness: the last write wins.
    heard = set(mentioned)
    top = next((_TOPIC + t.name for t in topics if t.name in heard), None)
    if top is not None:
        for pronoun in PRONOUNS:
            if found.get(pronoun, _TOPIC).startswith(_TOPIC):
                found[pronoun] = top
    for loop in opened_loops:
        point((*TASK_PHRASES, *PRONOUNS), loop.loop_id)
    for job in scheduled:
        point((*TASK_PHRASES, *PRONOUNS), job.job_id)
        if job.kind == "reminder":
            point(REMINDER_PHRASES, job.job_id)
    if proposal_id is not None and proposal_id in valid:
        point((*PROPOSAL_PHRASES, *PRONOUNS), proposal_id)
    if decision_id is not None and decision_id in valid:
        point((*DECISION_PHRASES, *PRONOUNS), decision_id)

    # What lost its target falls back to the newest one of its kind.
    task = _last(loop_ids) or _last(job_ids)
    fallbacks = (
        (TASK_PHRASES, task),
        (REMINDER_PHRASES, _last(reminder_ids)),
        (PROPOSAL_PHRASES, _last(active_ids)),
        (DECISION_PHRASES, _last(decision_ids)),
        (PRONOUNS, task or _last(active_ids) or _last(decision_ids) or _last(topic_ids[:1])),
    )
    for phrases, target in fallbacks:
        if target is None:
            continue
        for phrase in phrases:
            found.setdefault(phrase, target)
    return found
