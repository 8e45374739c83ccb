"""The Memory policy matrix: every personal ceiling against every workspace request."""

from __future__ import annotations

import itertools
import json

import pytest
from router_driver import ctx

from agora.toolsets.router.memory_policy import MODES, resolve


def personal(ceiling: str, **extra: object) -> str:
    doc = {"format": "agora-router-memory-policy/1", "ceiling": ceiling,
           "allowed_targets": ["managed-personal", "workspace-file"], **extra}  # fmt: skip
    return json.dumps(doc)


def request(mode: str) -> str:
    return json.dumps({"format": "agora-router-memory-request/1", "requested_mode": mode})


@pytest.mark.parametrize(("ceiling", "requested"), list(itertools.product(MODES, MODES)))
def test_the_effective_mode_is_the_lower_of_ceiling_and_request(ceiling, requested):
    policy = resolve(personal(ceiling), request(requested), workspace_scoped=True,
                     root_verified=True)  # fmt: skip
    effective = MODES[min(MODES.index(ceiling), MODES.index(requested))]
    assert policy.effective_mode == effective
    assert policy.personal_ceiling == ceiling
    assert policy.workspace_requested_mode == requested
    exceeds = MODES.index(requested) > MODES.index(ceiling)
    assert ("workspace-policy-exceeds-ceiling" in policy.reason_codes) == exceeds
    assert ("memory-disabled" in policy.reason_codes) == (effective == "disabled")
    assert policy.capture_enabled == (effective != "disabled")
    assert policy.candidate_generation_enabled == (effective in ("reviewed", "automatic"))
    assert policy.allowed_targets == ("managed-personal",)  # workspace-file needs the host


@pytest.mark.parametrize("ceiling", MODES)
def test_without_a_workspace_root_the_ceiling_applies(ceiling):
    policy = resolve(personal(ceiling), None, workspace_scoped=False, root_verified=False)
    assert policy.effective_mode == ceiling


@pytest.mark.parametrize(
    ("personal_text", "workspace_text", "verified", "codes"),
    [
        pytest.param(None, None, False, ("personal-policy-missing",), id="nothing-personal"),
        pytest.param("{oops", None, False, ("invalid-memory-policy",), id="invalid-personal"),
        pytest.param('{"format": "agora-router-memory-policy/1", "ceiling": "observe",'
                     ' "ceiling": "automatic"}', None, False, ("ambiguous-memory-policy",),
                     id="ambiguous-personal"),
        pytest.param(personal("observe", extra_key=1), None, False, ("invalid-memory-policy",),
                     id="unknown-key"),
        pytest.param(personal("automatic"), None, True, ("workspace-policy-missing",),
                     id="missing-request"),
        pytest.param(personal("automatic"), '{"format": "x"}', True,
                     ("invalid-memory-policy",), id="invalid-request"),
        pytest.param(personal("automatic"), request("observe"), False,
                     ("workspace-root-unverified", "workspace-policy-missing"), id="unverified"),
    ],
)  # fmt: skip
def test_missing_invalid_or_ambiguous_policies_disable_memory(
    personal_text, workspace_text, verified, codes
):
    scoped = workspace_text is not None or verified or codes[0] == "workspace-root-unverified"
    policy = resolve(personal_text, workspace_text, workspace_scoped=scoped,
                     root_verified=verified)  # fmt: skip
    assert policy.effective_mode == "disabled"
    assert policy.reason_codes == (*codes, "memory-disabled")
    assert policy.profile_promotion == "disabled"


def test_automatic_promotion_needs_the_automatic_mode():
    doc = personal("automatic", profile_promotion="automatic-managed")
    assert resolve(doc, request("automatic"), workspace_scoped=True,
                   root_verified=True).profile_promotion == "automatic-managed"  # fmt: skip
    assert resolve(doc, request("reviewed"), workspace_scoped=True,
                   root_verified=True).profile_promotion == "review-required"  # fmt: skip


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param(personal("observe", profile_promotion="review"),
                     'personal policy: profile_promotion "review" must be one of disabled,'
                     " review-required, automatic-managed", id="promotion"),
        pytest.param(personal("sometimes"), 'personal policy: ceiling "sometimes" must be one'
                     " of disabled, observe, reviewed, automatic", id="ceiling"),
        pytest.param(personal("observe", allowed_targets=["mine"]),
                     'personal policy: allowed_targets "mine" must be one of managed-personal,'
                     " managed-workspace-local, user-personal, workspace-file", id="target"),
        pytest.param(personal("observe", extra_key=1), 'personal policy: unknown key'
                     ' "extra_key" (known: format, ceiling, profile_promotion, allowed_targets)',
                     id="unknown-key"),
        pytest.param('{"format": "agora-router-memory-policy/1", "ceiling": "observe",'
                     ' "ceiling": "automatic"}', 'personal policy: the key "ceiling" is given'
                     " twice", id="ambiguous"),
    ],
)  # fmt: skip
def test_a_bad_policy_names_its_field_and_value(text, problem):
    policy = resolve(text, None, workspace_scoped=False, root_verified=False)
    assert policy.problems == (problem,)
    good = resolve(personal("observe"), None, workspace_scoped=False, root_verified=False)
    assert good.problems == ()


async def test_get_memory_status_and_the_log_name_the_bad_field(router, options, tmp_path, caplog):
    path = tmp_path / "memory-policy.json"
    path.write_text(personal("observe", profile_promotion="review"))
    options["router"]["memory_policy"] = str(path)
    for _ in range(2):
        status = await router.call("get_memory_status", context=ctx(), workspace_root=None)
    assert status["reason_codes"] == ["invalid-memory-policy", "memory-disabled"]
    assert 'profile_promotion "review" must be one of disabled, review-required' in (
        status.guidance
    )
    logged = [r.getMessage() for r in caplog.records if "profile_promotion" in r.getMessage()]
    assert len(logged) == 1  # once, not once per call
    assert 'personal policy: profile_promotion "review"' in logged[0]


async def test_get_memory_status_says_why_a_workspace_root_was_refused(router, options, tmp_path):
    """Reviewer finding: a root outside the authorized ones and a missing one inside them got
    the same codes and no word of which it was, where plan_work tells them apart."""
    path = tmp_path / "memory-policy.json"
    path.write_text(personal("reviewed"))
    options["router"]["memory_policy"] = str(path)
    options["router"]["workspace_roots"] = [str(tmp_path)]
    codes = ["workspace-root-unverified", "workspace-policy-missing", "memory-disabled"]
    notes = {}
    for name, root in (("outside", "/etc"), ("missing", str(tmp_path / "gone"))):
        status = await router.call("get_memory_status", context=ctx(), workspace_root=root)
        assert status["reason_codes"] == codes  # the contract declares no finer code
        notes[name] = status.guidance
    assert notes["outside"].startswith("Workspace root refused: workspace-root-not-authorized:")
    assert "add the workspace to [options.router] workspace_roots" in notes["outside"]
    assert notes["missing"].startswith("Workspace root refused: workspace-root-missing:")
    assert "does not exist" in notes["missing"]
    plan = await router.plan("Fix the typo", routing_context={
        "workspace_root": "/etc", "domains": [], "tags": [], "current_phase_id": None})  # fmt: skip
    assert plan["profile_warnings"][0] in notes["outside"]  # the words plan_work uses
    (tmp_path / "ws").mkdir()
    fine = await router.call("get_memory_status", context=ctx(),
                             workspace_root=str(tmp_path / "ws"))  # fmt: skip
    assert fine["reason_codes"] == ["workspace-policy-missing", "memory-disabled"]
    assert not hasattr(fine, "guidance")  # nothing refused, no policy problem: no note


@pytest.mark.parametrize("root", ["/etc", "relative/path"])
async def test_list_workflow_candidates_says_why_a_workspace_root_was_refused(
    router, options, tmp_path, root
):
    """An empty list with no word was the whole answer, where get_memory_status says why."""
    path = tmp_path / "memory-policy.json"
    path.write_text(personal("reviewed"))
    options["router"]["memory_policy"] = str(path)
    options["router"]["workspace_roots"] = [str(tmp_path)]
    status = await router.call("get_memory_status", context=ctx(), workspace_root=root)
    listed = await router.call("list_workflow_candidates", context=ctx(), workspace_root=root,
                               status=None, limit=10)  # fmt: skip
    assert listed == {"authority_mode": "router-local", "candidates": [], "truncated": False}
    assert listed.guidance == f"{status.guidance} No candidates are listed for it."
    assert listed.guidance.startswith("Workspace root refused: workspace-root-")
