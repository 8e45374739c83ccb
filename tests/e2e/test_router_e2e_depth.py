"""Arguments nested past the router's limit get the router's refusal, not the transport's.

A reviewer, through the official MCP SDK, sent record_work_event arguments 33 levels deep
and got JSON-RPC error -32600 "params nested deeper than 33 levels" from the core, where
docs/router.md promises ``invalid-arguments`` with ``issues`` ("nested more than 32 levels
deep"): the core's ceiling stopped them one level before the router's own limit could.
"""

from __future__ import annotations

import json

import pytest
import trio
from e2e_process import AGORA, clean_env

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.client.stdio import StdioServerParameters  # noqa: E402

TIMEOUT = 60
CONTEXT = {"session_id": "e2e", "actor": "user:e2e", "runtime_policy_snapshot_id": "pol"}


def nested(levels: int) -> object:
    """A value ``levels`` deep counting its own object."""
    value: object = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def event(run: str, observation: object, key: str) -> dict[str, object]:
    return {
        "context": CONTEXT, "workflow_run_id": run, "phase_id": "work",
        "observation": observation, "activation_receipt_ref": None,
        "expected_state_version": 1, "idempotency_key": key, "correlation_id": "c",
    }  # fmt: skip


async def test_arguments_past_the_routers_depth_get_its_invalid_arguments(tmp_path):
    params = StdioServerParameters(
        command=AGORA,
        args=["stdio", "--toolset", "router", "--db", str(tmp_path / "r.db")],
        env=clean_env(),
    )
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(params, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
            planned = await client.call_tool("plan_work", {
                "context": CONTEXT, "expected_state_version": 0, "idempotency_key": "plan-1",
                "correlation_id": "c", "objective": "Fix the typo", "goal_binding_id": None,
                "requested_work_mode": None, "explicit_skill_ids": [], "explicit_semantics": None,
            })  # fmt: skip
            run = planned.structured_content["workflow_run_id"]
            # the arguments object is level 1 and the observation level 2
            at_limit = await client.call_tool("record_work_event", event(run, nested(31), "e1"))
            assert not at_limit.is_error  # 32 levels: accepted and recorded
            deeper = await client.call_tool("record_work_event", event(run, nested(32), "e2"))
            dumped = deeper.model_dump(by_alias=True, exclude_none=True)
            assert dumped["isError"] is True
            body = dumped["structuredContent"]
            assert json.loads(dumped["content"][0]["text"]) == body
            assert body["code"] == "invalid-arguments"
            assert body["state_changed"] is False
            assert body["issues"] == [
                {"field": "", "rule": "maxDepth", "message": "are nested deeper than 32 levels"}
            ]
