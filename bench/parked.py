"""Parked agents: memory per parked WebSocket agent, single wakes while all stay parked, stalls.

One ``agora serve --toolsets chess,debate`` (``synchronous=FULL``, ``max_connections`` raised
to fit) and ``--agents`` agents (default 100,000), each on its own WebSocket (`wsload`'s lean
client: one task per agent, no reader task), half parked in chess ``wait_for_turn`` (one
table each, made with ``POST /play/tables``, the human to move) and half in debate
``debate_signal_wait`` (topics of 50 roles, each role bound to its own session). The client
spreads its connections over ``--sources`` loopback source addresses (127.0.0.1,
127.0.0.2, ...), so the 28,000-port ephemeral range of one address does not cap the count.
Both processes need one file descriptor per agent: RLIMIT_NOFILE is raised to its hard limit,
and a hard limit below the agent count (20,000 on the shared bench machine) caps the run.

Figures: server VmRSS before the agents and once all are parked (``/healthz`` in-flight
count), and the difference per agent in KiB (goal: at most 12 KiB); the longest ping round
trip of a probe session that pings every 50 ms while the agents connect (a multi-second GC
pause or a stalled accept loop shows there); then ``--wakes`` single wakes, one at a time,
alternately a chess table (the human moves: POST sent -> the agent's reply) and a debate role
(a post addressed to it: post sent -> its waiter's reply), each timed while every other
agent stays parked (goal: p99 under 10 ms; both figures include the waking write's fsync'd
commit). The load generator runs with its cyclic GC off, so its pauses are not the server's.
The server runs under `probed_serve`, which times its garbage collections: the count and the
longest pause per generation while the agents connect and during the wakes are printed, with
the objects the collector tracks. ``--trace-frames N`` also traces its allocations
(tracemalloc, N frames each) and prints the growth per parked agent by line, by call stack
and by object type (slow: use a few thousand agents).

Usage: ``.venv/bin/python -m bench parked -- [--agents 100000] [--chess-share 0.5]
[--sources 8] [--wakes 200] [--trace-frames 0] [--old-gc]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mixed
import trio
from chess_page import Http, Table, create_tables, human_action, in_parallel, pick
from cli_args import fraction, non_negative_int, positive_float, positive_int
from measure import raise_fd_limit, vm_rss
from report import Progress, Report, latency_summary
from serve import agora_serve
from wsload import INITIALIZE, LeanClient, LeanWebSocket

ROLES_PER_TOPIC = 50
#: No principals are configured (chess tables are made without a bearer): every agent is
#: the anonymous principal.
TOKEN = None
CONNECT_AT_ONCE = 256


@dataclass
class Agent:
    kind: str  # "chess" or "debate"
    path: str  # the MCP endpoint path
    source: str
    args: dict[str, Any]
    table: Table | None = None
    woken: trio.Event = field(default_factory=trio.Event)
    woke_at: float = 0.0


@dataclass
class State:
    total: int
    parked: int = 0
    failed: int = 0
    first_error: str = ""
    all_in: trio.Event = field(default_factory=trio.Event)

    def settle(self) -> None:
        if self.parked + self.failed >= self.total:
            self.all_in.set()


async def lean_session(url: str, source: str, token: str | None) -> LeanClient:
    ws = await LeanWebSocket.connect(url, token, local_address=source)
    client = LeanClient(ws)
    await client.request("initialize", INITIALIZE["params"])
    await ws.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return client


async def run_agent(base: str, agent: Agent, state: State, limiter: trio.CapacityLimiter) -> None:
    """Connect, park, and on every wake answer (chess: move) and park again."""
    try:
        async with limiter:
            client = await lean_session(base + agent.path, agent.source, TOKEN)
    except (OSError, ConnectionError) as exc:
        state.failed += 1
        state.first_error = state.first_error or repr(exc)
        state.settle()
        return
    tool = "wait_for_turn" if agent.kind == "chess" else "debate_signal_wait"
    first = True
    while True:
        rid = client._ids + 1
        client._ids = rid
        message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": tool, "arguments": agent.args}}  # fmt: skip
        await client.ws.send(json.dumps(message).encode())
        if first:
            state.parked += 1
            state.settle()
            first = False
        reply = json.loads(await client.ws.recv())
        body = reply["result"].get("structuredContent", {})
        if agent.kind == "chess" and body.get("statusCode") == "AGENT_TURN":
            agent.woke_at = time.perf_counter()
            assert agent.table is not None
            await client.call_tool("move_piece", pick(agent.table.rng, body["legalMoves"]))
            agent.woken.set()
        elif agent.kind == "debate" and body.get("pending"):
            agent.woke_at = time.perf_counter()
            last = body["pending"][-1]["msg_id"]
            advance = {k: agent.args[k] for k in ("topic_id", "role", "session_id")}
            await client.call_tool(
                "debate_signal_advance", advance | {"last_processed_msg_id": last}
            )
            agent.woken.set()


async def debate_agents(url: str, count: int, sources: list[str]) -> tuple[list[Agent], list]:
    """Topics of ROLES_PER_TOPIC roles with a session each; one agent per role."""
    agents: list[Agent] = []
    topics: list[tuple[str, str]] = []  # (topic_id, poster session)
    mix = mixed.Mix(url, [], mixed.Acks())
    async with mixed.lean_connect(url, TOKEN) as client:
        for t in range(0, count, ROLES_PER_TOPIC):
            n = min(ROLES_PER_TOPIC, count - t)
            sessions = [
                (await mix.call(client, "setup", "debate_session_open"))["session_id"]
                for _ in range(n + 1)
            ]
            roles = [f"ROLE_{i}" for i in range(n + 1)]
            roster = [{"role": r, "session_id": s} for r, s in zip(roles, sessions, strict=True)]
            topic = await mix.call(
                client, "setup", "debate_init", title="parked", created_by_role=roles[0],
                roles_json=json.dumps(roster), metadata_json=mixed.LANE,
            )  # fmt: skip
            tid = topic["topic_id"]
            await mix.call(
                client, "setup", "debate_state", topic_id=tid, role=roles[0], new_state="ACTIVE"
            )
            topics.append((tid, sessions[0]))
            for i in range(1, n + 1):
                args = {"topic_id": tid, "role": roles[i], "session_id": sessions[i],
                        "timeout_ms": 55_000, "limit": 10}  # fmt: skip
                agents.append(
                    Agent("debate", "/mcp/debate", sources[len(agents) % len(sources)], args)
                )
    return agents, topics


async def until_parked(http: Http, count: int) -> int:
    """Ask /healthz every 100 ms (the caller bounds it) until 99% of ``count`` calls are in
    flight (a few agents are always between a timed-out wait and the next); return it."""
    while (parked := (await http.request("GET", "/healthz"))[1]["in_flight"]) < 0.99 * count:  # noqa: ASYNC110
        await trio.sleep(0.1)
    return int(parked)


async def stall_probe(url: str, stop: trio.Event, worst: list[float]) -> None:
    """Ping every 50 ms until ``stop``; keep the longest round trip."""
    client = await lean_session(url, "127.0.0.1", TOKEN)
    while not stop.is_set():
        t0 = time.perf_counter()
        await client.request("ping")
        worst[0] = max(worst[0], time.perf_counter() - t0)
        with trio.move_on_after(0.05):
            await stop.wait()
    await client.ws.aclose()


async def parked(args: argparse.Namespace) -> Report:
    report = Report("parked", vars(args).copy())
    sources = [f"127.0.0.{i}" for i in range(1, args.sources + 1)]
    chess_n = int(args.agents * args.chess_share)
    debate_n = args.agents - chess_n
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "probe").mkdir()
        async with agora_serve(
            directory / "parked.db", "chess,debate", synchronous="FULL",
            max_connections=str(args.agents + 1000), probe=directory / "probe",
            trace_frames=args.trace_frames, old_gc=args.old_gc,
        ) as server:  # fmt: skip
            ws_base = server.url.replace("http://", "ws://")
            t0 = time.perf_counter()
            tables = await create_tables(server.port, chess_n, "p") if chess_n else []

            async def human_first(http: Http, table: Table) -> None:
                await human_action(http, table, "side", {"agentColor": "black"})

            await in_parallel(server.port, tables, human_first)
            agents = [
                Agent(
                    "chess",
                    t.mcp_path(),
                    sources[i % len(sources)],
                    {"timeout_ms": 55_000},
                    table=t,
                )
                for i, t in enumerate(tables)
            ]
            more, topics = await debate_agents(ws_base + "/mcp/debate", debate_n, sources)
            agents += more
            setup = time.perf_counter() - t0
            gc.collect()
            gc.disable()
            rss_before = vm_rss(server.pid)
            setup_gc, snap_before = await server.probe()
            state = State(len(agents))
            worst = [0.0]
            stop = trio.Event()
            progress = Progress("parked", args.connect_timeout, lambda: state.parked)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(stall_probe, ws_base + "/mcp/debate", stop, worst)
                nursery.start_soon(progress.run)
                limiter = trio.CapacityLimiter(CONNECT_AT_ONCE)
                c0 = time.perf_counter()
                for agent in agents:
                    nursery.start_soon(run_agent, ws_base, agent, state, limiter)
                with trio.fail_after(args.connect_timeout):
                    await state.all_in.wait()
                    http = Http(server.port)
                    in_flight = await until_parked(http, state.parked)
                connect_s = time.perf_counter() - c0
                stop.set()
                rss_parked = vm_rss(server.pid)
                ramp_gc, snap_parked = await server.probe()
                wakes = await single_wakes(args, server.port, agents, topics, http)
                wake_gc, _ = await server.probe()
                wake_gc.pop("types", None)
                nursery.cancel_scope.cancel()
            # Every agent hangs up: what their connections left for the cyclic collector.
            with trio.move_on_after(60):
                while (await http.request("GET", "/healthz"))[1]["connections"] > 2:  # noqa: ASYNC110
                    await trio.sleep(0.2)
            closed_gc, _ = await server.probe(collect=True)
            closed_gc.pop("types", None)
            if snap_before is not None and snap_parked is not None:
                traced = allocation_sites(snap_before, snap_parked, max(state.parked, 1))
                traced["type"] = object_types(setup_gc, ramp_gc, max(state.parked, 1))
    per_agent = (rss_parked - rss_before) / max(state.parked, 1)
    report.figures = {
        "agents_parked": state.parked,
        "calls_in_flight_when_measured": in_flight,
        "agents_failed": state.failed,
        "first_error": state.first_error,
        "setup_s": round(setup, 1),
        "connect_s": round(connect_s, 1),
        "server_rss_before_mib": round(rss_before / 2**20, 1),
        "server_rss_parked_mib": round(rss_parked / 2**20, 1),
        "kib_per_parked_agent": round(per_agent / 1024, 2),
        "longest_ping_during_connect_ms": round(worst[0] * 1000, 1),
        "gc_during_connect": ramp_gc,
        "gc_during_wakes": wake_gc,
        "cyclic_garbage_per_closed_agent": round(
            closed_gc["unreachable_found"] / max(state.parked, 1), 2
        ),
    }
    if args.trace_frames:
        report.figures["note"] = "traced: RSS includes tracemalloc's own memory"
        report.figures["traced_kib_per_parked_agent"] = traced.pop("kib_per_agent")
        report.figures["traced_top"] = traced
    report.latency = {k: latency_summary(v) for k, v in wakes.items()}
    for key, value in report.figures.items():
        if key == "traced_top":
            for kind, rows in traced.items():
                what = "objects per agent" if kind == "type" else "bytes, count per agent"
                print(f"tracemalloc top by {kind} ({what}):")
                for row in rows:
                    print(f"  {row}")
        else:
            print(f"{key}: {value}")
    for key, value in report.latency.items():
        print(f"wake {key}: {value}")
    return report


def object_types(before: dict[str, Any], after: dict[str, Any], agents: int) -> list[str]:
    """The 20 types whose objects tracked by the collector grew most, per agent."""
    old, new = before.pop("types"), after.pop("types")
    grown = sorted(((n - old.get(t, 0), t) for t, n in new.items()), reverse=True)
    total = sum(new.values()) - sum(old.values())  # frozen ones too (see probed_serve)
    rows = [f"{d / agents:6.2f}  {t}" for d, t in grown[:20]]
    return [f"{total / agents:6.2f}  (all tracked objects)", *rows]


def allocation_sites(before: Path, after: Path, agents: int) -> dict[str, Any]:
    """What the parked agents' memory was allocated by: tracemalloc's growth per agent by
    line (the top 15) and by call stack (the top 8, agora/trio/wsproto frames only)."""
    old = tracemalloc.Snapshot.load(str(before))
    new = tracemalloc.Snapshot.load(str(after))
    grown = sum(s.size_diff for s in new.compare_to(old, "filename"))
    out: dict[str, Any] = {"kib_per_agent": round(grown / agents / 1024, 2)}
    out["line"] = [
        f"{s.size_diff / agents:8.1f} B {s.count_diff / agents:6.2f}  {s.traceback[0]}"
        for s in new.compare_to(old, "lineno")[:30]
    ]
    stacks = []
    for s in new.compare_to(old, "traceback")[:12]:
        frames = [
            f"{Path(f.filename).name}:{f.lineno}"
            for f in s.traceback
            if any(part in f.filename for part in ("agora", "trio", "wsproto"))
        ]
        stacks.append(
            f"{s.size_diff / agents:8.1f} B {s.count_diff / agents:6.2f}  " + " < ".join(frames[:6])
        )
    out["stack"] = stacks
    return out


async def single_wakes(
    args: argparse.Namespace, port: int, agents: list[Agent], topics: list, http: Http
) -> dict[str, list[float]]:
    """One wake at a time, alternating chess and debate; the seconds each took."""
    rng = random.Random(14)
    chess_agents = [a for a in agents if a.kind == "chess"]
    debate_agents_ = [a for a in agents if a.kind == "debate"]
    out: dict[str, list[float]] = {"chess": [], "debate": []}
    poster = await lean_session(f"ws://127.0.0.1:{port}/mcp/debate", "127.0.0.1", TOKEN)
    with trio.fail_after(max(120.0, args.wakes * 2.0)):
        for i in range(args.wakes):
            group = chess_agents if (i % 2 == 0 and chess_agents) else debate_agents_
            if not group:
                continue
            agent = rng.choice(group)
            agent.woken = trio.Event()
            sent = time.perf_counter()
            if agent.kind == "chess":
                assert agent.table is not None
                path = f"/play/{agent.table.name}/state?token={agent.table.token}"
                _, board = await http.request("GET", path)
                sent = time.perf_counter()
                await human_action(
                    http, agent.table, "move", pick(agent.table.rng, board["legalMoves"])
                )
            else:
                topic = agent.args["topic_id"]
                await poster.call_tool("debate_post_with_recipients", {
                    "topic_id": topic, "role": "ROLE_0", "priority": "M", "kind": "STATUS",
                    "body": "wake", "addressed_to_csv": agent.args["role"]})  # fmt: skip
            await agent.woken.wait()
            out[agent.kind].append(agent.woke_at - sent)
    return out


def main(argv: list[str] | None = None) -> Report:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=positive_int, default=100_000)
    parser.add_argument("--chess-share", type=fraction, default=0.5)
    parser.add_argument("--sources", type=positive_int, default=8)
    parser.add_argument("--wakes", type=non_negative_int, default=200)
    parser.add_argument("--connect-timeout", type=positive_float, default=1800.0)
    parser.add_argument(
        "--trace-frames", type=non_negative_int, default=0,
        help="run the server under tracemalloc with this many frames per allocation and "
        "print where the parked agents' memory was allocated (RSS figures then include "
        "tracemalloc's own memory)",
    )  # fmt: skip
    parser.add_argument(
        "--old-gc", action="store_true",
        help="the server's collector policy of before agora.server.heap, to compare pauses",
    )  # fmt: skip
    args = parser.parse_args(argv)
    raise_fd_limit()
    return trio.run(parked, args)


if __name__ == "__main__":
    main().write()
