"""Runs belong to their principal: a session id named by another principal reaches none of them.

`context.session_id` is the client's correlation string; two principals choosing the same one
(by chance or on purpose) must not share runs, replays or idempotency receipts.
"""

from __future__ import annotations

import trio
from router_driver import plan_args

from agora.config import Config
from agora.identity import Principal
from agora.server.embed import open_server

ALICE = Principal("alice")
BOB = Principal("bob")


async def _call(server, principal, tool, args):
    async with server.client("/mcp/router", principal=principal) as client:
        await client.initialize()
        return await client.call_tool(tool, args)


async def test_another_principal_with_the_same_session_and_key_gets_its_own_run(tmp_path):
    args = plan_args("1. write the parser\n2. test it", session="shared-name", idem="plan-1")
    with trio.fail_after(60):
        async with open_server(Config(db=str(tmp_path / "r.db")), listen=False) as server:
            alice = await _call(server, ALICE, "plan_work", args)
            bob = await _call(server, BOB, "plan_work", args)
            again = await _call(server, ALICE, "plan_work", args)
    assert not alice.get("isError"), alice
    assert not bob.get("isError"), bob
    mine, theirs = alice["structuredContent"], bob["structuredContent"]
    assert theirs["workflow_run_id"] != mine["workflow_run_id"]
    assert theirs.get("replayed") is not True
    assert again["structuredContent"]["workflow_run_id"] == mine["workflow_run_id"]


async def test_a_caller_without_a_token_cannot_name_a_principals_scoped_session(tmp_path):
    # A named principal's session id is stored as name + "\x1f" + id: a caller without a token
    # sending "alice\x1fwork" would otherwise reach alice's run, and plant runs in her name.
    args = plan_args("1. write the parser\n2. test it", session="work", idem="plan-a")
    with trio.fail_after(60):
        async with open_server(Config(db=str(tmp_path / "r.db")), listen=False) as server:
            mine = (await _call(server, ALICE, "plan_work", args))["structuredContent"]
            run = mine["workflow_run_id"]
            forged = {"session_id": "alice\x1fwork", "actor": "x",
                      "runtime_policy_snapshot_id": "p"}  # fmt: skip
            read = await _call(server, None, "get_next_work",
                               {"context": forged, "workflow_run_id": run})  # fmt: skip
            planted = await _call(
                server, None, "plan_work",
                plan_args("plant", session="alice\x1fplanted", idem="plan-p"),
            )  # fmt: skip
            count = "SELECT COUNT(*) FROM router_runs"
            runs = (await server.runtime.read(lambda c: c.execute(count).fetchone()))[0]
    for answer in (read, planted):
        assert answer["isError"], answer
        body = answer["structuredContent"]
        assert body["code"] == "invalid-arguments"
        assert body["issues"][0]["field"] == "context.session_id"
        assert body["issues"][0]["rule"] == "pattern"
        assert "work-available" not in str(answer)
    assert runs == 1
