"""A WebSocket client framed by hand, for what a polite client cannot do.

`RawWebSocket` sends invalid UTF-8 text frames, ignores pings, or never reads. This module
must not decode MCP beyond one JSON text per frame (the SDK's client is in e2e_sdk).
"""

from __future__ import annotations

import base64
import json
import secrets
import socket
import struct
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x1, 0x2, 0x8, 0x9, 0xA


class RawWebSocket:
    """A client-side WebSocket framed by hand over a plain TCP stream."""

    def __init__(self, stream: trio.SocketStream, status: int, extra: bytes) -> None:
        self.stream = stream
        self.status = status
        self._buf = bytearray(extra)

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        port: int,
        path: str = "/mcp",
        *,
        headers: dict[str, str] | None = None,
        receive_buffer: int | None = None,
    ) -> AsyncIterator[RawWebSocket]:
        """Connect and send the upgrade request; ``status`` is the server's answer.

        ``receive_buffer`` shrinks the socket's receive buffer before connecting, for a
        client that means to stop reading. The connection is dropped at the end.
        """
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        try:
            await sock.connect(("127.0.0.1", port))
            stream = trio.SocketStream(sock)
            key = base64.b64encode(secrets.token_bytes(16)).decode()
            head = {
                "Host": f"127.0.0.1:{port}",
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Key": key,
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Protocol": "mcp",
                **(headers or {}),
            }
            lines = [f"GET {path} HTTP/1.1", *(f"{k}: {v}" for k, v in head.items()), "", ""]
            await stream.send_all("\r\n".join(lines).encode())
            buf = bytearray()
            while b"\r\n\r\n" not in buf:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                buf += chunk
            response, _, rest = bytes(buf).partition(b"\r\n\r\n")
            status = int(response.split(b" ", 2)[1]) if response else 0
            yield cls(stream, status, rest)
        finally:
            sock.close()

    async def send_frame(self, opcode: int, payload: bytes) -> None:
        """One final, masked frame."""
        mask = secrets.token_bytes(4)
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        await self.stream.send_all(header + mask + masked)

    async def send_json(self, message: dict[str, Any]) -> None:
        """One JSON-RPC message in a text frame."""
        await self.send_frame(OP_TEXT, json.dumps(message).encode())

    async def _fill(self, size: int) -> bool:
        while len(self._buf) < size:
            try:
                chunk = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return False
            if not chunk:
                return False
            self._buf += chunk
        return True

    async def recv_frame(self) -> tuple[int, bytes] | None:
        """The next (opcode, payload) from the server; None once the TCP stream ends."""
        if not await self._fill(2):
            return None
        first, second = self._buf[0], self._buf[1]
        size, offset = second & 0x7F, 2
        if size == 126:
            if not await self._fill(4):
                return None
            size, offset = struct.unpack("!H", self._buf[2:4])[0], 4
        elif size == 127:
            if not await self._fill(10):
                return None
            size, offset = struct.unpack("!Q", self._buf[2:10])[0], 10
        if not await self._fill(offset + size):
            return None
        payload = bytes(self._buf[offset : offset + size])
        del self._buf[: offset + size]
        return first & 0x0F, payload

    async def recv_json(self, *, answer_pings: bool = True) -> dict[str, Any]:
        """The next text message (answering pings on the way)."""
        while True:
            frame = await self.recv_frame()
            assert frame is not None, "the server closed the connection"
            opcode, payload = frame
            if opcode == OP_PING and answer_pings:
                await self.send_frame(OP_PONG, payload)
            elif opcode == OP_TEXT:
                return json.loads(payload)  # type: ignore[no-any-return]
            elif opcode == OP_CLOSE:
                raise AssertionError(f"closed: {close_code(payload)}")

    async def close_code(self) -> int | None:
        """Read on (answering nothing) until the server's close frame; its code."""
        while True:
            frame = await self.recv_frame()
            if frame is None:
                return None
            if frame[0] == OP_CLOSE:
                return close_code(frame[1])

    async def aclose(self) -> None:
        """Drop the TCP connection now."""
        await self.stream.aclose()


def close_code(payload: bytes) -> int | None:
    """The status code of a close frame's payload."""
    return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
