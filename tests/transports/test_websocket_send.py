"""WebSocket sends against a real server and a real socket: frames are never interleaved.

A peer that stops reading fills the kernel's buffers, so the server's send of a large
message stops part-way through its frame. Cancelling that call then must not let the next
frame start inside the first one: the stream, read by wsproto, must parse. A frame that
cannot be finished ends the stream: nothing more is written after it.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

import pytest
import trio
import trio.testing
from _ws_peer import WsPeer

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset
from agora.transports import frames
from agora.transports.ws_peer import Peer, Stalled

TIMEOUT = 15
#: Larger than the server's send buffer and the client's receive buffer together.
LOUD = 8 * 1024 * 1024
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
}
SHOUT = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "shout"}}


def loud_toolset(started: trio.Event) -> Toolset:
    """One tool that logs a message of LOUD bytes, then waits to be cancelled."""

    async def shout(call: ToolCall) -> dict[str, Any]:
        started.set()
        await call.log("info", "x" * LOUD)
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    tool = {"name": "shout", "description": "log a lot", "inputSchema": {"type": "object"}}
    return Toolset(name="loud", contract=None, tools=[tool], handlers={"shout": shout})


async def test_a_send_cancelled_mid_frame_finishes_its_frame_before_the_next():
    started = trio.Event()
    config = Config(db=":memory:", port=0, ping_interval=0)
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config, toolsets=[loud_toolset(started)]) as server,
            WsPeer.open(server.port, "/mcp/loud", receive_buffer=4096) as peer,
        ):
            await peer.send_json(INITIALIZE)
            assert (await peer.recv_json())["id"] == 0
            await peer.send_json(SHOUT)
            await started.wait()
            # Every task is parked: the call's send waits for room, its frame begun.
            await trio.testing.wait_all_tasks_blocked()
            cancel = {"requestId": 1, "reason": "enough"}
            await peer.send_json(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
            )
            await peer.send_json({"jsonrpc": "2.0", "id": 2, "method": "ping"})
            await trio.testing.wait_all_tasks_blocked()
            logged = await peer.recv_json()
            assert logged["method"] == "notifications/message"
            assert len(logged["params"]["data"]) == LOUD
            assert await peer.recv_json() == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_a_frame_that_cannot_be_finished_breaks_the_stream_and_nothing_follows(
    autojump_clock,
):
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    with sock:
        await sock.connect(("127.0.0.1", port))
        server_stream = await listeners[0].accept()
        peer = Peer(server_stream, send_timeout=5.0)
        big = frames.frame(b"x" * LOUD)
        # Cancelled mid-frame, with a peer that never reads: the frame cannot be finished.
        with pytest.raises(Stalled), trio.move_on_after(1):
            await peer.send(big)
        assert trio.current_time() == 1 + 5.0  # the cancellation, then the send timeout
        with pytest.raises(trio.BrokenResourceError):
            await peer.send(frames.frame(b'{"jsonrpc":"2.0","id":2,"result":{}}'))
        await server_stream.aclose()
        client = trio.SocketStream(sock)
        received = bytearray()
        while chunk := await client.receive_some(1 << 16):
            received += chunk
        assert 0 < len(received) < len(big)
        assert received == big[: len(received)]  # a cut frame, and nothing after it
    for listener in listeners:
        await listener.aclose()


async def test_shutdown_does_not_wait_to_finish_a_frame_nobody_reads(autojump_clock):
    started = trio.Event()
    config = Config(db=":memory:", port=0, ping_interval=0, grace_seconds=1, send_timeout=60)
    # Mock seconds: the grace period, the close handshake and the lingering close fit in
    # 10; finishing the frame would wait for the whole send timeout.
    with trio.fail_after(10):
        # The server leaves first, with the peer still connected and not reading.
        async with (
            contextlib.AsyncExitStack() as peers,
            open_server(config, toolsets=[loud_toolset(started)]) as server,
        ):
            peer = await peers.enter_async_context(
                WsPeer.open(server.port, "/mcp/loud", receive_buffer=4096)
            )
            await peer.send_json(INITIALIZE)
            assert (await peer.recv_json())["id"] == 0
            await peer.send_json(SHOUT)
            await started.wait()  # leaving the block shuts the server down mid-frame
