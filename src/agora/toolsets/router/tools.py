"""The router's tools: each maps one MCP call to one command on a workflow run, or answers.

A handler builds one command from validated arguments and returns the run's reply; it holds
no rule of its own. Tools that cannot run here (the verified-host ones) answer the typed
capability-unavailable from `agora.toolsets.router.replies`; the adapter tools live in
`agora.toolsets.router.evaluations` and the Memory tools in
`agora.toolsets.router.memory_tools`, `profile_tools` and `rollback` (all eight).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from agora.mcp.results import Guided
from agora.toolsets.router import (
    commands,
    evaluations,
    guidance,
    memory_tools,
    profile_tools,
    replies,
    rollback,
)
from agora.toolsets.router.bounds import memory_misfits
from agora.toolsets.router.consent import run_of
from agora.toolsets.router.digests import request_digest, routing_read
from agora.toolsets.router.layers import memory_root_refused, plan_layers
from agora.toolsets.router.memory_notes import root_meaning
from agora.toolsets.router.ownership import as_sent
from agora.toolsets.router.planning import Unplaceable, build_plan, goal_issue, plan_issue
from agora.toolsets.router.profile_notes import profile_line
from agora.toolsets.router.remembering import completed_note
from agora.toolsets.router.run import kind_of, logged, refused_for_arguments, subject_of
from agora.toolsets.router.sql import session_summary

if TYPE_CHECKING:
    from agora.toolsets.base import Handler, ToolCall


def _session(call: ToolCall) -> str:
    session: str = call.args["context"]["session_id"]
    return session


def _mutation(call: ToolCall) -> dict[str, Any]:
    a = call.args
    read = routing_read(a)
    digest = request_digest(call.tool, read)
    return {
        "session_id": _session(call),
        "expected_state_version": a["expected_state_version"],
        "idempotency_key": a["idempotency_key"],
        "request_digest": digest,
        "correlation_id": a["correlation_id"],
        "legacy_digest": None if read is a else request_digest(call.tool, a),
    }


async def _run(call: ToolCall, run_id: str, command: Any) -> dict[str, Any]:
    reply: dict[str, Any] = await call.runtime.call(kind_of(call.runtime), run_id, command)
    return reply


async def plan_work(call: ToolCall) -> dict[str, Any]:
    """Create or replay a durable plan and its work graph."""
    if (issue := plan_issue(call.args)) is not None:
        raise refused_for_arguments(call, [issue])
    layers, warnings, enclosing = await plan_layers(call)
    try:
        plan = build_plan(call.args, layers, warnings)
    except Unplaceable as exc:
        raise refused_for_arguments(call, [exc.issue]) from None
    refused = await memory_root_refused(call, warnings)  # asked before the plan is written
    reply = await _run(
        call, plan.workflow_run_id, commands.CreatePlan(plan=plan, **_mutation(call))
    )
    misfits = memory_misfits(_as_sent(call))
    said = [memory_note(misfits)] if misfits else []
    if refused is not None:
        said.append(root_note(call.args["routing_context"]["workspace_root"], refused))
    if not call.runtime.options("router").get("memory_policy"):
        said = []
    routing = call.args.get("routing_context") or {}
    if not call.args.get("explicit_skill_ids") and isinstance(reply, Guided):
        said += filter(None, [profile_line(routing, layers, warnings, reply, enclosing)])
    if said and isinstance(reply, Guided):
        return Guided(reply, "\n".join([*said, reply.guidance]))
    return reply


def _as_sent(call: ToolCall) -> dict[str, str]:
    """The call's ``context`` as the caller sent it (before its session id was scoped)."""
    context = dict(call.args["context"])
    context["session_id"] = as_sent(context["session_id"])
    return context


def memory_note(misfits: list[str]) -> str:
    """What a plan's note says when its context cannot be used with the Memory tools."""
    fields = ", ".join(f"context.{name}" for name in misfits)
    return (
        f"Memory: this run cannot be remembered: the Memory tools (remember_workflow and the"
        f" others) take only a context whose fields are letters, digits and . _ : - (first a"
        f" letter or digit), at most 128 characters (the contract's schemas), and {fields}"
        f" {'is' if len(misfits) == 1 else 'are'} not; plan under such a context to use Memory."
    )


def root_note(root: str, refused: str) -> str:
    """What a plan's note says when its workspace root is refused, so Memory would refuse
    its run under any root (`memory_root_refused`)."""
    then = (
        "plan under an authorized root (one in [options.router] workspace_roots or the MCP"
        " client's roots)"
        if refused == "workspace-root-not-authorized"
        else "plan again with the workspace_root fixed as said"
    )
    return (
        f"Memory: this run cannot be remembered: its routing_context.workspace_root"
        f" {json.dumps(root)} is refused ({refused}: {root_meaning(refused, root)}), Memory"
        " keeps nothing under such a root, and a run is remembered only under the root it"
        f" was planned under; {then} or under none (the personal scope) to use Memory."
    )


async def get_router_status(call: ToolCall) -> dict[str, Any]:
    """A run's counts and goal status candidate, or the session's when no run is named; each
    of the two filters (run, native Goal binding) applies when given."""
    run_id = call.args.get("workflow_run_id")
    goal = call.args.get("goal_binding_id")
    if issue := goal_issue(goal, "for no Goal filter (every run of the session, or the run named)"):
        raise refused_for_arguments(call, [issue])
    if run_id is not None:
        status = await _run(call, run_id, commands.Status(_session(call)))
        if goal is None or status["goal_binding_id"] == goal:
            return status
        return _no_match(run_id, goal, status["goal_binding_id"])
    session = _session(call)
    runs, items, recent = await call.runtime.read(lambda conn: session_summary(conn, session, goal))
    candidate = None
    if goal is not None and recent:
        status = await _run(call, recent[0][0], commands.Status(session))
        candidate = status["goal_status_candidate"]
    result = {
        "workflow_run_id": None,
        "goal_binding_id": goal,
        "created_work_items": items,
        "goal_status_candidate": candidate,
        "host_goal_mutated": False,
    }
    return Guided(result, guidance.session_runs(as_sent(session), runs, recent))


def _no_match(run_id: str, goal: str, bound: str | None) -> Guided:
    """The status of a run filtered by a Goal it is not bound to: nothing matches both."""
    why = f"is bound to the native Goal {bound}" if bound else "is bound to no native Goal"
    empty = {"workflow_run_id": run_id, "goal_binding_id": goal, "created_work_items": 0,
             "goal_status_candidate": None, "host_goal_mutated": False}  # fmt: skip
    return Guided(empty, f"No run matches both filters: run {run_id} {why}, not to {goal}. "
                  "Send goal_binding_id null for the run's own status.")  # fmt: skip


async def get_next_work(call: ToolCall) -> dict[str, Any]:
    """The next work item of a Router-owned graph."""
    reply = await _run(call, call.args["workflow_run_id"], commands.NextWork(_session(call)))
    return await completed_note(call, reply)


async def record_work_event(call: ToolCall) -> dict[str, Any]:
    """Append one reported observation."""
    a = call.args
    command = commands.RecordEvent(
        phase_id=a["phase_id"], observation=a["observation"],
        activation_receipt_ref=a["activation_receipt_ref"], **_mutation(call),
    )  # fmt: skip
    return await _run(call, a["workflow_run_id"], command)


async def evaluate_gate(call: ToolCall) -> dict[str, Any]:
    """Evaluate a phase's advisory exit gate."""
    a = call.args
    command = commands.EvaluateGate(
        phase_id=a["phase_id"], evidence_refs=tuple(a["evidence_refs"]),
        expected_evidence_digest=a["expected_evidence_digest"],
        expected_plan_revision=a["expected_plan_revision"], **_mutation(call),
    )  # fmt: skip
    return await completed_note(call, await _run(call, a["workflow_run_id"], command))


async def propose_support_consent(call: ToolCall) -> dict[str, Any]:
    """Persist a Phase-scoped support proposal."""
    a = call.args
    command = commands.ProposeSupport(
        phase_id=a["phase_id"], primary_skill_id=a["primary_skill_id"],
        support_skill_ids=tuple(a["support_skill_ids"]), scope_anchor_id=a["scope_anchor_id"],
        goal_revision=a["goal_revision"], plan_revision=a["plan_revision"],
        context_fingerprint=a["context_fingerprint"], **_mutation(call),
    )  # fmt: skip
    return await _run(call, a["workflow_run_id"], command)


async def transition_support_consent(call: ToolCall) -> dict[str, Any]:
    """Approve or reject a bound proposal."""
    a = call.args
    run_id = run_of(a["proposal_id"])
    if run_id is None:
        refusal = replies.unknown_proposal(a["proposal_id"])
        logged(call.tool, subject_of(call.tool, a), refusal, a["correlation_id"])
        raise refusal
    command = commands.TransitionSupport(
        proposal_id=a["proposal_id"], action=a["action"],
        current_phase_id=a["current_phase_id"],
        current_scope_anchor_id=a["current_scope_anchor_id"],
        current_goal_revision=a["current_goal_revision"],
        current_plan_revision=a["current_plan_revision"],
        current_context_fingerprint=a["current_context_fingerprint"], **_mutation(call),
    )  # fmt: skip
    return await _run(call, run_id, command)


async def unavailable(call: ToolCall) -> dict[str, Any]:
    """A tool this server cannot run: the typed capability-unavailable answer."""
    raise replies.unavailable(call.tool)


HANDLERS: Final[dict[str, Handler]] = {
    "sync_runtime_context": unavailable,
    "plan_work": plan_work,
    "propose_support_consent": propose_support_consent,
    "transition_support_consent": transition_support_consent,
    "get_next_work": get_next_work,
    "validate_route": unavailable,
    "record_work_event": record_work_event,
    "evaluate_gate": evaluate_gate,
    "get_router_status": get_router_status,
    "run_model_evaluation": evaluations.run_model_evaluation,
    "compare_evaluations": evaluations.compare_evaluations,
    "export_router_artifact": evaluations.export_router_artifact,
    "get_memory_status": memory_tools.get_memory_status,
    "remember_workflow": memory_tools.remember_workflow,
    "record_route_feedback": memory_tools.record_route_feedback,
    "purge_workflow_memory": memory_tools.purge_workflow_memory,
    "list_workflow_candidates": profile_tools.list_workflow_candidates,
    "preview_profile_update": profile_tools.preview_profile_update,
    "transition_profile_update": profile_tools.transition_profile_update,
    "rollback_profile_revision": rollback.rollback_profile_revision,
}
