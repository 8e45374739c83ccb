"""Chamber attempts under load: acknowledged actions/s, action latency, seals/s, group commit.

``--agents A`` agents (default 500), each on its own WebSocket to
``ws://127.0.0.1:PORT/mcp/chamber``, run one attempt each: ``enter_open_challenge``, then
``--actions`` (20) ``chamber_action`` calls, then ``seal_attempt``. Actions are valid read
ops (look, inspect, hint), each sent with the ``expected_action_index`` taken from the
previous reply, so every one is acknowledged only after its transcript record is committed.
The server is ``agora serve --toolsets chamber``, started here as a subprocess on a free
127.0.0.1 port with a fresh SQLite file and ``AGORA_SYNCHRONOUS=FULL`` (every acknowledged
change fsync'd). Agents enter without a seed, so the server draws it and hands out a room
from its pool (``room_pool_size`` is set to one room per agent, and the run waits until
``/chamber/pool`` has them all; past the anonymous entry limit, 600 a minute shared by all
anonymous callers, the run lifts that limit); ``--chosen-seeds`` enters with one participant
seed each, so every room is built at entry. All agents connect first; then the three phases
run one after the other, all agents at once, so each rate is measured alone: enters/s, acknowledged
actions/s (with p50/p99 per-action latency as the client sees it) and seals/s. Server and
client CPU time per phase are printed, to tell which side is the bottleneck.

For scale, the same agents then send the same number of messages of the same size to a bare
trio-websocket echo server (a subprocess, no MCP, no store): the transport floor of this
machine and this client, measured in the same run, and the action rate as a share of it.

The run is repeated on a new server with ``AGORA_GROUP_COMMIT=false`` (one transaction per
write) and the ratios are printed. After each run the database is checked: one transcript
row per acknowledged action, one card per seal.

The agents use the lean sequential client of ``wsload.py`` (frames made by hand in the
agent's own task), because this machine has two cores and the load generator shares them with the
server; ``--client agora`` uses `agora.client` (two reader tasks per connection) instead,
to show what the general client costs.

RLIMIT_NOFILE is raised to its hard limit first (the server inherits it). Traffic stays on
loopback; every phase is bounded by ``--timeout`` seconds.

Usage: ``.venv/bin/python bench/chamber_attempts.py [--agents 500] [--actions 20] [--suite
chambre-chrono-v0] [--synchronous FULL] [--timeout 300] [--no-baseline] [--no-echo]
[--chosen-seeds] [--client lean|agora] [--py-spy PATH] [--py-spy-phase enter|actions|seal]
[--py-spy-rate 250] [--py-spy-gil] [--gc] [--strace PATH] [--calls [--top 8]]``. ``--py-spy``
samples the server during one phase (the action phase unless ``--py-spy-phase`` says otherwise;
``--py-spy-gil`` samples only the thread holding the GIL, so a thread waiting for it is not
counted as busy; py-spy must be installed: it is a measuring aid, not a dependency). Each phase
also prints where its commits spent their time (``/healthz``: queue, BEGIN, statements, COMMIT,
the hand-off back) and, with ``--gc``, the server runs under ``probed_serve.py`` and each phase
prints its collections and their CPU (per call: the collector's share of an entry). ``--strace
PATH`` counts the server's system calls (``strace -c -f``, every thread) during the
``--py-spy-phase`` phase, and ``--calls`` the main thread's Python calls per call of that phase
(cProfile, under ``probed_serve``, by module): counts a busy machine cannot skew, to compare two
trees with ``PYTHONPATH=OTHER/src``.
Not run by CI.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from echo import SCRIPT as echo_script
from measure import (
    Cpu,
    commit_cost,
    commit_split,
    cpu_window,
    latency_text,
    percentile,
    raise_fd_limit,
    rate_text,
)
from profilers import py_spy, python_calls, strace
from serve import HOST, START_TIMEOUT, Server, agora_serve
from trio_websocket import (
    open_websocket_url,
)
from wsload import LeanWebSocket, lean_connect

from agora.client import connect
from agora.toolsets.chamber.ratelimit import ANONYMOUS_PER_MINUTE

SUITES = ("chambre-chrono-v0", "chambre-atelier-v0")
ENTRY = {
    "product": "bench-agent",
    "host": "bench",
    "provider_claim": "agora-bench",
    "model_claim": "scripted",
}


# -- measuring -------------------------------------------------------------------------------


@dataclass
class Phase:
    """One phase's wall time, call latencies and the CPU both sides spent."""

    name: str
    calls: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    cpu: Cpu = field(default_factory=Cpu)
    split: str = ""  # where the phase's commits spent their time (`measure.commit_split`)
    collector: str = ""  # the cyclic collector's part (`collector_text`, with ``--gc``)
    python_calls: str = ""  # the main thread's Python calls per call (with ``--calls``)

    @property
    def rate(self) -> float:
        """Calls per second."""
        return self.calls / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        """A one-line report."""
        text = f"{self.name:<8} {rate_text(self.calls, self.seconds)}"
        if self.latencies:
            text += f"   {latency_text(self.latencies, 2)}"
        if self.calls:
            text += f"   {self.cpu.per(self.calls)}"
        for more in (self.split, self.collector, self.python_calls):
            if more:
                text += "\n           " + more
        return text


@dataclass
class Run:
    """Every phase of one run, and what went wrong."""

    label: str
    phases: dict[str, Phase] = field(default_factory=dict)
    refusals: Counter[str] = field(default_factory=Counter)
    rows: tuple[int, int] = (0, 0)

    def phase(self, name: str) -> Phase:
        return self.phases.setdefault(name, Phase(name))


# -- the agents ------------------------------------------------------------------------------


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
async def agent_connection(url: str, client: str):
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
    args = {**ENTRY, "suite": suite}
    if chosen:
        args["seed"] = f"bench-{agent.n}"
    body = await timed_call(agent, run, run.phase("enter"), "enter_open_challenge", args)
    if body is not None:
        agent.handle, agent.objects = body["attempt_handle"], body["objects"]


async def act(agent: Agent, run: Run, actions: int) -> None:
    phase = run.phase("actions")
    for j in range(actions):
        if not agent.handle:
            return
        args = {"challenge_handle": agent.handle, "expected_action_index": agent.index}
        body = await timed_call(agent, run, phase, "chamber_action", args | plan(agent, j))
        if body is not None:
            agent.index = body["action_index"]


async def seal(agent: Agent, run: Run) -> None:
    if agent.handle:
        args = {"challenge_handle": agent.handle, "expected_action_index": agent.index}
        await timed_call(agent, run, run.phase("seal"), "seal_attempt", args)


async def run_phase(
    run: Run, name: str, server: Server, agents: list[Agent], job: Any, *args: Any
) -> None:
    """Run ``job(agent, run, *args)`` for every agent at once; time it, count CPU, and say
    where its commits spent their time (the server's ``/healthz`` store counters) and, for a
    probed server (``--gc``), what the cyclic collector cost meanwhile."""
    phase = run.phase(name)
    before = await trio.to_thread.run_sync(_get_json, f"{server.url}/healthz")
    if server.probe_dir is not None:
        await server.probe()  # the collections so far are not this phase's
    start = time.perf_counter()
    with cpu_window(server.pid) as phase.cpu:
        async with trio.open_nursery() as nursery:
            for agent in agents:
                nursery.start_soon(job, agent, run, *args)
    phase.seconds = time.perf_counter() - start
    if server.probe_dir is not None:
        figures, _ = await server.probe()
        phase.collector = collector_text(figures, phase.calls)
    after = await trio.to_thread.run_sync(_get_json, f"{server.url}/healthz")
    phase.split = commit_split(before["store"], after["store"])


def collector_text(figures: dict[str, Any], calls: int) -> str:
    """The collections a `probed_serve` probe counted, and their CPU (per call too)."""
    cpu_ms = figures["total_pause_cpu_ms"]
    per = f" = {cpu_ms * 1e3 / calls:.1f} us per call" if calls else ""
    young, middle, old = figures["collections"]
    return (
        f"collector: {young}/{middle}/{old} collections (young/middle/old), CPU {cpu_ms:.1f} ms"
        f"{per}, longest {max(figures['longest_pause_cpu_ms']):.1f} ms"
    )


async def pool_ready(url: str, suite: str, wanted: int) -> None:
    """Wait until the server's room pool for ``suite`` holds ``wanted`` rooms (or is full)."""
    while True:
        body = await trio.to_thread.run_sync(_get_json, f"{url}/chamber/pool")
        state = body["suites"][suite]
        if state["ready"] >= min(wanted, state["size"]) and state["size"]:
            print(f"room pool of {suite}: {state['ready']} ready", file=sys.stderr)
            return
        await trio.sleep(0.2)


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


async def one_run(args: argparse.Namespace, directory: Path, group_commit: bool) -> Run:
    """Start a server, connect every agent, run the three phases, stop, check the rows."""
    run = Run("group commit " + ("on" if group_commit else "off"))
    db = directory / ("group.db" if group_commit else "single.db")
    with trio.fail_after(args.timeout):
        config = directory / "agora.toml"
        # One pooled room per agent, so a whole burst of entries finds its rooms ready.
        text = f"[options.chamber]\nroom_pool_size = {max(args.agents, 128)}\n"
        # The agents are anonymous, so they share one bucket: past its size, lift its limit.
        if args.agents > ANONYMOUS_PER_MINUTE:
            text += "anonymous_enter_per_minute = 0\n"
        config.write_text(text)
        probe = directory / f"probe-{db.stem}" if args.gc or args.calls else None
        if probe is not None:
            probe.mkdir()
        if args.calls:  # inherited by the server: probed_serve profiles on SIGUSR2
            os.environ["BENCH_PROFILE"] = "1"
        async with agora_serve(
            db,
            "chamber",
            config=config,
            synchronous=args.synchronous,
            group_commit=str(group_commit).lower(),
            probe=probe,
        ) as server:
            print(f"[{run.label}] server pid {server.pid} on {server.url}", file=sys.stderr)
            url = f"{server.url.replace('http://', 'ws://')}/mcp/chamber"
            async with AsyncExitStack() as stack:
                agents = []
                for n in range(args.agents):
                    client = await stack.enter_async_context(agent_connection(url, args.client))
                    agents.append(Agent(client, n))
                if not args.chosen_seeds:
                    await pool_ready(server.url, args.suite, args.agents)
                chosen = args.chosen_seeds
                profile = args.py_spy and args.py_spy.with_suffix(f".{db.stem}.txt")
                phases = (
                    ("enter", enter, (args.suite, chosen)),
                    ("actions", act, (args.actions,)),
                    ("seal", seal, ()),
                )
                traced = args.strace and args.strace.with_suffix(f".{db.stem}.txt")
                for name, job, extra in phases:
                    spied = profile if name == args.py_spy_phase else None
                    counted = traced if name == args.py_spy_phase else None
                    profiled = args.calls and name == args.py_spy_phase
                    async with (
                        py_spy(server.pid, spied, args.py_spy_rate, args.py_spy_gil),
                        strace(server.pid, counted),
                        python_calls(server, run.phase(name), profiled, args.top),
                    ):
                        await run_phase(run, name, server, agents, job, *extra)
    conn = sqlite3.connect(db)
    try:
        actions = conn.execute("SELECT count(*) FROM chamber_actions").fetchone()[0]
        sealed = conn.execute("SELECT count(*) FROM chamber_cards").fetchone()[0]
    finally:
        conn.close()
    run.rows = (actions, sealed)
    assert actions == run.phase("actions").calls, (actions, run.phase("actions").calls)
    assert sealed == run.phase("seal").calls, (sealed, run.phase("seal").calls)
    return run


def report(run: Run) -> None:
    print(f"{run.label}:")
    for phase in run.phases.values():
        print("  " + phase.line())
    actions, cards = run.rows
    print(f"  committed rows: {actions} transcript records, {cards} cards", end="")
    print(f"; refusals: {dict(run.refusals)}" if run.refusals else "; no refusals")


# -- the transport floor ----------------------------------------------------------------------


async def echo_floor(args: argparse.Namespace) -> Phase:
    """The same agents and message count against a bare echo server: the transport floor."""
    phase = Phase("echo")
    process = await trio.lowlevel.open_process(
        [sys.executable, echo_script], stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        with trio.fail_after(START_TIMEOUT):
            announced = b""
            while b"\n" not in announced:
                announced += await process.stderr.receive_some(4096)
            port = int(announced.split(b"\n")[0].rsplit(b":", 1)[1])
        message = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {
                    "name": "chamber_action",
                    "arguments": {
                        "challenge_handle": "chl-0123456789abcdef",
                        "op": "inspect",
                        "object": "clock_face",
                        "expected_action_index": 7,
                    },
                },
            }
        )

        async def agent(ws: Any) -> None:
            for _ in range(args.actions):
                start = time.perf_counter()
                if args.client == "lean":
                    await ws.send(payload)
                    await ws.recv()
                else:
                    await ws.send_message(message)
                    await ws.get_message()
                phase.latencies.append(time.perf_counter() - start)
                phase.calls += 1

        async def open_one(stack: AsyncExitStack, url: str) -> Any:
            if args.client == "lean":
                ws = await LeanWebSocket.connect(url)
                stack.push_async_callback(ws.aclose)
                return ws
            return await stack.enter_async_context(open_websocket_url(url))

        payload = message.encode()
        with trio.fail_after(args.timeout):
            async with AsyncExitStack() as stack:
                sockets = [
                    await open_one(stack, f"ws://{HOST}:{port}/") for _ in range(args.agents)
                ]
                start = time.perf_counter()
                with cpu_window(process.pid) as phase.cpu:
                    async with trio.open_nursery() as nursery:
                        for ws in sockets:
                            nursery.start_soon(agent, ws)
                phase.seconds = time.perf_counter() - start
    finally:
        process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
    return phase


async def main(args: argparse.Namespace) -> None:
    limit = raise_fd_limit()
    print(
        f"chamber_attempts: {args.agents} agents x {args.actions} actions, suite {args.suite},"
        f" synchronous={args.synchronous}, RLIMIT_NOFILE {limit}, {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory(prefix="agora-chamber-bench-") as tmp:
        directory = Path(tmp)
        cost = commit_cost(directory, args.synchronous)
        print(f"one single-row commit (synchronous={args.synchronous}) on this disk: "
              f"{cost * 1e3:.3f} ms")  # fmt: skip
        grouped = await one_run(args, directory, group_commit=True)
        report(grouped)
        a = grouped.phase("actions")
        if not args.no_echo:
            echo = await echo_floor(args)
            print("transport floor (bare trio-websocket echo, same agents, same message size):")
            print("  " + echo.line())
            if echo.rate:
                print(f"  chamber actions/s = {a.rate / echo.rate:.0%} of the echo round trips/s")
        if args.no_baseline:
            return
        single = await one_run(args, directory, group_commit=False)
        report(single)
    b = single.phase("actions")
    if not (a.calls and b.calls):
        raise SystemExit("no acknowledged actions: nothing to compare")
    s, t = grouped.phase("seal"), single.phase("seal")
    print(
        f"group commit on/off: actions/s x{a.rate / b.rate:.2f},"
        f" seals/s x{s.rate / t.rate:.2f},"
        f" action p99 {percentile(a.latencies, 0.99) * 1e3:.1f} ms vs"
        f" {percentile(b.latencies, 0.99) * 1e3:.1f} ms"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=500, help="concurrent agents (default 500)")
    parser.add_argument("--actions", type=int, default=20, help="actions per agent (max 64)")
    parser.add_argument("--suite", choices=SUITES, default=SUITES[0])
    parser.add_argument("--synchronous", default="FULL", choices=["OFF", "NORMAL", "FULL"])
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run, at most")
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the run with group commit off"
    )
    parser.add_argument(
        "--no-echo", action="store_true", help="skip the bare WebSocket echo (transport floor)"
    )
    parser.add_argument(
        "--chosen-seeds",
        action="store_true",
        help="enter with participant seeds (rooms built at entry) instead of server seeds,"
        " which come from the room pool",
    )
    parser.add_argument(
        "--client",
        choices=["lean", "agora"],
        default="lean",
        help="the agents' client: wsload's lean one (default) or agora.client",
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        metavar="PATH",
        help="record the server with py-spy during one phase (raw stacks to PATH.*.txt)",
    )
    parser.add_argument(
        "--strace",
        type=Path,
        metavar="PATH",
        help="count the server's system calls (strace -c -f) during the --py-spy-phase phase"
        " (summary to PATH.*.txt; it slows the phase down: for counts, not times)",
    )
    parser.add_argument(
        "--py-spy-phase",
        choices=["enter", "actions", "seal"],
        default="actions",
        help="the phase --py-spy records (default actions)",
    )
    parser.add_argument(
        "--py-spy-rate", type=int, default=250, help="py-spy samples per second (default 250)"
    )
    parser.add_argument(
        "--calls",
        action="store_true",
        help="run the server under probed_serve and print the main thread's Python calls per"
        " call of the --py-spy-phase phase (cProfile: it slows the phase, counts not times)",
    )
    parser.add_argument("--top", type=int, default=8, help="modules shown by --calls")
    parser.add_argument(
        "--gc",
        action="store_true",
        help="run the server under probed_serve and print the collector's CPU per phase",
    )
    parser.add_argument(
        "--py-spy-gil",
        action="store_true",
        help="sample only the thread holding the GIL (its work, without its waits for the GIL)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.agents <= 20000 or not 0 <= args.actions <= 64:
        parser.error("--agents must be 1..20000 and --actions 0..64")
    return args


if __name__ == "__main__":
    trio.run(main, parse_args())
