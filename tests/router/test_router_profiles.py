"""Profile precedence, invalid Profiles as warnings, and workspace-root authorization."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from profile_files import profile, write_workspace
from router_driver import plan_args

from agora.toolsets.router.digests import digest
from agora.toolsets.router.profiles import PROFILE_SCHEMA, parse_profile

REFUSED = "workspace-root-not-authorized"
ADD = "add the workspace to [options.router] workspace_roots"
#: A refused root, and why no client root was asked: the driver's client declares none.
NO_ROOTS = [REFUSED, f"client-roots-unused: the MCP client declared no roots capability; {ADD}"]
#: Why a network client's roots are not asked by default (HTTP, WebSocket, stdio --connect).
NETWORK = (
    "client-roots-unused: the client reaches the server over the network (HTTP, WebSocket,"
    ' agora stdio --connect) and client_roots = "local" asks only stdio and in-process clients;'
    f' {ADD}, or set client_roots = "any" on a single-user server'
)


def routing(root, domains=("web",)):
    return {"workspace_root": None if root is None else str(root), "domains": list(domains),
            "tags": [], "current_phase_id": None}  # fmt: skip


@pytest.fixture
def workspace(tmp_path, options):
    allowed = tmp_path / "allowed"
    (allowed / "repo").mkdir(parents=True)
    options["router"]["workspace_roots"] = [str(allowed)]
    personal = tmp_path / "personal.json"
    personal.write_text(json.dumps(profile("personal", skills=("skill:personal",))))
    options["router"]["personal_profile"] = str(personal)
    return allowed / "repo"


async def test_precedence_is_explicit_then_workspace_then_personal_then_builtin(
    router, workspace, options
):
    doc = profile("team", skills=("skill:ws",), envelope="phased", domains=("web",))
    write_workspace(workspace, doc)
    ws = await router.plan("Fix it", routing_context=routing(workspace))
    assert ws["route_source"] == "workspace-profile"
    assert ws["routing_profile_ids"] == ["team"]
    assert ws["routing_profile_digest"] == digest(doc)
    assert ws["matched_profile_rule_id"] == "team#r1"
    assert ws["planned_skill_ids"] == ["skill:ws"]
    assert ws["classification"]["source"] == "profile-route"
    assert ws["activation_status"] == "intended-unverified"
    other_domain = await router.plan("Fix it", routing_context=routing(workspace, ("db",)))
    assert other_domain["route_source"] == "personal-profile"  # the workspace rule did not match
    lock = {"explicit_skill_ids": ["skill:mine"], "explicit_semantics": "only"}
    explicit = await router.plan("Fix it", routing_context=routing(workspace), **lock)
    assert explicit["route_source"] == "user-explicit"
    assert explicit["planned_skill_ids"] == ["skill:mine"]
    assert explicit["selection_mode"] == "explicit-locked"
    assert explicit["support_consent_required"] is True
    personal = await router.plan("Fix it", routing_context=routing(None))
    assert personal["route_source"] == "personal-profile"
    del options["router"]["personal_profile"]
    builtin = await router.plan("Fix it", routing_context=routing(None))
    assert builtin["route_source"] == "builtin-default"
    assert builtin["planned_skill_ids"] == []
    assert builtin["activation_status"] == "not-planned"
    assert builtin["routing_profile_digest"] is None


@pytest.mark.parametrize(
    ("text", "warning"),
    [
        pytest.param("{not json", "workspace-profile-invalid: not valid JSON", id="json"),
        pytest.param(json.dumps({"format": "agora-router-profile/9", "profile_id": "x",
                                 "rules": []}), "workspace-profile-invalid", id="format"),
        pytest.param(json.dumps(profile("x", support=("a", "b", "c", "d"))),
                     "workspace-profile-invalid", id="four-supports"),
        pytest.param(json.dumps(profile("x", support=("skill:a",))),
                     "workspace-profile-rule-skipped: r1", id="primary-as-support"),
        pytest.param(json.dumps({**profile("x"), "bogus": 1}),  # a file's field, no argument
                     "workspace-profile-invalid: field 'bogus': ", id="unknown-field"),
        pytest.param('{"format": "agora-router-profile/1", "profile_id": "a", "profile_id": "b",'
                     ' "rules": []}', 'workspace-profile-invalid: the key "profile_id" is given'
                     " twice", id="duplicate-key"),
    ],
)  # fmt: skip
async def test_an_invalid_workspace_profile_is_a_warning_not_a_failure(
    router, workspace, text, warning
):
    write_workspace(workspace, text)
    plan = await router.plan("Fix it", routing_context=routing(workspace))
    assert plan["profile_warnings"][0].startswith(warning)
    assert plan["route_source"] == "personal-profile"


async def test_a_root_outside_the_authorized_roots_is_never_read(router, workspace, tmp_path):
    outside = tmp_path / "outside"
    write_workspace(outside, profile("evil", skills=("skill:evil",)))
    plan = await router.plan("Fix it", routing_context=routing(outside))
    assert plan["profile_warnings"] == NO_ROOTS
    assert plan["route_source"] == "personal-profile"


async def test_path_traversal_out_of_an_authorized_root_is_refused(router, workspace, tmp_path):
    write_workspace(tmp_path / "outside", profile("evil", skills=("skill:evil",)))
    sneaky = f"{workspace}/../../outside"
    plan = await router.plan("Fix it", routing_context=routing(sneaky))
    assert plan["profile_warnings"] == NO_ROOTS
    assert "skill:evil" not in plan["planned_skill_ids"]


async def test_a_symlink_escaping_the_authorized_root_is_refused(router, workspace, tmp_path):
    evil = write_workspace(tmp_path / "outside", profile("evil", skills=("skill:evil",)))
    (workspace / ".codex").mkdir()
    os.symlink(evil, workspace / ".codex" / "workflow-skill-router.json")
    plan = await router.plan("Fix it", routing_context=routing(workspace))
    assert plan["profile_warnings"] == ["workspace-profile-escapes-root"]
    linked_root = workspace / "linked"
    os.symlink(tmp_path / "outside", linked_root)  # the root itself resolves outside
    plan = await router.plan("Fix it", routing_context=routing(linked_root))
    assert plan["profile_warnings"] == NO_ROOTS


class Roots:
    """An MCP client channel that declares roots and answers roots/list."""

    def __init__(self, *paths):
        self.capabilities = {"roots": {"listChanged": False}}
        self.uris = [f"file://{p}" for p in paths]
        self.asked = 0

    async def request(self, method, params):
        assert method == "roots/list"
        self.asked += 1
        return {"roots": [{"uri": u, "name": "r"} for u in self.uris]}


async def test_mcp_client_roots_authorize_a_workspace(router, tmp_path):
    repo = tmp_path / "client-repo"
    write_workspace(repo, profile("client", skills=("skill:client",)))
    plan = await router.plan("Fix it", routing_context=routing(repo))
    assert plan["profile_warnings"] == NO_ROOTS
    router.client = Roots(repo)
    plan = await router.plan("Fix it", routing_context=routing(repo))
    assert plan["route_source"] == "workspace-profile"
    assert router.client.asked == 1


async def test_a_network_clients_roots_are_not_asked_unless_the_operator_trusts_them(
    router, options, tmp_path
):
    repo = tmp_path / "client-repo"
    write_workspace(repo, profile("client", skills=("skill:client",)))
    router.client, router.local_client = Roots(repo), False
    plan = await router.plan("Fix it", routing_context=routing(repo))
    assert plan["profile_warnings"] == [REFUSED, NETWORK]
    assert router.client.asked == 0
    options["router"]["client_roots"] = "any"
    plan = await router.plan("Fix it", routing_context=routing(repo))
    assert plan["route_source"] == "workspace-profile"
    options["router"]["client_roots"] = "none"
    router.local_client = True
    plan = await router.plan("Fix it", routing_context=routing(repo))
    none = f'client-roots-unused: client_roots = "none"; {ADD}'
    assert plan["profile_warnings"] == [REFUSED, none]
    assert router.client.asked == 1
    # Roots asked and listed that do not hold the path: nothing more to say.
    options["router"]["client_roots"] = "local"
    plan = await router.plan("Fix it", routing_context=routing(tmp_path / "elsewhere"))
    assert plan["profile_warnings"] == [REFUSED]


def test_the_documented_schema_is_the_one_enforced():
    doc = json.loads(
        (Path(__file__).parents[2] / "docs" / "router-profiles.md")
        .read_text()
        .split("```json\n")[-1]
        .split("```")[0]
    )
    assert doc == PROFILE_SCHEMA
    assert parse_profile("personal", json.dumps(profile("ok")))[1] == []


async def test_a_workspace_root_must_be_absolute(router, workspace):
    plan = await router.plan("Fix it", routing_context=routing("relative/path"))
    assert plan["profile_warnings"] == ["workspace-root-not-absolute"]
    assert plan_args("x")["explicit_skill_ids"] == []


async def test_a_root_outside_the_authorized_roots_tells_nothing_about_the_filesystem(
    router, workspace, tmp_path, monkeypatch
):
    (tmp_path / "outside").mkdir()
    touched: list[str] = []
    real = os.path.realpath

    def spy(path, *args, **kwargs):
        touched.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", spy)
    for probe in (tmp_path / "outside", tmp_path / "outside-missing", "/etc/passwd",
                  "/etc/passwdx", f"{workspace}/../../outside"):  # fmt: skip
        plan = await router.plan("Fix it", routing_context=routing(probe))
        assert plan["profile_warnings"] == NO_ROOTS, probe
    assert set(touched) <= {str(tmp_path / "allowed")}  # only the authorized root is resolved
    # Under an authorized root the path is resolved: a missing one says so, a symlink that
    # leads out is still refused.
    plan = await router.plan("Fix it", routing_context=routing(workspace / "missing"))
    assert plan["profile_warnings"] == ["workspace-root-missing"]
    os.symlink(tmp_path / "outside", workspace / "out")
    plan = await router.plan("Fix it", routing_context=routing(workspace / "out"))
    assert plan["profile_warnings"] == NO_ROOTS


async def test_a_link_out_of_an_authorized_root_is_no_oracle_either(router, workspace, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "there").mkdir()
    os.symlink(tmp_path / "elsewhere", workspace / "link")
    for probe in ("there", "not-there"):
        plan = await router.plan("Fix it", routing_context=routing(f"{workspace}/link/{probe}"))
        assert plan["profile_warnings"] == NO_ROOTS, probe


class BadRoots(Roots):
    """A client whose roots/list answer holds no list (after the handshake nothing checks it)."""

    async def request(self, method, params):
        self.asked += 1
        return {"roots": 5}


async def test_a_roots_answer_without_a_list_authorizes_nothing(router, tmp_path):
    repo = tmp_path / "client-repo"
    write_workspace(repo, profile("client", skills=("skill:client",)))
    router.client = BadRoots(repo)
    plan = await router.plan("Fix it", routing_context=routing(repo))
    assert router.client.asked == 1
    assert plan["profile_warnings"] == [REFUSED]
    assert plan["route_source"] != "workspace-profile"
