"""contracts/debate.json: it loads, holds every part-1 tool of DESIGN §6 and the part-2 tools
implemented so far, and is well formed."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from agora.mcp.contracts import load_contract
from agora.mcp.validation import ValidationIssue
from agora.server.app import load_toolsets, tool_entries
from agora.toolsets.debate.access import denied
from agora.toolsets.debate.replies import argument_rejection
from agora.toolsets.debate.rules import reject
from agora.toolsets.debate.tools import HANDLERS

PART_1 = {
    "debate_session_open",
    "debate_session_list",
    "debate_init",
    "debate_post",
    "debate_post_with_recipients",
    "debate_read",
    "debate_search",
    "debate_signal_check",
    "debate_signal_advance",
    "debate_advance_watermark",
    "debate_state",
    "debate_close_topic",
    "debate_compact",
    "debate_escalate",
    "debate_set_lane",
    "debate_work_queue",
    "debate_add_role",
    "debate_bind_role",
    "debate_list_bindings",
    "debate_rotate_session",
    "debate_reconcile_project",
    "debate_message_claim_reclaim",
    "debate_signal_wait",
}
#: The part-2 (debate/v1) tools implemented so far.
PART_2 = {
    "debate_protocol_state",
    "debate_judge_prepare",
    "debate_judge_verdict",
    "debate_protocol_maintain",
    "debate_worker_claim",
    "debate_worker_reclaim",
    "debate_trigger_dry_run",
}
ALL = PART_1 | PART_2


def test_contract_loads_with_every_part_1_tool():
    contract = load_contract("debate")
    assert set(contract.tools) == ALL
    assert contract.toolset == "debate"


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_tool_has_closed_input_and_an_output_schema(name):
    tool = load_contract("debate").tools[name]
    assert tool.input_schema["additionalProperties"] is False
    assert tool.output_schema is not None
    jsonschema.Draft202012Validator.check_schema(dict(tool.input_schema))
    jsonschema.Draft202012Validator.check_schema(dict(tool.output_schema))


def test_only_implemented_tools_are_served():
    [toolset] = load_toolsets(["debate"])
    served = {entry.name for entry in tool_entries(toolset)}
    assert served == set(HANDLERS)
    assert served <= ALL


def _served_schemas() -> dict[str, dict[str, Any]]:
    [toolset] = load_toolsets(["debate"])
    return {e.name: e.output_schema for e in tool_entries(toolset) if e.output_schema}


def test_every_served_output_schema_accepts_the_refusals_and_keeps_the_reply():
    contract = load_contract("debate")
    issues = [ValidationIssue(("topic_id",), "pattern", "topic_id must match pattern")]
    refusals = [
        argument_rejection(issues),
        dict(denied().body),
        dict(reject("wrong_phase", "not now", phase="OPENING", allowed=["REBUTTAL"]).body),
    ]
    served = _served_schemas()
    assert set(served) == set(HANDLERS)
    for name, schema in served.items():
        assert schema["anyOf"][0] == contract.tools[name].output_schema
        check = jsonschema.Draft202012Validator(schema)
        for body in refusals:
            check.validate(body)


@pytest.mark.parametrize(
    "body",
    [
        {"ok": True, "error": "unknown_topic", "message": "m"},
        {"ok": False, "message": "m"},
        {"ok": False, "error": "Not Snake", "message": "m"},
        {"ok": False, "error": "invalid_arguments", "message": "m", "problems": [{}]},
    ],
)
def test_a_malformed_refusal_fits_no_served_output_schema(body):
    for schema in _served_schemas().values():
        assert not jsonschema.Draft202012Validator(schema).is_valid(body), schema


def test_every_required_argument_says_what_it_is():
    # The debate's schemas are the project's own: a required argument with no description
    # (debate_read's role) left a model to guess which role to send, and why.
    bare = [
        f"{tool.name}.{name}"
        for tool in load_contract("debate").tools.values()
        for name in tool.input_schema.get("required", [])
        if not tool.input_schema["properties"][name].get("description")
    ]
    assert bare == []
