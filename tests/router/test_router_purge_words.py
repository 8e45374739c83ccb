"""What the server says of a purge: one call purges every workspace's Memory.

Tester finding: remembering a recorded run again answered "To record it anew, purge the
history first (purge_workflow_memory, scope history-only)". A purge takes no workspace_root:
history-only deletes every remembered run of every workspace and of the personal scope, with
their feedback, and neither that reply, the purge tool's description nor docs/router.md said
so. A model correcting one run's outcome would have deleted every candidate's evidence.
"""

from __future__ import annotations

from pathlib import Path

from memory_support import completed_run, remember_args
from router_driver import CONTRACT
from test_router_guidance import texts

from agora.toolsets.router import toolset

EVERYWHERE = "of every workspace and of the personal scope"


async def test_remembering_again_points_to_feedback_not_to_a_purge(router, workspace):
    run = await completed_run(router, root=workspace)
    first = await router.call("remember_workflow", **remember_args(run, workspace))
    again = remember_args(run, workspace, side_effect_outcome="known-failure")
    note = texts(await router.call("remember_workflow", **again))[-1]
    assert note.startswith("Already recorded")
    assert f"send record_route_feedback on observation {first['observation_id']}" in note
    assert "To record it anew, purge" not in note
    assert f"history-only deletes the remembered runs (and their feedback) {EVERYWHERE}" in note


def test_the_purge_tool_says_it_covers_every_workspace():
    (tool,) = [t for t in toolset().tools if t["name"] == "purge_workflow_memory"]
    contract = CONTRACT.tools["purge_workflow_memory"].description
    assert contract in tool["description"]
    assert "every workspace's and the personal scope's" in tool["description"]
    assert tool["description"].endswith("send record_route_feedback instead.")
    scope = tool["inputSchema"]["properties"]["scope"]["description"]
    assert scope.startswith("What to delete, in every workspace's Memory and the personal")


def test_the_docs_say_a_purge_covers_every_workspace():
    doc = " ".join((Path(__file__).parents[2] / "docs" / "router.md").read_text().split())
    assert "purge `history-only` first" not in doc
    assert "a purge names no workspace" in doc


async def test_every_purge_a_text_suggests_says_it_covers_every_workspace(router, workspace):
    from router_driver import ctx

    from agora.toolsets.router import memory_notes as notes

    stale = await router.call("purge_workflow_memory", context=ctx(), scope="history-only",
                              confirmed=True, include_managed_profiles=False,
                              expected_summary_digest="sha256:" + "0" * 64,
                              idempotency_key="p-stale", correlation_id="c")  # fmt: skip
    assert stale["reason_codes"] == ["stale-summary-digest"]
    assert "A purge names no workspace" in texts(stale)[-1]
    suppressed = notes.preview_blocked(["candidate-suppressed"], "managed-personal", ())
    assert "lifts every suppression, of every workspace" in str(suppressed)
    lapsed = {"candidate_id": "c", "status": "approved", "target_profile_class": "managed-personal"}
    assert "every managed Profile, every workspace's" in notes.evidence_lapsed(lapsed, "x")
