"""Automatic-managed promotion: done by the Memory upkeep only when the policy allows it."""

from __future__ import annotations

import json

import pytest
from memory_support import remember_args
from profile_files import profile
from router_driver import ctx
from test_router_previews import transition

from agora.toolsets.router import promotion

ROUTING = {"workspace_root": None, "domains": ["web"], "tags": [], "current_phase_id": None}


def policy(tmp_path, options, promotion_mode, targets=("managed-personal",)):
    path = tmp_path / "memory-policy.json"
    path.write_text(json.dumps({
        "format": "agora-router-memory-policy/1", "ceiling": "automatic",
        "profile_promotion": promotion_mode, "allowed_targets": list(targets),
    }))  # fmt: skip
    options["router"]["memory_policy"] = str(path)
    # The routes come from the user's personal Profile (a route with skills, not a lock).
    personal = tmp_path / "personal-profile.json"
    personal.write_text(json.dumps(profile("mine", domains=("web",), skills=("skill:lead",))))
    options["router"]["personal_profile"] = str(personal)


async def record(router, runtime, runs=5, lock=False, target="managed-personal"):
    """``runs`` personal-scope workflows on 3 days (two, two, then the rest)."""
    explicit = {"explicit_skill_ids": ["skill:lead"], "explicit_semantics": "use"} if lock else {}
    phase, check = ("work", "work-done") if lock else ("p1", "c1")
    for n in range(runs):
        run = (await router.plan("Fix the typo", routing_context=ROUTING, **explicit))[
            "workflow_run_id"
        ]
        ev = await router.event(run, phase, {"check_id": check, "outcome": "passed"}, 1)
        await router.gate(run, phase, ev["event_ids"], 2)
        args = remember_args(run, None, workspace_root=None, target_profile_class=target)
        assert (await router.call("remember_workflow", **args))["status"] == "recorded"
        if n in (1, 3):
            runtime.clock.wall_source.advance(86400)


async def listed(router):
    found = await router.call("list_workflow_candidates", context=ctx(), limit=10,
                              workspace_root=None, status=None)  # fmt: skip
    return found["candidates"]


REVISIONS = "SELECT source FROM router_memory_revisions"


async def test_an_automatic_candidate_is_promoted_when_the_policy_allows(
    router, runtime, tmp_path, options
):
    policy(tmp_path, options, "automatic-managed")
    await record(router, runtime, runs=4)  # 4 runs: reviewed only, never promoted
    (reviewed,) = await listed(router)
    assert reviewed["recommendation_mode"] == "reviewed"
    assert await promotion.promote(runtime, "") == 0
    await record(router, runtime, runs=1)
    (candidate,) = await listed(router)
    assert (candidate["recommendation_mode"], candidate["status"]) == ("automatic", "proposed")
    assert candidate["metrics"]["distinct_runs"] == 5
    assert candidate["metrics"]["distinct_days"] == 3
    assert await promotion.promote(runtime, "") == 0  # the user's own Profile still routes it
    del options["router"]["personal_profile"]  # the user retires it: the managed one may take over
    await promotion.upkeep(runtime)  # what the background task runs
    rows = await runtime.read(lambda c: c.execute(REVISIONS).fetchall())
    assert [r[0] for r in rows] == ["auto:" + candidate["candidate_id"]]
    (promoted,) = await listed(router)
    assert promoted["status"] == "auto-promoted"
    assert promoted["candidate_id"] == candidate["candidate_id"]
    plan = await router.plan("Fix the typo", routing_context=ROUTING)
    assert plan["route_source"] == "managed-personal-profile"
    commits = runtime.store.stats
    assert await promotion.promote(runtime, "") == 0  # once only: no second write
    assert runtime.store.stats == commits


async def test_a_candidate_approved_on_review_is_not_promoted_again(
    router, runtime, tmp_path, options
):
    policy(tmp_path, options, "automatic-managed")
    await record(router, runtime, runs=4)
    del options["router"]["personal_profile"]
    (candidate,) = await listed(router)
    previewed = await router.call("preview_profile_update", context=ctx(), workspace_root=None,
                                  candidate_id=candidate["candidate_id"])  # fmt: skip
    applied = await router.call("transition_profile_update", **transition(previewed["proposal"]))
    assert applied["status"] == "applied"
    await record(router, runtime, runs=1)  # planned by the approved rule, on a third day
    (approved,) = await listed(router)
    assert (approved["status"], approved["recommendation_mode"]) == ("approved", "automatic")
    assert await promotion.promote(runtime, "") == 0  # its rule is in force already
    assert len(await runtime.read(lambda c: c.execute(REVISIONS).fetchall())) == 1


@pytest.mark.parametrize(
    ("mode", "lock", "target", "code"),
    [
        pytest.param("review-required", False, "managed-personal", "profile-promotion-disabled",
                     id="review-required"),
        pytest.param("automatic-managed", True, "managed-personal",
                     "explicit-route-requires-review", id="explicit-lock"),
        pytest.param("automatic-managed", False, "user-personal",
                     "automatic-user-profile-write-forbidden", id="user-owned-target"),
    ],
)  # fmt: skip
async def test_automatic_promotion_is_refused_when_the_policy_does_not_allow_it(
    router, runtime, tmp_path, options, mode, lock, target, code
):
    policy(tmp_path, options, mode, targets=("managed-personal", "user-personal"))
    await record(router, runtime, lock=lock, target=target)
    (candidate,) = await listed(router)
    assert candidate["recommendation_mode"] == "automatic"
    assert candidate["status"] == "proposed"
    assert code in candidate["reason_codes"]
    assert await promotion.promote(runtime, "") == 0
    assert await runtime.read(lambda c: c.execute(REVISIONS).fetchall()) == []
    (still,) = await listed(router)
    assert still == candidate
