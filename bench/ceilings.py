"""What the cheapest calls cost this server, and what that leaves within the machine's reach.

Starts ``agora serve`` (every toolset, a fresh SQLite file, one principal) on 127.0.0.1 and
opens ``--sessions`` WebSocket sessions with the debate bench's wire client
(`debate_wire.WireClient`: raw frames on the non-blocking socket, the cheapest client the
benches have). Each session calls in a closed loop for ``--seconds``, once per kind:

- ``ping``: MCP's own no-op request. The server reads the frame, decodes the JSON-RPC
  message, answers and writes the reply: no tool, no actor, no store. No request of any
  tool can cost the server less.
- ``get_board`` (chess, no arguments): a read-only tool call: the tool path (validation,
  the table's actor, the result and its outputSchema check) on top, still no write.

For each, printed: calls/s, and per call the server's CPU (every thread), its main thread's
(the one event loop that parses, runs and answers every call) and the load generator's.

Then the ceilings those floors put on the performance goals of the chamber, debate and
router issues, each with its arithmetic, taking only the calls a goal needs and nothing of
what those calls do beyond a ping (so every real figure is below its ceiling):

- one event loop answers at most 1 / (main thread per call) calls a second, and a burst of
  N calls that arrive at once is answered no sooner than N x (main thread per call) after
  it began;
- the machine's cores are shared by the server and the load generator: at most
  cores / (server + client CPU per call) calls a second in all.

Usage: ``.venv/bin/python bench/ceilings.py [--sessions 1000] [--seconds 5] [--kinds
ping,get_board]`` (``--kinds`` runs only some, e.g. to profile one). Not run by
CI; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import trio
from cli_args import positive_float, positive_int
from debate_wire import WireClient, wire_connect
from measure import Cpu, cpu_window, pace_text, raise_fd_limit
from serve import agora_serve, principal_config

TOKEN = "ceilings-bench-token"
CORES = os.cpu_count() or 1
#: Sessions that open at once while a load's sessions connect.
CONNECT_CONCURRENCY = 64
WARMUP = 1.0
#: The calls it can time (``--kinds``), cheapest first.
KINDS = ("ping", "get_board")


@dataclass
class Floor:
    """One kind of call's cost, per call, in seconds."""

    name: str
    rate: float
    server: float
    main: float
    client: float

    def line(self) -> str:
        return (
            f"{self.name}: {self.rate:,.0f} calls/s; per call: server {1e6 * self.server:,.0f} us"
            f" (main thread {1e6 * self.main:,.0f} us), load generator {1e6 * self.client:,.0f} us"
        )

    def loop_rate(self, calls: int = 1) -> float:
        """Work units/s one event loop can answer when each unit is ``calls`` such calls."""
        return 1 / (calls * self.main)

    def machine_rate(self, calls: int = 1) -> float:
        """Work units/s the machine's cores allow, server and load generator together."""
        return CORES / (calls * (self.server + self.client))


async def _closed_loop(url: str, sessions: int, seconds: float, call: str, pid: int) -> Floor:
    clients: list[WireClient] = []
    limiter = trio.CapacityLimiter(CONNECT_CONCURRENCY)
    go, stop = trio.Event(), [False]

    async def agent() -> None:
        async with contextlib.AsyncExitStack() as stack:
            async with limiter:  # held while connecting only
                client = await stack.enter_async_context(wire_connect(url, TOKEN))
            clients.append(client)
            await go.wait()
            while not stop[0]:
                if call == "ping":
                    await client.request("ping", {})
                else:
                    await client.tool(call)

    async with trio.open_nursery() as nursery:
        for _ in range(sessions):
            nursery.start_soon(agent)
        with trio.fail_after(120):
            while len(clients) < sessions:  # noqa: ASYNC110 - the sessions' own tasks
                await trio.sleep(0.05)
        go.set()
        await trio.sleep(WARMUP)
        started = time.perf_counter()
        calls_before = await _progress(clients)
        with cpu_window(pid) as cpu:
            await trio.sleep(seconds)
            calls = await _progress(clients) - calls_before
        span = time.perf_counter() - started
        stop[0] = True
    return _floor(call, calls, span, cpu)


async def _progress(clients: list[WireClient]) -> int:
    """Requests the sessions have sent so far (each has at most one in flight)."""
    return sum(client._ids for client in clients)


def _floor(name: str, calls: int, span: float, cpu: Cpu) -> Floor:
    n = calls or 1
    return Floor(name, calls / span, cpu.server / n, cpu.main / n, cpu.client / n)


def _ceilings(ping: Floor, read: Floor) -> None:
    ms = 1e3
    print(f"\nceilings on this machine ({CORES} CPUs), from the ping floor alone:")
    burst = 500 * ping.main * ms
    print(
        f"- chamber: 500 enters sent at once, on one event loop: the last is answered no sooner"
        f" than 500 x {1e6 * ping.main:,.0f} us = {burst:,.1f} ms after the first arrived"
        f" (goal: enter p99 < 50 ms); as a read tool call, {500 * read.main * ms:,.1f} ms"
    )
    print(
        f"- debate: a post is 3 calls (post, wait, advance): at most {ping.loop_rate(3):,.0f}"
        f" posts/s on one event loop, {ping.machine_rate(3):,.0f}/s on the machine with this"
        f" load generator; as read tool calls, {read.loop_rate(3):,.0f}/s and"
        f" {read.machine_rate(3):,.0f}/s (goal: 2,000 posts/s, delivery p99 < 20 ms)"
    )
    print(
        f"- router: a mutation is 1 call: at most {ping.loop_rate():,.0f}/s on one event loop,"
        f" {ping.machine_rate():,.0f}/s on the machine; as read tool calls,"
        f" {read.loop_rate():,.0f}/s and {read.machine_rate():,.0f}/s (goals: 2,000"
        f" mutations/s with p99 < 50 ms; replays >= 10,000/s)"
    )
    free = CORES - 10_000 * ping.client
    print(
        f"  10,000 replays/s: the load generator alone takes {10_000 * ping.client:.2f} of the"
        f" {CORES} cores at its ping cost, leaving {max(free, 0.0):.2f} core, i.e."
        f" {1e6 * max(free, 0.0) / 10_000:,.0f} us of server CPU per call; one event loop"
        f" would need <= 100 us per call of main thread (a ping takes {1e6 * ping.main:,.0f})"
    )


async def run(args: argparse.Namespace) -> None:
    raise_fd_limit()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = principal_config(directory, TOKEN)
        async with agora_serve(directory / "bench.db", "chess,chamber,router,debate",
                               config=config) as server:  # fmt: skip
            url = f"{server.url.replace('http://', 'ws://')}/mcp/chess"
            print(
                f"ceilings: {args.sessions} sessions over WebSocket, {args.seconds:g} s per kind,"
                f" {CORES} CPUs, server pid {server.pid}; {pace_text()}",
                flush=True,
            )
            floors = []
            for call in args.kinds:
                floor = await _closed_loop(url, args.sessions, args.seconds, call, server.pid)
                print(floor.line(), flush=True)
                floors.append(floor)
            if len(floors) == 2:
                _ceilings(*floors)


def kinds(text: str) -> list[str]:
    """An argparse type: the kinds of call to time, comma-separated, each one of `KINDS`."""
    chosen = text.split(",")
    if unknown := [k for k in chosen if k not in KINDS]:
        raise argparse.ArgumentTypeError(
            f"unknown kind {', '.join(unknown)}; the kinds are {', '.join(KINDS)}"
        )
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=positive_int, default=1000)
    parser.add_argument("--seconds", type=positive_float, default=5.0)
    parser.add_argument(
        "--kinds",
        type=kinds,
        default=["ping", "get_board"],
        help="calls to time (default ping,get_board; the ceilings need both, in that order)",
    )
    args = parser.parse_args()
    if args.sessions > 2000 or args.seconds > 60:
        parser.error("bounded: at most 2000 sessions and 60 s per kind")
    trio.run(run, args)


if __name__ == "__main__":
    main()
