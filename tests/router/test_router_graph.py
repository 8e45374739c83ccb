"""Work-graph rules: next work, events, gates, and corrupt rows answered with an internal error."""

from __future__ import annotations

import logging

import pytest
from router_driver import Router, ctx, event_args, gate_args

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime

PHASED = "1. design it\n2. build it\n3. test it"


async def test_next_work_respects_dependencies_and_never_returns_finished_items(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    first = await router.next(run)
    assert first["work_item"]["phase_id"] == "plan"
    assert first["work_item"]["status"] == "ready"
    assert first["work_item"]["dependency_ids"] == []
    body = await router.refused("record_work_event", **event_args(run, "implement", {}, 1))
    assert body["code"] == "phase-not-ready"
    ev = await router.event(run, "plan", {"check_id": "plan-ready", "outcome": "passed"}, 1)
    assert ev["host_transition_authorized"] is False
    assert ev["evidence_class"] == "user-or-agent-reported-local"
    await router.gate(run, "plan", ev["event_ids"], 2)
    second = await router.next(run)
    assert second["work_item"]["phase_id"] == "implement"
    assert second["work_item"]["dependency_ids"] == [first["work_item"]["work_item_id"]]
    body = await router.refused("record_work_event", **event_args(run, "plan", {}, 3))
    assert body["code"] == "phase-completed"


async def test_a_gate_fails_until_every_check_has_passing_evidence(router):
    run = (await router.plan("Fix the typo"))["workflow_run_id"]
    failed = await router.event(run, "work", {"check_id": "work-done", "outcome": "failed"}, 1)
    gate = await router.gate(run, "work", failed["event_ids"], 2)
    assert gate["passed"] is False
    assert gate["failures"] == ["work-done"]
    assert gate["mandatory_failures"] == ["work-done"]
    assert gate["status"] == "failed"
    assert (await router.next(run))["work_item"]["status"] == "active"
    ok = await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"}, 3)
    refs = failed["event_ids"] + ok["event_ids"]
    gate = await router.gate(run, "work", refs, 4)
    assert gate["passed"] is True
    assert gate["resulting_state_version"] == 5
    assert (await router.next(run))["status"] == "completed"


async def test_gate_inputs_are_checked_before_anything_changes(router):
    run = (await router.plan("Fix the typo"))["workflow_run_id"]
    ev = await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"}, 1)
    refs = ev["event_ids"]
    zero = "sha256:" + "0" * 64
    wrong = await router.refused("evaluate_gate", **gate_args(run, "work", refs, 2, digest=zero))
    assert wrong["code"] == "evidence-digest-mismatch"
    stale = await router.refused("evaluate_gate", **gate_args(run, "work", refs, 2,
                                                              plan_revision=7))  # fmt: skip
    assert stale["code"] == "stale-plan-revision"
    ghost = await router.refused("evaluate_gate", **gate_args(run, "work", ["sha256:ff"], 2))
    assert ghost["code"] == "unknown-evidence-ref"
    unknown = await router.refused("record_work_event",
                                   **event_args(run, "work", {"check_id": "nope",
                                                              "outcome": "passed"}, 2))  # fmt: skip
    assert unknown["code"] == "unknown-check-id"
    assert (await router.gate(run, "work", refs, 2))["passed"] is True


CORRUPTIONS = [
    pytest.param("UPDATE router_work_items SET dependency_json = '[\"ghost\"]' WHERE seq = 2",
                 id="dangling-dependency"),
    pytest.param("UPDATE router_work_items SET support_json = '{oops' WHERE seq = 1",
                 id="bad-json"),
    pytest.param("UPDATE router_work_items SET status = 'teleported' WHERE seq = 1",
                 id="unknown-status"),
    pytest.param("DELETE FROM router_work_items WHERE seq = 3", id="missing-item"),
    pytest.param("UPDATE router_work_items SET dependency_json ="
                 " (SELECT '[\"' || work_item_id || '\"]' FROM router_work_items w"
                 "  WHERE w.seq = 3 AND w.run_id = router_work_items.run_id) WHERE seq = 1",
                 id="cycle"),
]  # fmt: skip


@pytest.mark.parametrize("corruption", CORRUPTIONS)
async def test_a_corrupt_graph_answers_a_sanitized_internal_error(
    router, runtime, nursery, corruption, caplog
):
    run = (await router.plan(PHASED))["workflow_run_id"]
    await runtime.write([(corruption, ())])
    fresh = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall())))  # reloads the rows
    with caplog.at_level(logging.ERROR, logger="agora.toolsets.router.run"):
        body = await fresh.refused("get_next_work", context=ctx(), workflow_run_id=run)
        again = await fresh.refused("record_work_event", **event_args(run, "plan", {}, 1))
    assert set(body) == {"ok", "code", "message", "retryable", "correlation_id", "state_changed"}
    assert body["retryable"] is False  # the rows stay corrupt
    assert body["state_changed"] is False
    assert body["code"] == again["code"] == "internal-error"
    assert body["correlation_id"] != again["correlation_id"]
    assert body["correlation_id"] in caplog.text
    # What to do: this run is lost, so plan anew, and report the id (it said neither).
    assert "plan the work as a new run (plan_work with a new idempotency_key)" in body["message"]
    assert "report this correlation_id to the server's operator" in body["message"]


async def test_the_stored_items_follow_every_event_and_gate(router, runtime, nursery):
    # Items are inserted in one statement and a passed gate's status changes in one: the
    # rows must say exactly what the run says, item by item (a reload reads only them).
    run = (await router.plan(PHASED))["workflow_run_id"]
    rows = "SELECT seq, phase_id, status, updated_at FROM router_work_items ORDER BY seq"

    async def stored() -> list[tuple[object, ...]]:
        found = await runtime.read(lambda c: c.execute(rows).fetchall())
        return [tuple(r) for r in found]

    planned = await stored()
    assert [r[:3] for r in planned] == [
        (1, "plan", "ready"), (2, "implement", "pending"), (3, "verify", "pending")
    ]  # fmt: skip
    assert len({r[3] for r in planned}) == 1
    version, checks = 1, {"plan": "plan-ready", "implement": "implementation-done",
                          "verify": "verification-passed"}  # fmt: skip
    expected = ["ready", "pending", "pending"]
    for n, phase in enumerate(checks):
        ev = await router.event(run, phase, {"check_id": checks[phase], "outcome": "passed"},
                                version)  # fmt: skip
        expected[n] = "active"
        assert [r[2] for r in await stored()] == expected
        gate = await router.gate(run, phase, ev["event_ids"], version + 1)
        version = gate["resulting_state_version"]
        expected[n] = "completed"
        if n + 1 < len(expected):
            expected[n + 1] = "ready"
        assert [r[2] for r in await stored()] == expected
    reloaded = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall())))
    assert (await reloaded.next(run))["status"] == "completed"
