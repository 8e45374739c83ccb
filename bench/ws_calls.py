"""Tool calls over WebSocket: agora against a bare trio-websocket echo server, in one run.

Starts ``agora serve --conformance`` (a temp database) and the echo server of
``bench/echo.py``, each a subprocess on 127.0.0.1. For each N in ``--sessions`` it opens N
WebSocket sessions to each server and has every session send one request, wait for the
reply, and repeat, for ``--seconds``. The request is a ``tools/call`` of a trivial tool
(``test_simple_text`` when the conformance fixtures are there, else chess ``get_board``);
the echo server sends the same text back, which is the transport's limit on this machine.
It prints calls/s, p50/p99 latency, the server's CPU use, and agora's share of the echo
server's calls/s. Then it holds ``--idle`` initialized, idle sessions and prints agora's
resident memory per connection (VmRSS before and after).

The load generator is this one Trio process with a minimal hand-framed WebSocket client, so
that it costs less CPU than either server; the "cpu" columns (server, and client for the
agora and echo runs) show which side was the bottleneck.
Load stays on loopback and is bounded in sessions and time. Nothing here runs in CI.

Usage: ``.venv/bin/python bench/ws_calls.py [--sessions 1,10,100,1000] [--seconds 3]
[--idle 1000]``
"""

from __future__ import annotations

import argparse
import itertools
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec
import trio
from cli_args import non_negative_int, positive_float, positive_ints
from echo import SCRIPT as echo_script
from serve import pool_full
from wsload import INITIALIZE, LeanWebSocket

AGORA = str(Path(sys.executable).with_name("agora"))
URL = re.compile(r"serving .* on (\S+)")
START_TIMEOUT = 30.0
#: Handshakes in flight at once while a load's sessions are opened.
CONNECT_CONCURRENCY = 64
CLK_TCK = os.sysconf("SC_CLK_TCK")

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


# -- servers ---------------------------------------------------------------------------------


class Server:
    """A server subprocess whose stderr announces ``... on <url>``."""

    def __init__(self, args: list[str], name: str) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            args, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise SystemExit(f"{name} did not start") from None
            found = URL.search(line)
            if found:
                self.url = found.group(1).replace("http://", "ws://")
                return

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self._lines.put(line)

    def cpu_seconds(self) -> float:
        """User + system CPU time the server has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def rss_kb(self) -> int:
        """Resident set size (VmRSS) in KiB."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        assert found is not None
        return int(found.group(1))

    def stop(self) -> None:
        """SIGTERM and wait."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# -- load ------------------------------------------------------------------------------------


@dataclass
class Target:
    """What each session calls."""

    path: str
    tool: str
    handshake: bool  # agora sessions initialize; the echo server would only echo it


@dataclass
class Result:
    """One load run."""

    calls: int
    seconds: float
    latencies: list[float]
    cpu: float  # the server's CPU use, in cores
    client_cpu: float  # this process's
    errors: int

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    def pct(self, q: float) -> float:
        """Latency percentile ``q`` (0..1) in milliseconds."""
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def open_session(url: str, target: Target) -> LeanWebSocket:
    """A connected (and, for agora, initialized) WebSocket session."""
    ws = await LeanWebSocket.connect(url + target.path)
    if target.handshake:
        await ws.send(_encode(INITIALIZE))
        await ws.recv()
        await ws.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return ws


def call_bytes(rid: int, tool: str) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}},
    }
    return _encode(message)


async def load(server: Server, target: Target, sessions: int, seconds: float) -> Result:
    """``sessions`` sessions each calling in a loop for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    start = trio.Event()
    opened = 0
    all_open = trio.Event()
    limiter = trio.CapacityLimiter(CONNECT_CONCURRENCY)
    window: list[float] = []

    async def session() -> None:
        nonlocal opened, errors
        async with limiter:
            ws = await open_session(server.url, target)
        opened += 1
        if opened == sessions:
            all_open.set()
        await start.wait()
        deadline = window[0]
        ids = itertools.count(1)
        clock = time.perf_counter
        while True:
            rid = next(ids)
            t0 = clock()
            if t0 >= deadline:
                break
            await ws.send(call_bytes(rid, target.tool))
            reply = _decode(await ws.recv())
            t1 = clock()
            if reply.get("id") != rid or "error" in reply:
                errors += 1
            elif t1 <= deadline:
                latencies.append(t1 - t0)
        await ws.aclose()

    with trio.fail_after(seconds + 120):
        async with trio.open_nursery() as nursery:
            for _ in range(sessions):
                nursery.start_soon(session)
            await all_open.wait()
            cpu0, mine0 = server.cpu_seconds(), time.process_time()
            window.append(time.perf_counter() + seconds)
            start.set()
            await trio.sleep(seconds)
            cpu = (server.cpu_seconds() - cpu0) / seconds
            client = (time.process_time() - mine0) / seconds
    return Result(len(latencies), seconds, latencies, cpu, client, errors)


async def idle_rss(server: Server, target: Target, count: int) -> tuple[int, int]:
    """VmRSS (KiB) before and while ``count`` initialized sessions sit idle."""
    await trio.sleep(0.5)
    before = server.rss_kb()
    held: list[LeanWebSocket] = []
    limiter = trio.CapacityLimiter(CONNECT_CONCURRENCY)

    async def one() -> None:
        async with limiter:
            held.append(await open_session(server.url, target))

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for _ in range(count):
                nursery.start_soon(one)
        await trio.sleep(1.0)  # let the server settle before reading its memory
        during = server.rss_kb()
        for ws in held:
            await ws.aclose()
    await trio.sleep(2.0)  # let the server finish closing them before the next run
    return before, during


async def pick_target(server: Server) -> Target:
    """``test_simple_text`` from the conformance fixtures if served, else chess get_board."""
    ws = await open_session(server.url, Target("/mcp", "", True))
    await ws.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    tools = {t["name"] for t in _decode(await ws.recv())["result"]["tools"]}
    await ws.aclose()
    if "test_simple_text" in tools:
        return Target("/mcp/conformance", "test_simple_text", True)
    return Target("/mcp/chess", "get_board", True)


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        command = [AGORA, "serve", "--port", "0", "--db", db, "--conformance"]
        try:
            agora = Server(command, "agora")
        except SystemExit:
            agora = Server(command[:-1], "agora")  # a build without the conformance fixtures
        echo = Server([sys.executable, echo_script], "echo")
        try:
            # its chamber builds its room pools after it starts listening: not during a load
            await pool_full(agora.url.replace("ws://", "http://"))
            target = await pick_target(agora)
            echo_target = Target(target.path, target.tool, False)
            print(f"agora {agora.url}{target.path} tool {target.tool}; echo {echo.url}")
            print(f"{args.seconds:g} s per run, one client process, {os.cpu_count()} CPUs\n")
            if args.idle:  # first, while the servers' heaps are fresh
                for server, tgt in ((agora, target), (echo, echo_target)):
                    before, during = await idle_rss(server, tgt, args.idle)
                    per = (during - before) / args.idle
                    print(
                        f"{server.name}: {args.idle} idle sessions: VmRSS {before / 1024:.1f} MiB"
                        f" -> {during / 1024:.1f} MiB, {per:.1f} KiB per connection"
                    )
                print()
            header = (
                f"{'N':>5} | {'agora calls/s':>13} {'p50 ms':>7} {'p99 ms':>7} {'cpu':>5} | "
                f"{'echo calls/s':>12} {'p50 ms':>7} {'p99 ms':>7} {'cpu':>5} | {'ratio':>5} | "
                f"{'client cpu':>10}"
            )
            print(header)
            print("-" * len(header))
            for n in args.sessions:
                a = await load(agora, target, n, args.seconds)
                e = await load(echo, echo_target, n, args.seconds)
                print(
                    f"{n:>5} | {a.rate:>13,.0f} {a.pct(0.5):>7.2f} {a.pct(0.99):>7.2f} "
                    f"{a.cpu:>5.0%} | {e.rate:>12,.0f} {e.pct(0.5):>7.2f} {e.pct(0.99):>7.2f} "
                    f"{e.cpu:>5.0%} | {a.rate / e.rate:>5.0%} | "
                    f"{a.client_cpu:>4.0%} {e.client_cpu:>4.0%}"
                    + (f"  ({a.errors} agora errors)" if a.errors else ""),
                    flush=True,
                )
        finally:
            agora.stop()
            echo.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sessions",
        type=positive_ints,
        default=[1, 10, 100, 1000],
        help="comma-separated session counts (default 1,10,100,1000)",
    )
    parser.add_argument("--seconds", type=positive_float, default=3.0, help="duration of each run")
    parser.add_argument(
        "--idle", type=non_negative_int, default=1000, help="idle sessions for RSS (0: skip)"
    )
    args = parser.parse_args()
    if max(args.sessions) > 2000 or args.idle > 2000 or args.seconds > 60:
        parser.error("bounded: at most 2000 sessions and 60 s per run")
    trio.run(run, args)


if __name__ == "__main__":
    main()
