"""A missing required property says which sent name is probably it misspelt, at any depth.

The words come with the refusal only (a valid value never reaches them): the closest property
(difflib, as the router's unknown-argument warnings rate it) of a name the schema does not
take; never a name the schema takes, and never a long or unprintable one echoed back.
"""

from __future__ import annotations

import pytest

from agora.mcp.validation import ArgumentError, compile_validator

SCHEMA = {
    "type": "object",
    "properties": {
        "task": {"type": "string"},
        "goal_id": {"type": ["string", "null"]},
        "phase": {"type": "string"},
        "inner": {
            "type": "object",
            "properties": {"session_id": {"type": "string"}},
            "required": ["session_id"],
        },
        "x-extra": {},
    },
    "patternProperties": {"^x-": {}},
    "required": ["task", "goal_id", "inner"],
}
INNER = {"session_id": "s"}
NULLABLE_GOAL = (
    "is required (send null if there is none; you sent 'goalid': did you mean 'goal_id'?)"
)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        pytest.param(
            {"taskk": "t", "goal_id": None, "inner": INNER},
            {"task": "is required (you sent 'taskk': did you mean 'task'?)"},
            id="misspelt",
        ),
        pytest.param(
            {"task": "t", "goalid": "g", "inner": INNER},
            {"goal_id": NULLABLE_GOAL},
            id="nullable",
        ),
        pytest.param(
            {"task": "t", "goal_id": None, "inner": {"sesion_id": "s"}},
            {"inner.session_id": "is required (you sent 'sesion_id': did you mean 'session_id'?)"},
            id="nested",
        ),
        pytest.param(
            {"phase": "p", "goal_id": None, "inner": INNER},
            {"task": "is required"},
            id="a-name-it-takes-is-no-misspelling",
        ),
        pytest.param(
            {"x-task": "t", "goal_id": None, "inner": INNER},
            {"task": "is required"},
            id="a-pattern-property-is-no-misspelling",
        ),
        pytest.param(
            {"zzz": 1, "goal_id": None, "inner": INNER},
            {"task": "is required"},
            id="nothing-close",
        ),
        pytest.param(
            {"task\u2028": "t", "goal_id": None, "inner": INNER},
            {"task": "is required"},
            id="unprintable-not-echoed",
        ),
        pytest.param(
            {"task" + "k" * 80: "t", "goal_id": None, "inner": INNER},
            {"task": "is required"},
            id="long-not-echoed",
        ),
        pytest.param(
            {"taskk": "t", "tassk": "t", "goal_id": None, "inner": INNER},
            {"task": "is required (you sent 'taskk': did you mean 'task'?)"},
            id="the-first-sent-of-two",
        ),
    ],
)
def test_a_missing_property_names_its_misspelling(value, words):
    check = compile_validator(SCHEMA)
    found = {i.field: i.message for i in check.errors(value) if i.rule == "required"}
    assert found == words
    with pytest.raises(ArgumentError) as refused:  # the first-problem path words it alike
        check.check(value)
    assert {i.field: i.message for i in refused.value.issues if i.rule == "required"} == words


def test_a_valid_value_has_no_issue_even_beside_a_misspelling():
    check = compile_validator(SCHEMA)
    assert check.errors({"task": "t", "goal_id": None, "inner": INNER, "tsak": 1}) == []
