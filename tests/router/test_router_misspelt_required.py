"""A required argument sent misspelt is refused naming the name that was sent, on every tool.

Reviewer finding: ``get_next_work`` with ``workflow_runid`` answered "argument
'workflow_run_id': is required" and nothing else: the unknown-argument warnings
(test_router_unknown_arguments) come from the tool's handler, which a call refused by its
inputSchema never reaches, so the agent was not told which of its arguments was the one meant.
The calls go over Streamable HTTP on loopback from the official MCP SDK's client.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from router_driver import CONTRACT, ctx

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.router.bounds import NEVER_HERE

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 30


def _body(result: Any) -> dict[str, Any]:
    assert result.is_error is True
    body: dict[str, Any] = result.structured_content
    assert body["code"] == "invalid-arguments"
    return body


def _required(body: dict[str, Any]) -> dict[str, str]:
    return {i["field"]: i["message"] for i in body["issues"] if i["rule"] == "required"}


async def test_every_tool_names_the_misspelt_argument_it_was_sent(tmp_path):
    # An adapter configured (never run: no call gets that far), so its tools check arguments.
    adapter = {"command": ["true"], "cases_dir": str(tmp_path)}
    config = Config(port=0, db=str(tmp_path / "router.db"), toolsets=["router"],
                    options={"router": {"adapter": adapter}})  # fmt: skip
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config) as server,
            mcp.Client(f"{server.url}/mcp/router", read_timeout_seconds=TIMEOUT) as client,
        ):
            answer = await client.call_tool(
                "get_next_work", {"context": ctx(), "workflow_runid": "run-1"}
            )
            assert _body(answer)["message"] == (
                "argument 'workflow_run_id': is required (you sent 'workflow_runid': did you"
                " mean 'workflow_run_id'?)"
            )
            for name, tool in CONTRACT.tools.items():
                # Each required argument sent with its last letter doubled ("taskk").
                wanted = [n for n in tool.input_schema["required"] if n != "context"]
                args = {"context": ctx(), **{n + n[-1]: None for n in wanted}}
                answer = await client.call_tool(name, args)
                if name in NEVER_HERE:  # no argument could make it run: it says that first
                    assert answer.structured_content["code"] == "capability-unavailable", name
                    continue
                body = _body(answer)
                words = _required(body)
                assert sorted(words) == sorted(wanted), name
                for n in wanted:  # after "send null if there is none; " when null is an answer
                    assert words[n].startswith("is required ("), (name, n)
                    assert words[n].endswith(f"you sent '{n}{n[-1]}': did you mean '{n}'?)"), (
                        name, words[n],
                    )  # fmt: skip
                assert f"argument '{wanted[0]}': is required (" in body["message"], name


async def test_a_misspelt_argument_a_closed_schema_refuses_is_told_what_was_meant(tmp_path):
    # The Memory tools allow no other fields: each misspelt name is also refused as "not an
    # allowed field", which named the allowed ones but not the one meant.
    config = Config(port=0, db=str(tmp_path / "router.db"), toolsets=["router"])
    closed = {
        name: tool
        for name, tool in CONTRACT.tools.items()
        if tool.input_schema.get("additionalProperties") is False
    }
    assert len(closed) >= 8, sorted(closed)
    told = 0
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config) as server,
            mcp.Client(f"{server.url}/mcp/router", read_timeout_seconds=TIMEOUT) as client,
        ):
            for name, tool in closed.items():
                wanted = [n for n in tool.input_schema["required"] if n != "context"]
                args = {"context": ctx(), **{n + n[-1]: None for n in wanted}}
                body = _body(await client.call_tool(name, args))
                for issue in body["issues"]:
                    if issue["rule"] != "additionalProperties":
                        continue
                    meant = issue["field"][:-1]
                    assert meant in wanted, (name, issue)
                    assert issue["message"].startswith(
                        f"is not an allowed field (did you mean '{meant}'? allowed: "
                    ), (name, issue)
                    told += 1
    assert told, "no closed-schema refusal named a field that is not allowed"
