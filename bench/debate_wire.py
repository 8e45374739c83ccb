"""The debate load generator's wire: an MCP session over WebSocket on a plain socket.

`debate_load.py`'s agents share the 2 cores with the server they measure, so whatever CPU
the load generator burns per post is taken from the server and lowers the figure it
reports: a load generator must not be the bottleneck. `wsload.LeanClient` already frames by
hand, but it sends and receives through trio's `SocketStream`, whose layers (a conflict
detector, a context manager per socket operation, a checkpoint per send and per receive)
were about a quarter of the generator's ~215 us of CPU per post (py-spy, closed loop). A
`WireClient` sends with ``socket.send`` and receives with ``socket.recv`` on the
non-blocking socket itself, and asks Trio (`trio.lowlevel.wait_readable` /
``wait_writable``) only when the socket would block; each reply waits on the server, so an
agent still yields to the others at every call. Requests are built from a pre-encoded
prefix, and replies are decoded into a typed shape that skips what an agent never reads
(the text copy of each result). Same frames as `wsload.LeanWebSocket` (one text frame, zero
mask key, no extensions, pings answered), same protocol, real sockets on loopback.
Imported by the bench scripts as a sibling module; never by agora.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import struct
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import msgspec
import trio
from wsload import INITIALIZE, client_frame

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

_encode = msgspec.json.Encoder().encode


class _Result(msgspec.Struct):
    structuredContent: Any = None  # the MCP fields keep their names
    isError: bool = False


class _Reply(msgspec.Struct):
    id: int | None = None
    method: str | None = None
    result: Any = None
    error: Any = None


class _ToolReply(msgspec.Struct):
    id: int | None = None
    method: str | None = None
    result: _Result | None = None
    error: Any = None


_decode_reply = msgspec.json.Decoder(_Reply).decode
_decode_tool = msgspec.json.Decoder(_ToolReply).decode


class WireClient:
    """One MCP session on a non-blocking socket, one request at a time."""

    def __init__(self, sock: socket.socket, extra: bytes) -> None:
        self.sock = sock
        self._buf = bytearray(extra)
        self._ids = 0

    async def _send(self, data: bytes) -> None:
        while data:
            try:
                sent = self.sock.send(data)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.sock)
                continue
            data = data[sent:]

    async def _fill(self) -> None:
        """Append what the socket holds to the buffer (waiting until it holds something)."""
        while True:
            try:
                chunk = self.sock.recv(262_144)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.sock)
                continue
            if not chunk:
                raise ConnectionError("closed")
            self._buf += chunk
            return

    async def recv(self) -> bytes:
        """The next text or binary message's payload (pings answered on the way)."""
        buf = self._buf
        while True:
            while len(buf) < 2:
                await self._fill()
            opcode, size, offset = buf[0] & 0x0F, buf[1] & 0x7F, 2
            if size == 126:
                while len(buf) < 4:
                    await self._fill()
                size, offset = struct.unpack_from("!H", buf, 2)[0], 4
            elif size == 127:
                while len(buf) < 10:
                    await self._fill()
                size, offset = struct.unpack_from("!Q", buf, 2)[0], 10
            while len(buf) < offset + size:
                await self._fill()
            payload = bytes(buf[offset : offset + size])
            del buf[: offset + size]
            if opcode == 0x9:
                await self._send(client_frame(payload, 0xA))
            elif opcode == 0x8:
                raise ConnectionError(f"closed by the server: {payload[:2].hex()}")
            elif opcode in (0x1, 0x2):
                return payload

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and return its result (a JSON-RPC error raises RuntimeError)."""
        self._ids += 1
        rid = self._ids
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        await self._send(client_frame(_encode(message)))
        while True:
            reply = _decode_reply(await self.recv())
            if reply.id == rid and reply.method is None:
                if reply.error is not None:
                    raise RuntimeError(f"{method}: {reply.error}")
                return reply.result

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        """tools/call ``name``; its structured result (a tool error raises RuntimeError)."""
        self._ids += 1
        rid = self._ids
        await self._send(
            client_frame(
                b'{"jsonrpc":"2.0","method":"tools/call","id":%d,"params":{"name":"%s",'
                b'"arguments":%s}}' % (rid, name.encode(), _encode(arguments))
            )
        )
        while True:
            reply = _decode_tool(await self.recv())
            if reply.id != rid or reply.method is not None:
                continue  # a notification: an agent here subscribes to nothing
            if reply.error is not None or reply.result is None:
                raise RuntimeError(f"{name}: {reply.error}")
            if reply.result.isError:
                raise RuntimeError(f"{name}: {reply.result.structuredContent}")
            out: dict[str, Any] = reply.result.structuredContent
            return out

    async def aclose(self) -> None:
        """Send a close frame and drop the connection."""
        with contextlib.suppress(OSError):
            self.sock.send(client_frame(struct.pack("!H", 1000), 0x8))
        trio.lowlevel.notify_closing(self.sock)
        self.sock.close()


async def _handshake(url: str, token: str | None) -> tuple[socket.socket, bytes]:
    host, _, path = url.removeprefix("ws://").partition("/")
    name, _, port = host.rpartition(":")
    stream = await trio.open_tcp_stream(name, int(port))
    sock = socket.socket(fileno=stream.socket.detach())
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16)).decode()
    client = WireClient(sock, b"")
    await client._send(
        (
            f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mcp\r\n"
            + (f"Authorization: Bearer {token}\r\n" if token else "")
            + "\r\n"
        ).encode()
    )
    while b"\r\n\r\n" not in client._buf:
        await client._fill()
    head, _, rest = bytes(client._buf).partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 101"):
        sock.close()
        raise ConnectionError(head.split(b"\r\n", 1)[0].decode())
    return sock, rest


@asynccontextmanager
async def wire_connect(url: str, token: str | None) -> AsyncIterator[WireClient]:
    """An initialized MCP session on ``ws://host:port/path`` (anonymous when ``token`` is
    None); closed on exit."""
    sock, rest = await _handshake(url, token)
    client = WireClient(sock, rest)
    try:
        await client.request("initialize", INITIALIZE["params"])
        await client._send(client_frame(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'))
        yield client
    finally:
        with trio.CancelScope(shield=True):
            await client.aclose()
