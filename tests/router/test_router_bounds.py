"""The bounds the router puts on what a call may store (the seed's core schemas set none).

An identifier over 256 characters or holding a control character, and any other text over
32,768 characters, is refused as ``invalid-arguments`` naming the field, before anything is
written; strings at the bounds pass.
"""

from __future__ import annotations

import pytest
from router_driver import ctx, event_args, plan_args

from agora.toolsets.router.bounds import MAX_IDENTIFIER, MAX_TEXT

COUNT = "SELECT (SELECT COUNT(*) FROM router_runs) + (SELECT COUNT(*) FROM router_ledger)"


async def _rows(runtime) -> int:
    return (await runtime.read(lambda c: c.execute(COUNT).fetchone()))[0]


@pytest.mark.parametrize(
    ("field", "change", "rule"),
    [
        ("idempotency_key", {"idem": "k" * (MAX_IDENTIFIER + 1)}, "maxLength"),
        ("correlation_id", {"correlation_id": "c" * (MAX_IDENTIFIER + 1)}, "maxLength"),
        ("context.session_id", {"session": "s" * (MAX_IDENTIFIER + 1)}, "maxLength"),
        ("context.actor", {"context": {**ctx(), "actor": "a\nb"}}, "pattern"),
        ("context.session_id", {"session": "a\x1fb"}, "pattern"),
        ("idempotency_key", {"idem": "k\x00"}, "pattern"),
        ("objective", {"objective": "o" * (MAX_TEXT + 1)}, "maxLength"),
        ("explicit_skill_ids[0]", {"explicit_skill_ids": ["s" * 300]}, "maxLength"),
    ],
)
async def test_a_string_past_its_bound_is_refused_and_nothing_is_written(
    router, runtime, field, change, rule
):
    objective = change.pop("objective", "Fix it")
    refused = await router.refused("plan_work", **plan_args(objective, **change))
    assert refused["code"] == "invalid-arguments"
    assert refused["issues"][0]["field"] == field
    assert refused["issues"][0]["rule"] == rule
    assert field in refused["message"]
    assert refused["state_changed"] is False
    assert await _rows(runtime) == 0


async def test_strings_at_the_bounds_are_kept(router, runtime):
    plan = await router.call(
        "plan_work",
        **plan_args("o\n" * (MAX_TEXT // 2), idem="k" * MAX_IDENTIFIER,
                    correlation_id="c" * MAX_IDENTIFIER, session="s" * MAX_IDENTIFIER),
    )  # fmt: skip
    assert plan["workflow_run_id"]
    assert await _rows(runtime) > 0


@pytest.mark.parametrize(
    ("lock", "field"),
    [
        ({"explicit_skill_ids": ["skill:a"], "explicit_semantics": None}, "explicit_semantics"),
        ({"explicit_skill_ids": [], "explicit_semantics": "only"}, "explicit_skill_ids"),
    ],
)
async def test_a_contradictory_explicit_lock_is_refused_by_name(router, runtime, lock, field):
    refused = await router.refused("plan_work", **plan_args("Fix it", **lock))
    assert refused["code"] == "invalid-arguments"
    assert refused["issues"][0]["field"] == field
    assert "explicit_skill_ids" in refused["message"]
    assert "explicit_semantics" in refused["message"]
    assert await _rows(runtime) == 0


async def test_an_oversized_observation_says_what_is_measured_and_its_size(router):
    run = (await router.plan("1. a\n2. b"))["workflow_run_id"]
    observation = {"note": "x" * 20_000}
    args = event_args(run, "plan", observation, version=1)
    refused = await router.refused("record_work_event", **args)
    assert refused["code"] == "observation-invalid"
    assert "canonical JSON" in refused["message"]
    assert "20011 bytes" in refused["message"]  # {"note":"x...x"}
    assert "16384" in refused["message"]


async def test_an_all_lock_naming_more_skills_than_the_plan_holds_is_refused(router, runtime):
    # One phase holds a primary and three supports: a fifth skill under "all" was planned in
    # planned_skill_ids but placed in no phase, and no consent could ever place it.
    skills = ["skill:a", "skill:b", "skill:c", "skill:d", "skill:e"]
    args = {"explicit_skill_ids": skills, "explicit_semantics": "all"}
    refused = await router.refused("plan_work", **plan_args("Add tests", **args))
    assert refused["code"] == "invalid-arguments"
    [issue] = refused["issues"]
    assert (issue["field"], issue["rule"]) == ("explicit_skill_ids", "maxItems")
    assert "names 5 skills" in issue["message"]
    assert "at most 4 fit" in issue["message"]
    assert refused["state_changed"] is False
    assert await _rows(runtime) == 0
    # Under "use" the same five are planned; the supports wait for consent.
    args["explicit_semantics"] = "use"
    assert (await router.plan("Add tests", **args))["support_consent_required"] is True


async def test_an_all_lock_spreads_its_supports_over_the_phases(router):
    # Three phases: three primaries, and the six other skills three to a phase from the first.
    skills = [f"skill:{n}" for n in range(9)]
    plan = await router.plan("1. design\n2. build\n3. ship", explicit_skill_ids=skills,
                             explicit_semantics="all", requested_work_mode="phased")  # fmt: skip
    tree = plan["planned_skill_tree"]
    placed = [s for phase in tree for s in (phase["primary_skill_id"], *phase["support_skill_ids"])]
    assert sorted(placed) == sorted(skills)
    assert [len(phase["support_skill_ids"]) for phase in tree] == [3, 3, 0]
    assert plan["support_consent_required"] is False


@pytest.mark.parametrize(("where", "field"), [(("log",), "observation.log"),
                                              (("details", "log"), "observation.details.log"),
                                              (("lines", 0), "observation.lines[0]")])  # fmt: skip
async def test_a_text_in_an_observation_past_the_text_bound_gives_the_observations(
    router, where, field
):
    # Tester finding: a 40,000-character log was refused "at most 32768 characters"; cut to
    # 32,000, it was refused again at 16 KiB, the observation's real bound.
    run = (await router.plan("1. a\n2. b"))["workflow_run_id"]
    value: object = "E" * (MAX_TEXT + 1)
    for step in reversed(where[1:]):
        value = [value] if isinstance(step, int) else {step: value}
    observation = {"check_id": "plan-ready", "outcome": "failed", where[0]: value}
    refused = await router.refused("record_work_event", **event_args(run, "plan", observation, 1))
    assert refused["code"] == "invalid-arguments"
    [issue] = refused["issues"]
    assert (issue["field"], issue["rule"]) == (field, "maxLength")
    assert "16384 bytes (16 KiB) of canonical JSON (RFC 8785) in all" in issue["message"]
    assert str(MAX_TEXT) not in refused["message"]
    objective = await router.refused("plan_work", **plan_args("x" * (MAX_TEXT + 1)))
    assert objective["issues"][0]["message"] == f"must be at most {MAX_TEXT} characters"
