"""A lean MCP-over-WebSocket load generator: one agent, one socket, one call at a time.

`agora.client` is a general client: a reader task per connection (trio-websocket's, plus
its own) so that many calls and notifications can be in flight at once. A benchmark agent
makes one call at a time, and on this 2-core machine the load generator shares the CPU
with the server it measures: the general client spends about as much CPU per call as the
server does, and would cap the measured rate by itself. This client drives sans-io wsproto
straight from the calling task: send the request frame, read until its reply arrives,
answer pings on the way. It speaks the same protocol over the same real sockets (masked
frames, the ``mcp`` subprotocol, the MCP handshake); it just does no more than an agent
looping on calls needs. Imported by the bench scripts as a sibling module; never by agora.
"""

from __future__ import annotations

from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
RECEIVE_BYTES = 65536


class Closed(Exception):
    """The server closed the connection (or refused the upgrade)."""


class LeanClient:
    """One MCP session over one WebSocket, one request at a time.

    Attributes:
        notifications: Messages that were not the reply awaited, in arrival order.
    """

    def __init__(self, stream: trio.SocketStream, ws: WSConnection) -> None:
        self._stream = stream
        self._ws = ws
        self._ids = 0
        self._parts: list[str] = []
        self.notifications: list[dict[str, Any]] = []

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and return its result (a JSON-RPC error raises RuntimeError)."""
        self._ids += 1
        rid = self._ids
        await self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        while True:
            message = await self._next_message()
            if message.get("id") == rid and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self.notifications.append(message)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """tools/call; the result is returned as it came (``isError`` included)."""
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        await self._send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def exchange(self, text: str) -> str:
        """Send one text frame and return the next text message (for a bare echo server)."""
        await self._stream.send_all(self._ws.send(TextMessage(text)))
        return await self._next_text()

    async def _send(self, message: dict[str, Any]) -> None:
        await self._stream.send_all(self._ws.send(TextMessage(_encode(message).decode())))

    async def _next_message(self) -> dict[str, Any]:
        return _decode(await self._next_text())  # type: ignore[no-any-return]

    async def _next_text(self) -> str:
        while True:
            for event in self._ws.events():
                if isinstance(event, TextMessage):
                    self._parts.append(event.data)
                    if event.message_finished:
                        text = "".join(self._parts)
                        self._parts.clear()
                        return text
                elif isinstance(event, Ping):
                    await self._stream.send_all(self._ws.send(event.response()))
                elif isinstance(event, CloseConnection):
                    raise Closed(f"closed by the server: {event.code} {event.reason}")
                elif isinstance(event, BytesMessage):
                    raise Closed("the server sent a binary frame")
            data = await self._stream.receive_some(RECEIVE_BYTES)
            if not data:
                raise Closed("the server closed the socket")
            self._ws.receive_data(data)

    async def aclose(self) -> None:
        """Send a close frame and drop the socket (the server's answer is not awaited)."""
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError, LocalProtocolError):
            await self._stream.send_all(self._ws.send(CloseConnection(code=1000)))
        await self._stream.aclose()


@asynccontextmanager
async def lean_connect(url: str, *, initialize: bool = True) -> AsyncIterator[LeanClient]:
    """Open a ``ws://`` connection to ``url`` and (unless told not to) run the MCP handshake."""
    parts = urlsplit(url)
    if parts.scheme != "ws" or not parts.hostname or not parts.port:
        raise ValueError(f"not a ws://host:port URL: {url}")
    stream = await trio.open_tcp_stream(parts.hostname, parts.port)
    try:
        ws = WSConnection(ConnectionType.CLIENT)
        request = Request(host=parts.netloc, target=parts.path or "/", subprotocols=["mcp"])
        await stream.send_all(ws.send(request))
        accepted = False
        while not accepted:
            data = await stream.receive_some(RECEIVE_BYTES)
            if not data:
                raise Closed("the server closed the socket during the upgrade")
            ws.receive_data(data)
            for event in ws.events():
                if isinstance(event, AcceptConnection):
                    accepted = True
                elif isinstance(event, RejectConnection):
                    raise Closed(f"upgrade refused: {event.status_code}")
        client = LeanClient(stream, ws)
        if initialize:
            await client.request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "agora-bench", "version": "0"},
                },
            )
            await client.notify("notifications/initialized")
    except BaseException:
        await stream.aclose()
        raise
    try:
        yield client
    finally:
        with trio.CancelScope(shield=True):
            await client.aclose()
