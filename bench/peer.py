"""agora against the official MCP Python SDK server, side by side, with one lean client.

One run starts ``agora serve --conformance`` (a temp database) and the SDK's high-level
server (``MCPServer``, formerly FastMCP, from ``bench/sdk_server.py``) with the same trivial
tool, ``test_simple_text``. Each session opens one connection, initializes, and calls the
tool in a loop, one call at a time, for ``--seconds``; N sessions run at once.

Streamable HTTP (``--sessions``, default 1,10,100): agora, and the SDK under uvicorn (one
worker; uvloop and httptools when installed; access log off; SDK log level WARNING) in each
of its response modes: ``sse`` (the default: every POST answered as an SSE stream),
``json`` (``json_response=True``) and ``stateless-json`` (``json_response=True,
stateless_http=True``). The SDK's best mode at each N is the one agora is compared with.
stdio (one session, the only kind): ``agora stdio`` against the SDK's ``run_stdio_async``.
WebSocket (agora only: the SDK has no WebSocket server): the same N as HTTP.

The client is this one Trio process, written to cost less than either server: raw HTTP/1.1
on a kept-alive connection (Content-Length and chunked bodies, SSE replies read up to the
JSON-RPC response), raw WebSocket frames, raw stdio lines (`bench/lean.py`). It
prints calls/s, p50/p99 latency, the server's CPU in microseconds per call (user+system of
its process, from /proc), and the agora/SDK ratios. The machine's other load skews all of
it: run it on a quiet machine and read the "client cpu" column to see which side was bound.

All servers run for the whole bench and their runs are interleaved (every server at N=1, then
at N=10, ...); ``--rounds R`` repeats that R times and reports each run's best, so a burst of
load from elsewhere on a shared machine does not decide a ratio.

``--tool durable`` compares durable writes instead: both servers serve ``durable_counter``,
one SQLite counter row bumped and committed before the reply (WAL, ``synchronous=FULL`` on
both sides): agora through its store (``bench/durable.py``: writer thread, group commit),
the SDK with one connection and one transaction per call (``sdk_server.py --durable``). The
ratios then include agora over WebSocket against the SDK's best HTTP mode. No stdio runs.

Usage: ``.venv/bin/python bench/peer.py [--sessions 1,10,100] [--seconds 3] [--rounds 1]
[--modes sse,json,stateless-json] [--skip stdio,websocket] [--tool simple|durable]``
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import durable
import lean
import trio
from cli_args import names, positive_float, positive_int, positive_ints
from lean import LeanHttp, LeanStdio, LeanWs, Session
from measure import cpu_seconds, percentile, raise_fd_limit
from serve import Server, agora_serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

HERE = Path(__file__).resolve().parent
AGORA = str(Path(sys.executable).with_name("agora"))
MODES = {"sse": [], "json": ["--json"], "stateless-json": ["--json", "--stateless"]}
START_TIMEOUT = 30.0
CONNECT_CONCURRENCY = 32

# -- servers -----------------------------------------------------------------------------------


@dataclass
class Proc:
    process: trio.Process
    port: int = 0

    @property
    def pid(self) -> int:
        return self.process.pid


def sdk_http(mode: str, durable: Path | None = None) -> AbstractAsyncContextManager[Proc]:
    """The SDK's HTTP server in ``mode`` (with ``durable_counter`` on ``durable``)."""
    command = [sys.executable, str(HERE / "sdk_server.py"), "http", *MODES[mode]]
    return spawn([*command, "--durable", str(durable)] if durable else command, "the SDK server")


def agora_durable(db: Path) -> AbstractAsyncContextManager[Proc]:
    """agora serving ``durable_counter`` at /mcp/durable (``bench/durable.py``)."""
    return spawn([sys.executable, str(HERE / "durable.py"), str(db)], "agora (durable)")


@asynccontextmanager
async def spawn(command: list[str], what: str) -> AsyncIterator[Proc]:
    """A server process that prints ``... on http://HOST:PORT`` on stderr; killed at the end."""
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        seen = bytearray()
        with trio.fail_after(START_TIMEOUT):
            while b" on http://" not in seen or not seen.endswith(b"\n"):
                chunk = await process.stderr.receive_some(65536)
                if not chunk:
                    raise RuntimeError(f"{what} did not start:\n{seen.decode()}")
                seen += chunk
        line = next(x for x in seen.decode().splitlines() if " on http://" in x)
        proc = Proc(process, int(line.rsplit(":", 1)[1]))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain, process.stderr)
            yield proc
            nursery.cancel_scope.cancel()
    finally:
        process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some(65536):
        pass


@asynccontextmanager
async def stdio_server(command: list[str]) -> AsyncIterator[trio.Process]:
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        yield process
    finally:
        process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()


# -- load --------------------------------------------------------------------------------------


@dataclass
class Result:
    calls: int
    seconds: float
    latencies: list[float]
    server_cpu: float
    client_cpu: float
    errors: int

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    @property
    def us_per_call(self) -> float:
        return self.server_cpu / max(self.calls, 1) * 1e6

    def ms(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000 if self.latencies else float("nan")


async def drive(
    open_session: Callable[[], Awaitable[Session]], sessions: int, seconds: float, pid: int
) -> Result:
    """``sessions`` sessions calling in a loop for ``seconds``; the server is process ``pid``."""
    latencies: list[float] = []
    errors = 0
    opened: list[Session] = []
    all_open = trio.Event()
    go = trio.Event()
    deadline = [0.0]
    limiter = trio.CapacityLimiter(CONNECT_CONCURRENCY)

    async def one() -> None:
        nonlocal errors
        async with limiter:
            session = await open_session()
        opened.append(session)
        if len(opened) == sessions:
            all_open.set()
        await go.wait()
        clock = time.perf_counter
        for rid in itertools.count(1):
            t0 = clock()
            if t0 >= deadline[0]:
                break
            ok = await session.call(rid)
            t1 = clock()
            if not ok:
                errors += 1
            elif t1 <= deadline[0]:
                latencies.append(t1 - t0)
        await session.aclose()

    with trio.fail_after(seconds + 120):
        async with trio.open_nursery() as nursery:
            for _ in range(sessions):
                nursery.start_soon(one)
            await all_open.wait()
            await trio.sleep(0.2)
            cpu0, mine0 = cpu_seconds(pid), time.process_time()
            deadline[0] = time.perf_counter() + seconds
            go.set()
            await trio.sleep(seconds)
            server_cpu = cpu_seconds(pid) - cpu0
            client_cpu = time.process_time() - mine0
    return Result(len(latencies), seconds, latencies, server_cpu, client_cpu, errors)


def row(label: str, n: int, r: Result) -> str:
    errors = f"  ({r.errors} errors)" if r.errors else ""
    return (
        f"{label:<24} {n:>4} | {r.rate:>9,.0f} {r.ms(0.5):>7.2f} {r.ms(0.99):>7.2f} "
        f"{r.us_per_call:>8.0f} | {r.client_cpu / r.seconds:>6.0%}{errors}"
    )


HEADER = (
    f"{'server':<24} {'N':>4} | {'calls/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'µs/call':>8} | "
    f"{'client':>6}"
)


Best = dict[tuple[str, int], Result]


def keep(best: Best, label: str, n: int, r: Result) -> None:
    """Remember ``r`` if it is the best run of ``label`` at ``n`` sessions so far."""
    if (label, n) not in best or r.rate > best[label, n].rate:
        best[label, n] = r


async def run_network(args: argparse.Namespace, tmp: Path, best: Best) -> None:
    """Every HTTP server (and agora's WebSocket), runs interleaved, ``args.rounds`` times."""
    async with contextlib.AsyncExitStack() as stack:
        targets: dict[str, tuple[Callable[[], Awaitable[Session]], int]] = {}
        durable = args.tool == "durable"
        for mode in args.modes:
            db = tmp / f"sdk-{mode}.db" if durable else None
            sdk = await stack.enter_async_context(sdk_http(mode, db))
            targets[f"sdk http {mode}"] = (partial(_http, sdk.port, "/mcp"), sdk.pid)
        if durable:
            agora: Proc | Server = await stack.enter_async_context(
                agora_durable(tmp / "agora-durable.db")
            )
            path = "/mcp/durable"
        else:
            agora = await stack.enter_async_context(
                agora_serve(tmp / "agora.db", "conformance", conformance="true")
            )
            path = "/mcp/conformance"
        targets["agora http"] = (partial(_http, agora.port, path), agora.pid)
        if "websocket" not in args.skip:
            url = f"ws://127.0.0.1:{agora.port}{path}"
            targets["agora websocket"] = (partial(_ws, url), agora.pid)
        for _ in range(args.rounds):
            for n in args.sessions:
                for label, (target, pid) in targets.items():
                    keep(best, label, n, await drive(target, n, args.seconds, pid))


async def run_stdio(args: argparse.Namespace, tmp: Path, best: Best) -> None:
    """One stdio session with each server, a fresh process per run, ``args.rounds`` times."""
    commands = {
        "sdk stdio": [sys.executable, str(HERE / "sdk_server.py"), "stdio"],
        "agora stdio": [AGORA, "stdio", "--toolset", "conformance", "--db"],
    }
    for round_no in range(args.rounds):
        for label, command in commands.items():
            db = [str(tmp / f"stdio-{round_no}.db")] if label.startswith("agora") else []
            async with stdio_server(command + db) as process:
                client = await LeanStdio(process).open()
                r = await drive(partial(_same, client), 1, args.seconds, process.pid)
                keep(best, label, 1, r)


def report(args: argparse.Namespace, best: Best) -> None:
    """The table, then the agora/SDK ratios against the SDK's best HTTP mode at each N."""
    print(HEADER)
    print("-" * len(HEADER))
    labels = [*(f"sdk http {m}" for m in args.modes), "agora http", "agora websocket"]
    for label in labels:
        for n in args.sessions:
            if (label, n) in best:
                print(row(label, n, best[label, n]))
    for label in ("sdk stdio", "agora stdio"):
        if (label, 1) in best:
            print(row(label, 1, best[label, 1]))
    print("\nagora / SDK (calls/s ratio; SDK µs/call over agora µs/call)")
    for n in args.sessions:
        mode = max(args.modes, key=lambda m: best[f"sdk http {m}", n].rate)
        sdk_r, a = best[f"sdk http {mode}", n], best["agora http", n]
        print(
            f"  http  N={n:<4} vs sdk {mode:<15} calls/s x{a.rate / sdk_r.rate:.1f}, "
            f"cpu/call x{sdk_r.us_per_call / a.us_per_call:.1f} less"
        )
        if ("agora websocket", n) in best:
            w = best["agora websocket", n]
            print(
                f"  ws    N={n:<4} vs sdk {mode:<15} calls/s x{w.rate / sdk_r.rate:.1f}, "
                f"cpu/call x{sdk_r.us_per_call / w.us_per_call:.1f} less"
            )
    if ("agora stdio", 1) in best:
        a, sdk_r = best["agora stdio", 1], best["sdk stdio", 1]
        print(
            f"  stdio N=1    vs sdk stdio           calls/s x{a.rate / sdk_r.rate:.1f}, "
            f"cpu/call x{sdk_r.us_per_call / a.us_per_call:.1f} less"
        )


async def run(args: argparse.Namespace) -> None:
    raise_fd_limit()
    print(
        f"{args.seconds:g} s per run, best of {args.rounds} round(s) (runs interleaved), one client"
        " process; µs/call = server CPU per call\n"
    )
    best: Best = {}
    if args.tool == "durable":
        lean.TOOL = durable.TOOL  # every lean session now calls the durable counter
        print(f"tool: {durable.TOOL} (one SQLite commit per call, synchronous=FULL, WAL)\n")
    with tempfile.TemporaryDirectory() as tmp:
        await run_network(args, Path(tmp), best)
        if "stdio" not in args.skip and args.tool == "simple":
            await run_stdio(args, Path(tmp), best)
    report(args, best)


async def _http(port: int, path: str) -> Session:
    return await LeanHttp(port, path).open()


async def _ws(url: str) -> Session:
    return await LeanWs(url).open()


async def _same(session: Session) -> Session:
    return session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sessions",
        type=positive_ints,
        default=[1, 10, 100],
        help="comma-separated session counts (default 1,10,100)",
    )
    parser.add_argument("--seconds", type=positive_float, default=3.0, help="duration of each run")
    parser.add_argument(
        "--modes",
        type=names(MODES),
        default=list(MODES),
        help="SDK HTTP modes to try (default sse,json,stateless-json)",
    )
    parser.add_argument(
        "--skip",
        type=names(["stdio", "websocket"], none_ok=True),
        default=[],
        help="stdio and/or websocket",
    )
    parser.add_argument(
        "--tool",
        choices=["simple", "durable"],
        default="simple",
        help="simple: a constant text; durable: a SQLite counter committed before the reply",
    )
    parser.add_argument(
        "--rounds", type=positive_int, default=1, help="repeat every run; report each one's best"
    )
    args = parser.parse_args()
    if max(args.sessions) > 1000 or args.seconds > 60:
        parser.error("bounded: at most 1000 sessions and 60 s per run")
    trio.run(run, args)


if __name__ == "__main__":
    main()
