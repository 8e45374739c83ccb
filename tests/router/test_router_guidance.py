"""What a read of the tool surface tells an agent about exit-gate checks, before any write.

The outputSchemas of plan_work and get_next_work have no field for check ids (closed
objects), so the router names them in a second text block after the JSON copy.
"""

from __future__ import annotations

from typing import Any

from router_driver import plan_args

from agora.mcp.catalog import Catalog
from agora.mcp.results import tool_reply
from agora.mcp.session import Session

PHASED = "1. design the schema\n2. implement it\n3. test it"


def texts(value: dict[str, Any]) -> list[str]:
    """The text blocks a client gets for ``value``, as the server sends them."""
    reply = tool_reply(Session(Catalog(), {"name": "t", "version": "0"}), 1, value, False)
    return [block["text"] for block in reply["result"]["content"]]


async def test_get_next_work_names_the_phases_exit_gate_checks(router):
    plan = await router.plan(PHASED)
    assert plan["planned_skill_tree"] == []  # no skills: the tree names no gate at all
    nxt = await router.next(plan["workflow_run_id"])
    json_copy, guidance = texts(nxt)
    assert "check_id" not in json_copy
    assert "plan-ready" in guidance
    assert "plan-exit" in guidance
    assert '{"check_id": "plan-ready", "outcome": "passed"}' in guidance
    assert "expected_evidence_digest" in guidance


async def test_plan_work_names_every_phases_checks(router):
    lock = {"explicit_skill_ids": ["skill:lead"], "explicit_semantics": "use"}
    plan = await router.plan(PHASED, **lock)
    assert plan["planned_skill_tree"][0]["exit_gate"] == "plan-exit"  # the gate, not a check
    _json_copy, guidance = texts(plan)
    for check in ("plan-ready", "implementation-done", "verification-passed"):
        assert check in guidance


async def test_a_replayed_plan_says_it_was_replayed(router):
    args = plan_args(PHASED, idem="plan-twice")
    first = await router.call("plan_work", **args)
    again = await router.call("plan_work", **args)
    assert again == first  # the outputSchema has no `replayed`: the structured copy is equal
    assert "replayed" not in texts(first)[-1]
    assert "replayed" in texts(again)[-1]
