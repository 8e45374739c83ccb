"""Asking for tables and handles that do not exist leaves ``/healthz`` ``actors`` unchanged.

Each such lookup used to leave an actor (~7 KB) for ``actor_idle_seconds``: 1,500 page
requests for made-up tables took ``actors`` from 36 to 1,536, with no token needed. A real
loopback server with chess and the chamber; the chess page route over HTTP, the chess tools
and the chamber's ``observe_chamber`` over MCP sessions.
"""

from __future__ import annotations

import secrets

import trio
from http_support import RawHttp, serve

LOOKUPS = 40
NO_POOL = {"chamber": {"room_pool_size": 0}}


async def actors(port: int) -> int:
    """The live actors, as ``/healthz`` counts them (from a new connection)."""
    async with RawHttp.open(port) as client:
        reply = await client.request("GET", "/healthz")
        assert reply.status == 200, reply
        count: int = reply.json()["actors"]
        return count


async def test_missing_chess_tables_and_chamber_handles_leave_no_actor():
    async with serve(toolsets=["chess", "chamber"], options=NO_POOL) as server:
        with trio.fail_after(60):
            before = await actors(server.port)
            async with RawHttp.open(server.port) as page:
                for _ in range(LOOKUPS):
                    for route in ("state", "pgn", "events"):
                        path = f"/play/nx-{secrets.token_hex(4)}/{route}"
                        assert (await page.request("GET", path)).status == 404
                    path = f"/play/nx-{secrets.token_hex(4)}/resign"
                    body = {"token": "t"}
                    assert (await page.request("POST", path, body)).status == 404
            assert await actors(server.port) == before

            for _ in range(LOOKUPS // 4):
                table = f"/mcp/chess/nx-{secrets.token_hex(4)}"
                async with server.client(table) as client:
                    await client.initialize()
                    for tool in ("get_board", "join_game", "wait_for_turn"):
                        result = await client.call_tool(tool, {})
                        assert result["structuredContent"]["code"] == "TABLE_NOT_FOUND", result
            assert await actors(server.port) == before

            async with server.client("/mcp/chamber") as client:
                await client.initialize()
                for _ in range(LOOKUPS):
                    handle = f"chl-{secrets.token_hex(8)}"
                    args = {"challenge_handle": handle, "object": "door"}
                    result = await client.call_tool("observe_chamber", args)
                    assert result["structuredContent"]["code"] == "attempt_not_found", result
            assert await actors(server.port) == before
