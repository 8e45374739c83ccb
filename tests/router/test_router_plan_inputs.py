"""plan_work arguments the schema lets through but that cannot mean what they say.

Tester findings: ``explicit_skill_ids [""]`` made a lock no proposal could ever name (their
schema's minLength 1), a skill named twice was deduplicated without a word, and a
whitespace-only objective was planned.
"""

from __future__ import annotations

import pytest
from router_driver import plan_args


@pytest.mark.parametrize("blank", ["", "   ", "\u3000"])
async def test_a_blank_locked_skill_is_refused(router, blank):
    lock = {"explicit_skill_ids": ["skill:a", blank], "explicit_semantics": "use"}
    body = await router.refused("plan_work", **plan_args("Fix the typo", **lock))
    assert body["code"] == "invalid-arguments"
    [issue] = body["issues"]
    assert (issue["field"], issue["rule"]) == ("explicit_skill_ids[1]", "minLength")
    assert issue["message"].startswith("must name a skill: an empty or blank skill id")


async def test_a_skill_locked_twice_is_planned_once_with_a_warning(router):
    lock = {"explicit_skill_ids": ["skill:a", "skill:b", "skill:a"], "explicit_semantics": "use"}
    plan = await router.plan("Fix the typo", **lock)
    assert plan["planned_skill_ids"] == ["skill:a", "skill:b"]
    assert plan["profile_warnings"] == [
        "duplicate-explicit-skill: skill:a named more than once in explicit_skill_ids;"
        " each is planned once"
    ]
