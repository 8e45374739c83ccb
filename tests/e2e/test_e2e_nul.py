"""A NUL character (U+0000) in a tool's arguments is refused by name on every backend.

PostgreSQL text cannot hold NUL, so a router status read whose run id carried one answered
an internal error there while SQLite answered "unknown run": the core now refuses NUL in any
argument string or key before a toolset sees the call, the same way on both stores.
"""

from __future__ import annotations

import json

import trio
from e2e_process import AgoraProcess

from agora.client import connect

TIMEOUT = 60
CONTEXT = {"session_id": "nul", "actor": "user:nul", "runtime_policy_snapshot_id": "pol"}


def _said(result: dict) -> str:
    text = " ".join(c.get("text", "") for c in result.get("content", []))
    return text + json.dumps(result.get("structuredContent"))


async def test_a_nul_in_any_argument_is_refused_naming_the_field(tmp_path):
    db = str(tmp_path / "nul.db")
    with AgoraProcess("--db", db, "--toolsets", "router,debate") as server:
        with trio.fail_after(TIMEOUT):
            async with connect(f"{server.url}/mcp/router") as router:
                status = {"context": CONTEXT, "goal_binding_id": None}
                refused = await router.call_tool(
                    "get_router_status", {**status, "workflow_run_id": "run\x00x"}
                )
                assert refused.get("isError"), refused
                assert "workflow_run_id" in _said(refused)
                assert "U+0000" in _said(refused)
                inner = {
                    **status,
                    "workflow_run_id": None,
                    "context": {**CONTEXT, "actor": "a\x00"},
                }
                refused = await router.call_tool("get_router_status", inner)
                assert refused.get("isError"), refused
                assert "actor" in _said(refused), refused
                fine = await router.call_tool(
                    "get_router_status", {**status, "workflow_run_id": None}
                )
                assert not fine.get("isError"), fine
            async with connect(f"{server.url}/mcp/debate") as debate:
                refused = await debate.call_tool("debate_session_open", {"label\x00": "x"})
                assert refused.get("isError"), refused
                assert "U+0000" in _said(refused), refused
        assert "Traceback" not in server.log, server.log
