"""A handshake session's client that closes its connection before the answer.

The server reads the peer's close while the call is pending and closes its socket at once
(``/healthz`` ``connections``). A call still to be answered with plain JSON is cancelled then:
no stream, no event id, so no client could ever receive that answer (a long-poll leaves, not
at its own timeout). A call whose SSE stream has begun goes on, resumable by Last-Event-ID.
(The 2026-07-28 revision's hang-ups: `test_http_modern_hangup`.)
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from http_support import INITIALIZE, MCP_HEADERS, RawHttp, call, healthz, serve, until

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

#: Hang guard; the long-polls below wait up to 55 s, so leaving within it is no timeout.
GUARD = 20


async def handshake(port: int, version: str, path: str) -> dict[str, str]:
    """A session negotiated at ``version`` on ``path``: the headers that address it."""
    hello = INITIALIZE | {"params": INITIALIZE["params"] | {"protocolVersion": version}}
    async with RawHttp.open(port) as client:
        reply = await client.request("POST", path, hello)
        assert reply.json()["result"]["protocolVersion"] == version
        session = {"mcp-session-id": reply.headers["mcp-session-id"]}
        session["mcp-protocol-version"] = version
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await client.request("POST", path, done, session)).status == 202
    return session


def raw_post(body: Any, session: dict[str, str], path: str) -> bytes:
    """A session's POST of ``body`` as raw HTTP/1.1 bytes."""
    raw = json.dumps(body).encode()
    head = {"host": "127.0.0.1", **MCP_HEADERS, **session, "content-length": str(len(raw))}
    lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
    return f"POST {path} HTTP/1.1\r\n{lines}\r\n".encode() + raw


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_a_long_poll_whose_client_hangs_up_leaves_with_its_socket(version):
    with trio.fail_after(GUARD):
        async with serve() as server:
            session = await handshake(server.port, version, "/mcp/chess")
            wait = call("wait_for_turn", 1, arguments={"timeout_ms": 55000})
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            await stream.send_all(raw_post(wait, session, "/mcp/chess"))
            await until(server.port, in_flight=1, parked=1, connections=2)
            await stream.aclose()
            # Nothing is left of it: not the call, not the socket (only the probe's own).
            await until(server.port, in_flight=0, parked=0, connections=1)
            # The session goes on.
            async with RawHttp.open(server.port) as client:
                board = await client.request("POST", "/mcp/chess", call("get_board", 2), session)
            assert board.json()["result"]["structuredContent"]["table"] == "default"


async def test_a_batch_whose_json_array_is_pending_leaves_with_its_socket():
    """MCP 2025-03-26: a batch's calls run in the session, its POST waits for them all."""
    with trio.fail_after(GUARD):
        async with serve() as server:
            session = await handshake(server.port, "2025-03-26", "/mcp/chess")
            wait = call("wait_for_turn", 1, arguments={"timeout_ms": 55000})
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            await stream.send_all(raw_post([wait, ping], session, "/mcp/chess"))
            await until(server.port, in_flight=1, parked=1, connections=2)
            await stream.aclose()
            await until(server.port, in_flight=0, parked=0, connections=1)


async def test_a_call_that_streamed_outlives_its_connection_which_closes_at_once():
    with trio.fail_after(GUARD):
        async with serve() as server:
            session = await handshake(server.port, "2025-11-25", "/mcp/probe")
            stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            await stream.send_all(raw_post(call("ask", 1), session, "/mcp/probe"))
            seen = b""
            while b"probe/ask" not in seen:  # its stream began: the client holds event ids
                seen += await stream.receive_some(65536)
            await stream.aclose()
            await until(server.port, connections=1)
            assert (await healthz(server.port))["in_flight"] == 1  # it waits to be resumed
            asked = next(
                json.loads(line[6:]) for line in seen.decode().splitlines() if "probe/ask" in line
            )
            event_id = next(line[4:] for line in seen.decode().splitlines() if line[:4] == "id: ")
            async with RawHttp.open(server.port) as client:
                answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"said": "later"}}
                assert (await client.request("POST", "/mcp/probe", answer, session)).status == 202
                resume = session | {"accept": "text/event-stream", "last-event-id": event_id}
                resumed = await client.request("GET", "/mcp/probe", None, resume)
            assert resumed.json()["result"]["structuredContent"] == {"told": {"said": "later"}}
