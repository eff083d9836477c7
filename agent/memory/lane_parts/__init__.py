"""The lane's insides, each a seam of :class:`~agent.memory.lane.ConversationLane`.

- ``parts``: the collaborators they share (stores, rules, builder, retriever, checkpoints).
- ``turn_commit``: one turn committed (turn, state, summary version, long-term memory).
- ``turn_edits``: an edited message re-folds its session.
- ``checkpoint_keeper``: the checkpoint file after each commit, and stale ones rewritten.
- ``hydration``: the start-up sequence (PRD-014 section 5).
- ``session_lifecycle``: ``/new``, ``/resume``, ``/clear``, erasure and pruning of sessions.
- ``memory_commands``: ``/remember``, ``/facts confirm``, ``/facts forget``, consolidation.
- ``live_sessions``: the hydrated sessions, resident or packed.

Nothing outside :mod:`agent.memory` imports them: the lane and its inspector are the doors.
"""
