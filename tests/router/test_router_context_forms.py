"""Which ``context`` each router tool takes, and what plan_work says when Memory cannot.

Reviewer finding: a context the planning tools accept (``"alice/my repo"``, ``"claude
code"``) is refused by remember_workflow and get_memory_status, while README said every
router tool takes any identifier of at most 256 characters. The contract settles it: its
Memory tools' schemas declare ``^[A-Za-z0-9][A-Za-z0-9._:-]{0,159}$``, ``maxLength`` 128,
its planning tools' only ``minLength`` 1, and the router serves the schemas as they are. So
the planning tools keep accepting such a context, and plan_work says, when Memory is
configured, that a run planned under it can never be remembered, before the agent finds out.
"""

from __future__ import annotations

from memory_support import observe_policy, remember_args
from router_driver import INPUTS, Router, plan_args

from agora.toolsets.base import Principal

SPACED = {"session_id": "alice/my repo", "actor": "claude code",
          "runtime_policy_snapshot_id": "local"}  # fmt: skip


async def test_plan_work_says_when_its_context_cannot_reach_memory(router, options, tmp_path):
    root = observe_policy(tmp_path, options)
    args = {**plan_args("Fix the typo"), "context": SPACED}
    plan = await router.call("plan_work", **args)
    note = plan.guidance.splitlines()
    assert note[0].startswith("Memory: this run cannot be remembered:")
    assert "context.actor, context.session_id are not" in note[0]
    assert note[-1].startswith("Next write to this run")  # still the last line
    remember = {**remember_args(plan["workflow_run_id"], root), "context": SPACED}
    refused = INPUTS["remember_workflow"].errors(remember)  # the contract's schema
    assert {(i.field, i.keyword) for i in refused} == {
        ("context.actor", "pattern"), ("context.session_id", "pattern")
    }  # fmt: skip
    # a form both take: no note
    fine = await router.plan("Fix the typo")
    assert not fine.guidance.startswith("Memory:")


async def test_no_memory_note_without_memory_or_for_a_scoped_session(runtime, options, tmp_path):
    alice = Router(runtime, principal=Principal("alice"))
    plain = await alice.call("plan_work", **{**plan_args("Fix the typo"), "context": SPACED})
    assert not plain.guidance.startswith("Memory:")  # Memory is not configured: no word of it
    observe_policy(tmp_path, options)
    scoped = await alice.plan("Fix the typo")  # its session id is scoped inside: not its form
    assert "Memory:" not in scoped.guidance
