"""A required argument whose schema takes null says so, so a model does not invent a value.

Reviewer finding: ``plan_work`` without ``goal_binding_id`` answered "argument
'goal_binding_id': is required", and a model with no native Goal made one up.
"""

from __future__ import annotations

import pytest
from router_driver import plan_args

from agora.config import Config
from agora.mcp.validation import compile_validator
from agora.server.embed import open_server

NULLABLE = "is required (send null if there is none)"


async def test_plan_work_says_to_send_null_for_the_nullable_ones():
    args = plan_args("Fix it")
    for name in ("goal_binding_id", "requested_work_mode", "explicit_skill_ids",
                 "explicit_semantics"):  # fmt: skip
        del args[name]
    config = Config(port=0, db=":memory:", toolsets=["router"])
    async with open_server(config, listen=False) as srv, srv.client("/mcp/router") as client:
        await client.initialize()
        answer = await client.call_tool("plan_work", args)
    assert answer["isError"] is True
    body = answer["structuredContent"]
    assert body["message"] == (
        "4 problems with the arguments: missing required arguments 'goal_binding_id',"
        " 'requested_work_mode', 'explicit_skill_ids', 'explicit_semantics'. issues says how to"
        f" fix each; the first: argument 'goal_binding_id': {NULLABLE}"
    )
    words = {issue["field"]: issue["message"] for issue in body["issues"]}
    assert (
        words
        == {
            "goal_binding_id": NULLABLE,
            "requested_work_mode": NULLABLE[:-1]
            + '; else one of "single", "phased", "managed-goal")',
            "explicit_skill_ids": "is required (send [] if there is none)",  # null is no answer
            "explicit_semantics": NULLABLE[:-1] + '; else one of "use", "only", "all")',
        }
    )


@pytest.mark.parametrize(
    ("schema", "nullable"),
    [
        pytest.param({"anyOf": [{"type": "string"}, {"type": "null"}]}, True, id="anyOf"),
        pytest.param({"oneOf": [{"type": "null"}, {"type": "integer"}]}, True, id="oneOf"),
        pytest.param({"type": ["string", "null"]}, True, id="type-list"),
        pytest.param({"type": "null"}, True, id="null"),
        pytest.param({"enum": ["a", None]}, True, id="enum"),
        pytest.param({"const": None}, True, id="const"),
        pytest.param({"type": ["string", "null"], "enum": ["a"]}, False, id="enum-rules-out"),
        pytest.param({"type": "string", "anyOf": [{"type": "null"}]}, False, id="typed"),
        pytest.param({"type": "string"}, False, id="string"),
        pytest.param({}, False, id="anything"),
    ],
)
def test_which_schemas_take_null(schema, nullable):
    check = compile_validator(
        {"type": "object", "properties": {"x": schema, "y": {}}, "required": ["x"]}
    )
    (issue,) = check.errors({"y": 1})
    assert issue.message == (NULLABLE if nullable else "is required")
