"""Whose MCP roots open a workspace Profile: a stdio client's, not a network client's.

A client over stdio started the server as its own user, so the roots it lists are the
server's files. A WebSocket or HTTP client may be anyone who reaches the port: the roots it
lists (``file:///`` included) must not authorize reading the server's files, nor tell it what
exists there, unless the operator sets ``[options.router] client_roots = "any"``. Each case
is the official SDK client answering ``roots/list`` with ``file:///`` and planning against a
workspace outside every configured root.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import mcp_types
import pytest
import trio
from e2e_config import write_config
from e2e_process import AGORA, clean_env
from mcp.client.stdio import StdioServerParameters

import mcp

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 60

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close (the client library's housekeeping, as in test_e2e_sdk).
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "someone-elses"
    target = root / ".codex" / "workflow-skill-router.json"
    target.parent.mkdir(parents=True)
    rule = {
        "rule_id": "r1",
        "match": {},
        "phases": [{"phase_id": "p1", "primary_skill_id": "skill:secret",
                    "support_skill_ids": [], "exit_gate": {"gate_id": "g1", "check_ids": ["c1"]}}],
    }  # fmt: skip
    doc = {"format": "agora-router-profile/1", "profile_id": "secret-profile", "rules": [rule]}
    target.write_text(json.dumps(doc))
    return root


async def _everything(context: Any) -> mcp_types.ListRootsResult:
    return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri="file:///", name="all")])


def _plan_args(root: Path) -> dict[str, Any]:
    return {
        "context": {"session_id": "s1", "actor": "agent", "runtime_policy_snapshot_id": "p1"},
        "expected_state_version": 0,
        "idempotency_key": f"plan-{root.name}",
        "correlation_id": "corr-roots",
        "objective": "Fix the parser",
        "goal_binding_id": None,
        "requested_work_mode": None,
        "explicit_skill_ids": [],
        "explicit_semantics": None,
        "routing_context": {"workspace_root": str(root), "domains": [], "tags": [],
                            "current_phase_id": None},
    }  # fmt: skip


async def _plan(client: mcp.Client, root: Path) -> dict[str, Any]:
    result = await client.call_tool("plan_work", _plan_args(root))
    assert not result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


async def _over_http(server: Any, *roots: Path) -> list[dict[str, Any]]:
    """Plans against each of ``roots`` over Streamable HTTP, the client's roots file:///."""
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(
            f"{server.url}/mcp/router", list_roots_callback=_everything, mode="legacy",
            read_timeout_seconds=TIMEOUT,
        ) as client:  # fmt: skip
            return [await _plan(client, root) for root in roots]


async def test_a_network_clients_roots_open_nothing_on_the_server(start_agora, tmp_path):
    root = _workspace(tmp_path)
    server = start_agora("", "--toolsets", "router")
    plan, missing = await _over_http(server, root, tmp_path / "not-there")
    refused, why = plan["profile_warnings"]
    assert refused == "workspace-root-not-authorized"
    assert why.startswith("client-roots-unused: the client reaches the server over the network")
    assert "skill:secret" not in json.dumps(plan)
    assert plan["route_source"] != "workspace-profile"
    # Nothing said about what exists: a missing path answers as the existing one.
    assert missing["profile_warnings"] == plan["profile_warnings"]


async def test_the_operator_may_trust_network_clients_roots(start_agora, tmp_path):
    root = _workspace(tmp_path)
    server = start_agora('[options.router]\nclient_roots = "any"\n', "--toolsets", "router")
    (plan,) = await _over_http(server, root)
    assert plan["route_source"] == "workspace-profile"
    assert plan["routing_profile_ids"] == ["secret-profile"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_stdio_clients_roots_open_its_workspace(tmp_path, mode):
    """At either revision: by ``roots/list`` after the initialize handshake, and at
    2026-07-28 (the SDK's default) by an ``input_required`` answer whose ``roots/list`` the
    client answers in ``inputResponses`` when it calls again."""
    root = _workspace(tmp_path)
    config = write_config(tmp_path)
    params = StdioServerParameters(
        command=AGORA,
        args=["stdio", "--toolset", "router", "--db", str(tmp_path / "stdio.db"), "--config",
              str(config)],
        env=clean_env(),
    )  # fmt: skip
    with (tmp_path / "stderr.log").open("w") as log, trio.fail_after(TIMEOUT):
        from mcp.client.stdio import stdio_client

        async with mcp.Client(
            stdio_client(params, errlog=log), list_roots_callback=_everything, mode=mode,
            read_timeout_seconds=TIMEOUT,
        ) as client:  # fmt: skip
            plan = await _plan(client, root)
    assert plan["route_source"] == "workspace-profile"
    assert plan["routing_profile_ids"] == ["secret-profile"]
