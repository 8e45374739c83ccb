"""The configured evaluation adapter: real subprocesses on the example sealed cases.

Covers the whole path (two evaluation runs, their comparison, the export), replays that never
rerun the adapter, a timeout, bad adapter output, authorization, and sealed cases that try to
reach outside their directory (a ``..`` file, a symlinked file, a symlinked case).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from router_driver import ctx, key

REPO = Path(__file__).parents[2]
EXAMPLE = REPO / "examples" / "router-adapter"
ADAPTERS = Path(__file__).parent / "adapters"


@pytest.fixture
def cases(tmp_path):
    root = tmp_path / "cases"
    shutil.copytree(EXAMPLE / "cases", root)
    return root


@pytest.fixture
def adapter(options, cases):
    settings = {
        "command": [sys.executable, str(EXAMPLE / "adapter.py")],
        "cases_dir": str(cases),
        "authorizations": ["auth-ok"],
        "timeout_seconds": 20,
        "max_memory_mb": 512,
    }
    options["router"]["adapter"] = settings
    return settings


def run_args(case: str, repeats: int = 1, idem: str | None = None, auth: str = "auth-ok"):
    return {"context": ctx(), "idempotency_key": idem or key("eval"), "correlation_id": "c",
            "authorization_ref": auth, "repeats": repeats, "sealed_case_ref": case}  # fmt: skip


def compare_args(base: str, cand: str, idem: str | None = None):
    args = {"context": ctx(), "idempotency_key": idem or key("cmp"), "correlation_id": "c"}
    return {**args, "authorization_ref": "auth-ok", "baseline_run_id": base,
            "candidate_run_id": cand}  # fmt: skip


def export_args(ref: str, attestation: str | None = None):
    return {"context": ctx(), "idempotency_key": key("exp"), "correlation_id": "c",
            "authorization_ref": "auth-ok", "comparison_ref": ref, "export_kind":
            "comparison-summary", "attestation_ref": attestation}  # fmt: skip


async def test_evaluate_compare_and_export_through_the_example_adapter(router, runtime, adapter):
    base = await router.call("run_model_evaluation", **run_args("routing-keywords-v1", 2))
    assert base["status"] == "completed"
    assert len(base["attempts"]) == 2
    assert [i["passed"] for i in base["attempts"][0]["items"]] == [False, False, True, False]
    cand_args = run_args("routing-keywords-v2", 2, idem="cand")
    cand = await router.call("run_model_evaluation", **cand_args)
    assert cand["manifest_digest"] != base["manifest_digest"]
    commits = runtime.store.stats
    again = await router.call("run_model_evaluation", **cand_args)
    assert again == cand  # replay: no rerun
    assert runtime.store.stats == commits
    # Its result has no replayed field: the second text block says it (none on the first).
    assert "Replayed: the stored result of idempotency_key 'cand'" in again.guidance
    assert not hasattr(cand, "guidance")
    cmp = await router.call("compare_evaluations", **compare_args(base["run_id"], cand["run_id"]))
    assert cmp["paired_count"] == 8
    assert cmp["pass_rate_difference"] == 0.75
    assert cmp["hard_violation_difference"] == -4
    assert cmp["candidate_release_eligible"] is True
    back = await router.call("compare_evaluations", **compare_args(cand["run_id"], base["run_id"]))
    assert back["candidate_release_eligible"] is False
    ref = f"{base['run_id']}~{cand['run_id']}"
    art = await router.call("export_router_artifact", **export_args(ref, "attest-1"))
    assert art["status"] == "review-required"
    assert art["review_authority"] is None
    assert art["summary"]["attestation"] == "unverified"
    assert "routing" not in str(art["summary"]).replace("router", "")  # no case content


async def test_a_timed_out_attempt_is_recorded_without_invented_metrics(router, adapter):
    adapter["command"] = [sys.executable, str(ADAPTERS / "spin.py")]
    adapter["timeout_seconds"] = 1
    run = await router.call("run_model_evaluation", **run_args("routing-keywords-v1"))
    assert run["status"] == "failed"
    assert run["attempts"] == [{"attempt": 1, "status": "timed-out", "reason": "timeout"}]
    other = await router.call("run_model_evaluation", **run_args("routing-keywords-v2"))
    adapter["command"] = [sys.executable, str(EXAMPLE / "adapter.py")]
    body = await router.refused("compare_evaluations",
                                **compare_args(run["run_id"], other["run_id"]))  # fmt: skip
    assert body["code"] == "no-paired-metrics"


async def test_output_that_breaks_the_protocol_is_a_failed_attempt(router, adapter):
    adapter["command"] = [sys.executable, str(ADAPTERS / "garbage.py")]
    run = await router.call("run_model_evaluation", **run_args("routing-keywords-v1"))
    assert run["attempts"][0]["reason"] == "adapter-output-invalid"


async def test_an_unlisted_authorization_is_refused(router, adapter):
    body = await router.refused("run_model_evaluation", **run_args("routing-keywords-v1",
                                                                   auth="auth-forged"))  # fmt: skip
    assert body["code"] == "evaluation-not-authorized"


@pytest.mark.parametrize(
    ("tamper", "code"),
    [
        pytest.param("dotdot", "sealed-case-escapes-directory", id="dotdot-file"),
        pytest.param("file-link", "sealed-case-escapes-directory", id="symlinked-file"),
        pytest.param("case-link", "sealed-case-escapes-directory", id="symlinked-case"),
        pytest.param("absent", "sealed-case-unknown", id="unknown-case"),
        pytest.param("ref", "sealed-case-ref-invalid", id="path-as-ref"),
    ],
)
async def test_a_sealed_case_cannot_reach_outside_its_directory(
    router, adapter, cases, tmp_path, tamper, code
):
    secret = tmp_path / "secret.txt"
    secret.write_text("operator secret")
    evil = cases / "evil"
    ref = "evil"
    if tamper == "case-link":
        (tmp_path / "elsewhere").mkdir()
        shutil.copy(cases / "routing-keywords-v1" / "case.json", tmp_path / "elsewhere")
        os.symlink(tmp_path / "elsewhere", evil)
    elif tamper in ("dotdot", "file-link"):
        shutil.copytree(cases / "routing-keywords-v1", evil)
        doc = (evil / "case.json").read_text()
        if tamper == "dotdot":
            doc = doc.replace('"arm.json"', '"../../secret.txt"')
        else:
            (evil / "arm.json").unlink()
            os.symlink(secret, evil / "arm.json")
        (evil / "case.json").write_text(doc)
    elif tamper == "ref":
        ref = "../secret.txt"
    body = await router.refused("run_model_evaluation", **run_args(ref))
    assert body["code"] == code


async def test_an_adapter_over_its_memory_limit_fails_its_attempt(router, adapter):
    adapter["command"] = [sys.executable, str(ADAPTERS / "hog.py")]
    adapter["max_memory_mb"] = 256
    run = await router.call("run_model_evaluation", **run_args("routing-keywords-v1"))
    assert run["attempts"] == [{"attempt": 1, "status": "failed", "reason": "adapter-failed"}]
