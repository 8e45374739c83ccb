"""The workloads of ``bench/nodes.py``: chamber attempts, chess tables, router runs.

Each workload is an async function ``run(urls, count, tally, gate)`` that starts ``count``
agents (or tables) spread round-robin over the nodes' base URLs, lets each connect, waits at
``gate`` until every one has, then works until ``tally.end``. A `Tally` collects what the
clients saw: acknowledged commands (each one a durable commit), their latencies, refusals,
and, for chess, the cross-node wake latencies. Imported by ``bench/nodes.py``; never by agora.

- chamber: each agent enters its own attempt, makes up to 60 valid read actions (look,
  inspect, hint; each sent with the ``expected_action_index`` of the previous reply), seals,
  and enters again. Commands: enters, actions, seals.
- chess: table ``i`` has an agent playing over WebSocket and a human over HTTP (the page's
  API), both through node ``i mod N``: what a load balancer hashing on the table's path
  gives, so a table's players share a node and its moves wake waits on that node. Commands:
  moves. The wake is timed from the human's acknowledged move (its POST answered) to the
  agent's ``wait_for_turn`` reply (0 if the reply came first). What it measures: scale-out
  with affinity, where the nodes share only the database and each other's notifications.
  Not quite a deployment: every table is created through node 0 (one POST each, before the
  timed window), so node 0 keeps a copy of each table until it is evicted as idle and hears
  every move made on the other nodes (the "stale copies" column: ~0.5 per command on 2
  nodes). A deployment whose creation call lands on a node other than the table's sees the
  same, per such table.
- chess-cross: the same, but the human goes through node ``i + 1``: on two or more nodes
  every move is committed on one node and wakes a wait parked on the other, which must
  reload the table (replaying its game) before answering. No affinity at all: a bound on
  what the cross-node path costs (a reload per move on each side) and the cross-node wake
  under load; not the throughput a deployment with affinity should expect. On one node it
  is the chess workload.
- router: each agent records events on its own workflow run, with the state version of the
  previous reply (a CAS-checked commit per call).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import chess
import trio
from chess_page import Http, Table, create_tables, human_action, pick
from wsload import lean_connect

#: Read actions per chamber attempt before it is sealed (the suites allow 64).
ACTIONS = 60
ENTRY = {"product": "bench-agent", "host": "bench", "provider_claim": "agora-bench",
         "model_claim": "scripted"}  # fmt: skip
SUITE = "chambre-chrono-v0"
ROUTER_CONTEXT = {"actor": "bench", "runtime_policy_snapshot_id": "p"}
#: The chess agent's wait is sent this long before the human moves, so it is parked.
PARK_SECONDS = 0.002


@dataclass
class Tally:
    """What the clients of one measurement saw."""

    end: float = float("inf")
    commands: int = 0
    latencies: list[float] = field(default_factory=list)
    wakes: list[float] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)

    def done(self) -> bool:
        return time.perf_counter() >= self.end

    def acked(self, started: float) -> None:
        self.commands += 1
        self.latencies.append(time.perf_counter() - started)


@dataclass
class Gate:
    """Holds every client until all have connected; `go` opens it (the timed window starts)."""

    expected: int
    connected: int = 0
    all_in: trio.Event = field(default_factory=trio.Event)
    go: trio.Event = field(default_factory=trio.Event)

    async def ready(self) -> None:
        self.connected += 1
        if self.connected == self.expected:
            self.all_in.set()
        await self.go.wait()


def ws(url: str, path: str) -> str:
    return url.replace("http://", "ws://") + path


# -- chamber ---------------------------------------------------------------------------------


async def call(c: Any, tally: Tally, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """One tool call; counted if acknowledged; the structured body, None if refused."""
    started = time.perf_counter()
    result = await c.call_tool(tool, args)
    body: dict[str, Any] = result["structuredContent"]
    if result.get("isError"):
        tally.refusals[f"{tool}:{body.get('code')}"] += 1
        return None
    tally.acked(started)
    return body


async def chamber_agent(url: str, n: int, tally: Tally, gate: Gate) -> None:
    async with lean_connect(ws(url, "/mcp/chamber")) as c:
        await gate.ready()
        while not tally.done():
            body = await call(c, tally, "enter_open_challenge", {**ENTRY, "suite": SUITE})
            if body is None:
                return
            handle, objects, index = body["attempt_handle"], body["objects"], 0
            for j in range(ACTIONS):
                if tally.done():
                    break
                kind = (n + j) % 5
                op: dict[str, Any] = {"op": "look"} if kind == 0 else {"op": "hint"}
                if kind in (1, 2, 4):
                    op = {"op": "inspect", "object": objects[(n + j) % len(objects)]}
                args = {"challenge_handle": handle, "expected_action_index": index, **op}
                got = await call(c, tally, "chamber_action", args)
                if got is None:
                    break
                index = got["action_index"]
            args = {"challenge_handle": handle, "expected_action_index": index}
            await call(c, tally, "seal_attempt", args)


async def chamber(urls: list[str], count: int, tally: Tally, gate: Gate) -> None:
    async with trio.open_nursery() as nursery:
        for i in range(count):
            nursery.start_soon(chamber_agent, urls[i % len(urls)], i, tally, gate)


# -- chess -----------------------------------------------------------------------------------


def human_moves(fen: str) -> list[dict[str, Any]]:
    """The human's legal moves in the page's form, from the FEN of the agent's reply."""
    return [
        {"from": chess.square_name(m.from_square), "to": chess.square_name(m.to_square),
         "promotion": chess.piece_symbol(m.promotion) if m.promotion else None}
        for m in chess.Board(fen).legal_moves
    ]  # fmt: skip


async def table_state(http: Http, table: Table) -> Any:
    return (await http.request("GET", f"/play/{table.name}/state?token={table.token}"))[1]


async def chess_table(agent_url: str, human_url: str, table: Table, tally: Tally,
                      gate: Gate) -> None:  # fmt: skip
    port = int(human_url.rsplit(":", 1)[1])
    async with AsyncExitStack() as stack:
        agent = await stack.enter_async_context(lean_connect(ws(agent_url, table.mcp_path())))
        http = Http(port)
        stack.push_async_callback(http.aclose)
        await agent.call_tool("join_game", {})
        state = await human_action(http, table, "side", {"agentColor": "black"})
        await gate.ready()
        while not tally.done():
            phase = state["phase"]
            if phase == "over":
                state = await human_action(http, table, "new-game", {})
                continue
            if phase == "side_choice":
                state = await human_action(http, table, "side", {"agentColor": "black"})
                continue
            answered: list[Any] = []

            async def wait(answered: list[Any] = answered) -> None:
                got = await agent.call_tool("wait_for_turn", {"timeout_ms": 30000})
                answered.append((time.perf_counter(), got["structuredContent"]))

            if phase == "human_turn":  # the agent parks first, then the human moves
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(wait)
                    await trio.sleep(PARK_SECONDS)
                    started = time.perf_counter()
                    move = pick(table.rng, state["legalMoves"])
                    state = await human_action(http, table, "move", move)
                    tally.acked(started)
                    acked = time.perf_counter()
                tally.wakes.append(max(0.0, answered[0][0] - acked))
            else:
                await wait()
            reply = answered[0][1]
            if reply["statusCode"] != "AGENT_TURN":
                state = await table_state(http, table)
                continue
            started = time.perf_counter()
            got = await agent.call_tool("move_piece", pick(table.rng, reply["legalMoves"]))
            body = got["structuredContent"]
            if got.get("isError"):
                tally.refusals[f"move_piece:{body.get('code')}"] += 1
                state = await table_state(http, table)
                continue
            tally.acked(started)
            if body["statusCode"] == "GAME_OVER":
                state = {"phase": "over"}
            else:
                state = {"phase": "human_turn", "legalMoves": human_moves(body["fen"])}


async def chess_tables(urls: list[str], count: int, tally: Tally, gate: Gate,
                       cross: bool = False) -> None:  # fmt: skip
    port = int(urls[0].rsplit(":", 1)[1])
    tables = await create_tables(port, count, f"t{random.randrange(10**6)}-")
    n = len(urls)
    async with trio.open_nursery() as nursery:
        for i, table in enumerate(tables):
            human = urls[(i + cross) % n]
            nursery.start_soon(chess_table, urls[i % n], human, table, tally, gate)


async def chess_cross(urls: list[str], count: int, tally: Tally, gate: Gate) -> None:
    await chess_tables(urls, count, tally, gate, cross=True)


# -- router ----------------------------------------------------------------------------------


async def router_agent(url: str, session: str, tally: Tally, gate: Gate) -> None:
    context = {**ROUTER_CONTEXT, "session_id": session}
    async with lean_connect(ws(url, "/mcp/router")) as c:
        planned = await c.call_tool("plan_work", {
            "context": context, "expected_state_version": 0, "idempotency_key": "plan",
            "correlation_id": "p", "objective": "1. design\n2. build",
            "goal_binding_id": None, "requested_work_mode": None,
            "explicit_skill_ids": [], "explicit_semantics": None,
        })  # fmt: skip
        run = planned["structuredContent"]["workflow_run_id"]
        await gate.ready()
        version, n = 1, 0
        while not tally.done():
            n += 1
            body = await call(c, tally, "record_work_event", {
                "context": context, "workflow_run_id": run, "phase_id": "plan",
                "observation": {"n": n}, "activation_receipt_ref": None,
                "expected_state_version": version, "idempotency_key": f"{session}-{n}",
                "correlation_id": "c",
            })  # fmt: skip
            if body is None:
                return
            version = body["resulting_state_version"]


async def router(urls: list[str], count: int, tally: Tally, gate: Gate) -> None:
    tag = random.randrange(10**9)
    async with trio.open_nursery() as nursery:
        for i in range(count):
            nursery.start_soon(router_agent, urls[i % len(urls)], f"{tag}-{i}", tally, gate)


WORKLOADS = {
    "chamber": chamber,
    "chess": chess_tables,
    "chess-cross": chess_cross,
    "router": router,
}
#: The toolset each workload needs on the nodes.
TOOLSETS = {"chamber": "chamber", "chess": "chess", "chess-cross": "chess", "router": "router"}
