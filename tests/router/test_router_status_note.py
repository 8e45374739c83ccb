"""A run's status says where the run stands, and its undecided proposals can be found.

Tester findings (coding-agent authors over the official SDK): ``get_router_status`` of a run
answered only its counts and goal status candidate (the outputSchema's fields), so an agent
recovering after a crash, which asks for the status first, learnt nothing of where the run
stood: its status, state version or current phase. And no answer but the proposing call's
named a support proposal awaiting the user's decision, so a second session could not find
its proposal_id to decide it.
"""

from __future__ import annotations

import json

from memory_support import completed_run
from router_driver import ctx, event_args
from test_router_consent import locked_plan, proposal_args, transition_args
from test_router_guidance import PHASED, texts

from agora.toolsets.router.progress import evidence_digest


async def _status(router, run):
    return await router.call(
        "get_router_status", context=ctx(), workflow_run_id=run, goal_binding_id=None
    )


async def test_a_runs_status_says_where_it_stands(router):
    plan = await router.plan(PHASED)
    run = plan["workflow_run_id"]
    first = (await router.next(run))["work_item"]
    await router.call("record_work_event", **event_args(run, first["phase_id"], {}, 1))
    note = texts(await _status(router, run))[-1].splitlines()
    assert note == [
        f"Run {run}: status in-progress, state version 2, plan revision 1, 0 of 3 work items"
        " completed.",
        f"Current phase: {first['phase_id']} (work item {first['work_item_id']}, active);"
        " get_next_work names its exit gate's checks.",
        f"Recorded for phase {first['phase_id']}: 1 note without a check_id (not counted)."
        " Not yet reported: plan-ready.",
        "Next write to this run: send expected_state_version 2; evaluate_gate also"
        " expected_plan_revision 1 (the consent tools: plan_revision).",
    ]


async def test_a_completed_runs_status_says_no_write_can_succeed(router):
    run = await completed_run(router)
    note = texts(await _status(router, run))[-1].splitlines()
    assert note[0] == (
        f"Run {run}: status completed, state version 3, plan revision 1, 1 of 1 work items"
        " completed."
    )
    assert note[-1].startswith("This run is completed (every phase's exit gate passed)")
    assert len(note) == 2  # no current phase


async def test_an_undecided_proposal_is_named_by_status_and_next_work(router):
    plan = await locked_plan(router)
    run = plan["workflow_run_id"]
    proposal = await router.call("propose_support_consent", **proposal_args(plan))
    named = f"proposal_id {proposal['proposal_id']} (phase plan, primary skill:lead, supports"
    named += " skill:a, skill:b)"
    for answer in (await _status(router, run), await router.next(run)):
        note = texts(answer)[-1]
        assert f"Awaiting the user's decision: {named}." in note
        assert note.splitlines()[-1].startswith("Next write to this run: send")
    await router.call("transition_support_consent", **transition_args(proposal, 2))
    for answer in (await _status(router, run), await router.next(run)):
        assert "Awaiting" not in texts(answer)[-1]  # decided: nothing awaits


async def test_a_goal_bound_runs_status_says_its_host_drives_it(router):
    run = (await router.plan("Fix the typo", goal_binding_id="goal-1"))["workflow_run_id"]
    answer = await router.call(
        "get_router_status", context=ctx(), workflow_run_id=run, goal_binding_id="goal-1"
    )
    note = texts(answer)[-1].splitlines()
    assert note[0] == (
        f"Run {run}: status planned, state version 1, plan revision 1, 0 of 0 work items completed."
    )
    assert note[1].startswith("This run is bound to the native Goal goal-1: the Goal's host")
    assert len(note) == 2


async def test_status_and_next_work_name_the_events_recorded_and_the_gate_call(router):
    # a resumed agent learnt the current phase but not which checks it had reported, nor
    # the event ids evaluate_gate takes as evidence_refs: it had to record them again
    plan = await router.plan(PHASED)
    run = plan["workflow_run_id"]
    item = (await router.next(run))["work_item"]
    phase = item["phase_id"]
    run_checks = texts(await router.next(run))[-1].split("checks ")[1].split(";")[0]
    checks = run_checks.split(", ")
    first = await router.event(run, phase, {"check_id": checks[0], "outcome": "passed"}, 1)
    ref = first["event_ids"][0]
    for answer in (await _status(router, run), await router.next(run)):
        line = next(x for x in texts(answer)[-1].splitlines() if x.startswith("Recorded"))
        rest = f"Not yet reported: {', '.join(checks[1:])}." if checks[1:] else "Every"
        assert line.startswith(f"Recorded for phase {phase}: {ref} ({checks[0]} passed). {rest}")
    version, refs = 2, [ref]
    for check in checks[1:]:
        event = await router.event(run, phase, {"check_id": check, "outcome": "passed"}, version)
        refs.append(event["event_ids"][0])
        version += 1
    digest = evidence_digest(refs)
    for answer in (await _status(router, run), await router.next(run)):
        note = texts(answer)[-1]
        assert (
            "Every check's latest event says passed: evaluate_gate can be called now with"
            f" evidence_refs {json.dumps(sorted(refs))} and expected_evidence_digest {digest}."
        ) in note
    gate = await router.gate(run, phase, sorted(refs), version)
    assert gate["passed"] is True


async def test_status_names_only_the_newest_events_and_a_failed_latest(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    phase = (await router.next(run))["work_item"]["phase_id"]
    refs = []
    for version in range(1, 13):
        outcome = "failed" if version == 12 else "passed"
        event = await router.event(run, phase, {"check_id": "plan-ready", "outcome": outcome},
                                   version)  # fmt: skip
        refs += event["event_ids"]
    line = next(x for x in texts(await _status(router, run))[-1].splitlines() if "Recorded" in x)
    assert line.startswith(f"Recorded for phase {phase}: 2 earlier events; {refs[2]} (plan-ready")
    assert line.endswith(
        f"{refs[-1]} (plan-ready failed). The latest event of plan-ready says failed: report it"
        " again once it passes."
    )
