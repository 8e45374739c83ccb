"""What a refusal of a phase or a gate tells an agent: enough to make the next call right.

Reviewer findings: ``phase-not-ready`` said "waits for earlier phases" without naming them,
``unknown-phase`` did not list the plan's phases, and ``evidence-digest-mismatch`` said only
"the evidence is not what you expected".
"""

from __future__ import annotations

from router_driver import event_args

PHASED = "1. design it\n2. build it\n3. test it"


async def test_unknown_phase_lists_the_plans_phases(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    body = await router.refused("record_work_event", **event_args(run, "build", {}, 1))
    assert body["code"] == "unknown-phase"
    assert body["phase_ids"] == ["plan", "implement", "verify"]
    assert "'plan', 'implement', 'verify'" in body["message"]
