"""Support consent: proposals on explicit-locked plans, decisions, and every stale field."""

from __future__ import annotations

import pytest
from router_driver import FINGERPRINT, ctx, key

OTHER = "sha256:" + "cd" * 32


async def locked_plan(router, **kw):
    return await router.plan("1. design\n2. build", explicit_skill_ids=["skill:lead"],
                             explicit_semantics="only", **kw)  # fmt: skip


def proposal_args(plan, version=1, **over):
    args = {
        "context": ctx(), "workflow_run_id": plan["workflow_run_id"], "phase_id": "plan",
        "primary_skill_id": "skill:lead", "support_skill_ids": ["skill:a", "skill:b"],
        "scope_anchor_id": "anchor-1", "goal_revision": None, "plan_revision": 1,
        "context_fingerprint": FINGERPRINT, "expected_state_version": version,
        "idempotency_key": key("prop"), "correlation_id": "c",
    }  # fmt: skip
    return {**args, **over}


def transition_args(proposal, version, action="approve", **over):
    args = {
        "context": ctx(), "proposal_id": proposal["proposal_id"], "action": action,
        "current_phase_id": "plan", "current_scope_anchor_id": "anchor-1",
        "current_goal_revision": None, "current_plan_revision": 1,
        "current_context_fingerprint": FINGERPRINT, "expected_state_version": version,
        "idempotency_key": key("decide"), "correlation_id": "c",
    }  # fmt: skip
    return {**args, **over}


@pytest.mark.parametrize("action", ["approve", "reject"])
async def test_a_proposal_is_decided_once(router, action):
    plan = await locked_plan(router)
    proposal = await router.call("propose_support_consent", **proposal_args(plan))
    assert proposal["status"] == proposal["consent_action"] == "proposal-required"
    assert proposal["support_skills"] == ["skill:a", "skill:b"]
    assert proposal["state_version"] == 2
    args = transition_args(proposal, 2, action)
    decided = await router.call("transition_support_consent", **args)
    assert decided["status"] == ("approved" if action == "approve" else "rejected")
    assert decided["decision_ref"] is not None
    assert decided["state_version"] == 3
    replay = await router.call("transition_support_consent", **args)
    assert replay == {**decided, "replayed": True}
    flip = "reject" if action == "approve" else "approve"
    body = await router.refused("transition_support_consent",
                                **transition_args(proposal, 3, flip))  # fmt: skip
    assert body["code"] == "proposal-already-decided"
    # It said only "the proposal is already approved": what to do next, too.
    assert body["message"].endswith("propose a new set (propose_support_consent) and decide that")


@pytest.mark.parametrize(
    ("field", "value", "stale"),
    [
        ("current_phase_id", "implement", "phase"),
        ("current_scope_anchor_id", "anchor-2", "scope_anchor"),
        ("current_goal_revision", 4, "goal_revision"),
        ("current_plan_revision", 2, "plan_revision"),
        ("current_context_fingerprint", OTHER, "context_fingerprint"),
    ],
)
async def test_every_stale_field_fails_closed_and_is_audited(router, runtime, field, value, stale):
    plan = await locked_plan(router)
    proposal = await router.call("propose_support_consent", **proposal_args(plan))
    body = await router.refused("transition_support_consent",
                                **transition_args(proposal, 2, **{field: value}))  # fmt: skip
    assert body["code"] == "consent-stale"
    assert body["stale_fields"] == [stale]
    assert f"({stale} changed since it was made)" in body["message"]
    assert "propose again for the current scope" in body["message"]
    rows = await runtime.read(
        lambda c: c.execute("SELECT refusal, stale_json FROM router_consent_audit").fetchall()
    )
    assert [tuple(r) for r in rows] == [("consent-stale", f'["{stale}"]')]
    still = await router.call("transition_support_consent", **transition_args(proposal, 2))
    assert still["status"] == "approved"  # the refusal changed nothing


async def test_a_completed_phase_makes_its_proposal_stale(router):
    plan = await locked_plan(router)
    run = plan["workflow_run_id"]
    proposal = await router.call("propose_support_consent", **proposal_args(plan))
    ev = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 2)
    await router.gate(run, "plan", ev["event_ids"], 3)
    body = await router.refused("transition_support_consent", **transition_args(proposal, 4))
    assert body["stale_fields"] == ["phase"]


@pytest.mark.parametrize(
    ("over", "code", "said"),
    [
        # Each refusal names what was wrong (they said "phase and primary skill must be the
        # plan's" and "1-3 distinct skills, not the primary", naming nothing).
        ({"primary_skill_id": "skill:other"}, "route-mismatch",
         "the primary skill of phase 'plan' is 'skill:lead', not 'skill:other': send"
         " 'skill:lead' as primary_skill_id"),
        ({"phase_id": "nowhere"}, "route-mismatch",
         "the plan has no phase 'nowhere' (its phases: plan, implement"),
        ({"support_skill_ids": ["skill:a", "skill:a"]}, "invalid-support-skills",
         "'skill:a' named twice"),
        ({"support_skill_ids": ["skill:lead"]}, "invalid-support-skills",
         "'skill:lead' is the phase's primary skill"),
        ({"plan_revision": 2}, "stale-plan-revision", "the plan is at 1"),
        # A proposal is scoped to the current phase: a later one was accepted.
        ({"phase_id": "implement"}, "phase-not-ready",
         "phase 'implement' waits for earlier phases whose exit gates have not passed: 'plan'"),
        ({"goal_revision": 1}, "goal-revision-mismatch",
         "goal_revision is 1, but this plan is bound to no native Goal: send goal_revision null"),
        ({"expected_state_version": 0}, "state-version-conflict", "the run is at 1"),
    ],
)  # fmt: skip
async def test_a_proposal_must_bind_the_current_route(router, over, code, said):
    plan = await locked_plan(router)
    body = await router.refused("propose_support_consent", **proposal_args(plan, **over))
    assert body["code"] == code
    assert said in body["message"]


async def test_proposals_need_an_explicit_locked_plan(router):
    plan = await router.plan("1. design\n2. build")
    body = await router.refused("propose_support_consent", **proposal_args(plan))
    assert body["code"] == "capability-unavailable"
    assert body["required_capabilities"] == ["explicit-skill-plan"]
    assert body["reason"] == "plan-not-explicit-locked"
    # Not the contract's fallback, "Persist a Phase-scoped support proposal ...": the very
    # call refused. It says how to get a plan that takes one.
    assert "Persist" not in body["fallback_action"]
    assert "explicit_skill_ids" in body["fallback_action"]
    assert 'explicit_semantics "use" or "only"' in body["fallback_action"]


@pytest.mark.parametrize("proposal_id", ["nope", "run-0123/proposal-4567"])
async def test_an_unknown_proposal_is_refused(router, proposal_id):
    body = await router.refused("transition_support_consent",
                                **transition_args({"proposal_id": proposal_id}, 1))  # fmt: skip
    assert body["code"] == "proposal-not-found"
    assert body["message"].startswith(f"no proposal {proposal_id!r} in your runs")


async def test_an_approved_support_set_is_the_work_items_supports(router, runtime, nursery):
    from router_driver import Router

    from agora.runtime.clock import Clock, FakeWall
    from agora.runtime.registry import Runtime

    plan = await locked_plan(router)
    run = plan["workflow_run_id"]
    rejected = await router.call("propose_support_consent",
                                 **proposal_args(plan, support_skill_ids=["skill:x"]))  # fmt: skip
    await router.call("transition_support_consent", **transition_args(rejected, 2, "reject"))
    assert (await router.next(run))["work_item"]["support_skill_ids"] == []
    first = await router.call("propose_support_consent", **proposal_args(plan, version=3))
    assert (await router.next(run))["work_item"]["support_skill_ids"] == []  # not yet decided
    await router.call("transition_support_consent", **transition_args(first, 4))
    item = (await router.next(run))["work_item"]
    assert item["phase_id"] == "plan"
    assert item["support_skill_ids"] == ["skill:a", "skill:b"]
    # A later approved set for the phase replaces the earlier one (one concrete set each).
    later_args = proposal_args(plan, version=5, support_skill_ids=["skill:c"])
    later = await router.call("propose_support_consent", **later_args)
    await router.call("transition_support_consent", **transition_args(later, 6))
    assert (await router.next(run))["work_item"]["support_skill_ids"] == ["skill:c"]
    # Kept in the store: another server reading the run sees the same.
    other = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall())))
    assert (await other.next(run))["work_item"]["support_skill_ids"] == ["skill:c"]


async def test_approvals_an_older_server_kept_only_on_the_proposal_reach_the_work_items(
    tmp_path, nursery
):
    from router_driver import Router

    from agora.runtime.clock import Clock, FakeWall
    from agora.runtime.registry import Runtime
    from agora.store.db import open_store
    from agora.toolsets.router.sql import MIGRATIONS

    path, wall = tmp_path / "old.db", FakeWall()
    async with open_store(path, MIGRATIONS[:5]) as old:  # router schema 5
        runtime = Runtime(old, nursery, clock=Clock(wall))
        router = Router(runtime)
        plan = await locked_plan(router)
        run = plan["workflow_run_id"]

        async def consent(version, skills, action="approve", phase="plan"):
            args = proposal_args(plan, version, phase_id=phase, support_skill_ids=skills)
            proposal = await router.call("propose_support_consent", **args)
            if action is not None:
                decide = transition_args(proposal, version + 1, action, current_phase_id=phase)
                await router.call("transition_support_consent", **decide)

        wall.advance(10)
        await consent(1, ["skill:a", "skill:b"])
        wall.advance(-5)  # the wall clock stepped back: the later approval still wins
        await consent(3, ["skill:c"])
        await consent(5, ["skill:x"], "reject")
        await consent(7, ["skill:y"], None)  # undecided
        ev = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 8)
        await router.gate(run, "plan", ev["event_ids"], 9)
        await consent(10, ["skill:d"], phase="implement")  # a proposal is for the current phase
        # What a server older than approvals writing the work item left: the sets only on
        # the proposals.
        await old.write([("UPDATE router_work_items SET support_json = '[]'", ())])
        runtime.begin_shutdown()
    async with open_store(path, MIGRATIONS) as st:  # router schema 6 back-fills them
        runtime = Runtime(st, nursery, clock=Clock(FakeWall()))
        router = Router(runtime)
        item = (await router.next(run))["work_item"]
        assert (item["phase_id"], item["support_skill_ids"]) == ("implement", ["skill:d"])
        supports = "SELECT phase_id, support_json FROM router_work_items ORDER BY seq"
        rows = await runtime.read(lambda c: c.execute(supports).fetchall())
        assert [tuple(r) for r in rows] == [
            ("plan", '["skill:c"]'), ("implement", '["skill:d"]'), ("verify", "[]")
        ]  # fmt: skip
        runtime.begin_shutdown()
