"""A small MCP client over WebSocket, for `agora call`, the benchmarks and end-to-end tests.

It speaks the handshake revision, one request at a time or many concurrently, and collects
notifications. ``http://`` URLs are reached over the WebSocket on the same port. It must stay
free of server imports: it is what a remote agent would run.
"""

from __future__ import annotations

import errno
import itertools
import math
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec
import trio
from trio_websocket import CloseReason, ConnectionClosed, wrap_client_stream
from wsproto.utilities import LocalProtocolError

from agora import __version__
from agora.logsafe import shown_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from trio_websocket import WebSocketConnection

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

#: The revision `connect` asks for in ``initialize``.
PROTOCOL_VERSION = "2025-11-25"
#: Largest reply accepted (a server's replies are not bound by its 1 MiB request limit).
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: Seconds the close handshake may take when leaving `connect`.
CLOSE_TIMEOUT = 1.0


class McpError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.error = error


class WsClient:
    """One MCP session over one WebSocket.

    Attributes:
        notifications: Messages that were not replies to our requests, in arrival order.
        closed: Why the connection closed, once it has.
    """

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[trio.Event, list[dict[str, Any]]]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.closed: CloseReason | None = None
        self._arrived = trio.Event()

    async def _reader(self) -> None:
        try:
            while True:
                msg = _decode(await self.ws.get_message())
                rid = msg.get("id")
                if "method" not in msg and rid in self._waiting:
                    event, box = self._waiting[rid]
                    box.append(msg)
                    event.set()
                else:
                    self.notifications.append(msg)
                    self._arrived.set()
                    self._arrived = trio.Event()
        except ConnectionClosed as exc:
            self.closed = exc.reason
            self._arrived.set()
            for event, _ in self._waiting.values():
                event.set()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and return its result.

        Raises:
            McpError: the server answered with an error.
            ConnectionClosed: the connection closed before the answer came.
        """
        rid = next(self._ids)
        event = trio.Event()
        box: list[dict[str, Any]] = []
        self._waiting[rid] = (event, box)
        try:
            await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
            await event.wait()
        finally:
            del self._waiting[rid]
        if not box:
            raise ConnectionClosed(self.closed)
        if "error" in box[0]:
            raise McpError(box[0]["error"])
        return box[0]["result"]

    async def next_notification(self, method: str) -> dict[str, Any]:
        """Remove and return the oldest notification with ``method``, waiting for one.

        Raises:
            ConnectionClosed: the connection closed before one came.
        """
        while True:
            for i, msg in enumerate(self.notifications):
                if msg.get("method") == method:
                    return self.notifications.pop(i)
            if self.closed is not None:
                raise ConnectionClosed(self.closed)
            await self._arrived.wait()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification.

        Raises:
            ConnectionClosed: the connection is closed.
        """
        await self.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def send(self, message: dict[str, Any]) -> None:
        """Send one raw JSON-RPC message.

        Raises:
            ConnectionClosed: the connection is closed.
        """
        if self.closed is not None:
            raise ConnectionClosed(self.closed)
        await self.ws.send_message(_encode(message).decode())

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """tools/call and return the result (``isError`` results are returned, not raised).

        Raises:
            McpError: the server refused the call itself (unknown tool, bad params).
            ConnectionClosed: the connection closed before the answer came.
        """
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}})

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool of the endpoint, following ``nextCursor``.

        Raises:
            McpError: the server refused the request.
            ConnectionClosed: the connection closed before the answer came.
        """
        tools: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        while True:
            page = await self.request("tools/list", params)
            tools.extend(page["tools"])
            if not page.get("nextCursor"):
                return tools
            params = {"cursor": page["nextCursor"]}


def ws_url(url: str) -> str:
    """The WebSocket URL for an agora ``http(s)://`` or ``ws(s)://`` endpoint URL."""
    if url.startswith("http"):
        return "ws" + url[4:]
    return url


@asynccontextmanager
async def open_websocket(
    url: str, *, token: str | None = None, connect_timeout: float = math.inf
) -> AsyncIterator[WebSocketConnection]:
    """Open a WebSocket (subprotocol ``mcp``) on ``url``, with ``token`` as the bearer.

    Args:
        url: An ``http(s)://`` or ``ws(s)://`` endpoint URL.
        token: The bearer token, if any.
        connect_timeout: Seconds the TCP connection and the upgrade may take together.

    Raises:
        trio.TooSlowError: the connection or the upgrade took longer than ``connect_timeout``.
        trio_websocket.ConnectionRejected: the server refused the upgrade (e.g. 401, 403).
        trio_websocket.HandshakeError: the upgrade failed otherwise.
        OSError: the server could not be reached.
        ValueError: ``url`` is not an http(s) or ws(s) URL.
    """
    parts = urlsplit(ws_url(url))
    if any(c.isspace() for c in url):  # h11 would refuse the request line, as a traceback
        raise ValueError(f"the URL holds a space or line break: {shown_url(url.strip())}")
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(  # shown as the log shows it: a seat token never
            f"not a WebSocket or HTTP URL: {shown_url(url)} (a running server's address, such"
            " as ws://HOST:PORT/mcp/chess/default?token=…)"
        )
    secure = parts.scheme == "wss"
    port = parts.port or (443 if secure else 80)
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [(b"Authorization", f"Bearer {token}".encode())] if token else []
    closing = False
    try:
        async with trio.open_nursery() as nursery:
            deadline = trio.current_time() + connect_timeout
            with trio.fail_after(connect_timeout):
                stream = await _open_stream(parts.hostname, port, secure)
            # The stream is ours to close: trio-websocket leaves it open after a rejected
            # handshake or a close the server started.
            try:
                with trio.fail_at(deadline):
                    ws = await wrap_client_stream(
                        nursery,
                        stream,
                        parts.netloc.rpartition("@")[2],
                        resource,
                        subprotocols=["mcp"],
                        extra_headers=headers,
                        max_message_size=MAX_REPLY_BYTES,
                    )
                yield ws
                closing = True
                with trio.move_on_after(CLOSE_TIMEOUT):
                    await ws.aclose()
            finally:
                nursery.cancel_scope.cancel()
                with trio.CancelScope(shield=True):
                    await stream.aclose()
    except BaseExceptionGroup as group:
        # trio-websocket's reader answers a ping that arrives after our close frame with a
        # pong that wsproto refuses; the connection is closing anyway, so that is no error.
        if closing and group.split(LocalProtocolError)[1] is None:
            return
        # Otherwise the group holds one real error (the caller's own, or a rejected
        # handshake from trio-websocket's reader): raise it as is.
        raise _single(group) from None


@asynccontextmanager
async def connect(
    url: str, *, token: str | None = None, initialize: bool = True
) -> AsyncIterator[WsClient]:
    """Open a WebSocket MCP session on ``url`` and (unless told not to) run the handshake.

    Raises:
        trio_websocket.ConnectionRejected: the server refused the upgrade (e.g. 401, 403).
        trio_websocket.HandshakeError: the upgrade failed otherwise.
        OSError: the server could not be reached.
        ValueError: ``url`` is not an http(s) or ws(s) URL.
    """
    async with open_websocket(url, token=token) as ws, trio.open_nursery() as nursery:
        client = WsClient(ws)
        nursery.start_soon(client._reader)
        if initialize:
            await client.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "agora-client", "version": __version__},
                },
            )
            await client.notify("notifications/initialized")
        yield client
        nursery.cancel_scope.cancel()


async def _open_stream(
    host: str, port: int, secure: bool
) -> trio.SocketStream | trio.SSLStream[trio.SocketStream]:
    if secure:
        return await trio.open_ssl_over_tcp_stream(host, port)
    stream = await trio.open_tcp_stream(host, port)
    # Connecting to a free port of the ephemeral range on this host can pick that very port
    # as the source and connect the socket to itself (a TCP simultaneous open), which would
    # then wait for its own upgrade answer for ever: that is a refused connection.
    if stream.socket.getsockname() == stream.socket.getpeername():
        await stream.aclose()
        raise ConnectionRefusedError(errno.ECONNREFUSED, f"nothing listens on {host}:{port}")
    return stream


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def call_tool(
    url: str, tool: str, arguments: dict[str, Any], *, token: str | None = None
) -> Any:
    """Connect, call one tool, and return its result.

    Raises:
        McpError: the server refused the call (unknown tool, bad params).
        trio_websocket.HandshakeError: the server refused the connection.
        ConnectionClosed: the connection closed before the answer came.
        OSError: the server could not be reached.
    """
    async with connect(url, token=token) as client:
        return await client.call_tool(tool, arguments)
