"""Evaluation results, comparisons and export artifacts, computed from recorded attempts only.

Nothing here invents a metric. An evaluation run's ``status`` is ``completed`` when every
attempt completed, ``partial`` when some did, ``failed`` when none did. A comparison pairs
(attempt number, item id) entries that both runs measured in completed attempts; with no
pair it is refused rather than reported as zero. The candidate is release-eligible only if
both runs completed, at least one pair exists, its pass rate is not lower, it has no more
hard violations than the baseline over the pairs, and none at all. An export is a sanitized
summary (identifiers, counts, digests; no case content, prompts, outputs or paths) that stays
``review-required``: no attestation can be verified by this server. Pure.
"""

from __future__ import annotations

from typing import Any, Final

from agora.toolsets.router import replies
from agora.toolsets.router.digests import digest
from agora.toolsets.router.planning import RUNTIME_MODE

EVIDENCE_CLASS: Final = "configured-adapter-local"
ARTIFACT_SCHEMA: Final = "agora-router-artifact/1"
EXPORT_KINDS: Final = ("comparison-summary",)


def evaluation(
    run_id: str, case_ref: str, case: dict[str, Any], adapter: str, attempts: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The record document and the ``run_model_evaluation`` result of one evaluation run."""
    completed = sum(a["status"] == "completed" for a in attempts)
    status = "completed" if completed == len(attempts) else ("partial" if completed else "failed")
    manifest = {
        "run_id": run_id, "case_ref": case_ref, "case_digest": digest(case),
        "adapter": adapter, "attempts": attempts,
    }  # fmt: skip
    manifest_digest = digest(manifest)
    result = {
        "run_id": run_id, "status": status, "adapter_kind": "trusted-subprocess",
        "profile": RUNTIME_MODE, "evidence_class": EVIDENCE_CLASS, "attempts": attempts,
        "manifest_digest": manifest_digest,
    }  # fmt: skip
    return {**manifest, "status": status, "manifest_digest": manifest_digest}, result


def _measured(doc: dict[str, Any]) -> dict[tuple[int, str], dict[str, Any]]:
    return {
        (a["attempt"], item["item_id"]): item
        for a in doc["attempts"] if a["status"] == "completed" for item in a["items"]
    }  # fmt: skip


def compare(baseline: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """The ``compare_evaluations`` result of two recorded runs.

    Raises:
        ToolError: ``no-paired-metrics`` when the runs share no measured item.
    """
    base, cand = _measured(baseline), _measured(candidate)
    pairs = sorted(set(base) & set(cand))
    if not pairs:
        raise replies.refusal("no-paired-metrics", "the runs share no measured item to compare:"
                              " compare two runs of the same sealed case")  # fmt: skip
    base_pass = sum(base[p]["passed"] for p in pairs)
    cand_pass = sum(cand[p]["passed"] for p in pairs)
    hard = sum(cand[p]["hard_violations"] for p in pairs) - sum(
        base[p]["hard_violations"] for p in pairs
    )
    diff = (cand_pass - base_pass) / len(pairs)
    eligible = (
        baseline["status"] == candidate["status"] == "completed" and diff >= 0 and hard <= 0
        and sum(cand[p]["hard_violations"] for p in pairs) == 0
    )  # fmt: skip
    return {
        "baseline_run_id": baseline["run_id"], "candidate_run_id": candidate["run_id"],
        "paired_count": len(pairs), "pass_rate_difference": diff,
        "hard_violation_difference": hard, "candidate_release_eligible": eligible,
    }  # fmt: skip


def export(comparison_ref: str, comparison: dict[str, Any], kind: str,
           attestation_ref: str | None) -> dict[str, Any]:  # fmt: skip
    """The ``export_router_artifact`` result: a sanitized summary awaiting review.

    Raises:
        ToolError: ``export-kind-unsupported`` for a kind other than `EXPORT_KINDS`.
    """
    if kind not in EXPORT_KINDS:
        raise replies.refusal(
            "export-kind-unsupported", f"export_kind must be one of {EXPORT_KINDS}"
        )
    summary = {
        "schema_version": ARTIFACT_SCHEMA, "export_kind": kind, "comparison_ref": comparison_ref,
        **{k: comparison[k] for k in ("baseline_run_id", "candidate_run_id", "paired_count",
                                      "pass_rate_difference", "hard_violation_difference",
                                      "candidate_release_eligible")},
        "manifest_digests": comparison["manifest_digests"],
        "attestation": "unverified" if attestation_ref is not None else "absent",
    }  # fmt: skip
    return {
        "status": "review-required", "schema_version": ARTIFACT_SCHEMA,
        "evidence_class": EVIDENCE_CLASS, "summary": summary,
        "artifact_digest": digest(summary), "review_subject_digest": digest(summary),
        "review_authority": None, "reviewed_at": None,
    }  # fmt: skip
