"""The router over stdio with the official ``mcp`` SDK: a phased objective worked to its last gate.

``agora stdio --toolset router --db FILE`` is started by the SDK's stdio client. The client
lists exactly the 20 tools with the contract's schemas, plans a phased objective, and
loops get_next_work -> record_work_event -> evaluate_gate until the last gate passes; every
structured result is validated against the outputSchema tools/list published. A second
client declares an MCP root holding a workspace Profile, which the plan must use.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
import trio
from e2e_mcp import check_structured
from e2e_process import AGORA, clean_env

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from agora.mcp.contracts import load_contract  # noqa: E402
from agora.toolsets.router.declared import declared  # noqa: E402
from agora.toolsets.router.described import described  # noqa: E402
from agora.toolsets.router.progress import evidence_digest  # noqa: E402
from mcp import types  # noqa: E402

TIMEOUT = 60
CONTEXT = {"session_id": "e2e", "actor": "user:e2e", "runtime_policy_snapshot_id": "pol"}
SERVED = {
    "sync_runtime_context", "plan_work", "propose_support_consent", "transition_support_consent",
    "get_next_work", "validate_route", "record_work_event", "evaluate_gate", "get_router_status",
    "run_model_evaluation", "compare_evaluations", "export_router_artifact",
    "get_memory_status", "remember_workflow", "record_route_feedback", "purge_workflow_memory",
    "list_workflow_candidates", "preview_profile_update", "transition_profile_update",
    "rollback_profile_revision",
}  # fmt: skip


def server(db) -> StdioServerParameters:
    return StdioServerParameters(
        command=AGORA, args=["stdio", "--toolset", "router", "--db", str(db)], env=clean_env()
    )


class Agent:
    """One SDK client that checks every structured result against its published schema."""

    def __init__(self, client: mcp.Client, tools: dict[str, dict]) -> None:
        self.client = client
        self.tools = tools
        self.n = 0

    async def call(self, tool: str, **args: object) -> dict:
        self.n += 1
        base = {"context": CONTEXT}
        if tool not in ("get_next_work", "get_router_status"):
            base |= {"idempotency_key": f"k-{self.n}", "correlation_id": f"c-{self.n}"}
        result = await self.client.call_tool(tool, base | args)
        dumped = result.model_dump(by_alias=True, exclude_none=True)
        check_structured(self.tools[tool], dumped)
        return dumped["structuredContent"]


async def listed(client: mcp.Client) -> dict[str, dict]:
    tools = {t.name: t.model_dump(by_alias=True, exclude_none=True)
             for t in (await client.list_tools()).tools}  # fmt: skip
    contract = load_contract("router")
    assert set(tools) == SERVED
    for name, tool in tools.items():
        # the contract's, with a description on each argument (`agora.toolsets.router.described`)
        assert tool["inputSchema"] == described(contract.tools[name].to_mcp())["inputSchema"]
        # the contract's result, or a refusal (`agora.toolsets.router.declared`)
        assert tool["outputSchema"] == declared(contract.tools[name].to_mcp())["outputSchema"]
    return tools


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_phased_objective_is_worked_to_its_last_gate_over_stdio(tmp_path, mode):
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(server(tmp_path / "r.db"), mode=mode,
                              read_timeout_seconds=TIMEOUT) as client:  # fmt: skip
            agent = Agent(client, await listed(client))
            plan = await agent.call(
                "plan_work", expected_state_version=0, goal_binding_id=None,
                objective="Design the storage layer, then implement it, then test it",
                requested_work_mode=None, explicit_skill_ids=[], explicit_semantics=None,
            )  # fmt: skip
            assert plan["routing_envelope"] == "phased"
            run, version, phases = plan["workflow_run_id"], 1, []
            while (nxt := await agent.call("get_next_work", workflow_run_id=run))["work_item"]:
                phase = nxt["work_item"]["phase_id"]
                phases.append(phase)
                event = await agent.call(
                    "record_work_event", workflow_run_id=run, phase_id=phase,
                    expected_state_version=version, activation_receipt_ref=None,
                    observation={"check_id": CHECKS[phase], "outcome": "passed"},
                )  # fmt: skip
                refs = event["event_ids"]
                gate = await agent.call(
                    "evaluate_gate", workflow_run_id=run, phase_id=phase, evidence_refs=refs,
                    expected_evidence_digest=evidence_digest(refs), expected_plan_revision=1,
                    expected_state_version=event["resulting_state_version"],
                )  # fmt: skip
                assert gate["passed"] is True
                version = gate["resulting_state_version"]
            assert phases == ["plan", "implement", "verify"]
            assert nxt["status"] == "completed"
            status = await agent.call("get_router_status", workflow_run_id=run,
                                      goal_binding_id=None)  # fmt: skip
            assert status["created_work_items"] == 3
            refused = await client.call_tool("validate_route", {
                "context": CONTEXT, "expected_state_version": 0, "idempotency_key": "v",
                "correlation_id": "v", "capability_snapshot_id": "s", "policy_revision": 0,
                "route_proposal": {},
            })  # fmt: skip
            assert refused.is_error
            body = refused.structured_content
            assert body["code"] == "capability-unavailable"
            assert body["required_capabilities"] == [
                "verified-capability-snapshot", "route-validation-authority"
            ]  # fmt: skip


CHECKS = {"plan": "plan-ready", "implement": "implementation-done", "verify": "verification-passed"}


async def test_a_client_root_authorizes_its_workspace_profile_over_stdio(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".codex").mkdir(parents=True)
    profile = {
        "format": "agora-router-profile/1", "profile_id": "e2e",
        "rules": [{"rule_id": "all", "phases": [{
            "phase_id": "build", "primary_skill_id": "skill:tdd",
            "exit_gate": {"gate_id": "green", "check_ids": ["tests-pass"]}}]}],
    }  # fmt: skip
    (repo / ".codex" / "workflow-skill-router.json").write_text(json.dumps(profile))

    async def roots(context: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{repo}", name="repo")])

    with trio.fail_after(TIMEOUT):
        async with mcp.Client(server(tmp_path / "r.db"), mode="legacy", list_roots_callback=roots,
                              read_timeout_seconds=TIMEOUT) as client:  # fmt: skip
            agent = Agent(client, await listed(client))
            plan = await agent.call(
                "plan_work", expected_state_version=0, goal_binding_id=None, objective="Fix it",
                requested_work_mode=None, explicit_skill_ids=[], explicit_semantics=None,
                routing_context={"workspace_root": str(repo), "domains": [], "tags": [],
                                 "current_phase_id": None},
            )  # fmt: skip
    assert plan["route_source"] == "workspace-profile"
    assert plan["planned_skill_ids"] == ["skill:tdd"]


async def test_a_plan_replays_identically_after_the_server_process_restarts(tmp_path):
    args = {
        "context": CONTEXT, "expected_state_version": 0, "idempotency_key": "restart",
        "correlation_id": "c1", "objective": "1. design\n2. build", "goal_binding_id": None,
        "requested_work_mode": None, "explicit_skill_ids": [], "explicit_semantics": None,
    }  # fmt: skip
    results = []
    for correlation in ("c1", "c2"):  # two server processes, one after the other, one file
        with trio.fail_after(TIMEOUT):
            async with mcp.Client(server(tmp_path / "r.db"), mode="legacy",
                                  read_timeout_seconds=TIMEOUT) as client:  # fmt: skip
                result = await client.call_tool(
                    "plan_work", {**args, "correlation_id": correlation}
                )
                results.append(result.structured_content)
                conflict = await client.call_tool("plan_work", {**args, "objective": "other"})
                assert conflict.structured_content["code"] == "idempotency-conflict"
    assert results[0] == results[1]


@pytest.mark.sqlite_only(
    "adds its trigger through sqlite3 on the file (in process on both: test_router_catalog)"
)
async def test_a_failed_commit_answers_the_routers_internal_error_over_stdio(tmp_path):
    # The store refuses the event's commit (a trigger added while no server runs): the SDK
    # gets the router's sanitized internal error; its correlation id names the log line.
    db = tmp_path / "r.db"
    plan_args = {
        "context": CONTEXT, "expected_state_version": 0, "idempotency_key": "p",
        "correlation_id": "c", "objective": "1. design\n2. build", "goal_binding_id": None,
        "requested_work_mode": None, "explicit_skill_ids": [], "explicit_semantics": None,
    }  # fmt: skip
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(server(db), mode="legacy", read_timeout_seconds=TIMEOUT) as client:
            run = (await client.call_tool("plan_work", plan_args)).structured_content
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TRIGGER refuse_events BEFORE INSERT ON router_events"
                     " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")  # fmt: skip
    event = {
        "context": CONTEXT, "expected_state_version": 1, "idempotency_key": "e",
        "correlation_id": "c", "workflow_run_id": run["workflow_run_id"], "phase_id": "plan",
        "activation_receipt_ref": None, "observation": {"note": 1},
    }  # fmt: skip
    with (tmp_path / "stderr.log").open("w") as errlog, trio.fail_after(TIMEOUT):
        async with mcp.Client(stdio_client(server(db), errlog=errlog), mode="legacy",
                              read_timeout_seconds=TIMEOUT) as client:  # fmt: skip
            failed = await client.call_tool("record_work_event", event)
    assert failed.is_error
    body = failed.structured_content
    assert body is not None
    assert set(body) == {"ok", "code", "message", "retryable", "correlation_id", "state_changed"}
    assert (body["ok"], body["code"], body["state_changed"]) == (False, "internal-error", False)
    assert re.fullmatch(r"corr-[0-9a-f]{16}", body["correlation_id"])
    assert "refused by the test" not in body["message"]
    assert body["correlation_id"] in (tmp_path / "stderr.log").read_text()
