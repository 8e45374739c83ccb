"""routing_context.current_phase_id: the planned intent and the next work item agree.

The contract: "only that Phase's Primary and immediate support become current intent". A plan
named the current phase's skills while get_next_work handed out the first phase, and an id that
is no phase of the plan was ignored without a word.
"""

from __future__ import annotations

import pytest
from profile_files import profile, write_workspace
from router_driver import FINGERPRINT, ctx, event_args, key

SKILLS = ("skill:design", "skill:build", "skill:check")


@pytest.fixture
def workspace(tmp_path, options):
    options["router"]["workspace_roots"] = [str(tmp_path)]
    root = tmp_path / "repo"
    write_workspace(root, profile("team", skills=SKILLS, support=("skill:lint",)))
    return root


def routing(root, current):
    return {
        "workspace_root": root and str(root),
        "domains": [],
        "tags": [],
        "current_phase_id": current,
    }


async def test_the_work_starts_at_the_current_phase(router, workspace):
    plan = await router.plan("Add a feature", routing_context=routing(workspace, "p2"))
    assert plan["planned_skill_ids"] == ["skill:build", "skill:lint"]
    assert [t["phase_id"] for t in plan["planned_skill_tree"]] == ["p1", "p2", "p3"]
    assert plan["created_work_items"] == 2
    assert plan["profile_warnings"] == []
    item = (await router.next(plan["workflow_run_id"]))["work_item"]
    assert (item["phase_id"], item["primary_skill_id"]) == ("p2", "skill:build")
    event = await router.event(plan["workflow_run_id"], "p2", {"check_id": "c2",
                                                               "outcome": "passed"}, 1)  # fmt: skip
    assert event["resulting_state_version"] == 2


async def test_an_unknown_current_phase_is_warned_about(router, workspace):
    plan = await router.plan("Add a feature", routing_context=routing(workspace, "nope"))
    assert plan["planned_skill_ids"] == [*SKILLS[:1], "skill:lint", *SKILLS[1:]]
    assert plan["created_work_items"] == 3
    [warning] = plan["profile_warnings"]
    assert warning.startswith("unknown-current-phase: routing_context.current_phase_id 'nope'")
    assert "(p1, p2, p3)" in warning
    item = (await router.next(plan["workflow_run_id"]))["work_item"]
    assert item["phase_id"] == "p1"

    assert warning.endswith("send one of the phases, or null")


async def test_a_rules_own_unplanned_match_phase_blames_the_file(router, workspace):
    """Tester finding (E): a rule whose match.phase names none of its phases matched the
    phase sent, and the second warning told the model to send another phase or null, next
    to the first's "fix the file": the phase sent was right, the file was not."""
    doc = profile("team", rule="deploy", skills=SKILLS)
    doc["rules"][0]["match"] = {"phase": "deploy"}
    write_workspace(workspace, doc)
    plan = await router.plan("Ship it", routing_context=routing(workspace, "deploy"))
    assert plan["matched_profile_rule_id"] == "team#deploy"
    unplanned, unknown = plan["profile_warnings"]
    assert unplanned.startswith("workspace-profile-rule-phase-unplanned: deploy:")
    assert unknown.startswith("unknown-current-phase: routing_context.current_phase_id 'deploy'")
    assert "the rule team#deploy matched it by its match.phase" in unknown
    assert "the workspace Profile file is at fault, not the phase sent" in unknown
    # The warning it points to, by its whole code (it was "-profile-rule-phase-unplanned").
    assert "its workspace-profile-rule-phase-unplanned warning says what to fix" in unknown
    assert "send one of the phases" not in unknown


LOCK = ["skill:a", "skill:b", "skill:c", "skill:x"]
SKIPPED = (
    ", which get no work item, so not planned; send routing_context.current_phase_id null,"
    " or an earlier phase, to plan them"
)


def proposal(plan, phase, primary):
    return {
        "context": ctx(), "workflow_run_id": plan["workflow_run_id"], "phase_id": phase,
        "primary_skill_id": primary, "support_skill_ids": ["skill:x"],
        "scope_anchor_id": "anchor-1", "goal_revision": None, "plan_revision": 1,
        "context_fingerprint": FINGERPRINT, "expected_state_version": 1,
        "idempotency_key": key("prop"), "correlation_id": "c",
    }  # fmt: skip


async def test_a_phase_before_the_current_one_takes_no_proposal_nor_event(router):
    """A consent for a phase the plan skipped could never be used: no work item holds it."""
    plan = await router.plan("Design it, then build it.", explicit_skill_ids=LOCK,
                             explicit_semantics="use", requested_work_mode="phased",
                             routing_context=routing(None, "verify"))  # fmt: skip
    assert plan["created_work_items"] == 1
    said = (
        "phase 'plan' is before 'verify', the current phase the plan started from"
        " (routing_context.current_phase_id), so it has no work item; its phases are 'verify'"
    )
    body = await router.refused("propose_support_consent", **proposal(plan, "plan", "skill:a"))
    assert (body["code"], body["phase_ids"]) == ("unknown-phase", ["verify"])
    assert body["message"].startswith(said)
    run = plan["workflow_run_id"]
    observation = {"check_id": "plan-ready", "outcome": "passed"}
    body = await router.refused("record_work_event", **event_args(run, "plan", observation, 1))
    assert (body["code"], body["message"].startswith(said)) == ("unknown-phase", True)
    body = await router.refused("record_work_event", **event_args(run, "nope", observation, 1))
    assert body["message"].startswith("the plan has no phase 'nope'; its phases are 'verify'")
    accepted = await router.call("propose_support_consent", **proposal(plan, "verify", "skill:c"))
    assert accepted["status"] == "proposal-required"


@pytest.mark.parametrize(
    ("semantics", "current", "planned", "left"),
    [
        ("all", "implement", ["skill:b"], "skill:a, skill:x locked in explicit_skill_ids are"
         " placed only in phases before the current phase 'implement' (plan)"),
        ("use", "verify", ["skill:c", "skill:x"], "skill:a, skill:b locked in explicit_skill_ids"
         " are placed only in phases before the current phase 'verify' (plan, implement)"),
        ("use", "plan", ["skill:a", "skill:x"], None),
    ],
)  # fmt: skip
async def test_a_lock_is_narrowed_to_the_current_phase(router, semantics, current, planned, left):
    """The current phase narrows a lock's planned intent too, and a locked skill that only a
    skipped phase held is named rather than silently dropped."""
    plan = await router.plan("Design it, then build it.", explicit_skill_ids=LOCK,
                             explicit_semantics=semantics, requested_work_mode="phased",
                             routing_context=routing(None, current))  # fmt: skip
    assert plan["planned_skill_ids"] == planned
    assert len(plan["planned_skill_tree"]) == 3
    if left is None:
        assert plan["profile_warnings"] == []
    else:
        [warning] = plan["profile_warnings"]
        assert warning == f"explicit-skill-skipped: {left}{SKIPPED}"
