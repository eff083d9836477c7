"""The SQLite conversation store's parts: the sessions table, the turn log, the turn search."""
