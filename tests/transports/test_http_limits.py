"""The HTTP front end against slow, stalled and crowding peers, and malformed framing.

Real loopback sockets, an in-process server, and Trio's mock clock: timeouts of tens of
seconds pass without waiting (the clock jumps once every task is blocked).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from typing import Any

import pytest
import trio
import trio.testing
from http_support import RawHttp, assert_one_episode, raw_exchange, read_to_end, serve

from agora.mcp import jsonrpc as rpc
from agora.transports.deadlines import PERIOD
from agora.transports.http import MAX_PAGE_BODY

TIMEOUT = 200  # mock seconds: bounds every wait below


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 50 ms (real sockets need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.05)


async def healthz(port: int) -> dict[str, Any]:
    async with RawHttp.open(port) as client:
        reply = await client.request("GET", "/healthz")
        assert reply.status == 200, reply
        return reply.json()  # type: ignore[no-any-return]


async def test_an_embedded_server_leaves_the_collector_to_its_host():
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            assert (await healthz(server.port))["collector"] is None


async def test_a_trickled_body_gets_408_once_the_whole_body_is_late(clock):
    head = (
        b"POST /play/tables HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 10\r\n\r\n"
    )

    async def trickle(stream: trio.SocketStream) -> None:
        for _ in range(9):  # one byte every 20 s: each arrives well within 30 s
            await trio.sleep(20)
            await stream.send_all(b" ")

    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            async with stream, trio.open_nursery() as nursery:
                start = trio.current_time()
                await stream.send_all(head)
                nursery.start_soon(trickle, stream)
                answer = await read_to_end(stream)
                assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
                assert 30 <= trio.current_time() - start <= 30 + PERIOD
                nursery.cancel_scope.cancel()


async def test_a_trickled_head_gets_408_and_the_close_once_the_whole_head_is_late(clock):
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

    async def trickle(stream: trio.SocketStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError):  # the server hangs up mid-head
            for byte in head[1:]:  # one byte every 5 s: each well within 30 s, the head not
                await trio.sleep(5)
                await stream.send_all(bytes([byte]))

    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            async with stream, trio.open_nursery() as nursery:
                await stream.send_all(head[:1])
                start = trio.current_time()
                nursery.start_soon(trickle, stream)
                answer = await read_to_end(stream)
                assert 30 <= trio.current_time() - start <= 30 + PERIOD
                assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer
                assert b"request head not received within 30" in answer, answer
                nursery.cancel_scope.cancel()
            assert (await healthz(server.port))["connections"] == 1  # only this probe


@pytest.mark.parametrize(
    "unread",
    [
        pytest.param(
            b"GET /play/static/play.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 400,
            id="pipelined-responses",
        ),
        pytest.param(b"GET /flood HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", id="event-stream"),
    ],
)
async def test_what_nobody_reads_is_dropped_after_send_timeout(clock, caplog, unread):
    caplog.set_level(logging.INFO, logger="agora.transports")
    async with serve(send_timeout=5.0) as server:
        with trio.fail_after(TIMEOUT):
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            async with stream:
                stream.socket.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, 4096)
                await stream.send_all(unread)
                await trio.sleep(4)  # reading nothing
                assert (await healthz(server.port))["connections"] == 2  # it and this probe
                await trio.sleep(2)
                assert (await healthz(server.port))["connections"] == 1  # only this probe
    said = [r.getMessage() for r in caplog.records if "stopped reading" in r.getMessage()]
    assert len(said) == 1, caplog.text  # the operator learns why the connection ended
    assert said[0].startswith("http peer 127.0.0.1:"), said
    assert said[0].endswith(" stopped reading for 5 s (send_timeout); closing"), said


async def _hold(port: int, count: int) -> list[trio.SocketStream]:
    """``count`` idle connections, counted by the server (a second passes)."""
    held = [await trio.open_tcp_stream("127.0.0.1", port) for _ in range(count)]
    await trio.sleep(1)
    return held


async def test_connections_over_max_connections_get_503(clock):
    async with serve(max_connections=3) as server:
        with trio.fail_after(TIMEOUT):
            held = await _hold(server.port, 2)
            async with RawHttp.open(server.port) as third:
                assert (await third.request("GET", "/healthz")).status == 200
                async with RawHttp.open(server.port) as fourth:
                    refused = await fourth.request("GET", "/nope")
                    assert refused.status == 503, refused
                    assert refused.headers["connection"] == "close"
                    assert "too many connections" in refused.json()["error"]
            for stream in held:
                await stream.aclose()
            await trio.sleep(1)
            assert (await healthz(server.port))["connections"] == 1


async def test_connections_refused_at_the_cap_are_said_once_per_episode(clock, caplog):
    """A full server said nothing while it refused everyone; a line per refusal would flood
    the log. One WARNING when refusals begin, one INFO with their count when one is let in."""
    caplog.set_level(logging.INFO, logger="agora.transports.front")
    async with serve(max_connections=1) as server:
        with trio.fail_after(TIMEOUT):
            (held,) = await _hold(server.port, 1)
            for _ in range(3):
                async with RawHttp.open(server.port) as other:
                    assert (await other.request("GET", "/nope")).status == 503
            await held.aclose()
            # A real second for the server to see the close: the mock clock jumps after 50 ms
            # of real time with every task blocked, which a loaded machine can take to deliver
            # it (the probe then came past the cap and counted as a fourth refusal).
            clock.autojump_threshold, clock.rate = math.inf, 1.0
            await trio.sleep(1)
            clock.autojump_threshold, clock.rate = 0.05, 0.0
            await healthz(server.port)  # let in: the episode is over
    assert_one_episode(caplog.records, "connections", 1, 3)


async def test_probes_over_max_connections_get_their_answer_then_close(clock):
    """A node that is merely full is alive and may be ready: past the cap, ``GET /healthz``
    and ``GET /readyz`` get their real answers (then the close), anything else 503. A 503
    to the liveness probe would have a supervisor restart a healthy node."""
    async with serve(max_connections=2) as server:
        with trio.fail_after(TIMEOUT):
            held = await _hold(server.port, 2)
            async with RawHttp.open(server.port) as other:
                assert (await other.request("GET", "/nope")).status == 503
            for path in ("/healthz", "/readyz", "/healthz?full=1"):
                async with RawHttp.open(server.port) as probe:
                    reply = await probe.request("GET", path)
                    assert reply.status == 200, (path, reply)
                    assert reply.json()["ok"] is True, reply
                    assert reply.headers["connection"] == "close", reply
                    assert await probe.stream.receive_some(1) == b""  # closed after it
            # the two held ones; the probe, past the cap, apart (it read 3 for a cap of 2)
            assert (reply.json()["connections"], reply.json()["refusing"]) == (2, 1)
            async with RawHttp.open(server.port) as post:
                assert (await post.request("POST", "/healthz")).status == 503
            for stream in held:
                await stream.aclose()


async def test_content_length_with_transfer_encoding_gets_400_and_close(clock):
    smuggled = (
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            answer = await raw_exchange(server.port, smuggled)
            assert answer.startswith(b"HTTP/1.1 400"), answer[:100]
            assert answer.count(b"HTTP/1.1 ") == 1  # the pipelined request was not served


async def test_expect_100_continue_is_answered_before_the_body(clock):
    head = (
        b"POST /mcp/probe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\n"
        b"Content-Length: 4\r\n\r\n"
    )
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            await stream.send_all(head)
            first = await stream.receive_some(65536)
            assert first.startswith(b"HTTP/1.1 100 "), first
            await stream.send_all(b"null")
            assert (await read_to_end(stream)).startswith(b"HTTP/1.1 400")
            await stream.aclose()


async def test_a_body_declared_too_large_gets_413_before_it_is_sent(clock):
    head = (
        b"POST /mcp/probe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % (rpc.MAX_MESSAGE_BYTES + 1)
    )
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            reply = await raw_exchange(server.port, head)
    assert reply.startswith(b"HTTP/1.1 413")
    # An MCP endpoint's refusal is a JSON-RPC error, which an MCP client reports as it is.
    body = json.loads(reply.partition(b"\r\n\r\n")[2])
    assert body["error"]["code"] == rpc.INVALID_REQUEST
    assert f"larger than {rpc.MAX_MESSAGE_BYTES} bytes" in body["error"]["message"]


@pytest.mark.parametrize(
    ("path", "limit", "json_rpc"),
    [
        pytest.param("/mcp/probe", rpc.MAX_MESSAGE_BYTES, True, id="mcp-endpoint"),
        pytest.param("/play/tables", MAX_PAGE_BODY, False, id="page"),
    ],
)
async def test_a_chunked_body_past_the_limit_gets_413_in_the_endpoints_terms(
    clock, path, limit, json_rpc
):
    size = limit + 10
    data = (
        (
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % (path.encode(), size)
        )
        + b"x" * size
        + b"\r\n0\r\n\r\n"
    )
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            reply = await raw_exchange(server.port, data)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    body = json.loads(reply.partition(b"\r\n\r\n")[2])
    message = f"request body larger than {limit} bytes"
    if json_rpc:
        assert body == {"jsonrpc": "2.0", "id": None,
                        "error": {"code": rpc.INVALID_REQUEST, "message": message}}  # fmt: skip
    else:
        assert body == {"error": message}


async def test_a_kept_alive_connection_serves_requests_until_its_limits(clock):
    async with serve(keep_alive_requests=3, keep_alive_seconds=5.0) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                for n in (1, 2):
                    reply = await client.request("GET", "/healthz")
                    assert reply.status == 200
                    assert "connection" not in reply.headers, n
                last = await client.request("GET", "/healthz")
                assert last.headers["connection"] == "close"
                assert await client.stream.receive_some(10) == b""
            async with RawHttp.open(server.port) as client:
                assert (await client.request("GET", "/healthz")).status == 200
                start = trio.current_time()
                assert await read_to_end(client.stream) == b""  # closed when idle
                assert 5 <= trio.current_time() - start <= 5 + PERIOD


async def test_an_http_1_0_client_gets_its_answer_and_the_connection_closes(clock):
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            answer = await raw_exchange(
                server.port, b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
            )
            assert answer.startswith(b"HTTP/1.1 200 ")
            assert b"\r\nconnection: close\r\n" in answer
            assert answer.endswith(b"}")


async def test_an_expectation_other_than_100_continue_gets_417(clock):
    """Before: ``Expect: 200-ok`` was ignored and the request served (RFC 9110 10.1.1: 417)."""
    request = (
        b"POST /mcp/probe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nExpect: 200-ok\r\n"
        b'Content-Length: 40\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"ping"}'
    )
    async with serve() as server:
        with trio.fail_after(TIMEOUT):
            reply = await raw_exchange(server.port, request)
    assert reply.startswith(b"HTTP/1.1 417"), reply[:100]
    body = json.loads(reply.partition(b"\r\n\r\n")[2])
    assert body["error"]["code"] == rpc.INVALID_REQUEST
    assert "100-continue" in body["error"]["message"]
