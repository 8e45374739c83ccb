"""A WebSocket client for transport tests: wsproto over a real loopback socket.

Every byte the server sends is parsed by wsproto's client, so a corrupt stream shows as a
protocol error or a message that is not JSON. The socket's receive buffer can be shrunk
before connecting, for a peer that means to stop reading. Not a test module.
"""

from __future__ import annotations

import json
import socket
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Event,
    Message,
    Ping,
    Request,
    TextMessage,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class WsPeer:
    """One client connection; `events` yields what wsproto parsed from the server's bytes."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)
        self._parts: list[str] = []

    @classmethod
    @asynccontextmanager
    async def open(
        cls, port: int, path: str, *, receive_buffer: int | None = None
    ) -> AsyncIterator[WsPeer]:
        """Connect, complete the handshake and yield the peer; the socket is closed after."""
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        with sock:
            await sock.connect(("127.0.0.1", port))
            peer = cls(trio.SocketStream(sock))
            request = Request(host=f"127.0.0.1:{port}", target=path, subprotocols=["mcp"])
            await peer.stream.send_all(peer.ws.send(request))
            event = await peer.next_event()
            assert isinstance(event, AcceptConnection), event
            yield peer

    async def send_json(self, message: dict[str, Any]) -> None:
        """One JSON-RPC message in a text frame."""
        await self.stream.send_all(self.ws.send(Message(data=json.dumps(message))))

    async def next_event(self) -> Event | None:
        """The next event wsproto parses; None once the TCP stream ends."""
        while True:
            for event in self.ws.events():
                return event
            data = await self.stream.receive_some(1 << 16)
            if not data:
                return None
            self.ws.receive_data(data)

    async def recv_json(self) -> dict[str, Any]:
        """The next whole text message, as JSON (pings are answered on the way)."""
        while True:
            event = await self.next_event()
            if isinstance(event, TextMessage):
                self._parts.append(event.data)
                if event.message_finished:
                    text = "".join(self._parts)
                    self._parts.clear()
                    return json.loads(text)  # type: ignore[no-any-return]
            elif isinstance(event, Ping):
                await self.stream.send_all(self.ws.send(event.response()))
            else:
                raise AssertionError(f"expected a text message, got {event!r}")

    async def close_code(self) -> int | None:
        """Read on until the server's close frame; its code (None if the stream just ends)."""
        while True:
            event = await self.next_event()
            if event is None:
                return None
            if isinstance(event, CloseConnection):
                return event.code
