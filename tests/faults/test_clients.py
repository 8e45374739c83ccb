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
from pathlib import Path

import mixed
import trio
from faults_support import TIMEOUT, drain, start
from rude import OPENED, flood, hang_up, never_reads, stall
from wsload import lean_connect

STALLED = int(os.environ.get("AGORA_FAULT_STALLED", "200"))
POLITE_CALLS = 150
RSS_BOUND = 256 * 2**20


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
                    await stall(port, STALLED, held)
                rude.start_soon(never_reads, url, topic["topic_id"])
                rude.start_soon(flood, url)
                rude.start_soon(flood, url)
                with trio.fail_after(TIMEOUT * 2):
                    await hang_up(url, topic, 20)
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
