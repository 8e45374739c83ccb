"""Properties of the pure planner: any objective classifies, and any plan fits the contract."""

from __future__ import annotations

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st
from router_driver import CONTRACT, plan_args

from agora.toolsets.router.classifier import classify
from agora.toolsets.router.planning import Unplaceable, build_plan

PLAN_OUTPUT = jsonschema.Draft7Validator(dict(CONTRACT.tools["plan_work"].output_schema or {}))
ids = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,10}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(objective=st.text(min_size=1, max_size=300), domains=st.lists(ids, max_size=4))
def test_any_objective_classifies_the_same_way_twice(objective, domains):
    first = classify(objective, domains=tuple(domains))
    assert first == classify(objective, domains=tuple(domains))
    assert first.envelope in ("single", "phased", "managed-goal")
    assert first.reason_codes


@settings(max_examples=100, deadline=None)
@given(
    objective=st.text(min_size=1, max_size=200),
    mode=st.sampled_from([None, "single", "phased", "managed-goal"]),
    goal=st.one_of(st.none(), ids),
    skills=st.lists(ids, max_size=5),
    semantics=st.sampled_from([None, "use", "only", "all"]),
)
def test_every_plan_result_fits_the_plan_work_output_schema(objective, mode, goal, skills,
                                                            semantics):  # fmt: skip
    args = plan_args(objective, requested_work_mode=mode, goal_binding_id=goal,
                     explicit_skill_ids=skills, explicit_semantics=semantics)  # fmt: skip
    try:
        plan = build_plan(args, [], [])
    except Unplaceable:  # only an "all" lock with more skills than one phase holds
        assert semantics == "all"
        assert len(set(skills)) > 4
        return
    PLAN_OUTPUT.validate(plan.result)
    if semantics == "all" and skills:  # every locked skill placed in some phase
        tree = plan.result["planned_skill_tree"]
        assert {s for p in tree for s in (p["primary_skill_id"], *p["support_skill_ids"])} == set(
            skills
        )
    assert plan.result == build_plan(args, [], []).result
    assert (plan.work_graph_id is None) == (goal is not None)
    assert len(plan.items) == plan.result["created_work_items"]
