"""A refusal of a call's arguments says all an agent needs to write the call again.

Tester findings (coding-agent authors over the official SDK):

- a refusal by the inputSchema (``record_work_event`` without ``activation_receipt_ref``)
  dropped the "ignored unknown argument" warning that the tool's other answers carry, and a
  ``plan_work`` with ``workspace_root`` at the top level (it belongs in ``routing_context``) was
  refused twice for missing fields without a word about it;
- ``plan_work`` with ``goal`` for ``objective`` was asked "did you mean 'goal_binding_id'?";
- ``explicit_skill_ids: is required`` did not say that ``[]`` is its empty value, and a missing
  enum argument (``remember_workflow``'s ``target_profile_class``) did not list its values.

The calls go over Streamable HTTP on loopback from the official MCP SDK's client.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from router_driver import ctx, event_args, gate_args, plan_args

from agora.config import Config
from agora.server.embed import open_server

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 30


async def _refusals(tmp_path, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The structured bodies of ``calls``, each refused, made by the official SDK's client."""
    config = Config(port=0, db=str(tmp_path / "router.db"), toolsets=["router"])
    bodies = []
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config) as server,
            mcp.Client(f"{server.url}/mcp/router", read_timeout_seconds=TIMEOUT) as client,
        ):
            for tool, args in calls:
                answer = await client.call_tool(tool, args)
                assert answer.is_error is True, (tool, answer)
                bodies.append(answer.structured_content)
    return bodies


def _issues(body: dict[str, Any]) -> dict[str, str]:
    assert body["code"] == "invalid-arguments", body
    return {issue["field"]: issue["message"] for issue in body["issues"]}


async def test_a_schema_refusal_names_the_ignored_arguments_too(tmp_path):
    event = event_args("run-none", "implement", {}, 1)
    del event["activation_receipt_ref"]
    plan = plan_args("Fix the failing test", workspace_root="/srv/repo")
    del plan["goal_binding_id"]
    refused_event, refused_plan = await _refusals(
        tmp_path, [("record_work_event", {**event, "evidnce": ["x"]}), ("plan_work", plan)]
    )
    assert "activation_receipt_ref" in _issues(refused_event)
    assert refused_event["warnings"] == [
        "ignored unknown argument 'evidnce' (this tool takes activation_receipt_ref, context,"
        " correlation_id, expected_state_version, idempotency_key, observation, phase_id,"
        " workflow_run_id)"
    ]
    assert "goal_binding_id" in _issues(refused_plan)
    assert refused_plan["warnings"] == [
        "ignored unknown argument 'workspace_root' (did you mean 'routing_context.workspace_root'?)"
    ]


async def test_another_word_for_an_argument_is_taken_for_it(tmp_path):
    plan = plan_args("unused")
    del plan["objective"]
    (body,) = await _refusals(tmp_path, [("plan_work", {**plan, "goal": "fix the failing test"})])
    assert _issues(body) == {
        "objective": "is required (you sent 'goal': did you mean 'objective'?)"
    }
    assert body["warnings"] == ["ignored unknown argument 'goal' (did you mean 'objective'?)"]


async def test_a_missing_argument_says_its_empty_value_or_its_values(tmp_path):
    plan = plan_args("Fix it")
    for name in ("explicit_skill_ids", "requested_work_mode"):
        del plan[name]
    remember = {
        "context": ctx(), "workspace_root": None, "idempotency_key": "remember-1",
        "correlation_id": "corr-1", "workflow_run_id": "run-none",
    }  # fmt: skip
    planned, remembered = await _refusals(
        tmp_path, [("plan_work", plan), ("remember_workflow", remember)]
    )
    assert _issues(planned) == {
        "requested_work_mode": 'is required (send null if there is none; else one of "single",'
        ' "phased", "managed-goal")',
        "explicit_skill_ids": "is required (send [] if there is none)",
    }
    assert _issues(remembered) == {
        "target_profile_class": 'is required (one of "managed-personal",'
        ' "managed-workspace-local", "user-personal", "workspace-file")',
        "risk_class": 'is required (one of "r0", "r1", "r2", "r3")',
        "side_effect_outcome": 'is required (one of "none", "known-success", "known-failure",'
        ' "unknown")',
        "one_shot": 'is required (one of "none", "remember-once", "no-memory")',
    }
    assert "the first: argument 'target_profile_class': is required (one" in remembered["message"]


async def test_nested_and_object_arguments_say_their_empty_value_or_shape(tmp_path):
    # routing_context.domains and .tags said only "is required" where a top-level array
    # says "send [] if there is none"; a missing context gave no example of its shape
    plan = plan_args("Fix it")
    plan["routing_context"] = {"workspace_root": None, "current_phase_id": None}
    del plan["context"]
    (body,) = await _refusals(tmp_path, [("plan_work", plan)])
    assert _issues(body) == {
        "context": 'is required (an object: {"session_id": "...", "actor": "...",'
        ' "runtime_policy_snapshot_id": "..."})',
        "routing_context.domains": "is required (send [] if there is none)",
        "routing_context.tags": "is required (send [] if there is none)",
    }


async def test_a_refusal_of_several_issues_says_how_many_and_lists_them(tmp_path):
    # the message named only the first missing argument; five more were only in issues
    event = event_args("run-none", "implement", {}, 1)
    for name in ("correlation_id", "idempotency_key", "phase_id"):
        del event[name]
    (body,) = await _refusals(tmp_path, [("record_work_event", {**event, "observation": 1})])
    assert body["message"] == (
        "4 problems with the arguments: missing required arguments 'idempotency_key',"
        " 'correlation_id', 'phase_id'; argument 'observation' breaks its type rule. issues"
        " says how to fix each; the first: argument 'idempotency_key': is required"
    ), body["message"]


async def test_a_gate_id_is_not_taken_for_the_phase_id(tmp_path):
    # gate_id is close to phase_id by its letters, but a gate is no phase: "did you mean
    # 'phase_id'?" sent the agent to put the gate id plan-exit where a phase id goes
    gate = gate_args("run-none", "plan", [], 1)
    del gate["phase_id"]
    (body,) = await _refusals(tmp_path, [("evaluate_gate", {**gate, "gate_id": "plan-exit"})])
    assert _issues(body) == {"phase_id": "is required"}
    assert body["warnings"][0].startswith("ignored unknown argument 'gate_id' (this tool takes")


@pytest.mark.parametrize(
    ("tool", "sent", "expected"),
    [
        pytest.param("plan_work", "goal", "objective", id="another-word"),
        pytest.param("plan_work", "Task", "objective", id="another-word-any-case"),
        pytest.param("get_next_work", "run_id", "workflow_run_id", id="another-word-for-an-id"),
        pytest.param("get_router_status", "goal", None, id="no-such-argument-no-guess"),
        pytest.param(
            "plan_work", "workspace_root", "routing_context.workspace_root", id="nested-field"
        ),
        pytest.param("plan_work", "session_id", "context.session_id", id="context-field"),
        pytest.param("plan_work", "routing_contxt", "routing_context", id="misspelt"),
        pytest.param("plan_work", "colour", None, id="nothing-close"),
        pytest.param("evaluate_gate", "gate_id", None, id="close-letters-another-field"),
        pytest.param("evaluate_gate", "phase_idd", "phase_id", id="misspelt-id"),
    ],
)
def test_the_argument_meant(tool, sent, expected):
    from agora.toolsets.router.extras import KNOWN
    from agora.toolsets.router.meant import meant

    assert meant(sent, KNOWN[tool]) == expected
