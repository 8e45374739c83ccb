"""The router's typed answers that are not results: refusals, capability-unavailable, internal.

Each is a `agora.errors.ToolError` whose structured body the model reads (an ``isError``
result), its JSON also the text block: hosts that show the model only text must not lose the
``fallback_action`` or ``retryable``. Three shapes, all with ``ok: false`` and a ``code``:

- ``capability-unavailable``: the tool (or this branch of it) needs something this server
  does not have. It names the ``required_capabilities``, the ``local_conditions`` and the
  ``fallback_action``, from the contract's availability facts; nothing was changed.
- a refusal (``state-version-conflict``, ``idempotency-conflict``, ``consent-stale``, ...):
  the request cannot apply to the current state; ``retryable`` says whether re-reading and
  retrying can help; nothing was changed.
- ``internal-error``: sanitized (a fixed message, ``retryable``, ``state_changed: false``, or
  ``"unknown"`` when a commit's outcome is unknown)
  with a ``correlation_id`` to find the server's log line: a corrupt run, and every failure
  the core hands `shape_failure` (a failed commit or load, a stopped actor, a bug).

This module only builds bodies.
"""

from __future__ import annotations

import functools
import json
import secrets
from typing import TYPE_CHECKING, Any, Final

from agora.errors import Failure, ToolError
from agora.mcp.contracts import load_contract
from agora.toolsets.router.meant import summary

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.mcp.validation import ValidationIssue

UNAVAILABLE: Final = "capability-unavailable"

#: Local fallback when the plan's work graph is missing (ADR: create or replay locally).
GRAPH_FALLBACK: Final = (
    "Create the plan with plan_work, or replay it with the same idempotency key."
)

#: Native-Goal-bound plans: what each graph tool would need from a verified host.
HOST_REQUIREMENTS: Final[dict[str, tuple[str, ...]]] = {
    "get_next_work": ("verified-host-scheduler",),
    "record_work_event": ("verified-event-store", "activation-receipt-verifier"),
    "evaluate_gate": ("verified-evidence-store", "gate-authority"),
}


@functools.cache
def facts(tool: str) -> dict[str, Any]:
    """The contract's availability facts of ``tool`` (``x-agora``)."""
    spec = load_contract("router").tools[tool]
    return dict(spec.extra)


def unavailable(
    tool: str,
    *,
    required: tuple[str, ...] | None = None,
    fallback: str | None = None,
    reason: str | None = None,
    message: str | None = None,
) -> ToolError:
    """The typed ``capability-unavailable`` answer for ``tool``.

    Args:
        tool: The tool called.
        required: The capabilities this branch needs (default: the tool's own).
        fallback: The action to take instead (default: the contract's fallback).
        reason: A short machine-readable reason (``verified-host-required``, ...).
        message: What the contract's fields leave unsaid (the id at fault, the step open
            to any agent); none by default.
    """
    f = facts(tool)
    body = {
        "ok": False,
        "code": UNAVAILABLE,
        "tool": tool,
        "availability": f["availability"],
        "risk": f["risk"],
        "reason": reason or f["availability"],
        "required_capabilities": list(required or f["required_capabilities"]),
        "local_conditions": list(f["local_conditions"]),
        "fallback_action": fallback or f["fallback"],
        "state_changed": False,
    }
    if message is not None:
        body["message"] = message
    return ToolError(body)


def _no_run(run_id: str) -> str:
    return (
        f"no run {run_id or '(an empty id)'} in this session: check workflow_run_id and"
        " context.session_id (get_router_status with workflow_run_id null lists the session's"
        " runs)"
    )


def missing_run(tool: str, run_id: str) -> ToolError:
    """No run ``run_id`` in the caller's session (never made, or another session's, alike).
    A local-ready tool (`get_router_status`, `propose_support_consent`) can run here, so it
    answers the not-found refusal ``workflow-run-not-found`` (the contract's own word for a
    missing run) rather than ``capability-unavailable``; the others lack the condition their
    availability names, a Router-owned work graph (`missing_graph`)."""
    if facts(tool)["availability"] != "local-ready":
        return missing_graph(tool, run_id)
    return refusal(
        "workflow-run-not-found",
        f"{_no_run(run_id)}; to start one, plan_work with expected_state_version 0",
        workflow_run_id=run_id,
    )


#: The fallback for an unknown run id (a typo, a work_graph_id, another session_id?).
UNKNOWN_RUN_FALLBACK: Final = (
    "Check workflow_run_id and context.session_id first (get_router_status with"
    " workflow_run_id null lists this session's runs); only for a run that is not there,"
    " create the plan with plan_work, or replay it with the same idempotency key."
)


def missing_graph(tool: str, run_id: str | None = None) -> ToolError:
    """No Router-owned work graph for this run: create or replay the plan. With ``run_id``
    (no such run in the caller's session: never made, or another session's, alike), a
    ``message`` names it and what to check, and the fallback says to check it before planning
    again (`UNKNOWN_RUN_FALLBACK`), which the contract's fields leave unsaid."""
    message = None if run_id is None else f"{_no_run(run_id)}, before planning again"
    return unavailable(
        tool, required=("router-owned-work-graph",), reason="router-owned-work-graph-missing",
        fallback=GRAPH_FALLBACK if run_id is None else UNKNOWN_RUN_FALLBACK, message=message,
    )  # fmt: skip


def host_goal(tool: str) -> ToolError:
    """The plan is bound to a native Goal: only a verified host may act on it. The
    ``message`` gives the step open to any agent, which the contract's fallback (a verified
    host scheduler) leaves unsaid."""
    return unavailable(
        tool, required=HOST_REQUIREMENTS[tool], reason="native-goal-authority",
        message="this run is bound to a native Goal (goal_binding_id), whose work only a"
        " verified host may drive; without one, plan_work with goal_binding_id null gives a"
        " Router-owned work graph that get_next_work, record_work_event and evaluate_gate drive",
    )  # fmt: skip


def unverifiable_receipt() -> ToolError:
    """``record_work_event`` with an ``activation_receipt_ref``: no local verifier exists."""
    return unavailable(
        "record_work_event", required=("activation-receipt-verifier",),
        reason="activation-receipt-unverifiable",
        message="activation_receipt_ref cannot be verified by this local router: send"
        " activation_receipt_ref null to record the observation as advisory progress",
    )  # fmt: skip


#: Every refusal code the router answers (docs/router.md lists each with its meaning).
REFUSAL_CODES: Final = frozenset(
    {
        "state-version-conflict", "idempotency-conflict", "unknown-phase", "phase-not-ready",
        "phase-completed", "observation-invalid", "unknown-check-id", "unknown-evidence-ref",
        "evidence-digest-mismatch", "stale-plan-revision", "route-mismatch",
        "invalid-support-skills", "goal-revision-mismatch", "proposal-not-found",
        "proposal-already-decided", "consent-stale", "evaluation-not-authorized",
        "repeats-too-many", "sealed-case-ref-invalid", "sealed-case-unknown",
        "sealed-case-escapes-directory", "sealed-case-malformed",
        "sealed-case-directory-unavailable", "sealed-case-file-unreadable",
        "sealed-case-file-too-large", "sealed-case-file-absent", "evaluation-run-unknown",
        "no-paired-metrics", "record-conflict", "comparison-unknown", "export-kind-unsupported",
        "observation-not-found", "workflow-context-mismatch", "correction-unbound",
        "workflow-run-not-found",
    }
)  # fmt: skip


def refusal(code: str, message: str, *, retryable: bool = False, **details: Any) -> ToolError:
    """A typed refusal: the request does not apply to the current state; nothing changed.

    Raises:
        ValueError: for a code missing from `REFUSAL_CODES` (a bug, caught by the tests).
    """
    if code not in REFUSAL_CODES:
        raise ValueError(f"undocumented router refusal code {code!r}")
    body = {"ok": False, "code": code, "message": message, "retryable": retryable, **details}
    return ToolError(body)


def conflict(
    expected: int, current: int, exists: bool = True, *, completed: bool = False
) -> ToolError:
    """The CAS refusal: the caller's ``expected_state_version`` is not the current one,
    worded for the case: no such run yet (``plan_work`` creates it from 0), a run already
    ``completed`` (nothing is left to write), a version ahead of the run, or one behind it
    (another write landed first)."""
    if completed:
        why = (
            f"expected state version {expected}, the run is at {current} and completed: every"
            " phase passed its gate, so no write is left to retry (get_router_status gives"
            " its outcome; plan_work starts a new run)"
        )
    elif not exists:
        why = (
            f"expected state version {expected}, but this run does not exist yet: plan_work"
            " creates a new run with expected_state_version 0 (the new run is then at 1)"
        )
    elif expected > current:
        why = (
            f"expected state version {expected} is ahead of the run, which is at {current}:"
            f" send expected_state_version {current} (current_state_version)"
        )
    else:
        why = (
            f"expected state version {expected}, the run is at {current}: another write landed"
            " first; check it still applies (get_next_work), then retry with"
            " current_state_version as expected_state_version"
        )
    return refusal(
        "state-version-conflict",
        why,
        retryable=not completed,
        expected_state_version=expected,
        current_state_version=current,
    )


def key_reused(
    key: str, run_id: str | None = None, *, tool: str | None = None, applied_at: int | None = None
) -> ToolError:
    """The refusal of an idempotency key reused for a different request; ``run_id`` names
    the run the key made or wrote to (a plan's key: the run an agent may have lost);
    ``tool``: the tool that used the key first, when known; ``applied_at``: the
    ``expected_state_version`` the key's write was applied at (an agent that lost its reply
    and resent it with the version the run moved to meets this)."""
    on_run: dict[str, Any] = {} if run_id is None else {"workflow_run_id": run_id}
    used = (
        "this idempotency key was used"
        + ("" if tool is None else f" by {tool}")
        + " for a different request"
        + ("" if run_id is None else f", on run {run_id}")
    )
    if applied_at is not None:
        said = (
            f"{used}: if this one resends that write, it was applied at expected_state_version"
            f" {applied_at}, so resend it unchanged (expected_state_version {applied_at}) to"
            " replay its answer; if it is a new write, use a new key"
        )
    else:
        said = f"{used}; use a new key"
    return refusal("idempotency-conflict", said, idempotency_key=key, **on_run)


#: Feedback naming no observation of the caller's session, or another run's or route's.
NO_OBSERVATION: Final = (
    "no such observation in this session: send the observation_id that remember_workflow"
    " returned for this session's run"
)


def other_run(observation_id: str, run_id: str) -> str:
    """Why feedback naming another run than its observation's is refused."""
    return (
        f"observation {observation_id} is of run {run_id}, not of the workflow_run_id sent:"
        f" send workflow_run_id {run_id} (the run remember_workflow remembered)"
    )


def other_route(observation_id: str, route: str) -> str:
    """Why feedback naming another original route than its observation's is refused."""
    return (
        f"original_route_digest must be null or observation {observation_id}'s"
        f" route_signature_digest, {route} (remember_workflow's answer)"
    )


OTHER_WORKSPACE: Final = (
    "the observation was remembered in another workspace: send the workspace_root its"
    " remember_workflow call named (null only for one remembered without a workspace)"
)


def other_workspace(root: str) -> str:
    """`OTHER_WORKSPACE`, naming the root the observation's run was planned under (and so
    remembered under)."""
    return (
        "the observation was remembered in another workspace: its run was planned under the"
        f" workspace_root {json.dumps(root)}; send that workspace_root"
    )


def planned_elsewhere(run_id: str, root: str) -> str:
    """Why ``remember_workflow`` refuses a run planned in another workspace than the one it
    names: that workspace's root, as the caller sent it to ``plan_work``."""
    return (
        f"run {run_id} was planned in the workspace_root {json.dumps(root)} (plan_work's"
        " routing_context.workspace_root), and a run is remembered only in the workspace it"
        " was planned in: send that workspace_root"
    )


def unknown_proposal(proposal_id: str) -> ToolError:
    """No such support proposal among the caller's runs (never made, or another session's:
    the same answer)."""
    return refusal(
        "proposal-not-found",
        f"no proposal {proposal_id!r} in your runs: propose_support_consent returns the"
        " proposal_id to decide",
    )


def new_correlation() -> str:
    """A fresh public-safe correlation id for an internal failure."""
    return f"corr-{secrets.token_hex(8)}"


#: What an internal failure says, by `agora.errors.Failure` kind: fixed text, no detail.
INTERNAL_MESSAGES: Final[dict[str, str]] = {
    "corrupt": "the workflow run's stored rows are inconsistent; nothing was changed, and this"
    " run cannot be used again: plan the work as a new run (plan_work with a new"
    " idempotency_key) and report this correlation_id to the server's operator",
    "internal": "the router could not complete this call; nothing was changed: retry, and if it"
    " fails again report this correlation_id to the server's operator",
    "store": "the router's store could not complete this call; nothing was changed",
    "stopped": "the router stopped before answering (shutting down); nothing was changed",
    "unexpected": "internal error in the router; nothing was changed: report this"
    " correlation_id to the server's operator",
    "unknown": "the router's store did not confirm this call's change; it may or may not have "
    "been saved: read the run before calling again",
    # The disk's part in a failed commit (`agora.errors.StoreCause`): retry once it is fixed.
    "disk_full": "the router's store is out of disk space; nothing was changed: retry later",
    "read_only": "the router's store is read-only (its files refuse writes); nothing was "
    "changed: retry later",
    "io_error": "the router's store had a disk I/O error; nothing was changed: retry later",
}

#: The schema every internal-error body satisfies (`agora.toolsets.base.Toolset.failure_schema`).
INTERNAL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["ok", "code", "message", "retryable", "correlation_id", "state_changed"],
    "properties": {
        "ok": {"const": False},
        "code": {"const": "internal-error"},
        "message": {"enum": sorted(set(INTERNAL_MESSAGES.values()))},
        "retryable": {"type": "boolean"},
        "correlation_id": {"type": "string", "pattern": "^corr-[0-9a-f]{16}$"},
        "state_changed": {"enum": [False, "unknown"]},
    },
}


def internal_body(kind: str, retryable: bool, correlation_id: str) -> dict[str, Any]:
    """The sanitized internal-error body: a fixed message and the id of the server's log line."""
    return {
        "ok": False, "code": "internal-error", "message": INTERNAL_MESSAGES[kind],
        "retryable": retryable, "correlation_id": correlation_id, "state_changed": False,
    }  # fmt: skip


def internal(correlation_id: str) -> ToolError:
    """A corrupt run's internal error (not retryable: the rows stay corrupt)."""
    body = internal_body("corrupt", False, correlation_id)
    return ToolError(body)


def shape_failure(failure: Failure) -> dict[str, Any]:
    """Every internal failure the core reports, as the router's sanitized internal error
    (``state_changed: "unknown"`` when the commit was in flight as the store failed)."""
    if failure.outcome_unknown:
        body = internal_body("unknown", False, failure.correlation_id)
        body["state_changed"] = "unknown"
        return body
    kind = failure.cause or failure.kind  # a disk fault is named for what it is
    return internal_body(kind, failure.retryable, failure.correlation_id)


def argument_rejection(issues: Sequence[ValidationIssue]) -> dict[str, Any]:
    """The structured body of a call whose arguments break the inputSchema (or the limits)."""
    return {
        "ok": False,
        "code": "invalid-arguments",
        "message": summary(issues),
        "issues": [{"field": i.field, "rule": i.keyword, "message": i.detail} for i in issues],
        "retryable": False,
        "state_changed": False,
    }
