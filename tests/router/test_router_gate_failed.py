"""What a gate that fails, or would fail, tells an agent: report the failed check again, and
copy the evaluate_gate call an answer gives, never build the refs or the digest.

Tester findings (end-to-end, a check reported ``failed``): the failed gate's note explained
what a check_id is and said "record the checks, then call evaluate_gate again with their
event_ids among the evidence_refs", asking the agent to assemble the refs (and so the digest)
itself, against tools/list's "Never compute it"; and ``evidence-digest-mismatch`` offered the
digest that would make a gate bound to fail, while the phase's check was known to have failed.
"""

from __future__ import annotations

from router_driver import gate_args
from test_router_guidance import PHASED, texts

COPY = "copy its evidence_refs and expected_evidence_digest"


async def test_a_gate_failed_by_a_failed_check_says_report_it_again_and_copy_the_call(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    failed = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "failed"}, 1)
    gate = await router.gate(run, "plan", failed["event_ids"], 2)
    note = texts(gate)[-1]
    assert "plan-ready: the latest referenced event reports it failed." in note
    assert "Report plan-ready again (record_work_event) once it passes." in note
    assert COPY in note
    assert "among the evidence_refs" not in note
    assert "An event reports a check by" not in note  # the check was reported: no lesson


async def test_a_gate_with_an_unreported_check_says_report_it_and_copy_the_call(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    noted = await router.event(run, "plan", {"check": "plan-ready"}, 1)
    note = texts(await router.gate(run, "plan", noted["event_ids"], 2))[-1]
    assert "The gate failed. plan-ready: no referenced event reports it." in note
    assert (
        """Report plan-ready (record_work_event, observation e.g. {"check_id": "plan-ready","""
        in note
    )
    assert COPY in note
    assert "among the evidence_refs" not in note


async def test_a_digest_mismatch_while_a_check_failed_says_the_phase_is_not_ready(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    failed = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "failed"}, 1)
    wrong = gate_args(run, "plan", failed["event_ids"], 2, digest="sha256:" + "0" * 64)
    body = await router.refused("evaluate_gate", **wrong)
    assert body["code"] == "evidence-digest-mismatch"
    message = body["message"]
    assert message.startswith(
        "Phase plan is not ready: the latest event of plan-ready says failed, so the gate would"
        " fail (get_next_work); report it again once it passes"
    )
    assert message.index("not ready") < message.index("send the evidence_digest given here")
    passed = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 2)
    wrong = gate_args(run, "plan", passed["event_ids"], 3, digest="sha256:" + "0" * 64)
    body = await router.refused("evaluate_gate", **wrong)
    assert body["message"].startswith("expected_evidence_digest is not the digest")
