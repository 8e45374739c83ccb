"""PostgreSQL stopped with ``-m immediate`` (a crash) under load, then started again.

A node keeps recording router events while the database crashes. Afterwards, every event
that was acknowledged is there (at most one more: a commit in flight when the server died,
never acknowledged), and the node serves writes again without a restart: its writer,
readers and change listener reconnect on their own. Needs the test cluster's data
directory (AGORA_TEST_PG_DIR and AGORA_TEST_PG_PORT, set by .ci/run) to stop and start it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from nodes_support import stopped_cleanly
from test_nodes_router import current_version, event, plan

from agora.client import connect

TIMEOUT = 90
PG_SH = str(Path(__file__).parents[2] / "scripts" / "pg.sh")


def pg(command: str) -> None:
    directory = os.environ["AGORA_TEST_PG_DIR"]
    port = os.environ["AGORA_TEST_PG_PORT"]
    subprocess.run(["bash", PG_SH, command, directory, port], check=True, capture_output=True)


async def until_ok(url: str, run: str, key: str) -> dict[str, Any]:
    """Send one event until the node answers it (the database may still be recovering)."""
    while True:
        version = await current_version_or_none(url, run)
        if version is not None:
            async with connect(f"{url}/mcp/router") as c:
                got = await c.call_tool("record_work_event", event("race", run, version, key))
            body = dict(got["structuredContent"])
            if "event_ids" in body:
                return body
        await trio.sleep(0.2)


async def current_version_or_none(url: str, run: str) -> int | None:
    with contextlib.suppress(Exception):
        return await current_version(url, run)
    return None


async def test_an_immediate_postgresql_stop_loses_no_acknowledged_write(cluster):
    if not os.environ.get("AGORA_TEST_PG_DIR") or not os.environ.get("AGORA_TEST_PG_PORT"):
        pytest.skip("the test cluster's data directory is unknown (AGORA_TEST_PG_DIR/PORT)")
    (node,) = cluster(1, "--toolsets", "router")
    acked: list[str] = []
    with stopped_cleanly([node]), trio.fail_after(TIMEOUT):
        run = await plan(node.url, "race")
        crashed = trio.Event()

        async def writer() -> None:
            version, n = 1, 0
            async with connect(f"{node.url}/mcp/router") as c:
                while not crashed.is_set() or n < 3:
                    n += 1
                    key = f"before-{n}"
                    got = await c.call_tool("record_work_event", event("race", run, version, key))
                    body = got["structuredContent"]
                    if "event_ids" not in body:
                        return  # the database is gone: this call was not acknowledged
                    acked.append(key)
                    version = body["resulting_state_version"]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            while len(acked) < 5:  # noqa: ASYNC110 - the writer's progress, by count
                await trio.sleep(0.01)
            await trio.to_thread.run_sync(pg, "crash")
            crashed.set()
        await trio.to_thread.run_sync(pg, "start")
        after = await until_ok(node.url, run, "after-restart")
        # Every acknowledged event survived; at most one more whose COMMIT was in flight.
        assert after["resulting_state_version"] - 2 in (len(acked), len(acked) + 1)
