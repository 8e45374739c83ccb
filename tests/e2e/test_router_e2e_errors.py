"""The router's error results tell a text-only agent what to do next.

Hosts such as Claude Code and Cursor give the model a tool result's text blocks. The router's
refusals and capability-unavailable answers carry the way forward (``fallback_action``,
``retryable``, the current state version) in their structured body, so their text block is
that body's JSON, as every other toolset's error results are.
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


def plan(objective: str) -> dict[str, object]:
    return {
        "context": CONTEXT, "expected_state_version": 0, "idempotency_key": "plan-1",
        "correlation_id": "c-1", "objective": objective, "goal_binding_id": None,
        "requested_work_mode": None, "explicit_skill_ids": [], "explicit_semantics": None,
    }  # fmt: skip


def text_body(result: object) -> dict[str, object]:
    """The error result's one text block, parsed; it must equal the structured body."""
    dumped = result.model_dump(by_alias=True, exclude_none=True)  # type: ignore[attr-defined]
    assert dumped["isError"] is True
    (block,) = dumped["content"]
    body = json.loads(block["text"])
    assert body == dumped["structuredContent"]
    return body


async def test_router_errors_carry_their_body_in_the_text_block(tmp_path):
    params = StdioServerParameters(
        command=AGORA,
        args=["stdio", "--toolset", "router", "--db", str(tmp_path / "r.db")],
        env=clean_env(),
    )
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(params, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
            missing = await client.call_tool(
                "get_next_work", {"context": CONTEXT, "workflow_run_id": "run-missing"}
            )
            body = text_body(missing)
            assert body["code"] == "capability-unavailable"
            assert "plan_work" in str(body["fallback_action"])

            planned = await client.call_tool("plan_work", plan("add a login page"))
            assert not planned.is_error
            reused = await client.call_tool("plan_work", plan("delete the login page"))
            body = text_body(reused)
            assert body["code"] == "idempotency-conflict"
            assert body["retryable"] is False
