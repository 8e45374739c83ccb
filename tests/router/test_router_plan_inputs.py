"""plan_work arguments the schema lets through but that cannot mean what they say.

Tester findings: ``explicit_skill_ids [""]`` made a lock no proposal could ever name (their
schema's minLength 1), a skill named twice was deduplicated without a word, a plan's
envelope said single while a Profile rule gave it two work items, and a whitespace-only
objective was planned.
"""

from __future__ import annotations

import pytest
from profile_files import profile, write_workspace
from router_driver import ctx, plan_args


@pytest.mark.parametrize("blank", ["", "   ", "\u3000"])
async def test_a_blank_locked_skill_is_refused(router, blank):
    lock = {"explicit_skill_ids": ["skill:a", blank], "explicit_semantics": "use"}
    body = await router.refused("plan_work", **plan_args("Fix the typo", **lock))
    assert body["code"] == "invalid-arguments"
    [issue] = body["issues"]
    assert (issue["field"], issue["rule"]) == ("explicit_skill_ids[1]", "minLength")
    assert issue["message"].startswith("must name a skill: an empty or blank skill id")


async def test_a_skill_locked_twice_is_planned_once_with_a_warning(router):
    lock = {"explicit_skill_ids": ["skill:a", "skill:b", "skill:a"], "explicit_semantics": "use"}
    plan = await router.plan("Fix the typo", **lock)
    assert plan["planned_skill_ids"] == ["skill:a", "skill:b"]
    assert plan["profile_warnings"] == [
        "duplicate-explicit-skill: skill:a named more than once in explicit_skill_ids;"
        " each is planned once"
    ]


@pytest.fixture
def two_phase_rule(tmp_path, options):
    """An authorized workspace whose Profile rule has two phases and names no envelope."""
    options["router"]["workspace_roots"] = [str(tmp_path)]
    root = tmp_path / "repo"
    write_workspace(root, profile("team", skills=("skill:design", "skill:build")))
    return {"workspace_root": str(root), "domains": [], "tags": [], "current_phase_id": None}


async def test_requested_single_with_a_two_phase_rule_plans_one_phase(router, two_phase_rule):
    # The envelope said single while the rule's two phases made two work items.
    plan = await router.plan("Fix the typo", routing_context=two_phase_rule,
                             requested_work_mode="single")  # fmt: skip
    assert (plan["routing_envelope"], plan["created_work_items"]) == ("single", 1)
    assert [t["phase_id"] for t in plan["planned_skill_tree"]] == ["p1"]
    assert plan["planned_skill_ids"] == ["skill:design"]
    [warning] = plan["profile_warnings"]
    assert warning.startswith('single-work-mode: requested_work_mode "single" plans one phase, p1')
    at_p2 = {**two_phase_rule, "current_phase_id": "p2"}
    current = await router.plan("Fix the typo", routing_context=at_p2, requested_work_mode="single")
    item = (await router.next(current["workflow_run_id"]))["work_item"]
    assert (current["created_work_items"], item["phase_id"]) == (1, "p2")


async def test_a_classified_single_with_a_two_phase_rule_is_phased(router, two_phase_rule):
    plan = await router.plan("Fix the typo", routing_context=two_phase_rule)
    assert (plan["routing_envelope"], plan["created_work_items"]) == ("phased", 2)
    assert plan["classification"]["source"] == "profile-route"
    assert plan["profile_warnings"] == []


@pytest.mark.parametrize("objective", [" ", "\n\n", "\u3000 "])
async def test_a_whitespace_objective_is_refused(router, objective):
    body = await router.refused("plan_work", **plan_args(objective))
    assert body["code"] == "invalid-arguments"
    [issue] = body["issues"]
    assert (issue["field"], issue["rule"]) == ("objective", "minLength")
    assert issue["message"].startswith("must say what the work is: it holds only whitespace")


@pytest.mark.parametrize("blank", ["", "  ", "\u3000"])
async def test_a_blank_goal_binding_is_refused(router, blank):
    # Tester finding: goal_binding_id "" bound the run to a native Goal named "": no work
    # items, never progressed here or anywhere, listed as planned for good.
    body = await router.refused("plan_work", **plan_args("Fix the typo", goal_binding_id=blank))
    assert body["code"] == "invalid-arguments"
    [issue] = body["issues"]
    assert (issue["field"], issue["rule"]) == ("goal_binding_id", "minLength")
    assert issue["message"].startswith("must name a native Goal: an empty or blank id")
    assert "send null for a Router-owned plan" in issue["message"]
    status = await router.call("get_router_status", context=ctx(), workflow_run_id=None,
                               goal_binding_id=None)  # fmt: skip
    assert status["created_work_items"] == 0  # nothing was planned


@pytest.mark.parametrize("blank", ["", " "])
async def test_a_blank_goal_filter_is_refused_in_both_scopes(router, blank):
    # Tester finding: "" filtered a run's status (matching nothing) but not the session's
    # (listing every run): the same value read two ways.
    run = (await router.plan("Fix the typo"))["workflow_run_id"]
    for scope in (run, None):
        body = await router.refused("get_router_status", context=ctx(), workflow_run_id=scope,
                                    goal_binding_id=blank)  # fmt: skip
        assert body["code"] == "invalid-arguments"
        [issue] = body["issues"]
        assert (issue["field"], issue["rule"]) == ("goal_binding_id", "minLength")
        assert issue["message"].endswith(
            "send null for no Goal filter (every run of the session, or the run named)"
        )


async def test_a_null_goal_filter_lists_every_run_and_marks_a_goal_bound_one(router):
    # Tester finding: the blank-id refusal said null "filters by no Goal" (a Router-owned run
    # is bound to none), but null lists the Goal-bound runs too, unmarked, as runs to work on.
    owned = (await router.plan("Fix the typo"))["workflow_run_id"]
    bound = (await router.plan("Add retry", goal_binding_id="goal-1"))["workflow_run_id"]
    status = await router.call("get_router_status", context=ctx(), workflow_run_id=None,
                               goal_binding_id=None)  # fmt: skip
    note = status.guidance
    assert "(2 in all)" in note
    assert f"{bound} (status planned, state version 1, 0 work items, created " in note
    assert note.split(f"{bound} (")[1].split(")")[0].endswith(', bound to the native Goal "goal-1"')
    assert "Goal" not in note.split(f"{owned} (")[1].split(")")[0]
    assert note.endswith(
        "; a run bound to a native Goal is progressed only by the host that owns the Goal,"
        " not by get_next_work here."
    )


async def test_a_goal_bound_plan_says_how_to_plan_a_run_this_server_progresses(router):
    # Tester finding: a model filling goal_binding_id with a task name got "planned" and
    # "cannot be progressed here", and the way out only from a later get_next_work refusal.
    plan = await router.plan("Add retry logic", goal_binding_id="add-retry-logic")
    note = plan.guidance.splitlines()[-1]
    assert "send plan_work again with goal_binding_id null, a new idempotency_key" in note


async def test_a_builtin_phased_plan_says_the_listed_steps_are_not_its_items(
    router, two_phase_rule
):
    # Tester finding: five numbered steps made the plan phased, with the builtin plan,
    # implement and verify, and nothing said the docs and release steps had no phase.
    steps = "1. Design it\n2. Implement it\n3. Write tests\n4. Update the docs\n5. Release it"
    plan = await router.plan(steps)
    assert plan["created_work_items"] == 3
    assert "enumerated-steps" in plan["classification"]["reason_codes"]
    assert plan.guidance.splitlines()[0] == (
        "Phases: plan, implement, verify, the builtin phased plan's: the steps the objective"
        " lists are not work items of their own (do them within these phases). Only a Profile"
        " defines other phases (docs/router-profiles.md)."
    )
    ruled = await router.plan(steps, routing_context=two_phase_rule)  # a Profile's phases
    single = await router.plan("Fix the typo")  # one phase: nothing to say
    assert "the builtin" not in ruled.guidance + single.guidance


async def test_a_builtin_plan_names_listed_steps_only_when_the_objective_lists_some(router):
    # Tester 6 finding: "the steps the objective lists" was said of "Fix the typo" planned
    # phased by requested_work_mode, and of a managed-goal objective that lists nothing.
    hinted = await router.plan("Fix the typo", requested_work_mode="phased")
    assert hinted.guidance.splitlines()[0] == (
        "Phases: plan, implement, verify, the builtin phased plan's. Only a Profile defines"
        " other phases (docs/router-profiles.md)."
    )
    managed = await router.plan("Migrate the whole billing system",
                                requested_work_mode="managed-goal")  # fmt: skip
    first = managed.guidance.splitlines()[0]
    assert first.startswith("Phases: scope, milestone-1, milestone-2, integrate, the builtin")
    assert "the steps the objective lists" not in first
