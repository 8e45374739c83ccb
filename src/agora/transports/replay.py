"""A stream that first replays bytes already read, then reads from the real stream.

The HTTP front end reads a request head before it knows the request is a WebSocket upgrade;
trio-websocket then needs to read that head itself. Replayed bytes are handed out in chunks
no larger than the reader asks for. Bytes that came after the head (a client's first frames,
sent without waiting for the 101) are held back until `release` is called once the handshake
is accepted: wsproto drops anything it is fed before that. Nothing here parses frames.
"""

from __future__ import annotations

import re

import trio

_HEAD_END = re.compile(rb"\r?\n\r?\n")


class ReplayStream(trio.abc.Stream):
    """Wraps ``stream`` so that ``receive_some`` yields ``prefix`` first.

    Args:
        stream: The accepted TCP stream.
        prefix: Everything read from it so far: a request head, maybe more.
    """

    def __init__(self, stream: trio.SocketStream, prefix: bytes) -> None:
        self.stream = stream
        self.socket = stream.socket  # trio-websocket reads peer addresses from here
        end = _HEAD_END.search(prefix)
        split = end.end() if end else len(prefix)
        self._head = bytearray(prefix[:split])
        self._held = bytearray(prefix[split:])
        self._released = trio.Event()

    def release(self) -> None:
        """Let the bytes after the head through (call once the handshake is accepted)."""
        self._released.set()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """The head first, then held bytes once released, then the underlying stream's."""
        for pending in (self._head, self._held):
            if pending:
                if pending is self._held:
                    await self._released.wait()
                size = len(pending) if max_bytes is None else min(max_bytes, len(pending))
                chunk = bytes(pending[:size])
                del pending[:size]
                await trio.lowlevel.checkpoint()
                return chunk
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Send on the underlying stream."""
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        """Delegate to the underlying stream."""
        await self.stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        """Half-close the underlying stream."""
        await self.stream.send_eof()

    async def aclose(self) -> None:
        """Close the underlying stream."""
        await self.stream.aclose()
