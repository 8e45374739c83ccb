"""Memory belongs to its principal: another principal's Memory answers as an empty one.

Each principal's status, digests, purges, feedback and retention see only its own rows; the
caller without a token keeps the local store of a single-user server. A store made before
owners existed opens with its rows given to that anonymous/local owner (router step 5).
"""

from __future__ import annotations

import json

import pytest
from memory_support import completed_run, memory_workspace, observe_policy, remember_args, status
from router_driver import Router, ctx, key

from agora.identity import Principal
from agora.store.db import open_store
from agora.toolsets.router import memory_tools, promotion
from agora.toolsets.router.digests import digest
from agora.toolsets.router.sql import MIGRATIONS

ALICE, BOB = Principal("alice"), Principal("bob")
COUNTS = (
    "SELECT (SELECT COUNT(*) FROM router_memory_observations WHERE owner = ?),"
    " (SELECT COUNT(*) FROM router_memory_feedback WHERE owner = ?)"
)


@pytest.fixture
def policy(tmp_path, options):
    """Personal ceiling ``reviewed``; an authorized workspace requesting ``observe``."""
    return observe_policy(tmp_path, options)


async def remember(router, root, **over):
    run = await completed_run(router)
    recorded = await router.call("remember_workflow", **remember_args(run, root, **over))
    assert recorded["status"] == "recorded", recorded
    return run, recorded["observation_id"]


def feedback_args(run, observation, root):
    return {"context": ctx(), "workflow_run_id": run, "observation_id": observation,
            "workspace_root": str(root), "feedback_type": "accepted",
            "reason_code": "user-accepted", "correction_dimensions": [],
            "original_route_digest": None, "corrected_route_digest": None,
            "idempotency_key": key("fb"), "correlation_id": "c"}  # fmt: skip


async def purge(router, root, scope="all-memory-data", digest_=None):
    current = digest_ or (await status(router, root))["history_summary_digest"]
    return await router.call("purge_workflow_memory", context=ctx(), scope=scope,
                             confirmed=True, expected_summary_digest=current,
                             include_managed_profiles=True, idempotency_key=key("purge"),
                             correlation_id="c")  # fmt: skip


async def counts(runtime, owner):
    row = await runtime.read(lambda c: c.execute(COUNTS, (owner, owner)).fetchone())
    return tuple(row)


async def test_bob_neither_counts_nor_purges_alices_memory(runtime, policy):
    alice, bob = Router(runtime, principal=ALICE), Router(runtime, principal=BOB)
    empty = await status(bob, policy)
    run, observation = await remember(alice, policy)
    fed = await alice.call("record_route_feedback", **feedback_args(run, observation, policy))
    assert fed["status"] == "recorded"
    hers = await status(alice, policy)
    assert (hers["memory_store_exists"], hers["eligible_workflow_count"]) == (True, 1)
    assert await status(bob, policy) == empty  # his Memory answers as an empty one
    assert empty["eligible_workflow_count"] == 0
    assert empty["memory_store_exists"] is False
    # her observation under his session is a missing one to him
    stolen = await bob.refused("record_route_feedback", **feedback_args(run, observation, policy))
    assert stolen["code"] == "observation-not-found"
    purged = await purge(bob, policy)
    assert purged["status"] == "purged"
    assert (purged["deleted_observations"], purged["deleted_feedback"]) == (0, 0)
    assert await counts(runtime, "alice") == (1, 1)  # her rows are intact
    assert await status(alice, policy) == hers
    assert (await purge(alice, policy))["deleted_observations"] == 1  # hers to delete
    assert await counts(runtime, "alice") == (0, 0)


async def test_two_principals_digests_and_purges_are_independent(runtime, policy):
    alice, bob = Router(runtime, principal=ALICE), Router(runtime, principal=BOB)
    local = Router(runtime)  # the caller without a token
    await remember(alice, policy)
    await remember(alice, policy)
    hers = (await status(alice, policy))["history_summary_digest"]
    await remember(bob, policy)
    await remember(local, policy)
    assert (await status(alice, policy))["history_summary_digest"] == hers
    his = await status(bob, policy)
    assert his["eligible_workflow_count"] == 1
    assert (await status(local, policy))["eligible_workflow_count"] == 1
    stale = await purge(bob, policy, scope="history-only", digest_=hers)  # hers is not his
    assert (stale["status"], stale["reason_codes"]) == ("blocked", ["stale-summary-digest"])
    done = await purge(bob, policy, scope="history-only")
    assert done["deleted_observations"] == 1
    assert (await status(alice, policy))["history_summary_digest"] == hers
    assert await counts(runtime, "alice") == (2, 0)
    assert await counts(runtime, "") == (1, 0)  # the local owner's row


async def test_retention_sweeps_each_owners_memory_apart(runtime, policy, monkeypatch):
    monkeypatch.setattr(memory_tools, "RETENTION_MAX", 1)
    alice, local = Router(runtime, principal=ALICE), Router(runtime)
    for router in (alice, local, alice, local):
        await remember(router, policy)
        runtime.clock.wall_source.advance(3600)
    await memory_tools.sweep(runtime, "")  # the local owner's surplus only
    assert (await counts(runtime, ""), await counts(runtime, "alice")) == ((1, 0), (2, 0))
    await promotion.upkeep(runtime)  # what the background task runs: every owner
    assert await counts(runtime, "alice") == (1, 0)


#: The Memory tables as router schema 4 made them (before owners), and rows of one store.
OLD_STORE = [
    "CREATE TABLE router_memory_meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
    "CREATE TABLE router_memory_observations (observation_id TEXT PRIMARY KEY,"
    " workspace_identity TEXT NOT NULL, workflow_run_id TEXT NOT NULL,"
    " session_id TEXT NOT NULL, route_signature_digest TEXT NOT NULL,"
    " observation_json TEXT NOT NULL, observation_digest TEXT NOT NULL,"
    " recorded_day TEXT NOT NULL, recorded_at TEXT NOT NULL)",
    "CREATE TABLE router_memory_feedback (feedback_id TEXT PRIMARY KEY,"
    " observation_id TEXT NOT NULL, workspace_identity TEXT NOT NULL,"
    " feedback_json TEXT NOT NULL, feedback_digest TEXT NOT NULL, recorded_at TEXT NOT NULL)",
    "CREATE TABLE router_memory_receipts (session_id TEXT NOT NULL,"
    " idempotency_key TEXT NOT NULL, request_digest TEXT NOT NULL, result_json TEXT NOT NULL,"
    " created_at TEXT NOT NULL, PRIMARY KEY (session_id, idempotency_key))",
    "CREATE TABLE router_memory_revisions (revision_id TEXT PRIMARY KEY,"
    " target_profile_class TEXT NOT NULL, profile_key TEXT NOT NULL,"
    " revision_no BIGINT NOT NULL, profile_json TEXT NOT NULL, profile_digest TEXT NOT NULL,"
    " source TEXT NOT NULL, created_at TEXT NOT NULL)",
    "CREATE TABLE router_memory_rejections (candidate_id TEXT PRIMARY KEY,"
    " profile_key TEXT NOT NULL, rejected_at TEXT NOT NULL)",
    "CREATE TABLE router_memory_proposals (proposal_id TEXT PRIMARY KEY,"
    " target_profile_class TEXT NOT NULL, profile_key TEXT NOT NULL,"
    " proposal_json TEXT NOT NULL, created_at TEXT NOT NULL)",
    "INSERT INTO router_memory_meta (name, value) VALUES ('generation', 3)",
]
AT = "2026-11-30T00:00:00.000000Z"


def _old_rows(identity: str) -> list[tuple[str, tuple[object, ...]]]:
    return [
        ("INSERT INTO router_memory_observations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
         ("observation:" + "a" * 32, identity, "run-old", "s1", "sha256:" + "1" * 64, "{}",
          "sha256:" + "2" * 64, AT[:10], AT)),
        ("INSERT INTO router_memory_feedback VALUES (?, ?, ?, ?, ?, ?)",
         ("feedback:" + "b" * 32, "observation:" + "a" * 32, identity, "{}",
          "sha256:" + "3" * 64, AT)),
        ("INSERT INTO router_memory_receipts VALUES (?, ?, ?, ?, ?)",
         ("s1", "mem-1", "sha256:" + "4" * 64, '{"status": "recorded"}', AT)),
        ("INSERT INTO router_memory_revisions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
         ("revision:" + "c" * 32, "managed-personal", "personal", 1, "{}",
          "sha256:" + "5" * 64, "p", AT)),
    ]  # fmt: skip


async def test_a_store_made_before_owners_opens_as_the_local_owners(
    tmp_path, nursery, options, policy
):
    from agora.runtime.clock import Clock, FakeWall
    from agora.runtime.registry import Runtime

    path = tmp_path / "old.db"
    identity = digest({"workspace": str(policy.resolve())})
    async with open_store(path, MIGRATIONS[:4]) as old:  # router schema 4
        await old.write([(s, ()) for s in OLD_STORE] + _old_rows(identity))
    async with open_store(path, MIGRATIONS) as st:  # step 5 runs
        runtime = Runtime(st, nursery, clock=Clock(FakeWall()), options=options)
        local, alice = Router(runtime), Router(runtime, principal=ALICE)
        mine = await status(local, policy)
        assert (mine["memory_store_exists"], mine["eligible_workflow_count"]) == (True, 1)
        assert mine["history_summary_digest"] == digest(
            {"generation": 3, "observations": 1, "feedback": 1, "receipts": 1}
        )  # the digest it had before the step: the same history
        hers = await status(alice, policy)
        assert (hers["memory_store_exists"], hers["eligible_workflow_count"]) == (False, 0)
        # the key is (owner, id) now: another owner may hold the same observation id
        same_id = _old_rows(identity)[0][1]
        await st.write([(
            "INSERT INTO router_memory_observations (owner, observation_id, workspace_identity,"
            " workflow_run_id, session_id, route_signature_digest, observation_json,"
            " observation_digest, recorded_day, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("carol", *same_id),
        )])  # fmt: skip
        assert await counts(runtime, "carol") == (1, 0)
        await remember(alice, policy)  # her part of the store, beside the migrated rows
        assert (await status(local, policy))["history_summary_digest"] == (
            mine["history_summary_digest"]
        )
        purged = await purge(local, policy)
        assert (purged["deleted_observations"], purged["deleted_feedback"]) == (1, 1)
        assert purged["deleted_command_receipts"] == 1
        revisions = "SELECT owner, COUNT(*) FROM router_memory_revisions GROUP BY owner"
        assert await runtime.read(lambda c: c.execute(revisions).fetchall()) == []
        assert await counts(runtime, "alice") == (1, 0)
        runtime.begin_shutdown()


async def test_candidates_previews_and_managed_profiles_are_each_principals(
    runtime, tmp_path, options
):
    from test_router_previews import candidates, preview, record, transition

    root = memory_workspace(tmp_path, options)
    alice, bob = Router(runtime, principal=ALICE), Router(runtime, principal=BOB)
    await record(alice, runtime, root, ["web"])
    (candidate,) = await candidates(alice, root)
    assert await candidates(bob, root) == []
    nowhere = "candidate:" + "0" * 32
    hers = await preview(bob, root, candidate["candidate_id"])
    missing = await preview(bob, root, nowhere)
    assert missing["reason_codes"] == ["workflow-candidate-not-found"]
    assert json.dumps(hers).replace(candidate["candidate_id"], nowhere) == json.dumps(missing)
    proposal = (await preview(alice, root, candidate["candidate_id"]))["proposal"]
    args = transition(proposal, workspace_root=str(root))
    assert (await alice.call("transition_profile_update", **args))["status"] == "applied"
    stolen = await bob.call("transition_profile_update", **{**args, "idempotency_key": "bob"})
    assert (stolen["status"], stolen["reason_codes"]) == (
        "not-found",
        ["profile-proposal-not-found"],
    )
    await record(bob, runtime, root, ["web"])  # the same routes: the same candidate id
    (his,) = await candidates(bob, root)
    assert his["candidate_id"] == candidate["candidate_id"]
    his_proposal = (await preview(bob, root, his["candidate_id"]))["proposal"]
    assert (his_proposal["expected_profile_digest"], his_proposal["state_version"]) == (
        "missing", 1,
    )  # her revision is not his Profile  # fmt: skip
    applied = await bob.call("transition_profile_update",
                             **transition(his_proposal, workspace_root=str(root)))  # fmt: skip
    assert applied["status"] == "applied"
    owners = "SELECT owner, revision_no FROM router_memory_revisions ORDER BY owner"
    rows = await runtime.read(lambda c: c.execute(owners).fetchall())
    assert [tuple(r) for r in rows] == [("alice", 1), ("bob", 1)]
    after = await preview(alice, root, candidate["candidate_id"])
    assert after["reason_codes"] == ["candidate-not-proposed"]  # her own revision holds it
