"""The chamber behind the real MCP session layer: listing, calls, schema refusals."""

from __future__ import annotations

import trio
from chamber_agent import ENTRY, START, VALIDATORS

from agora.config import Config
from agora.runtime.clock import Clock, FakeWall
from agora.server.embed import open_server
from agora.toolsets.chamber import toolset

#: No room pool: these servers need no rooms built ahead (and tests stay cheap).
NO_POOL = {"chamber": {"room_pool_size": 0}}


async def test_the_chamber_over_an_in_process_mcp_session():
    config = Config(db=":memory:", toolsets=["chamber"], options=NO_POOL)
    with trio.fail_after(20):
        async with (
            open_server(
                config, clock=Clock(FakeWall(START)), toolsets=[toolset()], listen=False
            ) as server,
            server.client("/mcp/chamber") as client,
        ):
            await client.initialize()
            listed = await client.request("tools/list")
            names = [t["name"] for t in listed["result"]["tools"]]
            assert names == ["enter_open_challenge", "observe_chamber", "chamber_action",
                             "call_for_help", "seal_attempt"]  # fmt: skip

            entered = await client.call_tool("enter_open_challenge", {**ENTRY, "seed": "mcp"})
            assert not entered.get("isError")
            VALIDATORS["enter_open_challenge"].validate(entered["structuredContent"])
            handle = entered["structuredContent"]["attempt_handle"]

            looked = await client.call_tool("challenge_action", {"challenge_handle": handle,
                                                                 "op": "look"})  # fmt: skip
            assert looked["structuredContent"]["action_index"] == 1

            refused = await client.call_tool("chamber_action", {"challenge_handle": "sia_x",
                                                                "op": "look"})  # fmt: skip
            assert refused["isError"] is True
            assert refused["structuredContent"]["code"] == "attempt_not_found"
            VALIDATORS["chamber_action"].validate(refused["structuredContent"])

            no_host = {k: v for k, v in ENTRY.items() if k != "host"}
            refused = await client.call_tool("enter_open_challenge", no_host)
            assert refused["structuredContent"]["code"] == "host_required"

            stale = await client.call_tool(
                "chamber_action",
                {"challenge_handle": handle, "op": "look", "expected_action_index": 0},
            )
            assert stale["isError"] is True
            assert stale["structuredContent"]["current_action_index"] == 1

            sealed = await client.call_tool("seal_attempt", {"challenge_handle": handle})
            VALIDATORS["seal_attempt"].validate(sealed["structuredContent"])
            assert sealed["structuredContent"]["card_id"].startswith("card-20261130-")
