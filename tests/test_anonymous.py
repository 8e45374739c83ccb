"""The anonymous principal's project grants: a single-user server works out of the box.

Without `[[principals]]`, a caller with no token holds the project `local`, so a newcomer's
agent can open a debate topic on the embedded default; once principals are configured the
anonymous caller holds no project unless `anonymous_projects` says otherwise.
"""

from __future__ import annotations

import hashlib
import json

import pytest
import trio

from agora.client import connect
from agora.config import Config, PrincipalConfig
from agora.server.embed import open_server

OPS = PrincipalConfig(name="ops", token_sha256=hashlib.sha256(b"ops-token").hexdigest())


@pytest.mark.parametrize(
    ("principals", "setting", "projects"),
    [
        pytest.param([], None, {"local"}, id="no-principals"),
        pytest.param([OPS], None, set(), id="principals-configured"),
        pytest.param([OPS], ["shared"], {"shared"}, id="explicit-with-principals"),
        pytest.param([], [], set(), id="explicitly-none"),
    ],
)
def test_anonymous_projects(principals, setting, projects):
    config = Config(principals=principals, anonymous_projects=setting)
    anonymous = config.anonymous()
    assert anonymous.anonymous
    assert anonymous.projects == projects
    assert anonymous.scopes == frozenset()


def _init_args() -> dict[str, object]:
    return {
        "title": "Which store?",
        "created_by_role": "CONDUCTOR",
        "roles_json": json.dumps([{"role": "CONDUCTOR"}, {"role": "ALPHA"}]),
        "metadata_json": json.dumps({"priority_lane": "P2", "priority_reason": "first try"}),
    }


async def _init_over_websocket(config: Config) -> dict[str, object]:
    async with open_server(config) as server, connect(server.url + "/mcp/debate") as client:
        with trio.fail_after(30):
            result: dict[str, object] = await client.call_tool("debate_init", _init_args())
            return result


async def test_a_tokenless_agent_opens_a_debate_topic_on_the_default_server():
    result = await _init_over_websocket(Config(port=0, db=":memory:"))
    assert not result.get("isError"), result
    body = result["structuredContent"]
    assert isinstance(body, dict)
    assert body["project"] == "local"


async def test_with_principals_configured_a_tokenless_agent_holds_no_project():
    result = await _init_over_websocket(Config(port=0, db=":memory:", principals=[OPS]))
    assert result.get("isError")
    assert result["structuredContent"]["error"] == "project_required"  # type: ignore[index]
