"""Structured multi-agent debate (SHAMPOO debate coordination), part 1.

Topics with roles bound to caller-owned sessions, append-only messages with addressed
delivery, durable (ts, msg_id) cursors, push wake-ups (`debate_signal_wait`), the lifecycle
INIT -> ACTIVE -> RESOLVED -> ARCHIVED, and lanes. Each topic is one actor (`topic.Topic`).
This module only wires the parts together: it lists the contract's tools that have a
handler, so nothing unimplemented is ever served, and widens each outputSchema with the
contract's shared ``refusal`` (`replies.with_refusal`).
"""

from __future__ import annotations

from agora.mcp.contracts import load_contract
from agora.toolsets.base import Toolset
from agora.toolsets.debate.handlers.maintenance import OPTIONS, check_options, phase_timeout_task
from agora.toolsets.debate.handlers.reads import index_task
from agora.toolsets.debate.handlers.resources import RESOURCES
from agora.toolsets.debate.replies import argument_rejection, with_refusal
from agora.toolsets.debate.sql import MIGRATIONS
from agora.toolsets.debate.tools import HANDLERS


def toolset() -> Toolset:
    """The debate toolset: the implemented tools of contracts/debate.json and their tables."""
    contract = load_contract("debate")
    refusal = contract.data["refusal"]
    tools = [
        with_refusal(tool.to_mcp(), refusal)
        for tool in contract.tools.values()
        if tool.name in HANDLERS
    ]
    return Toolset(
        name="debate",
        handlers=HANDLERS,
        migrations=MIGRATIONS,
        contract=None,
        tools=tools,
        reject_issues=argument_rejection,
        resources=RESOURCES,
        background=[phase_timeout_task, index_task],
        options=OPTIONS,
        options_check=check_options,
    )
