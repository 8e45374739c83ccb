"""Which schemas the argument validator compiles: dialects as the reference reads them,
schemas it cannot honour refused at compile time, lazy compilation, and normalisation.
"""

from __future__ import annotations

import jsonschema
import pytest

from agora.mcp.validation import SchemaError, compile_validator, normalise_schema

LATE = "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        pytest.param({"$schema": LATE, "prefixItems": [{"type": "integer"}],
                      "items": {"type": "string"}}, [1, "a"], [1, 2], id="prefixItems"),
        pytest.param({"prefixItems": [{"type": "integer"}], "items": False}, [1], [1, 2],
                     id="prefixItems-closed"),
        pytest.param({"dependentRequired": {"a": ["b"]}}, {"a": 1, "b": 2}, {"a": 1},
                     id="dependentRequired"),
        pytest.param({"dependentSchemas": {"a": {"required": ["c"]}}}, {"a": 1, "c": 0},
                     {"a": 1}, id="dependentSchemas"),
        pytest.param({"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"a": {"required":
                      ["c"]}}}, {"a": 1, "b": 2, "c": 3}, {"a": 1, "c": 3},
                     id="dependentRequired-and-dependentSchemas-on-one-name"),
        pytest.param({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 2},
                     "ab", "abc", id="ref-with-siblings"),
        pytest.param({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer",
                      "minimum": 1, "exclusiveMinimum": True}, 2, 1, id="draft-04"),
    ],
)  # fmt: skip
def test_dialects_agree_with_the_reference(schema, good, bad):
    reference = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = compile_validator(schema)
    assert validator.is_valid(good)
    assert reference(schema).is_valid(good)
    assert not validator.is_valid(bad)
    assert not reference(schema).is_valid(bad)


SEMI_LATE = "https://json-schema.org/draft/2019-09/schema"


@pytest.mark.parametrize(
    ("schema", "value", "valid"),
    [
        # Words a late dialect does not have: its validators ignore them, and so do we (they
        # were compiled with their draft-07 meaning).
        pytest.param({"prefixItems": [{"type": "integer"}], "additionalItems": False}, [1, "x"],
                     True, id="2020-12-additionalItems"),
        pytest.param({"type": "object", "dependencies": {"a": ["b"]}}, {"a": 1}, True,
                     id="2020-12-dependencies"),
        pytest.param({"dependentRequired": {"a": ["c"]}, "dependencies": {"a": ["b"]}},
                     {"a": 1, "c": 2}, True, id="2020-12-dependencies-beside-dependentRequired"),
        pytest.param({"$schema": SEMI_LATE, "dependencies": {"a": ["b"]}}, {"a": 1}, True,
                     id="2019-09-dependencies"),
        pytest.param({"$schema": SEMI_LATE, "prefixItems": [{"type": "integer"}]}, ["x"], True,
                     id="2019-09-prefixItems"),
        # ... yet a $ref into one still finds its schema.
        pytest.param({"properties": {"x": {"$ref": "#/dependencies/a"}},
                      "dependencies": {"a": {"type": "integer"}}}, {"x": "s"}, False,
                     id="2020-12-ref-into-dependencies"),
        pytest.param({"properties": {"x": {"$ref": "#/additionalItems"}},
                      "additionalItems": {"type": "string"}}, {"x": 2}, False,
                     id="2020-12-ref-into-additionalItems"),
        pytest.param({"$schema": SEMI_LATE, "properties": {"x": {"$ref": "#/prefixItems/0"}},
                      "prefixItems": [{"type": "integer"}]}, {"x": "s"}, False,
                     id="2019-09-ref-into-prefixItems"),
        # ... and keep the ones it has.
        pytest.param({"$schema": SEMI_LATE, "items": [{"type": "integer"}],
                      "additionalItems": False}, [1, "x"], False, id="2019-09-additionalItems"),
        pytest.param({"$schema": SEMI_LATE, "items": [{"type": "integer"}]}, ["x"], False,
                     id="2019-09-items-list"),
        pytest.param({"$schema": SEMI_LATE, "dependentRequired": {"a": ["b"]}}, {"a": 1}, False,
                     id="2019-09-dependentRequired"),
    ],
)  # fmt: skip
def test_a_word_the_dialect_does_not_have_is_ignored_as_the_reference_ignores_it(
    schema, value, valid
):
    reference = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    assert reference(schema).is_valid(value) is valid  # the reference's verdict, asserted
    assert compile_validator(schema).is_valid(value) is valid


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        pytest.param({"unevaluatedProperties": False}, "unevaluatedProperties", id="unevaluated"),
        pytest.param({"properties": {"a": {"$dynamicRef": "#x"}}}, "dynamicRef", id="dynamic"),
        pytest.param({"$ref": "https://example.invalid/s.json"}, "remote", id="remote-ref"),
        pytest.param({"items": {"$ref": "other.json#/x"}}, "remote", id="relative-ref"),
        pytest.param({"type": "string", "pattern": "(unclosed"}, "compiled", id="bad-regex"),
        pytest.param({"type": "no-such-type"}, "compiled", id="bad-type"),
    ],
)
def test_schemas_that_cannot_be_honoured_are_refused_at_compile_time(schema, problem):
    with pytest.raises(SchemaError, match=problem):
        compile_validator(schema)


def test_lazy_validators_compile_on_first_use():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": False,
    }
    validator = compile_validator(schema, lazy=True)
    assert validator.problems({"a": 1}) == ["argument 'a': must be a string, got integer"]
    broken = compile_validator({"type": "string", "pattern": "(unclosed"}, lazy=True)
    with pytest.raises(SchemaError):
        broken.check("x")


def test_normalise_keeps_enum_values_that_look_like_keywords():
    schema = {"enum": [{"$ref": "https://x"}, {"prefixItems": 1}]}
    assert normalise_schema(schema)["enum"] == schema["enum"]
