"""What the router endpoint lists and how it refuses bad arguments, through a real session."""

from __future__ import annotations

from router_driver import CONTRACT
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
        reply = await client.request("tools/call", {"name": "get_memory_status", "arguments": {}})
        assert "error" in reply or reply["result"].get("isError")
        bad = await client.call_tool("get_next_work", {"workflow_run_id": ""})
    assert not set(MEMORY_TOOLS) & {t["name"] for t in listed}
    assert len(listed) == len(SERVED) == 12
    assert bad["isError"] is True
    body = bad["structuredContent"]
    assert body["code"] == "invalid-arguments"
    assert body["state_changed"] is False
    assert body["issues"][0]["field"] == "context"
    assert body["issues"][0]["rule"] == "required"
