"""Support consent: Phase-scoped proposals of support skills and the user's decision on them.

A proposal is possible only on a plan made under an Explicit Skill Lock whose supports need
consent (``support_consent_required``); otherwise the answer is capability-unavailable
(``explicit-skill-plan``). It names 1 to 3 distinct support skills for one phase, whose
primary skill must be the plan's and which is not completed (``phase-completed``: no
transition could decide it) nor before the phase the plan started from (``unknown-phase``:
``routing_context.current_phase_id`` left it no work item, so no transition could decide it
either), and binds the scope anchor, the goal revision (required exactly when the plan is
Goal-bound), the plan revision and the context fingerprint.
A transition approves or rejects a proposal still awaiting a decision; the caller's current
phase, scope anchor, goal revision, plan revision and context fingerprint must all equal the
bound ones, and the phase must not be completed, or the transition fails closed with every
stale field named (the refusal is kept in ``router_consent_audit``). A decided proposal is
never decided again. An approved set becomes the support skills of its phase's work item
(``support_skill_ids`` in ``get_next_work``), replacing any set approved before for that
phase: each proposal is one concrete set. A rejected one changes nothing (router schema
step 6, in `sql`, applies this rule to runs whose approvals an older agora kept only on the
proposal). The proposal id embeds the run id, so a transition finds its run.
Pure: handlers return results and writes, or raise refusals before changing anything.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.toolsets.router import progress, replies, sql
from agora.toolsets.router.digests import stable_id
from agora.toolsets.router.planning import RUNTIME_MODE
from agora.toolsets.router.state import Proposal

if TYPE_CHECKING:
    from agora.errors import ToolError
    from agora.runtime.entity import Write
    from agora.toolsets.router.commands import Mutation, ProposeSupport, TransitionSupport
    from agora.toolsets.router.state import Applied, RunState

SEPARATOR = "/"


def run_of(proposal_id: str) -> str | None:
    """The run id a proposal id belongs to, or None if it is not one of ours."""
    run_id, sep, rest = proposal_id.partition(SEPARATOR)
    return run_id if sep and run_id.startswith("run-") and rest.startswith("proposal-") else None


def _result(run: RunState, p: Proposal, version: int) -> dict[str, Any]:
    return {
        "workflow_run_id": run.run_id,
        "proposal_id": p.proposal_id,
        "phase_id": p.phase_id,
        "primary_skill": p.primary_skill_id,
        "support_skills": list(p.support_skill_ids),
        "status": p.status,
        "consent_action": p.status,
        "decision_ref": p.decision_ref,
        "goal_relation": "none" if run.goal_binding_id is None else "progress",
        "routing_envelope": run.envelope,
        "runtime_mode": RUNTIME_MODE,
        "selection_mode": "explicit-locked",
        "state_version": version,
        "replayed": False,
    }


#: What to do when a proposal names a plan without an Explicit Skill Lock under ``use`` or
#: ``only`` (the contract's own fallback is the proposal the caller just sent).
NOT_LOCKED: Final = (
    "Support consent applies only to a plan made under an Explicit Skill Lock: plan again with"
    " plan_work (a new idempotency_key, expected_state_version 0) naming the skills in"
    ' explicit_skill_ids with explicit_semantics "use" or "only" (either way the locked skills'
    " are the phases' primaries and any support needs the user's consent), then propose on"
    " that plan's run. A plan routed by a Profile or automatically already names its supports"
    ' in planned_skill_tree; under "all" the locked skills that are no phase\'s primary are'
    " supports already, three to a phase from the first, without consent."
)


def _goal_mismatch(run: RunState, sent: int | None) -> str:
    if sent is None:
        return (
            f"goal_revision is null, but this plan is bound to the native Goal"
            f" {run.goal_binding_id}: send the Goal's current revision as its host reports it"
            " (an integer from 0)"
        )
    return (
        f"goal_revision is {sent}, but this plan is bound to no native Goal: send"
        " goal_revision null"
    )


def propose(run: RunState, cmd: ProposeSupport, version: int, at: str) -> Applied:
    """Persist a support proposal awaiting consent."""
    if not (run.explicit_locked and run.plan.get("support_consent_required")):
        raise replies.unavailable("propose_support_consent", required=("explicit-skill-plan",),
                                  reason="plan-not-explicit-locked",
                                  fallback=NOT_LOCKED)  # fmt: skip
    phase = next((t for t in run.plan["planned_skill_tree"] if t["phase_id"] == cmd.phase_id), None)
    if phase is None:
        phases = ", ".join(t["phase_id"] for t in run.plan["planned_skill_tree"])
        raise replies.refusal(
            "route-mismatch",
            f"the plan has no phase {cmd.phase_id!r} (its phases: {phases}): send one of them",
        )
    if progress.skipped_for(run, cmd.phase_id) is not None:  # behind the current phase
        raise progress.unknown_phase(run, cmd.phase_id)
    if phase["primary_skill_id"] != cmd.primary_skill_id:
        raise replies.refusal(
            "route-mismatch",
            f"the primary skill of phase {cmd.phase_id!r} is {phase['primary_skill_id']!r}, not"
            f" {cmd.primary_skill_id!r}: send {phase['primary_skill_id']!r} as primary_skill_id",
        )
    item = run.item_for(cmd.phase_id)
    if item is not None and item.status == "completed":  # no transition could decide it
        raise replies.refusal("phase-completed", f"phase {cmd.phase_id!r} is already completed:"
                              " propose for the phase get_next_work names now")  # fmt: skip
    if item is not None and not set(item.item.dependency_ids) <= run.completed_ids():
        raise progress.not_ready(run, item)  # a proposal is scoped to the current phase
    skills = cmd.support_skill_ids
    if len(set(skills)) != len(skills) or cmd.primary_skill_id in skills:
        twice = sorted({s for s in skills if skills.count(s) > 1})
        why = (
            f"{cmd.primary_skill_id!r} is the phase's primary skill"
            if cmd.primary_skill_id in skills
            else f"{', '.join(map(repr, twice))} named twice"
        )
        raise replies.refusal(
            "invalid-support-skills",
            f"support_skill_ids must be 1-3 distinct skills other than the primary: {why}",
        )
    if cmd.plan_revision != run.plan_revision:
        raise replies.refusal(
            "stale-plan-revision",
            f"plan revision {cmd.plan_revision}, the plan is at {run.plan_revision}; send "
            "current_plan_revision as plan_revision",
            retryable=True, current_plan_revision=run.plan_revision,
        )  # fmt: skip
    if (cmd.goal_revision is None) != (run.goal_binding_id is None):
        raise replies.refusal("goal-revision-mismatch", _goal_mismatch(run, cmd.goal_revision))
    proposal_id = f"{run.run_id}{SEPARATOR}{stable_id('proposal', run.run_id, cmd.idempotency_key)}"
    p = Proposal(proposal_id, cmd.phase_id, cmd.primary_skill_id, tuple(skills),
                 cmd.scope_anchor_id, cmd.goal_revision, cmd.plan_revision,
                 cmd.context_fingerprint, "proposal-required", None)  # fmt: skip
    run.proposals[proposal_id] = p
    row = {
        "proposal_id": proposal_id, "run_id": run.run_id, "phase_id": p.phase_id,
        "primary_skill_id": p.primary_skill_id, "support_json": json.dumps(list(skills)),
        "scope_anchor_id": p.scope_anchor_id, "goal_revision": p.goal_revision,
        "plan_revision": p.plan_revision, "context_fingerprint": p.context_fingerprint,
        "status": p.status, "decision_ref": None, "created_at": at, "decided_at": None,
    }  # fmt: skip
    return _result(run, p, version), [sql.insert_proposal(row)]


def _stale_fields(run: RunState, p: Proposal, cmd: TransitionSupport) -> list[str]:
    item = run.item_for(p.phase_id)
    stale = []
    gone = item.status == "completed" if item is not None else run.work_graph_id is not None
    if cmd.current_phase_id != p.phase_id or gone:
        stale.append("phase")
    if cmd.current_scope_anchor_id != p.scope_anchor_id:
        stale.append("scope_anchor")
    if cmd.current_goal_revision != p.goal_revision:
        stale.append("goal_revision")
    if cmd.current_plan_revision != p.plan_revision or p.plan_revision != run.plan_revision:
        stale.append("plan_revision")
    if cmd.current_context_fingerprint != p.context_fingerprint:
        stale.append("context_fingerprint")
    return stale


def transition(run: RunState, cmd: TransitionSupport, version: int, at: str) -> Applied:
    """Approve or reject a bound proposal."""
    p = run.proposals.get(cmd.proposal_id)
    if p is None:
        raise replies.unknown_proposal(cmd.proposal_id)
    if p.status != "proposal-required":
        raise replies.refusal(
            "proposal-already-decided",
            f"the proposal is already {p.status}, and a decision is never changed: to change"
            " the phase's supports, propose a new set (propose_support_consent) and decide that",
            status=p.status, audited=True,
        )  # fmt: skip
    stale = _stale_fields(run, p, cmd)
    if stale:
        raise replies.refusal(
            "consent-stale",
            f"the proposal no longer matches the current scope ({', '.join(stale)} changed since"
            " it was made), so this consent would not be the user's: propose again for the"
            " current scope (propose_support_consent) and decide that proposal",
            stale_fields=stale, audited=True,
        )  # fmt: skip
    p.status = "approved" if cmd.action == "approve" else "rejected"
    p.decision_ref = stable_id("decision", p.proposal_id, cmd.idempotency_key)
    writes = [sql.decide_proposal(p.proposal_id, p.status, p.decision_ref, at)]
    item = run.item_for(p.phase_id)
    if p.status == "approved" and item is not None:  # the phase's supports from now on
        item.item = msgspec.structs.replace(item.item, support_skill_ids=p.support_skill_ids)
        writes.append(sql.set_item_supports(run.run_id, item.seq,
                                            json.dumps(list(p.support_skill_ids)), at))  # fmt: skip
    return _result(run, p, version), writes


def audit(run: RunState | None, cmd: Mutation, refused: ToolError, at: str) -> list[Write]:
    """The row that keeps a refused transition for audit (nothing else changes)."""
    if run is None:
        return []
    run.audit_count += 1
    proposal = getattr(cmd, "proposal_id", "")
    stale = json.dumps(refused.body.get("stale_fields", []))
    return [sql.insert_audit(run.run_id, run.audit_count, proposal, refused.body["code"], stale,
                             cmd.correlation_id, at)]  # fmt: skip
