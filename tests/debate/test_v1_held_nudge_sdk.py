"""The tester's nudge deadlock, replayed with the official MCP SDK over Streamable HTTP on
loopback, against a server on a real SQLite file (`test_v1_held_nudge` has the rules).

In BLIND_CLAIM, after PRO's CLAIM to CON, the conductor's debate_escalate to CON never reached
CON, and CON's own CLAIM was refused stale_read for it. One tokenless user plays every role
here (the claims are not blind to it, which the barrier does not change: it hides PRO's CLAIM
from whoever views as CON).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from agora.config import Config
from agora.server.embed import open_server

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

# The SDK's Streamable HTTP client leaves httpx2's SSE iterators for Trio's garbage-collection
# hook to close; Trio then warns. That is the client library's housekeeping, not agora's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

TIMEOUT = 30
LANE = json.dumps({"priority_lane": "P2", "priority_reason": "nudge"})


async def _call(client: Any, tool: str, **args: Any) -> Any:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result
    return result


async def test_a_nudged_blind_role_gets_its_claim_in_over_the_sdk(tmp_path):
    roles = [{"role": r} for r in ("CONDUCTOR", "PRO", "CON")]
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(Config(port=0, db=str(tmp_path / "nudge.db"))) as server,
            mcp.Client(f"{server.url}/mcp/debate", read_timeout_seconds=TIMEOUT) as client,
        ):
            init = await _call(
                client,
                "debate_init",
                title="nudge",
                created_by_role="CONDUCTOR",
                roles_json=json.dumps(roles),
                metadata_json=LANE,
                protocol_version="debate/v1",
                blind_roles_csv="PRO,CON",
            )
            topic = init.structured_content["topic_id"]
            seats = {b["role"]: b["session_id"] for b in init.structured_content["seeded_bindings"]}
            await _call(
                client, "debate_state", topic_id=topic, role="CONDUCTOR", new_state="ACTIVE"
            )

            async def claim(role: str, to: str) -> Any:
                summary = json.dumps({"summary": role, "assumptions": [], "evidence_refs": []})
                return await client.call_tool(
                    "debate_post_with_recipients",
                    {"topic_id": topic, "role": role, "priority": "H", "kind": "CLAIM",
                     "body": f"{role} claims", "addressed_to_csv": to, "payload_json": summary},
                )  # fmt: skip

            pro = (await claim("PRO", "CON,CONDUCTOR")).structured_content["msg_id"]
            args = {"topic_id": topic, "role": "CONDUCTOR", "target_role": "CON"}
            nudge = await _call(client, "debate_escalate", reason="post your CLAIM", **args)
            ping = nudge.structured_content["msg_id"]
            inbox = {"topic_id": topic, "role": "CON", "session_id": seats["CON"]}
            held = await _call(client, "debate_signal_check", **inbox)
            con = await claim("CON", "PRO,CONDUCTOR")
            after = await _call(client, "debate_signal_check", **inbox)
    assert held.structured_content["count"] == 0
    [_, note] = held.content
    assert note.text.startswith("While the blind barrier waits (blind_barrier_state)")
    assert "post your own CLAIM" in note.text
    assert not con.is_error, con
    assert con.structured_content["protocol_state"]["phase"] == "DEBATE"
    assert [m["msg_id"] for m in after.structured_content["pending"]] == [pro, ping]
