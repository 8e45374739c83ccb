"""The workflow skill router (``workflow-skill-router/bundled-local-r0``).

A deterministic planner and local control plane for coding agents: plans with a
Router-owned work graph, support consent, reported events, advisory gates and status, one
actor per workflow run. Tools that need a verified host or an evaluation adapter answer a
typed capability-unavailable. Opt-in Memory (off by default) records completed workflows,
typed feedback, lists candidates, previews, applies and rolls back managed Profile updates,
and purges. All 20 tools of the contract are served. This module only wires parts together.
"""

from __future__ import annotations

from typing import Final

from agora.mcp.contracts import load_contract
from agora.runtime.background import periodic
from agora.toolsets.base import Toolset
from agora.toolsets.router.adapter import ADAPTER_OPTIONS, check_options
from agora.toolsets.router.index import index_runs
from agora.toolsets.router.memory_tools import RETENTION_EVERY
from agora.toolsets.router.ownership import owned
from agora.toolsets.router.promotion import upkeep
from agora.toolsets.router.replies import INTERNAL_SCHEMA, argument_rejection, shape_failure
from agora.toolsets.router.sql import MIGRATIONS
from agora.toolsets.router.tools import HANDLERS

#: ``[options.router]``: authorized workspace roots, the personal Profile and Memory policy
#: files, and the evaluation adapter (README, "Router").
OPTIONS: Final = {
    "workspace_roots": list[str],
    "personal_profile": str,
    "memory_policy": str,
    "adapter": ADAPTER_OPTIONS,
}


def toolset() -> Toolset:
    """The router toolset: the served tools of contracts/router.json and the run tables."""
    contract = load_contract("router")
    served = [tool.to_mcp() for name, tool in contract.tools.items() if name in HANDLERS]
    return Toolset(
        name="router",
        handlers={name: owned(handler) for name, handler in HANDLERS.items()},
        migrations=MIGRATIONS,
        contract=None,
        tools=served,
        reject_issues=argument_rejection,
        shape_failure=shape_failure,
        failure_schema=INTERNAL_SCHEMA,
        background=[periodic(RETENTION_EVERY, upkeep), index_runs],
        options=OPTIONS,
        options_check=check_options,
    )
