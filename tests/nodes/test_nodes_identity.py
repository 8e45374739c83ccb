"""What a node tells the operator about itself: a setting it ignores.

Before, ``--shared`` (a SQLite setting) was taken silently with a postgresql:// database.
A real ``agora serve`` process on the test database. Needs AGORA_TEST_PG (see
tests/conftest.py).
"""

from __future__ import annotations

import re

import trio
from nodes_support import stopped_cleanly

TIMEOUT = 60
SHARED_IGNORED = "shared = true (--shared) is for a SQLite file"


def _names(url: str) -> list[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT application_name FROM pg_stat_activity WHERE datname = current_database()"
        ).fetchall()
    return [r[0] for r in rows]


async def test_shared_with_a_postgresql_database_is_said_to_be_ignored(cluster):
    (node,) = cluster(1, "--toolsets", "chamber", "--shared")
    with stopped_cleanly([node]), trio.fail_after(TIMEOUT):
        line = await node.wait_for_log(re.escape(SHARED_IGNORED))
    assert line.startswith("WARNING agora.store.db: "), line
    assert "always shared" in line, line
    assert "ignored" in line, line
