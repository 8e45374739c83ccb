"""The refusals of an idempotency key reused for a different request, naming what differs.

The ledger keeps a request's digest, not the request, so a reused key cannot always say which
argument changed; it names the tool that used the key first, and for a plan (whose key names
its run) what it can tell: an ``expected_state_version`` other than 0 (every plan is made at
0), a ``routing_context`` whose domains, tags (as sets), workspace root or current phase
differ from those the run kept, and the fields of the plan the new request makes that differ
from the stored plan's, named as fields of the answer with the arguments that shape them
(never as if sent); and that what the run does not keep may differ too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.router.replies import key_reused, refusal

if TYPE_CHECKING:
    from agora.errors import ToolError
    from agora.toolsets.router.commands import CreatePlan
    from agora.toolsets.router.state import RunState

#: The members of ``routing_context`` a run keeps (`planning.Plan.routing`), compared here.
_KEPT: Final = ("domains", "tags", "workspace_root", "current_phase_id")

#: The arguments that shape each group of a plan's answer fields (docs/router.md).
_SHAPED_BY: Final = (
    (("classification", "routing_envelope", "created_work_items", "work_graph_id"),
     "objective, requested_work_mode, goal_binding_id, routing_context (its current_phase_id,"
     " where the graph starts)"),
    (("selection_mode", "planned_skill_ids", "planned_skill_tree", "activation_status",
      "support_consent_required"),
     "explicit_skill_ids, explicit_semantics, routing_context (a Profile rule, its"
     " current_phase_id)"),
    (("route_source", "routing_profile_ids", "routing_profile_digest",
      "matched_profile_rule_id", "profile_warnings"),
     "routing_context (the workspace_root a Profile is read under, a current_phase_id no"
     " phase has), explicit_skill_ids, or a Profile file changed since"),
)  # fmt: skip


def plan_differences(cmd: CreatePlan, run: RunState) -> str:
    """What differs between a plan's request ``cmd`` and the plan its key made on ``run``."""
    said = []
    if cmd.expected_state_version != 0:
        said.append(f"expected_state_version is {cmd.expected_state_version}, but that plan was"
                    " made at 0, as every plan is (a plan's key replays only with 0)")  # fmt: skip
    kept, sent = run.routing, cmd.plan.routing
    routed = [k for k in _KEPT if kept and kept.get(k) != sent.get(k)]
    if routed:
        said.append(f"routing_context differs from that plan's in {', '.join(routed)}")
    made, stored = cmd.plan.result, run.plan
    changed = [k for k in sorted(made) if k != "replayed" and made[k] != stored.get(k)]
    if changed:
        shaped = [args for fields, args in _SHAPED_BY if set(fields) & set(changed)]
        by = "; ".join(shaped) or "the arguments"
        said.append(f"{'so ' if routed else ''}the plan this request makes differs from that"
                    f" plan's answer in {', '.join(changed)} (fields of the answer, not"
                    f" arguments; what shapes them: {by})")  # fmt: skip
    elif not said:
        said.append("the plan this request makes is the same, so an argument the plan does not"
                    " show differs (the objective's words, or the context's actor or policy"
                    " snapshot)")  # fmt: skip
        return "; ".join(said)
    said.append("the run keeps no objective, actor or policy snapshot, so any of those may"
                " differ too")  # fmt: skip
    return "; ".join(said)


def _memory_writer(stored: dict[str, Any]) -> str:
    """The Memory tool whose kept result ``stored`` is (each has a field or status the
    others lack)."""
    for field, tool in (("observation_digest", "remember_workflow"),
                        ("feedback_id", "record_route_feedback"),
                        ("deleted_observations", "purge_workflow_memory")):  # fmt: skip
        if field in stored:
            return tool
    pending = stored.get("status") == "pending"  # a rollback proposes; a transition decides
    return "rollback_profile_revision" if pending else "transition_profile_update"


def memory_key_reused(key: str, tool: str, stored: dict[str, Any]) -> ToolError:
    """`key_reused` for a Memory write by ``tool`` whose key already wrote ``stored``: naming
    the tool that used it first, and suggesting a replay only to that same tool."""
    first = _memory_writer(stored)
    used = f"this idempotency key was used by {first} for a different request"
    if first != tool:
        said = f"{used}: each Memory write needs its own key, so send this {tool} with a new key"
    else:
        said = (
            f"{used}; use a new key for a new write (to replay that {tool} answer, resend it"
            " unchanged, correlation_id included: it is part of the request)"
        )
    return refusal("idempotency-conflict", said, idempotency_key=key)


def _writer(stored: dict[str, Any]) -> str:
    """The tool whose stored result ``stored`` is (each has a field the others lack)."""
    if "planned_skill_tree" in stored:
        return "plan_work"
    if "event_ids" in stored:
        return "record_work_event"
    if "evidence_digest" in stored:
        return "evaluate_gate"
    pending = stored.get("status") == "proposal-required"
    return "propose_support_consent" if pending else "transition_support_consent"


def run_key_reused(key: str, run_id: str, tool: str, stored: dict[str, Any],
                   differs: str | None = None) -> ToolError:  # fmt: skip
    """`key_reused` for a write to run ``run_id`` by ``tool``, whose key wrote ``stored``:
    naming the tool that used it first, and what to do for a plan (which takes no run id):
    ``differs`` says what differs from the plan's request (`plan_differences`)."""
    first = _writer(stored)
    used = f"this idempotency key was used by {first} for a different request, on run {run_id}"
    if first != tool:
        said = f"{used}: each write to a run needs its own key, so send this {tool} with a new key"
    elif tool == "plan_work":
        said = (
            f"{used}{'' if differs is None else f': {differs}'}; use a new key for a new plan"
            f" (that plan is run {run_id}: get_next_work"
            " with that workflow_run_id continues it, and resending that plan_work unchanged"
            " replays its answer)"
        )
    else:
        version = stored.get("resulting_state_version")  # (an event's or a gate's)
        applied_at = version - 1 if isinstance(version, int) else None
        return key_reused(key, run_id, tool=first, applied_at=applied_at)
    return refusal("idempotency-conflict", said, idempotency_key=key, workflow_run_id=run_id)
