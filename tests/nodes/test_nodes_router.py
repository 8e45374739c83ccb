"""Router runs driven through several nodes on one PostgreSQL: the CAS stays exact.

Each node has its own actors and caches; only the database is shared. The router's own
``expected_state_version`` check must still give exactly one winner per version, no event
may be lost, and a node killed with SIGKILL must lose no acknowledged write.
"""

from __future__ import annotations

import contextlib
import signal
from typing import Any

import trio
from nodes_support import stopped_cleanly

from agora.client import connect

TIMEOUT = 60


def ctx(session: str) -> dict[str, Any]:
    return {"session_id": session, "actor": f"user:{session}", "runtime_policy_snapshot_id": "pol"}


async def plan(url: str, session: str) -> str:
    async with connect(f"{url}/mcp/router") as c:
        planned = await c.call_tool("plan_work", {
            "context": ctx(session), "expected_state_version": 0, "idempotency_key": "plan",
            "correlation_id": "p", "objective": "1. design\n2. build",
            "goal_binding_id": None, "requested_work_mode": None,
            "explicit_skill_ids": [], "explicit_semantics": None,
        })  # fmt: skip
    assert "workflow_run_id" in planned["structuredContent"], planned
    return str(planned["structuredContent"]["workflow_run_id"])


def event(session: str, run: str, version: int, key: str) -> dict[str, Any]:
    return {
        "context": ctx(session), "workflow_run_id": run, "phase_id": "plan",
        "observation": {"by": key}, "activation_receipt_ref": None,
        "expected_state_version": version, "idempotency_key": key, "correlation_id": key,
    }  # fmt: skip


async def current_version(url: str, run: str) -> int:
    """The run's state version as ``url`` sees it: a stale call is refused with it, changing
    nothing."""
    async with connect(f"{url}/mcp/router") as c:
        got = await c.call_tool("record_work_event", event("race", run, 0, "probe"))
    refused = got["structuredContent"]
    assert refused.get("code") == "state-version-conflict", refused
    return int(refused["current_state_version"])


async def test_the_same_version_sent_through_three_nodes_has_exactly_one_winner(cluster):
    nodes = cluster(3, "--toolsets", "router")
    with stopped_cleanly(nodes), trio.fail_after(TIMEOUT):
        run = await plan(nodes[0].url, "race")
        outcomes: dict[int, dict[str, Any]] = {}
        ready, connected = trio.Event(), []

        async def client(i: int) -> None:
            async with connect(f"{nodes[i].url}/mcp/router") as c:
                connected.append(i)
                if len(connected) == 3:
                    ready.set()
                await ready.wait()
                got = await c.call_tool("record_work_event", event("race", run, 1, f"e{i}"))
                outcomes[i] = got["structuredContent"]

        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(client, i)
    wins = [o for o in outcomes.values() if "event_ids" in o]
    losses = [o for o in outcomes.values() if o.get("code") == "state-version-conflict"]
    assert len(wins) == 1, outcomes
    assert len(losses) == 2, outcomes
    assert wins[0]["resulting_state_version"] == 2
    assert all(loss["current_state_version"] == 2 for loss in losses)


async def drive(url: str, run: str, agent: str, count: int, acked: list[str]) -> None:
    """Record ``count`` events through ``url``, re-reading the version after each conflict."""
    version = 1
    async with connect(f"{url}/mcp/router") as c:
        done = 0
        while done < count:
            key = f"{agent}-{done}"
            got = (await c.call_tool("record_work_event", event("race", run, version, key)))[
                "structuredContent"
            ]
            if "event_ids" in got:
                acked.append(key)
                version = got["resulting_state_version"]
                done += 1
            elif got.get("code") == "state-version-conflict":
                version = got["current_state_version"]
            else:
                assert got.get("retryable"), got  # busy: retry the same call


async def test_agents_on_three_nodes_lose_no_update(cluster):
    nodes = cluster(3, "--toolsets", "router")
    acked: list[str] = []
    with stopped_cleanly(nodes), trio.fail_after(TIMEOUT):
        run = await plan(nodes[0].url, "race")
        async with trio.open_nursery() as nursery:
            for i, node in enumerate(nodes):
                nursery.start_soon(drive, node.url, run, f"agent{i}", 8, acked)
        seen = [await current_version(node.url, run) for node in nodes]
    assert len(acked) == 24
    assert seen == [1 + 24] * 3


async def test_a_node_killed_with_sigkill_loses_no_acknowledged_write(cluster):
    nodes = cluster(2, "--toolsets", "router")
    acked: list[str] = []
    with stopped_cleanly(nodes[1:]), trio.fail_after(TIMEOUT):
        run = await plan(nodes[1].url, "race")

        async def doomed() -> None:
            with contextlib.suppress(Exception):
                await drive(nodes[0].url, run, "doomed", 1000, acked)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(doomed)
            while len(acked) < 5:  # noqa: ASYNC110 - progress of the other task, by count
                await trio.sleep(0.01)
            nodes[0].signal(signal.SIGKILL)
        await nodes[0].wait_exit()
        after = await current_version(nodes[1].url, run)
        # Every acknowledged event is there; at most one more (its COMMIT was in flight).
        assert after - 1 in (len(acked), len(acked) + 1), (after, len(acked))
        await drive(nodes[1].url, run, "after", 2, acked)
