"""Typed capability-unavailable answers: host tools, adapter tools, Goal-bound and missing graphs.

Each answer names the required capabilities, the local conditions and the fallback action
from the contract, and changes nothing (the store's commit counters do not move).
"""

from __future__ import annotations

import pytest
from router_driver import CONTRACT, FINGERPRINT, ctx, event_args, gate_args, key

from agora.toolsets.router.bounds import NO_ADAPTER, NO_ADAPTER_FALLBACK

HOST = {
    "sync_runtime_context": {
        "intent": {"host_snapshot_ref": None, "plugin_handshake_ref": None,
                   "agent_runtime_snapshot": {"schema_id": "s", "schema_version": "1",
                                              "artifact_kind": "k", "runtime_revision": "r",
                                              "capabilities": []}},
    },
    "validate_route": {"capability_snapshot_id": "snap", "policy_revision": 1,
                       "route_proposal": {"primary_skill": "skill:a"}},
}  # fmt: skip
ADAPTER = {
    "run_model_evaluation": {"authorization_ref": "auth", "repeats": 1, "sealed_case_ref": "c"},
    "compare_evaluations": {"authorization_ref": "auth", "baseline_run_id": "a",
                            "candidate_run_id": "b"},
    "export_router_artifact": {"authorization_ref": "auth", "attestation_ref": None,
                               "comparison_ref": "cmp", "export_kind": "summary"},
}  # fmt: skip
MUTATING = {"sync_runtime_context", "validate_route"}


@pytest.mark.parametrize("tool", [*HOST, *ADAPTER])
async def test_a_tool_that_cannot_run_here_answers_capability_unavailable(router, runtime, tool):
    args = {"context": ctx(), "idempotency_key": key(), "correlation_id": "c",
            **HOST.get(tool, {}), **ADAPTER.get(tool, {})}  # fmt: skip
    if tool in MUTATING:
        args["expected_state_version"] = 0
    commits = runtime.store.stats
    body = await router.refused(tool, **args)
    facts = CONTRACT.tools[tool].extra
    assert body == {
        "ok": False,
        "code": "capability-unavailable",
        "tool": tool,
        "availability": facts["availability"],
        "risk": facts["risk"],
        "reason": facts["availability"],
        "required_capabilities": facts["required_capabilities"],
        "local_conditions": facts["local_conditions"],
        "fallback_action": NO_ADAPTER_FALLBACK if tool in ADAPTER else facts["fallback"],
        "state_changed": False,
        **({"message": NO_ADAPTER} if tool in ADAPTER else {}),
    }
    assert runtime.store.stats == commits


@pytest.mark.parametrize(
    ("tool", "required"),
    [
        ("get_next_work", ["verified-host-scheduler"]),
        ("record_work_event", ["verified-event-store", "activation-receipt-verifier"]),
        ("evaluate_gate", ["verified-evidence-store", "gate-authority"]),
    ],
)
async def test_a_goal_bound_plan_needs_the_verified_host(router, tool, required):
    plan = await router.plan("Progress the goal", goal_binding_id="goal-7")
    assert plan["routing_envelope"] == "managed-goal"
    assert plan["work_graph_id"] is None
    assert plan["created_work_items"] == 0
    run = plan["workflow_run_id"]
    args = {
        "get_next_work": {"context": ctx(), "workflow_run_id": run},
        "record_work_event": event_args(run, "scope", {"n": 1}, 1),
        "evaluate_gate": gate_args(run, "scope", [], 1),
    }[tool]
    body = await router.refused(tool, **args)
    assert body["code"] == "capability-unavailable"
    assert body["required_capabilities"] == required
    assert body["reason"] == "native-goal-authority"
    # The contract's fallback names a verified host scheduler, which most agents lack: the
    # message gives the step open to them (it said nothing more).
    assert "plan_work with goal_binding_id null" in body["message"]
    status = await router.call("get_router_status", context=ctx(), workflow_run_id=None,
                               goal_binding_id="goal-7")  # fmt: skip
    assert status["goal_status_candidate"]["candidate_type"] == "progress-candidate"
    assert status["host_goal_mutated"] is False


@pytest.mark.parametrize("tool", ["get_next_work", "record_work_event", "evaluate_gate"])
async def test_a_missing_graph_asks_to_create_or_replay_the_plan(router, tool):
    args = {
        "get_next_work": {"context": ctx(), "workflow_run_id": "run-nope"},
        "record_work_event": event_args("run-nope", "plan", {}, 1),
        "evaluate_gate": gate_args("run-nope", "plan", [], 1),
    }[tool]
    body = await router.refused(tool, **args)
    assert body["code"] == "capability-unavailable"
    assert body["required_capabilities"] == ["router-owned-work-graph"]
    # Newcomer finding: no message, and nothing naming the id, pushed a model to plan anew
    # rather than fix a typo or its session_id; tester 2: the fallback still said only
    # "Create the plan with plan_work", which a model keyed on it followed into a second run.
    assert body["message"].startswith("no run run-nope in this session: check workflow_run_id")
    assert body["message"].endswith("lists the session's runs), before planning again")
    assert body["fallback_action"].startswith(
        "Check workflow_run_id and context.session_id first (get_router_status with"
        " workflow_run_id null lists this session's runs); only for a run that is not there,"
        " create the plan with plan_work"
    )
    other = (await router.plan("1. a plan\n2. build", session="s2"))["workflow_run_id"]
    foreign = await router.refused(tool, **{**args, "workflow_run_id": other})
    assert foreign == {**body, "message": body["message"].replace("run-nope", other)}


async def test_an_activation_receipt_cannot_be_verified_locally(router):
    run = (await router.plan("1. a plan\n2. build"))["workflow_run_id"]
    args = {**event_args(run, "plan", {"n": 1}, 1), "activation_receipt_ref": "receipt-1"}
    body = await router.refused("record_work_event", **args)
    assert body["required_capabilities"] == ["activation-receipt-verifier"]
    assert "send activation_receipt_ref null" in body["message"]
    assert await router.event(run, "plan", {"n": 1}, 1)  # as told: recorded


async def test_an_empty_run_id_is_named_as_such(router):
    body = await router.refused("get_router_status", context=ctx(), workflow_run_id="",
                                goal_binding_id=None)  # fmt: skip
    assert body["message"].startswith("no run (an empty id) in this session")


async def test_the_status_of_a_run_applies_the_goal_filter_too(router):
    """Reviewer finding: with workflow_run_id given, goal_binding_id was ignored, so the
    status of a run bound to another Goal, or to none, came back as the filtered one's."""
    bound = (await router.plan("Progress the goal", goal_binding_id="goal-7"))["workflow_run_id"]
    free = (await router.plan("Fix the typo"))["workflow_run_id"]

    async def status(run, goal):
        return await router.call("get_router_status", context=ctx(), workflow_run_id=run,
                                 goal_binding_id=goal)  # fmt: skip

    own = await status(bound, "goal-7")
    assert own["goal_binding_id"] == "goal-7"
    assert own["goal_status_candidate"]["candidate_type"] == "progress-candidate"
    assert (await status(free, None))["created_work_items"] == 1
    for run, goal, why in ((bound, "goal-8", "bound to the native Goal goal-7"),
                           (free, "goal-7", "bound to no native Goal")):  # fmt: skip
        other = await status(run, goal)
        assert other == {"workflow_run_id": run, "goal_binding_id": goal,
                         "created_work_items": 0, "goal_status_candidate": None,
                         "host_goal_mutated": False}  # fmt: skip
        assert why in other.guidance


@pytest.mark.parametrize("tool", ["get_router_status", "propose_support_consent"])
async def test_a_local_ready_tool_answers_an_unknown_run_not_found(router, tool):
    # get_router_status on an unknown run answered capability-unavailable, availability
    # local-ready: a tool that can run here, said to be unavailable.
    args = {
        "get_router_status": {"context": ctx(), "workflow_run_id": "run-nope",
                              "goal_binding_id": None},
        "propose_support_consent": {
            "context": ctx(), "workflow_run_id": "run-nope", "expected_state_version": 1,
            "idempotency_key": "k-p", "correlation_id": "c", "phase_id": "plan",
            "primary_skill_id": "skill:a", "support_skill_ids": ["skill:b"],
            "scope_anchor_id": "a", "goal_revision": None, "plan_revision": 1,
            "context_fingerprint": FINGERPRINT,
        },
    }[tool]  # fmt: skip
    body = await router.refused(tool, **args)
    assert body["code"] == "workflow-run-not-found"
    assert body["workflow_run_id"] == "run-nope"
    assert body["message"].startswith("no run run-nope in this session: check workflow_run_id")
    assert body["message"].endswith("to start one, plan_work with expected_state_version 0")


@pytest.mark.parametrize("args", [{}, {"context": {"session_id": "s"}, "x_id": "a" * 300}],
                         ids=["no-arguments", "broken-and-past-the-bounds"])  # fmt: skip
@pytest.mark.parametrize("tool", [*HOST, *ADAPTER])
async def test_a_tool_that_cannot_run_here_says_so_before_checking_its_arguments(tool, args):
    # They answered invalid-arguments first, so an agent fixed every argument only to learn
    # that the tool can never run here: the verified-host tools, and (tester 2) the adapter
    # tools on a server with no [options.router.adapter], which the docs' table promised.
    from agora.config import Config
    from agora.server.embed import open_server

    config = Config(port=0, db=":memory:", toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        answer = await client.call_tool(tool, args)
    assert answer["isError"] is True
    body = answer["structuredContent"]
    facts = CONTRACT.tools[tool].extra
    assert (body["code"], body["availability"]) == ("capability-unavailable",
                                                    facts["availability"])  # fmt: skip
    if tool in ADAPTER:  # only the operator can act: the message says where
        # Tester 6 finding: the contract's fallback_action still said "Configure a trusted
        # host-side adapter", for the agent to do what only the operator can.
        assert body["fallback_action"].startswith(
            "Ask the server's operator to configure an evaluation adapter"
        )
        assert "Configure a trusted" not in body["fallback_action"]
        assert "[options.router.adapter]" in body["message"]
        assert body["message"].startswith(
            "this server has no evaluation adapter: only its operator"
        )
    else:
        assert body["fallback_action"] == facts["fallback"]
