"""A refused argument is told what to send, over a real session (Streamable HTTP, the SDK).

Tester findings (a coding agent over the official SDK): transition_profile_update with
``expected_profile_digest`` null answered "must match at least one of the allowed forms",
naming neither form; ``expected_state_version`` 0 answered "must be >= 1", not pointing at the
proposal's state_version; propose_support_consent with ``context_fingerprint`` "abc" answered
the regex alone, though the fingerprint is a digest the agent must compute itself.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from router_driver import ctx

from agora.config import Config
from agora.server.embed import open_server

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 30
DIGEST = "sha256:" + "a" * 64


def _issues(result: Any) -> dict[str, str]:
    assert result.is_error is True
    body = result.structured_content
    assert body["code"] == "invalid-arguments"
    return {i["field"]: i["message"] for i in body["issues"]}


def _transition(**over: Any) -> dict[str, Any]:
    args = {
        "context": ctx(), "workspace_root": None, "idempotency_key": "t", "correlation_id": "c",
        "proposal_id": "proposal:" + "0" * 32, "expected_proposal_digest": DIGEST,
        "expected_profile_digest": DIGEST, "expected_state_version": 1, "action": "approve",
    }  # fmt: skip
    return {**args, **over}


async def test_a_refused_argument_is_told_its_forms_and_where_its_value_comes_from(tmp_path):
    config = Config(port=0, db=str(tmp_path / "router.db"), toolsets=["router"])
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config) as server,
            mcp.Client(f"{server.url}/mcp/router", read_timeout_seconds=TIMEOUT) as client,
        ):
            null = await client.call_tool(
                "transition_profile_update", _transition(expected_profile_digest=None)
            )
            said = _issues(null)["expected_profile_digest"]
            assert said.startswith(
                'must be "sha256:" followed by 64 lowercase hex digits or "missing". The'
                " current managed Profile's digest as the proposal states it"
            )
            zero = await client.call_tool(
                "transition_profile_update", _transition(expected_state_version=0)
            )
            said = _issues(zero)["expected_state_version"]
            assert said.startswith("must be >= 1. The revision number an approval writes: the"
                                   " proposal's state_version")  # fmt: skip
            consent = await client.call_tool("propose_support_consent", {
                "context": ctx(), "workflow_run_id": "run-1", "phase_id": "work",
                "support_skill_ids": ["skill:x"], "scope_anchor_id": "a", "goal_revision": None,
                "plan_revision": 1, "context_fingerprint": "abc", "expected_state_version": 1,
                "idempotency_key": "p", "correlation_id": "c",
            })  # fmt: skip
            said = _issues(consent)["context_fingerprint"]
            assert said.startswith('must be "sha256:" followed by 64 lowercase hex digits. A'
                                   " digest you compute yourself")  # fmt: skip
            assert "hashlib.sha256(json.dumps(" in said


async def test_the_instructions_say_how_to_find_a_lost_run(tmp_path):
    """Tester finding: the initialize instructions did not say how to resume after losing a
    run id; get_router_status with workflow_run_id null lists the session's runs."""
    config = Config(port=0, db=str(tmp_path / "router.db"), toolsets=["router"])
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config) as server,
            mcp.Client(f"{server.url}/mcp/router", read_timeout_seconds=TIMEOUT) as client,
        ):
            told = " ".join(client.instructions.split())
            assert (
                "Lost a workflow_run_id? get_router_status with workflow_run_id null and"
                " goal_binding_id null lists this session's runs" in told
            )
            plan = await client.call_tool("plan_work", {
                "context": ctx(), "objective": "Fix the typo", "expected_state_version": 0,
                "idempotency_key": "p", "correlation_id": "c", "goal_binding_id": None,
                "requested_work_mode": None, "explicit_skill_ids": [],
                "explicit_semantics": None,
            })  # fmt: skip
            run = plan.structured_content["workflow_run_id"]
            status = await client.call_tool("get_router_status", {
                "context": ctx(), "workflow_run_id": None, "goal_binding_id": None,
            })  # fmt: skip
            assert run in " ".join(c.text for c in status.content)
