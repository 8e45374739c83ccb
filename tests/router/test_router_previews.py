"""Profile previews: deterministic, read-only, backtested, and blocked when they must be."""

from __future__ import annotations

import json

import pytest
import trio
from memory_support import memory_workspace, remember_args
from router_driver import ctx

from agora.toolsets.router.profiles import parse_profile


@pytest.fixture
def workspace(tmp_path, options):
    return memory_workspace(tmp_path, options, promotion=None)


async def record(router, runtime, root, domains, days=2, runs=3):
    routing = {"workspace_root": str(root), "domains": domains, "tags": [],
               "current_phase_id": None}  # fmt: skip
    lock = {"explicit_skill_ids": ["skill:lead"], "explicit_semantics": "use"}
    for n in range(runs):
        plan = await router.plan("Fix the typo", routing_context=routing, **lock)
        run = plan["workflow_run_id"]
        ev = await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"}, 1)
        await router.gate(run, "work", ev["event_ids"], 2)
        recorded = await router.call("remember_workflow", **remember_args(run, root))
        assert recorded["status"] == "recorded"
        if n % (runs // days or 1) == 0:
            runtime.clock.wall_source.advance(86400)


async def candidates(router, root):
    listed = await router.call("list_workflow_candidates", context=ctx(), limit=10,
                               workspace_root=str(root), status=None)  # fmt: skip
    return listed["candidates"]


async def preview(router, root, candidate_id):
    return await router.call("preview_profile_update", context=ctx(), workspace_root=str(root),
                             candidate_id=candidate_id)  # fmt: skip


async def test_a_preview_is_deterministic_backtested_and_persists_nothing(
    router, runtime, workspace
):
    await record(router, runtime, workspace, ["web"])
    (candidate,) = await candidates(router, workspace)
    commits = runtime.store.stats
    first = await preview(router, workspace, candidate["candidate_id"])
    again = await preview(router, workspace, candidate["candidate_id"])
    assert runtime.store.stats == commits
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert first["status"] == "previewed"
    assert first["reason_codes"] == []
    proposal = first["proposal"]
    assert proposal["expected_profile_digest"] == "missing"
    assert proposal["backtest"]["acceptable"] is True
    assert proposal["backtest"]["positive_match_coverage"] == 1.0
    profile, warnings = parse_profile("personal", proposal["proposed_profile_json"])
    assert profile is not None
    assert warnings == []
    # The Profile is named by its class, which already says "managed".
    assert profile.profile_id == proposal["target_profile_class"] == "managed-personal"
    (rule,) = profile.rules
    assert rule.domains_any == frozenset({"web"})
    assert rule.phases[0].primary_skill_id == "skill:lead"
    await record(router, runtime, workspace, ["web"], runs=1, days=1)
    (changed,) = await candidates(router, workspace)
    later = await preview(router, workspace, changed["candidate_id"])
    assert later["proposal"]["proposal_digest"] != proposal["proposal_digest"]


async def test_previews_that_cannot_be_made_say_why(router, runtime, workspace, tmp_path, options):
    missing = await preview(router, workspace, "candidate:" + "0" * 32)
    assert (missing["status"], missing["reason_codes"]) == (
        "not-found", ["workflow-candidate-not-found"]
    )  # fmt: skip
    await record(router, runtime, workspace, [])
    (unmatched,) = await candidates(router, workspace)
    blocked = await preview(router, workspace, unmatched["candidate_id"])
    assert (blocked["status"], blocked["reason_codes"]) == ("blocked", ["matcher-seed-required"])
    await record(router, runtime, workspace, ["web"])
    web = next(c for c in await candidates(router, workspace) if not c["reason_codes"])
    personal = tmp_path / "personal.json"
    personal.write_text(json.dumps({
        "format": "agora-router-profile/1", "profile_id": "mine",
        "rules": [{"rule_id": "web", "match": {"domains_any": ["web"]}, "phases": [{
            "phase_id": "p", "primary_skill_id": "skill:other",
            "exit_gate": {"gate_id": "g", "check_ids": ["c"]}}]}],
    }))  # fmt: skip
    options["router"]["personal_profile"] = str(personal)
    outranked = await preview(router, workspace, web["candidate_id"])
    assert outranked["proposal"]["backtest"]["manual_precedence"] is True
    assert outranked["reason_codes"] == ["profile-backtest-failed"]


def transition(proposal, action="approve", key=None, **over):
    args = {
        "context": ctx(), "workspace_root": None, "proposal_id": proposal["proposal_id"],
        "action": action, "expected_proposal_digest": proposal["proposal_digest"],
        "expected_profile_digest": proposal["expected_profile_digest"],
        "expected_state_version": proposal["state_version"],
        "idempotency_key": key or f"t-{proposal['proposal_id'][-8:]}-{action}",
        "correlation_id": "c",
    }  # fmt: skip
    return {**args, **over}


@pytest.fixture
def promoting(workspace, tmp_path):
    policy = tmp_path / "memory-policy.json"
    doc = json.loads(policy.read_text())
    policy.write_text(json.dumps({**doc, "profile_promotion": "review-required"}))
    return workspace


async def test_an_approved_preview_becomes_the_managed_profile_plans_use(
    router, runtime, promoting
):
    await record(router, runtime, promoting, ["web"])
    (candidate,) = await candidates(router, promoting)
    proposal = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
    args = transition(proposal, workspace_root=str(promoting))
    applied = await router.call("transition_profile_update", **args)
    assert applied["status"] == "applied"
    assert applied["revision_id"].startswith("revision:")
    assert await router.call("transition_profile_update", **args) == {**applied, "replayed": True}
    again = await router.call("transition_profile_update",
                              **{**args, "idempotency_key": "second"})  # fmt: skip
    assert (again["status"], again["reason_codes"]) == (
        "blocked", ["profile-proposal-state-conflict"]
    )  # decided already  # fmt: skip
    assert again["proposal"]["status"] == "applied"
    routing = {"workspace_root": str(promoting), "domains": ["web"], "tags": [],
               "current_phase_id": None}  # fmt: skip
    plan = await router.plan("Fix the typo", routing_context=routing)
    assert plan["route_source"] == "managed-personal-profile"
    assert plan["planned_skill_ids"] == ["skill:lead"]
    following = await preview(router, promoting, candidate["candidate_id"])
    assert following["reason_codes"] == ["candidate-not-proposed"]  # its rule is in force


async def test_a_changed_preview_cannot_be_approved_and_two_approvals_race(
    router, runtime, promoting
):
    await record(router, runtime, promoting, ["web"])
    (candidate,) = await candidates(router, promoting)
    stale = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
    await record(router, runtime, promoting, ["web"], runs=1, days=1)
    fresh = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
    assert fresh["proposal_id"] == stale["proposal_id"]
    blocked = await router.call("transition_profile_update",
                                **transition(stale, workspace_root=str(promoting)))  # fmt: skip
    assert (blocked["status"], blocked["reason_codes"]) == ("blocked", ["profile-preview-stale"])
    outcomes = []

    async def approve(key):
        args = transition(fresh, key=key, workspace_root=str(promoting))
        outcomes.append(await router.call("transition_profile_update", **args))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(approve, "race-a")
        nursery.start_soon(approve, "race-b")
    assert sorted(o["status"] == "applied" for o in outcomes) == [False, True]
    (loser,) = [o for o in outcomes if o["status"] != "applied"]
    # Either it lost the revision CAS, or it looked after the winner had applied.
    assert loser["reason_codes"] == ["profile-proposal-state-conflict"]


def test_a_revision_is_written_only_if_it_is_still_the_next_one():
    import datetime as datetime_module

    from agora.runtime.clock import Now
    from agora.toolsets.router.memory import MemoryStore
    from agora.toolsets.router.memory_commands import ApplyRevision

    store = MemoryStore(None)
    now = Now(0.0, datetime_module.datetime(2026, 11, 30, tzinfo=datetime_module.UTC))

    def apply(key, revision_id):
        return store.handle(ApplyRevision(
            session_id="s", idempotency_key=key, request_digest=key, target="managed-personal",
            profile_key="personal", revision_no=1, revision_id=revision_id,
            profile_json="{}", profile_digest="sha256:" + "1" * 64, source="p",
            result={"status": "applied"}, blocked={"status": "blocked"}), now)  # fmt: skip

    first, second = apply("a", "revision:" + "a" * 32), apply("b", "revision:" + "b" * 32)
    assert (first.reply["status"], second.reply["status"]) == ("applied", "blocked")
    assert first.writes
    assert second.writes == []


async def test_a_rejected_candidate_is_suppressed(router, runtime, promoting):
    await record(router, runtime, promoting, ["web"])
    (candidate,) = await candidates(router, promoting)
    proposal = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
    args = transition(proposal, "reject", workspace_root=str(promoting))
    rejected = await router.call("transition_profile_update", **args)
    assert rejected["status"] == "rejected"
    (listed,) = await candidates(router, promoting)
    assert listed["status"] == "suppressed"
    assert "candidate-suppressed" in listed["reason_codes"]
    blocked = await preview(router, promoting, candidate["candidate_id"])
    assert (blocked["status"], blocked["reason_codes"]) == ("blocked", ["candidate-suppressed"])
    runtime.clock.wall_source.advance(181 * 86400)
    (later,) = await candidates(router, promoting)
    assert later["status"] == "proposed"


async def test_the_retention_sweep_deletes_suppressions_after_180_days(router, runtime, promoting):
    from agora.toolsets.router import memory_tools

    await record(router, runtime, promoting, ["web"])
    (candidate,) = await candidates(router, promoting)
    proposal = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
    args = transition(proposal, "reject", workspace_root=str(promoting))
    assert (await router.call("transition_profile_update", **args))["status"] == "rejected"
    count = "SELECT COUNT(*) FROM router_memory_rejections"
    runtime.clock.wall_source.advance(179 * 86400)
    await memory_tools.sweep(runtime, "")  # still within its 180 days: kept
    assert (await runtime.read(lambda c: c.execute(count).fetchone()))[0] == 1
    runtime.clock.wall_source.advance(2 * 86400)
    await memory_tools.sweep(runtime, "")
    assert (await runtime.read(lambda c: c.execute(count).fetchone()))[0] == 0
    commits = runtime.store.stats
    await memory_tools.sweep(runtime, "")  # nothing left to drop: no write
    assert runtime.store.stats == commits


async def test_promotion_must_be_allowed_by_the_policy(router, runtime, workspace):
    await record(router, runtime, workspace, ["web"])
    (candidate,) = await candidates(router, workspace)
    proposal = (await preview(router, workspace, candidate["candidate_id"]))["proposal"]
    blocked = await router.call("transition_profile_update",
                                **transition(proposal, workspace_root=str(workspace)))  # fmt: skip
    assert blocked["reason_codes"] == ["profile-promotion-disabled"]


async def test_a_rollback_is_a_reviewable_proposal_that_restores_a_revision(
    router, runtime, promoting
):
    await record(router, runtime, promoting, ["web"])
    (first,) = await candidates(router, promoting)
    p1 = (await preview(router, promoting, first["candidate_id"]))["proposal"]
    rev1 = await router.call("transition_profile_update",
                             **transition(p1, workspace_root=str(promoting)))  # fmt: skip
    await record(router, runtime, promoting, ["db"])
    second = next(c for c in await candidates(router, promoting)
                  if c["candidate_id"] != first["candidate_id"])  # fmt: skip
    p2 = (await preview(router, promoting, second["candidate_id"]))["proposal"]
    assert p2["expected_profile_digest"] == p1["proposed_profile_digest"]
    rev2 = await router.call("transition_profile_update",
                             **transition(p2, workspace_root=str(promoting)))  # fmt: skip
    assert rev2["status"] == "applied"

    def rollback(expected, source=rev1["revision_id"], key="rb-1"):
        return {"context": ctx(), "workspace_root": str(promoting), "source_revision_id": source,
                "expected_profile_digest": expected, "idempotency_key": key,
                "correlation_id": "c"}  # fmt: skip

    drift = await router.call("rollback_profile_revision",
                              **rollback(p1["proposed_profile_digest"], key="rb-0"))  # fmt: skip
    assert (drift["status"], drift["reason_codes"]) == ("blocked", ["profile-drift"])
    missing = await router.call("rollback_profile_revision",
                                **rollback(p2["proposed_profile_digest"], key="rb-x",
                                           source="revision:" + "0" * 32))  # fmt: skip
    assert missing["status"] == "not-found"
    pending = await router.call("rollback_profile_revision",
                                **rollback(p2["proposed_profile_digest"]))  # fmt: skip
    assert pending["status"] == "pending"
    proposal = pending["proposal"]
    assert proposal["proposed_profile_digest"] == p1["proposed_profile_digest"]
    assert json.loads(proposal["semantic_diff_json"])["removed_rules"]
    routing = {"workspace_root": str(promoting), "domains": ["db"], "tags": [],
               "current_phase_id": None}  # fmt: skip
    before = await router.plan("Fix the typo", routing_context=routing)
    assert before["route_source"] == "managed-personal-profile"  # the rollback wrote nothing
    applied = await router.call("transition_profile_update",
                                **transition(proposal, workspace_root=str(promoting)))  # fmt: skip
    assert applied["status"] == "applied"
    after = await router.plan("Fix the typo", routing_context=routing)
    assert after["route_source"] == "builtin-default"  # the db rule is gone again
    again = await router.call("transition_profile_update", **transition(
        proposal, key="rb-again", workspace_root=str(promoting)))  # fmt: skip
    # decided already: said so, not reported as a drift of the Profile it changed itself
    assert again["reason_codes"] == ["profile-proposal-state-conflict"]
    assert again["proposal"]["status"] == "applied"


async def test_purging_candidates_revisions_and_managed_profiles(router, runtime, promoting):
    await record(router, runtime, promoting, ["web"])
    await record(router, runtime, promoting, ["db"])
    web, db = sorted(await candidates(router, promoting), key=lambda c: c["pattern_id"])
    for candidate in (web, db):
        proposal = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
        args = transition(proposal, workspace_root=str(promoting))
        applied = await router.call("transition_profile_update", **args)
        assert applied["status"] == "applied"
    await record(router, runtime, promoting, ["api"])
    (api,) = [c for c in await candidates(router, promoting) if c["candidate_id"] not in
              (web["candidate_id"], db["candidate_id"])]  # fmt: skip
    proposal = (await preview(router, promoting, api["candidate_id"]))["proposal"]
    await router.call("transition_profile_update",
                      **transition(proposal, "reject", workspace_root=str(promoting)))  # fmt: skip
    count = "SELECT COUNT(*) FROM router_memory_revisions"

    async def purge(scope):
        st = await router.call("get_memory_status", context=ctx(), workspace_root=None)
        return await router.call("purge_workflow_memory", context=ctx(), scope=scope,
                                 confirmed=True, include_managed_profiles=False,
                                 expected_summary_digest=st["history_summary_digest"],
                                 idempotency_key=f"purge-{scope}", correlation_id="c")  # fmt: skip

    def plan_for(domain):
        routing = {"workspace_root": str(promoting), "domains": [domain], "tags": [],
                   "current_phase_id": None}  # fmt: skip
        return router.plan("Fix the typo", routing_context=routing)

    assert (await runtime.read(lambda c: c.execute(count).fetchone()))[0] == 2
    assert (await purge("revisions-only"))["status"] == "purged"
    assert (await runtime.read(lambda c: c.execute(count).fetchone()))[0] == 1
    assert (await plan_for("db"))["route_source"] == "managed-personal-profile"
    assert (await purge("candidates-only"))["status"] == "purged"
    statuses = {c["candidate_id"]: c["status"] for c in await candidates(router, promoting)}
    assert statuses[api["candidate_id"]] == "proposed"  # no longer suppressed
    assert (await purge("managed-profiles-only"))["status"] == "purged"
    assert (await runtime.read(lambda c: c.execute(count).fetchone()))[0] == 0
    assert (await plan_for("db"))["route_source"] == "builtin-default"
    again = (await preview(router, promoting, web["candidate_id"]))["proposal"]
    assert again["expected_profile_digest"] == "missing"


def test_at_most_twenty_revisions_are_kept_per_managed_profile():
    import datetime as datetime_module

    from agora.runtime.clock import Now
    from agora.toolsets.router.memory import MAX_REVISIONS, MemoryStore
    from agora.toolsets.router.memory_commands import ApplyRevision

    store = MemoryStore(None)
    now = Now(0.0, datetime_module.datetime(2026, 11, 30, tzinfo=datetime_module.UTC))
    deleted = []
    for no in range(1, MAX_REVISIONS + 3):
        effects = store.handle(ApplyRevision(
            session_id="s", idempotency_key=f"k{no}", request_digest=f"k{no}",
            target="managed-personal", profile_key="personal", revision_no=no,
            revision_id=f"revision:{no:032x}", profile_json="{}",
            profile_digest="sha256:" + "1" * 64, source="p", result={"status": "applied"},
            blocked={"status": "blocked"}), now)  # fmt: skip
        assert effects.reply["status"] == "applied"
        deleted += [
            w[1] for w in effects.writes if w[0].startswith("DELETE FROM router_memory_revisions")
        ]
    history = store.revisions[("managed-personal", "personal")]
    assert [h[0] for h in history] == list(range(3, MAX_REVISIONS + 3))
    assert deleted == [("", f"revision:{1:032x}"), ("", f"revision:{2:032x}")]  # owner, id
