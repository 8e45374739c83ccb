"""What a refusal of a phase or a gate tells an agent: enough to make the next call right.

Reviewer findings: ``phase-not-ready`` said "waits for earlier phases" without naming them,
``unknown-phase`` did not list the plan's phases, and ``evidence-digest-mismatch`` said only
"the evidence is not what you expected".
"""

from __future__ import annotations

from router_driver import event_args, gate_args, plan_args

PHASED = "1. design it\n2. build it\n3. test it"


async def test_phase_not_ready_names_the_phases_it_waits_for_and_what_to_call(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    body = await router.refused("record_work_event", **event_args(run, "verify", {}, 1))
    assert body["code"] == "phase-not-ready"
    assert body["waiting_for"] == ["plan", "implement"]
    assert "'plan', 'implement'" in body["message"]
    assert "get_next_work" in body["message"]
    assert body["retryable"] is True  # docs/router.md: once those gates pass, it can
    ev = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1)
    await router.gate(run, "plan", ev["event_ids"], 2)
    body = await router.refused("evaluate_gate", **gate_args(run, "verify", [], 3))
    assert body["waiting_for"] == ["implement"]


async def test_unknown_phase_lists_the_plans_phases(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    body = await router.refused("record_work_event", **event_args(run, "build", {}, 1))
    assert body["code"] == "unknown-phase"
    assert body["phase_ids"] == ["plan", "implement", "verify"]
    assert "'plan', 'implement', 'verify'" in body["message"]


async def test_a_digest_mismatch_says_which_digest_to_send(router):
    run = (await router.plan("Fix the typo"))["workflow_run_id"]
    ev = await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"}, 1)
    refs = ev["event_ids"]
    wrong = gate_args(run, "work", refs, 2, digest="sha256:" + "0" * 64)
    body = await router.refused("evaluate_gate", **wrong)
    assert body["code"] == "evidence-digest-mismatch"
    assert "send the evidence_digest given here as expected_evidence_digest" in body["message"]
    gate = await router.gate(run, "work", refs, 2, digest=body["evidence_digest"])
    assert gate["passed"] is True


async def test_a_check_outcome_that_is_neither_passed_nor_failed_is_named(router):
    """Tester finding: "outcome": "ok" was refused as if no outcome had been sent."""
    run = (await router.plan("Fix the typo"))["workflow_run_id"]
    wrong = event_args(run, "work", {"check_id": "work-done", "outcome": "ok"}, 1)
    body = await router.refused("record_work_event", **wrong)
    assert body["code"] == "observation-invalid"
    assert body["message"].startswith('a check\'s "outcome" must be "passed" or "failed", not "ok"')
    missing = event_args(run, "work", {"check_id": "work-done"}, 1)
    body = await router.refused("record_work_event", **missing)
    assert body["message"].startswith('a check needs an outcome: add "outcome"')


async def test_a_plan_key_resent_for_another_request_says_what_differs(router):
    """Tester finding: plan_work resent under its key with only expected_state_version
    changed (0 -> 10) was refused "for a different request", naming nothing."""
    plan = await router.plan("Fix the typo", idem="plan-k")
    body = await router.refused("plan_work", **plan_args("Fix the typo", idem="plan-k",
                                                          version=10))  # fmt: skip
    assert body["code"] == "idempotency-conflict"
    assert "for a different request, on run " + plan["workflow_run_id"] in body["message"]
    assert (
        ": expected_state_version is 10, but that plan was made at 0, as every plan is"
        in body["message"]
    )
    body = await router.refused("plan_work", **plan_args(PHASED, idem="plan-k"))
    assert ": the plan this request makes differs from that plan's answer in " in body["message"]
    assert "routing_envelope" in body["message"]
    body = await router.refused("plan_work", **plan_args("Fix the typo!", idem="plan-k"))
    assert "the plan this request makes is the same, so an argument" in body["message"]


def _routing(**given):
    return {"workspace_root": None, "domains": [], "tags": [], "current_phase_id": None, **given}


async def test_a_plan_key_resent_with_another_routing_context_names_it(router, tmp_path):
    """Tester finding: with only routing_context changed, the message guessed "the
    objective's words, or the context's actor or policy snapshot", or named an answer field
    (profile_warnings) as if the agent had sent it."""
    await router.plan("Write a README section", idem="k-route")
    added = plan_args("Write a README section", idem="k-route",
                      routing_context=_routing(domains=["docs"]))  # fmt: skip
    body = await router.refused("plan_work", **added)
    assert (
        ": routing_context differs from that plan's in domains; the run keeps no" in body["message"]
    )
    root = str(tmp_path / "unauthorized")
    await router.plan("Write a README section", idem="k-root",
                      routing_context=_routing(workspace_root=root))  # fmt: skip
    body = await router.refused("plan_work", **plan_args("Write a README section", idem="k-root"))
    message = body["message"]
    assert ": routing_context differs from that plan's in workspace_root; so the plan" in message
    assert (
        "differs from that plan's answer in profile_warnings (fields of the answer, not" in message
    )
    assert "differs in profile_warnings" not in message


async def test_a_plan_key_resent_with_another_current_phase_names_it(router):
    """Tester finding: with only routing_context.current_phase_id changed, the message named
    workspace_root, explicit_skill_ids and a Profile file, none of them changed; with the
    objective and the domains changed it named the domains alone, as if restoring them would
    do (domains in another order now replay: test_router_replay_forms)."""
    await router.plan("Write a README section", idem="k-phase",
                      routing_context=_routing(current_phase_id="build"))  # fmt: skip
    moved = plan_args("Write a README section", idem="k-phase",
                      routing_context=_routing(current_phase_id="design"))  # fmt: skip
    message = (await router.refused("plan_work", **moved))["message"]
    assert ": routing_context differs from that plan's in current_phase_id; so the plan" in message
    assert "a current_phase_id no phase has" in message
    await router.plan("Write a README section", idem="k-both", routing_context=_routing())
    both = plan_args("Write two README sections", idem="k-both",
                     routing_context=_routing(domains=["docs"]))  # fmt: skip
    message = (await router.refused("plan_work", **both))["message"]
    assert (
        ": routing_context differs from that plan's in domains; the run keeps no objective, actor"
        " or policy snapshot, so any of those may differ too; use a new key" in message
    )
