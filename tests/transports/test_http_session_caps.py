"""Streamable HTTP session caps over real sockets: who is refused, who is evicted.

A principal at ``max_sessions_per_principal`` (with no principals configured, every client is
"anonymous": one principal) has its least recently used idle session evicted for a new one,
so one client that opens sessions and never deletes them cannot lock the others out: the
evicted session answers 404, and a client then starts a new one. Only a principal whose
sessions are all busy (a call in flight, an open stream) is refused, 503. A full server
(``max_sessions``) lets a principal replace its own idle session, never another's.
"""

from __future__ import annotations

import gc
import logging
from typing import Any

import pytest
import trio
import trio.testing
from http_support import (
    INITIALIZE,
    TOKEN,
    TOKEN_SHA256,
    RawHttp,
    assert_one_episode,
    call,
    open_session,
    post_into,
    serve,
)

from agora.config import PrincipalConfig
from agora.transports.http_session import HttpSession

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 300  # mock seconds
PING = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
BEARER = {"authorization": f"Bearer {TOKEN}"}
OPS = [PrincipalConfig("ops", TOKEN_SHA256)]


def unknown(record: logging.LogRecord) -> bool:
    """A line of the requests naming a session no longer held (`test_unknown_sessions`)."""
    return "unknown Mcp-Session-Id" in record.getMessage()


async def initialize(client: RawHttp, **headers: str) -> dict[str, str]:
    """An ``initialize`` answered 200; the headers that address its session."""
    reply = await client.request("POST", "/mcp/probe", INITIALIZE, headers)
    assert reply.status == 200, reply
    return {"mcp-session-id": reply.headers["mcp-session-id"], **headers}


async def open_get_stream(port: int, session: dict[str, str]) -> trio.SocketStream:
    """A GET stream of ``session`` on a connection of its own, its head read (200)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    fields = "".join(f"{k}: {v}\r\n" for k, v in session.items())
    get = f"GET /mcp/probe HTTP/1.1\r\nHost: 127.0.0.1\r\n{fields}Accept: text/event-stream\r\n\r\n"
    await stream.send_all(get.encode())
    assert (await stream.receive_some(65536)).startswith(b"HTTP/1.1 200 ")
    return stream


async def test_one_client_opening_sessions_does_not_lock_out_the_official_sdk():
    """The reviewer's flood, scaled down: one connection initializes past the cap; the
    newcomer (the official SDK, handshake mode) still gets a session."""
    with trio.fail_after(60):
        async with serve(max_sessions_per_principal=5) as server:
            async with RawHttp.open(server.port) as flood:
                first = await initialize(flood)
                for _ in range(11):
                    await initialize(flood)  # each past the cap evicts the oldest idle one
                evicted = await flood.request("POST", "/mcp/probe", PING, first)
                assert evicted.status == 404, evicted  # the MCP signal to start a new session
            async with mcp.Client(f"{server.url}/mcp/probe", mode="legacy") as client:
                assert client.protocol_version != "2026-07-28"
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert "echo" in names
                result = await client.call_tool("echo", {})
                assert result.structured_content == {"echo": {}}


async def test_an_evicted_session_is_freed_at_once_not_left_to_the_cyclic_collector():
    """`agora serve` freezes the heap unscanned (`agora.server.heap`): an evicted session
    left in a reference cycle would stay until the thaw, so a flood would grow the heap."""
    gc.collect()
    gc.disable()
    try:
        with trio.fail_after(60):
            async with serve(max_sessions_per_principal=3) as server:
                async with RawHttp.open(server.port) as flood:
                    for _ in range(40):
                        await initialize(flood)
                alive = [o for o in gc.get_objects() if isinstance(o, HttpSession)]
                assert len(alive) == 3, len(alive)
    finally:
        gc.enable()


async def test_the_least_recently_used_idle_session_is_the_one_evicted(clock, caplog):
    caplog.set_level(logging.INFO, logger="agora.transports.streamable")
    async with serve(max_sessions_per_principal=2) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                older = await initialize(client)
                newer = await initialize(client)
                await trio.sleep(1)
                assert (await client.request("POST", "/mcp/probe", PING, older)).status == 200
                await initialize(client)  # evicts ``newer``: ``older`` was used since
                await initialize(client)  # evicts ``older``
                assert (await client.request("POST", "/mcp/probe", PING, newer)).status == 404
                assert (await client.request("POST", "/mcp/probe", PING, older)).status == 404
    said = [(r.levelname, r.getMessage()) for r in caplog.records if not unknown(r)]
    assert said == [
        (
            "WARNING",
            "sessions of anonymous at max_sessions_per_principal (2): each new one evicts its"
            " least recently used idle one (said once until one is let in without)",
        )
    ], said


async def test_a_session_with_a_call_or_a_stream_is_never_evicted(clock):
    async with serve(max_sessions_per_principal=2) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                calling = await open_session(client)
                streaming = await open_session(client)
            answer: dict[str, Any] = {}
            async with trio.open_nursery() as nursery:
                nursery.start_soon(post_into, answer, server.port, call("hang", 5), calling)
                stream = await open_get_stream(server.port, streaming)
                async with stream, RawHttp.open(server.port) as client:
                    await trio.sleep(1)
                    third = await client.request("POST", "/mcp/probe", INITIALIZE)
                    assert third.status == 503, third
                    assert "too many sessions for anonymous" in third.json()["error"]["message"]
                    assert third.headers["retry-after"]
                    for session in (calling, streaming):
                        ping = await client.request("POST", "/mcp/probe", PING, session)
                        assert ping.status == 200, ping
                    nursery.cancel_scope.cancel()


async def test_a_full_server_lets_a_principal_replace_only_its_own_idle_session(clock, caplog):
    caplog.set_level(logging.INFO, logger="agora.transports.streamable")
    async with serve(max_sessions=2, max_sessions_per_principal=2, principals=OPS) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                anonymous = await initialize(client)
                ops = await initialize(client, **BEARER)
                # Full: ops replaces its own idle session, anonymous's stays.
                again = await initialize(client, **BEARER)
                assert (await client.request("POST", "/mcp/probe", PING, ops)).status == 404
                assert (await client.request("POST", "/mcp/probe", PING, again)).status == 200
                assert (await client.request("POST", "/mcp/probe", PING, anonymous)).status == 200
                # Anonymous too replaces its own (its only one), never ops's.
                async with RawHttp.open(server.port) as other:
                    await initialize(other)
                assert (await client.request("POST", "/mcp/probe", PING, anonymous)).status == 404
                assert (await client.request("POST", "/mcp/probe", PING, again)).status == 200
                assert (await client.request("DELETE", "/mcp/probe", None, again)).status == 200
                await initialize(client)  # a free place: no eviction
    said = [r.getMessage() for r in caplog.records if not unknown(r)]
    assert said[0].startswith("sessions of ops at max_sessions (2): "), said
    assert said[1].startswith("sessions of anonymous at max_sessions (2): "), said
    assert said[2].startswith("sessions of anonymous let in again without evicting: 1 evicted"), (
        said
    )
    assert len(said) == 3, said


async def test_sessions_are_refused_only_when_every_one_is_busy(clock):
    async with serve(max_sessions=3, max_sessions_per_principal=2, principals=OPS) as s:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(s.port) as client:
                held = [await open_session(client) for _ in range(2)]
                held.append(await open_session(client, **BEARER))
            streams = [await open_get_stream(s.port, session) for session in held]
            async with RawHttp.open(s.port) as client:
                mine = await client.request("POST", "/mcp/probe", INITIALIZE)
                assert mine.status == 503, mine
                assert "too many sessions for anonymous" in mine.json()["error"]["message"]
                full = await client.request("POST", "/mcp/probe", INITIALIZE, BEARER)
                assert full.status == 503, full
                assert "server full" in full.json()["error"]["message"]
                assert full.headers["retry-after"]
            for stream in streams:
                await stream.aclose()


async def test_sessions_refused_at_max_sessions_are_said_once_per_episode(clock, caplog):
    caplog.set_level(logging.INFO, logger="agora.transports.streamable")
    async with serve(session_idle_seconds=60.0, max_sessions=1, principals=OPS) as server:
        with trio.fail_after(TIMEOUT):
            async with RawHttp.open(server.port) as client:
                await open_session(client, **BEARER)  # ops holds the only place
                for _ in range(3):
                    refused = await client.request("POST", "/mcp/probe", INITIALIZE)
                    assert refused.status == 503, refused
            await trio.sleep(70)  # the session expires: its place is free
            async with RawHttp.open(server.port) as client:
                await open_session(client)
    assert_one_episode(caplog.records, "sessions", 1, 3)


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Jump the clock when every task has been blocked 50 ms (real sockets need a moment)."""
    return trio.testing.MockClock(autojump_threshold=0.05)
