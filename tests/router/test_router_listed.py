"""What a model in any MCP host reads in tools/list: how to fill what only Codex supplies.

Tester finding (the router driven over Streamable HTTP as Cursor drives it): what Cursor's
model reads is tools/list, and there every planning tool's ``context`` was "supplied by the
Codex host", its ``actor`` a "Verified user or host actor"; nothing said to fill the context
in itself, to send ``expected_state_version`` 0 for a new run, where
``expected_evidence_digest`` comes from, nor the order of the calls after ``plan_work``.

The tools are listed by the official MCP SDK's client over Streamable HTTP on loopback.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import trio
from router_driver import CONTRACT

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.router.described import LOOP, MEMORY

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 30
#: The tools that take a ``context`` the contract says the Codex host supplies.
PLANNING = [name for name in CONTRACT.tools if name not in MEMORY]
#: The members of ``context``.
CONTRACT_MEMBERS = ("session_id", "actor", "runtime_policy_snapshot_id")


async def listed(tmp_path, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The router's tools/list as the official SDK's client gets it, by name."""
    config = Config(port=0, db=str(tmp_path / "router.db"), toolsets=["router"],
                    options={"router": options or {}})  # fmt: skip
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config) as server,
            mcp.Client(f"{server.url}/mcp/router", read_timeout_seconds=TIMEOUT) as client,
        ):
            tools = (await client.list_tools()).tools
    return {tool.name: tool for tool in tools}


def _said(tool: Any, path: str) -> str:
    schema = tool.input_schema
    for name in path.split("."):
        schema = schema["properties"][name]
    text: str = schema["description"]
    return text


def _contract(name: str, path: str) -> str:
    schema: Any = CONTRACT.tools[name].input_schema
    for part in path.split("."):
        schema = schema["properties"][part]
    text: str = schema["description"]
    return text


async def test_a_planning_tools_context_says_any_agent_fills_it_in(tmp_path):
    tools = await listed(tmp_path)
    assert len(PLANNING) == 12
    for name in PLANNING:
        tool = tools[name]
        jsonschema.Draft7Validator.check_schema(tool.input_schema)
        for path in ("context", *(f"context.{m}" for m in CONTRACT_MEMBERS)):
            said = _said(tool, path)
            assert said.startswith(_contract(name, path)), (name, path)  # the contract's words
            assert len(said) > len(_contract(name, path)) + 40, (name, path)
        assert "fill it in yourself" in _said(tool, "context")
        assert "Choose it yourself" in _said(tool, "context.session_id")
        assert "for correlation only" in _said(tool, "context.actor")
        assert "e.g. local" in _said(tool, "context.runtime_policy_snapshot_id")


async def test_the_versions_and_the_digest_say_where_they_come_from(tmp_path):
    tools = await listed(tmp_path)
    plan = tools["plan_work"]
    assert plan.description.endswith(LOOP)
    assert "get_next_work -> record_work_event" in plan.description
    assert "-> evaluate_gate" in plan.description
    assert "0: every plan is made at 0" in _said(plan, "expected_state_version")
    gate = tools["evaluate_gate"]
    digest = _said(gate, "expected_evidence_digest")
    assert digest.startswith(_contract("evaluate_gate", "expected_evidence_digest"))
    assert "Never compute it" in digest
    assert "record_work_event" in digest
    assert "get_next_work" in digest
    assert "event_ids" in _said(gate, "evidence_refs")
    assert "expected_plan_revision N" in _said(gate, "expected_plan_revision")
    for name in ("record_work_event", "evaluate_gate", "propose_support_consent",
                 "transition_support_consent"):  # fmt: skip
        version = _said(tools[name], "expected_state_version")
        assert "Next write to this run: send expected_state_version N" in version, name
        assert "new key for each new write" in _said(tools[name], "idempotency_key"), name
