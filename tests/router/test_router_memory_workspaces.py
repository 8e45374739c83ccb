"""A run is remembered in the workspace it was planned in, and in no other.

Tester finding: ``remember_workflow`` recorded a run under any authorized ``workspace_root``,
since the run did not keep the workspace it was planned in: a run of one workspace could
teach another's candidates. A run planned under a root is now remembered under that root
only (or another spelling of it); one planned under none, or before runs kept their root, is
remembered wherever it is sent, as before.
"""

from __future__ import annotations

import pytest
from memory_support import completed_run, memory_workspace, remember_args, request_mode
from router_driver import Router

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime


@pytest.fixture
def roots(tmp_path, options):
    """Two authorized workspaces, each requesting ``reviewed``."""
    first = memory_workspace(tmp_path, options)
    second = tmp_path / "other"
    request_mode(second, "reviewed")
    return first, second


async def remember(router, run, root):
    return await router.call("remember_workflow", **remember_args(run, root))


async def test_a_run_is_remembered_only_in_the_workspace_it_was_planned_in(router, roots):
    first, second = roots
    run = await completed_run(router, root=first)
    refused = await router.refused("remember_workflow", **remember_args(run, second))
    assert refused["code"] == "workflow-context-mismatch"
    assert refused["message"] == (
        f'run {run} was planned in the workspace_root "{first}" (plan_work\'s'
        " routing_context.workspace_root), and a run is remembered only in the workspace it was"
        " planned in: send that workspace_root"
    )
    personal = await router.refused("remember_workflow",
                                    **remember_args(run, None, workspace_root=None))  # fmt: skip
    assert personal["code"] == "workflow-context-mismatch"
    assert (await remember(router, run, f"{first}/."))["status"] == "recorded"  # the same one
    assert (await remember(router, run, first))["status"] == "recorded"


async def test_a_run_planned_under_no_workspace_root_is_remembered_anywhere(router, roots):
    first, second = roots
    run = await completed_run(router)
    assert (await remember(router, run, first))["status"] == "recorded"
    assert (await remember(router, run, second))["status"] == "recorded"


async def test_a_run_planned_before_runs_kept_their_root_is_remembered_anywhere(
    router, runtime, roots, nursery, options
):
    first, second = roots
    run = await completed_run(router, root=first)
    # What a server before this change stored: the domains and tags, no workspace root.
    routing = '{"domains":[],"tags":[]}'
    await runtime.write([("UPDATE router_runs SET routing_json = ? WHERE run_id = ?",
                          (routing, run))])  # fmt: skip
    # A server started on that store (its run actor loads the run from the file).
    later = Router(Runtime(runtime.store, nursery, clock=Clock(FakeWall()), options=options))
    assert (await remember(later, run, second))["status"] == "recorded"
