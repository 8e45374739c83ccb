"""A node that loses a background task's cluster lock says it no longer runs the task, and
``/healthz`` shows which tasks this node runs.

An operator's finding: after a few PostgreSQL restarts every node's log said it ran
``chamber: purge`` for the cluster (its last such line), since a node whose lock connection
broke never said it stopped; nothing showed which node ran what but ``pg_stat_activity``,
whose ``agora HOST:PID lock`` names no line of the log did. Here a PostgreSQL node's lock
connection is closed under the running task (as a restart closes it) while another node
holds the lock; the rest is real. Real clock, every wait inside `trio.fail_after`.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from typing import Any

import trio
from test_guarded import WAIT, node

from agora.runtime import background
from agora.server.health import health


async def test_a_lost_lock_is_said_and_healthz_shows_the_tasks_state(pg_url, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="agora.runtime.background")
    monkeypatch.setattr(background, "SINGLETON_RETRY", 0.05)
    running = trio.Event()
    locks: list[Any] = []

    async def sweep(runtime: Any) -> None:
        running.set()
        await trio.sleep_forever()

    def tasks(runtime: Any) -> Any:
        return json.loads(health(runtime).body)["background_tasks"]

    with trio.fail_after(WAIT):
        async with node(pg_url) as a, trio.open_nursery() as nursery:
            take = a.store.try_singleton  # type: ignore[attr-defined]

            async def taken_once(name: str) -> Any:
                if locks:
                    return None  # another node holds it now
                locks.append(lock := await take(name))
                return lock

            monkeypatch.setattr(a.store, "try_singleton", taken_once)
            nursery.start_soon(background.supervise, sweep, a, "chamber: purge")
            await running.wait()
            assert tasks(a) == {"chamber: purge": "running"}
            locks[0].release()  # its connection closed, as a PostgreSQL restart closes it
            while a.background["chamber: purge"] == "running":  # noqa: ASYNC110
                await trio.sleep(0.02)
            assert tasks(a) == {"chamber: purge": "standby"}
            nursery.cancel_scope.cancel()
    assert a.background == {}
    node_name = f"{socket.gethostname()}:{os.getpid()}"
    said = [r.getMessage() for r in caplog.records if "background task" in r.getMessage()]
    assert said == [
        f"this node runs background task chamber: purge for the cluster ({node_name})",
        f"this node no longer runs background task chamber: purge for the cluster ({node_name}):"
        " its lock's connection was lost; another takes it, or this one once it gets the lock"
        " again",
    ]


async def test_healthz_tells_a_per_node_task_from_a_cluster_task(pg_url):
    """An operator's finding: ``chamber: RoomPool.refill`` (`node_local`: each node fills its
    own pool) was ``running`` on every node of three, where the docs said each task runs on
    one node, the others ``standby``."""
    running = trio.Event()

    @background.node_local
    async def refill(runtime: Any) -> None:
        running.set()
        await trio.sleep_forever()

    with trio.fail_after(WAIT):
        async with node(pg_url) as a, trio.open_nursery() as nursery:
            nursery.start_soon(background.supervise, refill, a, "chamber: RoomPool.refill")
            await running.wait()
            shown = json.loads(health(a).body)["background_tasks"]
            assert shown == {"chamber: RoomPool.refill": "running_per_node"}, shown
            nursery.cancel_scope.cancel()
