"""The run index: a new run skips its load, a stored run is always loaded (never a false "new").

The index is a Bloom filter per store (`agora.toolsets.router.index`). Its one promise is no
false negatives: once complete it must name every stored run, those found by the scan and
those this process planned since, or a replay would meet an empty run and try to insert the
run again.
"""

from __future__ import annotations

import pytest
from router_driver import Router, plan_args

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.router.index import RunIndex, index_of, index_runs
from agora.toolsets.router.run import WorkflowRun, kind_of
from agora.toolsets.router.sql import MIGRATIONS

PHASED = "1. design it\n2. build it\n3. test it"
#: Marks the tests of the index itself: a guarded store (PostgreSQL) has none.
sqlite_only = pytest.mark.sqlite_only(
    "the run index serves unguarded stores; a guarded one never creates without a load"
)


def test_an_incomplete_index_knows_nothing_is_absent():
    index = RunIndex()
    assert not index.absent("run-new")  # until the scan merged: every run is loaded
    index.merge(bytes(len(index._bits)))
    assert index.absent("run-new")
    index.add("run-new")
    assert not index.absent("run-new")


@sqlite_only
async def test_a_new_run_is_created_without_a_load_once_the_index_is_complete(router, runtime):
    kind = kind_of(runtime)
    now = runtime.clock.now()
    assert kind.create("run-unseen", now) is None  # the scan has not run: load as before
    await index_runs(runtime)
    fresh = kind.create("run-unseen", now)
    assert isinstance(fresh, WorkflowRun)
    assert fresh.state is None
    plan = await router.plan(PHASED)
    assert kind.create(plan["workflow_run_id"], now) is None  # planned here: may be stored
    assert (await router.next(plan["workflow_run_id"]))["work_item"]["phase_id"] == "plan"


@sqlite_only
async def test_the_scan_finds_the_runs_stored_before_and_replays_stay_replays(nursery, tmp_path):
    path = tmp_path / "index.db"
    args = plan_args(PHASED, idem="plan-before")
    async with open_store(path, MIGRATIONS) as store:
        first = await Router(Runtime(store, nursery, clock=Clock(FakeWall()))).call(
            "plan_work", **args
        )
    async with open_store(path, MIGRATIONS) as store:
        runtime = Runtime(store, nursery, clock=Clock(FakeWall()))
        await index_runs(runtime)
        assert index_of(store).complete
        run = first["workflow_run_id"]
        assert kind_of(runtime).create(run, runtime.clock.now()) is None  # stored: load it
        commits = store.stats
        again = await Router(runtime).call("plan_work", **{**args, "correlation_id": "retry"})
        assert again == first  # a replay, not a second insert of the same run
        assert store.stats == commits


@sqlite_only
async def test_runtimes_on_one_store_share_its_index(runtime, nursery):
    other = Runtime(runtime.store, nursery, clock=Clock(FakeWall()))
    assert kind_of(other) is kind_of(runtime)
    await index_runs(runtime)
    plan = await Router(other).plan(PHASED)
    assert kind_of(runtime).create(plan["workflow_run_id"], runtime.clock.now()) is None


@sqlite_only
@pytest.mark.parametrize("runs", [200])
async def test_every_planned_run_stays_known_across_a_restart(nursery, tmp_path, runs):
    path = tmp_path / "many.db"
    async with open_store(path, MIGRATIONS) as store:
        runtime = Runtime(store, nursery, clock=Clock(FakeWall()))
        await index_runs(runtime)  # complete from the start: plans are added as they come
        router = Router(runtime)
        ids = [(await router.plan(PHASED, idem=f"p{n}"))["workflow_run_id"] for n in range(runs)]
        assert not any(index_of(store).absent(i) for i in ids)
    async with open_store(path, MIGRATIONS) as store:
        runtime = Runtime(store, nursery, clock=Clock(FakeWall()))
        await index_runs(runtime)
        assert not any(index_of(store).absent(i) for i in ids)
        assert index_of(store).absent("run-" + "0" * 32)


async def test_a_guarded_store_always_loads(runtime):
    kind = kind_of(runtime)
    await index_runs(runtime)
    created = kind.create("run-unseen", runtime.clock.now())
    assert (created is None) == runtime.store.guarded
