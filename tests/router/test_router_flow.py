"""A phased plan worked to its last gate through the tool handlers, and the graph rules."""

from __future__ import annotations

from router_driver import ctx


async def test_a_phased_plan_is_worked_phase_by_phase_to_completion(router):
    plan = await router.plan("1. design the schema\n2. implement it\n3. test it")
    assert plan["routing_envelope"] == "phased"
    assert plan["created_work_items"] == 3
    run = plan["workflow_run_id"]
    version = 1
    for phase, check in (("plan", "plan-ready"), ("implement", "implementation-done"),
                         ("verify", "verification-passed")):  # fmt: skip
        nxt = await router.next(run)
        assert nxt["work_item"]["phase_id"] == phase
        event = await router.event(run, phase, {"check_id": check, "outcome": "passed"}, version)
        version = event["resulting_state_version"]
        gate = await router.gate(run, phase, event["event_ids"], version)
        assert gate["passed"] is True
        version = gate["resulting_state_version"]
    done = await router.next(run)
    assert done == {"status": "completed", "work_item": None, "authority_mode": "router-local",
                    "host_goal_mutated": False, "refresh_requirements": []}  # fmt: skip
    status = await router.call("get_router_status", context=ctx(), workflow_run_id=run,
                               goal_binding_id=None)  # fmt: skip
    assert status["goal_status_candidate"]["candidate_type"] == "completion-candidate"
