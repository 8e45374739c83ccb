"""Streamable HTTP sessions over real sockets: caps, idle expiry, and how a call is answered.

A call that sends nothing before its result is answered with plain JSON on a kept-alive
connection; one that streams first gets SSE, and the connection still carries the next
request. A call whose session is deleted, or whose server shuts down, gets a JSON-RPC error.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing
from http_support import (
    RawHttp,
    call,
    open_session,
    post_into,
    serve,
)

TIMEOUT = 300  # mock seconds


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 50 ms (real sockets need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.05)


async def test_a_quick_call_is_answered_with_json_on_a_kept_alive_connection(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_session(client)
                for rid in range(1, 4):
                    reply = await client.request("POST", "/mcp/probe", call("echo", rid), session)
                    assert reply.status == 200
                    assert reply.headers["content-type"] == "application/json"
                    assert "connection" not in reply.headers
                    assert reply.json()["id"] == rid
                    assert reply.json()["result"]["structuredContent"] == {"echo": {}}


async def test_a_call_that_streams_first_gets_sse_and_the_connection_lives_on(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_session(client)
                chatty = call("chatty", 1, _meta={"progressToken": "p"})
                reply = await client.request("POST", "/mcp/probe", chatty, session)
                assert reply.headers["content-type"] == "text/event-stream"
                assert reply.headers["transfer-encoding"] == "chunked"
                assert b'"notifications/progress"' in reply.body
                assert reply.json()["result"]["structuredContent"] == {"done": True}
                # Without a progress token it streams nothing first: plain JSON.
                quiet = await client.request("POST", "/mcp/probe", call("chatty", 2), session)
                assert quiet.headers["content-type"] == "application/json"


async def test_a_waiting_call_whose_session_is_deleted_gets_a_json_rpc_error(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as setup:
                session = await open_session(setup)
            answer: dict[str, Any] = {}
            async with trio.open_nursery() as nursery:
                nursery.start_soon(post_into, answer, server.port, call("hang", 5), session)
                await trio.sleep(1)
                async with RawHttp.open(server.port) as client:
                    assert (
                        await client.request("DELETE", "/mcp/probe", None, session)
                    ).status == 200
            reply = answer["reply"]
            assert reply.status == 200
            assert reply.json()["id"] == 5
            assert reply.json()["error"]["code"] == -32603
            assert "deleted" in reply.json()["error"]["message"]


async def test_a_waiting_call_gets_a_json_rpc_error_when_the_server_shuts_down(clock, caplog):
    """The call still running when the grace ends is answered -32603; and the log says it:
    SIGTERM under load used to log one line, now the drain's start (calls in flight) and the
    end at INFO, and the calls the grace did not see answered (cancelled) at WARNING, each
    named: an operator's finding, it said neither which calls nor, at log_level = "warning",
    anything at all, though each may or may not have made its change."""
    caplog.set_level(logging.INFO, logger="agora.server")
    answer: dict[str, Any] = {}
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery, serve(grace_seconds=2.0) as server:
            async with RawHttp.open(server.port) as setup:
                session = await open_session(setup)
            nursery.start_soon(post_into, answer, server.port, call("hang", 5), session)
            await trio.sleep(1)
        reply = answer["reply"]
        assert reply.json()["error"]["code"] == -32603
        assert "the server shut down before this call answered" in reply.json()["error"]["message"]
    said = [r.getMessage() for r in caplog.records if r.name.startswith("agora.server")]
    drain = [m for m in said if m.startswith("shutting down: ")]
    assert drain == [
        "shutting down: 1 calls in flight (0 long-polls parked, 0 listen streams);"
        " up to 2 s (grace_seconds) for them to answer"
    ], said
    cut = [r for r in caplog.records if "still running after" in r.getMessage()]
    assert [r.levelname for r in cut] == ["WARNING"], said
    assert cut[0].getMessage() == (
        "1 call still running after 2 s (grace_seconds), cancelled: tool hang (principal"
        " anonymous, request id 5). A change each made may or may not have been saved: check"
        " before repeating it"
    )
    assert said[-1].startswith("stopped; shutdown took "), said


async def test_an_idle_session_expires_and_frees_its_place(clock):
    async with serve(session_idle_seconds=60.0, max_sessions=1) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_session(client)
            await trio.sleep(30)
            async with RawHttp.open(server.port) as client:
                ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
                assert (await client.request("POST", "/mcp/probe", ping, session)).status == 200
            await trio.sleep(50)  # 50 s since its last use: still there
            async with RawHttp.open(server.port) as client:
                assert (await client.request("POST", "/mcp/probe", ping, session)).status == 200
            await trio.sleep(80)  # past 60 s unused and the next sweep
            async with RawHttp.open(server.port) as client:
                gone = await client.request("POST", "/mcp/probe", ping, session)
                assert gone.status == 404, gone
            async with RawHttp.open(server.port) as client:
                await open_session(client)  # its place is free again


async def test_a_get_stream_whose_reader_went_away_stops_holding_its_session(clock):
    async with serve(session_idle_seconds=60.0) as server:
        with trio.fail_after(2 * TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_session(client)
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            async with stream:
                fields = "".join(f"{k}: {v}\r\n" for k, v in session.items())
                get = f"GET /mcp/probe HTTP/1.1\r\nHost: 127.0.0.1\r\n{fields}"
                await stream.send_all(f"{get}Accept: text/event-stream\r\n\r\n".encode())
                assert (await stream.receive_some(65536)).startswith(b"HTTP/1.1 200 ")
                await trio.sleep(100)  # an open stream keeps the session
                async with RawHttp.open(server.port) as client:
                    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
                    assert (await client.request("POST", "/mcp/probe", ping, session)).status == 200
            await trio.sleep(150)  # the reader is gone: keepalives fail, then the session idles
            async with RawHttp.open(server.port) as client:
                gone = await client.request("POST", "/mcp/probe", ping, session)
                assert gone.status == 404, gone


async def test_a_cancelled_call_ends_its_waiting_post_with_no_response(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as setup:
                session = await open_session(setup)
            answer: dict[str, Any] = {}
            async with trio.open_nursery() as nursery:
                nursery.start_soon(post_into, answer, server.port, call("hang", 5), session)
                await trio.sleep(1)
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 5},
                }
                async with RawHttp.open(server.port) as client:
                    assert (
                        await client.request("POST", "/mcp/probe", cancel, session)
                    ).status == 202
            assert answer["at"] < 2
            # A cancelled request gets no response: the POST is an SSE stream that ends.
            reply = answer["reply"]
            assert reply.status == 200, reply
            assert reply.headers["content-type"].startswith("text/event-stream")
            data = [line for line in reply.body.decode().splitlines() if line.startswith("data:")]
            assert all(not line[5:].strip() for line in data), data  # (a priming event's)


@pytest.mark.parametrize("second", ["same", "other"])
@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
async def test_a_session_id_given_twice_is_a_bad_request_not_a_missing_session(
    clock, method, second
):
    """404 would tell the client's SDK to drop a session that is alive."""
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                session = await open_session(client)
                sid = session["mcp-session-id"]
                # (h11 sends both: the names differ in case only)
                twice = session | {"Mcp-Session-Id": sid if second == "same" else "0" * 32}
                twice["accept"] = "application/json, text/event-stream"
                body = call("echo", 1) if method == "POST" else None
                refused = await client.request(method, "/mcp/probe", body, twice)
                assert refused.status == 400
                assert "given more than once" in refused.json()["error"]["message"]
                reply = await client.request("POST", "/mcp/probe", call("echo", 2), session)
                assert reply.json()["result"]["structuredContent"] == {"echo": {}}
