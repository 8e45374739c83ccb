"""A Profile learned from Memory plans what its runs did, and says why when it cannot be made.

Reviewer findings: a learned rule checked each phase's gate by its gate id (``plan-exit``)
instead of the check ids the runs reported (``plan-ready``), so after approval the agent's
own report was refused ``unknown-check-id``, and the backtest did not notice; a candidate
learned from builtin routes (no phase of its own) was proposed though no preview of it could
ever pass the Profile lint, which came with no word of why; and a proposal decided already
answered ``not-found``.
"""

from __future__ import annotations

import json

import pytest
from memory_support import memory_workspace, remember_args
from test_router_previews import candidates, preview, transition

from agora.toolsets.router import previews
from agora.toolsets.router.candidates import Mined, Observed, mine_with_routes
from agora.toolsets.router.memory import MEMORY
from agora.toolsets.router.memory_commands import ApplyRevision
from agora.toolsets.router.ownership import memory_key

PHASED = "Plan the parser, then implement it"
CHECKS = {"plan": "plan-ready", "implement": "implementation-done", "verify": "verification-passed"}


@pytest.fixture
def promoting(tmp_path, options):
    return memory_workspace(tmp_path, options)


def routing(root):
    return {"workspace_root": str(root), "domains": ["api"], "tags": ["parser"],
            "current_phase_id": None}  # fmt: skip


async def finish(router, run, lock=True):
    """Pass every phase's gate on its builtin check; the run's last state version."""
    version = 1
    for phase, check in CHECKS.items():
        ev = await router.event(run, phase, {"check_id": check, "outcome": "passed"}, version)
        await router.gate(run, phase, ev["event_ids"], version + 1)
        version += 2
    return version


async def learn(router, runtime, root, runs=3):
    """``runs`` phased runs under the lock ``sa``, ``sb``, remembered over two days."""
    lock = {"explicit_skill_ids": ["sa", "sb"], "explicit_semantics": "use"}
    for n in range(runs):
        plan = await router.plan(PHASED, routing_context=routing(root), **lock)
        assert plan["routing_envelope"] == "phased"
        await finish(router, plan["workflow_run_id"])
        recorded = await router.call("remember_workflow",
                                     **remember_args(plan["workflow_run_id"], root))  # fmt: skip
        assert recorded["status"] == "recorded"
        if n == 0:
            runtime.clock.wall_source.advance(86400)


async def test_a_learned_profile_keeps_the_check_ids_its_runs_reported(router, runtime, promoting):
    await learn(router, runtime, promoting)
    (candidate,) = await candidates(router, promoting)
    previewed = await preview(router, promoting, candidate["candidate_id"])
    proposal = previewed["proposal"]
    assert proposal["backtest"]["acceptable"] is True
    (rule,) = json.loads(proposal["proposed_profile_json"])["rules"]
    gates = {p["phase_id"]: p["exit_gate"] for p in rule["phases"]}
    assert gates == {phase: {"gate_id": f"{phase}-exit", "check_ids": [check]}
                     for phase, check in CHECKS.items()}  # fmt: skip
    applied = await router.call("transition_profile_update",
                                **transition(proposal, workspace_root=str(promoting)))  # fmt: skip
    assert applied["status"] == "applied"
    plan = await router.plan(PHASED, routing_context=routing(promoting))
    assert plan["route_source"] == "managed-personal-profile"
    assert "phase plan (exit gate plan-exit): checks plan-ready;" in plan.guidance
    # the agent reports the checks the runs reported, and every gate passes on them
    assert await finish(router, plan["workflow_run_id"]) == 7
    assert (await router.next(plan["workflow_run_id"]))["status"] == "completed"


def _observed(n, checks):
    doc = {
        "routing_envelope": "phased", "target_profile_class": "managed-personal",
        "route_signature_digest": "sha256:" + "a" * 64, "side_effect_outcome": "known-success",
        "domains": ["api"], "tags": ["parser"],
        "planned_skill_tree": [{"phase_id": "plan", "primary_skill_id": "sa",
                                "support_skill_ids": [], "exit_gate": "plan-gate"}],
        "phase_check_ids": {"plan": checks},
    }  # fmt: skip
    day = f"2026-11-{1 + n % 2:02d}"
    return Observed(f"observation:{n:032x}", f"run-{n}", doc, day, f"{day}T10:00:00.000000Z", ())


def test_the_backtest_fails_a_rule_that_changed_a_check_id():
    observed = [_observed(n, ["plan-ready"]) for n in range(3)]
    (mined,) = mine_with_routes(observed, "personal", "reviewed", "sha256:" + "0" * 64)
    proposal, reasons = previews.preview(mined, observed, [], "sha256:" + "0" * 64)[:2]
    assert reasons == []
    assert proposal is not None
    assert proposal["backtest"]["positive_match_count"] == 3
    # The same candidate, its route's check id changed: the runs' reports would be refused.
    changed = {**mined.route, "phase_check_ids": {"plan": ["plan-gate"]}}
    moved = Mined(mined.candidate, changed, mined.members)
    proposal, reasons = previews.preview(moved, observed, [], "sha256:" + "0" * 64)[:2]
    assert proposal is not None
    assert proposal["backtest"]["positive_match_count"] == 0
    assert proposal["backtest"]["acceptable"] is False
    assert reasons == ["profile-backtest-failed"]


async def test_builtin_routes_are_no_candidate(router, runtime, promoting):
    for n in range(3):  # no lock, no Profile: the builtin phased route, which names no skill
        plan = await router.plan(PHASED, routing_context=routing(promoting))
        assert plan["planned_skill_tree"] == []
        await finish(router, plan["workflow_run_id"])
        args = remember_args(plan["workflow_run_id"], promoting)
        assert (await router.call("remember_workflow", **args))["status"] == "recorded"
        if n == 0:
            runtime.clock.wall_source.advance(86400)
    assert await candidates(router, promoting) == []


async def test_a_lint_failure_names_its_problems(router, runtime, promoting):
    await learn(router, runtime, promoting)
    (candidate,) = await candidates(router, promoting)
    # A managed Profile already at the format's 256 rules: one more cannot be linted.
    full = {"format": "agora-router-profile/1", "profile_id": "managed-personal",
            "rules": [{"rule_id": f"r{n}", "match": {"domains_any": ["other"]},
                       "phases": [{"phase_id": "p", "primary_skill_id": "s",
                                   "exit_gate": {"gate_id": "g", "check_ids": ["c"]}}]}
                      for n in range(256)]}  # fmt: skip
    text = json.dumps(full)
    command = ApplyRevision(
        session_id="s", idempotency_key="full", request_digest="full",
        target="managed-personal", profile_key="personal", revision_no=1,
        revision_id="revision:" + "f" * 32, profile_json=text, profile_digest="sha256:" + "f" * 64,
        source="test", result={"status": "applied"}, blocked={"status": "blocked"},
    )  # fmt: skip
    await runtime.call(MEMORY, memory_key(router.principal), command)
    blocked = await preview(router, promoting, candidate["candidate_id"])
    assert (blocked["status"], blocked["reason_codes"]) == ("blocked", ["profile-lint-failed"])
    assert blocked.guidance.startswith("Profile lint problems: profile-invalid: field 'rules'")
    assert "256" in blocked.guidance


async def test_a_decided_proposal_says_it_was_decided(router, runtime, promoting):
    await learn(router, runtime, promoting)
    (candidate,) = await candidates(router, promoting)
    proposal = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
    args = transition(proposal, workspace_root=str(promoting))
    assert (await router.call("transition_profile_update", **args))["status"] == "applied"
    for action in ("approve", "reject"):
        again = await router.call(
            "transition_profile_update", **{**args, "action": action, "idempotency_key": action}
        )
        assert (again["status"], again["reason_codes"]) == (
            "blocked", ["profile-proposal-state-conflict"]
        )  # fmt: skip
        assert again["proposal"]["proposal_id"] == proposal["proposal_id"]
        assert again["proposal"]["status"] == "applied"
        assert "already applied" in again.guidance


async def test_a_rejected_proposal_says_it_was_rejected(router, runtime, promoting):
    await learn(router, runtime, promoting)
    (candidate,) = await candidates(router, promoting)
    proposal = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
    args = transition(proposal, "reject", workspace_root=str(promoting))
    assert (await router.call("transition_profile_update", **args))["status"] == "rejected"
    again = await router.call(
        "transition_profile_update", **{**args, "action": "approve", "idempotency_key": "later"}
    )
    assert (again["status"], again["reason_codes"]) == (
        "blocked", ["profile-proposal-state-conflict"]
    )  # fmt: skip
    assert again["proposal"]["status"] == "rejected"
    assert "already rejected" in again.guidance


async def test_an_approved_candidate_keeps_the_runs_its_rule_plans(router, runtime, promoting):
    # Reviewer finding: the runs the approved rule planned were another route (their route
    # source, Profile digest and rule id differ from the locked runs'), so once they were the
    # most common the candidate vanished from the list.
    await learn(router, runtime, promoting)
    (candidate,) = await candidates(router, promoting)
    proposal = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
    args = transition(proposal, workspace_root=str(promoting))
    assert (await router.call("transition_profile_update", **args))["status"] == "applied"
    for _ in range(4):
        plan = await router.plan(PHASED, routing_context=routing(promoting))
        assert plan["route_source"] == "managed-personal-profile"
        await finish(router, plan["workflow_run_id"])
        args = remember_args(plan["workflow_run_id"], promoting)
        assert (await router.call("remember_workflow", **args))["status"] == "recorded"
    (kept,) = await candidates(router, promoting)
    assert (kept["candidate_id"], kept["status"]) == (candidate["candidate_id"], "approved")
    assert kept["metrics"]["distinct_runs"] == 7
    assert kept["metrics"]["route_consistency"] == 1.0
    again = await preview(router, promoting, candidate["candidate_id"])
    assert again["reason_codes"] == ["candidate-not-proposed"]
