"""The Memory tools served so far: status, remember, feedback, purge, on a real store."""

from __future__ import annotations

import json

import pytest
from memory_support import SINGLE, completed_run, observe_policy, remember_args, status, tables
from router_driver import ctx, key


@pytest.fixture
def policy(tmp_path, options):
    """Personal ceiling ``reviewed``; an authorized workspace requesting ``observe``."""
    return observe_policy(tmp_path, options)


async def test_status_and_ineligible_workflows_create_nothing(router, runtime, policy):
    first = await status(router, policy)
    assert first["effective_mode"] == "observe"
    assert first["capture_enabled"] is True
    assert first["memory_store_exists"] is False
    assert first["eligible_workflow_count"] == 0
    open_run = (await router.plan(SINGLE))["workflow_run_id"]
    cases = [
        (remember_args(open_run, policy), ["workflow-not-completed", "required-gate-not-passed"]),
        (remember_args("run-missing", policy), ["workflow-run-not-found"]),
    ]
    done = await completed_run(router)
    cases += [
        (remember_args(done, policy, one_shot="no-memory"), ["explicit-no-memory"]),
        (remember_args(done, policy, risk_class="r3"), ["risk-class-excluded"]),
        (remember_args(done, policy, side_effect_outcome="unknown"),
         ["unknown-side-effect-outcome"]),
        (remember_args(done, policy, target_profile_class="workspace-file"),
         ["profile-target-not-allowed"]),
    ]  # fmt: skip
    for args, codes in cases:
        answer = await router.call("remember_workflow", **args)
        assert (answer["status"], answer["reason_codes"]) == ("not-recorded", codes)
        assert answer["observation_id"] is None
    assert await tables(runtime) == set()
    assert (await status(router, policy))["history_summary_digest"] == first[
        "history_summary_digest"
    ]


async def test_memory_off_answers_memory_disabled(router, runtime, options, policy):
    del options["router"]["memory_policy"]
    done = await completed_run(router)
    answer = await router.call("remember_workflow", **remember_args(done, policy))
    assert answer["status"] == "memory-disabled"
    assert "personal-policy-missing" in answer["reason_codes"]
    assert await tables(runtime) == set()


async def test_remember_feedback_and_every_purge_scope(router, runtime, policy):
    done = await completed_run(router)
    args = remember_args(done, policy, idempotency_key="remember-1")
    recorded = await router.call("remember_workflow", **args)
    assert recorded["status"] == "recorded"
    assert await router.call("remember_workflow", **args) == {**recorded, "replayed": True}
    obs = recorded["observation_id"]
    stored = await runtime.read(lambda c: c.execute(
        "SELECT observation_json FROM router_memory_observations").fetchone()[0])  # fmt: skip
    assert SINGLE not in stored
    assert str(policy) not in stored
    assert json.loads(stored)["domains"] == []  # the routing identifiers are kept
    st = await status(router, policy)
    assert st["memory_store_exists"] is True
    assert st["eligible_workflow_count"] == 1

    def feedback(**over):
        base = {"context": ctx(), "workflow_run_id": done, "observation_id": obs,
                "workspace_root": str(policy), "feedback_type": "accepted",
                "reason_code": "user-accepted", "correction_dimensions": [],
                "original_route_digest": None, "corrected_route_digest": None,
                "idempotency_key": key("fb"), "correlation_id": "c"}  # fmt: skip
        return {**base, **over}

    assert (await router.call("record_route_feedback", **feedback()))["status"] == "recorded"
    unbound = await router.refused("record_route_feedback", **feedback(feedback_type="corrected"))
    assert unbound["code"] == "correction-unbound"
    other = "sha256:" + "1" * 64
    correction = {"feedback_type": "corrected", "correction_dimensions": ["primary-skill"]}
    routes = {"original_route_digest": other, "corrected_route_digest": "sha256:" + "2" * 64}
    wrong = await router.refused("record_route_feedback", **feedback(**routes, **correction))
    assert wrong["code"] == "workflow-context-mismatch"
    signature = recorded["route_signature_digest"]
    fixed = await router.call("record_route_feedback", **feedback(
        original_route_digest=signature, corrected_route_digest=other, **correction))  # fmt: skip
    assert fixed["feedback_id"].startswith("feedback:")
    nowhere = "observation:" + "0" * 32
    missing = await router.refused("record_route_feedback", **feedback(observation_id=nowhere))
    assert missing["code"] == "observation-not-found"
    assert "send the observation_id that remember_workflow returned" in missing["message"]
    assert f"route_signature_digest, {signature} (remember_workflow's" in wrong["message"]

    async def purge(scope, digest=None, **over):
        current = digest or (await status(router, policy))["history_summary_digest"]
        return await router.call("purge_workflow_memory", context=ctx(), scope=scope,
                                 confirmed=True, expected_summary_digest=current,
                                 include_managed_profiles=False, idempotency_key=key("purge"),
                                 correlation_id="c", **over)  # fmt: skip

    blocked = await purge("history-only", digest="sha256:" + "9" * 64)
    assert (blocked["status"], blocked["reason_codes"]) == ("blocked", ["stale-summary-digest"])
    candidates_only = await purge("candidates-only")
    assert candidates_only["status"] == "purged"
    assert candidates_only["deleted_observations"] == 0
    analytics = await purge("analytics-only")
    assert (analytics["deleted_feedback"], analytics["deleted_observations"]) == (2, 0)
    counts = "SELECT (SELECT COUNT(*) FROM router_memory_observations),"
    counts += " (SELECT COUNT(*) FROM router_memory_feedback)"
    assert tuple(await runtime.read(lambda c: c.execute(counts).fetchone())) == (1, 0)
    assert (
        analytics["summary_digest_after"]
        == (await status(router, policy))["history_summary_digest"]
    )
    history = await purge("history-only")
    assert history["deleted_observations"] == 1
    assert tuple(await runtime.read(lambda c: c.execute(counts).fetchone())) == (0, 0)
    everything = await purge("all-memory-data")
    assert everything["deleted_command_receipts"] == 6  # remember, 2 feedback, 3 purges
    assert (await status(router, policy))["eligible_workflow_count"] == 0


async def test_a_changed_correlation_identity_is_not_the_same_memory_replay(router, policy):
    # The contract of every Memory mutation: "A changed identity is not the same replay."
    # A remember under the same key and a new correlation_id was answered as a replay.
    done = await completed_run(router)
    args = remember_args(done, policy, idempotency_key="remember-c", correlation_id="corr-1")
    recorded = await router.call("remember_workflow", **args)
    assert await router.call("remember_workflow", **args) == {**recorded, "replayed": True}
    body = await router.refused("remember_workflow", **{**args, "correlation_id": "corr-2"})
    assert body["code"] == "idempotency-conflict"
    assert body["message"] == (
        "this idempotency key was used by remember_workflow for a different request; use a new"
        " key for a new write (to replay that remember_workflow answer, resend it unchanged,"
        " correlation_id included: it is part of the request)"
    )


async def test_a_memory_key_another_tool_used_names_that_tool(router, policy):
    # The refusal named no tool and said to resend unchanged to replay: no replay is
    # possible through a different tool.
    done = await completed_run(router)
    recorded = await router.call("remember_workflow",
                                 **remember_args(done, policy, idempotency_key="mk"))  # fmt: skip
    current = (await status(router, policy))["history_summary_digest"]
    purge = {"context": ctx(), "scope": "analytics-only", "confirmed": True,
             "expected_summary_digest": current, "include_managed_profiles": False}  # fmt: skip
    feedback = {"context": ctx(), "workspace_root": str(policy), "observation_id":
                recorded["observation_id"], "workflow_run_id": done, "feedback_type": "accepted",
                "reason_code": None, "correction_dimensions": [], "original_route_digest": None,
                "corrected_route_digest": None}  # fmt: skip
    for tool, args in (("purge_workflow_memory", purge), ("record_route_feedback", feedback)):
        body = await router.refused(tool, idempotency_key="mk", correlation_id="c", **args)
        assert body["code"] == "idempotency-conflict"
        assert body["message"] == (
            "this idempotency key was used by remember_workflow for a different request: each"
            f" Memory write needs its own key, so send this {tool} with a new key"
        )


async def test_a_memory_receipt_stored_without_the_correlation_still_replays(
    router, runtime, policy, nursery, options
):
    # Receipts written before the correlation_id counted hold the digest without it.
    from router_driver import Router

    from agora.runtime.clock import Clock, FakeWall
    from agora.runtime.registry import Runtime
    from agora.toolsets.router.digests import request_digest

    done = await completed_run(router)
    args = remember_args(done, policy, idempotency_key="remember-old", correlation_id="corr-1")
    recorded = await router.call("remember_workflow", **args)
    old = request_digest("remember_workflow", args)
    await runtime.write(
        [("UPDATE router_memory_receipts SET request_digest = ? WHERE idempotency_key = ?",
          (old, "remember-old"))]
    )  # fmt: skip
    # A server started on that store (its Memory actor loads the receipt from the file).
    later = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall()), options=options))
    assert await later.call("remember_workflow", **args) == {**recorded, "replayed": True}


async def test_purge_works_after_capture_is_disabled(router, options, policy):
    done = await completed_run(router)
    await router.call("remember_workflow", **remember_args(done, policy))
    del options["router"]["memory_policy"]
    st = await status(router, policy)
    assert st["capture_enabled"] is False
    args = {"context": ctx(), "scope": "history-only", "confirmed": True,
            "expected_summary_digest": st["history_summary_digest"],
            "include_managed_profiles": True, "idempotency_key": "purge-off",
            "correlation_id": "c"}  # fmt: skip
    purged = await router.call("purge_workflow_memory", **args)
    assert purged["deleted_observations"] == 1
    assert purged["reason_codes"] == []
    # include_managed_profiles does nothing on history-only, and nothing said so.
    from test_router_guidance import texts

    assert texts(purged)[-1].startswith("include_managed_profiles had no effect: it adds the")
    assert await router.call("purge_workflow_memory", **args) == {**purged, "replayed": True}


async def test_an_observation_keeps_the_routing_identifiers_as_matchers(router, runtime, policy):
    routing = {"workspace_root": None, "domains": ["web"], "tags": ["feature", "api"],
               "current_phase_id": None}  # fmt: skip
    run = (await router.plan(SINGLE, routing_context=routing))["workflow_run_id"]
    ev = await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"}, 1)
    await router.gate(run, "work", ev["event_ids"], 2)
    assert (await router.call("remember_workflow", **remember_args(run, policy)))["status"] == (
        "recorded"
    )
    stored = await runtime.read(lambda c: c.execute(
        "SELECT observation_json FROM router_memory_observations").fetchone()[0])  # fmt: skip
    kept = json.loads(stored)
    assert (kept["domains"], kept["tags"]) == (["web"], ["api", "feature"])


async def test_the_retention_sweep_drops_old_and_surplus_observations(
    router, runtime, policy, monkeypatch
):
    from agora.toolsets.router import memory_tools

    monkeypatch.setattr(memory_tools, "RETENTION_MAX", 2)
    runs = [await completed_run(router) for _ in range(4)]
    for n, run in enumerate(runs):
        await router.call("remember_workflow", **remember_args(run, policy))
        runtime.clock.wall_source.advance(30 * 86400 if n == 0 else 3600)  # the first is oldest
    before = (await status(router, policy))["history_summary_digest"]
    runtime.clock.wall_source.advance(61 * 86400)  # the first is now over 90 days old
    await memory_tools.sweep(runtime, "")
    count = "SELECT workflow_run_id FROM router_memory_observations ORDER BY recorded_at"
    left = [r[0] for r in await runtime.read(lambda c: c.execute(count).fetchall())]
    assert left == runs[2:]  # the oldest by age, the next as surplus over 2
    after = await status(router, policy)
    assert after["eligible_workflow_count"] == 2
    assert after["history_summary_digest"] != before
    commits = runtime.store.stats
    await memory_tools.sweep(runtime, "")  # nothing more to drop: no write
    assert runtime.store.stats == commits
    personal = await completed_run(router)  # another scope keeps its own newest 2
    args = remember_args(personal, policy, workspace_root=None)
    assert (await router.call("remember_workflow", **args))["status"] == "recorded"
    await memory_tools.sweep(runtime, "")
    assert len(await runtime.read(lambda c: c.execute(count).fetchall())) == 3


def test_the_toolset_runs_the_retention_sweep():
    from agora.toolsets.router import toolset
    from agora.toolsets.router.index import index_runs

    names = [task.__name__ for task in toolset().background]
    assert names == ["periodic(upkeep)", "index_runs"]
    assert toolset().background[1] is index_runs


async def test_remembering_a_recorded_run_again_answers_the_stored_observation(
    router, runtime, policy, nursery, options
):
    # A second remember_workflow of a recorded run (a new key, other outcome and risk) wrote
    # nothing but answered "recorded" with the digest of an observation never stored.
    from router_driver import Router
    from test_router_guidance import texts

    from agora.runtime.clock import Clock, FakeWall
    from agora.runtime.registry import Runtime

    done = await completed_run(router)
    first = await router.call("remember_workflow", **remember_args(done, policy))
    summary = (await status(router, policy))["history_summary_digest"]
    again = remember_args(done, policy, risk_class="r2", side_effect_outcome="none")
    second = await router.call("remember_workflow", **again)
    assert second == first
    assert texts(second)[-1].startswith(f"Already recorded: run {done}'s observation was stored")
    assert "this call wrote nothing" in texts(second)[-1]
    assert (await status(router, policy))["history_summary_digest"] == summary
    stored = await runtime.read(lambda c: c.execute(
        "SELECT observation_json FROM router_memory_observations").fetchall())  # fmt: skip
    assert [json.loads(s[0])["risk_class"] for s in stored] == ["r0"]
    # A server started on that store answers the same (the observation loaded from the file).
    later = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall()), options=options))
    assert await later.call("remember_workflow", **{**again, "idempotency_key": "k-3"}) == first
