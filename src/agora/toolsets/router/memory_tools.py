"""The Memory tools on observations: status, remember, feedback, candidates and purge.

Each reads the policy first (files only, off the Trio thread). ``get_memory_status`` creates
nothing. ``remember_workflow`` records a workflow only when capture is enabled and it is
eligible: completed with every gate passed, a known side-effect outcome, not ``r3``, not
``no-memory``, and a target the policy allows; otherwise it answers ``memory-disabled`` or
``not-recorded`` with every reason code and writes nothing; a run planned under a workspace
root is remembered in that workspace only (else ``workflow-context-mismatch``). An
observation keeps only the retained routing context (envelope, route source, skill tree,
profile digest and rule, the routing domains and tags) and outcomes: no objective text, no
path; the workspace is a digest of its real path.
``record_route_feedback`` takes typed values bound to an observation of the caller's session
and run; a correction must name both route digests (the original being the observation's)
and at least one dimension. ``purge_workflow_memory`` works whatever the policy says. The
background `sweep` enforces retention (90 days, at most 1000 observations per workspace;
hourly, on the injectable wall clock).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any, Final

import trio

from agora.errors import ToolError
from agora.logsafe import loggable
from agora.mcp.results import Guided
from agora.toolsets.router import (
    candidates,
    commands,
    memory_policy,
    memory_sql,
    replies,
    workspace,
)
from agora.toolsets.router import (
    memory_notes as notes,
)
from agora.toolsets.router.digests import digest, request_digest, route_signature
from agora.toolsets.router.layers import roots_and_why
from agora.toolsets.router.memory import MEMORY, PURGED_MORE
from agora.toolsets.router.memory_commands import Feedback, Purge, Remember, Summary, Sweep
from agora.toolsets.router.ownership import memory_key, memory_key_of, memory_owner
from agora.toolsets.router.purge_notes import correct_instead
from agora.toolsets.router.run import kind_of, refusals_logged
from agora.toolsets.router.sql import stamp

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime
    from agora.toolsets.base import ToolCall

log = logging.getLogger(__name__)
PERSONAL_SCOPE: Final = "personal"


def read_policy(workspace_root: str | None, authorized: list[str], personal_path: str | None
                 ) -> tuple[memory_policy.Policy, str, str | None]:  # fmt: skip
    """The effective policy, the workspace identity, and why the root was refused (None if
    it was not)."""
    personal, missing = workspace.personal_profile(personal_path)
    if workspace_root is None:
        policy = memory_policy.resolve(personal, None, workspace_scoped=False, root_verified=False,
                                       missing=missing)  # fmt: skip
        return policy, PERSONAL_SCOPE, None
    real_root, trusted, warning = workspace.authorized_root(workspace_root, authorized)
    text = None
    if real_root is not None and trusted is not None:
        text, _ = workspace.file_in_root(real_root, trusted, memory_policy.WORKSPACE_FILE,
                                         "workspace-memory-policy")  # fmt: skip
    verified = real_root is not None
    policy = memory_policy.resolve(personal, text, workspace_scoped=True, root_verified=verified,
                                   missing=missing)  # fmt: skip
    identity = digest({"workspace": str(real_root)}) if verified else "unverified"
    return policy, identity, warning


#: Policy problems already logged (each once per process, not once per call).
_LOGGED: set[str] = set()


def _log_problems(policy: memory_policy.Policy) -> None:
    for problem in policy.problems:
        if problem not in _LOGGED:
            if len(_LOGGED) >= 256:
                _LOGGED.clear()
            _LOGGED.add(problem)
            log.warning("router: Memory stays off: %s", loggable(problem))


async def policy_of(call: ToolCall) -> tuple[memory_policy.Policy, str]:
    """The effective Memory policy of this call and its workspace identity (or ``personal``).

    A problem in a policy file is logged (once) with the field and value it names.
    """
    policy, identity, _note = await policy_and_root(call)
    return policy, identity


async def policy_and_root(call: ToolCall) -> tuple[memory_policy.Policy, str, str | None]:
    """`policy_of`, and a sentence saying why the call's workspace root was refused."""
    policy, identity, note, _authorized, _why = await _policy_and_roots(call)
    return policy, identity, note


async def _policy_and_roots(
    call: ToolCall, ask: bool = False
) -> tuple[memory_policy.Policy, str, str | None, list[str], str | None]:
    """`policy_and_root`, and the roots that authorized the call's workspace root (the
    client's asked when the call names a root, or when ``ask``: a run's planned root is
    judged by them even when the call names none)."""
    options = call.runtime.options("router")
    root = call.args.get("workspace_root")
    authorized = [str(r) for r in options.get("workspace_roots", [])]
    why = None
    if root is not None or ask:
        asked, why = await roots_and_why(call)
        authorized += asked
    policy, identity, warning = await trio.to_thread.run_sync(
        read_policy, root, authorized, options.get("memory_policy")
    )
    _log_problems(policy)
    return policy, identity, notes.root_refused(warning, why, root), authorized, why


async def personal_policy(runtime: Runtime) -> memory_policy.Policy:
    """The effective policy of the personal scope (no workspace root), read off the thread."""
    path = runtime.options("router").get("memory_policy")
    policy, _identity, _root = await trio.to_thread.run_sync(read_policy, None, [], path)
    _log_problems(policy)
    return policy


def make_id(prefix: str, *parts: str) -> str:
    """``<prefix>:<32 hex>`` bound to ``parts``."""
    return f"{prefix}:{hashlib.sha256(chr(0).join(parts).encode()).hexdigest()[:32]}"


def receipt_fields(call: ToolCall) -> dict[str, str]:
    """Session, idempotency key, request digest and tool of a Memory mutation (its
    correlation identity included: the contract's "a changed identity is not the same
    replay")."""
    a = call.args
    return {
        "tool": call.tool,
        "session_id": a["context"]["session_id"],
        "idempotency_key": a["idempotency_key"],
        "request_digest": request_digest(call.tool, a, correlated=True),
        "legacy_digest": request_digest(call.tool, a),
    }


async def get_memory_status(call: ToolCall) -> dict[str, Any]:
    """The effective policy and the caller's history summary; creates nothing."""
    policy, identity, root_note = await policy_and_root(call)
    exists, summary, count = await call.runtime.call(
        MEMORY, memory_key(call.principal), Summary(identity)
    )
    status = {
        "authority_mode": "router-local", "actual_skill_consistency": "unavailable",
        "personal_ceiling": policy.personal_ceiling,
        "workspace_requested_mode": policy.workspace_requested_mode,
        "effective_mode": policy.effective_mode, "capture_enabled": policy.capture_enabled,
        "candidate_generation_enabled": policy.candidate_generation_enabled,
        "profile_promotion": policy.profile_promotion,
        "allowed_targets": list(policy.allowed_targets), "policy_digest": policy.digest,
        "reason_codes": list(policy.reason_codes), "memory_store_exists": exists,
        "history_summary_digest": summary, "eligible_workflow_count": count,
    }  # fmt: skip
    notes = [] if root_note is None else [root_note[0].upper() + root_note[1:]]
    if policy.problems:  # the outputSchema has no field for them: a second text block
        notes.append("Memory policy problems: " + "; ".join(policy.problems) + ".")
    notes += [f"{ceiling}." for ceiling in [memory_policy.ceiling_note(policy)] if ceiling]
    return Guided(status, "\n".join(notes)) if notes else status


def _ineligible(a: dict[str, Any], policy: memory_policy.Policy, run: dict[str, Any] | None
                ) -> list[str]:  # fmt: skip
    reasons = []
    if a["one_shot"] == "no-memory":
        reasons.append("explicit-no-memory")
    if a["risk_class"] == "r3":
        reasons.append("risk-class-excluded")
    if a["side_effect_outcome"] == "unknown":
        reasons.append("unknown-side-effect-outcome")
    if a["target_profile_class"] not in policy.allowed_targets:
        reasons.append("profile-target-not-allowed")
    if run is None:
        reasons.append("workflow-run-not-found")
    elif run["status"] != "completed" or not run["all_gates_passed"]:
        reasons += ["workflow-not-completed", "required-gate-not-passed"]
    return reasons


async def _planned_elsewhere(call: ToolCall, run: dict[str, Any] | None, identity: str,
                             authorized: list[str], why: str | None) -> str | None:  # fmt: skip
    """Why ``run`` is not remembered in the workspace this call names, when it was planned
    under another root (one that does not resolve to the same authorized workspace, or none:
    the personal scope): that root to send, or, if it is no authorized root now, why (``why``
    no client root was asked) and to authorize it first. None if it may be, as for a run
    planned under no root (or before runs kept it)."""
    planned: str | None = None if run is None else run["planned_workspace_root"]
    sent = call.args["workspace_root"]
    if run is None or planned is None or planned == sent:
        return None
    real, _, refused = await trio.to_thread.run_sync(workspace.authorized_root, planned, authorized)
    there = "unverified" if real is None else digest({"workspace": str(real)})
    if sent is not None and there == identity:
        return None
    if real is None:
        return notes.planned_unauthorized(run["workflow_run_id"], planned, refused, why)
    return replies.planned_elsewhere(run["workflow_run_id"], planned)


@refusals_logged()
async def remember_workflow(call: ToolCall) -> dict[str, Any]:
    """Record one eligible completed workflow under the opt-in policy, in the workspace it
    was planned in only (``workflow-context-mismatch``, naming that workspace's root)."""
    a = call.args
    run = await _run_of(call)
    planned = run is not None and run["planned_workspace_root"] is not None
    policy, identity, root_note, authorized, why = await _policy_and_roots(call, ask=planned)
    # The workspace first: under another root than the run's, no Memory policy applies.
    if (elsewhere := await _planned_elsewhere(call, run, identity, authorized, why)) is not None:
        raise replies.refusal("workflow-context-mismatch", elsewhere)
    result: dict[str, Any] = {
        "authority_mode": "router-local", "replayed": False, "policy_digest": policy.digest,
        "target_profile_class": a["target_profile_class"], "candidate_id": None,
        "observation_id": None, "observation_digest": None, "route_signature_digest": None,
    }  # fmt: skip
    if not policy.capture_enabled:
        off = {**result, "status": "memory-disabled", "reason_codes": list(policy.reason_codes)}
        return Guided(off, notes.memory_disabled(policy, root_note))
    reasons = _ineligible(a, policy, run)
    if reasons or run is None:
        not_recorded = {**result, "status": "not-recorded", "reason_codes": reasons}
        return Guided(not_recorded, notes.not_recorded(reasons, policy.allowed_targets))
    signature = route_signature(run["route"])
    observation = {
        **run["route"], **run["routing_context"], "route_signature_digest": signature,
        "phase_check_ids": run["phase_check_ids"],
        "side_effect_outcome": a["side_effect_outcome"], "risk_class": a["risk_class"],
        "target_profile_class": a["target_profile_class"], "one_shot": a["one_shot"],
        "recorded_day": call.runtime.clock.wall().date().isoformat(),
    }  # fmt: skip
    observation_id = make_id("observation", identity, run["workflow_run_id"])
    row = {
        "observation_id": observation_id, "workspace_identity": identity,
        "workflow_run_id": run["workflow_run_id"], "session_id": a["context"]["session_id"],
        "route_signature_digest": signature, "observation_json": json.dumps(observation),
        "observation_digest": digest(observation), "recorded_day": observation["recorded_day"],
    }  # fmt: skip
    result |= {
        "status": "recorded", "reason_codes": ["candidate-not-proposed"],
        "observation_id": observation_id, "observation_digest": row["observation_digest"],
        "route_signature_digest": signature,
    }  # fmt: skip
    reply: dict[str, Any] = await call.runtime.call(
        MEMORY, memory_key(call.principal), Remember(row=row, result=result, **receipt_fields(call))
    )
    at = reply.pop("recorded_at", None)
    if at is None:
        new = reply["status"] == "recorded" and not reply["replayed"]
        return Guided(reply, notes.recorded()) if new else reply
    return Guided(reply, (  # the outputSchema has no field to say this call stored nothing
        f"Already recorded: run {run['workflow_run_id']}'s observation was stored at {at} by an "
        "earlier remember_workflow call; this call wrote nothing. The answer is the stored "
        "observation: its target_profile_class, risk_class and side_effect_outcome stand, and "
        "the values sent now were not kept. " + correct_instead(reply["observation_id"])
    ))  # fmt: skip


@refusals_logged()
async def record_route_feedback(call: ToolCall) -> dict[str, Any]:
    """Record typed feedback bound to an observation of the caller's session and run."""
    a = call.args
    policy, identity = await policy_of(call)
    result: dict[str, Any] = {
        "authority_mode": "router-local", "replayed": False, "policy_digest": policy.digest,
        "observation_id": a["observation_id"], "feedback_id": None, "feedback_digest": None,
    }  # fmt: skip
    if not policy.capture_enabled:
        return {**result, "status": "memory-disabled", "reason_codes": list(policy.reason_codes)}
    original, corrected = a["original_route_digest"], a["corrected_route_digest"]
    dims = sorted(set(a["correction_dimensions"]))
    if a["feedback_type"] == "corrected":
        bound = original is not None and corrected is not None and original != corrected
        if not (bound and dims):
            raise replies.refusal("correction-unbound", "a correction needs both route digests,"
                                  " different: original_route_digest the observation's"
                                  " route_signature_digest (remember_workflow's answer) and"
                                  " corrected_route_digest the route the user chose, and at"
                                  " least one correction dimension")  # fmt: skip
    elif original is not None or corrected is not None or dims:
        raise replies.refusal("correction-unbound", "only a correction names routes or"
                              " dimensions: send both route digests null and"
                              " correction_dimensions [], or feedback_type corrected")  # fmt: skip
    feedback = {
        "observation_id": a["observation_id"], "workflow_run_id": a["workflow_run_id"],
        "feedback_type": a["feedback_type"], "reason_code": a["reason_code"],
        "correction_dimensions": dims, "original_route_digest": original,
        "corrected_route_digest": corrected,
    }  # fmt: skip
    session, key = a["context"]["session_id"], a["idempotency_key"]
    feedback_id = make_id("feedback", session, key)
    row = {
        "feedback_id": feedback_id, "observation_id": a["observation_id"],
        "feedback_json": json.dumps(feedback), "feedback_digest": digest(feedback),
    }  # fmt: skip
    result |= {"status": "recorded", "reason_codes": [], "feedback_id": feedback_id,
               "feedback_digest": row["feedback_digest"]}  # fmt: skip
    command = Feedback(observation_id=a["observation_id"], workflow_run_id=a["workflow_run_id"],
                       original_route_digest=original, workspace_identity=identity,
                       row=row, result=result,
                       **receipt_fields(call))  # fmt: skip
    try:
        reply: dict[str, Any] = await call.runtime.call(MEMORY, memory_key(call.principal), command)
    except ToolError as refused:
        if refused.body.get("message") != replies.OTHER_WORKSPACE:
            raise
        run = await _run_of(call)
        if run is None or (root := run["planned_workspace_root"]) is None:
            raise
        raise replies.refusal("workflow-context-mismatch", replies.other_workspace(root)) from None
    return reply


async def _run_of(call: ToolCall) -> dict[str, Any] | None:
    """The call's run as its session sees it (None: not found in this session)."""
    session = call.args["context"]["session_id"]
    try:
        run: dict[str, Any] = await call.runtime.call(
            kind_of(call.runtime), call.args["workflow_run_id"], commands.Snapshot(session)
        )
    except ToolError:
        return None
    return run


@refusals_logged()
async def purge_workflow_memory(call: ToolCall) -> dict[str, Any]:
    """Purge one confirmed scope bound to the current summary digest."""
    a = call.args
    command = Purge(scope=a["scope"], expected_summary_digest=a["expected_summary_digest"],
                    include_managed_profiles=a["include_managed_profiles"],
                    **receipt_fields(call))  # fmt: skip
    reply: dict[str, Any] = dict(
        await call.runtime.call(MEMORY, memory_key(call.principal), command)
    )
    more = reply.pop(PURGED_MORE, None)  # no outputSchema field counts these: a text block
    if reply.get("reason_codes") == ["stale-summary-digest"]:
        sent = a["expected_summary_digest"]
        return Guided(reply, notes.purge_stale(sent, reply["summary_digest_before"]))
    unused = a["include_managed_profiles"] and a["scope"] != "all-memory-data"
    said = [notes.flag_unused(a["scope"])] if unused else []
    if reply["status"] == "purged" and more:
        said.append(notes.purged(reply, more))
    return Guided(reply, "\n".join(said)) if said else reply


async def observations(call: ToolCall, identity: str) -> list[candidates.Observed]:
    """The caller's observations of one workspace identity with their feedback types."""
    owner = memory_owner(memory_key(call.principal))
    return await observations_in(call.runtime, owner, identity)


async def observations_in(runtime: Runtime, owner: str, identity: str
                          ) -> list[candidates.Observed]:  # fmt: skip
    """`observations` of ``owner``'s Memory, for a caller-less task (the promotion)."""
    rows = await runtime.read(lambda conn: memory_sql.read_workspace(conn, owner, identity))
    return [
        candidates.Observed(oid, run, json.loads(doc), day, at,
                            tuple(json.loads(f)["feedback_type"] for f in fb))
        for oid, run, doc, day, at, fb in rows or []
    ]  # fmt: skip


#: Retention of observations: how old, how many, and how often the sweep runs (seconds).
RETENTION_DAYS: Final = 90
RETENTION_MAX: Final = 1000
#: Days a rejected candidate stays suppressed; the sweep then deletes the rejection.
SUPPRESSION_DAYS: Final = 180
RETENTION_EVERY: Final = 3600.0


async def sweep(runtime: Runtime, owner: str) -> None:
    """One retention pass over ``owner``'s Memory: observations older than 90 days, then
    beyond each workspace's newest 1000; rejected-candidate suppressions older than 180
    days."""
    now = runtime.clock.wall()
    cutoff = stamp(now - dt.timedelta(days=RETENTION_DAYS))
    suppressed = stamp(now - dt.timedelta(days=SUPPRESSION_DAYS))
    command = Sweep(cutoff=cutoff, keep=RETENTION_MAX, suppressed_before=suppressed)
    observations, suppressions = await runtime.call(MEMORY, memory_key_of(owner), command)
    if observations or suppressions:
        log.info("router memory retention dropped %d observations and %d expired suppressions",
                 observations, suppressions)  # fmt: skip
