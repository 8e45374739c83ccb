"""An in-process agora on a real loopback socket, a test toolset, and a raw HTTP/1.1 client.

The server runs in the test's own Trio run (a ``:memory:`` store, so nothing leaves the
event loop and Trio's mock clock can jump over timeouts). The `probe` toolset's tools:
``echo`` answers at once, ``chatty`` reports progress first, ``hang`` never ends, ``ask``
asks the client (``probe/ask``) and answers what it was told, ``resume`` ends its POST's
stream (the client resumes it) before it answers. One page route, ``GET /flood``, is an
endless SSE stream of 64 KiB events. `RawHttp`
speaks HTTP/1.1 with h11 over one connection, for many requests in a row.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import h11
import trio

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import Toolset
from agora.web.http import EventStream, Route

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agora.runtime.registry import Runtime
    from agora.server.embed import Server
    from agora.toolsets.base import ToolCall
    from agora.web.http import Request

TOKEN = "probe-token"
TOKEN_SHA256 = hashlib.sha256(TOKEN.encode()).hexdigest()
NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


async def _echo(call: ToolCall) -> dict[str, Any]:
    return {"echo": call.args}


async def _chatty(call: ToolCall) -> dict[str, Any]:
    await call.progress(1, 2, "half way")
    return {"done": True}


async def _hang(call: ToolCall) -> dict[str, Any]:
    await trio.sleep_forever()
    raise AssertionError("unreachable")


async def _ask(call: ToolCall) -> dict[str, Any]:
    return {"told": await call.client.request("probe/ask", {"question": "?"})}


async def _resume(call: ToolCall) -> dict[str, Any]:
    call.close_stream()
    return {"resumed": True}


async def _flood_events() -> AsyncIterator[bytes]:
    event = b"data: " + b"x" * 65536 + b"\n\n"
    while True:
        yield event


async def _flood(request: Request, runtime: Runtime) -> EventStream:
    return EventStream(_flood_events())


def probe() -> Toolset:
    """The test toolset."""
    tools = [
        {"name": name, "description": name, "inputSchema": NO_ARGS}
        for name in ("echo", "chatty", "hang", "ask", "resume")
    ]
    handlers = {"echo": _echo, "chatty": _chatty, "hang": _hang, "ask": _ask, "resume": _resume}
    return Toolset(
        name="probe",
        handlers=handlers,
        contract=None,
        tools=tools,
        routes=[Route("GET", "/flood", _flood)],
    )


@asynccontextmanager
async def serve(**settings: Any) -> AsyncIterator[Server]:
    """agora with the probe toolset (and chess unless ``toolsets`` says otherwise)."""
    names = settings.pop("toolsets", ["chess"])
    from agora.server.app import load_toolsets

    settings.setdefault("db", ":memory:")
    config = Config(host="127.0.0.1", port=0, toolsets=names, **settings)
    async with open_server(config, toolsets=[*load_toolsets(names), probe()]) as server:
        yield server


@dataclass
class Reply:
    """One HTTP response."""

    status: int
    headers: dict[str, str]
    body: bytes
    #: Informational (1xx) statuses received before it.
    early: list[int]

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


class RawHttp:
    """One client connection; requests in a row (keep-alive) or by hand."""

    def __init__(self, stream: trio.SocketStream, port: int) -> None:
        self.stream = stream
        self.port = port
        self.h11 = h11.Connection(h11.CLIENT)

    @classmethod
    @asynccontextmanager
    async def open(cls, port: int) -> AsyncIterator[RawHttp]:
        """Connect to 127.0.0.1:``port``; closed at the end."""
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            yield cls(stream, port)

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """Send one request and read its whole response."""
        raw = json.dumps(body).encode() if isinstance(body, dict) else body or b""
        head = {"host": f"127.0.0.1:{self.port}"}
        if method == "POST":
            head |= MCP_HEADERS
        head |= headers or {}
        head["content-length"] = str(len(raw))
        if self.h11.our_state is h11.DONE:
            self.h11.start_next_cycle()
        out = self.h11.send(h11.Request(method=method, target=path, headers=list(head.items())))
        out += self.h11.send(h11.Data(data=raw)) if raw else b""
        out += self.h11.send(h11.EndOfMessage())
        await self.stream.send_all(out)
        return await self.response()

    async def response(self) -> Reply:
        """Read one response to the end."""
        status, headers, body, early = 0, {}, bytearray(), []
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self.stream.receive_some(65536))
            elif isinstance(event, h11.InformationalResponse):
                early.append(event.status_code)
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += event.data
            else:
                assert isinstance(event, h11.EndOfMessage), event
                return Reply(status, headers, bytes(body), early)


async def read_to_end(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = bytearray()
    while True:
        try:
            chunk = await stream.receive_some(65536)
        except trio.BrokenResourceError:
            return bytes(received)
        if not chunk:
            return bytes(received)
        received += chunk


async def raw_exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection; everything the server sends until it closes."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(data)
        return await read_to_end(stream)


def assert_one_episode(records: list[Any], what: str, cap: int, refused: int) -> None:
    """``records`` (caplog's) say one episode of refusals at a cap of ``cap`` ``what``: a
    WARNING as it began, one INFO with the ``refused`` count when one was let in, no more."""
    said = [(r.levelname, r.getMessage()) for r in records]
    assert said[0] == (
        "WARNING",
        f"server full: {cap} {what}; refusing new ones (said once until one is accepted again)",
    ), said
    assert said[1][0] == "INFO", said
    assert said[1][1].startswith(f"accepting {what} again: {refused} refused in "), said
    assert len(said) == 2, said


#: The 2026-07-28 revision, and the ``params._meta`` envelope every request of it carries.
MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


async def open_session(client: RawHttp, path: str = "/mcp/probe", **headers: str) -> dict[str, str]:
    """Initialize a session on ``client``'s connection; the headers that address it."""
    reply = await client.request("POST", path, INITIALIZE, headers)
    assert reply.status == 200, reply
    session = {
        "mcp-session-id": reply.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
        **headers,
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.request("POST", path, done, session)).status == 202
    return session


def call(name: str, rid: int = 1, **params: Any) -> dict[str, Any]:
    """A tools/call request."""
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}, **params},
    }


async def post_into(
    answer: dict[str, Any], port: int, body: dict[str, Any], session: dict[str, str]
) -> None:
    """POST ``body`` to /mcp/probe on a fresh connection; its reply and the time it came are
    stored in ``answer`` ("reply", "at"), for a call left waiting in a nursery."""
    async with RawHttp.open(port) as client:
        answer["reply"] = await client.request("POST", "/mcp/probe", body, session)
        answer["at"] = trio.current_time()


async def healthz(port: int) -> dict[str, Any]:
    """``GET /healthz`` on a connection of its own (counted in its ``connections``)."""
    async with RawHttp.open(port) as client:
        reply = await client.request("GET", "/healthz")
    health: dict[str, Any] = reply.json()
    return health


async def until(port: int, **counts: int) -> None:
    """Poll ``/healthz`` until it shows ``counts`` (the caller bounds the wait)."""
    while True:
        health = await healthz(port)
        if all(health[name] == value for name, value in counts.items()):
            return
        await trio.sleep(0.02)
