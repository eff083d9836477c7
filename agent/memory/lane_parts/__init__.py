"""The lane's parts: commit, edits, hydration, sessions, checkpoints, memory commands."""
