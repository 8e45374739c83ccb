"""The sentences a blocked or not-found Memory answer adds in a second text block.

The Memory tools' outputSchemas hold reason codes and, at most, the proposal: no field says
which value a refused argument needed or where to read it. Each sentence here names the
argument, the value to send (or the answer field that holds it) and the call to make next,
so an agent can act on the answer alone. Pure.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.router import backtest_notes
from agora.toolsets.router.candidates import REVIEWED
from agora.toolsets.router.layers import CLIENT_ROOTS_UNUSED
from agora.toolsets.router.memory_policy import ceiling_note
from agora.toolsets.router.purge_notes import RETIRE_BY_PURGE
from agora.toolsets.router.workspace import file_roots

if TYPE_CHECKING:
    from agora.toolsets.router.memory_policy import Policy
    from agora.toolsets.router.previews import Current


def restorable(history: list[Current]) -> str:
    """The kept revisions a rollback accepts (those holding another Profile than the current
    one), newest first, or "" if there is none."""
    current = history[-1][2]
    return "; ".join(
        f"revision {no}: {rid}" for no, rid, d, _j in reversed(history) if d != current
    )


def in_force(candidate: dict[str, Any], history: list[Current]) -> str:
    """Why an approved (or auto-promoted) candidate is not previewed: its rule is the
    Profile's (newest revision of ``history``) already."""
    no, rid, profile, _json = history[-1]
    candidate_id, target = candidate["candidate_id"], candidate["target_profile_class"]
    earlier = restorable(history)
    undo = (
        f"to undo it, send rollback_profile_revision source_revision_id of an earlier revision"
        f" ({earlier})."
        if earlier
        else "no kept revision holds another Profile, so there is nothing to roll back to."
        + RETIRE_BY_PURGE
    )
    return (
        f"candidate-not-proposed: candidate {candidate_id} is {candidate['status']}: revision"
        f" {no} ({rid}) of the {target} Profile, digest {profile}, holds its rule exactly, so"
        " a preview would propose no change. It is proposed again only if its runs' route"
        f" changes; {undo}"
    )


def evidence_lapsed(candidate: dict[str, Any], unmet: str) -> str:
    """Why an approved (or auto-promoted) candidate is listed though its metrics miss the
    reviewed thresholds, and how to retire its rule."""
    return (
        f"Candidate {candidate['candidate_id']} is {candidate['status']}: its rule is in force"
        f" in the {candidate['target_profile_class']} Profile and plan_work routes through it,"
        f" but its evidence no longer meets the reviewed thresholds (it misses {unmet}); its"
        " metrics are listed as they are now. To retire the rule, send"
        " rollback_profile_revision a source_revision_id of a revision without it"
        " (preview_profile_update of this candidate lists them), or purge_workflow_memory"
        " scope managed-profiles-only (or all-memory-data with include_managed_profiles),"
        " which deletes every managed Profile, every workspace's and the personal one."
    )


def candidate_not_found(candidate_id: str, root: str | None, count: int) -> str:
    """Why a candidate id names no candidate, and which to send."""
    if root is None:
        return (
            f"workflow-candidate-not-found: no candidate {candidate_id} in the personal scope"
            " (workspace_root null). A workspace's candidates are previewed and decided only"
            " under its root: send the workspace_root list_workflow_candidates listed it for."
        )
    return (
        f"workflow-candidate-not-found: none of this workspace's {count} candidates is"
        f" {candidate_id}. Candidates are derived anew on every read, and one whose runs"
        " changed has a new id: send a candidate_id list_workflow_candidates lists now for"
        " the same workspace_root."
    )


def transition_blocked(codes: list[str], sent: dict[str, Any], proposal: dict[str, Any],
                       kept: bool) -> str:  # fmt: skip
    """What each reason a transition was blocked for asks the caller to send instead.

    Args:
        codes: The reason codes of the blocked answer.
        sent: The call's arguments.
        proposal: The proposal as it is now (the answer's ``proposal``).
        kept: Whether it is a kept rollback proposal (not derived anew from a candidate).
    """
    again = ("call rollback_profile_revision again for a proposal on the current Profile"
             if kept else "review the proposal in this answer")  # fmt: skip
    said = {
        "profile-preview-stale": "profile-preview-stale: the proposal changed since it was"
        f" reviewed (new runs, or a changed Profile): its proposal_digest is now"
        f" {proposal['proposal_digest']}; review the proposal in this answer and send that"
        " as expected_proposal_digest.",
        "profile-drift": (
            f"profile-drift: the managed Profile changed since this rollback was proposed; {again}."
            if kept
            else "profile-drift: expected_profile_digest must be the"
            f" proposal's expected_profile_digest, {proposal['expected_profile_digest']}, the"
            f" Profile's digest as it is now (you sent {sent['expected_profile_digest']})."
        ),
        "profile-proposal-state-conflict": "profile-proposal-state-conflict:"
        " expected_state_version must be the proposal's state_version,"
        f" {proposal['state_version']}, the revision an approval writes (you sent"
        f" {sent['expected_state_version']}).",
        "profile-proposal-expired": f"profile-proposal-expired: it expired at"
        f" {proposal['expires_at']}; {again}.",
        "profile-promotion-disabled": "profile-promotion-disabled: the Memory policy's"
        " profile_promotion is disabled, so nothing is approved (get_memory_status shows it);"
        " reject stays possible.",
        "profile-backtest-failed": "profile-backtest-failed: the proposal's backtest"
        f" (proposal.backtest) is not acceptable, so it cannot be approved:"
        f" {backtest_notes.causes(proposal['backtest'])}.",
    }
    return "Blocked: " + " ".join(said[c] for c in codes if c in said)


def recorded() -> str:
    """What ``candidate-not-proposed`` means on a newly recorded observation."""
    runs, days = REVIEWED[0], REVIEWED[1]
    return (
        "Recorded. candidate-not-proposed: remembering a run proposes nothing by itself."
        " list_workflow_candidates derives candidates from the workspace's remembered runs"
        f" ({runs} runs of one route on {days} days at least), and preview_profile_update"
        " then shows what a candidate would change."
    )


def memory_off(effective_mode: str) -> str:
    """Why a Profile tool answered blocked with the policy's reason codes."""
    return (
        f"Blocked: the Memory policy's effective mode is {effective_mode}; candidates,"
        " previews and Profile changes need reviewed or automatic. get_memory_status says"
        " why (its reason_codes, and a text block for a policy file's problems)."
    )


def preview_blocked(codes: list[str], target: str, allowed: tuple[str, ...]) -> str | None:
    """What a blocked preview's reason codes ask for, or None if no sentence says more."""
    said = {
        "candidate-suppressed": "candidate-suppressed: the user rejected this candidate, so"
        " it is not proposed for 180 days from the rejection (purge_workflow_memory scope"
        " candidates-only lifts every suppression, of every workspace).",
        "matcher-seed-required": "matcher-seed-required: its runs named no routing domains or"
        " tags, and a rule with no matchers would capture all work. Plan such work with"
        " routing_context domains or tags, and remember those runs.",
        "profile-target-not-allowed": f"profile-target-not-allowed: its target {target} is"
        f" not one of the Memory policy's allowed_targets ({', '.join(allowed) or 'none'}).",
    }
    found = [said[c] for c in codes if c in said]
    return "Blocked: " + " ".join(found) if found else None


def proposal_not_found(proposal_id: str) -> str:
    """Why a transition found no proposal, and which id to send."""
    return (
        f"profile-proposal-not-found: no proposal {proposal_id} for this workspace_root. Send"
        " the proposal_id of a preview_profile_update or rollback_profile_revision answer"
        " made with the same workspace_root (null: the personal scope); a candidate whose"
        " runs changed since has a new proposal: preview it again."
    )


def preview_drifted(proposal_id: str, candidate: dict[str, Any], before: str,
                    now: tuple[int, str]) -> str:  # fmt: skip
    """Why a candidate's proposal made against an earlier Profile is refused: ``before`` is
    the Profile digest it was made for, ``now`` the current revision number and digest."""
    return (
        f"profile-drift: proposal {proposal_id} of candidate {candidate['candidate_id']} was"
        f" previewed against the {candidate['target_profile_class']} Profile {before}, which"
        f" has changed since (it is now revision {now[0]}, digest {now[1]}), so it can no"
        " longer be applied. Call preview_profile_update for the candidate again and review"
        " the proposal it answers on the current Profile."
    )


def revision_not_found(revision_id: str, kept: list[tuple[str, int, str]]) -> str:
    """Why a rollback found no revision ``revision_id``; ``kept``: (target, number, id) of
    the revisions it could restore (holding another Profile than the current), newest first."""
    listed = "; ".join(f"{t} revision {no}: {rid}" for t, no, rid in kept)
    which = (
        f"the kept revisions a rollback accepts (each holding another Profile than the"
        f" current one): {listed}."
        if listed
        else "no kept revision holds another Profile than the current one, so there is"
        " nothing to roll back to." + RETIRE_BY_PURGE
    )
    return (
        f"rollback-source-revision-unavailable: no kept revision {revision_id} of a managed"
        " Profile this call may change (managed-personal, and managed-workspace-local for the"
        f" workspace_root sent). Send a revision_id transition_profile_update answered; {which}"
    )


#: What a ``not-recorded`` remember_workflow answer's reason codes mean and what to do.
_NOT_RECORDED = {
    "explicit-no-memory": "one_shot no-memory asks that this run not be remembered",
    "risk-class-excluded": "a run of risk_class r3 is never remembered",
    "unknown-side-effect-outcome": "a run whose side_effect_outcome is unknown is never"
    " remembered: send it again once the outcome is known",
    "workflow-run-not-found": "workflow_run_id names no run of this session: send the"
    " workflow_run_id plan_work answered, in the session (context.session_id) that planned it",
    "workflow-not-completed": "the run is not completed: every phase's exit gate must pass"
    " (evaluate_gate) before it is remembered; send remember_workflow again then",
}


def not_recorded(codes: list[str], allowed: tuple[str, ...]) -> str:
    """Why remember_workflow recorded nothing, and what to do, one sentence per reason."""
    said = [_NOT_RECORDED[c] for c in codes if c in _NOT_RECORDED]
    if "profile-target-not-allowed" in codes:
        said.append(f"target_profile_class must be one the policy allows ({', '.join(allowed)})")
    return "Nothing was recorded: " + "; ".join(said) + "."


def purge_stale(sent: str, current: str) -> str:
    """Why a purge was blocked as ``stale-summary-digest`` and what to send."""
    return (
        f"stale-summary-digest: expected_summary_digest {sent} is not the Memory's summary"
        f" digest now, {current} (every Memory write changes it). Call get_memory_status again"
        " to review what the purge deletes, and send its history_summary_digest. A purge names"
        " no workspace: its scope is"
        " deleted in every workspace's Memory and the personal scope's alike."
    )


_DISABLED: Final = {
    "personal-policy-missing": "personal-policy-missing: no personal Memory policy file is"
    " configured or readable ([options.router] memory_policy names it; format"
    " agora-router-memory-policy/1); the operator adds one to turn Memory on",
    "invalid-memory-policy": "invalid-memory-policy: a Memory policy file is not valid; fix it"
    " (get_memory_status names the file, the field and the value)",
    "ambiguous-memory-policy": "ambiguous-memory-policy: a Memory policy file gives a key"
    " twice; fix it (get_memory_status names the file and the key)",
    "workspace-policy-missing": "workspace-policy-missing: the workspace has no Memory"
    " request file read (.codex/workflow-skill-router-memory.json under an authorized root,"
    ' {"format": "agora-router-memory-request/1", "requested_mode": "observe"} or higher),'
    " and without one a workspace's mode is disabled; the user creates it",
    "workspace-root-unverified": "workspace-root-unverified: the workspace_root is not an"
    " authorized workspace root, so its request file was not read; send an authorized root"
    " (or null, the personal scope)",
    "memory-disabled": "memory-disabled: the effective mode is disabled, so nothing is"
    " remembered (get_memory_status shows the ceiling and the request)",
}


def memory_disabled(policy: Policy, root_note: str | None) -> str:
    """Why remember_workflow answered ``memory-disabled``, one sentence per reason code, with
    what to do; ``root_note`` says why the call's workspace root was refused, if it was."""
    said = [
        f"workspace-root-unverified: {root_note.rstrip('.')}" if c == "workspace-root-unverified"
        and root_note else _DISABLED.get(c, c) for c in policy.reason_codes
    ]  # fmt: skip
    said = [_named(s, policy) for s in said]
    return f"Nothing was recorded: Memory is {policy.effective_mode} here. " + "; ".join(said) + "."


def _named(said: str, policy: Policy) -> str:
    """``said`` (one reason's sentence) with what only ``policy`` knows: the personal policy
    file tried, and what the ceiling it exceeds comes from."""
    if said.startswith("workspace-policy-exceeds-ceiling"):
        return ceiling_note(policy) or said
    tried = [p for p in policy.problems if p.startswith("personal policy: /")]
    if said.startswith("personal-policy-missing") and tried:
        return f"{said} ({tried[0]})"
    return said


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def purged(result: dict[str, Any], more: dict[str, int]) -> str:
    """The exact counts of every kind of row a purge deleted (``result``: its answer;
    ``more``: the kinds its outputSchema has no field for)."""
    return (
        f"Purged ({result['scope']}), exact counts deleted:"
        f" {_n(result['deleted_observations'], 'observation', 'observations')},"
        f" {_n(result['deleted_feedback'], 'feedback entry', 'feedback entries')},"
        f" {_n(result['deleted_command_receipts'], 'command receipt', 'command receipts')},"
        f" {_n(more['rejections'], 'rejection', 'rejections')} (each suppressing a candidate),"
        f" {_n(more['rollback_proposals'], 'rollback proposal', 'rollback proposals')},"
        f" {_n(more['revisions'], 'managed Profile revision', 'managed Profile revisions')}"
        f" ({_n(more['promotions'], 'automatic promotion', 'automatic promotions')} among"
        f" them), and {_n(more['managed_profiles'], 'managed Profile', 'managed Profiles')}"
        " deleted whole."
    )


def flag_unused(scope: str) -> str:
    """Why ``include_managed_profiles`` did nothing for a purge of ``scope``."""
    return (
        f"include_managed_profiles had no effect: it adds the managed Profiles to scope"
        f" all-memory-data only, not to {scope} (scope managed-profiles-only purges them)."
    )


#: What each refusal of a workspace root means (as `plan_work`'s profile warnings say it).
_ROOT_REFUSED: Final = {
    "workspace-root-not-absolute": "it is a relative path; send an absolute one",
    "workspace-root-not-authorized": "it is under no authorized root, lexically or by its real"
    " path",
    "workspace-root-missing": "it is under an authorized root but does not exist",
}


def root_meaning(warning: str, root: str | None = None) -> str:
    """What the refusal ``warning`` of the workspace root ``root`` means, in the words of
    docs/router-profiles.md's table; a ``file://`` URI (an MCP root's form) is named as one,
    with the filesystem path to send instead."""
    if warning == "workspace-root-not-absolute" and (root or "").lower().startswith("file:"):
        path = next(iter(file_roots([str(root)])), None)
        send = f"send the filesystem path itself ({json.dumps(path)})" if path else (
            "send the filesystem path itself"
        )  # fmt: skip
        return f"it is a file:// URI, not a filesystem path: {send}"
    return _ROOT_REFUSED.get(warning, warning)


def root_refused(warning: str | None, why: str | None, root: str | None = None) -> str | None:
    """The sentence explaining ``workspace-root-unverified``: which refusal, what to do."""
    if warning is None:
        return None
    note = f"workspace root refused: {warning}: {root_meaning(warning, root)}"
    if warning == "workspace-root-not-authorized":
        note += f"; {CLIENT_ROOTS_UNUSED}: {why}" if why else (
            "; add it to [options.router] workspace_roots or to the MCP client's roots"
        )  # fmt: skip
    return note + "; its Memory request file was not read, so Memory is off for it."


def planned_unauthorized(run_id: str, root: str, warning: str | None, why: str | None) -> str:
    """Why ``remember_workflow`` refuses a run planned under a root that is no authorized
    workspace root now (``warning``; ``why`` no client root was asked). The root is judged
    when the call is made, so, unless it is not absolute, it is authorized, then sent (the
    words the same call with the root gets): the run is not lost."""
    warning = warning or "workspace-root-not-authorized"
    said = (f"run {run_id} was planned under the workspace_root {json.dumps(root)} (plan_work's"
            " routing_context.workspace_root), and a run is remembered only in the workspace it"
            f" was planned in, but that root is refused now ({warning}:"
            f" {root_meaning(warning, root)}")  # fmt: skip
    if warning == "workspace-root-not-absolute":  # never authorized: no call can remember it
        return said + ("), so this run cannot be remembered: plan the work again under an"
                       " authorized root (or none, the personal scope)")  # fmt: skip
    if warning == "workspace-root-not-authorized":
        said += f"; {CLIENT_ROOTS_UNUSED}: {why}" if why else (
            "; add it to [options.router] workspace_roots or to the MCP client's roots"
        )  # fmt: skip
    return said + (f"); the root is judged when remember_workflow is called: once it is"
                   f" authorized and exists, send workspace_root {json.dumps(root)}")  # fmt: skip


def rollback_backtest(test: dict[str, Any]) -> str:
    """Why a pending rollback whose backtest is not acceptable may still be approved."""
    return (
        f"The rollback's backtest is not acceptable ({test['planned_route_regressions']}"
        " planned route regressions, coverage"
        f" {test['positive_match_coverage']:.2f}), but a rollback's backtest does not block"
        " its approval: restoring an earlier Profile drops the routes the newer rules plan,"
        " which is what a rollback undoes. Review the runs it regresses, then approve or"
        " reject it with transition_profile_update."
    )


def transitioned(reply: dict[str, Any], candidate_id: str) -> str:
    """What an applied or rejected transition changed (``candidate_id``: "" for a rollback)."""
    proposal = reply["proposal"]
    target = proposal["target_profile_class"]
    if reply["status"] == "applied":
        return (
            f"Applied: {reply['revision_id']} is now revision {proposal['state_version']} of"
            f" the {target} Profile, digest {proposal['proposed_profile_digest']}; plan_work"
            " routes matching work by it from now on. rollback_profile_revision proposes to"
            " restore an earlier revision."
        )
    if not candidate_id:
        return "Rejected: the rollback proposal is closed; the Profile is unchanged."
    return (
        f"Rejected: the {target} Profile is unchanged, and candidate {candidate_id} is"
        " suppressed for 180 days (purge_workflow_memory scope candidates-only lifts it, and"
        " every other suppression of every workspace)."
    )
