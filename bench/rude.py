"""Rude clients, for the clients fault test and ``python -m bench clients``.

`stall` opens connections that stall (half with a partial request head, half silent),
`never_reads` sends calls on a WebSocket and never reads a reply, `flood` sends 64 KB frames
as fast as it can, `hang_up` starts a long-poll or a durable post and drops the connection
at once. Every WebSocket they open is kept in `OPENED` so the caller can close them all.
Imported by ``tests/faults`` and ``bench/__main__.py``; never by agora.
"""

from __future__ import annotations

import json
import struct

import mixed
import trio
from wsload import INITIALIZE, LeanWebSocket

FLOOD = json.dumps(
    {"jsonrpc": "2.0", "method": "notifications/flood", "params": {"x": "y" * 65_000}}
).encode()


async def stall(port: int, n: int, held: list[trio.SocketStream]) -> None:
    for i in range(n):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        held.append(stream)
        if i % 2:
            await stream.send_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgr")


#: Every WebSocket a rude client opened (the caller closes them).
OPENED: list[trio.SocketStream] = []


async def _ws(url: str) -> LeanWebSocket:
    ws = await LeanWebSocket.connect(url, mixed.TOKEN)
    OPENED.append(ws.stream)
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": INITIALIZE["params"]}).encode())  # fmt: skip
    await ws.recv()
    await ws.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return ws


async def never_reads(url: str, topic: str) -> None:
    ws = await _ws(url)
    read = {"name": "debate_read", "arguments": {"topic_id": topic, "role": "ROLE_A"}}
    for rid in range(1, 400):
        message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": read}
        with trio.move_on_after(5):  # the server stops reading us once we stop reading it
            await ws.send(json.dumps(message).encode())
            continue
        break
    await trio.sleep_forever()


async def flood(url: str) -> None:
    ws = await _ws(url)
    try:
        while True:
            await ws.send(FLOOD)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        return  # the server may close a flooder: that is its right


async def hang_up(url: str, topic: dict[str, str], rounds: int) -> None:
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
