"""``rollback_profile_revision``: a reviewable proposal to restore a managed Profile's revision.

It never writes a Profile: it keeps a proposal (status ``pending``) that
``transition_profile_update`` approves or rejects like a candidate's. The proposal restores a
kept revision whose Profile differs from the current one (the current revision, or one
holding the same Profile, would be a proposal that changes nothing: ``blocked``,
``rollback-source-revision-unavailable``), and is bound to the current Profile's digest
(else ``profile-drift``). Its backtest (`backtest`) replays the restored Profile over the
workspace's runs of the Profile's target by a preview's rules: a run is matched only when
the Profile plans exactly its route (`previews.plans_exactly`), and one the current Profile
plans exactly and the restored one would not is a planned route regression. A blocked
answer says in a second text block what to send instead: the outputSchema has no field for it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agora.mcp.results import Guided
from agora.toolsets.router import memory_notes as notes
from agora.toolsets.router import previews, profiles
from agora.toolsets.router.digests import canonical, digest
from agora.toolsets.router.memory import MEMORY
from agora.toolsets.router.memory_commands import History, StoreProposal
from agora.toolsets.router.memory_tools import make_id, observations
from agora.toolsets.router.ownership import memory_key
from agora.toolsets.router.profile_tools import answer, managed_keys, manual_profiles, write_begun
from agora.toolsets.router.purge_notes import RETIRE_BY_PURGE
from agora.toolsets.router.run import refusals_logged
from agora.toolsets.router.sql import stamp

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall
    from agora.toolsets.router.candidates import Observed
    from agora.toolsets.router.previews import Current


def _diff(old: str, new: str) -> str:
    before = {r["rule_id"]: r for r in json.loads(old)["rules"]}
    after = {r["rule_id"]: r for r in json.loads(new)["rules"]}
    return canonical({
        "added_rules": sorted(set(after) - set(before)),
        "removed_rules": sorted(set(before) - set(after)),
        "changed_rules": sorted(k for k in set(after) & set(before) if after[k] != before[k]),
    }).decode()  # fmt: skip


def drift_note(sent: str, history: list[Current]) -> str:
    """What a ``profile-drift`` refusal of a rollback means and which digest to send."""
    no, rid, current, _json = history[-1]
    note = (
        f"profile-drift: expected_profile_digest must be the digest of the managed Profile as"
        f" it is now, {current} (revision {no}, {rid}). transition_profile_update's answer"
        " names it as proposal.proposed_profile_digest, and plan_work's as"
        " routing_profile_digest when that Profile planned the route."
    )
    if any(sent == digest([r[1], r[2]]) for r in history):
        note += (
            f" {sent} is a revision_digest, which digests a revision's id with its Profile:"
            " it is not the Profile's digest, and the Profile has not changed."
        )
    elif any(sent == r[2] for r in history[:-1]):
        note += f" {sent} is an earlier revision's Profile: the Profile changed since."
    return note + " Send the call again with that expected_profile_digest."


def _same_profile(source: Current, history: list[Current], target: str) -> Guided:
    no, rid, _digest, _json = history[-1]
    which = "is" if source[1] == rid else f"holds the same Profile as revision {no},"
    blocked = answer(status="blocked", reason_codes=["rollback-source-revision-unavailable"])
    others = notes.restorable(history)
    instead = (
        f"Send source_revision_id of a kept revision holding another Profile ({others})."
        if others
        else "No kept revision holds another Profile: there is nothing to roll back to."
        + RETIRE_BY_PURGE
    )
    return Guided(blocked, (
        f"Revision {source[1]} {which} the current revision of the {target} Profile: a"
        f" rollback restores a different, earlier Profile, so nothing was proposed. {instead}"
    ))  # fmt: skip


def backtest(source_json: str, current_json: str, observed: list[Observed],
             manual: list[profiles.Profile]) -> dict[str, Any]:  # fmt: skip
    """The restored Profile replayed over ``observed`` (the target's runs) by a preview's
    rules. Its positives are the runs its rules match, matched when it plans exactly their
    route; ``unexpected_match_count`` counts those of them the current Profile matches no
    rule for, and ``planned_route_regressions`` the runs the current Profile plans exactly
    and the restored one would not. A manual Profile resolving a positive's context outranks
    it (``manual_precedence``). Acceptable as a preview is: coverage at least 0.75, no
    regression, no manual precedence."""
    rules = json.loads(source_json)["rules"]
    now = json.loads(current_json)["rules"]
    own = [o for o in observed if any(previews.rule_matches(r, o) for r in rules)]
    matched = sum(previews.plans_exactly(rules, o) for o in own)
    regressions = sum(
        previews.plans_exactly(now, o) and not previews.plans_exactly(rules, o) for o in observed
    )
    coverage = matched / len(own) if own else 0.0
    manual_precedence = any(
        profiles.resolve(manual, tuple(o.document.get("domains", [])),
                         tuple(o.document.get("tags", [])), None).rule_id is not None
        for o in own
    )  # fmt: skip
    test = {
        "workspace_isolation": True, "capability_gap_summary": "unavailable",
        "positive_observation_count": len(own), "positive_match_count": matched,
        "positive_match_coverage": coverage,
        "unexpected_match_count": sum(
            not any(previews.rule_matches(r, o) for r in now) for o in own
        ),
        "planned_route_regressions": regressions, "manual_precedence": manual_precedence,
        "manual_profile_digests": sorted(p.digest for p in manual), "shadowed_rule_ids": [],
        "equal_rank_conflicts": [],
        "acceptable": coverage >= previews.MIN_COVERAGE and regressions == 0
        and not manual_precedence,
    }  # fmt: skip
    test["backtest_digest"] = digest(test)
    return test


@refusals_logged()
async def rollback_profile_revision(call: ToolCall) -> dict[str, Any]:
    """Propose, for review, to restore a managed Profile's earlier revision; writes no Profile."""
    a = call.args
    early, policy, identity, fields = await write_begun(call)
    if early is not None:
        return early
    revisions, _proposals_kept, _decided = await call.runtime.call(
        MEMORY, memory_key(call.principal), History(managed_keys(identity))
    )
    found = next(((key, rev) for key, history in revisions.items() for rev in history
                  if rev[1] == a["source_revision_id"]), None)  # fmt: skip
    if found is None:
        missing = answer(status="not-found", reason_codes=["rollback-source-revision-unavailable"])
        kept = [(t, no, rid) for (t, _k), history in sorted(revisions.items())
                for no, rid, d, _j in reversed(history) if d != history[-1][2]]  # fmt: skip
        return Guided(missing, notes.revision_not_found(a["source_revision_id"], kept))
    (target, key), source = found
    _no, source_id, source_digest, source_json = source
    history = revisions[(target, key)]
    current_no, _current_id, current_digest, current_json = history[-1]
    if a["expected_profile_digest"] != current_digest:
        blocked = answer(status="blocked", reason_codes=["profile-drift"])
        return Guided(blocked, drift_note(a["expected_profile_digest"], history))
    if source_digest == current_digest:
        return _same_profile(source, history, target)
    observed = [o for o in await observations(call, identity)
                if o.document["target_profile_class"] == target]  # fmt: skip
    test = backtest(source_json, current_json, observed, await manual_profiles(call))
    diff = _diff(current_json, source_json)
    now = call.runtime.clock.wall()
    proposal: dict[str, Any] = {
        "candidate_id": make_id("candidate", "rollback", source_id),
        "candidate_digest": digest({"rollback_of": source_id, "profile": source_digest}),
        "target_profile_class": target,
        "workspace_identity_digest": None if key == "personal" else key,
        "expected_profile_digest": current_digest, "state_version": current_no + 1,
        "proposed_profile_json": source_json, "proposed_profile_digest": source_digest,
        "semantic_diff_json": diff, "semantic_diff_digest": digest(diff),
        "backtest": test, "backtest_digest": test["backtest_digest"],
        "policy_digest": policy.digest, "status": "pending", "created_at": stamp(now),
        "expires_at": stamp(now + previews.VALID_FOR),
        "proposal_id": make_id("proposal", "rollback", source_id, current_digest),
    }  # fmt: skip
    proposal["proposal_digest"] = digest(proposal)
    result = answer(status="pending", proposal=proposal)
    command = StoreProposal(target=target, profile_key=key, proposal=proposal, result=result,
                            **fields)  # fmt: skip
    reply: dict[str, Any] = await call.runtime.call(MEMORY, memory_key(call.principal), command)
    if reply.get("status") != "pending" or reply["proposal"]["backtest"]["acceptable"]:
        return reply
    return Guided(reply, notes.rollback_backtest(reply["proposal"]["backtest"]))
