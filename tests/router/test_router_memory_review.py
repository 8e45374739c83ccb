"""What the Memory tools answer an agent that reviews candidates after approving one.

Tester findings (a coding agent over the official SDK, stdio and HTTP): an approved rule still
in force vanished from list_workflow_candidates after one ``corrected`` or ``rejected``
feedback on a run it planned (its metrics missed the thresholds), and a preview of it answered
not-found; a proposal previewed before another approval was not-found rather than drifted;
purges reported 0 for the rejections, revisions and Profiles they deleted; feedback refusals
did not name the root, run or route to send; a rollback's not-found text listed the current
revision; transitions said nothing of what changed; the personal scope's list said "this
workspace".
"""

from __future__ import annotations

import pytest
from memory_support import run_of, status
from router_driver import ctx
from test_router_guidance import texts
from test_router_memory_answers import (
    approve,
    approved_pair,
    listed,
    preview,
    record,
    rollback,
    run_once,
)


async def feedback(router, runtime, root, remembered, kind):
    """Record feedback ``kind`` (``corrected`` or ``rejected``) on the run ``remembered``."""
    run = await run_of(runtime, remembered["observation_id"])
    routes = {"original_route_digest": None, "corrected_route_digest": None,
              "correction_dimensions": []}  # fmt: skip
    if kind == "corrected":
        routes = {"original_route_digest": remembered["route_signature_digest"],
                  "corrected_route_digest": "sha256:" + "c" * 64,
                  "correction_dimensions": ["primary-skill"]}  # fmt: skip
    said = await router.call(
        "record_route_feedback", context=ctx(), correlation_id="c", idempotency_key="fb-" + kind,
        workspace_root=str(root), workflow_run_id=run, observation_id=remembered["observation_id"],
        feedback_type=kind, reason_code="user-correction", **routes,
    )  # fmt: skip
    assert said["status"] == "recorded"


async def approved_web(router, runtime, root):
    """The web candidate, approved: the candidate as listed and the approval's answer."""
    await record(router, runtime, root, "web")
    (candidate,) = (await listed(router, root))["candidates"]
    proposal = (await preview(router, root, candidate["candidate_id"]))["proposal"]
    applied = await approve(router, root, proposal)
    assert applied["status"] == "applied"
    return candidate, applied


@pytest.mark.parametrize("kind", ["corrected", "rejected"])
async def test_an_approved_rule_in_force_stays_listed_when_its_evidence_lapses(
    router, runtime, workspace, kind
):
    candidate, applied = await approved_web(router, runtime, workspace)
    remembered = await run_once(router, workspace, "web")  # planned by the approved rule
    await feedback(router, runtime, workspace, remembered, kind)
    answer = await listed(router, workspace, "approved")
    (after,) = answer["candidates"]
    assert (after["candidate_id"], after["status"]) == (candidate["candidate_id"], "approved")
    metrics = after["metrics"]
    if kind == "corrected":
        assert metrics["manual_correction_rate"] == 0.25
    else:
        assert metrics["hard_contract_violations"] == 1
    note = texts(await listed(router, workspace))[-1]
    assert f"Candidate {candidate['candidate_id']} is approved" in note
    assert "no longer meets the reviewed thresholds" in note
    assert "rollback_profile_revision" in note
    assert "managed-profiles-only" in note
    assert "that are not candidates" not in note
    unmet = ("corrections (runs with corrected feedback) 0.25 (> 0.20)" if kind == "corrected"
             else "no rejected feedback (it has 1)")  # fmt: skip
    assert f"(it misses {unmet})" in note
    again = await preview(router, workspace, candidate["candidate_id"])
    assert (again["status"], again["reason_codes"]) == ("blocked", ["candidate-not-proposed"])
    assert applied["revision_id"] in texts(again)[-1]


async def test_a_proposal_previewed_before_another_approval_is_refused_as_drift(
    router, runtime, workspace
):
    await record(router, runtime, workspace, "web")
    await record(router, runtime, workspace, "db")
    first, second = (await listed(router, workspace))["candidates"]
    p1 = (await preview(router, workspace, first["candidate_id"]))["proposal"]
    p2 = (await preview(router, workspace, second["candidate_id"]))["proposal"]
    applied = await approve(router, workspace, p1)
    assert applied["status"] == "applied"
    stale = await approve(router, workspace, p2)
    assert (stale["status"], stale["reason_codes"]) == ("blocked", ["profile-drift"])
    note = texts(stale)[-1]
    assert f"previewed against the managed-personal Profile {p2['expected_profile_digest']}" in note
    assert f"digest {p1['proposed_profile_digest']}" in note
    assert "Call preview_profile_update for the candidate again" in note
    fresh = (await preview(router, workspace, second["candidate_id"]))["proposal"]
    assert (await approve(router, workspace, fresh))["status"] == "applied"
    # an id no preview ever made is still not found
    unknown = await approve(router, workspace, {**p2, "proposal_id": "proposal:" + "0" * 32},
                            idempotency_key="t-unknown")  # fmt: skip
    assert (unknown["status"], unknown["reason_codes"]) == (
        "not-found", ["profile-proposal-not-found"]
    )  # fmt: skip


async def purge(router, root, scope, include=False):
    """A confirmed purge of ``scope`` on the current summary digest; its text block."""
    current = (await status(router, root))["history_summary_digest"]
    purged = await router.call("purge_workflow_memory", context=ctx(), scope=scope,
                               confirmed=True, expected_summary_digest=current,
                               include_managed_profiles=include, idempotency_key=f"p-{scope}",
                               correlation_id="c")  # fmt: skip
    assert purged["status"] == "purged"
    return texts(purged)[-1]


async def test_a_purge_counts_every_kind_it_deletes(router, runtime, workspace):
    (_p1, rev1), (p2, rev2) = await approved_pair(router, runtime, workspace)  # 2 revisions
    said = await purge(router, workspace, "revisions-only")
    assert "0 observations, 0 feedback entries, 0 command receipts, 0 rejections" in said
    assert "1 managed Profile revision (0 automatic promotions among them)" in said
    assert "0 managed Profiles deleted whole" in said
    gone = await rollback(router, workspace, rev1["revision_id"], p2["proposed_profile_digest"])
    assert gone["reason_codes"] == ["rollback-source-revision-unavailable"]
    assert rev2["revision_id"] not in texts(gone)[-1]  # the current one: no rollback target
    assert "nothing to roll back to" in texts(gone)[-1]
    said = await purge(router, workspace, "managed-profiles-only")
    assert "1 managed Profile revision (0 automatic" in said
    assert "and 1 managed Profile deleted whole" in said


async def test_a_purge_counts_rejections_and_profiles(router, runtime, workspace):
    await record(router, runtime, workspace, "web")
    (candidate,) = (await listed(router, workspace))["candidates"]
    proposal = (await preview(router, workspace, candidate["candidate_id"]))["proposal"]
    rejected = await approve(router, workspace, proposal, action="reject", idempotency_key="r")
    assert rejected["status"] == "rejected"
    said = await purge(router, workspace, "candidates-only")
    assert "1 rejection (each suppressing a candidate)" in said
    await approved_web(router, runtime, workspace)
    said = await purge(router, workspace, "all-memory-data", include=True)
    assert "6 observations, 0 feedback entries" in said
    assert "1 managed Profile revision" in said
    assert "1 managed Profile deleted whole" in said


async def test_feedback_refusals_name_the_root_the_run_and_the_route(router, runtime, workspace):
    seen = await run_once(router, workspace, "web")
    run = await run_of(runtime, seen["observation_id"])
    args = {"context": ctx(), "correlation_id": "c", "workspace_root": None,
            "idempotency_key": "fb-x", "workflow_run_id": run,
            "observation_id": seen["observation_id"], "feedback_type": "accepted",
            "reason_code": "user-accepted", "correction_dimensions": [],
            "original_route_digest": None, "corrected_route_digest": None}  # fmt: skip
    elsewhere = await router.refused("record_route_feedback", **args)
    assert elsewhere["code"] == "workflow-context-mismatch"
    assert f'planned under the workspace_root "{workspace}"' in elsewhere["message"]
    other = await router.refused("record_route_feedback",
                                 **{**args, "workflow_run_id": "run-" + "0" * 32})  # fmt: skip
    assert f"is of run {run}" in other["message"]
    assert f"send workflow_run_id {run}" in other["message"]
    unbound = await router.refused("record_route_feedback", **{
        **args, "workspace_root": str(workspace), "feedback_type": "corrected",
        "correction_dimensions": ["primary-skill"]})  # fmt: skip
    assert unbound["code"] == "correction-unbound"
    assert "original_route_digest the observation's route_signature_digest" in unbound["message"]


async def test_transitions_and_a_failing_rollback_backtest_say_what_they_mean(
    router, runtime, workspace
):
    (_p1, rev1), (p2, rev2) = await approved_pair(router, runtime, workspace)
    assert texts(rev2)[-1] == (
        f"Applied: {rev2['revision_id']} is now revision 2 of the managed-personal Profile,"
        f" digest {p2['proposed_profile_digest']}; plan_work routes matching work by it from"
        " now on. rollback_profile_revision proposes to restore an earlier revision."
    )
    pending = await rollback(router, workspace, rev1["revision_id"], p2["proposed_profile_digest"])
    assert pending["proposal"]["backtest"]["acceptable"] is False
    assert "a rollback's backtest does not block its approval" in texts(pending)[-1]
    closed = await approve(router, workspace, pending["proposal"], action="reject")
    assert texts(closed)[-1] == (
        "Rejected: the rollback proposal is closed; the Profile is unchanged."
    )  # fmt: skip


async def test_a_rejected_candidate_is_said_suppressed(router, runtime, workspace):
    await record(router, runtime, workspace, "web")
    (candidate,) = (await listed(router, workspace))["candidates"]
    proposal = (await preview(router, workspace, candidate["candidate_id"]))["proposal"]
    rejected = await approve(router, workspace, proposal, action="reject")
    assert f"candidate {candidate['candidate_id']} is suppressed for 180 days" in (
        texts(rejected)[-1]
    )  # fmt: skip


async def test_the_personal_scope_list_says_personal_scope(router, workspace):
    personal = await router.call("list_workflow_candidates", context=ctx(), limit=10,
                                 workspace_root=None, status=None)  # fmt: skip
    assert texts(personal)[-1].startswith(
        "No candidates: no workflow of the personal scope is remembered yet"
    )
