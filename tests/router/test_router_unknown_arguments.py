"""An argument a planning tool's schema does not name is served, and every answer says so.

Reviewer finding: the planning tools' argument objects are open (the contract sets no
``additionalProperties: false`` on them), so ``plan_work`` with a misspelt
``routing_contxt`` planned without the routing context and said nothing.
"""

from __future__ import annotations

from router_driver import CONTRACT, ctx, plan_args
from test_router_guidance import texts

from agora.config import Config
from agora.server.embed import open_server

ROUTING = {"workspace_root": None, "domains": [], "tags": [], "current_phase_id": None}


async def test_a_misspelt_argument_is_named_with_the_one_meant(router):
    plan = await router.call("plan_work", **plan_args("Fix the typo", routing_contxt=ROUTING))
    note = texts(plan)[-1]
    assert "ignored unknown argument 'routing_contxt' (did you mean 'routing_context'?)" in note
    assert "Next write to this run" in note  # the tool's own note follows
    run = plan["workflow_run_id"]
    nxt = await router.call("get_next_work", context=ctx(), workflow_run_id=run, foo=1)
    takes = "ignored unknown argument 'foo' (this tool takes context, workflow_run_id)"
    assert takes in texts(nxt)[-1]


async def test_a_call_without_one_gets_no_warning(router):
    plan = await router.call("plan_work", **plan_args("Fix the typo", routing_context=ROUTING))
    assert "unknown argument" not in texts(plan)[-1]


async def test_a_refusal_names_it_in_warnings(router):
    body = await router.refused("get_next_work", context=ctx(), workflow_run_id="run-none",
                                workflow_run=1)  # fmt: skip
    assert body["code"] == "capability-unavailable"
    assert body["warnings"] == [
        "ignored unknown argument 'workflow_run' (did you mean 'workflow_run_id'?)"
    ]


def test_only_the_open_schemas_are_checked():
    from agora.toolsets.router.extras import KNOWN

    for name, tool in CONTRACT.tools.items():
        closed = tool.input_schema.get("additionalProperties") is False
        assert (name in KNOWN) is not closed, name
    assert len(KNOWN) == 12


async def test_the_warning_reaches_a_client_over_the_wire():
    config = Config(port=0, db=":memory:", toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        answer = await client.call_tool("plan_work", plan_args("Fix it", foo=1))
    assert answer.get("isError") is not True
    assert "ignored unknown argument 'foo'" in answer["content"][-1]["text"]
