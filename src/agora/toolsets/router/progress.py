"""Working a Router-owned graph: next work, reported events, advisory gates, and status.

Rules. Only a plan with a Router-owned work graph and no native Goal binding is worked
here; a Goal-bound plan answers capability-unavailable with the verified-host capability
each tool would need. The next item is the first, in graph order, whose dependencies are
all completed and which is not completed itself. An event is appended to the work item of
its phase, which must be startable (a ``ready`` item becomes ``active``); its id is the
content digest of the run, its sequence number, phase and observation, so it can serve
as a content-addressed evidence ref. An observation may report one exit-gate check as
``{"check_id": ID, "outcome": "passed" | "failed"}``; the check must belong to the phase.
A gate evaluates only its phase's persisted check ids against the events named by
``evidence_refs`` (events of that phase), after checking ``expected_evidence_digest``
(the digest of the sorted, de-duplicated refs) and ``expected_plan_revision``. A check
passes when the latest referenced event about it says ``passed``. A passed gate completes
the item and readies the items that depended on it; the last one completes the run.
Everything is advisory local evidence: ``host_transition_authorized`` is always false.
Pure: handlers return results and writes, or raise refusals before changing anything.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

import rfc8785

from agora.toolsets.router import gate_notes, guidance, replies, sql
from agora.toolsets.router.digests import canonical, digest, stable_id

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.errors import ToolError
    from agora.toolsets.router.commands import EvaluateGate, RecordEvent
    from agora.toolsets.router.state import Applied, Item, RunState

#: Largest observation accepted, as canonical JSON bytes.
MAX_OBSERVATION_BYTES: Final = 16 * 1024
LOCAL: Final = {
    "authority_mode": "router-local",
    "evidence_class": "user-or-agent-reported-local",
    "host_transition_authorized": False,
}
_STARTABLE: Final = ("ready", "active", "verifying", "paused")


def _view(run: RunState, i: Item) -> dict[str, Any]:
    return {
        "work_item_id": i.item.work_item_id,
        "workflow_run_id": run.run_id,
        "phase_id": i.item.phase_id,
        "status": i.status,
        "dependency_ids": list(i.item.dependency_ids),
        "primary_skill_id": i.item.primary_skill_id,
        "support_skill_ids": list(i.item.support_skill_ids),
        "authority_mode": "router-local",
    }


def next_work(run: RunState) -> dict[str, Any] | ToolError:
    """The ``get_next_work`` result of ``run``."""
    if run.goal_binding_id is not None:
        return replies.host_goal("get_next_work")
    if run.work_graph_id is None:
        return replies.missing_graph("get_next_work")
    item = current(run)
    status = "work-available" if item else ("completed" if run.status == "completed" else "blocked")
    result: dict[str, Any] = {
        "status": status,
        "work_item": None if item is None else _view(run, item),
        "authority_mode": "router-local",
        "host_goal_mutated": False,
        "refresh_requirements": [],
    }
    # its gate's check ids, the events recorded for it, any proposal awaiting a decision and
    # the versions of the next write, in a text block
    reply = guidance.next_item(result, run, item)
    return guidance.awaiting(reply, run.proposals.values())


def current(run: RunState) -> Item | None:
    """The work item ``run`` is at: the first not completed whose dependencies are."""
    done = run.completed_ids()
    return next(
        (i for i in run.items if i.status != "completed" and set(i.item.dependency_ids) <= done),
        None,
    )


def status(run: RunState) -> dict[str, Any]:
    """The ``get_router_status`` result of one run."""
    candidate = None
    kind = "completion-candidate" if run.status == "completed" else "progress-candidate"
    if run.goal_binding_id is not None or run.status == "completed":
        evidence = {
            "workflow_run_id": run.run_id,
            "state_version": run.state_version,
            "items": {i.item.work_item_id: i.status for i in run.items},
        }
        candidate = {
            "candidate_id": stable_id("goal-candidate", run.run_id, str(run.state_version)),
            "candidate_type": kind,
            "evidence_digest": digest(evidence),
        }
    result = {
        "workflow_run_id": run.run_id,
        "goal_binding_id": run.goal_binding_id,
        "created_work_items": len(run.items),
        "goal_status_candidate": candidate,
        "host_goal_mutated": False,
    }
    # where the run stands (the outputSchema has no field for it), in a text block
    return guidance.run_status(result, run, current(run))


def snapshot(run: RunState) -> dict[str, Any]:
    """What Memory may retain of a run: routing context and outcomes, no objective, no path;
    and the workspace root it was planned in, which Memory checks and never retains."""
    plan = run.plan
    return {
        "workflow_run_id": run.run_id,
        "status": run.status,
        "goal_binding_id": run.goal_binding_id,
        "work_graph_id": run.work_graph_id,
        "all_gates_passed": bool(run.items) and all(i.status == "completed" for i in run.items),
        "routing_context": {
            "domains": list(run.routing.get("domains", [])),
            "tags": list(run.routing.get("tags", [])),
        },
        # the workspace root the run was planned in, as sent (None: planned without one, or
        # before runs kept it): remember_workflow checks it and never stores it
        "planned_workspace_root": run.routing.get("workspace_root"),
        # each phase's exit-gate check ids: the tree names only the gate, and a Profile
        # learned from this run must check what the run checked
        "phase_check_ids": {i.item.phase_id: list(i.item.check_ids) for i in run.items},
        "route": {
            "routing_envelope": plan["routing_envelope"],
            "route_source": plan["route_source"],
            "selection_mode": plan["selection_mode"],
            "planned_skill_tree": plan["planned_skill_tree"],
            "routing_profile_digest": plan["routing_profile_digest"],
            "matched_profile_rule_id": plan["matched_profile_rule_id"],
        },
    }


def skipped_for(run: RunState, phase_id: str) -> str | None:
    """The phase a plan's work graph starts at, when `phase_id` is one of the plan's phases
    that ``routing_context.current_phase_id`` put behind it (so it has no work item), else
    None. The planned tree still lists such a phase, so "no such phase" would mislead."""
    if not run.items or run.item_for(phase_id) is not None:
        return None
    tree = {t["phase_id"] for t in run.plan["planned_skill_tree"]}
    return run.items[0].item.phase_id if phase_id in tree else None


def unknown_phase(run: RunState, phase_id: str) -> ToolError:
    """The refusal of a phase with no work item, saying why when the plan skipped it."""
    phases = [i.item.phase_id for i in run.items]
    start = skipped_for(run, phase_id)
    why = (
        f"the plan has no phase {phase_id!r}"
        if start is None
        else f"phase {phase_id!r} is before {start!r}, the current phase the plan started from"
        " (routing_context.current_phase_id), so it has no work item"
    )
    return replies.refusal(
        "unknown-phase", f"{why}; its phases are {', '.join(map(repr, phases))}: send one of them",
        phase_ids=phases,
    )  # fmt: skip


def _workable(run: RunState, tool: str, phase_id: str) -> Item:
    if run.goal_binding_id is not None:
        raise replies.host_goal(tool)
    if run.work_graph_id is None:
        raise replies.missing_graph(tool)
    item = run.item_for(phase_id)
    if item is None:
        raise unknown_phase(run, phase_id)
    if item.status == "completed":
        done = (
            "; so is the run (every phase's gate passed): plan further work as a new run"
            " (plan_work under a new context.session_id, one per task, and a new"
            " idempotency_key)"
            if run.status == "completed"
            else ": call get_next_work for the phase to work on now"
        )
        raise replies.refusal("phase-completed", f"phase {phase_id!r} is already completed{done}")
    if not set(item.item.dependency_ids) <= run.completed_ids() or item.status not in _STARTABLE:
        raise not_ready(run, item)
    return item


def not_ready(run: RunState, item: Item) -> ToolError:
    """The refusal of a phase whose earlier phases are not all completed, naming them all
    (the graph's order), and what to do: the same call cannot pass until their gates do."""
    by_id = {i.item.work_item_id: i for i in run.items}
    waiting, todo = set(), list(item.item.dependency_ids)
    while todo:
        other = by_id[todo.pop()]
        if other.status != "completed" and other.item.work_item_id not in waiting:
            waiting.add(other.item.work_item_id)
            todo.extend(other.item.dependency_ids)
    phases = [i.item.phase_id for i in run.items if i.item.work_item_id in waiting]
    phase = item.item.phase_id
    if not phases:  # (its dependencies are done, but the item is not startable)
        why = f"phase {phase!r} is {item.status}, not ready"
    else:
        named = ", ".join(map(repr, phases))
        why = (
            f"phase {phase!r} waits for earlier phases whose exit gates have not passed:"
            f" {named}; this call cannot succeed until they pass. Call get_next_work for the"
            " phase to work on now, report its checks (record_work_event) and pass its gate"
            " (evaluate_gate)"
        )
    return replies.refusal("phase-not-ready", why, retryable=True, waiting_for=phases)


def _check_observation(item: Item, observation: dict[str, Any]) -> bytes:
    try:
        body = canonical(observation)
    except rfc8785.CanonicalizationError:
        raise replies.refusal(
            "observation-invalid",
            "the observation has no canonical JSON form: send plain"
            " JSON (finite numbers, text without lone surrogates)",
        ) from None
    if len(body) > MAX_OBSERVATION_BYTES:
        raise replies.refusal(
            "observation-invalid",
            f"the observation's canonical JSON (RFC 8785) is {len(body)} bytes; at most"
            f" {MAX_OBSERVATION_BYTES} (16 KiB) are kept: send a smaller one",
        )
    check = observation.get("check_id")
    if check is not None:
        if check not in item.item.check_ids:
            raise replies.refusal(
                "unknown-check-id", f"phase {item.item.phase_id!r} has no check {check!r}:"
                f" send one of {', '.join(item.item.check_ids)} as check_id",
                check_ids=list(item.item.check_ids),
            )  # fmt: skip
        if (outcome := observation.get("outcome")) not in ("passed", "failed"):
            raise replies.refusal("observation-invalid", _no_outcome(outcome))
    return body


def _no_outcome(outcome: object) -> str:
    """What a check observation whose outcome is missing or not ``passed``/``failed`` needs."""
    if outcome is None:
        return 'a check needs an outcome: add "outcome": "passed" or "failed" to the observation'
    sent = json.dumps(outcome)
    sent = sent if len(sent) <= 64 else sent[:61] + "..."
    return f'a check\'s "outcome" must be "passed" or "failed", not {sent}: send one of them'


def record_event(run: RunState, cmd: RecordEvent, version: int, at: str) -> Applied:
    """Append one reported observation to its phase's work item."""
    item = _workable(run, "record_work_event", cmd.phase_id)
    if cmd.activation_receipt_ref is not None:
        raise replies.unverifiable_receipt()
    body = _check_observation(item, cmd.observation)
    seq = run.event_count + 1
    event_id = digest({"workflow_run_id": run.run_id, "seq": seq, "phase_id": cmd.phase_id,
                       "observation": cmd.observation})  # fmt: skip
    writes = [sql.insert_event(run.run_id, seq, event_id, cmd.phase_id, body.decode(),
                               cmd.correlation_id, at)]  # fmt: skip
    run.event_count = seq
    run.events[event_id] = (cmd.phase_id, dict(cmd.observation))
    if item.status == "ready":
        item.status = "active"
        writes.append(sql.update_items(run.run_id, [(item.seq, item.status)], at))
    run.status = "in-progress"
    result = {"event_ids": [event_id], "replayed": False, "resulting_state_version": version}
    return {**result, **LOCAL}, writes


def evidence_digest(refs: list[str] | tuple[str, ...]) -> str:
    """The digest a gate call must expect: of the sorted, de-duplicated evidence refs."""
    return digest(sorted(set(refs)))


def reported(run: RunState, item: Item, refs: Iterable[str]) -> dict[str, str]:
    """Each check of ``item``'s gate that the events ``refs`` report, with the outcome the
    latest of them (in recorded order) gives it; a ref that is no event is passed over."""
    latest: dict[str, str] = {}
    order = {ref: n for n, ref in enumerate(run.events)}  # events are kept in recorded order
    for ref in sorted(set(refs) & order.keys(), key=order.__getitem__):
        obs = run.events[ref][1]
        if obs.get("check_id") in item.item.check_ids:
            latest[obs["check_id"]] = obs.get("outcome", "")
    return latest


def newer_failures(run: RunState, item: Item, refs: Iterable[str]) -> dict[str, str]:
    """Each check of ``item``'s gate whose latest event of the phase is not among ``refs``,
    comes after every referenced event about that check, and reports it ``failed``, with that
    event's id: the gate counts only referenced events, so the agent must hear of it."""
    sent, latest = set(refs), {}
    for ref, (phase, obs) in run.events.items():  # in recorded order
        check = obs.get("check_id")
        if phase == item.item.phase_id and check in item.item.check_ids:
            latest[check] = ref
    return {
        check: ref
        for check, ref in latest.items()
        if ref not in sent and run.events[ref][1].get("outcome") == "failed"
    }


def _not_ready(run: RunState, item: Item) -> str:
    """The words that lead a digest refusal while a check of ``item``'s gate has a latest
    event that says failed: the gate would fail (and still be written), so the phase is not
    ready; empty otherwise."""
    if not (failed := gate_notes.failed_checks(run, item)):
        return ""
    said = (
        f"event of {failed[0]} says" if len(failed) == 1 else f"events of {', '.join(failed)} say"
    )
    each = "it" if len(failed) == 1 else "each"
    return (
        f"Phase {item.item.phase_id} is not ready: the latest {said} failed, so the gate"
        f" would fail (get_next_work); report {each} again once it passes and copy the"
        " evaluate_gate call that answer gives. Otherwise: "
    )


def evaluate_gate(run: RunState, cmd: EvaluateGate, version: int, at: str) -> Applied:
    """Evaluate a phase's exit gate against its referenced events (advisory, local)."""
    item = _workable(run, "evaluate_gate", cmd.phase_id)
    if cmd.expected_plan_revision != run.plan_revision:
        raise replies.refusal(
            "stale-plan-revision",
            f"expected plan revision {cmd.expected_plan_revision}, the plan is at "
            f"{run.plan_revision}; send current_plan_revision as expected_plan_revision",
            retryable=True, current_plan_revision=run.plan_revision,
        )  # fmt: skip
    unknown = [r for r in cmd.evidence_refs if run.events.get(r, ("",))[0] != cmd.phase_id]
    if unknown:
        elsewhere = ", ".join(sorted({repr(run.events[r][0]) for r in unknown if r in run.events}))
        where = f" (some are events of phase {elsewhere})" if elsewhere else ""
        raise replies.refusal(
            "unknown-evidence-ref",
            f"not events of phase {cmd.phase_id!r}{where}: send as evidence_refs only the"
            f" event_ids that record_work_event returned for phase {cmd.phase_id!r}",
            refs=unknown,
        )
    found = evidence_digest(cmd.evidence_refs)
    if found != cmd.expected_evidence_digest:
        raise replies.refusal(
            "evidence-digest-mismatch",
            _not_ready(run, item) + "expected_evidence_digest is not the digest of these"
            " evidence_refs (sorted and"
            " de-duplicated); if they are the refs you mean, send the evidence_digest given here"
            " as expected_evidence_digest",
            evidence_digest=found,
        )
    latest = reported(run, item, cmd.evidence_refs)
    failures = [c for c in item.item.check_ids if latest.get(c) != "passed"]
    passed = not failures
    run.gate_count += 1
    writes = [sql.insert_gate(run.run_id, run.gate_count, cmd.phase_id, found, passed,
                              json.dumps(failures), at)]  # fmt: skip
    if passed:
        item.status = "completed"
        changes = [(item.seq, item.status)]
        done = run.completed_ids()
        for other in run.items:
            if other.status == "pending" and set(other.item.dependency_ids) <= done:
                other.status = "ready"
                changes.append((other.seq, other.status))
        writes.append(sql.update_items(run.run_id, changes, at))  # one statement for all
        run.status = "completed" if len(done) == len(run.items) else "in-progress"
    result = {
        "status": "passed" if passed else "failed",
        "passed": passed,
        "evidence_digest": found,
        "failures": failures,
        "mandatory_failures": failures,
        "gate_scope": "router-local",
        "replayed": False,
        "resulting_state_version": version,
    }
    return {**result, **LOCAL}, writes
