"""What a plan says of a workspace Profile that did not shape it, and of its rules' flaws.

Tester findings: a Profile that is not JSON was "not valid JSON" with no position (a BOM or
an empty file alike); only the first schema problem was named; the plan's text never said
that the workspace Profile was skipped, read but matched by no rule (nor which domains and
tags its rules match), or not there at all, so an agent planned the builtin route in
silence; a skipped rule was named without why (nor which of two rules with one id); a rule
after a catch-all, and a ``match.phase`` naming none of the rule's phases, passed silently.
"""

from __future__ import annotations

import json

import pytest
from profile_files import profile, write_workspace

from agora.toolsets.router.profiles import parse_profile


@pytest.fixture
def repo(tmp_path, options):
    options["router"]["workspace_roots"] = [str(tmp_path)]
    (tmp_path / "repo").mkdir()
    return tmp_path / "repo"


def routing(root, domains=("web",), tags=(), phase=None):
    return {"workspace_root": str(root), "domains": list(domains), "tags": list(tags),
            "current_phase_id": phase}  # fmt: skip


def web(rule="web", **match):
    doc = profile("team", rule=rule, domains=("web",), skills=("skill:a", "skill:b"))
    doc["rules"][0]["match"].update(match)
    return doc


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "not valid JSON: the file is empty"),
        ("\ufeff" + json.dumps(web()), "not valid JSON: the file starts with a UTF-8 byte order"
                                       " mark (BOM); save it as UTF-8 without one"),
        ('{\n  "format": "agora-router-profile/1",\n}',
         "not valid JSON: Expecting property name enclosed in double quotes at line 3 column 1"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_json_says_where(text, said):
    assert parse_profile("workspace", text) == (None, [f"workspace-profile-invalid: {said}"])


def test_every_schema_problem_is_named():
    doc = {**web(), "version": 2}
    doc["rules"][0]["matches"] = {}
    del doc["rules"][0]["phases"][0]["exit_gate"]
    _none, warnings = parse_profile("workspace", json.dumps(doc))
    assert len(warnings) == 3
    assert any("field 'version'" in w for w in warnings)
    assert any("field 'rules[0].matches'" in w for w in warnings)
    assert any("exit_gate': is required" in w for w in warnings)


def test_a_skipped_rule_says_which_and_why():
    first, second = web("dup")["rules"][0], web("dup")["rules"][0]
    second["match"] = {"domains_any": ["api"]}
    doc = {**web(), "rules": [first, second]}
    _profile, warnings = parse_profile("workspace", json.dumps(doc))
    assert warnings == ["workspace-profile-rule-skipped: dup: rule 2 of 2 is skipped: rule 1 has"
                        " the rule_id 'dup' already (the first is kept)"]  # fmt: skip
    twice = web()
    twice["rules"][0]["phases"][1]["phase_id"] = "p1"
    assert parse_profile("workspace", json.dumps(twice))[1] == [
        "workspace-profile-rule-skipped: web: rule 1 of 1 is skipped: the phase_id 'p1' is given"
        " to more than one of its phases"
    ]
    own = web()
    own["rules"][0]["phases"][0]["support_skill_ids"] = ["skill:a"]
    assert parse_profile("workspace", json.dumps(own))[1][0].endswith(
        "skill:a is phase p1's primary skill and its support"
    )


async def test_the_plan_says_why_the_workspace_profile_did_not_plan(router, repo):
    path = f"{repo}/.codex/workflow-skill-router.json"
    absent = (await router.plan("Fix it", routing_context=routing(repo))).guidance
    assert absent.startswith(f"No workspace Profile at {path}")
    write_workspace(repo, "")
    skipped = (await router.plan("Fix it", routing_context=routing(repo))).guidance
    assert skipped.startswith(f"Workspace Profile {path} skipped: not valid JSON: the file is")
    assert "the plan is the builtin-default route." in skipped.splitlines()[0]
    write_workspace(repo, web(tags_all=["feature"]))
    missed = await router.plan("Fix it", routing_context=routing(repo, ("frontend",), ("feature",)))
    assert missed["route_source"] == "builtin-default"
    assert missed.guidance.startswith(
        f'Workspace Profile team ({path}) read: no rule matched domains ["frontend"], tags'
        ' ["feature"] (its rules match: web: domains any of ["web"], tags all of ["feature"]);'
    )
    hit = await router.plan("Fix it", routing_context=routing(repo, ("web",), ("feature",)))
    assert hit["route_source"] == "workspace-profile"
    assert not hit.guidance.startswith(("Workspace Profile", "No workspace Profile"))


async def test_rules_that_cannot_work_as_written_are_warned_of(router, repo):
    catch_all = profile("team", rule="any", skills=("skill:x",))["rules"][0]
    doc = web(phase="deploy")
    doc["rules"].insert(0, catch_all)
    write_workspace(repo, doc)
    plan = await router.plan("Fix it", routing_context=routing(repo))
    assert plan["matched_profile_rule_id"] == "team#any"
    assert plan["profile_warnings"] == [
        "workspace-profile-rule-shadowed: web: it never matches: the earlier rule any has no"
        " matcher, so it matches every context first",
        "workspace-profile-rule-phase-unplanned: web: its match.phase 'deploy' is none of its"
        " own phases (p1, p2), so a plan it matches has no such phase; fix the file"
        " (match.phase names the phase the work is in, routing_context.current_phase_id)",
    ]
    assert plan.guidance.startswith("Workspace Profile read. Rule problems in it: web: it never")
