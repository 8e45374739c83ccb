"""At 2026-07-28 over HTTP, a notification POST (it names no session) is accepted: 202.

That revision has no session id, so the handshake revisions' "Mcp-Session-Id header is
required" (400) told a client to send what its revision does not have; the official SDK's
server accepts such a POST with 202, and so does agora. A ``notifications/cancelled`` cancels
nothing: the revision cancels by closing the connection, and honouring a cancel by request id
from another connection would let one client cancel another's call. A notification at an
unserved version, or with a header that contradicts its envelope, and a posted response get
that revision's error with 400.
"""

from __future__ import annotations

from typing import Any

import trio
from http_support import MODERN, MODERN_META, RawHttp, call, serve

TIMEOUT = 20


def modern_headers(method: str, version: str = MODERN) -> dict[str, str]:
    return {"mcp-protocol-version": version, "mcp-method": method}


def cancelled(rid: int, meta: dict[str, Any] = MODERN_META) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": rid, "_meta": meta},
    }


async def in_flight(port: int) -> int:
    async with RawHttp.open(port) as client:
        count: int = (await client.request("GET", "/healthz")).json()["in_flight"]
    return count


async def until_in_flight(port: int, count: int) -> None:
    """Poll ``/healthz`` until ``count`` calls are in flight (the caller bounds the wait)."""
    while True:
        if await in_flight(port) == count:
            return
        await trio.sleep(0.02)


async def test_a_notification_is_accepted_and_the_connection_serves_on():
    with trio.fail_after(TIMEOUT):
        async with serve() as server, RawHttp.open(server.port) as client:
            headers = modern_headers("notifications/cancelled")
            reply = await client.request("POST", "/mcp/chess", cancelled(7), headers)
            assert reply.status == 202, reply
            assert reply.body == b""
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": MODERN_META}}
            answer = await client.request("POST", "/mcp/chess", ping, modern_headers("ping"))
            assert answer.status == 200, answer
            assert answer.json()["id"] == 1
            assert "result" in answer.json()


async def test_a_cancel_from_another_connection_does_not_cancel_a_call():
    with trio.fail_after(TIMEOUT):
        async with serve() as server, trio.open_nursery() as nursery:
            hang = call("hang", 5)
            hang["params"]["_meta"] = MODERN_META
            headers = {**modern_headers("tools/call"), "mcp-name": "hang"}

            async def caller() -> None:
                async with RawHttp.open(server.port) as client:
                    await client.request("POST", "/mcp/probe", hang, headers)

            nursery.start_soon(caller)
            await until_in_flight(server.port, 1)
            async with RawHttp.open(server.port) as other:
                notice = modern_headers("notifications/cancelled")
                reply = await other.request("POST", "/mcp/probe", cancelled(5), notice)
                assert reply.status == 202, reply
            assert await in_flight(server.port) == 1
            nursery.cancel_scope.cancel()  # its client hangs up: that cancels it


async def test_a_notification_the_revision_cannot_take_gets_its_error_and_400():
    with trio.fail_after(TIMEOUT):
        async with serve() as server, RawHttp.open(server.port) as client:
            method = "notifications/cancelled"
            old = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
            reply = await client.request(
                "POST", "/mcp/chess", cancelled(7, old), modern_headers(method, "2099-01-01")
            )
            assert reply.status == 400, reply
            assert reply.json()["error"]["code"] == -32022
            assert reply.json()["error"]["data"]["supported"] == [MODERN]
            reply = await client.request(
                "POST", "/mcp/chess", cancelled(7), modern_headers(method, "2025-11-25")
            )
            assert reply.status == 400, reply
            assert reply.json()["error"]["code"] == -32020
            response = {"jsonrpc": "2.0", "id": 3, "result": {}}
            reply = await client.request("POST", "/mcp/chess", response, modern_headers(method))
            assert reply.status == 400, reply
            assert reply.json()["error"]["code"] == -32600


async def test_a_handshake_notification_without_a_session_id_is_still_refused():
    with trio.fail_after(TIMEOUT):
        async with serve() as server, RawHttp.open(server.port) as client:
            done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            reply = await client.request("POST", "/mcp/chess", done)
            assert reply.status == 400, reply
            assert "Mcp-Session-Id header is required" in reply.json()["error"]["message"]


async def test_a_sessionless_post_of_an_unknown_revision_is_told_the_revision_not_the_session():
    # Tester finding: it was told "Mcp-Session-Id header is required", which a client of a
    # revision without sessions cannot send; inside a session the same header was named.
    with trio.fail_after(TIMEOUT):
        async with serve() as server, RawHttp.open(server.port) as client:
            listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            headers = {"mcp-protocol-version": "2027-01-01"}
            reply = await client.request("POST", "/mcp/chess", listing, headers)
            assert reply.status == 400, reply
            message = reply.json()["error"]["message"]
            assert message.startswith("Bad Request: unsupported MCP-Protocol-Version 2027-01-01"), (
                message
            )
            assert MODERN in message
