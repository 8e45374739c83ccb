"""The answer that completes a run says remember_workflow records it, when Memory is on.

Tester finding: with Memory effective (reviewed, capture on), an agent that followed only
the replies drove a run to completion and was told to plan further work as a new run:
nothing named remember_workflow, so no run was ever remembered and no candidate derived.
"""

from __future__ import annotations

import json

from memory_support import SINGLE, remember_args
from test_router_guidance import texts
from test_router_profiles import Roots

from agora.toolsets.router.guidance import COMPLETED


def routing(root):
    return {"workspace_root": None if root is None else str(root), "domains": [], "tags": [],
            "current_phase_id": None}  # fmt: skip


async def complete(router, root):
    """The completing gate's answer and get_next_work's after it, for a run under ``root``."""
    run = (await router.plan(SINGLE, routing_context=routing(root)))["workflow_run_id"]
    ev = await router.event(run, "work", {"check_id": "work-done", "outcome": "passed"}, 1)
    gate = await router.gate(run, "work", ev["event_ids"], 2)
    return run, texts(gate)[-1], texts(await router.next(run))[-1]


def says_remember(note, run, root):
    line = (
        f"Memory is on for this run's scope: remember_workflow with workflow_run_id {run},"
        f" workspace_root {json.dumps(root)}, target_profile_class managed-personal"
    )
    assert line in note, note
    assert note.endswith(COMPLETED)
    assert note.count("remember_workflow") == 1


async def test_a_completed_run_names_remember_workflow_where_memory_captures(router, workspace):
    run, gate, then = await complete(router, workspace)
    says_remember(gate, run, str(workspace))
    says_remember(then, run, str(workspace))
    run, gate, then = await complete(router, None)  # the personal scope: the ceiling, reviewed
    says_remember(gate, run, None)
    says_remember(then, run, None)


async def test_a_root_only_the_clients_roots_authorize_is_asked_for(router, workspace, options):
    options["router"]["workspace_roots"] = []
    router.client = Roots(workspace)
    run, gate, then = await complete(router, workspace)
    says_remember(gate, run, str(workspace))
    says_remember(then, run, str(workspace))


async def test_no_line_where_memory_captures_nothing(router, workspace, tmp_path, options):
    bare = tmp_path / "bare"  # authorized, but requests no Memory mode
    bare.mkdir()
    _run, gate, then = await complete(router, bare)
    assert gate == then == COMPLETED
    del options["router"]["memory_policy"]
    _run, gate, then = await complete(router, workspace)
    assert gate == then == COMPLETED


def test_the_personal_scope_is_not_offered_a_workspace_target():
    from agora.toolsets.router.remembering import remember_line

    targets = ("managed-personal", "managed-workspace-local")
    assert "class managed-personal, and" in remember_line("run-1", None, targets)
    both = "class managed-personal or managed-workspace-local, and"
    assert both in remember_line("run-1", "/w", targets)


async def test_a_remembered_run_is_not_asked_for_again(router, workspace):
    """Tester finding (B): get_next_work of a run already remembered still said
    "remember_workflow ... records it for learning", sending a polling agent on a call that
    writes nothing (and that may look as if the first one failed)."""
    for root in (workspace, None):
        run, _gate, _then = await complete(router, root)
        args = remember_args(run, root, workspace_root=None if root is None else str(root))
        recorded = await router.call("remember_workflow", **args)
        assert recorded["status"] == "recorded"
        then = texts(await router.next(run))[-1]
        assert "remember_workflow with workflow_run_id" not in then
        assert f"Memory: this run is remembered (observation {recorded['observation_id']}" in then
        assert "remember_workflow need not be called again" in then
        assert then.endswith(COMPLETED)
