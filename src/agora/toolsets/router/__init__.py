"""The workflow skill router (``workflow-skill-router/bundled-local-r0``).

A deterministic planner and local control plane for coding agents: plans with a
Router-owned work graph, support consent, reported events, advisory gates and status, one
actor per workflow run. Tools that need a verified host or an evaluation adapter answer a
typed capability-unavailable. Opt-in Memory (off by default) records completed workflows,
typed feedback, lists candidates, previews, applies and rolls back managed Profile updates,
and purges. All 20 tools of the contract are served; one that cannot run as configured says
so first in its description (`agora.toolsets.router.availability`). This module only wires
parts together.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from agora.mcp.contracts import load_contract
from agora.runtime.background import periodic
from agora.toolsets.base import Toolset
from agora.toolsets.router.adapter import ADAPTER_OPTIONS, check_options
from agora.toolsets.router.availability import describing
from agora.toolsets.router.bounds import bounded, rejection
from agora.toolsets.router.declared import declared
from agora.toolsets.router.described import described
from agora.toolsets.router.extras import noting
from agora.toolsets.router.index import index_runs
from agora.toolsets.router.layers import CLIENT_ROOTS
from agora.toolsets.router.memory_tools import RETENTION_EVERY
from agora.toolsets.router.ownership import owned
from agora.toolsets.router.promotion import upkeep
from agora.toolsets.router.replies import INTERNAL_SCHEMA, shape_failure
from agora.toolsets.router.sql import MIGRATIONS
from agora.toolsets.router.tools import HANDLERS
from agora.toolsets.router.workspace import tried

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agora.toolsets.base import Handler

log = logging.getLogger(__name__)

#: What a model in a host other than Codex needs before its first call (README "Router").
INSTRUCTIONS: Final = (
    "A deterministic workflow planner. No host but Codex supplies the `context` every tool "
    'takes: fill it yourself with stable strings, e.g. {"session_id": "my-repo-fix-login", '
    '"actor": "claude-code", "runtime_policy_snapshot_id": "local"} (one session_id per '
    "task, named after the repository and the task so that you can name it again after a "
    "crash: it names the runs you can see; the Memory tools take only letters, "
    "digits and . _ : - there, at most 128 characters). Start with plan_work, sending "
    "expected_state_version 0 (no run yet) and a fresh idempotency_key. Then, phase by phase: "
    'get_next_work, record_work_event with the observation {"check_id": ..., '
    '"outcome": "passed"} for each check the reply names, then evaluate_gate with the '
    "evidence_refs and expected_evidence_digest that the answer of the event completing the "
    "phase's checks gives (no need to hash anything yourself). Every answer "
    "about a run ends with the expected_state_version (and plan revision) to send next, "
    "or says the run is completed. "
    "Resending a write with the same idempotency_key replays it; a new key is a new write. "
    "Lost a workflow_run_id? get_router_status with workflow_run_id null and goal_binding_id "
    "null lists this session's runs, and resending the plan_work unchanged replays its answer."
)


#: ``[options.router]``: authorized workspace roots, the personal Profile and Memory policy
#: files, and the evaluation adapter (README, "Router").
OPTIONS: Final = {
    "workspace_roots": list[str],
    "client_roots": str,
    "personal_profile": str,
    "memory_policy": str,
    "adapter": ADAPTER_OPTIONS,
}


def serving(handler: Handler) -> Handler:
    """A router handler as served: its answers naming the arguments its schema does not (the
    planning tools'), its arguments bounded, then its session id scoped."""
    return noting(bounded(owned(handler)))


def toolset() -> Toolset:
    """The router toolset: the served tools of contracts/router.json and the run tables."""
    contract = load_contract("router")
    served = [
        declared(described(tool.to_mcp()))
        for name, tool in contract.tools.items()
        if name in HANDLERS
    ]
    return Toolset(
        name="router",
        handlers={name: serving(handler) for name, handler in HANDLERS.items()},
        migrations=MIGRATIONS,
        contract=None,
        tools=served,
        reject_call=rejection,
        shape_failure=shape_failure,
        failure_schema=INTERNAL_SCHEMA,
        background=[periodic(RETENTION_EVERY, upkeep), index_runs],
        options=OPTIONS,
        options_check=_check_options,
        instructions=INSTRUCTIONS,
        describe=describing(served),
    )


def _check_options(options: Mapping[str, Any]) -> None:
    """The router's `Toolset.options_check`: the adapter refuses the start on a value it
    cannot run with; a configured path that is not there only warns, once, at start.

    Such a path is not refused: a Profile or policy file may be written, and a workspace
    mounted, after the server started, and the router reads them at each call (a plan then
    reports the missing personal Profile as a warning). But an operator's typo would
    otherwise go unseen until an agent's plan said so.
    """
    check_options(options)
    if (trust := options.get("client_roots", "local")) not in CLIENT_ROOTS:
        raise ValueError(
            f"[options.router] client_roots: {trust!r} is not one of {', '.join(CLIENT_ROOTS)}"
        )
    for root in options.get("workspace_roots", []):
        if not Path(root).is_dir():
            log.warning(
                "router: workspace root %s is not a directory: no workspace Profile is read"
                " under it until it is",
                root,
            )
    wanted = (
        ("personal_profile", "the personal Profile", "plans report it missing"),
        ("memory_policy", "the Memory policy", "Memory stays off"),
    )
    for key, what, until in wanted:
        if (path := options.get(key)) and not Path(path).is_file():
            log.warning("router: %s %s is not a file: %s until it is", what, tried(path), until)
