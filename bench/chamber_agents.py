"""The agents of ``bench/chamber_attempts.py``: what one agent does in each phase, and timed.

An `Agent` is one connection (wsload's lean client, or `agora.client`) and its attempt; its
jobs `enter`, `act` and `seal` are what `chamber_phases.run_phase` runs for every agent at
once. Every call goes through `timed_call`, which records its latency in its `Phase`, or
the refusal in its `Run`. Imported by the bench scripts as a sibling module; never by agora.
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wsload import lean_connect

from agora.client import connect

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from chamber_phases import Phase, Run

#: The chamber's suites (``chambre-chrono-v0`` is the default).
SUITES = ("chambre-chrono-v0", "chambre-atelier-v0")

#: What every agent declares on entry.
ENTRY = {
    "product": "bench-agent",
    "host": "bench",
    "provider_claim": "agora-bench",
    "model_claim": "scripted",
}


@dataclass
class Agent:
    """One agent: its connection and its attempt."""

    client: Any  # wsload.LeanClient or agora.client.WsClient: both have call_tool
    n: int
    handle: str = ""
    objects: list[str] = field(default_factory=list)
    index: int = 0


def plan(agent: Agent, j: int) -> dict[str, Any]:
    """The ``j``-th action: look, inspect (round the room's objects) or hint."""
    kind = (agent.n + j) % 5
    if kind == 0:
        return {"op": "look"}
    if kind == 3:
        return {"op": "hint"}
    return {"op": "inspect", "object": agent.objects[(agent.n + j) % len(agent.objects)]}


@asynccontextmanager
async def agent_connection(url: str, client: str) -> AsyncIterator[Any]:
    """The agent's connection: wsload's lean client, or `agora.client`."""
    opened = lean_connect(url) if client == "lean" else connect(url)
    async with opened as connection:
        yield connection


async def timed_call(
    agent: Agent, run: Run, phase: Phase, tool: str, args: dict[str, Any]
) -> dict[str, Any] | None:
    """One tool call; its latency goes to ``phase``; the structured body, None if refused."""
    start = time.perf_counter()
    result = await agent.client.call_tool(tool, args)
    elapsed = time.perf_counter() - start
    body: dict[str, Any] = result["structuredContent"]
    if result.get("isError"):
        run.refusals[f"{tool}:{body.get('code')}"] += 1
        return None
    phase.latencies.append(elapsed)
    phase.calls += 1
    return body


async def enter(agent: Agent, run: Run, suite: str, chosen: bool) -> None:
    """Enter ``suite`` (with a seed of the agent's own if ``chosen``, else the server's)."""
    args = {**ENTRY, "suite": suite}
    if chosen:
        args["seed"] = f"bench-{agent.n}"
    body = await timed_call(agent, run, run.phase("enter"), "enter_open_challenge", args)
    if body is not None:
        agent.handle, agent.objects = body["attempt_handle"], body["objects"]


async def act(agent: Agent, run: Run, actions: int) -> None:
    """``actions`` read actions, each expecting the action index the last reply gave."""
    phase = run.phase("actions")
    for j in range(actions):
        if not agent.handle:
            return
        args = {"challenge_handle": agent.handle, "expected_action_index": agent.index}
        body = await timed_call(agent, run, phase, "chamber_action", args | plan(agent, j))
        if body is not None:
            agent.index = body["action_index"]


async def seal(agent: Agent, run: Run) -> None:
    """Seal the agent's attempt (if it entered)."""
    if agent.handle:
        args = {"challenge_handle": agent.handle, "expected_action_index": agent.index}
        await timed_call(agent, run, run.phase("seal"), "seal_attempt", args)
