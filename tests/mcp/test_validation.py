"""Compiled argument checks: each rule names its field and rule, and valid arguments pass.

What schemas compile (dialects, refusals, laziness) is in test_validation_schemas; agreement with
the jsonschema reference on generated values is in test_validation_reference.
"""

from __future__ import annotations

import copy

import pytest

from agora.mcp.contracts import load_contract
from agora.mcp.validation import ArgumentError, compile_validator

HANDLE = "chl-0123456789abcdef"


DRAFT_07 = "http://json-schema.org/draft-07/schema#"


def _obj(**properties) -> dict:
    return {"type": "object", "properties": properties, "additionalProperties": False}


RULES = [
    # (schema, value, field, rule, words the message must contain)
    pytest.param(
        {**_obj(a={}, b={}), "required": ["a", "b"]}, {"a": 1}, "b", "required", "is required",
        id="required",
    ),
    pytest.param(_obj(n={"type": "integer"}), {"n": "3"}, "n", "type", "must be an integer",
                 id="type"),
    pytest.param(_obj(n={"type": ["string", "null"]}), {"n": 3}, "n", "type",
                 "must be a string or null, got integer", id="type-union"),
    pytest.param(_obj(sq={"type": "string", "pattern": "^[a-h][1-8]$"}), {"sq": "z9"}, "sq",
                 "pattern", "must match pattern ^[a-h][1-8]$", id="pattern"),
    pytest.param(_obj(s={"type": "string", "maxLength": 3}), {"s": "abcd"}, "s", "maxLength",
                 "at most 3 characters long (got 4)", id="maxLength"),
    pytest.param(_obj(s={"type": "string", "minLength": 1}), {"s": ""}, "s", "minLength",
                 "at least 1 character long", id="minLength"),
    pytest.param(_obj(p={"enum": ["q", "r"]}), {"p": "k"}, "p", "enum",
                 'must be one of "q", "r"', id="enum"),
    pytest.param(_obj(m={"const": "router-local"}), {"m": "x"}, "m", "const",
                 'must be exactly "router-local"', id="const"),
    pytest.param(_obj(a={}), {"a": 1, "zz": 2}, "zz", "additionalProperties",
                 "is not an allowed field (allowed: a)", id="additionalProperties"),
    pytest.param(_obj(limit={}, status={}), {"limt": 1}, "limt", "additionalProperties",
                 "is not an allowed field (did you mean 'limit'? allowed: limit, status)",
                 id="additionalProperties-misspelt"),
    pytest.param(_obj(limit={}), {"limit": 1, "limt": 1}, "limt", "additionalProperties",
                 "is not an allowed field (allowed: limit)", id="additionalProperties-both-sent"),
    pytest.param(_obj(t={"type": "integer", "minimum": 1000}), {"t": 5}, "t", "minimum",
                 "must be >= 1000", id="minimum"),
    pytest.param(_obj(t={"type": "integer", "maximum": 64}), {"t": 65}, "t", "maximum",
                 "must be <= 64", id="maximum"),
    pytest.param(_obj(t={"exclusiveMinimum": 0}), {"t": 0}, "t", "exclusiveMinimum",
                 "must be > 0", id="exclusiveMinimum"),
    pytest.param(_obj(t={"exclusiveMaximum": 1}), {"t": 1}, "t", "exclusiveMaximum",
                 "must be < 1", id="exclusiveMaximum"),
    pytest.param(_obj(t={"multipleOf": 5}), {"t": 7}, "t", "multipleOf",
                 "must be a multiple of 5", id="multipleOf"),
    pytest.param(_obj(v={"type": "array", "maxItems": 1}), {"v": [1, 2]}, "v", "maxItems",
                 "at most 1 item (got 2)", id="maxItems"),
    pytest.param(_obj(v={"type": "array", "minItems": 1}), {"v": []}, "v", "minItems",
                 "at least 1 item", id="minItems"),
    pytest.param(_obj(v={"uniqueItems": True}), {"v": [1, 1]}, "v", "uniqueItems",
                 "duplicate", id="uniqueItems"),
    pytest.param(_obj(v={"type": "array", "items": {"type": "string"}}), {"v": ["a", 2]},
                 "v[1]", "type", "must be a string, got integer", id="items-index"),
    pytest.param(_obj(w={"anyOf": [{"type": "string"}, {"type": "null"}]}), {"w": 1}, "w",
                 "anyOf", "must be a string or null, got 1", id="anyOf-types"),
    pytest.param(_obj(w={"anyOf": [{"type": "string", "enum": ["use", "only"]},
                                   {"type": "null"}]}), {"w": "maybe"}, "w", "anyOf",
                 'must be "use", "only" or null, got "maybe"', id="anyOf-values"),
    pytest.param(_obj(w={"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "null"}]}),
                 {"w": 1}, "w", "anyOf", "at least one of the allowed forms", id="anyOf"),
    pytest.param(_obj(w={"oneOf": [{"type": "integer"}, {"type": "number"}]}), {"w": 1}, "w",
                 "oneOf", "exactly one", id="oneOf"),
    pytest.param(_obj(w={"not": {"type": "string"}}), {"w": "s"}, "w", "not", "must not match",
                 id="not"),
    pytest.param(_obj(o={"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}),
                 {"o": {"A": 1}}, "o", "propertyNames", "names must match pattern ^[a-z]+$",
                 id="propertyNames"),
    pytest.param(_obj(o={"type": "object", "maxProperties": 1}), {"o": {"a": 1, "b": 2}}, "o",
                 "maxProperties", "at most 1 field", id="maxProperties"),
    pytest.param({**_obj(o={"dependencies": {"x": ["y"]}}), "$schema": DRAFT_07}, {"o": {"x": 1}},
                 "o", "dependencies", "missing dependency y for x", id="dependencies"),
    pytest.param(_obj(o={"dependentRequired": {"x": ["y"]}}), {"o": {"x": 1}}, "o",
                 "dependencies", "missing dependency y for x", id="dependentRequired"),
    pytest.param(_obj(v={"contains": {"const": 1}}), {"v": [2]}, "v", "contains",
                 "at least one matching item", id="contains"),
    pytest.param(_obj(a=False), {"a": 1}, "a", "false", "is not allowed here", id="false-schema"),
    pytest.param({"type": "object"}, [], "", "type", "arguments: must be an object, got array",
                 id="root-type"),
    pytest.param(_obj(deep={}), {"deep": [[[[[[]]]]]]}, "", "maxDepth", "nested deeper than 4",
                 id="maxDepth"),
    pytest.param(_obj(big={}), {"big": list(range(100))}, "", "maxNodes", "more than 50 values",
                 id="maxNodes"),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "value", "field", "rule", "words"), RULES)
def test_each_rule_names_the_field_and_the_rule(schema, value, field, rule, words):
    validator = compile_validator(schema, max_depth=4, max_nodes=50)
    with pytest.raises(ArgumentError) as caught:
        validator.check(value)
    error = caught.value
    assert (error.field_path, error.rule) == (field, rule)
    assert words in error.message
    if field:
        assert error.message.startswith(f"argument '{field}': ")
    assert error.to_dict()["issues"][0]["rule"] == rule
    assert not validator.is_valid(value)
    assert validator.errors(value)[0].rule == rule


@pytest.mark.parametrize(
    ("toolset", "tool", "args", "message"),
    [
        pytest.param(
            "chess", "move_piece", {"from": "e9", "to": "e4"},
            "argument 'from': must match pattern ^[a-h][1-8]$", id="chess-square",
        ),
        pytest.param(
            "chess", "wait_for_turn", {"timeout_ms": 60000},
            "argument 'timeout_ms': must be <= 55000", id="chess-timeout",
        ),
        pytest.param(
            "chamber", "enter_open_challenge",
            {"product": "p", "host": "h", "provider_claim": "x", "model_claim": "m",
             "preflight": {"tools_visible": "yes"}},
            "argument 'preflight.tools_visible': must be a boolean, got string", id="preflight",
        ),
        pytest.param(
            "chamber", "chamber_action", {"challenge_handle": "sia_1", "op": "look"},
            "argument 'challenge_handle': must match pattern ^chl-[0-9a-f]{16}$", id="sia-handle",
        ),
        pytest.param(
            "chamber", "chamber_action", {"challenge_handle": HANDLE},
            "argument 'op': is required", id="op-required",
        ),
    ],
)  # fmt: skip
def test_contract_messages_a_model_can_act_on(toolset, tool, args, message):
    validator = compile_validator(load_contract(toolset).tools[tool].input_schema)
    with pytest.raises(ArgumentError) as caught:
        validator.check(args)
    assert caught.value.message == message


VALID = [
    pytest.param("chess", "join_game", {}, id="chess-join"),
    pytest.param("chess", "move_piece", {"from": "e7", "to": "e8", "promotion": "q",
                                         "note": "Promote."}, id="chess-move"),
    pytest.param("chess", "wait_for_turn", {"timeout_ms": 1000, "wait_for_human": True},
                 id="chess-wait"),
    pytest.param("chamber", "enter_open_challenge",
                 {"product": "gpt-5.6-sol", "host": "cursor", "provider_claim": "unknown",
                  "model_claim": "unknown", "suite": "chambre-chrono-v0",
                  "preflight": {"tools_visible": True}}, id="chamber-enter"),
    pytest.param("chamber", "chamber_action",
                 {"challenge_handle": HANDLE, "op": "submit_order", "value": ["a", "b"],
                  "expected_action_index": 64}, id="chamber-action-array"),
    pytest.param("chamber", "chamber_action",
                 {"challenge_handle": HANDLE, "op": "submit_number", "value": "42"},
                 id="chamber-action-string"),
    pytest.param("chamber", "seal_attempt", {"challenge_handle": HANDLE}, id="chamber-seal"),
    pytest.param("router", "get_next_work",
                 {"context": {"session_id": "s", "actor": "a", "runtime_policy_snapshot_id": "p"},
                  "workflow_run_id": "run-1"}, id="router-next-work"),
]  # fmt: skip


@pytest.mark.parametrize(("toolset", "tool", "args"), VALID)
def test_valid_arguments_pass(toolset, tool, args):
    validator = compile_validator(load_contract(toolset).tools[tool].input_schema)
    before = copy.deepcopy(args)
    validator.check(args)
    assert validator.errors(args) == []
    assert validator.problems(args) == []
    assert args == before


def test_errors_lists_every_problem_and_check_stops_at_the_first():
    schema = load_contract("chess").tools["move_piece"].input_schema
    validator = compile_validator(schema)
    bad = {"from": 2, "note": "x" * 200, "zz": True}
    assert {(i.field, i.rule) for i in validator.errors(bad)} == {
        ("to", "required"),
        ("from", "type"),
        ("note", "maxLength"),
        ("zz", "additionalProperties"),
    }
    assert len(validator.problems(bad)) == 4
    with pytest.raises(ArgumentError):
        validator.check(bad)


def test_defaults_are_not_filled_in():
    validator = compile_validator(_obj(n={"type": "integer", "default": 7}))
    args: dict = {}
    validator.check(args)
    assert args == {}


def test_an_integral_float_is_an_integer_and_stays_a_float():
    """As JSON Schema says (toolset-api.md tells handlers so): ``1.0`` passes ``integer``, and
    the handler gets it as sent, a float, unless it converts."""
    validator = compile_validator(_obj(by={"type": "integer", "minimum": 1}))
    args = {"by": 1.0}
    validator.check(args)
    assert type(args["by"]) is float
    assert not validator.is_valid({"by": 1.5})


def test_dollar_matches_only_at_the_very_end():
    # ECMA-262 semantics: unlike Python's re, "$" does not match before a final newline.
    validator = compile_validator(load_contract("chess").tools["move_piece"].input_schema)
    assert not validator.is_valid({"from": "e2\n", "to": "e4"})


def test_formats_are_annotations_unless_asserted():
    schema = _obj(at={"type": "string", "format": "date-time"})
    assert compile_validator(schema).is_valid({"at": "yesterday"})
    strict = compile_validator(schema, assert_formats=True)
    with pytest.raises(ArgumentError, match="must be a valid date-time"):
        strict.check({"at": "yesterday"})


def test_a_nul_anywhere_is_refused_at_its_place_when_asked():
    schema = {"type": "object"}
    strict, lenient = compile_validator(schema, refuse_nul=True), compile_validator(schema)
    for value, field in [
        ({"a": "x\x00"}, "a"),
        ({"a": [1, "ok", {"b\x00": 2}]}, "a[2].b\x00"),
        ({"a": {"b": ["ok", "\x00"]}}, "a.b[1]"),
    ]:
        assert lenient.is_valid(value)
        with pytest.raises(ArgumentError) as refused:
            strict.check(value)
        assert refused.value.rule == "noNul"
        assert "U+0000" in str(refused.value)
        assert strict.errors(value)[0].field == field
    assert strict.is_valid({"a": ["no nul", 1, 2.5, None, {"b": True}]})


@pytest.mark.parametrize("max_bytes", [0, 4096])
def test_the_nul_check_reads_the_encoding_but_never_mistakes_an_escape_for_a_nul(max_bytes):
    # The guard skips its walk when the compact JSON holds no "\u0000" escape: a NUL is
    # still found wherever it is, and text that only looks like the escape is no NUL.
    strict = compile_validator({"type": "object"}, refuse_nul=True, max_bytes=max_bytes)
    assert strict.is_valid({"a": "\\u0000", "b\\u0000": ["\\u0000", {"c": "x"}]})
    assert strict.is_valid({"a": "\u2400 is a picture of NUL, not one", "n": 2**70})
    for value, field in [
        ({"a": "\\u0000", "b": "\x00"}, "b"),
        ({"a\\u0000": {"k\x00": 1}}, "a\\u0000.k\x00"),
        ({"deep": [[{"x": ["ok", "\x00"]}]]}, "deep[0][0].x[1]"),
    ]:
        assert strict.errors(value)[0].field == field
        assert strict.errors(value)[0].rule == "noNul"


def test_a_choice_of_values_or_null_names_them():
    """The router's explicit_semantics is ``"use" | "only" | "all" | null``: a wrong value is
    told those four, not "must match at least one of the allowed forms"."""
    schema = load_contract("router").tools["plan_work"].input_schema
    issues = compile_validator(schema).errors({"explicit_semantics": "maybe"})
    said = {issue.field: issue.message for issue in issues}
    assert said["explicit_semantics"] == 'must be "use", "only", "all" or null, got "maybe"'
