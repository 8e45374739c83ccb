"""routing_context.current_phase_id: the planned intent and the next work item agree.

The contract: "only that Phase's Primary and immediate support become current intent". A plan
named the current phase's skills while get_next_work handed out the first phase, and an id that
is no phase of the plan was ignored without a word.
"""

from __future__ import annotations

import pytest
from profile_files import profile, write_workspace

SKILLS = ("skill:design", "skill:build", "skill:check")


@pytest.fixture
def workspace(tmp_path, options):
    options["router"]["workspace_roots"] = [str(tmp_path)]
    root = tmp_path / "repo"
    write_workspace(root, profile("team", skills=SKILLS, support=("skill:lint",)))
    return root


def routing(root, current):
    return {"workspace_root": str(root), "domains": [], "tags": [], "current_phase_id": current}


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
