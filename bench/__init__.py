"""Benchmarks of the memory lane: ``python -m bench [--quick]`` (see ``bench/lane_cost.py``)."""
