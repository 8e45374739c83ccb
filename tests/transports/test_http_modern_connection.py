"""At 2026-07-28 over HTTP, ``call.connection`` is the TCP connection's, not the request's.

The 2026-07-28 revision has no session: each POST carries its own envelope. A toolset's
per-connection state (the chamber's ``connection_enter_per_minute``) still needs a key that
lives longer than one request, or it never binds. The official SDK's client keeps one
keep-alive TCP connection, and its calls share one ``call.connection`` on it.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from http_support import RawHttp, serve

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

ENTRY = {
    "provider_claim": "acme-labs",
    "model_claim": "acme large 2",
    "product": "gpt-5.6-sol",
    "host": "cursor",
}
LIMITED = {"chamber": {"connection_enter_per_minute": 2, "room_pool_size": 0}}


async def connections(port: int) -> int:
    """Open TCP connections, the one asking included (``/healthz``)."""
    async with RawHttp.open(port) as client:
        reply = await client.request("GET", "/healthz")
    count: int = reply.json()["connections"]
    return count


def outcome(result: Any) -> str:
    body = result.structured_content
    return "entered" if body.get("ok") else body["code"]


async def test_the_calls_of_one_tcp_connection_share_the_connection_limit():
    with trio.fail_after(30):
        async with (
            serve(toolsets=["chamber"], options=LIMITED) as server,
            mcp.Client(f"{server.url}/mcp/chamber", read_timeout_seconds=20) as client,
        ):
            assert client.protocol_version == "2026-07-28"
            seen = []
            for _ in range(5):
                seen.append(outcome(await client.call_tool("enter_open_challenge", ENTRY)))
                # One TCP connection carries the client's calls (ours is the other one).
                assert await connections(server.port) == 2
            assert seen == ["entered"] * 2 + ["op_not_allowed"] * 3


async def test_a_new_tcp_connection_is_a_new_connection():
    with trio.fail_after(30):
        async with serve(toolsets=["chamber"], options=LIMITED) as server:
            for _ in range(2):
                async with mcp.Client(f"{server.url}/mcp/chamber") as client:
                    result = await client.call_tool("enter_open_challenge", ENTRY)
                    assert outcome(result) == "entered"
