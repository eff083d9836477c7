"""The application: the only place that builds objects (settings -> lane, engine, transport)."""
