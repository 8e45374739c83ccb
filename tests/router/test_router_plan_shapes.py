"""The kept plan shapes (`planning._SHAPES`): reused only for the very same inputs.

A plan's id-free part is built once per set of deterministic inputs; a key that left one
input out would hand a plan another request's route. Each variant below changes one input
of a base request whose shape is already kept, and must plan exactly what it plans with
nothing kept.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from profile_files import profile
from router_driver import plan_args

from agora.toolsets.router import planning, profiles
from agora.toolsets.router.classifier import CACHED_CHARS

OBJECTIVE = "1. design the cache\n2. implement it\n3. test it"


def _layer(layer: profiles.Layer, **kw: Any) -> profiles.Profile:
    parsed, problems = profiles.parse_profile(layer, json.dumps(profile("team", **kw)))
    assert parsed is not None, problems
    return parsed


def _base() -> dict[str, Any]:
    return plan_args(OBJECTIVE, routing_context={"domains": ["web"], "tags": ["t"]})


def _variants() -> dict[str, tuple[dict[str, Any], list[profiles.Profile], list[str]]]:
    base = _base()

    def changed(**fields: Any) -> dict[str, Any]:
        return {**base, **fields}

    workspace = [_layer("workspace", skills=("skill:a", "skill:b"))]
    return {
        "objective": (changed(objective="fix the login bug"), [], []),
        "work mode": (changed(requested_work_mode="single"), [], []),
        "goal": (changed(goal_binding_id="goal-1"), [], []),
        "domains": (changed(routing_context={"domains": ["web", "db"], "tags": ["t"]}), [], []),
        "tags": (changed(routing_context={"domains": ["web"], "tags": ["u"]}), [], []),
        "current phase": (
            changed(routing_context={"domains": ["web"], "tags": ["t"], "current_phase_id": "p2"}),
            workspace, [],
        ),
        "explicit lock": (changed(explicit_skill_ids=["skill:x", "skill:y"]), [], []),
        "semantics": (
            changed(explicit_skill_ids=["skill:x", "skill:y"], explicit_semantics="all"), [], []
        ),
        "workspace layer": (base, workspace, []),
        "personal layer": (base, [_layer("personal", skills=("skill:a", "skill:b"))], []),
        "other rule": (base, [_layer("workspace", skills=("skill:c",))], []),
        "envelope rule": (base, [_layer("workspace", envelope="single")], []),
        "warnings": (base, [], ["personal profile: unreadable"]),
    }  # fmt: skip


def _fresh(args: dict[str, Any], layers: list[profiles.Profile], warnings: list[str]) -> Any:
    planning._SHAPES.clear()
    return planning.build_plan(args, layers, warnings)


def _id_free(plan: planning.Plan) -> tuple[Any, ...]:
    result = {k: v for k, v in plan.result.items() if k not in ("workflow_run_id", "work_graph_id")}
    items = [(i.phase_id, i.primary_skill_id, i.support_skill_ids, i.gate_id, i.check_ids)
             for i in plan.items]  # fmt: skip
    return result, plan.routing, plan.envelope, plan.explicit_locked, items


@pytest.mark.parametrize("name", sorted(_variants()))
def test_a_kept_shape_serves_no_request_that_differs_in_any_input(name):
    args, layers, warnings = _variants()[name]
    base = _fresh(_base(), [], [])
    # Kept now: the base's shape. The variant must not get it.
    kept = planning.build_plan(args, layers, warnings)
    fresh = _fresh(args, layers, warnings)
    assert kept.result == fresh.result
    assert kept.items == fresh.items
    assert _id_free(kept) == _id_free(fresh)
    assert _id_free(kept) != _id_free(base)  # the variant does plan something else


def test_plans_of_the_same_inputs_share_their_shape_and_differ_in_their_ids():
    planning._SHAPES.clear()
    one = planning.build_plan(plan_args(OBJECTIVE, session="a", idem="k"), [], [])
    two = planning.build_plan(plan_args(OBJECTIVE, session="b", idem="k"), [], [])
    assert len(planning._SHAPES) == 1
    assert one.workflow_run_id != two.workflow_run_id
    assert one.result["classification"] is two.result["classification"]
    assert [i.work_item_id for i in one.items] != [i.work_item_id for i in two.items]
    ids = ("workflow_run_id", "work_graph_id")
    assert {k: v for k, v in one.result.items() if k not in ids} == {
        k: v for k, v in two.result.items() if k not in ids
    }


def test_long_objectives_and_old_shapes_are_not_kept(monkeypatch):
    planning._SHAPES.clear()
    planning.build_plan(plan_args("x" * (CACHED_CHARS + 1)), [], [])
    assert not planning._SHAPES
    monkeypatch.setattr(planning, "SHAPES", 2)
    for n in range(3):
        planning.build_plan(plan_args(f"{n}. one\n{n + 1}. two"), [], [])
    assert [key[0] for key in planning._SHAPES] == ["1. one\n2. two", "2. one\n3. two"]


def test_the_same_profile_in_another_layer_is_another_shape():
    planning._SHAPES.clear()
    args = _base()
    workspace = planning.build_plan(args, [_layer("workspace")], [])
    personal = planning.build_plan(args, [_layer("personal")], [])
    assert workspace.result["route_source"] == "workspace-profile"
    assert personal.result["route_source"] == "personal-profile"
