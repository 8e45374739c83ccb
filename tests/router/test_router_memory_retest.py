"""Memory answers a re-tester found wrong after the first round of fixes.

Findings (a coding agent over the official SDK): a feedback resent after an analytics-only
purge replayed ``recorded`` for feedback no longer stored; a rollback refused for restoring the
current Profile listed, as revisions to send instead, the current one and one holding the same
Profile; an approved first revision's candidate was told to roll back to an earlier revision; a
rollback asked again after a new run kept the first answer's proposal, so a transition called
the newer digest stale and asked for the older one; a purge blocked on a stale digest, and
a remember of a run not completed or not found, said nothing of what to do; "1 days"; a
candidate a correction disqualified left a list that was not empty without a word; feedback
naming no workspace (or another) on a workspace's observation was recorded.
"""

from __future__ import annotations

from memory_support import remember_args, run_of, status
from router_driver import ctx
from test_router_guidance import texts
from test_router_memory_answers import (
    approve,
    approved_pair,
    corrected,
    listed,
    preview,
    record,
    rollback,
    run_once,
)


async def feedback_rows(runtime):
    return await runtime.read(
        lambda c: c.execute("SELECT COUNT(*) FROM router_memory_feedback").fetchone()[0]
    )


async def test_a_feedback_resent_after_an_analytics_purge_records_it_again(
    router, runtime, workspace, nursery, options
):
    from router_driver import Router

    from agora.runtime.clock import Clock, FakeWall
    from agora.runtime.registry import Runtime

    seen = await run_once(router, workspace, "web")
    run = await run_of(runtime, seen["observation_id"])
    args = {"context": ctx(), "correlation_id": "c", "workspace_root": str(workspace),
            "idempotency_key": "fb-1", "workflow_run_id": run,
            "observation_id": seen["observation_id"], "feedback_type": "accepted",
            "reason_code": "user-accepted", "correction_dimensions": [],
            "original_route_digest": None, "corrected_route_digest": None}  # fmt: skip
    first = await router.call("record_route_feedback", **args)
    assert first["status"] == "recorded"
    digest = (await status(router, workspace))["history_summary_digest"]
    purged = await router.call("purge_workflow_memory", context=ctx(), scope="analytics-only",
                               confirmed=True, include_managed_profiles=False,
                               expected_summary_digest=digest, idempotency_key="p",
                               correlation_id="c")  # fmt: skip
    assert (purged["deleted_feedback"], await feedback_rows(runtime)) == (1, 0)
    again = await router.call("record_route_feedback", **args)
    assert (again["status"], again["replayed"]) == ("recorded", False)  # not a stale replay
    assert again["feedback_id"] == first["feedback_id"]
    assert await feedback_rows(runtime) == 1
    assert (await router.call("record_route_feedback", **args))["replayed"] is True
    fresh = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall()), options=options))
    # the feedback ids reloaded from the store let the new receipt replay
    assert await fresh.call("record_route_feedback", **args) == {**again, "replayed": True}


async def test_a_refused_rollback_lists_only_the_revisions_it_would_accept(
    router, runtime, workspace
):
    (_p1, rev1), (p2, rev2) = await approved_pair(router, runtime, workspace)
    pending = await rollback(router, workspace, rev1["revision_id"], p2["proposed_profile_digest"])
    rev3 = await approve(router, workspace, pending["proposal"])
    assert rev3["status"] == "applied"  # revision 3 holds revision 1's Profile
    current = pending["proposal"]["proposed_profile_digest"]
    for source in (rev3, rev1):
        same = await rollback(router, workspace, source["revision_id"], current,
                              key=source["revision_id"])  # fmt: skip
        assert same["reason_codes"] == ["rollback-source-revision-unavailable"]
        note = texts(same)[-1]
        assert f"({'revision 2: ' + rev2['revision_id']})." in note
        assert "revision 3:" not in note
        assert "revision 1:" not in note


async def test_a_first_revision_has_nothing_to_roll_back_to(router, runtime, workspace):
    await record(router, runtime, workspace, "web")
    (candidate,) = (await listed(router, workspace))["candidates"]
    proposal = (await preview(router, workspace, candidate["candidate_id"]))["proposal"]
    rev1 = await approve(router, workspace, proposal)
    again = await preview(router, workspace, candidate["candidate_id"])
    assert "nothing to roll back to" in texts(again)[-1]
    assert "an earlier revision" not in texts(again)[-1]
    same = await rollback(router, workspace, rev1["revision_id"],
                          proposal["proposed_profile_digest"])  # fmt: skip
    note = texts(same)[-1]
    assert "there is nothing to roll back to" in note
    assert "revision 1:" not in note


async def test_a_rollback_asked_again_keeps_the_latest_proposal(
    router, runtime, workspace, nursery, options
):
    from router_driver import Router

    from agora.runtime.registry import Runtime

    (_p1, rev1), (p2, _rev2) = await approved_pair(router, runtime, workspace)
    current = p2["proposed_profile_digest"]
    first = await rollback(router, workspace, rev1["revision_id"], current, key="rb5")
    await run_once(router, workspace, "web")
    second = await rollback(router, workspace, rev1["revision_id"], current, key="rb6")
    old, new = first["proposal"], second["proposal"]
    assert old["proposal_id"] == new["proposal_id"]
    assert old["proposal_digest"] != new["proposal_digest"]  # one more run in its backtest
    fresh = Router(Runtime(runtime.store, nursery, clock=runtime.clock, options=options))
    stale = await approve(fresh, workspace, old)  # reloaded from the store: the newer one
    assert stale["reason_codes"] == ["profile-preview-stale"]
    assert new["proposal_digest"] in texts(stale)[-1]
    assert (await approve(fresh, workspace, new))["status"] == "applied"


async def test_blocked_purges_and_unrecorded_runs_say_what_to_do(router, runtime, workspace):
    seen = await run_once(router, workspace, "web")
    note = texts(await listed(router, workspace))[-1]
    assert "1 run (< 3)" in note
    assert "1 day (< 2)" in note
    digest = (await status(router, workspace))["history_summary_digest"]
    await run_once(router, workspace, "web")
    stale = await router.call("purge_workflow_memory", context=ctx(), scope="analytics-only",
                              confirmed=True, include_managed_profiles=False,
                              expected_summary_digest=digest, idempotency_key="p",
                              correlation_id="c")  # fmt: skip
    assert stale["reason_codes"] == ["stale-summary-digest"]
    note = texts(stale)[-1]
    assert "Call get_memory_status again" in note
    assert "history_summary_digest" in note
    assert stale["summary_digest_before"] in note
    routing = {"workspace_root": str(workspace), "domains": ["web"], "tags": [],
               "current_phase_id": None}  # fmt: skip
    run = (await router.plan("Fix the typo", routing_context=routing))["workflow_run_id"]
    open_run = await router.call("remember_workflow", **remember_args(run, workspace))
    assert open_run["reason_codes"] == ["workflow-not-completed", "required-gate-not-passed"]
    assert "every phase's exit gate must pass" in texts(open_run)[-1]
    missing = await router.call("remember_workflow",
                                **remember_args(seen["observation_id"], workspace))  # fmt: skip
    assert missing["reason_codes"] == ["workflow-run-not-found"]
    assert "names no run of this session" in texts(missing)[-1]


async def test_a_candidate_dropping_out_of_a_list_is_named_with_its_reason(
    router, runtime, workspace
):
    await record(router, runtime, workspace, "db")
    for n in range(3):
        await run_once(router, workspace, "web")
        if n == 0:
            runtime.clock.wall_source.advance(86400)
    builtin = await run_once(router, workspace, "web", skill=None)
    full = await listed(router, workspace)
    assert len(full["candidates"]) == 2
    assert len(texts(full)) == 1  # every pattern is a candidate: no second text block
    await corrected(router, runtime, workspace, builtin)
    left = await listed(router, workspace)
    assert len(left["candidates"]) == 1
    note = texts(left)[-1]
    assert "that are not candidates: 4 runs (single, managed-personal, domains [web]" in note
    assert "corrections (runs with corrected feedback) 0.25 (> 0.20)" in note
    assert "domains [db]" not in note


async def test_feedback_names_the_workspace_its_observation_was_remembered_in(
    router, runtime, workspace
):
    seen = await run_once(router, workspace, "web")
    run = await run_of(runtime, seen["observation_id"])
    args = {"context": ctx(), "correlation_id": "c", "workspace_root": None,
            "idempotency_key": "fb-x", "workflow_run_id": run,
            "observation_id": seen["observation_id"], "feedback_type": "accepted",
            "reason_code": "user-accepted", "correction_dimensions": [],
            "original_route_digest": None, "corrected_route_digest": None}  # fmt: skip
    refused = await router.refused("record_route_feedback", **args)
    assert refused["code"] == "workflow-context-mismatch"
    assert "remembered in another workspace" in refused["message"]
    assert await feedback_rows(runtime) == 0
    args["workspace_root"] = str(workspace)
    assert (await router.call("record_route_feedback", **args))["status"] == "recorded"
