"""The text rules: what a message says (clauses, to-dos, facts, acts, topics, deliberation)."""
