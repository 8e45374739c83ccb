"""Streamable HTTP with the fixtures, driven with plain `Request` objects: no sockets, no sleeps.

test_reconnection ends its POST response mid-call (SEP-1699) and the client resumes with
Last-Event-ID; resource updates outside a call reach the session's GET stream. The event
buffer tests pin down what a hangup cuts off.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio
import trio.testing

from agora.config import Config
from agora.mcp import jsonrpc as rpc
from agora.server.embed import open_server
from agora.toolsets.base import Principal
from agora.transports.http_session import KEEP_FINISHED_STREAMS
from agora.transports.sse import EventBuffer, read_stream
from agora.transports.streamable import StreamableHTTP
from agora.web.http import EventStream, Request, Response

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agora.server.embed import Server

TIMEOUT = 10
CONFIG = Config(db=":memory:", port=0, conformance=True, toolsets=["conformance"])


class Http:
    """Plain `Request`s into one server's Streamable HTTP handler."""

    def __init__(self, server: Server, nursery: trio.Nursery) -> None:
        self.mcp = StreamableHTTP(server.app, nursery)
        endpoint = server.app.endpoint("/mcp")
        assert endpoint is not None
        self.endpoint = endpoint
        self.session = ""

    async def send(self, method: str, body: Any = None, **headers: str) -> Response | EventStream:
        base = {
            "host": "127.0.0.1",
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        if self.session:
            base["mcp-session-id"] = self.session
        req = Request(
            method=method,
            path="/mcp",
            query={},
            headers=base | {k.replace("_", "-"): v for k, v in headers.items()},
            body=b"" if body is None else json.dumps(body).encode(),
            principal=Principal(),
        )
        return await self.mcp.handle(req, self.endpoint)

    async def initialize(self) -> None:
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
        reply = await self.send("POST", rpc.request(0, "initialize", params))
        assert isinstance(reply, Response)
        assert reply.status == 200
        self.session = dict(reply.headers)["mcp-session-id"]
        assert isinstance(
            await self.send("POST", rpc.notification("notifications/initialized")), Response
        )


async def events(stream: Response | EventStream) -> list[tuple[str, str]]:
    """``(id, data)`` of every event on an SSE response, until the server ends it."""
    assert isinstance(stream, EventStream)
    out = []
    async for raw in stream.events:
        assert isinstance(raw, bytes)
        if raw.startswith(b":"):
            continue  # a keepalive comment
        fields = {}
        for line in raw.decode().strip().split("\n"):
            key, _, value = line.partition(":")
            fields[key] = value.removeprefix(" ")
        out.append((fields["id"], fields["data"]))
    return out


@asynccontextmanager
async def http_server() -> AsyncIterator[Http]:
    async with open_server(CONFIG, listen=False) as server, trio.open_nursery() as nursery:
        http = Http(server, nursery)
        await http.initialize()
        yield http
        http.mcp.close_all()


async def test_reconnection_ends_the_post_stream_and_the_client_resumes_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with http_server() as http:
        with trio.fail_after(TIMEOUT):
            call = rpc.request(7, "tools/call", {"name": "test_reconnection"})
            first = await events(await http.send("POST", call))
            # The POST response ended with only the priming event: no answer yet.
            assert len(first) == 1
            assert first[0][1] == ""
            resumed = await events(await http.send("GET", last_event_id=first[0][0]))
    assert [json.loads(data)["id"] for _, data in resumed] == [7]
    assert json.loads(resumed[0][1])["result"]["content"][0]["text"] == (
        "Reconnection test completed"
    )


async def test_an_unknown_last_event_id_is_a_bad_request() -> None:
    # Not 404: an MCP client takes that for "the session is gone" (a hostile client's finding;
    # test_http_session_oracle.py shows the session still serves).
    async with http_server() as http:
        with trio.fail_after(TIMEOUT):
            reply = await http.send("GET", last_event_id="feedface-3")
    assert isinstance(reply, Response)
    assert reply.status == 400


async def test_resource_updates_outside_a_call_go_to_the_get_stream() -> None:
    async with http_server() as http:
        with trio.fail_after(TIMEOUT):
            subscribed = await http.send(
                "POST", rpc.request(1, "resources/subscribe", {"uri": "test://watched-resource"})
            )
            assert isinstance(subscribed, Response)
            assert subscribed.status == 200
            stream = await http.send("GET")
            session = http.mcp.sessions[http.session]
            await session.conn.resource_updated("test://watched-resource")
            await session.conn.resource_updated("test://static-text")  # not subscribed
            session.standalone.close()  # type: ignore[union-attr]
            got = await events(stream)
    assert [json.loads(data) for _, data in got] == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "test://watched-resource"},
        }
    ]


async def _drain(stream: AsyncIterator[bytes]) -> list[bytes]:
    return [event async for event in stream]


async def test_a_hangup_ends_readers_at_the_events_written_before_it() -> None:
    buf = EventBuffer()
    early = read_stream(buf, 0, prime_retry_ms=None)  # created, not yet iterated
    buf.append("a")
    buf.hangup()
    buf.append("b")
    buf.close()
    with trio.fail_after(TIMEOUT):
        cut = await _drain(early)
        resumed = await _drain(read_stream(buf, 1, prime_retry_ms=None))
    assert cut == [buf.events[0]]
    assert resumed == [buf.events[1]]
    assert b"data: b" in resumed[0]


async def test_a_reader_started_after_a_hangup_reads_on() -> None:
    buf = EventBuffer()
    buf.hangup()
    late = read_stream(buf, 0, prime_retry_ms=500)
    buf.append("a")
    buf.close()
    with trio.fail_after(TIMEOUT):
        got = await _drain(late)
    assert got[0] == f"id: {buf.event_id(0)}\nretry: 500\ndata: \n\n".encode()
    assert got[1:] == buf.events


async def test_a_session_keeps_only_the_latest_finished_streams() -> None:
    async with http_server() as http:
        session = http.mcp.sessions[http.session]
        running = session.open_buffer(None)
        for _ in range(KEEP_FINISHED_STREAMS + 10):
            session.open_buffer(None).close()
        session.open_buffer(None)
        finished = [b for b in session.streams.values() if b.closed]
        assert len(finished) == KEEP_FINISHED_STREAMS
        assert running.stream_id in session.streams
