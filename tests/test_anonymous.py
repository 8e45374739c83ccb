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

from agora.cli_banner import anonymous_warning, warn_at_start
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
    ("host", "addresses", "principals", "allow", "said"),
    [
        pytest.param(
            "0.0.0.0", ["0.0.0.0"], [], True, "add [[principals]] to a config file", id="open"
        ),
        pytest.param(
            "10.0.0.7", ["10.0.0.7"], [OPS], True, "set allow_anonymous = false", id="principals"
        ),
        pytest.param("::", ["::"], [], True, "on every interface (::)", id="every"),
        pytest.param(
            "agora.example.com",
            ["192.0.2.8"],
            [],
            True,
            "on agora.example.com (192.0.2.8),",
            id="name",
        ),
        pytest.param(
            "vm", ["127.0.1.1", "192.0.2.8"], [], True, "on vm (127.0.1.1, 192.0.2.8)", id="both"
        ),
        pytest.param("0.0.0.0", ["0.0.0.0"], [OPS], False, None, id="closed"),
        pytest.param("127.0.0.1", ["127.0.0.1"], [], True, None, id="loopback"),
        pytest.param("127.0.0.2", ["127.0.0.2"], [], True, None, id="loopback-net"),
        pytest.param("::1", ["::1"], [], True, None, id="loopback-v6"),
        pytest.param("localhost", ["127.0.0.1", "::1"], [], True, None, id="localhost"),
        # A Debian-style /etc/hosts maps the machine's name to 127.0.1.1: bound there, no
        # other machine reaches it (a tester's finding: it was warned about).
        pytest.param("vm", ["127.0.1.1"], [], True, None, id="name-on-loopback"),
    ],
)
def test_a_server_others_can_reach_warns_when_callers_need_no_token(
    host, addresses, principals, allow, said
):
    """An operator's finding: bound to 0.0.0.0 with no principals, every caller on the
    network used every tool as anonymous, and the log said nothing; the README says to set
    allow_anonymous = false on a server others can reach."""
    config = Config(host=host, principals=principals, allow_anonymous=allow)
    warning = anonymous_warning(config, addresses=addresses)
    if said is None:
        assert warning is None
        return
    assert warning is not None
    assert warning.startswith("callers without a bearer token are served MCP"), warning
    assert said in warning, warning
    assert "allow_anonymous = false (AGORA_ALLOW_ANONYMOUS=false)" in warning, warning


def test_the_warning_names_the_config_file_only_when_one_was_given():
    """A tester's finding: with no --config at all (AGORA_HOST=0.0.0.0 agora serve) the
    warning said "add [[principals]] to the --config file"."""
    config = Config(host="0.0.0.0")
    none = anonymous_warning(config, addresses=["0.0.0.0"])
    assert none is not None
    assert "--config file" not in none, none
    assert (
        "add [[principals]] to a config file, given as --config (no AGORA_ variable sets"
        " them), a name and the sha256 of a token each, and set allow_anonymous = false"
        " (AGORA_ALLOW_ANONYMOUS=false)"
    ) in none, none
    given = anonymous_warning(config, addresses=["0.0.0.0"], config_file="/srv/agora.toml")
    assert given is not None
    assert "add [[principals]] to the --config file (/srv/agora.toml), a name and" in given


@pytest.mark.parametrize(
    ("host", "warned"),
    [
        # Not an address ipaddress reads, but one the server binds as 127.0.0.1.
        pytest.param("127.1", False, id="short-loopback"),
        pytest.param("localhost", False, id="localhost"),
        pytest.param("127.0.0.1", False, id="loopback"),
        pytest.param("0.0.0.0", True, id="every"),
    ],
)
async def test_the_warning_resolves_the_host_as_the_server_binds_it(host, warned, caplog):
    """The host is resolved as `trio.open_tcp_listeners` resolves it, and only an address
    other than loopback among those bound warns."""
    with caplog.at_level("WARNING", logger="agora.cli"):
        await warn_at_start(Config(host=host, allowed_hosts=["*"]))
    said = [r.getMessage() for r in caplog.records if "without a bearer token" in r.getMessage()]
    assert len(said) == (1 if warned else 0), said
