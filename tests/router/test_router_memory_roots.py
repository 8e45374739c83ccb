"""What plan_work and remember_workflow say of a run planned under an unauthorized root.

Tester findings (a coding agent over the official SDK): plan_work under an unauthorized
``workspace_root`` said nothing of Memory (it does for a context Memory refuses), though no
root can remember such a run; remember_workflow answering ``memory-disabled`` had no second
text block, though docs/router.md promises one per reason; and its
``workflow-context-mismatch`` told the agent to send the unauthorized root Memory refuses.
"""

from __future__ import annotations

import pytest
from memory_support import completed_run, remember_args
from test_router_guidance import texts


@pytest.fixture
def outside(tmp_path):
    """A root under no authorized root (they are ``tmp_path``)."""
    return tmp_path.parent / f"{tmp_path.name}-outside"


def routing(root):
    return {"workspace_root": str(root), "domains": [], "tags": [], "current_phase_id": None}


@pytest.mark.parametrize("skills", [[], ["skill:lead"]])
async def test_a_plan_under_an_unauthorized_root_says_memory_cannot_keep_it(
    router, workspace, outside, skills
):
    lock = {"explicit_skill_ids": skills, "explicit_semantics": "use"} if skills else {}
    plan = await router.plan("Fix the typo", routing_context=routing(outside), **lock)
    note = plan.guidance.splitlines()
    assert note[0].startswith(
        f'Memory: this run cannot be remembered: its routing_context.workspace_root "{outside}"'
        " is refused (workspace-root-not-authorized"
    )
    assert note[-1].startswith("Next write to this run")  # still the last line
    fine = await router.plan("Fix the typo", routing_context=routing(workspace), **lock)
    assert not fine.guidance.startswith("Memory:")


async def test_memory_disabled_says_why_per_reason(router, workspace, outside, tmp_path):
    run = await completed_run(router, root=outside)
    off = await router.call("remember_workflow", **remember_args(run, outside))
    assert (off["status"], off["reason_codes"]) == (
        "memory-disabled", ["workspace-root-unverified", "workspace-policy-missing",
                            "memory-disabled"],
    )  # fmt: skip
    note = texts(off)[-1]
    assert note.startswith("Nothing was recorded: Memory is disabled here.")
    refused = "workspace-root-unverified: workspace root refused: workspace-root-not-authorized"
    assert refused in note
    assert "workspace-policy-missing: the workspace has no Memory request file read" in note
    bare = tmp_path / "bare"  # authorized, but requests no mode
    bare.mkdir()
    other = await completed_run(router, root=bare)
    unrequested = await router.call("remember_workflow", **remember_args(other, bare))
    assert unrequested["reason_codes"] == ["workspace-policy-missing", "memory-disabled"]
    assert "workspace-root-unverified" not in texts(unrequested)[-1]


async def test_a_run_planned_under_an_unauthorized_root_is_said_to_need_it_authorized(
    router, workspace, outside
):
    run = await completed_run(router, root=outside)
    refused = await router.refused("remember_workflow", **remember_args(run, workspace))
    assert refused["code"] == "workflow-context-mismatch"
    assert f'planned under the workspace_root "{outside}"' in refused["message"]
    assert "that root is refused now (workspace-root-not-authorized:" in refused["message"]
    assert refused["message"].endswith(
        f'once it is authorized and exists, send workspace_root "{outside}"'
    )
    assert "send that workspace_root" not in refused["message"]
