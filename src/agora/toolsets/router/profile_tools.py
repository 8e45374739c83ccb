"""The Memory tools on candidates and managed Profiles: list, preview, approve or reject.

Candidates are derived on every read (`candidates`); one the user rejected stays
``suppressed`` for 180 days (``candidate-suppressed``). Managed Profiles live in the Memory
store: ``managed-personal`` under the key ``personal``, ``managed-workspace-local`` under the
workspace identity; ``user-personal`` and ``workspace-file`` are the user's own files and are
never written here (``profile-target-not-allowed``). ``transition_profile_update`` recomputes
the preview of every candidate of the workspace, finds the one with the proposal id, and
applies it only if its proposal digest, the current Profile digest (or ``missing``) and the
next revision number (``expected_state_version``) are exactly those the caller reviewed, the
backtest is acceptable (a candidate's: a rollback's is only shown) and the policy allows
promotion; the revision is written only if it is still the next one (CAS in the Memory
entity). At most 20 revisions are kept per Profile.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any, Final

import trio

from agora.mcp.results import Guided
from agora.toolsets.router import backtest_notes, candidates, previews, profiles
from agora.toolsets.router import memory_notes as notes
from agora.toolsets.router.digests import digest
from agora.toolsets.router.layers import client_roots, read_layers
from agora.toolsets.router.memory import MEMORY
from agora.toolsets.router.memory_commands import (
    ApplyRevision,
    CheckReceipt,
    History,
    Managed,
    Promoted,
    RejectCandidate,
)
from agora.toolsets.router.memory_tools import (
    SUPPRESSION_DAYS,
    make_id,
    observations,
    policy_and_root,
    policy_of,
    receipt_fields,
)
from agora.toolsets.router.ownership import memory_key
from agora.toolsets.router.retired import retired_notes
from agora.toolsets.router.run import refusals_logged
from agora.toolsets.router.sql import stamp

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall
    from agora.toolsets.router.memory_policy import Policy

SUPPRESSION: Final = dt.timedelta(days=SUPPRESSION_DAYS)


def profile_key(target: str, identity: str) -> str | None:
    """Where a managed Profile of ``target`` lives, or None for a user-owned target."""
    if target == "managed-personal":
        return "personal"
    if target == "managed-workspace-local" and identity not in ("personal", "unverified"):
        return identity
    return None


#: Each managed Profile's newest revision, by (target, profile key).
Latest = dict[tuple[str, str], "previews.Current"]
#: The rules of each managed Profile's newest revision, by (target, profile key).
Held = dict[tuple[str, str], list[dict[str, Any]]]


async def workspace_candidates(
    call: ToolCall, policy: Policy, identity: str
) -> tuple[list[candidates.Mined], list[candidates.Observed], Latest, Held]:
    """The workspace's candidates with their routes, the observations they were mined from,
    and the newest revision of each managed Profile they target, with its rules.

    A candidate the user rejected is ``suppressed``; one whose rule its target's managed
    Profile holds exactly is ``approved`` (or ``auto-promoted`` when the router promoted
    it): approving it again would change nothing. A pattern whose metrics miss the reviewed
    thresholds now (`candidates.meets`) is kept only while its rule is in force. A rejection
    or promotion stored under one of its `candidates.Mined.former_ids` counts as its own.
    """
    observed = await observations(call, identity)
    mined = candidates.mine_with_routes(observed, identity, policy.effective_mode, policy.digest,
                                        every=True)  # fmt: skip
    if not mined:
        return [], observed, {}, {}
    keys = {(m.candidate["target_profile_class"], profile_key(m.candidate["target_profile_class"],
                                                             identity)) for m in mined}  # fmt: skip
    wanted = tuple((t, k) for t, k in sorted(keys) if k is not None)
    memory = memory_key(call.principal)
    latest, rejections = await call.runtime.call(MEMORY, memory, Managed(wanted))
    held = rules_held(latest)
    # A pattern whose evidence misses the thresholds now is listed only while its rule is in
    # force: plan_work still routes through it, so the list must show what retires it.
    mined = [m for m in mined if candidates.meets(m) or in_force(m, held, identity)]
    promoted = await call.runtime.call(MEMORY, memory, Promoted())
    since = stamp(call.runtime.clock.wall() - SUPPRESSION)
    for m in mined:
        if max(rejections.get(cid, "") for cid in m.ids) >= since:
            candidates.mark(m.candidate, "suppressed", ["candidate-suppressed"])
        elif not promoted.isdisjoint(m.ids):
            candidates.mark(m.candidate, "auto-promoted", [])
        elif in_force(m, held, identity):
            candidates.mark(m.candidate, "approved", [])
        elif blockers := candidates.promotion_blockers(m, policy.profile_promotion):
            candidates.mark(m.candidate, None, blockers)
    return mined, observed, latest, held


def rules_held(latest: Latest) -> Held:
    """The rules of each Profile in ``latest``: its JSON parsed once, not once per candidate
    that targets it."""
    return {key: json.loads(current[3])["rules"] for key, current in latest.items()}


def in_force(m: candidates.Mined, held: Held, identity: str) -> bool:
    """Whether the candidate's target managed Profile holds its rule exactly (`previews.holds`:
    whatever the rule's id)."""
    target = m.candidate["target_profile_class"]
    rules = held.get((target, profile_key(target, identity) or ""))
    return rules is not None and previews.holds(rules, previews.rule_of(m))


async def list_workflow_candidates(call: ToolCall) -> dict[str, Any]:
    """The candidates of the caller's workspace (or personal scope); read-only, bounded.
    A refused workspace root, or why the list is empty, is said in a text block, as
    `get_memory_status` says it: the outputSchema has no field for it, and an empty list
    alone would not say why."""
    a = call.args
    policy, identity, root_note = await policy_and_root(call)
    found: list[dict[str, Any]] = []
    others = ""
    why = (
        f"No candidates: the Memory policy's effective mode is {policy.effective_mode}, and"
        " candidates are derived only in reviewed or automatic mode (get_memory_status says"
        " why)."
    )
    if policy.candidate_generation_enabled:
        mined, observed, _latest, _held = await workspace_candidates(call, policy, identity)
        found = [m.candidate for m in mined]
        why = candidates.why_none(observed, identity)
        said = [notes.evidence_lapsed(m.candidate, candidates.unmet(m))
                for m in mined if not candidates.meets(m)]  # fmt: skip
        said.append(candidates.why_not_listed(observed, mined, identity) or "")
        manual = await manual_profiles(call)
        again = await retired_notes(call, mined, dict(managed_keys(identity)), manual)
        others = " ".join(filter(None, [*said, *again]))
        if a["status"] == "proposed":  # (the other notes are of candidates filtered out)
            others = " ".join(again)
    if a["status"] is not None and found:
        found = [c for c in found if c["status"] == a["status"]]
        why = f"No candidate has status {a['status']}; send status null to list every one."
    limit = a["limit"]
    result = {"authority_mode": "router-local", "candidates": found[:limit],
              "truncated": len(found) > limit}  # fmt: skip
    if root_note is not None:
        note = f"{root_note[0].upper()}{root_note[1:]} No candidates are listed for it."
        return Guided(result, note)
    if not found:
        return Guided(result, why)
    shown = a["status"] in (None, "proposed")
    return Guided(result, others) if others and shown else result


#: A candidate, its proposal (None if blocked), the reason codes and the lint problems.
Previewed = tuple["candidates.Mined", dict[str, Any] | None, list[str], list[str]]


async def manual_profiles(call: ToolCall) -> list[profiles.Profile]:
    """The manual Profiles (the call's workspace file, the personal one) that outrank any
    managed Profile, highest layer first."""
    options = call.runtime.options("router")
    root = call.args.get("workspace_root")
    authorized = [str(r) for r in options.get("workspace_roots", [])]
    if root is not None:
        authorized += await client_roots(call)
    manual, _warnings = await trio.to_thread.run_sync(
        read_layers, root, authorized, options.get("personal_profile")
    )
    return manual


async def _proposals(
    call: ToolCall, policy: Policy, identity: str
) -> tuple[list[Previewed], Latest]:
    mined, observed, latest, held = await workspace_candidates(call, policy, identity)
    manual = await manual_profiles(call)
    out: list[Previewed] = []
    for m in mined:
        target = m.candidate["target_profile_class"]
        current = latest.get((target, profile_key(target, identity) or ""))
        if m.candidate["status"] == "suppressed":
            out.append((m, None, ["candidate-suppressed"], []))
            continue
        if in_force(m, held, identity):
            out.append((m, None, ["candidate-not-proposed"], []))
            continue
        out.append((m, *previews.preview(m, observed, manual, policy.digest, current)))
    return out, latest


def answer(**fields: Any) -> dict[str, Any]:
    base = {"authority_mode": "router-local", "replayed": False, "proposal": None,
            "revision_id": None, "revision_digest": None, "reason_codes": []}  # fmt: skip
    return {**base, **fields}


async def preview_profile_update(call: ToolCall) -> dict[str, Any]:
    """Preview what a candidate would change in its managed Profile; persists nothing."""
    policy, identity = await policy_of(call)
    if not policy.candidate_generation_enabled:
        off = answer(status="blocked", reason_codes=list(policy.reason_codes))
        return Guided(off, notes.memory_off(policy.effective_mode))
    wanted = call.args["candidate_id"]
    previewed, _latest = await _proposals(call, policy, identity)
    for mined, proposal, reasons, problems in previewed:
        if mined.candidate["candidate_id"] != wanted:
            continue
        target = mined.candidate["target_profile_class"]
        if target not in policy.allowed_targets:
            reasons, proposal, problems = ["profile-target-not-allowed"], None, []
        if proposal is None:
            blocked = answer(status="blocked", reason_codes=reasons)
            if problems:  # no reason code names them: a second text block does
                return Guided(blocked, "Profile lint problems: " + "; ".join(problems) + ".")
            if reasons == ["candidate-not-proposed"]:
                wanted_key = (target, profile_key(target, identity) or "")
                revisions, _kept, _decided = await call.runtime.call(
                    MEMORY, memory_key(call.principal), History((wanted_key,))
                )
                return Guided(blocked, notes.in_force(mined.candidate, revisions[wanted_key]))
            said = notes.preview_blocked(reasons, target, policy.allowed_targets)
            return blocked if said is None else Guided(blocked, said)
        done = answer(status="previewed", proposal=proposal, reason_codes=reasons)
        if "profile-backtest-failed" not in reasons:
            return done
        manual, doc = await manual_profiles(call), mined.members[0].document
        return Guided(done, backtest_notes.previewed(proposal["backtest"], manual, doc))
    missing = answer(status="not-found", reason_codes=["workflow-candidate-not-found"])
    root = call.args["workspace_root"]
    return Guided(missing, notes.candidate_not_found(wanted, root, len(previewed)))


def _refusal_codes(
    a: dict[str, Any], proposal: dict[str, Any], policy: Policy, rollback: bool
) -> list[str]:
    # A rollback's backtest is shown for review but does not block its approval: restoring
    # an earlier Profile drops the routes the newer rules plan, which is what it undoes.
    codes = []
    if a["expected_proposal_digest"] != proposal["proposal_digest"]:
        codes.append("profile-preview-stale")
    if a["expected_profile_digest"] != proposal["expected_profile_digest"]:
        codes.append("profile-drift")
    if a["expected_state_version"] != proposal["state_version"]:
        codes.append("profile-proposal-state-conflict")
    if a["action"] == "approve":
        if policy.profile_promotion == "disabled":
            codes.append("profile-promotion-disabled")
        if not (rollback or proposal["backtest"]["acceptable"]):
            codes.append("profile-backtest-failed")
    return codes


def _decided(proposal: dict[str, Any], rollback: bool) -> Guided:
    """The answer for a proposal a transition decided already: blocked, the proposal with its
    status (``applied`` or ``rejected``), and a sentence saying so (no field does)."""
    status = proposal["status"]
    blocked = answer(status="blocked", proposal=proposal,
                     reason_codes=["profile-proposal-state-conflict"])  # fmt: skip
    anew = ("Call rollback_profile_revision again for a rollback" if rollback else
            "Preview the candidate again for a proposal")  # fmt: skip
    return Guided(blocked, f"Proposal {proposal['proposal_id']} was already {status}: a "
                  f"decided proposal is never decided again. {anew} on the current managed"
                  " Profile.")  # fmt: skip


async def _drifted(
    call: ToolCall, policy: Policy, identity: str, revisions: dict[tuple[str, str], Any]
) -> Guided:
    """The answer for a proposal id no current preview derives: ``profile-drift`` if it is a
    candidate's preview made against an earlier revision of its Profile (preview again),
    else not-found."""
    wanted = call.args["proposal_id"]
    mined, observed, _latest, _held = await workspace_candidates(call, policy, identity)
    manual = await manual_profiles(call)
    for m in mined:
        target = m.candidate["target_profile_class"]
        history = revisions.get((target, profile_key(target, identity) or ""), [])
        before = previews.made_before(m, observed, manual, policy.digest, history, wanted)
        if before is not None and history:
            drift = answer(status="blocked", reason_codes=["profile-drift"])
            now = (history[-1][0], history[-1][2])
            return Guided(drift, notes.preview_drifted(wanted, m.candidate, before, now))
    missing = answer(status="not-found", reason_codes=["profile-proposal-not-found"])
    return Guided(missing, notes.proposal_not_found(wanted))


async def _kept(
    call: ToolCall, policy: Policy, identity: str
) -> dict[str, Any] | tuple[dict[str, Any], list[str]]:
    """A proposal no candidate derives now: the answer for one decided already or unknown,
    or a kept rollback proposal with what blocks it (``profile-drift``, expired)."""
    wanted = call.args["proposal_id"]
    revisions, kept, decided = await call.runtime.call(
        MEMORY, memory_key(call.principal), History(managed_keys(identity))
    )
    proposal = next((p for p in kept if p["proposal_id"] == wanted), None)
    done = next((p for p in decided if p["proposal_id"] == wanted), None)
    if done is not None:
        return _decided(done, rollback=proposal is not None)
    if proposal is None:
        return await _drifted(call, policy, identity, revisions)
    drift = []
    key = profile_key(proposal["target_profile_class"], identity)
    history = revisions.get((proposal["target_profile_class"], key), [])
    if not history or history[-1][2] != proposal["expected_profile_digest"]:
        drift.append("profile-drift")
    if proposal["expires_at"] < stamp(call.runtime.clock.wall()):
        drift.append("profile-proposal-expired")
    return proposal, drift


async def write_begun(call: ToolCall) -> tuple[dict[str, Any] | None, Policy, str, dict[str, Any]]:
    """The start of a Profile tool that writes (a transition, a rollback): the answer to give
    at once (Memory off: blocked, saying why; the call's key seen before: its receipt), or
    None, then the policy, the caller's identity and the receipt's fields."""
    policy, identity = await policy_of(call)
    fields = receipt_fields(call)
    if not policy.candidate_generation_enabled:
        off = answer(status="blocked", reason_codes=list(policy.reason_codes))
        return Guided(off, notes.memory_off(policy.effective_mode)), policy, identity, fields
    replayed = await call.runtime.call(MEMORY, memory_key(call.principal), CheckReceipt(**fields))
    return (None if replayed is None else dict(replayed)), policy, identity, fields


@refusals_logged()
async def transition_profile_update(call: ToolCall) -> dict[str, Any]:
    """Approve or reject the exact reviewed preview of a candidate."""
    a = call.args
    early, policy, identity, fields = await write_begun(call)
    if early is not None:
        return early
    found = next(((m.candidate["candidate_id"], p)
                  for m, p, _, _ in (await _proposals(call, policy, identity))[0]
                  if p is not None and p["proposal_id"] == a["proposal_id"]), None)  # fmt: skip
    drift: list[str] = []
    if found is None:  # decided already, or a rollback proposal, kept until reviewed
        kept = await _kept(call, policy, identity)
        if not isinstance(kept, tuple):
            return kept
        found, drift = ("", kept[0]), kept[1]  # a rollback suppresses no candidate
    candidate_id, proposal = found
    target = proposal["target_profile_class"]
    key = profile_key(target, identity)
    if key is None or target not in policy.allowed_targets:
        return answer(status="blocked", proposal=proposal,
                       reason_codes=["profile-target-not-allowed"])  # fmt: skip
    codes = drift + _refusal_codes(a, proposal, policy, not candidate_id)
    if codes:
        blocked = answer(status="blocked", proposal=proposal, reason_codes=codes)
        return Guided(blocked, notes.transition_blocked(codes, a, proposal, not candidate_id))
    if a["action"] == "reject":
        result = answer(status="rejected", proposal={**proposal, "status": "rejected"})
        command: Any = RejectCandidate(candidate_id=candidate_id, profile_key=key,
                                       result=result, **fields)  # fmt: skip
    else:
        no = proposal["state_version"]
        revision_id = make_id("revision", target, key, str(no), proposal["proposed_profile_digest"])
        result = answer(
            status="applied", proposal={**proposal, "status": "applied"},
            revision_id=revision_id,
            revision_digest=digest([revision_id, proposal["proposed_profile_digest"]]),
        )  # fmt: skip
        blocked = answer(status="blocked", proposal=proposal,
                          reason_codes=["profile-proposal-state-conflict"])  # fmt: skip
        command = ApplyRevision(
            target=target, profile_key=key, revision_no=no, revision_id=revision_id,
            profile_json=proposal["proposed_profile_json"],
            profile_digest=proposal["proposed_profile_digest"],
            source=proposal["proposal_id"], result=result, blocked=blocked, **fields,
        )  # fmt: skip
    reply: dict[str, Any] = await call.runtime.call(MEMORY, memory_key(call.principal), command)
    if reply.get("status") not in ("applied", "rejected"):
        return reply
    return Guided(reply, notes.transitioned(reply, candidate_id))


def managed_keys(identity: str) -> tuple[tuple[str, str], ...]:
    """The managed Profiles a workspace identity may change: personal, and its own."""
    own = profile_key("managed-workspace-local", identity)
    personal = (("managed-personal", "personal"),)
    return personal if own is None else (*personal, ("managed-workspace-local", own))
