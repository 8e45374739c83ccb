"""contracts/debate.json: it loads, holds every part-1 tool of DESIGN §6 and the part-2 tools
implemented so far, and is well formed."""

from __future__ import annotations

import jsonschema
import pytest

from agora.mcp.contracts import load_contract
from agora.server.app import load_toolsets, tool_entries
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
