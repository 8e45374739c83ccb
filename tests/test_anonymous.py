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

from agora.cli_banner import anonymous_warning
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


@pytest.mark.parametrize(
    ("host", "principals", "allow", "said"),
    [
        pytest.param("0.0.0.0", [], True, "add [[principals]] to the --config", id="open"),
        pytest.param("10.0.0.7", [OPS], True, "set allow_anonymous = false", id="principals"),
        pytest.param("", [], True, "on every interface (*)", id="every"),
        pytest.param("agora.example.com", [], True, "on agora.example.com,", id="name"),
        pytest.param("0.0.0.0", [OPS], False, None, id="closed"),
        pytest.param("127.0.0.1", [], True, None, id="loopback"),
        pytest.param("127.0.0.2", [], True, None, id="loopback-net"),
        pytest.param("::1", [], True, None, id="loopback-v6"),
        pytest.param("localhost", [], True, None, id="localhost"),
    ],
)
def test_a_server_others_can_reach_warns_when_callers_need_no_token(host, principals, allow, said):
    """An operator's finding: bound to 0.0.0.0 with no principals, every caller on the
    network used every tool as anonymous, and the log said nothing; the README says to set
    allow_anonymous = false on a server others can reach."""
    config = Config(host=host, principals=principals, allow_anonymous=allow)
    warning = anonymous_warning(config)
    if said is None:
        assert warning is None
        return
    assert warning is not None
    assert warning.startswith("callers without a bearer token are served MCP"), warning
    assert said in warning, warning
    assert "allow_anonymous = false (AGORA_ALLOW_ANONYMOUS=false)" in warning, warning
