"""A reply sent during a graceful shutdown reaches an agent whose client then asks more.

The official SDK's client, before it has listed the tools, sends ``tools/list`` right after a
tool result, to check the result against the tool's outputSchema. Shutdown answers a parked
``wait_for_turn`` (WAIT_TIMEOUT marked ``shuttingDown``); the connections then stay open
(``linger_seconds``, within ``grace_seconds``) for the requests that change nothing, refusing a
new call with JSON-RPC error -32011, and the server closes them as soon as every client has
closed, or once the linger is over, whatever a client does meanwhile.

Against ``agora serve`` stopped with SIGTERM (the SDK over Streamable HTTP in both of its
modes, over WebSocket, and over stdio through ``agora stdio --connect``), and against an
embedded server leaving its block (the SDK, and raw WebSocket peers for what the SDK does not
do: call during the drain, stay silent, never close).
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
import trio
from chess_server import agora_serve, terminate_when_in_flight
from e2e_mcp import INITIALIZE, INITIALIZED
from e2e_sdk import sdk_stdio, sdk_websocket
from e2e_websocket import RawWebSocket
from http_support import RawHttp

from agora.config import Config
from agora.mcp.jsonrpc import SHUTTING_DOWN
from agora.server.embed import open_server
from agora.toolsets.chess import ensure_table

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agora.server.embed import Server

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

#: A wait that only shutdown cuts short.
PARKED = {"wait_for_human": True, "timeout_ms": 30_000}
#: Seconds a test may take at most (servers start, stop and linger within it).
TIMEOUT = 45


def _sdk_client(transport: str, http_url: str, log: Any) -> Any:
    """The official SDK's client on ``http_url`` (an MCP endpoint) over ``transport``; it
    has not listed the tools."""
    ws_url = http_url.replace("http://", "ws://")
    if transport == "http":  # the SDK's default: 2026-07-28 if the server speaks it
        return mcp.Client(http_url, read_timeout_seconds=30)
    if transport == "http-handshake":  # an Mcp-Session-Id session
        return mcp.Client(http_url, mode="legacy", read_timeout_seconds=30)
    if transport == "websocket":
        return mcp.Client(sdk_websocket(ws_url), read_timeout_seconds=30)
    assert transport == "stdio"
    return sdk_stdio(["stdio", "--connect", ws_url], log)


def _assert_cut_short_by_shutdown(result: Any) -> None:
    assert not result.is_error, result
    body = result.structured_content
    assert body["statusCode"] == "WAIT_TIMEOUT", body
    assert body["shuttingDown"] is True, body


@pytest.mark.parametrize("transport", ["http", "http-handshake", "websocket", "stdio"])
async def test_sigterm_answers_the_first_call_of_a_client_that_then_lists_tools(
    tmp_path, transport
):
    with trio.fail_after(TIMEOUT), (tmp_path / "stdio.log").open("w") as log:
        async with (
            agora_serve(tmp_path / "agora.db") as server,
            _sdk_client(transport, server.mcp_url(), log) as client,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(terminate_when_in_flight, server, 1)
            # The SDK lists the tools once it has this result, to validate it.
            result = await client.call_tool("wait_for_turn", PARKED)
    _assert_cut_short_by_shutdown(result)


class Embedded:
    """A chess server embedded in a task of its own (`_embedded`)."""

    def __init__(self, server: Server, path: str, stop: trio.Event, left: trio.Event) -> None:
        self.server = server
        #: The seated agent's endpoint.
        self.path = path
        #: Set it to make the server leave its block (a graceful shutdown).
        self.stop = stop
        #: Set once the server has left its block, at `left_at`.
        self.left = left
        self.left_at = 0.0


@asynccontextmanager
async def _embedded(**settings: Any) -> AsyncIterator[Embedded]:
    config = Config(port=0, db=":memory:", toolsets=["chess"], **settings)
    stop, left = trio.Event(), trio.Event()

    async def run(*, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with open_server(config) as server:
            tokens = await ensure_table(server.runtime)
            embedded = Embedded(server, f"/mcp/chess/default?token={tokens.agent}", stop, left)
            task_status.started(embedded)
            await stop.wait()
        embedded.left_at = trio.current_time()
        left.set()

    async with trio.open_nursery() as nursery:
        yield await nursery.start(run)


async def _until_parked(server: Server) -> None:
    while server.runtime.registry.parked() == 0:  # noqa: ASYNC110 (a count, nothing to await)
        await trio.sleep(0.01)


@pytest.mark.parametrize("transport", ["http", "websocket"])
async def test_an_embedded_server_closing_answers_the_first_call_of_an_sdk_client(
    tmp_path, transport
):
    with trio.fail_after(TIMEOUT):
        async with (
            _embedded() as embedded,
            _sdk_client(transport, embedded.server.url + embedded.path, None) as client,
            trio.open_nursery() as nursery,
        ):

            async def close_when_parked() -> None:
                await _until_parked(embedded.server)
                embedded.stop.set()

            nursery.start_soon(close_when_parked)
            result = await client.call_tool("wait_for_turn", PARKED)
    _assert_cut_short_by_shutdown(result)


def _request(rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}


@asynccontextmanager
async def _session(port: int, path: str, **options: Any) -> AsyncIterator[RawWebSocket]:
    async with RawWebSocket.open(port, path, **options) as ws:
        await ws.send_json(INITIALIZE)
        assert (await ws.recv_json())["id"] == 0
        await ws.send_json(INITIALIZED)
        yield ws


async def _parked_and_answered(ws: RawWebSocket, embedded: Embedded) -> None:
    """Park a wait on ``ws``, shut the server down, and read the wait's answer."""
    await ws.send_json(_request(1, "tools/call", {"name": "wait_for_turn", "arguments": PARKED}))
    await _until_parked(embedded.server)
    embedded.stop.set()
    reply = await ws.recv_json()
    assert reply["id"] == 1
    assert reply["result"]["structuredContent"]["shuttingDown"] is True, reply


async def test_while_draining_what_changes_nothing_is_answered_and_calls_are_refused():
    with trio.fail_after(TIMEOUT):
        # A linger far longer than the test: only the clients' closing can end it.
        async with _embedded(linger_seconds=60, grace_seconds=90) as embedded:
            port, path = embedded.server.port, embedded.path
            async with _session(port, path) as waiter, _session(port, path) as idle:
                await _parked_and_answered(waiter, embedded)
                call = {"name": "get_board", "arguments": {}}
                await idle.send_json(_request(2, "tools/call", call))
                refused = await idle.recv_json()
                assert refused["error"]["code"] == SHUTTING_DOWN == -32011, refused
                assert refused["error"]["data"] == {"retryable": True}
                assert "shutting down" in refused["error"]["message"]
                # The client or relay reconnects by itself: the model only waits and calls.
                assert "wait a few seconds and call again" in refused["error"]["message"]
                assert "reconnect once" not in refused["error"]["message"]
                await waiter.send_json(_request(3, "tools/list"))
                listed = await waiter.recv_json()
                assert "wait_for_turn" in {t["name"] for t in listed["result"]["tools"]}
                await idle.send_json(_request(4, "ping"))
                assert await idle.recv_json() == {"jsonrpc": "2.0", "id": 4, "result": {}}
                assert not embedded.left.is_set()  # still draining: both clients are here
                closed_at = trio.current_time()
        # Both clients closed: the server did not wait for the rest of its linger.
        assert embedded.left_at - closed_at < 10


async def test_clients_that_never_close_hold_shutdown_no_longer_than_the_linger():
    linger = 2.0
    with trio.fail_after(TIMEOUT):
        async with _embedded(linger_seconds=linger, grace_seconds=60) as embedded:
            port, path = embedded.server.port, embedded.path
            async with (
                _session(port, path) as waiter,
                _session(port, path) as chatty,
                # Never read (its receive buffer is small) and never closed.
                _session(port, path, receive_buffer=4096),
            ):
                await _parked_and_answered(waiter, embedded)
                answered_at = trio.current_time()
                # One client asks and asks, another neither reads nor closes: neither keeps
                # the server beyond its linger (and the bounded close handshakes).
                rid = 10
                while True:
                    rid += 1
                    await chatty.send_json(_request(rid, "ping"))
                    frame = await chatty.recv_frame()
                    while frame is not None and frame[0] == 0x9:  # a WebSocket ping
                        frame = await chatty.recv_frame()
                    if frame is None or frame[0] != 0x1:
                        break  # the server closed the connection
                await embedded.left.wait()
        assert linger <= embedded.left_at - answered_at < linger + 8


async def test_while_draining_a_new_session_is_refused_as_retryable():
    with trio.fail_after(TIMEOUT):
        async with _embedded(linger_seconds=60, grace_seconds=90) as embedded:
            port, path = embedded.server.port, embedded.path
            # A connection opened before shutdown began and kept alive, as a client's pool does.
            async with RawHttp.open(port) as http:
                opened = await http.request("POST", path, INITIALIZE)
                assert opened.status == 200, opened.body
                session = {"mcp-session-id": opened.headers["mcp-session-id"]}
                async with _session(port, path) as waiter:
                    await _parked_and_answered(waiter, embedded)
                    refused = await http.request("POST", path, INITIALIZE)
                    assert refused.status == 200, refused.body
                    assert "mcp-session-id" not in refused.headers
                    error = refused.json()["error"]
                    assert error["code"] == SHUTTING_DOWN, error
                    assert error["data"] == {"retryable": True}
                    assert "shutting down" in error["message"]
                    assert "no new session" in error["message"]
                    # The session opened before shutdown is still answered meanwhile.
                    ping = await http.request("POST", path, _request(5, "ping"), session)
                    assert ping.json() == {"jsonrpc": "2.0", "id": 5, "result": {}}, ping.body
