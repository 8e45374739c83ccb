"""What a refused workspace_root is said to be: each refusal code's own meaning.

Tester findings: a ``file://`` URI (the form MCP roots take) sent as ``workspace_root`` was
called "a relative path; send an absolute one", which the agent believed it had; and
plan_work's Memory line called every refusal "not an authorized workspace root", a missing
directory under an authorized root included (docs/router-profiles.md: "under an authorized
root but does not exist").
"""

from __future__ import annotations

import json

from memory_support import status
from test_router_guidance import texts


def routing(root):
    return {"workspace_root": str(root), "domains": [], "tags": [], "current_phase_id": None}


async def test_a_file_uri_is_named_with_the_path_to_send(router, workspace):
    uri = f"file://{workspace}"
    plan = await router.plan("Fix the typo", routing_context=routing(uri))
    assert plan["profile_warnings"] == ["workspace-root-not-absolute"]
    path = json.dumps(str(workspace))
    said = f"it is a file:// URI, not a filesystem path: send the filesystem path itself ({path})"
    first = plan.guidance.splitlines()[0]
    assert f"(workspace-root-not-absolute: {said})" in first
    assert "relative" not in first
    note = texts(await status(router, uri))[-1]
    assert f"workspace-root-not-absolute: {said}" in note


async def test_each_refusal_has_its_own_meaning_in_the_plan(router, workspace, tmp_path):
    missing = workspace / "nope"
    first = (await router.plan("Fix it", routing_context=routing(missing))).guidance.splitlines()[0]
    assert "(workspace-root-missing: it is under an authorized root but does not exist)" in first
    assert "not an authorized workspace root" not in first
    relative = (await router.plan("Fix it", routing_context=routing("ws"))).guidance.splitlines()[0]
    assert "(workspace-root-not-absolute: it is a relative path; send an absolute one)" in relative
    outside = tmp_path.parent / "elsewhere"
    other = (await router.plan("Fix it", routing_context=routing(outside))).guidance
    assert "(workspace-root-not-authorized: it is under no authorized root" in other
    assert "plan under an authorized root" in other
