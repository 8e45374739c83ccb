"""What a node tells the operator about itself: its connections' names, its tasks', and a
setting it ignores.

Before, every connection of every node had an empty ``application_name``, so
``pg_stat_activity`` could not tell the nodes (or a node's writer from its listener) apart;
background tasks were logged by Python's names (``periodic(build_toolset.<locals>.purge)``);
and ``--shared`` (a SQLite setting) was taken silently with a postgresql:// database. Real
``agora serve`` processes on the test database. Needs AGORA_TEST_PG (see tests/conftest.py).
"""

from __future__ import annotations

import re

import trio
from e2e_process import unstamped
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


async def test_connections_name_their_node_and_role_and_tasks_are_logged_by_name(cluster, pg_url):
    nodes = cluster(2, "--toolsets", "chamber,debate")
    with stopped_cleanly(nodes), trio.fail_after(TIMEOUT):
        for _ in range(int(TIMEOUT * 10)):  # listeners connect, cluster locks are taken
            names = await trio.to_thread.run_sync(_names, pg_url)
            roles = [_roles(names, node.pid) for node in nodes]
            if _taken(nodes) and all({"writer", "listener"} <= r for r in roles):
                break
            await trio.sleep(0.1)
    assert all({"writer", "listener"} <= r for r in roles), (roles, names)
    assert any("lock" in r for r in roles), names  # a background task's cluster lock
    for line in _taken(nodes):
        task = line.split("background task ", 1)[1].rsplit(" for the cluster", 1)[0]
        assert re.fullmatch(r"(chamber|debate): \w+", task), line
    for node in nodes:
        assert SHARED_IGNORED not in node.log


def _roles(names: list[str], pid: int) -> set[str]:
    """The roles of node ``pid``'s connections, by their ``application_name``."""
    return {n.split(" ", 2)[2] for n in names if re.match(rf"agora \S+:{pid} \w", n)}


def _taken(nodes) -> list[str]:
    return [line for n in nodes for line in n.lines if "this node runs background task" in line]


async def test_shared_with_a_postgresql_database_is_said_to_be_ignored(cluster):
    (node,) = cluster(1, "--toolsets", "chamber", "--shared")
    with stopped_cleanly([node]), trio.fail_after(TIMEOUT):
        line = await node.wait_for_log(re.escape(SHARED_IGNORED))
    assert unstamped(line).startswith("WARNING agora.store.db: "), line
    assert "always shared" in line, line
    assert "ignored" in line, line
