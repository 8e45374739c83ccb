"""A small MCP client over WebSocket, for `agora call`, the benchmarks and embedding tests.

It speaks the handshake revision, one request at a time or many concurrently, and collects
notifications. ``http://`` URLs are reached over the WebSocket on the same port.
"""

from __future__ import annotations

import itertools
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import msgspec
import trio
from trio_websocket import WebSocketConnection, open_websocket_url

from agora import __version__

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class McpError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.error = error


class WsClient:
    """One MCP session over one WebSocket."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[trio.Event, list[dict[str, Any]]]] = {}
        self.notifications: list[dict[str, Any]] = []

    async def _reader(self) -> None:
        while True:
            msg = _decode(await self.ws.get_message())
            rid = msg.get("id")
            if "method" not in msg and rid in self._waiting:
                event, box = self._waiting[rid]
                box.append(msg)
                event.set()
            else:
                self.notifications.append(msg)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and return its result.

        Raises:
            McpError: the server answered with an error.
        """
        rid = next(self._ids)
        event: trio.Event = trio.Event()
        box: list[dict[str, Any]] = []
        self._waiting[rid] = (event, box)
        try:
            msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
            await self.ws.send_message(_encode(msg).decode())
            await event.wait()
        finally:
            del self._waiting[rid]
        if "error" in box[0]:
            raise McpError(box[0]["error"])
        return box[0]["result"]

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        msg = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        await self.ws.send_message(_encode(msg).decode())

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """tools/call and return the result (``isError`` results are returned, not raised)."""
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}})


def ws_url(url: str) -> str:
    """The WebSocket URL for an agora ``http(s)://`` or ``ws(s)://`` endpoint URL."""
    if url.startswith("http"):
        return "ws" + url[4:]
    return url


@asynccontextmanager
async def connect(url: str, *, token: str | None = None) -> AsyncIterator[WsClient]:
    """Open a WebSocket MCP session on ``url`` and run the handshake."""
    headers = [(b"Authorization", f"Bearer {token}".encode())] if token else []
    async with (
        open_websocket_url(ws_url(url), subprotocols=["mcp"], extra_headers=headers) as ws,
        trio.open_nursery() as nursery,
    ):
        client = WsClient(ws)
        nursery.start_soon(client._reader)
        await client.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "agora-client", "version": __version__},
            },
        )
        await client.notify("notifications/initialized")
        yield client
        nursery.cancel_scope.cancel()


async def call_tool(
    url: str, tool: str, arguments: dict[str, Any], *, token: str | None = None
) -> Any:
    """Connect, call one tool, and return its result."""
    async with connect(url, token=token) as client:
        return await client.call_tool(tool, arguments)
