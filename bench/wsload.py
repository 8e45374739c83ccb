"""A lean WebSocket load generator for the benches: raw frames, one call at a time.

`agora.client` is a general client: trio-websocket's reader task and its own per
connection, so that many calls and notifications can be in flight at once. A benchmark
agent makes one call at a time, and on this 2-core machine the load generator shares the
CPU with the server it measures: the general client spends about as much CPU per call as
the server does and would cap the measured rate by itself. `LeanWebSocket` frames messages
by hand (zero mask key, no extensions, pings answered) from the calling task; `LeanClient`
runs an MCP session on it. Same protocol, same real sockets. Imported by the bench scripts
as a sibling module; never by agora.
"""

from __future__ import annotations

import base64
import contextlib
import os
import struct
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import msgspec
import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


def client_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """One final client frame, masked with a zero key (masking is then a no-op)."""
    size = len(payload)
    if size < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
    return header + b"\0\0\0\0" + payload


class LeanWebSocket:
    """A minimal WebSocket client, so the load generator costs less than the servers.

    One text frame per message with a zero mask key (legal, and masking becomes a no-op),
    no extensions; pings are answered. Both servers get exactly this client.
    """

    def __init__(self, stream: trio.SocketStream, extra: bytes) -> None:
        self.stream = stream
        self._buf = bytearray(extra)

    @classmethod
    async def connect(
        cls, url: str, token: str | None = None, local_address: str | None = None
    ) -> LeanWebSocket:
        """Open ``ws://host:port/path`` with subprotocol ``mcp`` (and a bearer token), from
        ``local_address`` if given (e.g. 127.0.0.7, so more than one port range is used)."""
        host, _, path = url.removeprefix("ws://").partition("/")
        name, _, port = host.rpartition(":")
        stream = await trio.open_tcp_stream(name, int(port), local_address=local_address)
        key = base64.b64encode(os.urandom(16)).decode()
        await stream.send_all(
            (
                f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mcp\r\n"
                + (f"Authorization: Bearer {token}\r\n" if token else "")
                + "\r\n"
            ).encode()
        )
        buf = bytearray()
        while b"\r\n\r\n" not in buf:
            chunk = await stream.receive_some(65536)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            buf += chunk
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(head.split(b"\r\n", 1)[0].decode())
        return cls(stream, rest)

    async def send(self, payload: bytes, opcode: int = 0x1) -> None:
        """One final frame, masked with a zero key."""
        await self.stream.send_all(client_frame(payload, opcode))

    async def _need(self, size: int) -> None:
        while len(self._buf) < size:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise ConnectionError("closed")
            self._buf += chunk

    async def recv(self) -> bytes:
        """The next text or binary message's payload."""
        while True:
            await self._need(2)
            opcode, size, offset = self._buf[0] & 0x0F, self._buf[1] & 0x7F, 2
            if size == 126:
                await self._need(4)
                size, offset = struct.unpack_from("!H", self._buf, 2)[0], 4
            elif size == 127:
                await self._need(10)
                size, offset = struct.unpack_from("!Q", self._buf, 2)[0], 10
            await self._need(offset + size)
            payload = bytes(self._buf[offset : offset + size])
            del self._buf[: offset + size]
            if opcode == 0x9:
                await self.send(payload, 0xA)
            elif opcode == 0x8:
                raise ConnectionError(f"closed by the server: {payload[:2].hex()}")
            elif opcode in (0x1, 0x2):
                return payload

    async def aclose(self) -> None:
        """Send a close frame and drop the connection."""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self.send(struct.pack("!H", 1000), 0x8)
        await self.stream.aclose()


class RpcError(RuntimeError):
    """A JSON-RPC error reply: ``code`` is its code (None if it had none), so a caller can
    tell the server's shutdown (-32011) from a refusal of the call itself."""

    def __init__(self, method: str, error: Any) -> None:
        super().__init__(f"{method}: {error}")
        self.code = error.get("code") if isinstance(error, dict) else None


class LeanClient:
    """One MCP session on a `LeanWebSocket`, one request at a time.

    Attributes:
        notifications: Messages that were not the reply awaited, in arrival order.
    """

    def __init__(self, ws: LeanWebSocket) -> None:
        self.ws = ws
        self._ids = 0
        self.notifications: list[dict[str, Any]] = []

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and return its result (a JSON-RPC error raises `RpcError`)."""
        self._ids += 1
        rid = self._ids
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
        await self.ws.send(_encode(message))
        while True:
            reply: dict[str, Any] = _decode(await self.ws.recv())
            if reply.get("id") == rid and "method" not in reply:
                if "error" in reply:
                    raise RpcError(method, reply["error"])
                return reply["result"]
            self.notifications.append(reply)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """tools/call; the result is returned as it came (``isError`` included)."""
        return await self.request("tools/call", {"name": name, "arguments": arguments})


@asynccontextmanager
async def lean_connect(url: str, token: str | None = None) -> AsyncIterator[LeanClient]:
    """An initialized MCP session on ``ws://host:port/path``; closed on exit."""
    ws = await LeanWebSocket.connect(url, token)
    try:
        client = LeanClient(ws)
        await client.request("initialize", INITIALIZE["params"])
        await ws.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield client
    finally:
        with trio.CancelScope(shield=True):
            await ws.aclose()
