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
        reply = await client.request("tools/call", {"name": "no_such_tool", "arguments": {}})
        assert "error" in reply or reply["result"].get("isError")
        bad = await client.call_tool("get_next_work", {"workflow_run_id": ""})
    assert not set(MEMORY_TOOLS) & {t["name"] for t in listed}
    assert len(listed) == len(SERVED) == 20
    assert bad["isError"] is True
    body = bad["structuredContent"]
    assert body["code"] == "invalid-arguments"
    assert body["state_changed"] is False
    assert body["issues"][0]["field"] == "context"
    assert body["issues"][0]["rule"] == "required"


async def test_a_failed_commit_answers_text_with_a_correlation_id_and_no_invented_fields(tmp_path):
    # A trigger makes the store refuse the event's commit. The router shapes no body for such
    # a failure (none could satisfy its strict outputSchemas without inventing fields): the
    # core answers a text-only isError naming the correlation id of its log line.
    config = Config(port=0, db=str(tmp_path / "fail.db"), toolsets=["router"])
    trigger = (
        "CREATE TRIGGER refuse_events BEFORE INSERT ON router_events"
        " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        plan = await client.call_tool("plan_work", plan_args("1. design\n2. build", idem="p"))
        run = plan["structuredContent"]["workflow_run_id"]
        await srv.runtime.write([(trigger, ())])
        late = await client.call_tool("record_work_event", event_args(run, "plan", {"n": 2}, 1))
        after = await client.call_tool("get_next_work", {"context": ctx(), "workflow_run_id": run})
    assert late["isError"] is True
    assert "structuredContent" not in late
    assert "correlation id corr-" in late["content"][0]["text"]
    assert after["structuredContent"]["work_item"]["status"] == "ready"  # nothing was saved
