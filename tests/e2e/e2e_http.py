"""Raw HTTP/1.1 for the end-to-end tests: h11 on a fresh connection per request.

A test controls every byte (bad bodies, foreign Host headers) through `http`, or sends bytes
that are not HTTP at all through `raw_exchange`. This module must not implement MCP sessions
or WebSocket framing (see e2e_websocket).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import h11
import trio


@dataclass
class HttpReply:
    """A complete HTTP response."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON; for an SSE body, the data of its last non-empty event."""
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            data = [
                line[5:].strip()
                for line in self.body.decode().splitlines()
                if line.startswith("data:") and line[5:].strip()
            ]
            return json.loads(data[-1])
        return json.loads(self.body)


async def http(
    port: int,
    method: str,
    path: str,
    body: bytes | dict[str, Any] | list[Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
) -> HttpReply:
    """One request on a fresh connection; ``body`` dicts and lists are sent as JSON.

    ``Host`` defaults to 127.0.0.1:port; pass ``headers={"host": ...}`` to override it.
    """
    raw = json.dumps(body).encode() if isinstance(body, dict | list) else body or b""
    head = {"host": f"127.0.0.1:{port}", "connection": "close"}
    if method == "POST":
        head |= {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
    head |= {k.lower(): v for k, v in (headers or {}).items()}
    head["content-length"] = str(len(raw))
    conn = h11.Connection(h11.CLIENT)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        request = h11.Request(method=method, target=path, headers=list(head.items()))
        await stream.send_all(conn.send(request) + conn.send(h11.Data(data=raw)))
        await stream.send_all(conn.send(h11.EndOfMessage()))
        status, reply_headers, chunks = 0, {}, bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
                reply_headers = {k.decode().lower(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                chunks += event.data
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return HttpReply(status, reply_headers, bytes(chunks))


async def raw_exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection, then read until the server closes it."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(data)
        received = bytearray()
        while True:
            try:
                chunk = await stream.receive_some(65536)
            except trio.BrokenResourceError:  # reset: the server dropped us
                return bytes(received)
            if not chunk:
                return bytes(received)
            received += chunk
