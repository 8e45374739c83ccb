"""A stream that first replays bytes already read, then reads from the real stream.

The HTTP front end reads a request head before it knows the request is a WebSocket upgrade;
trio-websocket then needs to read that head itself. Replayed bytes are handed out in chunks
no larger than the reader asks for.
"""

from __future__ import annotations

import trio


class ReplayStream(trio.abc.Stream):
    """Wraps ``stream`` so that ``receive_some`` yields ``prefix`` first."""

    def __init__(self, stream: trio.SocketStream, prefix: bytes) -> None:
        self.stream = stream
        self.socket = stream.socket  # trio-websocket reads peer addresses from here
        self._prefix = bytearray(prefix)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """Replayed bytes first, then the underlying stream's."""
        if self._prefix:
            size = len(self._prefix) if max_bytes is None else min(max_bytes, len(self._prefix))
            chunk = bytes(self._prefix[:size])
            del self._prefix[:size]
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
