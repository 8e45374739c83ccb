"""Candidate thresholds at their boundaries, workspace isolation, truncation, and read-only."""

from __future__ import annotations

import json

import pytest
from memory_support import completed_run, remember_args, tables
from router_driver import ctx
from test_router_guidance import texts

from agora.toolsets.router.candidates import Observed, mine
from agora.toolsets.router.digests import route_signature


def observed(n, days=3, failures=0, corrected=0, other_routes=0, rejected=0):
    """``n`` observations, the first ``other_routes`` of them on another skill."""
    out = []
    for i in range(n):
        doc = {
            "routing_envelope": "phased", "target_profile_class": "managed-personal",
            "side_effect_outcome": "known-failure" if i < failures else "known-success",
            "planned_skill_tree": [{
                "phase_id": "p", "primary_skill_id": "skill:b" if i < other_routes else "skill:a",
                "support_skill_ids": [], "exit_gate": "g"}],
            "phase_check_ids": {"p": ["p-done"]},
        }  # fmt: skip
        doc["route_signature_digest"] = route_signature(doc)
        feedback = ("corrected",) * (i < corrected) + ("rejected",) * (i < rejected)
        day = f"2026-11-{1 + i % days:02d}"
        out.append(Observed(f"observation:{i:032x}", f"run-{i}", doc, day,
                            f"{day}T10:00:00.000000Z", feedback))  # fmt: skip
    return out


@pytest.mark.parametrize(
    ("obs", "mode", "expected"),
    [
        pytest.param(observed(3, days=2), "reviewed", ("reviewed", "medium"), id="3-runs-2-days"),
        pytest.param(observed(3, days=1), "reviewed", None, id="one-day"),
        pytest.param(observed(2, days=2), "reviewed", None, id="two-runs"),
        pytest.param(observed(5, failures=1), "automatic", ("reviewed", "medium"),
                     id="completion-0.80"),
        pytest.param(observed(5, failures=2), "reviewed", None, id="completion-0.60"),
        pytest.param(observed(5, corrected=1), "reviewed", ("reviewed", "medium"),
                     id="corrections-0.20"),
        pytest.param(observed(5, corrected=2), "reviewed", None, id="corrections-0.40"),
        pytest.param(observed(4, other_routes=1), "reviewed", ("reviewed", "medium"),
                     id="consistency-0.75"),
        pytest.param(observed(5, other_routes=2), "reviewed", None, id="consistency-0.60"),
        pytest.param(observed(3, rejected=1), "reviewed", None, id="hard-violation"),
        pytest.param(observed(5), "automatic", ("automatic", "high"), id="automatic"),
        pytest.param(observed(5), "reviewed", ("reviewed", "high"), id="automatic-not-allowed"),
        pytest.param(observed(5, days=2), "automatic", ("reviewed", "medium"), id="auto-2-days"),
        pytest.param(observed(10, failures=1, corrected=1), "automatic", ("automatic", "high"),
                     id="automatic-0.90-0.10"),
        pytest.param(observed(20, other_routes=3), "automatic", ("automatic", "high"),
                     id="automatic-consistency-0.85"),
        pytest.param(observed(20, other_routes=4), "automatic", ("reviewed", "medium"),
                     id="automatic-consistency-0.80"),
    ],
)  # fmt: skip
def test_thresholds_at_their_boundaries(obs, mode, expected):
    found = mine(obs, "personal", mode, "sha256:" + "0" * 64)
    if expected is None:
        assert found == []
        return
    (candidate,) = found
    assert (candidate["recommendation_mode"], candidate["confidence"]) == expected
    assert candidate["status"] == "proposed"
    assert mine(obs, "personal", mode, "sha256:" + "0" * 64) == found  # deterministic


@pytest.fixture
def workspaces(tmp_path, options):
    policy = tmp_path / "memory-policy.json"
    policy.write_text(json.dumps({
        "format": "agora-router-memory-policy/1", "ceiling": "reviewed",
        "allowed_targets": ["managed-personal", "user-personal"],
    }))  # fmt: skip
    options["router"]["memory_policy"] = str(policy)
    options["router"]["workspace_roots"] = [str(tmp_path)]
    roots = []
    for name in ("ws1", "ws2"):
        root = tmp_path / name
        (root / ".codex").mkdir(parents=True)
        (root / ".codex" / "workflow-skill-router-memory.json").write_text(json.dumps(
            {"format": "agora-router-memory-request/1", "requested_mode": "reviewed"}))  # fmt: skip
        roots.append(str(root))
    return roots


async def test_candidates_are_listed_per_workspace_bounded_and_read_only(
    router, runtime, workspaces
):
    ws1, ws2 = workspaces

    async def listing(root, limit=10):
        return await router.call("list_workflow_candidates", context=ctx(), workspace_root=root,
                                 limit=limit, status=None)  # fmt: skip

    assert await listing(ws1) == {"authority_mode": "router-local", "candidates": [],
                                  "truncated": False}  # fmt: skip
    assert await tables(runtime) == set()  # listing created no store
    for day in range(2):
        for target in ("managed-personal", "user-personal"):
            for _ in range(2 if day == 0 else 1):
                run = await completed_run(router, skills=["skill:lead"])
                args = remember_args(run, ws1, target_profile_class=target)
                assert (await router.call("remember_workflow", **args))["status"] == "recorded"
        runtime.clock.wall_source.advance(86400)
    first = await listing(ws1)
    assert len(first["candidates"]) == 2
    assert {c["target_profile_class"] for c in first["candidates"]} == {
        "managed-personal", "user-personal"
    }  # fmt: skip
    assert all(c["metrics"]["distinct_runs"] == 3 for c in first["candidates"])
    assert all(c["scope"] == "workspace" for c in first["candidates"])
    assert await listing(ws2) == {"authority_mode": "router-local", "candidates": [],
                                  "truncated": False}  # fmt: skip
    cut = await listing(ws1, limit=1)
    assert cut["truncated"] is True
    assert cut["candidates"] == first["candidates"][:1]
    commits = runtime.store.stats
    assert await listing(ws1) == first
    assert runtime.store.stats == commits


def test_patterns_split_by_routing_matchers():
    web = observed(3, days=2)
    db = [
        Observed(o.observation_id + "-db", o.workflow_run_id + "-db",
                 {**o.document, "domains": ["db"], "tags": ["migration"]}, o.recorded_day,
                 o.recorded_at, o.feedback)
        for o in observed(3, days=2)
    ]  # fmt: skip
    found = mine(web + db, "personal", "reviewed", "sha256:" + "0" * 64)
    assert len(found) == 2
    codes = sorted(tuple(c["reason_codes"]) for c in found)
    assert codes == [(), ("no-matchable-routing-context",)]


async def test_an_empty_list_says_why(router, runtime, workspaces):
    # Tester finding: after runs on builtin routes the list answered [] and nothing else,
    # though such runs are never a candidate (docs/router.md, "Memory").
    ws1, _ws2 = workspaces

    async def why(status=None):
        listed = await router.call("list_workflow_candidates", context=ctx(), workspace_root=ws1,
                                   limit=10, status=status)  # fmt: skip
        assert listed["candidates"] == []
        return texts(listed)[-1]

    need = (
        "A candidate needs 3 remembered runs of one route (the same envelope, target, domains"
        " and tags) on 2 days, completion >= 0.80, corrections <= 0.20, consistency >= 0.75 and"
        " no rejected feedback."
    )
    assert await why() == (
        "No candidates: no workflow of this workspace is remembered yet (remember_workflow);"
        f" a{need[1:]}"
    )
    for _day in range(2):
        for _ in range(2):
            run = await completed_run(router)  # no skill: a builtin route
            assert (await router.call("remember_workflow", **remember_args(run, ws1)))[
                "status"
            ] == "recorded"
        runtime.clock.wall_source.advance(86400)
    assert await why() == (
        "No candidates from the 4 remembered runs of this workspace, by pattern: 4 runs"
        " (single, managed-personal, domains [], tags []): their most common route is one no"
        " Profile rule can plan, which is never a candidate (a builtin route, with no skill in"
        " planned_skill_tree: the builtin default plans it already; or skill or check ids a"
        f" Profile cannot hold). {need}"
    )
    for _day in range(2):
        for _ in range(2):  # another target: a pattern of its own
            run = await completed_run(router, skills=["skill:lead"])
            args = remember_args(run, ws1, target_profile_class="user-personal")
            await router.call("remember_workflow", **args)
        runtime.clock.wall_source.advance(86400)
    assert await why("approved") == (
        "No candidate has status approved; send status null to list every one."
    )


async def test_an_empty_list_says_memory_is_off(router):
    listed = await router.call("list_workflow_candidates", context=ctx(), workspace_root=None,
                               limit=10, status=None)  # fmt: skip
    assert texts(listed)[-1] == (
        "No candidates: the Memory policy's effective mode is disabled, and candidates are"
        " derived only in reviewed or automatic mode (get_memory_status says why)."
    )
