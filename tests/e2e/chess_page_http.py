"""Plain HTTP/1.1 to the chess page, as the human's page speaks it.

`http_json` and `open_events` speak h11 over a Trio TCP stream to the page's JSON API and its
Server-Sent Events stream. This module must not know the game's rules or start servers.

Nothing here sleeps: every wait is bounded by ``trio.fail_after``.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import h11
import trio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

HTTP_TIMEOUT = 10.0


async def _open(
    url: str, method: str, body: bytes | None
) -> tuple[trio.SocketStream, h11.Connection]:
    parts = urlsplit(url)
    stream = await trio.open_tcp_stream(parts.hostname or "127.0.0.1", parts.port or 80)
    conn = h11.Connection(h11.CLIENT)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    headers = [("Host", parts.netloc), ("Connection", "close"), ("Accept", "*/*")]
    if body is not None:
        headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    out = conn.send(h11.Request(method=method, target=target, headers=headers)) or b""
    if body:
        out += conn.send(h11.Data(data=body)) or b""
    out += conn.send(h11.EndOfMessage()) or b""
    await stream.send_all(out)
    return stream, conn


async def _next_event(stream: trio.SocketStream, conn: h11.Connection) -> h11.Event:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event  # type: ignore[return-value]
        conn.receive_data(await stream.receive_some(65536))


async def http_json(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """One request; returns the status and the decoded JSON body."""
    with trio.fail_after(HTTP_TIMEOUT):
        raw = None if body is None else json.dumps(body).encode()
        stream, conn = await _open(url, method, raw)
        async with stream:
            status, chunks = 0, []
            while True:
                event = await _next_event(stream, conn)
                if isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    chunks.append(event.data)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
    return status, json.loads(b"".join(chunks))


class EventReader:
    """Reads one Server-Sent Events response, event by event."""

    def __init__(self, stream: trio.SocketStream, conn: h11.Connection) -> None:
        self._stream = stream
        self._conn = conn
        self._buffer = ""

    async def next(self) -> tuple[str, str]:
        """The next ``(event, data)``; raises EOFError when the stream ends."""
        while "\n\n" not in self._buffer:
            event = await _next_event(self._stream, self._conn)
            if isinstance(event, h11.Data):
                self._buffer += bytes(event.data).decode()
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                raise EOFError
        block, self._buffer = self._buffer.split("\n\n", 1)
        name, data = "message", []
        for line in block.split("\n"):
            key, _, value = line.partition(": ")
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
        return name, "\n".join(data)

    async def next_state(self) -> dict[str, Any]:
        """The next ``state`` event's page state (pings are skipped)."""
        while True:
            name, data = await self.next()
            if name == "state":
                state: dict[str, Any] = json.loads(data)
                return state


@asynccontextmanager
async def open_events(url: str) -> AsyncIterator[EventReader]:
    """Open the SSE stream at ``url`` (the page's ``/events``)."""
    with trio.fail_after(HTTP_TIMEOUT):
        stream, conn = await _open(url, "GET", None)
        response = await _next_event(stream, conn)
    async with stream:
        assert isinstance(response, h11.Response), response
        assert response.status_code == 200, response
        headers = {k.decode().lower(): v.decode() for k, v in response.headers}
        assert headers["content-type"].startswith("text/event-stream")
        yield EventReader(stream, conn)


async def new_table(base_url: str, name: str) -> dict[str, Any]:
    """A new chess table made as the /play page makes one (``POST /play/tables``): its URLs
    and tokens.

    Raises:
        AssertionError: it was not created (201).
    """
    status, table = await http_json("POST", f"{base_url}/play/tables", {"name": name})
    assert status == 201, table
    out: dict[str, Any] = table
    return out
