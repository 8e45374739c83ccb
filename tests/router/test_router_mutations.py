"""CAS on expected_state_version, idempotent replay, conflicting key reuse, and restarts."""

from __future__ import annotations

import logging

import pytest
import trio
from router_driver import HANDLERS, Router, ctx, event_args, plan_args

from agora.errors import ToolError
from agora.runtime.actor import InternalError
from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.base import Principal, ToolCall
from agora.toolsets.router.sql import MIGRATIONS

PHASED = "1. design it\n2. build it\n3. test it"


async def test_a_replayed_plan_is_identical_and_writes_nothing(router, runtime):
    args = plan_args(PHASED, idem="plan-once")
    first = await router.call("plan_work", **args)
    commits = runtime.store.stats
    again = await router.call("plan_work", **{**args, "correlation_id": "a-retry"})
    assert again == first
    assert runtime.store.stats == commits  # a replay never reaches the writer


async def test_reusing_a_key_for_another_request_is_refused(router):
    args = plan_args(PHASED, idem="plan-key")
    await router.call("plan_work", **args)
    body = await router.refused("plan_work", **{**args, "objective": "something else"})
    assert body["code"] == "idempotency-conflict"


async def test_a_stale_expected_state_version_is_a_typed_conflict(router):
    run = (await router.plan(PHASED))["workflow_run_id"]
    body = await router.refused(
        "record_work_event", **event_args(run, "plan", {"note": "x"}, version=0)
    )
    assert body["code"] == "state-version-conflict"
    assert (body["expected_state_version"], body["current_state_version"]) == (0, 1)
    assert body["retryable"] is True
    event = await router.event(run, "plan", {"note": "x"}, version=1)
    assert event["resulting_state_version"] == 2


async def test_a_conflict_says_whether_the_run_is_new_ahead_or_behind(router):
    new = await router.refused("plan_work", **plan_args(PHASED, version=1))
    assert (new["expected_state_version"], new["current_state_version"]) == (1, 0)
    assert "does not exist yet" in new["message"]
    assert "expected_state_version 0" in new["message"]
    assert "another write" not in new["message"]
    run = (await router.plan(PHASED))["workflow_run_id"]
    ahead = await router.refused("record_work_event", **event_args(run, "plan", {}, version=5))
    assert (ahead["expected_state_version"], ahead["current_state_version"]) == (5, 1)
    assert "ahead of the run, which is at 1: send expected_state_version 1" in ahead["message"]
    assert "another write" not in ahead["message"]
    behind = await router.refused("record_work_event", **event_args(run, "plan", {}, version=0))
    assert "another write landed first" in behind["message"]


async def test_a_conflict_on_a_completed_run_says_nothing_is_left_to_write(router):
    # "another write landed first; check it still applies, then retry" sent agents back to
    # retry a write that could only answer phase-completed.
    from memory_support import completed_run

    run = await completed_run(router)
    body = await router.refused("record_work_event", **event_args(run, "work", {}, version=2))
    assert (body["code"], body["current_state_version"]) == ("state-version-conflict", 3)
    assert "the run is at 3 and completed" in body["message"]
    assert "no write is left to retry" in body["message"]
    assert "another write" not in body["message"]
    assert body["retryable"] is False  # (it was true: an agent that trusts it loops)


async def test_an_event_replay_answers_replayed_true_with_the_same_ids(router, runtime):
    run = (await router.plan(PHASED))["workflow_run_id"]
    args = event_args(run, "plan", {"note": "x"}, 1, idem="ev-1")
    first = await router.call("record_work_event", **args)
    commits = runtime.store.stats
    again = await router.call("record_work_event", **args)
    assert first["replayed"] is False
    assert again["replayed"] is True
    assert {**again, "replayed": False} == first
    assert runtime.store.stats == commits
    body = await router.refused("record_work_event", **{**args, "observation": {"note": "y"}})
    assert body["code"] == "idempotency-conflict"
    # It named the run and the version but not the tool that used the key.
    assert body["message"].startswith(
        "this idempotency key was used by record_work_event for a different request, on run"
    )


async def test_a_lost_replys_resend_at_the_next_version_is_told_how_to_replay(router):
    # The reply was lost and the agent resent the write with the version the run moved to:
    # "use a new key" alone led it to record the event twice. The refusal says the key's
    # write was applied, and at which version to resend it for its answer.
    run = (await router.plan(PHASED))["workflow_run_id"]
    args = event_args(run, "plan", {"note": "x"}, 1, idem="ev-lost")
    first = await router.call("record_work_event", **args)
    body = await router.refused("record_work_event", **{**args, "expected_state_version": 2})
    assert body["code"] == "idempotency-conflict"
    assert (
        "if this one resends that write, it was applied at expected_state_version 1"
        in (body["message"])
    )
    assert "resend it unchanged (expected_state_version 1) to replay its answer" in body["message"]
    assert await router.call("record_work_event", **args) == {**first, "replayed": True}


async def test_two_clients_racing_on_one_version_exactly_one_wins(router, runtime):
    run = (await router.plan(PHASED))["workflow_run_id"]
    outcomes: list[object] = []

    async def client(name: str) -> None:
        args = event_args(run, "plan", {"by": name}, 1)
        call = ToolCall(tool="record_work_event", args=args, principal=Principal(), runtime=runtime)
        try:
            outcomes.append(await HANDLERS["record_work_event"](call))
        except ToolError as err:
            outcomes.append(err.body["code"])

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for name in ("a", "b"):
                nursery.start_soon(client, name)
    wins = [o for o in outcomes if isinstance(o, dict)]
    assert len(wins) == 1
    assert outcomes.count("state-version-conflict") == 1
    assert wins[0]["resulting_state_version"] == 2


async def test_replays_survive_a_server_restart(nursery, tmp_path):
    path = tmp_path / "restart.db"
    args = plan_args(PHASED, idem="plan-restart")
    async with open_store(path, MIGRATIONS) as store:
        first_router = Router(Runtime(store, nursery, clock=Clock(FakeWall())))
        first = await first_router.call("plan_work", **args)
        run = first["workflow_run_id"]
        ev_args = event_args(run, "plan", {"note": "x"}, 1, idem="ev-restart")
        event = await first_router.call("record_work_event", **ev_args)
    async with open_store(path, MIGRATIONS) as store:
        router = Router(Runtime(store, nursery, clock=Clock(FakeWall())))
        commits = store.stats
        assert await router.call("plan_work", **args) == first
        assert await router.call("record_work_event", **ev_args) == {**event, "replayed": True}
        assert store.stats == commits
        body = await router.refused("record_work_event", **{**ev_args, "phase_id": "verify"})
        assert body["code"] == "idempotency-conflict"
        nxt = await router.next(run)
        assert nxt["work_item"]["status"] == "active"


async def test_runs_are_isolated_per_session(router):
    run = (await router.plan(PHASED, session="s1"))["workflow_run_id"]
    body = await router.refused("get_next_work", context=ctx("s2"), workflow_run_id=run)
    assert body["code"] == "capability-unavailable"
    assert body["required_capabilities"] == ["router-owned-work-graph"]
    other = await router.plan(PHASED, session="s2", idem="same-key")
    mine = await router.plan(PHASED, session="s1", idem="same-key")
    assert other["workflow_run_id"] != mine["workflow_run_id"]


async def test_cas_holds_across_two_servers_on_one_database(router, runtime, nursery):
    # Two runtimes on one store stand for two processes (agora serve and agora stdio) sharing
    # a database: neither sees the other's actors, so only the store can refuse the loser.
    lock = {"explicit_skill_ids": ["skill:lead"], "explicit_semantics": "only"}
    plan = await router.plan(PHASED, **lock)
    run = plan["workflow_run_id"]
    other = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall())))
    await other.next(run)  # loads the run at version 1 in the second server
    won = await router.event(run, "plan", {"by": "first"}, 1)
    assert won["resulting_state_version"] == 2
    proposal = {
        "context": ctx(), "workflow_run_id": run, "phase_id": "plan",
        "primary_skill_id": "skill:lead", "support_skill_ids": ["skill:a"],
        "scope_anchor_id": "a", "goal_revision": None, "plan_revision": 1,
        "context_fingerprint": "sha256:" + "ab" * 32, "expected_state_version": 1,
        "idempotency_key": "late", "correlation_id": "c",
    }  # fmt: skip
    if not runtime.store.guarded:
        # SQLite: the router's own CAS in the store refuses the stale writer in another
        # process; its copy is then dropped and reloaded.
        with pytest.raises(InternalError):
            await other.call("propose_support_consent", **proposal)
    # A guarded store (PostgreSQL) refuses the stale commit by the entity's version, reloads
    # and reruns the command at once: the caller sees only the typed conflict below.
    count = "SELECT COUNT(*) FROM router_proposals"
    assert (await runtime.read(lambda c: c.execute(count).fetchone()))[0] == 0
    body = await other.refused("propose_support_consent", **proposal)  # reloaded: typed now
    assert body["current_state_version"] == 2


async def test_correlation_ids_are_logged_refusals_at_info_commits_at_debug(router, caplog):
    # One INFO line per commit cost ~8% of the server's CPU under load: a commit's line is
    # DEBUG (agora serve -v), a refusal's stays INFO; both carry the correlation id.
    with caplog.at_level(logging.DEBUG, logger="agora.toolsets.router.run"):
        run = (await router.plan(PHASED))["workflow_run_id"]
        await router.refused(
            "record_work_event",
            **{**event_args(run, "ship", {"note": "x"}, version=1), "correlation_id": "c-stale"},
        )
    commits = [r for r in caplog.records if "corr-test" in r.getMessage()]
    refusals = [r for r in caplog.records if "c-stale" in r.getMessage()]
    assert [r.levelno for r in commits] == [logging.DEBUG]
    assert [r.levelno for r in refusals] == [logging.INFO]


async def test_the_first_version_is_guarded_by_the_runs_insert_not_a_claim(router, runtime):
    # A plan claims no row of router_versions (one random index page less per plan in the
    # WAL): a second creation of the same run, as another process sharing the file would
    # commit, fails on the run's own key and changes nothing.
    from agora.toolsets.router.commands import CreatePlan
    from agora.toolsets.router.planning import build_plan
    from agora.toolsets.router.run import WorkflowRun

    args = plan_args(PHASED, idem="only-once")
    run = (await router.call("plan_work", **args))["workflow_run_id"]
    claims = "SELECT COUNT(*) FROM router_versions WHERE run_id = ?"
    assert (await runtime.read(lambda c: c.execute(claims, (run,)).fetchone()))[0] == 0
    command = CreatePlan(plan=build_plan(args, [], []), session_id="s1",
                         expected_state_version=0, idempotency_key="only-once",
                         request_digest="sha256:other", correlation_id="c")  # fmt: skip
    effects = WorkflowRun(run, None).handle(command, runtime.clock.now())
    assert effects.writes
    with pytest.raises(Exception):  # noqa: B017, PT011 - the backend's integrity error
        await runtime.store.write(effects.writes)
    rows = "SELECT COUNT(*) FROM router_runs WHERE run_id = ?"
    assert (await runtime.read(lambda c: c.execute(rows, (run,)).fetchone()))[0] == 1
    event = await router.event(run, "plan", {"note": "x"}, 1)
    assert event["resulting_state_version"] == 2
    assert (await runtime.read(lambda c: c.execute(claims, (run,)).fetchone()))[0] == 1
