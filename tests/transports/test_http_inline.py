"""A POST's call runs in the POST's own task; whatever it sends before its result still
goes out at once, as an SSE stream written by another task of the connection.

A call that asks the client something mid-call has its request delivered while it waits
(else neither side could go on); a call that ends its stream before answering leaves a
resumable stream; a reader that vanishes mid-stream does not stop the call or the server. A
stream resumed again is taken over: only its newest response carries what comes next.
"""

from __future__ import annotations

import json
from typing import Any

import h11
import pytest
import trio
import trio.testing
from http_support import RawHttp, call, open_session, serve

TIMEOUT = 300  # mock seconds


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 50 ms (real sockets need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.05)


async def _post(client: RawHttp, body: dict[str, Any], session: dict[str, str]) -> None:
    """Send a POST to /mcp/probe on ``client`` without reading its response."""
    raw = json.dumps(body).encode()
    head = {"host": f"127.0.0.1:{client.port}", "content-length": str(len(raw))}
    head |= {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if client.h11.our_state is h11.DONE:
        client.h11.start_next_cycle()
    request = h11.Request(method="POST", target="/mcp/probe", headers=[*(head | session).items()])
    out = client.h11.send(request) + client.h11.send(h11.Data(data=raw))
    await client.stream.send_all(out + client.h11.send(h11.EndOfMessage()))


async def _get_head(client: RawHttp, headers: dict[str, str]) -> int:
    """Send a GET of /mcp/probe on ``client`` and read only its head: the status."""
    head = {"host": f"127.0.0.1:{client.port}", **headers}
    if client.h11.our_state is h11.DONE:
        client.h11.start_next_cycle()
    request = h11.Request(method="GET", target="/mcp/probe", headers=[*head.items()])
    await client.stream.send_all(client.h11.send(request) + client.h11.send(h11.EndOfMessage()))
    while True:
        item = client.h11.next_event()
        if item is h11.NEED_DATA:
            client.h11.receive_data(await client.stream.receive_some(65536))
        else:
            assert isinstance(item, h11.Response), item
            return item.status_code


async def _next_event(client: RawHttp, pending: bytearray) -> tuple[str, dict[str, Any]]:
    """The next SSE event with data on ``client``'s streamed response: its id and JSON."""
    while True:
        end = pending.find(b"\n\n")
        if end >= 0:
            event = bytes(pending[: end + 2]).decode()
            del pending[: end + 2]
            lines = event.splitlines()
            data = [line[6:] for line in lines if line.startswith("data: ")]
            if data and data[0]:
                event_id = next(line[4:] for line in lines if line.startswith("id: "))
                parsed: dict[str, Any] = json.loads("\n".join(data))
                return event_id, parsed
            continue
        item = client.h11.next_event()
        if item is h11.NEED_DATA:
            client.h11.receive_data(await client.stream.receive_some(65536))
        elif isinstance(item, h11.Response):
            assert item.headers  # the head of the stream: its events follow
            assert dict(item.headers)[b"content-type"] == b"text/event-stream"
        elif isinstance(item, h11.Data):
            pending += item.data
        else:
            raise AssertionError(f"the stream ended early: {item}")


async def test_a_call_that_asks_the_client_gets_its_answer_while_its_post_streams(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client, RawHttp.open(server.port) as other:
                session = await open_session(client)
                await _post(client, call("ask", 3), session)
                pending = bytearray()
                _, asked = await _next_event(client, pending)
                assert asked["method"] == "probe/ask"
                assert asked["params"] == {"question": "?"}
                answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"said": "yes"}}
                assert (await other.request("POST", "/mcp/probe", answer, session)).status == 202
                _, result = await _next_event(client, pending)
                assert result["id"] == 3
                assert result["result"]["structuredContent"] == {"told": {"said": "yes"}}
                # The stream ends and the connection carries the next call.
                rest = await client.response()
                assert rest.body == b""
                again = await client.request("POST", "/mcp/probe", call("echo", 4), session)
                assert again.json()["result"]["structuredContent"] == {"echo": {}}


async def test_a_call_that_ends_its_stream_first_is_resumed_by_last_event_id(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_session(client)
                first = await client.request("POST", "/mcp/probe", call("resume", 6), session)
                assert first.headers["content-type"] == "text/event-stream"
                ids = [line[4:] for line in first.body.decode().splitlines() if line[:4] == "id: "]
                assert len(ids) == 1  # only the priming event: no answer on this response
                assert b'"result"' not in first.body
                resumed = await client.request(
                    "GET",
                    "/mcp/probe",
                    None,
                    session | {"accept": "text/event-stream", "last-event-id": ids[0]},
                )
                assert resumed.json()["id"] == 6
                assert resumed.json()["result"]["structuredContent"] == {"resumed": True}


async def test_a_reader_that_leaves_mid_stream_leaves_the_call_running_and_resumable(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as setup:
                session = await open_session(setup)
            async with RawHttp.open(server.port) as client:
                await _post(client, call("ask", 8), session)
                event_id, asked = await _next_event(client, bytearray())
            # The reader is gone; the call still waits for its answer, which still counts.
            async with RawHttp.open(server.port) as other:
                answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"said": "late"}}
                assert (await other.request("POST", "/mcp/probe", answer, session)).status == 202
                resume = session | {"accept": "text/event-stream", "last-event-id": event_id}
                resumed = await other.request("GET", "/mcp/probe", None, resume)
                assert resumed.json()["id"] == 8
                assert resumed.json()["result"]["structuredContent"] == {"told": {"said": "late"}}


async def test_a_stream_resumed_twice_is_carried_on_by_the_newest_response_only(clock):
    """MCP 2025-06-18: a message must not be broadcast across streams. Two resumptions of
    one stream used to both get what came next (and the POST's own response too)."""
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with (
                RawHttp.open(server.port) as client,
                RawHttp.open(server.port) as first,
                RawHttp.open(server.port) as second,
                RawHttp.open(server.port) as other,
            ):
                session = await open_session(other)
                await _post(client, call("ask", 9), session)
                event_id, asked = await _next_event(client, bytearray())
                resume = session | {"accept": "text/event-stream", "last-event-id": event_id}
                assert await _get_head(first, resume) == 200
                assert await _get_head(second, resume) == 200
                answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"said": "once"}}
                assert (await other.request("POST", "/mcp/probe", answer, session)).status == 202
                _, result = await _next_event(second, bytearray())
                assert result["id"] == 9
                assert result["result"]["structuredContent"] == {"told": {"said": "once"}}
                # The POST's response and the first resumption ended, without the result.
                for taken in (client, first):
                    rest = await taken.response()
                    assert b'"result"' not in rest.body, rest
