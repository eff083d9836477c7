"""The PostgreSQL server of this machine, for the tests that restart it under running bots
(``tests/test_postgres_faults.py``, ``tests/test_workers.py``).

Restarting it disturbs every test on the machine that uses it, so those tests run only with
``AGENT_TEST_POSTGRES_RESTART=1`` (``.ci/run`` sets it: CI's server is its own).
"""

from __future__ import annotations

import os
import subprocess

__all__ = ["CLUSTER", "RESTART_ALLOWED", "restart_immediately"]

#: PostgreSQL 15's cluster "main", as ``.ci/start-postgres`` runs it.
CLUSTER = ("pg_ctlcluster", "--skip-systemctl-redirect", "15", "main")
RESTART_ALLOWED = os.environ.get("AGENT_TEST_POSTGRES_RESTART") == "1"


def restart_immediately() -> None:
    """Restart the server at once (``-m immediate``: no checkpoint, clients cut off), as a
    crash and a restart of the database machine would."""
    subprocess.run([*CLUSTER, "restart", "-m", "immediate"], check=True, timeout=120)
