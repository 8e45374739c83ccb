"""Workflow candidates: deterministic patterns mined from one workspace's observations.

A pattern groups the observations of one workspace identity (or the personal scope) with
the same routing envelope, target profile class, routing domains and tags (the matchers a
Profile rule could use; ``no-matchable-routing-context`` when there are none); nothing
crosses workspaces. Its metrics,
all computed from stored observations and feedback, never estimated:

- ``distinct_runs`` and ``distinct_days`` (of recording);
- ``completion_rate``: share of runs whose side-effect outcome is not ``known-failure``;
- ``manual_correction_rate``: share of runs with at least one ``corrected`` feedback;
- ``route_consistency``: share of runs whose route signature (`digests.route_signature`:
  what the route does, not how it was chosen) is the pattern's most common one (ties broken
  by the smaller digest), which is the route the candidate proposes;
- ``required_gate_pass_rate``: 1.0, since only runs with every gate passed are observed;
- ``hard_contract_violations``: ``rejected`` feedback entries;
- ``canonical_skill_ids``: the proposed route names at least one skill and only identifiers.

A pattern becomes a candidate only when a Profile rule can plan its route (`learnable`: a
builtin route, which plans no phase of its own, or one whose skill or check ids a Profile
cannot hold, could never be previewed) and it meets the reviewed thresholds (at least 3 runs on
2 days, completion >= 0.80, corrections <= 0.20, consistency >= 0.75, no hard violation);
it is recommended for ``automatic`` when it also meets 5 runs on 3 days, 0.90, 0.10 and 0.85
and the policy is automatic. Candidates are derived on every read, deterministically, and
stored nowhere: listing them changes nothing. A candidate's id is bound to its pattern and
route signature, so the runs its approved rule plans keep it. Observations remembered while
the signature also covered how a route was chosen (its source, Profile digest and rule id)
store that older signature; each is grouped by what its route does all the same, and the ids
their candidate had then (`Mined.former_ids`) still name it for the rejections and
promotions stored under them. Pure.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

from agora.toolsets.router import previews
from agora.toolsets.router.digests import digest, route_signature

REVIEWED: Final = (3, 2, 0.80, 0.20, 0.75)
AUTOMATIC: Final = (5, 3, 0.90, 0.10, 0.85)
_SKILL: Final = re.compile(r"^[a-z0-9][a-z0-9._:-]{0,127}$")


@dataclass(frozen=True, slots=True)
class Observed:
    """One stored observation with its feedback types."""

    observation_id: str
    workflow_run_id: str
    document: dict[str, Any]
    recorded_day: str
    recorded_at: str
    feedback: tuple[str, ...]


def _meets(m: dict[str, Any], thresholds: tuple[int, int, float, float, float]) -> bool:
    runs, days, completion, corrections, consistency = thresholds
    return bool(
        m["distinct_runs"] >= runs and m["distinct_days"] >= days
        and m["completion_rate"] >= completion and m["manual_correction_rate"] <= corrections
        and m["route_consistency"] >= consistency and m["hard_contract_violations"] == 0
    )  # fmt: skip


def learnable(route: dict[str, Any]) -> bool:
    """Whether a Profile rule can plan ``route``: one phase at least (a builtin route plans
    none: nothing to learn, the builtin default already plans it), skill ids a Profile
    accepts, and each phase's check ids known. Anything else could never be previewed
    (``profile-lint-failed``), so it is proposed to no one."""
    rule = {"rule_id": "candidate", "envelope": route["routing_envelope"],
            "phases": previews.phases_of(route)}  # fmt: skip
    return bool(rule["phases"]) and not previews.lint([rule])[1]


def _hex(*parts: str) -> str:
    return digest(list(parts)).removeprefix("sha256:")[:32]


@dataclass(frozen=True, slots=True)
class Mined:
    """A candidate with what a Profile preview needs: its route, matchers and members."""

    candidate: dict[str, Any]
    route: dict[str, Any]
    members: tuple[Observed, ...]
    #: The ids this candidate had under the route signatures its older observations store
    #: (which covered how the route was chosen); a rejection or a promotion may name it so.
    former_ids: tuple[str, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        """The candidate's id, then its `former_ids`."""
        return (self.candidate["candidate_id"], *self.former_ids)


def mine(observed: list[Observed], identity: str, effective_mode: str, policy_digest: str
         ) -> list[dict[str, Any]]:  # fmt: skip
    """The candidates of one workspace identity, ordered by pattern id."""
    return [m.candidate for m in mine_with_routes(observed, identity, effective_mode,
                                                  policy_digest)]  # fmt: skip


#: The key of a pattern: envelope, target profile class, domains and tags (comma-joined).
Pattern = tuple[str, str, str, str]


def _patterns(observed: list[Observed]) -> list[tuple[Pattern, list[Observed]]]:
    groups: dict[Pattern, list[Observed]] = {}
    for o in observed:
        doc = o.document
        key = (doc["routing_envelope"], doc["target_profile_class"],
               ",".join(doc.get("domains", [])), ",".join(doc.get("tags", [])))  # fmt: skip
        groups.setdefault(key, []).append(o)
    return sorted(groups.items())


def _measure(members: list[Observed]) -> tuple[dict[str, Any], dict[str, Any], str, set[str]]:
    """A pattern's metrics, the route it proposes (its most common), that route's signature,
    and the signatures its runs' observations store (older ones: another digest)."""
    each = [route_signature(o.document) for o in members]
    top, top_count = min(Counter(each).items(), key=lambda kv: (-kv[1], kv[0]))
    runs = [o for o, signature in zip(members, each, strict=True) if signature == top]
    route = runs[0].document
    skills = [s for p in route["planned_skill_tree"]
              for s in (p["primary_skill_id"], *p["support_skill_ids"])]  # fmt: skip
    n = len(members)
    metrics = {
        "distinct_runs": len({o.workflow_run_id for o in members}),
        "distinct_days": len({o.recorded_day for o in members}),
        "completion_rate": sum(
            o.document["side_effect_outcome"] != "known-failure" for o in members
        )
        / n,
        "manual_correction_rate": sum("corrected" in o.feedback for o in members) / n,
        "route_consistency": top_count / n,
        "required_gate_pass_rate": 1.0,
        "hard_contract_violations": sum(o.feedback.count("rejected") for o in members),
        "canonical_skill_ids": bool(skills) and all(_SKILL.match(s) for s in skills),
    }
    return metrics, route, top, {o.document["route_signature_digest"] for o in runs}


def mine_with_routes(observed: list[Observed], identity: str, effective_mode: str,
                     policy_digest: str, every: bool = False) -> list[Mined]:  # fmt: skip
    """`mine`, keeping each candidate's proposed route and its pattern's observations.

    With ``every``, a learnable pattern that misses the reviewed thresholds is mined too (see
    `meets`): one whose approved rule is still in force stays listed, though its evidence no
    longer makes it a candidate.
    """
    out = []
    for (envelope, target, domains, tags), members in _patterns(observed):
        metrics, route, top, stored = _measure(members)
        if not learnable(route) or not (every or _meets(metrics, REVIEWED)):
            continue
        automatic = _meets(metrics, AUTOMATIC)
        reasons = []
        if not (domains or tags):
            reasons.append("no-matchable-routing-context")
        pattern = _hex(identity, envelope, target, domains, tags)
        evidence = digest(sorted(o.observation_id for o in members))
        candidate = {
            "pattern_id": f"pattern:{pattern}",
            "candidate_id": f"candidate:{_hex(pattern, top)}",
            "scope": "personal" if identity == "personal" else "workspace",
            "workspace_identity_digest": None if identity == "personal" else identity,
            "target_profile_class": target,
            "status": "proposed",
            "recommendation_mode": "automatic"
            if automatic and effective_mode == "automatic" else "reviewed",
            "confidence": "high" if automatic else "medium",
            "metrics": metrics,
            "material_evidence_digest": evidence,
            "policy_digest": policy_digest,
            "created_at": min(o.recorded_at for o in members),
            "reason_codes": reasons,
        }  # fmt: skip
        candidate["candidate_digest"] = digest(
            {k: v for k, v in candidate.items() if k != "policy_digest"}
        )
        former = tuple(sorted(f"candidate:{_hex(pattern, s)}" for s in stored - {top}))
        out.append(Mined(candidate, route, tuple(members), former))
    return sorted(out, key=lambda m: m.candidate["pattern_id"])


#: Targets the user owns: never written without review (nor here at all).
USER_OWNED: Final = ("user-personal", "workspace-file")


def meets(mined: Mined) -> bool:
    """Whether ``mined``'s metrics meet the reviewed thresholds (a candidate's always do; a
    pattern mined with ``every`` may not)."""
    return _meets(mined.candidate["metrics"], REVIEWED)


def unmet(mined: Mined) -> str:
    """The reviewed thresholds ``mined``'s metrics miss, each with its value, comma-joined."""
    return ", ".join(_unmet(mined.candidate["metrics"]))


def promotion_blockers(mined: Mined, profile_promotion: str) -> list[str]:
    """Why a candidate recommended for ``automatic`` may not be promoted without review.

    Empty for one that may (or for a candidate not recommended for ``automatic``).
    """
    candidate = mined.candidate
    if candidate["recommendation_mode"] != "automatic":
        return []
    codes = []
    if profile_promotion != "automatic-managed":
        codes.append("profile-promotion-disabled")
    if candidate["target_profile_class"] in USER_OWNED:
        codes.append("automatic-user-profile-write-forbidden")
    if mined.route.get("selection_mode") == "explicit-locked":
        codes.append("explicit-route-requires-review")
    return codes


def mark(candidate: dict[str, Any], status: str | None, reasons: list[str]) -> None:
    """Set a candidate's status (None: keep it) and add reason codes; its digest follows."""
    if status is not None:
        candidate["status"] = status
    known = candidate["reason_codes"]
    candidate["reason_codes"] = [*known, *(r for r in reasons if r not in known)]
    candidate["candidate_digest"] = digest(
        {k: v for k, v in candidate.items() if k not in ("policy_digest", "candidate_digest")}
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _unmet(m: dict[str, Any]) -> list[str]:
    """The reviewed thresholds a pattern's metrics miss, each with its value."""
    runs, days, completion, corrections, consistency = REVIEWED
    said = [
        (m["distinct_runs"] < runs, f"{_count(m['distinct_runs'], 'run')} (< {runs})"),
        (m["distinct_days"] < days, f"{_count(m['distinct_days'], 'day')} (< {days})"),
        (m["completion_rate"] < completion,
         f"completion {m['completion_rate']:.2f} (< {completion:.2f})"),
        (m["manual_correction_rate"] > corrections, "corrections (runs with corrected"
         f" feedback) {m['manual_correction_rate']:.2f} (> {corrections:.2f})"),
        (m["route_consistency"] < consistency,
         f"consistency {m['route_consistency']:.2f} (< {consistency:.2f})"),
        (m["hard_contract_violations"] > 0,
         f"no rejected feedback (it has {m['hard_contract_violations']})"),
    ]  # fmt: skip
    return [text for failed, text in said if failed]


#: Patterns an empty list's text describes at most.
_TOLD: Final = 5


_NEED: Final = (
    f"a candidate needs {REVIEWED[0]} remembered runs of one route (the same envelope,"
    f" target, domains and tags) on {REVIEWED[1]} days, completion >= {REVIEWED[2]:.2f},"
    f" corrections <= {REVIEWED[3]:.2f}, consistency >= {REVIEWED[4]:.2f} and no rejected"
    " feedback"
)


def _not_candidates(observed: list[Observed], listed: frozenset[str] = frozenset()) -> str:
    """The patterns of ``observed`` that are no candidate, each with what keeps it from being
    one, or "" if every pattern is one. A pattern one of whose observation ids is in
    ``listed`` is listed (its rule in force) and is not told here."""
    told = []
    for (envelope, target, domains, tags), members in _patterns(observed):
        metrics, route, _top, _stored = _measure(members)
        if (_meets(metrics, REVIEWED) and learnable(route)) or members[0].observation_id in listed:
            continue
        why = ("their most common route is one no Profile rule can plan, which is never a"
               " candidate (a builtin route, with no skill in planned_skill_tree: the builtin"
               " default plans it already; or skill or check ids a Profile cannot hold)"
               if not learnable(route) else "it misses " + ", ".join(_unmet(metrics)))  # fmt: skip
        told.append(f"{_count(len(members), 'run')} ({envelope}, {target}, domains"
                    f" [{domains}], tags [{tags}]): {why}")  # fmt: skip
    more = f"; and {len(told) - _TOLD} more patterns" if len(told) > _TOLD else ""
    return "; ".join(told[:_TOLD]) + more


def _scope(identity: str) -> str:
    return "the personal scope" if identity == "personal" else "this workspace"


def why_none(observed: list[Observed], identity: str) -> str:
    """Why no candidate is mined from ``observed`` (one workspace's observations), said in a
    text block: an empty list alone does not say. Each pattern is named with what keeps it
    from being one: the thresholds it misses with their values, or a most common route no
    Profile rule can plan (`learnable`), which is never one, however many its runs."""
    if not observed:
        return (
            f"No candidates: no workflow of {_scope(identity)} is remembered yet"
            f" (remember_workflow); {_NEED}."
        )
    return (
        f"No candidates from the {_count(len(observed), 'remembered run')} of"
        f" {_scope(identity)}, by"
        f" pattern: {_not_candidates(observed)}. {_NEED[0].upper()}{_NEED[1:]}."
    )


def why_not_listed(observed: list[Observed], listed: list[Mined], identity: str) -> str | None:
    """For a list that is not empty (``listed``), the patterns of ``observed`` that are no
    candidate (one that was, and a correction or a new run changed, drops out of it unless
    its rule is in force), said as `why_none` says them; None if there is none."""
    others = _not_candidates(observed, frozenset(o.observation_id for m in listed
                                                 for o in m.members))  # fmt: skip
    if not others:
        return None
    return (
        f"Patterns of the remembered runs of {_scope(identity)} that are not candidates:"
        f" {others}."
        f" {_NEED[0].upper()}{_NEED[1:]}."
    )
