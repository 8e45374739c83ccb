"""What the router endpoint lists and how it refuses bad arguments, through a real session."""

from __future__ import annotations

from router_driver import CONTRACT, ctx, event_args, plan_args
from router_names import MEMORY_TOOLS, SERVED

from agora.config import Config
from agora.server.embed import open_server


async def test_only_the_served_tools_are_listed_with_the_contract_schemas():
    config = Config(port=0, db=":memory:", toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        listed = (await client.request("tools/list", {}))["result"]["tools"]
        assert [t["name"] for t in listed] == [n for n in CONTRACT.tools if n in SERVED]
        for tool in listed:
            spec = CONTRACT.tools[tool["name"]]
            assert tool["inputSchema"] == spec.input_schema
            assert tool["outputSchema"] == spec.output_schema
        reply = await client.request(
            "tools/call", {"name": "preview_profile_update", "arguments": {}}
        )
        assert "error" in reply or reply["result"].get("isError")
        bad = await client.call_tool("get_next_work", {"workflow_run_id": ""})
    assert not set(MEMORY_TOOLS) & {t["name"] for t in listed}
    assert len(listed) == len(SERVED) == 16
    assert bad["isError"] is True
    body = bad["structuredContent"]
    assert body["code"] == "invalid-arguments"
    assert body["state_changed"] is False
    assert body["issues"][0]["field"] == "context"
    assert body["issues"][0]["rule"] == "required"


async def test_a_failed_commit_answers_text_with_a_correlation_id_and_no_invented_fields(tmp_path):
    # Two servers on one database file: the second holds a stale run in memory, and its
    # commit of version 2 is refused by the store. The router shapes no body for it (none
    # could satisfy the strict outputSchemas without inventing fields): the core answers a
    # text-only isError naming the correlation id of its log line.
    config = Config(port=0, db=str(tmp_path / "two.db"), toolsets=["router"])
    async with open_server(config, listen=False) as one, one.client("/mcp/router") as a:
        await a.initialize()
        plan = await a.call_tool("plan_work", plan_args("1. design\n2. build", idem="p"))
        run = plan["structuredContent"]["workflow_run_id"]
        async with open_server(config, listen=False) as two, two.client("/mcp/router") as b:
            await b.initialize()
            await b.call_tool("get_next_work", {"context": ctx(), "workflow_run_id": run})
            first = await a.call_tool("record_work_event", event_args(run, "plan", {"n": 1}, 1))
            late = await b.call_tool("record_work_event", event_args(run, "plan", {"n": 2}, 1))
    assert first["structuredContent"]["resulting_state_version"] == 2
    assert late["isError"] is True
    assert "structuredContent" not in late
    assert "correlation id corr-" in late["content"][0]["text"]
