"""Chamber entries sent at once, timed on the wire: the enter p99 of a burst of N entries.

`chamber_attempts.py` times each agent's call in its own Trio task, so its latencies include
the load generator's own queueing: its 500 agents take 35-50 ms of the client's CPU to send
their requests and read the replies, and a reply that has arrived waits for the generator to
get round to it. Here nothing stands between a reply and its time stamp. ``--agents`` WebSocket
sessions (the cheapest client the benches have, `debate_wire`'s, with no bearer token: the
agents are anonymous) are opened and initialized first. Then, for each of ``--bursts``
bursts, the room pool is left to fill (``room_pool_size`` is one room per agent) and a single
loop, with no task switch, writes every agent's pre-encoded ``enter_open_challenge`` frame on
its socket, noting the time just before each write, and then waits on all the sockets at
once (``epoll``), noting the time at which each reply's last byte is read. A reply's latency
is that time less its request's; the replies are decoded afterwards, and the run fails unless
each is a successful entry with an attempt handle of its own.

Printed per burst: how long the writes took (first to last), the latency p50 / p99 / max, and
the server's CPU per entry (every thread, and the main thread: the event loop that reads,
handles and answers every entry) and the main thread's minor page faults per entry (memory
touched for the first time, about 3 us each on a VM); then the p99 over all entries of all
bursts. Each burst
finds its rooms in the pool (the server builds none during one) and the rate limits are the
defaults but for ``anonymous_enter_per_minute``, whose one bucket all the agents share.

With ``--compare``, each entry burst is followed by a burst of ``ping`` requests (the
transport's and JSON-RPC's own cost: no tool, no write) and one of ``observe_chamber`` calls
on the attempts just entered (a tool call and its actor, no write), timed the same way: an
entry's cost over theirs is what the entry itself adds, and a ping burst's p99 is the floor
for any burst of that size on this machine in its present state.

With ``--servers N`` (N > 1), N ``agora serve`` processes open one SQLite file shared
(``shared = true``: each a version guard per write and a probe per cached read, the file
polled for the others' commits) and the agents' sessions are dealt out among them in turn:
what a second event loop on the same file would give. The CPU printed is then the first
server's, per entry it served.

Usage: ``.venv/bin/python bench/chamber_burst.py [--agents 500] [--bursts 5] [--compare]
[--servers 1] [--suite chambre-chrono-v0] [--synchronous FULL] [--timeout 300]``. Not run by
CI; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import select
import struct
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import trio
from chamber_agents import ENTRY, SUITES
from chamber_phases import pool_ready
from cli_args import SYNCHRONOUS, int_range, positive_float, positive_int
from debate_wire import WireClient, wire_connect
from measure import cpu_window, latency_text, pace_text, raise_fd_limit
from serve import agora_serve
from wsload import client_frame

if TYPE_CHECKING:
    import socket

#: Sessions that open at once while the agents connect.
CONNECT_CONCURRENCY = 64
#: Seconds a burst may take before the run fails.
BURST_TIMEOUT = 60.0


def call_frame(rid: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    """One request, framed (id ``rid``)."""
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        request["params"] = params
    return client_frame(msgspec.json.encode(request))


def enter_frame(rid: int, suite: str) -> bytes:
    """One agent's ``enter_open_challenge`` request, framed (id ``rid``)."""
    arguments = {**ENTRY, "suite": suite}
    return call_frame(rid, "tools/call", {"name": "enter_open_challenge", "arguments": arguments})


def observe_frame(rid: int, entry: dict[str, Any]) -> bytes:
    """``observe_chamber`` of the first object of the attempt ``entry`` (its reply) opened."""
    arguments = {"challenge_handle": entry["attempt_handle"], "object": entry["objects"][0]}
    return call_frame(rid, "tools/call", {"name": "observe_chamber", "arguments": arguments})


def _complete(buf: bytearray) -> bytes | None:
    """The payload of the first whole frame in ``buf`` (removed from it), else None."""
    if len(buf) < 2:
        return None
    size, offset = buf[1] & 0x7F, 2
    if size == 126:
        if len(buf) < 4:
            return None
        size, offset = struct.unpack_from("!H", buf, 2)[0], 4
    elif size == 127:
        if len(buf) < 10:
            return None
        size, offset = struct.unpack_from("!Q", buf, 2)[0], 10
    if len(buf) < offset + size:
        return None
    payload = bytes(buf[offset : offset + size])
    opcode = buf[0] & 0x0F
    del buf[: offset + size]
    return payload if opcode in (0x1, 0x2) else b""  # b"": a control frame, not the reply


def burst(
    socks: list[socket.socket], frames: list[bytes]
) -> tuple[list[float], list[bytes], float]:
    """Write every frame on its socket, then read each reply: per agent, seconds from just
    before its write to the read that completed its reply, and the reply's payload; and the
    seconds from the first write to the last.

    Raises:
        TimeoutError: a reply did not come within `BURST_TIMEOUT`.
        ConnectionError: the server closed a connection.
    """
    n = len(socks)
    sent = [0.0] * n
    arrived = [0.0] * n
    replies: list[bytes] = [b""] * n
    bufs = [bytearray() for _ in socks]
    poller = select.epoll(n)
    index = {}
    try:
        for i, sock in enumerate(socks):
            index[sock.fileno()] = i
            poller.register(sock.fileno(), select.EPOLLIN)
        clock = time.perf_counter
        for i, sock in enumerate(socks):
            sent[i] = clock()
            sock.sendall(frames[i])  # a few hundred bytes into an empty socket buffer
        pending = n
        deadline = clock() + BURST_TIMEOUT
        while pending:
            events = poller.poll(max(deadline - clock(), 0.0))
            if not events:
                raise TimeoutError(f"{pending} of {n} replies missing after {BURST_TIMEOUT} s")
            for fd, _ in events:
                i = index[fd]
                chunk = socks[i].recv(262_144)
                now = clock()
                if not chunk:
                    raise ConnectionError(f"agent {i}: the server closed the connection")
                buf = bufs[i]
                buf += chunk
                while (payload := _complete(buf)) is not None:
                    if payload and not replies[i]:
                        replies[i], arrived[i] = payload, now
                        pending -= 1
    finally:
        poller.close()
    latencies = [a - s for a, s in zip(arrived, sent, strict=True)]
    return latencies, replies, sent[-1] - sent[0]


def check(replies: list[bytes], rids: list[int]) -> list[dict[str, Any]]:
    """Every reply answers its agent's request with a success; their results.

    Raises:
        AssertionError: one does not.
    """
    results = []
    for rid, raw in zip(rids, replies, strict=True):
        reply: dict[str, Any] = msgspec.json.decode(raw)
        assert reply.get("id") == rid, reply
        result = reply.get("result")
        assert result is not None, reply
        assert not result.get("isError"), reply
        results.append(result)
    return results


def check_entries(replies: list[bytes], rids: list[int]) -> list[dict[str, Any]]:
    """`check`, and each entry has an attempt handle of its own; the entries' bodies.

    Raises:
        AssertionError: they do not.
    """
    bodies = [result["structuredContent"] for result in check(replies, rids)]
    assert len({body["attempt_handle"] for body in bodies}) == len(bodies), "a shared handle"
    return bodies


def timed(
    server_pid: int, socks: list[socket.socket], frames: list[bytes], label: str, servers: int = 1
) -> tuple[list[float], list[bytes], str]:
    """`burst`, and its line: how long the writes took, the latency and the server's CPU (of
    the first of ``servers``, per call it served)."""
    with cpu_window(server_pid) as cpu:
        latencies, replies, writing = burst(socks, frames)
    n = -(-len(frames) // servers)
    line = (
        f"{label}: {len(frames)} written in {writing * 1e3:.1f} ms; latency on the wire "
        f"{latency_text(latencies, with_max=True)}; server CPU per call "
        f"{cpu.server / n * 1e6:.0f} us (main thread {cpu.main / n * 1e6:.0f} us, "
        f"{cpu.faults / n:.2f} page faults)"
    )
    return latencies, replies, line


def compare(
    server_pid: int,
    socks: list[socket.socket],
    entries: list[dict[str, Any]],
    rid: int,
    servers: int = 1,
) -> list[str]:
    """A burst of pings, then one of ``observe_chamber`` calls on ``entries``; their lines.

    Raises:
        AssertionError: a call failed.
    """
    rids = [rid] * len(socks)
    pings = [call_frame(rid, "ping")] * len(socks)
    _, replies, ping_line = timed(server_pid, socks, pings, "  ping", servers)
    check(replies, rids)
    observes = [observe_frame(rid, entry) for entry in entries]
    _, replies, observe_line = timed(server_pid, socks, observes, "  observe_chamber", servers)
    check(replies, rids)
    return [ping_line, observe_line]


async def main(args: argparse.Namespace) -> None:
    raise_fd_limit()
    pace = pace_text()
    lines = []
    everything: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "agora.toml"
        config.write_text(
            f"[options.chamber]\nroom_pool_size = {args.agents}\n"
            "anonymous_enter_per_minute = 0\n"  # one bucket for all the anonymous agents
        )
        db = Path(tmp) / "chamber.db"
        shared = {"shared": "true"} if args.servers > 1 else {}
        with trio.fail_after(args.timeout):
            async with AsyncExitStack() as stack:
                servers = [
                    await stack.enter_async_context(
                        agora_serve(
                            db, "chamber", config=config, synchronous=args.synchronous, **shared
                        )
                    )
                    for _ in range(args.servers)
                ]
                server = servers[0]
                made: dict[int, WireClient] = {}
                limit = trio.CapacityLimiter(CONNECT_CONCURRENCY)

                async def connect(i: int) -> None:  # agent i to server i mod N, in that order
                    url = servers[i % len(servers)].url.replace("http://", "ws://")
                    async with limit:
                        client = wire_connect(url + "/mcp/chamber", None)
                        made[i] = await stack.enter_async_context(client)

                async with trio.open_nursery() as nursery:
                    for i in range(args.agents):
                        nursery.start_soon(connect, i)
                clients = [made[i] for i in range(args.agents)]
                socks = [client.sock for client in clients]
                for b in range(1, args.bursts + 1):
                    for each in servers:
                        await pool_ready(each.url, args.suite, args.agents)
                    await trio.sleep(0.5)  # the refill's own pass of the collector
                    rids = [1000 + b] * len(clients)
                    frames = [enter_frame(rid, args.suite) for rid in rids]
                    label = f"burst {b}"
                    latencies, replies, line = timed(server.pid, socks, frames, label, len(servers))
                    entries = check_entries(replies, rids)
                    everything += latencies
                    lines.append(line)
                    if args.compare:
                        lines += compare(server.pid, socks, entries, 2000 + b, len(servers))
    print(f"chamber_burst: {args.agents} agents, suite {args.suite}, "
          f"synchronous={args.synchronous}, {args.servers} server(s); {pace}")  # fmt: skip
    print("\n".join(lines))
    print(f"all {len(everything)} entries: {latency_text(everything, with_max=True)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=positive_int, default=500)
    parser.add_argument("--bursts", type=positive_int, default=5)
    parser.add_argument(
        "--servers",
        type=int_range(1, 8),
        default=1,
        help="agora serve processes on one shared SQLite file, the agents dealt among them",
    )
    parser.add_argument("--suite", choices=SUITES, default=SUITES[0])
    parser.add_argument("--synchronous", type=str.upper, choices=SYNCHRONOUS, default="FULL")
    parser.add_argument("--timeout", type=positive_float, default=300)
    parser.add_argument(
        "--compare", action="store_true", help="follow each burst with a ping and a read burst"
    )
    trio.run(main, parser.parse_args())
