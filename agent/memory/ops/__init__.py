"""Operator tools over the memory: checkpoint audit and repair, archives, statistics."""
