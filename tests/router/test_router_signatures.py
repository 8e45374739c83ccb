"""Route signatures say what a route does, and observations stored before that still count.

A server before this change signed a route with how it was chosen too (route source,
selection mode, Profile digest and rule id), and bound each candidate id, so each rejection,
automatic promotion and learned rule id, to that signature. Its stored observations are
grouped by what their route does like new ones, and what it stored under the ids it gave
still names the candidate.
"""

from __future__ import annotations

import json

import pytest
from memory_support import memory_workspace, remember_args
from router_driver import Router
from test_router_learned_profiles import PHASED, finish, learn, routing
from test_router_previews import candidates, preview

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.toolsets.router.digests import digest, route_signature
from agora.toolsets.router.memory import MEMORY
from agora.toolsets.router.memory_commands import ApplyRevision, RejectCandidate
from agora.toolsets.router.ownership import memory_key

#: The route fields the signature covered before it left out how the route was chosen.
BEFORE = ("routing_envelope", "route_source", "selection_mode", "planned_skill_tree",
          "routing_profile_digest", "matched_profile_rule_id")  # fmt: skip
OBSERVATIONS = "SELECT observation_id, observation_json FROM router_memory_observations"


@pytest.fixture
def promoting(tmp_path, options):
    return memory_workspace(tmp_path, options)


async def stored_before(runtime):
    """Give every stored observation the signature a server before this change stored."""
    writes = []
    for observation_id, text in await runtime.read(lambda c: c.execute(OBSERVATIONS).fetchall()):
        doc = json.loads(text)
        doc["route_signature_digest"] = digest({name: doc[name] for name in BEFORE})
        writes.append((
            "UPDATE router_memory_observations SET route_signature_digest = ?,"
            " observation_json = ? WHERE observation_id = ?",
            (doc["route_signature_digest"], json.dumps(doc), observation_id),
        ))  # fmt: skip
    await runtime.write(writes)
    return doc["route_signature_digest"]


def id_before(candidate, signature):
    """The id a server before this change gave ``candidate``, its runs signed ``signature``."""
    pattern = candidate["pattern_id"].removeprefix("pattern:")
    return "candidate:" + digest([pattern, signature]).removeprefix("sha256:")[:32]


async def memory(router, runtime, command):
    return await runtime.call(MEMORY, memory_key(router.principal), command)


def test_the_signature_leaves_out_how_the_route_was_chosen():
    tree = [{"phase_id": "work", "primary_skill_id": "sa", "support_skill_ids": [],
             "exit_gate": "work-exit"}]  # fmt: skip
    locked = {"routing_envelope": "single", "route_source": "user-explicit",
              "selection_mode": "explicit-locked", "planned_skill_tree": tree,
              "routing_profile_digest": None, "matched_profile_rule_id": None}  # fmt: skip
    learned = {**locked, "route_source": "managed-personal-profile",
               "selection_mode": "profile-route", "routing_profile_digest": "sha256:" + "1" * 64,
               "matched_profile_rule_id": "cand-0123456789abcdef"}  # fmt: skip
    assert route_signature(locked) == route_signature(learned)
    other = [{**tree[0], "primary_skill_id": "sb"}]
    assert route_signature(locked) != route_signature({**locked, "planned_skill_tree": other})
    assert route_signature(locked) != route_signature({**locked, "routing_envelope": "phased"})


async def test_a_rejection_stored_before_still_suppresses_its_candidate(router, runtime, promoting):
    await learn(router, runtime, promoting)
    signature = await stored_before(runtime)
    (candidate,) = await candidates(router, promoting)
    assert candidate["status"] == "proposed"
    rejected = RejectCandidate(session_id="s", idempotency_key="before", request_digest="before",
                               candidate_id=id_before(candidate, signature),
                               profile_key="personal", result={"status": "rejected"})  # fmt: skip
    await memory(router, runtime, rejected)
    (suppressed,) = await candidates(router, promoting)
    assert (suppressed["candidate_id"], suppressed["status"]) == (
        candidate["candidate_id"], "suppressed"
    )  # fmt: skip
    blocked = await preview(router, promoting, candidate["candidate_id"])
    assert blocked["reason_codes"] == ["candidate-suppressed"]


async def test_a_rule_promoted_before_keeps_its_candidate(router, runtime, promoting):
    await learn(router, runtime, promoting)
    signature = await stored_before(runtime)
    (candidate,) = await candidates(router, promoting)
    proposal = (await preview(router, promoting, candidate["candidate_id"]))["proposal"]
    # What the router promoted before: the rule under the id the candidate had then.
    before = id_before(candidate, signature)
    profile = json.loads(proposal["proposed_profile_json"])
    (rule,) = profile["rules"]
    rule["rule_id"] = "cand-" + before.removeprefix("candidate:")[:16]
    promoted = ApplyRevision(
        session_id="s", idempotency_key="before", request_digest="before",
        target="managed-personal", profile_key="personal", revision_no=1,
        revision_id="revision:" + "b" * 32, profile_json=json.dumps(profile),
        profile_digest=digest(profile), source="auto:" + before, result={"status": "applied"},
        blocked={"status": "blocked"},
    )  # fmt: skip
    assert (await memory(router, runtime, promoted))["status"] == "applied"
    for _ in range(4):
        plan = await router.plan(PHASED, routing_context=routing(promoting))
        assert plan["matched_profile_rule_id"].endswith("#" + rule["rule_id"])
        await finish(router, plan["workflow_run_id"])
        args = remember_args(plan["workflow_run_id"], promoting)
        assert (await router.call("remember_workflow", **args))["status"] == "recorded"
    (kept,) = await candidates(router, promoting)
    assert (kept["candidate_id"], kept["status"]) == (candidate["candidate_id"], "auto-promoted")
    assert kept["metrics"]["distinct_runs"] == 7
    held = await preview(router, promoting, candidate["candidate_id"])
    assert held["reason_codes"] == ["candidate-not-proposed"]


async def test_a_run_remembered_again_answers_the_signature_stored(
    router, runtime, promoting, nursery, options
):
    await learn(router, runtime, promoting, runs=1)
    signature = await stored_before(runtime)
    (run,) = await runtime.read(lambda c: c.execute(
        "SELECT workflow_run_id FROM router_memory_observations").fetchone())  # fmt: skip
    # A server started on that store (its Memory actor loads the observation from the file).
    later = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall()), options=options))
    again = await later.call("remember_workflow", **remember_args(run, promoting))
    assert again.guidance.startswith("Already recorded")
    assert again["route_signature_digest"] == signature  # what its feedback must name
