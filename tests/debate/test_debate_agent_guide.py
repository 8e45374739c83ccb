"""What an agent author learns from the debate endpoint itself, with the official MCP SDK as
the client over Streamable HTTP on loopback, against a server on a real SQLite file.

Agents that followed the endpoint's ``instructions`` posted with ``debate_post``, which
reaches no inbox, and waited until the phase clock ended their debate in STALEMATE; the
instructions also said a session must come first, when ``debate_init`` mints them. The
instructions and the tool descriptions must say how a post reaches its recipients, and what
they say must hold.
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
LANE = json.dumps({"priority_lane": "P2", "priority_reason": "agent guide"})


@pytest.fixture
async def url(tmp_path):
    async with open_server(Config(port=0, db=str(tmp_path / "guide.db"))) as server:
        yield server.url + "/mcp/debate"


async def _call(client: Any, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result
    out: dict[str, Any] = result.structured_content
    return out


async def test_the_instructions_say_how_to_post_so_that_others_receive_it(url):
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(url, read_timeout_seconds=TIMEOUT) as client:
            told = " ".join((client.instructions or "").split())
            tools = {t.name: t.description or "" for t in (await client.list_tools()).tools}
            # What the instructions say holds: a broadcast reaches no inbox, an addressed
            # post does.
            init = await _call(
                client,
                "debate_init",
                title="t",
                created_by_role="PRO",
                roles_json=json.dumps([{"role": "PRO"}, {"role": "CON"}]),
                metadata_json=LANE,
            )
            topic = init["topic_id"]
            seats = {b["role"]: b["session_id"] for b in init["seeded_bindings"]}
            await _call(client, "debate_state", topic_id=topic, role="PRO", new_state="ACTIVE")
            post = {"topic_id": topic, "role": "PRO", "priority": "M", "kind": "INFO"}
            inbox = {"topic_id": topic, "role": "CON", "session_id": seats["CON"]}
            await _call(client, "debate_post", body="to everyone", **post)
            assert (await _call(client, "debate_signal_check", **inbox))["count"] == 0
            sent = await _call(
                client, "debate_post_with_recipients", body="to CON", addressed_to_csv="CON", **post
            )
            got = await _call(client, "debate_signal_check", **inbox)
    assert [m["msg_id"] for m in got["pending"]] == [sent["msg_id"]]
    assert "post with debate_post_with_recipients, naming in addressed_to_csv" in told
    assert "post with debate_post," not in told
    assert "a debate_post is a broadcast that reaches no inbox" in told
    assert "A broadcast reaches no inbox" in tools["debate_post"]
    assert "debate_post broadcast never wakes a wait" in tools["debate_signal_wait"]
    assert "debate_post broadcast reaches no inbox" in tools["debate_post_with_recipients"]


async def test_the_instructions_are_true_for_a_topic_opened_without_a_session(url):
    with trio.fail_after(TIMEOUT):
        async with mcp.Client(url, read_timeout_seconds=TIMEOUT) as client:
            told = " ".join((client.instructions or "").split())
            session = (await _call(client, "debate_session_open"))["session_id"]
            roles = [{"role": "PRO", "session_id": session}, {"role": "CON"}]
            init = await _call(
                client,
                "debate_init",
                title="t",
                created_by_role="PRO",
                roles_json=json.dumps(roles),
                metadata_json=LANE,
            )
            refused = await client.call_tool(
                "debate_init",
                {"title": "t", "created_by_role": "PRO", "metadata_json": LANE,
                 "session_id": session},
            )  # fmt: skip
    seeded = {b["role"]: b for b in init["seeded_bindings"]}
    assert seeded["PRO"]["session_id"] == session
    assert seeded["CON"]["minted"] is True  # no session_open needed for it
    assert refused.is_error
    assert refused.structured_content["error"] == "invalid_arguments"
    assert "every other tool presupposes a session you own" not in told
    assert "it takes no session_id argument" in told
    assert "omits session_id to have one minted for you" in told
    assert "seeded_bindings" in told
