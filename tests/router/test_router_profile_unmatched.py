"""What a plan says of a workspace Profile that was read but planned nothing.

Tester finding (A): the line "no rule matched ... To plan by it, send routing_context domains
and tags its rules name" came also when the personal or a managed Profile planned the work
(the plan was right), when the rule that would have matched was skipped (following it
planned a login page by the api rule), and when no rule was valid (no domains could help):
an agent that follows the replies re-plans routed work or labels it with domains that do not
describe it. Only a builtin-default plan lists the rules' matchers, and never asks for
domains or tags the work does not have.
"""

from __future__ import annotations

import json

import pytest
from profile_files import profile, write_workspace

from agora.toolsets.router.profile_notes import profile_line
from agora.toolsets.router.profiles import parse_profile


@pytest.fixture
def repo(tmp_path, options):
    options["router"]["workspace_roots"] = [str(tmp_path)]
    (tmp_path / "repo").mkdir()
    return tmp_path / "repo"


def routing(root, domains=("web",), tags=()):
    return {"workspace_root": str(root), "domains": list(domains), "tags": list(tags),
            "current_phase_id": None}  # fmt: skip


def rule(rule_id, *domains, skills=("skill:a", "skill:b")):
    return profile("team", rule=rule_id, domains=domains, skills=skills)["rules"][0]


def team(*rules):
    return {**profile("team"), "rules": list(rules)}


INVITES = ("To plan by it", "send routing_context domains", "plan again with it")


async def test_a_plan_a_personal_rule_made_is_not_sent_to_fit_the_team_file(
    router, repo, tmp_path, options
):
    personal = tmp_path / "personal.json"
    personal.write_text(json.dumps(profile("mine", rule="cli", domains=("cli",))))
    options["router"]["personal_profile"] = str(personal)
    write_workspace(repo, team(rule("web-feature", "web")))
    plan = await router.plan("Fix the CLI", routing_context=routing(repo, ("cli",), ("bugfix",)))
    assert plan["route_source"] == "personal-profile"
    first = plan.guidance.splitlines()[0]
    assert first == (
        f"Workspace Profile team ({repo}/.codex/workflow-skill-router.json) read: none of its"
        ' rules matches domains ["cli"], tags ["bugfix"]; the plan is the personal-profile'
        " route (rule mine#cli)."
    )


def test_a_managed_plan_is_not_sent_to_fit_the_team_file(tmp_path):
    layers = [parse_profile("workspace", json.dumps(team(rule("web", "web"))))[0]]
    result = {"route_source": "managed-workspace-profile",
              "matched_profile_rule_id": "managed-workspace-local#cand-1"}  # fmt: skip
    line = profile_line(routing(tmp_path, ("api",)), layers, [], result)
    assert line is not None
    assert line.endswith("read: none of its rules matches domains [\"api\"], tags []; the plan"
                         " is the managed-workspace-profile route (rule"
                         " managed-workspace-local#cand-1).")  # fmt: skip
    assert not any(words in line for words in INVITES)


async def test_a_skipped_rule_that_matches_says_fix_the_file(router, repo):
    api = rule("web-feature", "api")
    web = rule("web-feature", "web")
    write_workspace(repo, team(api, web))
    plan = await router.plan("Add a login page", routing_context=routing(repo, ("web",)))
    assert plan["route_source"] == "builtin-default"
    first = plan.guidance.splitlines()[0]
    assert 'its rule web-feature matches domains ["web"], tags [] but is skipped' in first
    assert "Fix the file, then plan again" in first
    assert "rule 2 of 2 is skipped: rule 1 has the rule_id 'web-feature' already" in first
    assert not any(words in first for words in INVITES)
    assert "api" not in first.split("Rule problems in it")[0]


async def test_no_valid_rule_says_fix_the_file(router, repo):
    broken = rule("web", "web")
    broken["phases"][1]["phase_id"] = "p1"
    write_workspace(repo, team(broken))
    plan = await router.plan("Add a login page", routing_context=routing(repo, ("api",)))
    first = plan.guidance.splitlines()[0]
    assert "none of its rules is valid" in first
    # Its one rule is for web work, not this api work: fixing the file would not change this
    # plan, so the agent is not sent to plan again (tester finding).
    assert "none of its skipped rules matches this work, so this plan stands" in first
    assert "plan again" not in first
    assert not any(words in first for words in INVITES)


async def test_a_builtin_plan_lists_the_rules_without_asking_to_misdescribe(router, repo):
    write_workspace(repo, team(rule("web", "web")))
    plan = await router.plan("Fix it", routing_context=routing(repo, ("frontend",)))
    first = plan.guidance.splitlines()[0]
    assert (
        '(its rules match: web: domains any of ["web"]); the plan is the builtin-default' in first
    )
    assert "never send a domain or tag the work does not have just to match a rule" in first
    assert "send routing_context domains and tags its rules name" not in first


async def test_a_workspace_without_a_profile_is_not_told_its_root_is_wrong(
    router, repo, tmp_path, options
):
    """Tester finding (D): every plan in a project without a team Profile began "No workspace
    Profile at ... (a workspace_root names the directory that holds .codex/)", hinting that
    the root was wrong, though having none is the usual case."""
    path = f"{repo}/.codex/workflow-skill-router.json"
    bare = await router.plan("Fix it", routing_context=routing(repo, (), ()))
    assert "Profile" not in bare.guidance.splitlines()[0]
    named = await router.plan("Fix it", routing_context=routing(repo, ("web",)))
    assert named.guidance.splitlines()[0] == (
        f"No workspace Profile at {path}: this workspace has no team Profile; the plan is the"
        " builtin-default route."
    )
    personal = tmp_path / "personal.json"
    personal.write_text(json.dumps(profile("mine", rule="cli", domains=("cli",))))
    options["router"]["personal_profile"] = str(personal)
    mine = await router.plan("Fix the CLI", routing_context=routing(repo, ("cli",)))
    assert mine["route_source"] == "personal-profile"
    assert "Profile" not in mine.guidance.splitlines()[0]
    for plan in (bare, named, mine):
        assert "names the directory" not in plan.guidance


async def test_a_subdirectory_sent_as_the_root_names_the_workspace_above_it(router, repo):
    write_workspace(repo, team(rule("web", "web")))
    (repo / "src").mkdir()
    plan = await router.plan("Fix it", routing_context=routing(repo / "src", ("web",)))
    assert plan.guidance.splitlines()[0] == (
        f"No workspace Profile at {repo}/src/.codex/workflow-skill-router.json, but {repo}"
        f" above it holds one ({repo}/.codex/workflow-skill-router.json): a workspace_root"
        " names the directory that holds .codex/, so if this work belongs to that workspace,"
        f' plan again with workspace_root "{repo}" and a new idempotency_key; the plan is the'
        " builtin-default route."
    )


async def test_no_profile_above_the_authorized_root_is_looked_for(router, repo, options):
    write_workspace(repo, team(rule("web", "web")))
    (repo / "src").mkdir()
    options["router"]["workspace_roots"] = [str(repo / "src")]
    plan = await router.plan("Fix it", routing_context=routing(repo / "src", ("web",)))
    assert str(repo / ".codex") not in plan.guidance
