"""resources/subscribe on a debate inbox answers as resources/read does, over a real WebSocket.

Subscribing to ``debate://inbox/{session_id}`` is allowed only to the session's owner, as
reading it is. A session that does not exist, a session of another principal and a URI
that names no session at all are refused with the same JSON-RPC error (-32002 "Resource
not found", ``data.uri`` the URI asked for) that a read gets, so subscribing tells nobody
more than reading would; a refused subscription registers nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import trio

from agora.client import McpError, connect
from agora.config import Config, PrincipalConfig
from agora.mcp import jsonrpc as rpc
from agora.server.embed import open_server
from agora.toolsets.debate.rules import inbox_uri

TOKENS = {"alice": "subscribe-alice-token", "bob": "subscribe-bob-token"}
MISSING = "00000000-0000-4000-8000-00000000dead"


def _principal(name: str) -> PrincipalConfig:
    digest = hashlib.sha256(TOKENS[name].encode()).hexdigest()
    return PrincipalConfig(name=name, token_sha256=digest, projects=["ops"])


@pytest.fixture
async def server():
    config = Config(port=0, db=":memory:", principals=[_principal("alice"), _principal("bob")])
    async with open_server(config) as running:
        yield running


async def _refusal(client: Any, method: str, uri: str) -> dict[str, Any]:
    with pytest.raises(McpError) as info:
        await client.request(method, {"uri": uri})
    return info.value.error


def _blank(error: dict[str, Any], uri: str) -> dict[str, Any]:
    """``error`` with the URI it echoes replaced (every other byte must match)."""
    assert error.get("data", {}).get("uri") == uri, error
    return {**error, "data": {**error["data"], "uri": "<uri>"}}


async def test_only_the_owner_may_subscribe_to_an_inbox_and_refusals_match_read(server):
    url = server.url + "/mcp/debate"
    hub = server.runtime.resources
    with trio.fail_after(30):
        async with (
            connect(url, token=TOKENS["alice"]) as alice,
            connect(url, token=TOKENS["bob"]) as bob,
        ):
            opened = await alice.call_tool("debate_session_open", {})
            hers = inbox_uri(opened["structuredContent"]["session_id"])
            assert await alice.request("resources/subscribe", {"uri": hers}) == {}
            assert hub.subscribers(hers) == 1

            missing = inbox_uri(MISSING)
            malformed = "debate://inbox/not-a-session"
            answers = []
            for who, uri in ((bob, hers), (bob, missing), (alice, missing), (bob, malformed)):
                subscribed = await _refusal(who, "resources/subscribe", uri)
                read = await _refusal(who, "resources/read", uri)
                assert subscribed == read, (uri, subscribed, read)
                assert subscribed["code"] == rpc.RESOURCE_NOT_FOUND
                answers.append(_blank(subscribed, uri))
            assert all(a == answers[0] for a in answers), answers  # no existence oracle
            assert hub.subscribers(hers) == 1  # bob's refused subscribe registered nothing
            assert hub.subscribers(missing) == 0


def test_the_readme_tells_both_ways_to_hear_of_an_inbox():
    # At 2026-07-28, what the official SDK negotiates by default, resources/subscribe is
    # refused (tests/transports/test_listen.py): the Debate section must name the listen too.
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n### Debate\n", 1)[1].split("\n## ", 1)[0]
    push = " ".join(section[section.index("Push instead of polling") :].split())
    push = push[: push.index("Only the session's owner")]
    for needed in ("resources/subscribe", "subscriptions/listen", "2026-07-28"):
        assert needed in push, needed
    assert "resourceSubscriptions" in push
