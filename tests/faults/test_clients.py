"""Hostile clients: the server stays up, keeps serving others, and its memory stays bounded.

Against ``agora serve`` (all four toolsets) at once: ``AGORA_FAULT_STALLED`` connections
(200 here, 2000 for a local run) that open and stall (half with a partial request head, half
silent); a WebSocket client that sends calls and never reads a reply; a client that sends
64 KB frames as fast as it can; clients that disconnect mid-call (a durable post) and
mid-long-poll (``debate_signal_wait``). Meanwhile a polite client makes its calls: every one
must be answered. The server's RSS may not grow by more than `RSS_BOUND`, and once the
rude clients are gone no call is left in flight (a dropped long-poll is not left parked).
Latency under this load is measured in ``bench/`` (``python -m bench mixed``), not asserted.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import mixed
import trio
from faults_support import TIMEOUT, drain, start
from wsload import INITIALIZE, LeanWebSocket, lean_connect

STALLED = int(os.environ.get("AGORA_FAULT_STALLED", "200"))
POLITE_CALLS = 150
RSS_BOUND = 256 * 2**20
FLOOD = json.dumps(
    {"jsonrpc": "2.0", "method": "notifications/flood", "params": {"x": "y" * 65_000}}
).encode()


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def _healthz(port: int) -> dict[str, object]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    await stream.send_all(request.encode())
    data = b""
    while chunk := await stream.receive_some():
        data += chunk
    await stream.aclose()
    assert data.startswith(b"HTTP/1.1 200"), data[:100]
    return json.loads(data.partition(b"\r\n\r\n")[2])  # type: ignore[no-any-return]


async def _stall(port: int, n: int, held: list[trio.SocketStream]) -> None:
    for i in range(n):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        held.append(stream)
        if i % 2:
            await stream.send_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgr")


#: Every connection a rude client opened, closed at the end of the test.
OPENED: list[trio.SocketStream] = []


async def _ws(url: str) -> LeanWebSocket:
    ws = await LeanWebSocket.connect(url, mixed.TOKEN)
    OPENED.append(ws.stream)
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": INITIALIZE["params"]}).encode())  # fmt: skip
    await ws.recv()
    await ws.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return ws


async def _never_reads(url: str, topic: str) -> None:
    ws = await _ws(url)
    read = {"name": "debate_read", "arguments": {"topic_id": topic, "role": "ROLE_A"}}
    for rid in range(1, 400):
        message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": read}
        with trio.move_on_after(5):  # the server stops reading us once we stop reading it
            await ws.send(json.dumps(message).encode())
            continue
        break
    await trio.sleep_forever()


async def _flood(url: str) -> None:
    ws = await _ws(url)
    try:
        while True:
            await ws.send(FLOOD)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        return  # the server may close a flooder: that is its right


async def _hang_up(url: str, topic: dict[str, str], rounds: int) -> None:
    """Connect, start a long-poll or a durable post, and drop the TCP connection at once."""
    for i in range(rounds):
        ws = await _ws(url)
        if i % 2:
            args = {"topic_id": topic["topic_id"], "role": "ROLE_B", "session_id": topic["b"],
                    "timeout_ms": 30_000}  # fmt: skip
            call = {"name": "debate_signal_wait", "arguments": args}
        else:
            args = {"topic_id": topic["topic_id"], "role": "ROLE_A", "priority": "M",
                    "kind": "STATUS", "body": f"hang-up {i}",
                    "addressed_to_csv": "ROLE_B"}  # fmt: skip
            call = {"name": "debate_post_with_recipients", "arguments": args}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
        await ws.send(json.dumps(message).encode())
        await ws.stream.send_all(struct.pack("!BB", 0x88, 0x80) + b"\0\0\0\0")  # a close
        await ws.stream.aclose()  # without waiting for the answer or the close handshake


async def _polite(url: str, topic: str, calls: int) -> list[float]:
    times = []
    async with lean_connect(url, mixed.TOKEN) as client:
        for i in range(calls):
            start_at = trio.current_time()
            if i % 2:
                result = await client.call_tool("get_board", {})
            else:
                result = await client.call_tool(
                    "debate_read", {"topic_id": topic, "role": "ROLE_A", "limit": 5}
                )
            assert not result.get("isError"), result
            times.append(trio.current_time() - start_at)
    return times


async def test_rude_clients_leave_the_server_serving_others_in_bounded_memory(tmp_path):
    config = mixed.write_config(tmp_path)
    process, url = await start(tmp_path / "clients.db", config, max_connections="20000")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    held: list[trio.SocketStream] = []
    log: list[str] = []
    try:
        async with trio.open_nursery() as server_io:
            server_io.start_soon(drain, process, log)
            mix = mixed.Mix(url, [], mixed.Acks())
            with trio.fail_after(TIMEOUT):
                await mixed.setup_topics(mix, 1)
                topic = mix.topics[0]
                await _polite(url, topic["topic_id"], 20)  # warm: actors loaded, pages cached
            rss_before = _rss(process.pid)
            async with trio.open_nursery() as rude:
                with trio.fail_after(TIMEOUT):
                    await _stall(port, STALLED, held)
                rude.start_soon(_never_reads, url, topic["topic_id"])
                rude.start_soon(_flood, url)
                rude.start_soon(_flood, url)
                with trio.fail_after(TIMEOUT * 2):
                    await _hang_up(url, topic, 20)
                    await _polite(url, topic["topic_id"], POLITE_CALLS)
                rss_peak = _rss(process.pid)
                rude.cancel_scope.cancel()
            for stream in held + OPENED:
                await stream.aclose()
            with trio.fail_after(TIMEOUT):
                await _polite(url, topic["topic_id"], 10)
                health = await _healthz(port)
            assert health.get("in_flight") == 0, health
            assert rss_peak - rss_before < RSS_BOUND, (rss_before, rss_peak)
            assert process.returncode is None, "the server died"
            process.terminate()
            with trio.fail_after(TIMEOUT):
                await process.wait()
    finally:
        with trio.CancelScope(shield=True):
            for stream in held + OPENED:
                await stream.aclose()
            OPENED.clear()
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert not [line for line in log if "Traceback" in line], "\n".join(log[-50:])
