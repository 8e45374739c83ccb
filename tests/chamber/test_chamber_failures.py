"""Server faults reach a chamber agent as the chamber's envelope, valid against the contract."""

from __future__ import annotations

import re

import trio
from chamber_agent import ENTRY, START, VALIDATORS

from agora.config import Config
from agora.errors import StoreError
from agora.runtime.clock import Clock, FakeWall
from agora.server.embed import open_server
from agora.toolsets.chamber import toolset

#: No room pool: these servers need no rooms built ahead (and tests stay cheap).
NO_POOL = {"chamber": {"room_pool_size": 0}}


async def test_a_failed_load_and_a_failed_commit_answer_in_the_chamber_envelope(monkeypatch):
    config = Config(db=":memory:", toolsets=["chamber"], options=NO_POOL)
    with trio.fail_after(30):
        async with (
            open_server(
                config, clock=Clock(FakeWall(START)), toolsets=[toolset()], listen=False
            ) as server,
            server.client("/mcp/chamber") as client,
        ):
            await client.initialize()
            entered = await client.call_tool("enter_open_challenge", {**ENTRY, "seed": "f"})
            handle = entered["structuredContent"]["attempt_handle"]
            store = server.runtime.store

            async def no_commit(writes, *rest):
                raise StoreError("disk full")

            monkeypatch.setattr(store, "write", no_commit)
            look = {"challenge_handle": handle, "op": "look"}
            unsaved = await client.call_tool("chamber_action", look)

            async def no_read(fn):
                raise OSError("I/O error reading the database")

            monkeypatch.setattr(store, "read", no_read)
            other = {"challenge_handle": "chl-00000000000000ff", "op": "look"}
            unloaded = await client.call_tool("chamber_action", other)
            monkeypatch.undo()
            again = await client.call_tool("chamber_action", look)
    for result in (unsaved, unloaded):
        body = result["structuredContent"]
        assert result["isError"] is True
        VALIDATORS["chamber_action"].validate(body)
        assert (body["ok"], body["code"], body["retryable"]) == (False, "internal_error", True)
        assert re.fullmatch(r"corr-[0-9a-f]{16}", body["correlation_id"])
        assert "OSError" not in body["error"]
    assert "could not be saved" in unsaved["structuredContent"]["error"]
    # Nothing was saved by the failed call: the same look is action 1 again.
    assert again["structuredContent"]["action_index"] == 1
