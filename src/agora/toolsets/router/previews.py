"""Profile previews: what a candidate would change in its managed Profile, and a backtest.

`preview` is pure and deterministic: the same store and files give byte-identical output
and digests. The proposed Profile (format ``agora-router-profile/1``, id
``managed-<target>``) holds one rule built from the candidate: its matchers are the
pattern's routing domains (any of) and tags (all of), its envelope and phases the
candidate's route, each phase's exit gate with the gate id and the check ids its runs
reported (kept with each observation; never the gate id as a check), added to (or replacing
its earlier version in) the target's current managed Profile, whose digest the proposal
expects (``missing`` when there is none) and whose next revision number is the proposal's
``state_version``. A candidate without matchers is not previewed (``matcher-seed-required``):
a rule matching everything would capture all work.

The backtest replays the rule over the workspace's observations: ``positive_*`` counts the
pattern's own runs it matches and whose route it reproduces exactly (envelope, phases,
skills, gate ids and each gate's check ids: a rule that changed a check id would refuse the
reports those runs made); ``unexpected_match_count`` counts other runs it would also match,
and ``planned_route_regressions`` those of them whose route it would change. A manual
Profile (workspace file or personal) whose rules match the pattern's context outranks any
managed Profile: ``manual_precedence``. The preview is acceptable when coverage is at least
0.75, nothing regresses, and no manual Profile takes precedence. A proposed Profile that is
no valid Profile is blocked (``profile-lint-failed``) with its problems (`lint`).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.router import profiles
from agora.toolsets.router.digests import canonical, digest, route_signature

if TYPE_CHECKING:
    from agora.toolsets.router.candidates import Mined, Observed

MIN_COVERAGE: Final = 0.75
#: How long a preview's proposal stays valid after the newest evidence it rests on.
VALID_FOR: Final = dt.timedelta(days=7)


def _checks(doc: dict[str, Any], phase_id: str, gate_id: str) -> list[str] | None:
    """A recorded phase's exit-gate check ids, or None when the observation does not say.

    Observations recorded before their check ids were kept (``phase_check_ids``) still name
    the builtin layout's phases exactly (an Explicit Skill Lock plans on it), so those are
    known; a Profile route's checks then are not.
    """
    recorded = doc.get("phase_check_ids")
    if recorded is not None:
        found = recorded.get(phase_id)
        return None if found is None else list(found)
    for layout in profiles.BUILTIN_PHASES.values():
        for p in layout:
            if p.phase_id == phase_id and p.gate_id == gate_id:
                return list(p.check_ids)
    return None


def phases_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """An observation's route as the phases of a Profile rule (check ids as recorded; a
    phase whose checks are unknown has none, which no Profile allows)."""
    return [
        {
            "phase_id": p["phase_id"], "primary_skill_id": p["primary_skill_id"],
            "support_skill_ids": list(p["support_skill_ids"]),
            "exit_gate": {"gate_id": p["exit_gate"],
                          "check_ids": _checks(doc, p["phase_id"], p["exit_gate"]) or []},
        }
        for p in doc["planned_skill_tree"]
    ]  # fmt: skip


def rule_of(mined: Mined) -> dict[str, Any]:
    """The Profile rule learned from ``mined``: its matchers, envelope and route, each phase
    checked by the check ids its runs reported (never by its gate id)."""
    doc = mined.members[0].document
    match: dict[str, Any] = {}
    if doc.get("domains"):
        match["domains_any"] = list(doc["domains"])
    if doc.get("tags"):
        match["tags_all"] = list(doc["tags"])
    return {"rule_id": rule_ids(mined)[0], "match": match,
            "envelope": mined.route["routing_envelope"],
            "phases": phases_of(mined.route)}  # fmt: skip


def rule_ids(mined: Mined) -> list[str]:
    """The rule id of ``mined``'s rule, then those its `Mined.former_ids` gave it."""
    return ["cand-" + cid.removeprefix("candidate:")[:16] for cid in mined.ids]


def holds(rules: list[dict[str, Any]], rule: dict[str, Any]) -> bool:
    """Whether ``rules`` hold ``rule`` exactly but for its id: a rule with its matchers,
    envelope and phases is the same candidate's, written under an id it had before
    (`Mined.former_ids`), and plans exactly what it would."""
    same = {k: v for k, v in rule.items() if k != "rule_id"}
    return any({k: v for k, v in r.items() if k != "rule_id"} == same for r in rules)


def lint(rules: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """A managed Profile of ``rules`` as canonical JSON, and its lint problems (none: valid)."""
    doc = {"format": profiles.FORMAT, "profile_id": "managed-lint", "rules": rules}
    text = canonical(doc).decode()
    parsed, problems = profiles.parse_profile("personal", text)
    if parsed is None and not problems:
        problems = ["personal-profile-invalid"]
    return text, [p.removeprefix("personal-") for p in problems]


def reproduces(rule: dict[str, Any], o: Observed) -> bool:
    """Whether planning by ``rule`` gives ``o``'s route: its envelope, phases, skills, gates
    and each gate's check ids."""
    doc = o.document
    return bool(rule["envelope"] == doc["routing_envelope"] and rule["phases"] == phases_of(doc))


def rule_matches(rule: dict[str, Any], o: Observed) -> bool:
    """Whether a Profile rule's matchers accept an observation's routing context."""
    domains = set(rule["match"].get("domains_any", []))
    tags = set(rule["match"].get("tags_all", []))
    doc = o.document
    return (not domains or bool(domains & set(doc.get("domains", [])))) and tags <= set(
        doc.get("tags", [])
    )


def plans_exactly(rules: list[dict[str, Any]], o: Observed) -> bool:
    """Whether a Profile of ``rules`` plans ``o``'s route exactly: its first rule matching
    ``o``'s routing context, the one planning picks, `reproduces` the route. A rollback's
    backtest counts a run by it, as a preview's counts its candidate's runs by the rule."""
    rule = next((r for r in rules if rule_matches(r, o)), None)
    return rule is not None and reproduces(rule, o)


def _backtest(rule: dict[str, Any], mined: Mined, observed: list[Observed], signature: str,
              manual: list[profiles.Profile]) -> dict[str, Any]:  # fmt: skip
    members = {o.observation_id for o in mined.members}
    own = [o for o in mined.members if rule_matches(rule, o)]
    positive = sum(route_signature(o.document) == signature and reproduces(rule, o) for o in own)
    others = [o for o in observed if o.observation_id not in members and rule_matches(rule, o)]
    regressions = sum(
        route_signature(o.document) != signature or not reproduces(rule, o) for o in others
    )
    doc = mined.members[0].document
    context = (tuple(doc.get("domains", [])), tuple(doc.get("tags", [])), None)
    manual_route = profiles.resolve(manual, *context)
    coverage = positive / len(mined.members)
    test = {
        "workspace_isolation": True, "capability_gap_summary": "unavailable",
        "positive_observation_count": len(mined.members), "positive_match_count": positive,
        "positive_match_coverage": coverage, "unexpected_match_count": len(others),
        "planned_route_regressions": regressions,
        "manual_precedence": manual_route.rule_id is not None,
        "manual_profile_digests": sorted(p.digest for p in manual),
        "shadowed_rule_ids": [], "equal_rank_conflicts": [],
    }  # fmt: skip
    test["acceptable"] = (
        coverage >= MIN_COVERAGE and regressions == 0 and not test["manual_precedence"]
    )
    test["backtest_digest"] = digest(test)
    return test


#: A managed Profile's newest revision: (revision_no, revision_id, digest, profile_json).
Current = tuple[int, str, str, str]


def preview(mined: Mined, observed: list[Observed], manual: list[profiles.Profile],
            policy_digest: str, current: Current | None = None
            ) -> tuple[dict[str, Any] | None, list[str], list[str]]:  # fmt: skip
    """The proposal of ``mined``'s candidate, or None with the reason codes that block it,
    and the Profile lint problems behind a ``profile-lint-failed`` (no reason code names
    them: the caller shows them as text).

    Args:
        mined: The candidate with its route and pattern.
        observed: Every observation of the workspace (for the backtest).
        manual: The manual Profiles that outrank managed ones.
        policy_digest: The effective policy's digest.
        current: The target managed Profile's newest revision, None if it has none.
    """
    candidate = mined.candidate
    if "no-matchable-routing-context" in candidate["reason_codes"]:
        return None, ["matcher-seed-required"], []
    target = candidate["target_profile_class"]
    rule = rule_of(mined)
    old_rules = json.loads(current[3])["rules"] if current else []
    replaced = rule_ids(mined)
    kept = [r for r in old_rules if r["rule_id"] not in replaced]
    proposed_doc = {"format": profiles.FORMAT, "profile_id": target,
                    "rules": [*kept, rule]}  # fmt: skip
    expected = current[2] if current else "missing"
    changed = len(kept) != len(old_rules)
    proposed_json = canonical(proposed_doc).decode()
    _text, problems = lint([*kept, rule])
    if problems:
        return None, ["profile-lint-failed"], problems
    test = _backtest(rule, mined, observed, route_signature(mined.route), manual)
    diff_json = canonical({
        "added_rules": [] if changed else [rule["rule_id"]], "removed_rules": [],
        "changed_rules": [rule["rule_id"]] if changed else [],
    }).decode()  # fmt: skip
    newest = max(o.recorded_at for o in mined.members)
    expires = dt.datetime.strptime(newest, "%Y-%m-%dT%H:%M:%S.%fZ") + VALID_FOR
    proposal = {
        "candidate_id": candidate["candidate_id"],
        "candidate_digest": candidate["candidate_digest"], "target_profile_class": target,
        "workspace_identity_digest": candidate["workspace_identity_digest"],
        "expected_profile_digest": expected, "state_version": (current[0] if current else 0) + 1,
        "proposed_profile_json": proposed_json, "proposed_profile_digest": digest(proposed_doc),
        "semantic_diff_json": diff_json, "semantic_diff_digest": digest(diff_json),
        "backtest": test, "backtest_digest": test["backtest_digest"],
        "policy_digest": policy_digest, "status": "pending",
        "created_at": candidate["created_at"],
        "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }  # fmt: skip
    proposal["proposal_id"] = (
        "proposal:"
        + digest(
            [candidate["candidate_id"], expected, proposal["proposed_profile_digest"]]
        ).removeprefix("sha256:")[:32]
    )
    proposal["proposal_digest"] = digest(proposal)
    return proposal, [] if test["acceptable"] else ["profile-backtest-failed"], []


def made_before(mined: Mined, observed: list[Observed], manual: list[profiles.Profile],
                policy_digest: str, history: list[Current], proposal_id: str
                ) -> str | None:  # fmt: skip
    """The Profile digest (``missing``: no revision yet) that ``mined``'s preview named
    ``proposal_id`` for, when it was made against an earlier revision of ``history`` (its
    target's kept revisions, oldest first), or None. A proposal id is bound to the Profile
    digest it was made for, so once the Profile changes no current preview derives it."""
    for before in [None, *history[:-1]]:
        proposal = preview(mined, observed, manual, policy_digest, before)[0]
        if proposal is not None and proposal["proposal_id"] == proposal_id:
            return str(proposal["expected_profile_digest"])
    return None
