"""agora.client leaves cleanly when a ping crosses its close frame.

A server may ping at any moment; one that arrives after the client sent its close frame
makes trio-websocket's reader answer with a pong that wsproto refuses. The connection is
closing anyway, so `connect` must not raise. The peer here is a scripted WebSocket server
on a real loopback socket that always sends that ping.
"""

from __future__ import annotations

import json
from functools import partial

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Request,
    TextMessage,
)

from agora.client import connect


async def pinging_server(stream: trio.SocketStream, done: trio.Event) -> None:
    """Answer the handshake and initialize; on the client's close frame, ping, then close."""
    ws = WSConnection(ConnectionType.SERVER)
    async with stream:
        while True:
            data = await stream.receive_some(65536)
            if not data:
                return
            ws.receive_data(data)
            for event in ws.events():
                if isinstance(event, Request):
                    await stream.send_all(ws.send(AcceptConnection(subprotocol="mcp")))
                elif isinstance(event, TextMessage):
                    message = json.loads(event.data)
                    if message.get("method") == "initialize":
                        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {
                            "protocolVersion": "2025-11-25", "capabilities": {},
                            "serverInfo": {"name": "scripted", "version": "0"},
                        }}  # fmt: skip
                        await stream.send_all(ws.send(TextMessage(json.dumps(reply))))
                elif isinstance(event, CloseConnection):
                    # wsproto will not send a ping once the peer closed: write the frame raw.
                    late_ping = bytes((0x89, 4)) + b"late"
                    await stream.send_all(late_ping + ws.send(event.response()))
                    done.set()
                    return


async def test_a_ping_after_our_close_frame_is_not_an_error():
    done = trio.Event()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_tcp, host="127.0.0.1"), lambda s: pinging_server(s, done), 0
        )
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(10):
            async with connect(f"ws://127.0.0.1:{port}/mcp") as client:
                assert client.closed is None
            await done.wait()  # the server did send its ping after our close frame
        nursery.cancel_scope.cancel()
