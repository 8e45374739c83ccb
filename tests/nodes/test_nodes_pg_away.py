"""PostgreSQL stopped under an idle node: the node says so once, then seldom, then when it is back.

A real ``agora serve`` with every toolset (five background tasks holding cluster locks, the
change listener, the periodic steps) on the test cluster, which the test stops for a while
and starts again. Before, the node logged each failed retry: about five to nine lines a
second for as long as the database was down (the listener every 0.5 s, each task's lock
every 2 s, each step), and the first line's cause scrolled away. Now: one line with the
cause at once, a summary after 10 s, and one line when the database answers again. A call
made meanwhile is answered retryable, counted in the last line, its own line at DEBUG.

The window is real time (the node is a real process; what is measured is a rate of lines),
so this test waits a dozen seconds with the database down. Needs the test cluster's data
directory (AGORA_TEST_PG_DIR and AGORA_TEST_PG_PORT, set by .ci/run) to stop and start it.
"""

from __future__ import annotations

import trio
from e2e_process import unstamped
from nodes_support import stopped_cleanly
from test_nodes_pg_crash import needs_the_cluster_directory, pg
from test_nodes_router import ctx, event, plan

from agora.client import connect
from agora.toolsets.router.replies import INTERNAL_MESSAGES

TIMEOUT = 90
#: Seconds the database stays down while the node's log is watched.
WINDOW = 12.0


async def test_postgresql_away_is_told_once_then_summarised_then_back(cluster):
    needs_the_cluster_directory()
    (node,) = cluster(1)  # every toolset: their background tasks all hold cluster locks
    with stopped_cleanly([node]), trio.fail_after(TIMEOUT):
        run = await plan(node.url, "before")  # the node works; the run's actor stays loaded
        await node.wait_for_log("this node runs background task debate: phase_timeout_task")
        before = len(node.lines)
        await trio.to_thread.run_sync(pg, "stop")
        try:
            await node.wait_for_log(r"Z WARNING agora\.")  # it noticed
            await trio.sleep(WINDOW)  # real time: a real process's log rate
            # A task that took its cluster lock after phase_timeout_task's says so in a line
            # of its own, maybe after `before`: the node's start, not the outage's account;
            # so does each task whose lock's connection the outage broke, once.
            tasks = [line for line in node.lines[before:] if "runs background task" in line]
            lines = [line for line in node.lines[before:] if line and line not in tasks]
            assert len(lines) <= 4, lines  # before: dozens, one per failed retry
            stopped = [line for line in tasks if "no longer runs background task" in line]
            assert len(stopped) <= 5, stopped  # one per task holding its lock
            async with connect(f"{node.url}/mcp/router") as client:  # calls meanwhile
                away = await client.call_tool("get_next_work", {
                    "context": ctx("away"), "workflow_run_id": "run-" + "0" * 32,
                })  # fmt: skip
                writes = [  # on the loaded run: each reaches the writer, which fails
                    await client.call_tool("record_work_event", event("before", run, 1, f"w{i}"))
                    for i in range(3)
                ]
            async with connect(f"{node.url}/mcp/chess/away") as client:  # a table to load
                board = await client.call_tool("get_board", {})
        finally:
            await trio.to_thread.run_sync(pg, "start")
        back = await node.wait_for_log("PostgreSQL answers again")
        await plan(node.url, "after")  # and works again, without a restart
    first = [line for line in lines if "PostgreSQL is unreachable" in line]
    summaries = [line for line in lines if "PostgreSQL still unreachable" in line]
    assert len(first) == 1, lines
    unreachable = unstamped(first[0])
    assert unreachable.startswith("WARNING agora.store.outage: PostgreSQL is unreachable ("), first
    assert "failed attempts" not in first[0]
    assert len(summaries) == 1, lines  # at 10 s; the next is due 20 s later
    assert "failed attempts in the last 10 s" in summaries[0], summaries
    assert unstamped(back).startswith("INFO agora.store.outage: PostgreSQL answers again ("), back
    # The call's load failed for a reason a retry cures: retryable, its line (with its
    # correlation id) at DEBUG, no traceback (it is an event, not a bug).
    body = away["structuredContent"]
    assert (body["code"], body["retryable"]) == ("internal-error", True), body
    # The store's failure, said as one (an agent must not take an outage for a bug).
    assert body["message"] == INTERNAL_MESSAGES["store"], body
    said = board["structuredContent"]["error"]
    assert "the database is unavailable or did not answer in time" in said, said
    assert "internal error" not in said, said
    assert body["correlation_id"] not in node.log  # each call's line is at DEBUG
    assert sum("PostgreSQL answers again" in line for line in node.lines) == 1, node.log
    # The writes failed retryable, each line with its correlation id at DEBUG; the writer's own
    # failures were told to the outage's account, not one line per batch (before: 1-2 each).
    for write in writes:
        assert write["structuredContent"]["retryable"] is True, write
    writer_lines = [line for line in node.lines if "commit of" in line or "reconnecting" in line]
    assert writer_lines == [], writer_lines
    assert "Traceback" not in node.log, node.log
