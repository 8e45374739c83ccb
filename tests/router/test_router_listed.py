"""What a model in any MCP host reads in tools/list: how to fill what only Codex supplies,
and which tools cannot run on this server as configured.

Tester finding (the router driven over Streamable HTTP as Cursor drives it): what Cursor's
model reads is tools/list, and there every planning tool's ``context`` was "supplied by the
Codex host", its ``actor`` a "Verified user or host actor"; nothing said to fill the context
in itself, to send ``expected_state_version`` 0 for a new run, where
``expected_evidence_digest`` comes from, nor the order of the calls after ``plan_work``.
And 13 of the 20 tools listed could never succeed on a default server, which their
descriptions did not say.

The tools are listed by the official MCP SDK's client over Streamable HTTP on loopback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import trio
from router_driver import CONTRACT

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.router.availability import MEMORY_OFF, NEVER, NO_ADAPTER
from agora.toolsets.router.bounds import ADAPTER_TOOLS, NEVER_HERE
from agora.toolsets.router.described import AFTER, LOOP, MEMORY

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
        assert "Choose one per task" in _said(tool, "context.session_id")
        assert "for correlation only" in _said(tool, "context.actor")
        assert "e.g. local" in _said(tool, "context.runtime_policy_snapshot_id")


async def test_the_versions_and_the_digest_say_where_they_come_from(tmp_path):
    tools = await listed(tmp_path)
    plan = tools["plan_work"]
    assert plan.description.endswith(LOOP)
    assert "get_next_work -> record_work_event" in plan.description
    assert "-> evaluate_gate" in plan.description
    assert "0: every plan is made at 0" in _said(plan, "expected_state_version")
    # Tester 6 finding: goal_binding_id, required, was the one planning argument with no word
    # for a host other than Codex; a task name sent there made a run that never progresses.
    goal = _said(plan, "goal_binding_id")
    assert goal.startswith(_contract("plan_work", "goal_binding_id") + " Send null")
    assert "cannot be progressed on this server" in goal
    status = _said(tools["get_router_status"], "goal_binding_id")
    assert "null for no Goal filter (every run of the session, or the run named)" in status
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


#: The first words of the description of a tool that cannot run as configured.
UNAVAILABLE = ("Unavailable on agora:", "Unavailable on this server:", "Memory is off")


async def test_a_tool_that_cannot_run_with_no_options_says_so_first(tmp_path):
    # Tester finding: 13 of the 20 tools can never succeed on a default server, and their
    # descriptions did not say so (validate_route: "requires verified-host snapshots").
    tools = await listed(tmp_path)
    assert len(tools) == 20  # all are listed still
    cannot = {name for name, tool in tools.items() if tool.description.startswith(UNAVAILABLE)}
    assert cannot == {*NEVER_HERE, *ADAPTER_TOOLS, *MEMORY}
    assert len(cannot) == 13
    for name in NEVER_HERE:
        assert tools[name].description == f"{NEVER} {CONTRACT.tools[name].description}"
    for name in ADAPTER_TOOLS:
        assert tools[name].description == f"{NO_ADAPTER} {CONTRACT.tools[name].description}"
        assert "[options.router.adapter]" in tools[name].description
    for name in MEMORY:
        assert tools[name].description == f"{MEMORY_OFF} {_contract_said(name)}"
        assert "[options.router] memory_policy" in tools[name].description


async def test_with_an_adapter_and_a_memory_policy_only_the_verified_host_tools_say_so(tmp_path):
    options = {
        "adapter": {"command": [sys.executable, "adapter.py"], "cases_dir": str(tmp_path)},
        "memory_policy": str(tmp_path / "memory-policy.json"),  # written later: still set
    }
    tools = await listed(tmp_path, options)
    assert len(tools) == 20
    cannot = {name for name, tool in tools.items() if tool.description.startswith(UNAVAILABLE)}
    assert cannot == set(NEVER_HERE)
    for name in ADAPTER_TOOLS:
        assert tools[name].description == CONTRACT.tools[name].description
    for name in MEMORY:
        assert tools[name].description == _contract_said(name)


def _contract_said(name: str) -> str:
    """The contract's description of ``name``, and what `AFTER` adds to it."""
    after = f" {AFTER[name]}" if name in AFTER else ""
    return f"{CONTRACT.tools[name].description}{after}"


def test_the_docs_quote_what_the_descriptions_say_first():
    root = Path(__file__).parents[2]
    doc = " ".join((root / "docs" / "router.md").read_text().split())
    for said in (NEVER, NO_ADAPTER, MEMORY_OFF):
        assert f"`{said}`" in doc
    assert LOOP in doc
    readme = " ".join((root / "README.md").read_text().split())
    for said in (NEVER, NO_ADAPTER, MEMORY_OFF):
        assert f"`{said[:29]}" in readme, said  # its first words
