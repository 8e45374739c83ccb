"""What the answer that completes a run (and ``get_next_work`` of a completed run) says of
Memory: when the Memory policy captures runs in the run's scope (the root it was planned
under, or the personal scope), that ``remember_workflow`` records it for learning. Without
that line an agent that follows only the replies never remembers a run, and no candidate is
ever derived on a server configured for learning. Once the run is remembered, the line says
so instead: an agent that polls is not sent on a call that writes nothing."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import trio

from agora.errors import ToolError
from agora.mcp.results import Guided
from agora.toolsets.router import commands, guidance
from agora.toolsets.router.layers import client_roots
from agora.toolsets.router.memory import MEMORY
from agora.toolsets.router.memory_commands import StoredAt
from agora.toolsets.router.memory_tools import make_id, read_policy
from agora.toolsets.router.ownership import memory_key
from agora.toolsets.router.purge_notes import correct_instead
from agora.toolsets.router.run import kind_of

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall


async def completed_note(call: ToolCall, reply: dict[str, Any]) -> dict[str, Any]:
    """``reply``, its note given the `remember_line` before its last line when that line
    says the run is completed (`guidance.COMPLETED`) and Memory captures in its scope."""
    if not (isinstance(reply, Guided) and reply.guidance.endswith(guidance.COMPLETED)):
        return reply
    options = call.runtime.options("router")
    if not options.get("memory_policy"):
        return reply
    run_id = call.args["workflow_run_id"]
    snapshot = commands.Snapshot(call.args["context"]["session_id"])
    try:
        run = await call.runtime.call(kind_of(call.runtime), run_id, snapshot)
    except ToolError:
        return reply
    root: str | None = run["planned_workspace_root"]
    authorized = [str(r) for r in options.get("workspace_roots", [])]
    if root is not None:
        authorized += await client_roots(call)
    policy, identity, _warning = await trio.to_thread.run_sync(
        read_policy, root, authorized, options.get("memory_policy")
    )
    if not policy.capture_enabled:
        return reply
    head = reply.guidance.removesuffix(guidance.COMPLETED)
    observation_id = make_id("observation", identity, run_id)
    at = await call.runtime.call(MEMORY, memory_key(call.principal), StoredAt(observation_id))
    if at is None:
        line = remember_line(run_id, root, policy.allowed_targets)
    else:  # an agent that polls is not sent to record it again (that call writes nothing)
        line = remembered_line(observation_id, at)
    return Guided(dict(reply), f"{head}{line}\n{guidance.COMPLETED}")


def remembered_line(observation_id: str, at: str) -> str:
    """The line of a completed run already remembered: no second ``remember_workflow``."""
    return (
        f"Memory: this run is remembered (observation {observation_id}, stored at {at});"
        " remember_workflow need not be called again (a second call writes nothing). "
        + correct_instead(observation_id)
    )


def remember_line(run_id: str, root: str | None, targets: tuple[str, ...]) -> str:
    """The line naming the ``remember_workflow`` call that records a completed run."""
    if root is None:  # the personal scope has no workspace-local Profile
        targets = tuple(t for t in targets if t != "managed-workspace-local")
    target = " or ".join(targets) if targets else "an allowed target"
    return (
        f"Memory is on for this run's scope: remember_workflow with workflow_run_id {run_id},"
        f" workspace_root {json.dumps(root)}, target_profile_class {target}, and the run's"
        " risk_class and side_effect_outcome records it for learning (a run is remembered"
        " once per workspace), and list_workflow_candidates derives candidate routes from the"
        " runs remembered."
    )
