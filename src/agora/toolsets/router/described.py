"""What each argument of the router's tools is for, as their listed inputSchemas say it.

The contract describes every argument of the twelve planning tools (``"description"`` beside
each property) but few of the eight Memory tools': ``risk_class``, ``scope``, ``action`` and
22 more are bare enums and patterns, so a model learns only their allowed values, not what a
value does, nor where a digest or an id comes from. The contract file is generated from the
seed and never edited (``src/agora/contracts/README.md``), so the descriptions are added to
the tools/list entries as they are served; the schemas are otherwise the contract's, and
validation is unchanged. A description the contract gives is kept: these fill only the
properties it leaves bare (a test checks that each one is bare there).

The planning tools' descriptions are written for the Codex host: their ``context`` is
"supplied by the Codex host", ``actor`` a "Verified user or host actor", and nothing says
where ``expected_state_version`` or ``expected_evidence_digest`` comes from. A model in any
other host (Cursor, Claude Code) reads only tools/list, maybe not the endpoint's
instructions, so `ADDED` follows the contract's words there with what such an agent must
know: that it fills the context in itself and what each member does on this server, which
version to send, where the digest comes from (never computed), and `LOOP`, the order of
the calls after ``plan_work``.
"""

from __future__ import annotations

from typing import Any, Final

from agora.toolsets.wording import describe_arguments

#: The ``context`` of every Memory tool, whose fields the contract leaves bare.
_CONTEXT: Final = {
    "session_id": "The session whose runs and Memory this call sees: the context.session_id"
    " plan_work was called with (letters, digits and . _ : - only, at most 128 characters).",
    "actor": "Who makes the request (a user or host name), for correlation only.",
    "runtime_policy_snapshot_id": "The host's policy snapshot id (any stable string, e.g."
    " local), for correlation only.",
}

_RUN: Final = (
    "The run the observation was recorded from (remember_workflow's workflow_run_id); another"
    " run is refused (workflow-context-mismatch)."
)
_CORRECTED_ONLY: Final = "null for any other feedback_type."

#: Tool -> property -> description, for each property the contract leaves bare.
ARGUMENTS: Final[dict[str, dict[str, str]]] = {
    "remember_workflow": {
        "workflow_run_id": "The completed run to remember: plan_work's workflow_run_id, a run"
        " of this session whose every exit gate passed (else not-recorded), planned under this"
        " workspace_root if its plan named one (else workflow-context-mismatch).",
        "target_profile_class": "Where a Profile learnt from runs like this one would be kept:"
        " managed-personal (in Memory, for every workspace), managed-workspace-local (in"
        " Memory, for this workspace), user-personal or workspace-file (the user's own files,"
        " never written here). It must be one of the Memory policy's allowed_targets, else"
        " not-recorded (profile-target-not-allowed).",
        "risk_class": "The risk class of the work the run did, r0 (lowest) to r3 (highest);"
        " an r3 run is never recorded (risk-class-excluded).",
        "side_effect_outcome": "What the run's side effects came to: none (it had none),"
        " known-success, known-failure (counted against a candidate's completion rate), or"
        " unknown (never recorded: unknown-side-effect-outcome).",
        "one_shot": "no-memory: do not record this run (explicit-no-memory); none or"
        " remember-once: record it (a run is recorded at most once per workspace either way).",
    },
    "record_route_feedback": {
        "workflow_run_id": _RUN,
        "observation_id": "The observation the feedback is on: remember_workflow's"
        " observation_id, recorded from this session.",
        "feedback_type": "What the user said of the run's route. corrected needs both route"
        " digests (different) and at least one correction dimension; rejected counts as a hard"
        " contract violation against the route's candidate; corrected ones raise its manual"
        " correction rate; every other type only records the outcome.",
        "reason_code": "Why, as one code, or null.",
        "correction_dimensions": "For feedback_type corrected: what the correction changed (at"
        " least one); [] for any other feedback_type.",
        "original_route_digest": "For feedback_type corrected: the route the run took, the"
        f" observation's route_signature_digest (remember_workflow's); {_CORRECTED_ONLY}",
        "corrected_route_digest": "For feedback_type corrected: the digest of the route the"
        " user wanted instead, different from original_route_digest, computed as"
        ' route_signature_digest is: "sha256:" + the SHA-256 hex digest of the RFC 8785'
        " canonical JSON of that route's plan_work fields routing_envelope and"
        " planned_skill_tree (plan it, e.g. with explicit_skill_ids, to have them): what the"
        " route does, not how it was chosen. It is"
        " recorded as sent: no run took that route, so nothing can check it;"
        f" {_CORRECTED_ONLY}",
    },
    "list_workflow_candidates": {
        "status": "List only the candidates with this status, or null for every one.",
        "limit": "The most candidates to list (1-1000); truncated says whether more exist.",
    },
    "preview_profile_update": {
        "candidate_id": "The candidate to preview: a candidate_id list_workflow_candidates"
        " answered for the same workspace_root.",
    },
    "transition_profile_update": {
        "proposal_id": "The proposal to decide: the proposal_id of a preview_profile_update"
        " or rollback_profile_revision answer.",
        "expected_proposal_digest": "The proposal_digest of the proposal as reviewed; a"
        " proposal that changed since is blocked (profile-preview-stale).",
        "expected_profile_digest": "The current managed Profile's digest as the proposal"
        " states it (its expected_profile_digest), or missing when there is no such Profile"
        " yet; a Profile that changed since is blocked (profile-drift).",
        "expected_state_version": "The revision number an approval writes: the proposal's"
        " state_version (the current revision's plus 1); another is blocked"
        " (profile-proposal-state-conflict).",
        "action": "approve writes the proposed Profile as the next revision (only if the"
        " policy's profile_promotion is not disabled and the backtest is acceptable); reject"
        " writes no Profile, and a rejected candidate is not proposed again for 180 days.",
    },
    "rollback_profile_revision": {
        "source_revision_id": "The kept revision to restore: a revision_id that"
        " transition_profile_update answered (the 20 newest are kept per Profile).",
        "expected_profile_digest": "The current managed Profile's digest; a Profile that"
        " changed since is blocked (profile-drift).",
    },
    "purge_workflow_memory": {
        "scope": "What to delete, in every workspace's Memory and the personal scope's alike"
        " (a purge names no workspace): history-only (every remembered run, with its feedback),"
        " analytics-only (feedback), candidates-only (candidate rejections and pending"
        " rollback proposals), revisions-only (every managed Profile revision but the current"
        " one), managed-profiles-only (the managed Profiles and their proposals),"
        " all-memory-data (everything, the managed Profiles only with"
        " include_managed_profiles). User-owned Profile files are never touched.",
        "expected_summary_digest": "get_memory_status's current history_summary_digest; any"
        " other is blocked (stale-summary-digest) and nothing is deleted.",
        "include_managed_profiles": "With scope all-memory-data: delete the managed Profiles"
        " too. No effect with any other scope.",
    },
}


#: Memory tool -> what follows the contract's description of it.
AFTER: Final[dict[str, str]] = {
    "purge_workflow_memory": "A purge takes no workspace_root: every scope covers the"
    " caller's whole Memory, every workspace's and the personal scope's (history-only deletes"
    " every remembered run everywhere, with its feedback). To correct one remembered run, send"
    " record_route_feedback instead.",
}


#: The planning tools' ``context`` as any host's agent must fill it: after the contract's
#: words for the object and each member.
PLANNING_CONTEXT: Final = {
    "context": "No host but Codex supplies it: fill it in yourself, with the same stable"
    ' strings in every call of one task, e.g. {"session_id": "my-repo-fix-login", "actor":'
    ' "cursor-agent", "runtime_policy_snapshot_id": "local"}. This server checks only their'
    " form (no host verifies them).",
    "context.session_id": "Choose one per task, named after the repository and the task so"
    " that you can name it again after a crash (e.g. my-repo-fix-login), and keep it: a run,"
    " and the replay of a write by its idempotency_key, is found only under"
    " the session_id it was made under (get_router_status with workflow_run_id null lists"
    " the session's runs). To use the Memory tools too, send only letters, digits and"
    " . _ : - (at most 128 characters).",
    "context.actor": "No host verifies it here: name who acts (e.g. cursor-agent), for"
    " correlation only, and keep it: a write resent with its idempotency_key but another"
    " actor is refused (idempotency-conflict).",
    "context.runtime_policy_snapshot_id": "No host policy applies on this server: send a fixed"
    " label (e.g. local), for correlation only, and keep it: a write resent with its"
    " idempotency_key but another one is refused (idempotency-conflict).",
}

_VERSION: Final = (
    'The version the last answer about this run gave: its text ends "Next write to this'
    " run: send expected_state_version N\" (a write's resulting_state_version; 1 right after"
    " plan_work). A stale one is refused (state-version-conflict, which gives the current one)."
)
_KEY: Final = (
    "A new key for each new write; resend a write with its key, unchanged, to replay its"
    " answer (the same key with another request is refused: idempotency-conflict)."
)

#: The order of the calls after ``plan_work``, which the contract's description leaves out.
LOOP: Final = (
    "Then, phase by phase: get_next_work -> record_work_event (one per check the answer names)"
    " -> evaluate_gate (with the evidence_refs and expected_evidence_digest an answer gives),"
    " until the run is completed."
)

#: Planning tool -> argument path -> what follows the contract's description of it.
ADDED: Final[dict[str, dict[str, str]]] = {
    "plan_work": {
        "expected_state_version": "0: every plan is made at 0 (a new run, and its replay);"
        " the new run is then at version 1.",
        "idempotency_key": _KEY,
        "goal_binding_id": "Send null (a Router-owned plan, which get_next_work progresses"
        " here) unless a host that drives native Goals (Codex) gave you a Goal id: a"
        " Goal-bound run gets no work items and cannot be progressed on this server. Never a"
        " task name; an empty or blank id is refused.",
    },
    "get_router_status": {
        "goal_binding_id": "null for no Goal filter (every run of the session, or the run"
        " named); a native Goal id only to see the runs bound to it.",
    },
    "evaluate_gate": {
        "expected_state_version": _VERSION,
        "idempotency_key": _KEY,
        "expected_evidence_digest": "Never compute it: copy the one an answer gives with the"
        " evaluate_gate call (the record_work_event whose event completes the phase's checks,"
        " or get_next_work). A wrong one is refused (evidence-digest-mismatch, which gives"
        " the right one); nothing is written.",
        "evidence_refs": "The event_ids of this phase's check reports (record_work_event's"
        " answers), as the answer that gives the evaluate_gate call lists them.",
        "expected_plan_revision": "The plan revision the last answer about this run gave"
        ' (its text\'s "evaluate_gate also expected_plan_revision N").',
    },
    **{
        tool: {"expected_state_version": _VERSION, "idempotency_key": _KEY}
        for tool in ("record_work_event", "propose_support_consent", "transition_support_consent")
    },
}

#: The eight Memory tools, whose ``context`` fields `_CONTEXT` describes.
MEMORY: Final = frozenset({*ARGUMENTS, "get_memory_status"})


def described(tool: dict[str, Any]) -> dict[str, Any]:
    """``tool`` (a tools/list entry from the contract, a copy the caller may change) with a
    description on each of its arguments in `ARGUMENTS`, and on its ``context`` fields,
    that the contract leaves bare; a planning tool's ``context`` and the arguments `ADDED`
    names say after the contract's words what any host's agent must know, and
    ``plan_work``'s description ends with `LOOP`, a Memory tool's with its `AFTER`."""
    name = tool["name"]
    if name in MEMORY:
        texts = dict(ARGUMENTS.get(name, {}))
        texts |= {f"context.{field}": text for field, text in _CONTEXT.items()}
        describe_arguments(tool, texts, "router", keep=True)
        if name in AFTER:
            tool["description"] = f"{tool['description']} {AFTER[name]}"
        return tool
    describe_arguments(tool, PLANNING_CONTEXT | ADDED.get(name, {}), "router", append=True)
    if name == "plan_work":
        tool["description"] = f"{tool['description']} {LOOP}"
    return tool
