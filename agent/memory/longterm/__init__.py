"""Long-term memory: typed statements kept across sessions, their slots, upkeep and cache."""
