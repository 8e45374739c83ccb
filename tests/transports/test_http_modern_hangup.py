"""At 2026-07-28 over HTTP, a client that closes its connection has cancelled its call.

The revision's cancellation pattern: closing the response stream is the cancellation signal,
and no ``notifications/cancelled`` comes. A long-poll whose client went away must leave at
once (``/healthz``: nothing in flight, nothing parked), not when its own timeout passes. (A
handshake session's hang-ups: `test_http_session_hangup`.)
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import trio
from http_support import MCP_HEADERS, MODERN, MODERN_META, call, serve, until

from agora.transports.http import HttpConnection

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

#: Hang guard; the long-polls below wait up to 55 s, so leaving within it is no timeout.
GUARD = 20


def modern_post(body: dict[str, Any], path: str = "/mcp/chess") -> bytes:
    """A 2026-07-28 POST of ``body`` as raw HTTP/1.1 bytes."""
    raw = json.dumps(body).encode()
    headers = {
        "host": "127.0.0.1",
        **MCP_HEADERS,
        "mcp-protocol-version": MODERN,
        "mcp-method": body["method"],
        "content-length": str(len(raw)),
    }
    if body["method"] == "tools/call":
        headers["mcp-name"] = body["params"]["name"]
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"POST {path} HTTP/1.1\r\n{head}\r\n".encode() + raw


def wait_for_turn(rid: int, timeout_ms: int = 55000) -> dict[str, Any]:
    body = call("wait_for_turn", rid, _meta=MODERN_META)
    body["params"]["arguments"] = {"timeout_ms": timeout_ms}
    return body


async def test_the_sdk_cancelling_a_long_poll_ends_it_on_the_server():
    with trio.fail_after(GUARD):
        async with (
            serve() as server,
            mcp.Client(f"{server.url}/mcp/chess", read_timeout_seconds=GUARD) as client,
        ):
            assert client.protocol_version == MODERN
            with trio.CancelScope() as waiting:

                async def cancel_once_parked() -> None:
                    await until(server.port, in_flight=1, parked=1)
                    waiting.cancel()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(cancel_once_parked)
                    await client.call_tool("wait_for_turn", {"timeout_ms": 55000})
            assert waiting.cancelled_caught
            await until(server.port, in_flight=0, parked=0)
            # The client's next call is served as usual.
            board = await client.call_tool("get_board", {})
            assert board.structured_content["table"] == "default"


async def test_closing_the_socket_cancels_a_parked_call():
    with trio.fail_after(GUARD):
        async with serve() as server:
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            await stream.send_all(modern_post(wait_for_turn(1)))
            await until(server.port, in_flight=1, parked=1)
            await stream.aclose()
            await until(server.port, in_flight=0, parked=0)


async def test_a_call_that_never_parked_is_cancelled_too():
    with trio.fail_after(GUARD):
        async with serve() as server:
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            await stream.send_all(modern_post(call("hang", 1, _meta=MODERN_META), "/mcp/probe"))
            await until(server.port, in_flight=1)
            await stream.aclose()
            await until(server.port, in_flight=0)


async def test_a_next_request_sent_while_a_call_waits_is_not_read_as_a_hangup():
    with trio.fail_after(GUARD):
        async with serve() as server:
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            await stream.send_all(modern_post(wait_for_turn(1, timeout_ms=1000)))
            await until(server.port, parked=1)
            # The next request arrives while the first one is parked: the watch sees bytes,
            # not an end, and leaves them for the connection to read once the first is done.
            await stream.send_all(modern_post(call("get_board", 2, _meta=MODERN_META)))
            first, second = await json_replies(stream, 2)
            assert first["id"] == 1
            assert "result" in first
            assert second["result"]["structuredContent"]["table"] == "default"
            await stream.aclose()


async def json_replies(stream: trio.SocketStream, count: int) -> list[dict[str, Any]]:
    """The JSON bodies of the next ``count`` responses (each with a Content-Length)."""
    data, bodies = b"", []
    while len(bodies) < count:
        head, sep, rest = data.partition(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n")
             if line.lower().startswith(b"content-length:")),
            None,
        )  # fmt: skip
        if sep and length is not None and len(rest) >= length:
            bodies.append(json.loads(rest[:length]))
            data = rest[length:]
            continue
        chunk = await stream.receive_some(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    return bodies


async def test_a_client_that_closes_right_after_its_answer_ends_its_connection_quietly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    # The window CI once hit: the answer is out, the client reads it and closes, and the
    # hang-up watch closes the socket before the request lets the watch go. Here the request
    # holds that window open (until the watch has fired) instead of hoping for the timing;
    # the keep-alive loop then must not wait on the closed socket (EBADF, a traceback).
    answer, close_now = HttpConnection._answer, HttpConnection._close_now
    closed = trio.Event()

    def closed_now(self: HttpConnection, hung_up: Any) -> None:
        close_now(self, hung_up)
        closed.set()

    async def answered_then_held(self: HttpConnection, head: Any) -> bool:
        keep = await answer(self, head)
        if self.watching is not None:
            with trio.move_on_after(GUARD / 2):
                await closed.wait()
            assert self.gone, "the client's close was never seen"
        return keep

    monkeypatch.setattr(HttpConnection, "_close_now", closed_now)
    monkeypatch.setattr(HttpConnection, "_answer", answered_then_held)
    caplog.set_level(logging.WARNING)
    with trio.fail_after(GUARD):
        async with serve() as server:
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            await stream.send_all(modern_post(call("get_board", 1, _meta=MODERN_META)))
            (reply,) = await json_replies(stream, 1)
            assert reply["result"]["structuredContent"]["table"] == "default"
            await stream.aclose()
            await until(server.port, in_flight=0, connections=1)  # (healthz's own)
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert noisy == [], [(r.name, r.getMessage(), r.exc_text) for r in noisy]
